//! The pipeline's last step: shaping a finished call's result for its caller (a cap, a
//! projection, the whole result kept aside). The hub knows only this trait; what shaping does
//! lives in `toolmux-shaping`, which pulls in a jq interpreter and a tokenizer the core must not
//! depend on. The hub runs it after the output-schema check, so a tool's declared schema judges
//! what the tool returned, never what its caller is shown.

use async_trait::async_trait;
use uuid::Uuid;

use crate::context::Channel;
use crate::model::ToolResult;

/// The call whose result is shaped.
#[derive(Clone, Copy, Debug)]
pub struct ShapedCall<'a> {
    /// The registry name.
    pub tool: &'a str,
    /// The call's execution-log id (the id of what is kept aside).
    pub id: Uuid,
    /// Where the result goes: each channel may have its own default cap.
    pub channel: Channel,
    /// The tool declares an output schema: its structured content is a contract with the
    /// caller (MCP clients check it), so shaping leaves it whole and shapes only the text.
    pub output_schema: bool,
}

/// Shapes every result the hub hands to a caller. It may block on file and CPU work: an
/// implementation moves that off the async workers itself.
#[async_trait]
pub trait ResultShaper: Send + Sync {
    /// The result as `call`'s caller receives it.
    async fn shape(&self, call: ShapedCall<'_>, result: ToolResult) -> ToolResult;
}
