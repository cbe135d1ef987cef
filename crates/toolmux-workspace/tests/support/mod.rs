//! The pack over a test's project directory, with default or given limits, and calling one of
//! its tools as the hub would.

use std::path::Path;

use serde_json::Value;
use toolmux_core::{CallContext, Channel, Source, SourceCall, ToolResult};
use toolmux_workspace::{WorkspaceLimits, WorkspacePack};

/// A pack over `root` with default limits.
pub fn pack(root: &Path) -> WorkspacePack {
    pack_with(root, WorkspaceLimits::default())
}

/// A pack over `root` with the given limits.
pub fn pack_with(root: &Path, limits: WorkspaceLimits) -> WorkspacePack {
    WorkspacePack::new(root, limits).expect("pack")
}

/// Calls `tool` of `pack` with `arguments`, as the hub would.
pub async fn call(pack: &WorkspacePack, tool: &str, arguments: Value) -> ToolResult {
    let descriptor = pack
        .tools()
        .into_iter()
        .find(|t| t.name == tool)
        .unwrap_or_else(|| panic!("no tool {tool}"));
    let context = CallContext::new(Channel::Cli);
    let Value::Object(arguments) = arguments else {
        panic!("arguments must be an object")
    };
    pack.call(SourceCall {
        tool: &descriptor,
        arguments,
        context: &context,
    })
    .await
    .unwrap_or_else(|e| panic!("{tool} failed at the source level: {e}"))
}
