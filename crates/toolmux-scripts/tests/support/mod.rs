//! What this crate's test binaries share.

use std::path::Path;
use std::sync::Arc;

use serde_json::Value;
use toolmux_config::{ScriptTool, ToolName};
use toolmux_core::{CallContext, Channel, Hub, HubSettings, NullSink, ToolResult};
use toolmux_scripts::ScriptSource;

/// A hub with the script tools `tools` (name → definition as in the config file).
pub fn hub(root: &Path, tools: Value) -> Hub {
    let tools: Vec<(ToolName, ScriptTool)> = tools
        .as_object()
        .expect("object")
        .iter()
        .map(|(name, def)| {
            (
                ToolName::new(name).expect("name"),
                serde_json::from_value(def.clone()).expect("definition"),
            )
        })
        .collect();
    let hub = Hub::new(HubSettings::default(), Arc::new(NullSink));
    hub.add_source(Arc::new(ScriptSource::new(
        tools.iter().map(|(n, t)| (n, t)),
        root,
    )));
    hub
}

/// A temporary directory and a hub with the script tools `tools` run in it; the directory lives
/// as long as the first value.
pub fn hub_in_tempdir(tools: Value) -> (tempfile::TempDir, Hub) {
    let dir = tempfile::tempdir().expect("dir");
    let hub = hub(dir.path(), tools);
    (dir, hub)
}

/// Calls the tool `name` without arguments from the command line; the call itself must not fail.
pub async fn call_ok(hub: &Hub, name: &str) -> ToolResult {
    hub.call(name, serde_json::json!({}), &CallContext::new(Channel::Cli))
        .await
        .expect("call")
}

/// The definition of a tool `name` that runs `script` with `sh -c`, with the call time limit
/// `timeout_ms` where one is given.
pub fn sh_tool(name: &str, description: &str, script: &str, timeout_ms: Option<u64>) -> Value {
    let mut tool = serde_json::json!({"description": description, "command": ["sh", "-c", script]});
    if let Some(timeout_ms) = timeout_ms {
        tool["timeoutMs"] = timeout_ms.into();
    }
    serde_json::json!({ name: tool })
}
