//! What this crate's test binaries share.

use std::path::Path;
use std::sync::Arc;

use serde_json::Value;
use toolmux_config::{ScriptTool, ToolName};
use toolmux_core::{Hub, HubSettings, NullSink};
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
