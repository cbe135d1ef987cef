//! What callers are shown of a tool's result, the same on every channel (issue 33): a jq
//! `projection` of its JSON, then a cap in cl100k tokens or bytes that keeps the head, the tail
//! or both and says exactly what it cut; a result over its cap is kept whole for a while as
//! `toolmux://results/<id>`, read back with MCP `resources/read`, `GET /api/results/{id}` or
//! the `result_read` tool, a window of lines at a time.
//!
//! The hub calls [`Shaper`] as its pipeline's last step ([`toolmux_core::ResultShaper`]), after
//! the output-schema check and the execution log: the schema judges what the tool returned, the
//! log keeps that (under its own caps), and only the caller's copy is shaped. This is a crate of
//! its own because it brings a jq interpreter (jaq) and the cl100k tokenizer, which the core,
//! knowing no such thing, must not depend on.

mod cap;
mod pack;
mod projection;
mod settings;
mod shaper;
mod spill;

pub use cap::{Cut, count_tokens, cut};
pub use pack::{
    DEFAULT_LINES, MAX_LINES, MAX_PAGE_BYTES, ResultsPack, SOURCE_ID, describe_kept, window,
};
pub use projection::{
    MAX_EXPRESSION_BYTES, MAX_EXPRESSION_DEPTH, MAX_OUTPUT_BYTES, MAX_OUTPUT_DEPTH, MAX_OUTPUTS,
    MAX_RUNNING, PROJECTION_TIME_LIMIT, Projection, ProjectionError,
};
pub use settings::{Cap, Keep, Limit, OutputSettings};
pub use shaper::{Shaper, ShapingRules, id_of_uri};
pub use spill::{
    Kept, RESULTS_URI_PREFIX, SpillError, SpillSettings, SpillStore, Spilled, check_id,
};

/// The tool that reads a window of a kept result.
pub const RESULT_READ: &str = "result_read";

/// The cap MCP clients get when a tool sets none: 20,000 cl100k tokens, under the 25,000 at
/// which a widely used client refuses a result, with room for the note.
pub const MCP_DEFAULT_CAP: Cap = Cap {
    limit: Limit::Tokens(20_000),
    keep: Keep::Head,
};
