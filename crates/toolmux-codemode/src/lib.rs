//! Code mode: every tool in the catalog as a typed TypeScript API, and an in-process sandbox
//! that runs a model's script against it.
//!
//! - [`Capabilities`] compiles the catalog's JSON Schemas into one ES module per source with
//!   `.d.ts` declarations; [`build_capabilities`] writes them to disk.
//! - [`Sandbox`] strips a TypeScript script with oxc and runs it in QuickJS, with a memory limit,
//!   a CPU-time budget, a wall-clock timeout and a watchdog. Its only way out is the host call
//!   behind the generated modules, which goes through [`toolmux_core::Hub::call`] on the `code`
//!   channel, so policies, approvals, validation and the execution log apply unchanged.
//! - [`CodeModeSource`] offers `run_code` and `search_tools` as ordinary tools.
//!
//! Like the core, this crate knows no wire format.

mod capabilities;
mod error;
mod ident;
mod nesting;
mod sandbox;
mod search;
mod source;
mod stdlib;
mod transpile;
mod typescript;

pub use capabilities::{
    BuildReport, BuiltSource, CODEMODE_SOURCE, Capabilities, CapabilityModule, FunctionInfo,
    MODULE_PREFIX, build_capabilities, write_capabilities,
};
pub use error::CodeModeError;
pub use sandbox::{Limits, LogLine, RunOutput, Sandbox};
pub use search::{SearchHit, search};
pub use source::{CALL_TOOL, CodeModeSource, DESCRIBE_TOOL, RUN_CODE, SEARCH_TOOLS};
pub use stdlib::GLOBALS_DTS;
pub use transpile::SCRIPT_NAME;
