//! What this crate's test binaries share.

use serde_json::Value;
use toolmux_core::{CallContext, Channel, Source, SourceCall, ToolResult};
use toolmux_exec::ExecPack;

/// Calls `tool` of `pack` directly (no hub), as the command line would.
pub async fn call(pack: &ExecPack, tool: &str, arguments: Value) -> ToolResult {
    let descriptor = pack
        .tools()
        .into_iter()
        .find(|t| t.name == tool)
        .expect("the tool");
    let context = CallContext::new(Channel::Cli);
    pack.call(SourceCall {
        tool: &descriptor,
        arguments: arguments.as_object().cloned().expect("an object"),
        context: &context,
    })
    .await
    .expect("the call")
}
