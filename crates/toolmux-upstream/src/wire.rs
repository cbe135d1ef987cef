//! The one home of every map between rmcp's wire types and the core's, used both where toolmux
//! is an MCP client (this crate) and where it is an MCP server (`toolmux-mcp-server`), so the
//! two directions cannot drift apart.

// MCP's logging is deprecated in a draft revision (SEP-2577), but every protocol revision
// toolmux speaks still defines `notifications/message` and `logging/setLevel`.
#![allow(deprecated)]

use rmcp::model::LoggingLevel;
use toolmux_core::{LogLevel, ToolAnnotations};

/// MCP's log level as the core's.
pub fn log_level_from_wire(level: LoggingLevel) -> LogLevel {
    match level {
        LoggingLevel::Debug => LogLevel::Debug,
        LoggingLevel::Info => LogLevel::Info,
        LoggingLevel::Notice => LogLevel::Notice,
        LoggingLevel::Warning => LogLevel::Warning,
        LoggingLevel::Error => LogLevel::Error,
        LoggingLevel::Critical => LogLevel::Critical,
        LoggingLevel::Alert => LogLevel::Alert,
        LoggingLevel::Emergency => LogLevel::Emergency,
    }
}

/// The core's log level as MCP's.
pub fn log_level_to_wire(level: LogLevel) -> LoggingLevel {
    match level {
        LogLevel::Debug => LoggingLevel::Debug,
        LogLevel::Info => LoggingLevel::Info,
        LogLevel::Notice => LoggingLevel::Notice,
        LogLevel::Warning => LoggingLevel::Warning,
        LogLevel::Error => LoggingLevel::Error,
        LogLevel::Critical => LoggingLevel::Critical,
        LogLevel::Alert => LoggingLevel::Alert,
        LogLevel::Emergency => LoggingLevel::Emergency,
    }
}

/// A tool's behaviour hints as the core keeps them (the display title stays on the tool).
pub fn annotations_from_wire(hints: &rmcp::model::ToolAnnotations) -> ToolAnnotations {
    ToolAnnotations {
        read_only_hint: hints.read_only_hint,
        destructive_hint: hints.destructive_hint,
        idempotent_hint: hints.idempotent_hint,
        open_world_hint: hints.open_world_hint,
    }
}

/// The core's behaviour hints as MCP's tool annotations.
pub fn annotations_to_wire(hints: &ToolAnnotations) -> rmcp::model::ToolAnnotations {
    rmcp::model::ToolAnnotations::from_raw(
        None,
        hints.read_only_hint,
        hints.destructive_hint,
        hints.idempotent_hint,
        hints.open_world_hint,
    )
}

/// A server's message (one JSON-RPC message as text) with every tool of a `tools/list` result
/// that carries `"_internal": true` beside its `name` also marked `_meta._internal: true`, or
/// `None` when nothing needed marking. rmcp's `Tool` keeps no unknown top-level field, so the
/// seed format's top-level mark would be lost before discovery reads the tool; moved into
/// `_meta`, where rmcp keeps it, it makes the tool internal exactly as `_meta._internal` does.
/// Read where the transport still holds the text: a stdio line, an SSE event's data.
pub(crate) fn lift_internal_marks(message: &str) -> Option<String> {
    // Most messages cannot hold the mark; only those that name it are parsed.
    if !message.contains("\"_internal\"") {
        return None;
    }
    let mut value: serde_json::Value = serde_json::from_str(message).ok()?;
    let tools = value.get_mut("result")?.get_mut("tools")?.as_array_mut()?;
    let mut lifted = false;
    for tool in tools
        .iter_mut()
        .filter_map(serde_json::Value::as_object_mut)
    {
        if tool.get("_internal") != Some(&serde_json::Value::Bool(true)) {
            continue;
        }
        let meta = tool
            .entry("_meta")
            .or_insert_with(|| serde_json::Value::Object(Default::default()));
        // A `_meta` that is not an object is the server's error; rmcp refuses that tool as it
        // always did.
        if let Some(meta) = meta.as_object_mut() {
            meta.insert("_internal".into(), serde_json::Value::Bool(true));
            lifted = true;
        }
    }
    lifted.then(|| value.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    #[test]
    fn every_level_and_hint_survives_the_round_trip() {
        for level in [
            LogLevel::Debug,
            LogLevel::Info,
            LogLevel::Notice,
            LogLevel::Warning,
            LogLevel::Error,
            LogLevel::Critical,
            LogLevel::Alert,
            LogLevel::Emergency,
        ] {
            assert_eq!(log_level_from_wire(log_level_to_wire(level)), level);
        }
        let hints = ToolAnnotations {
            read_only_hint: Some(true),
            destructive_hint: Some(false),
            idempotent_hint: None,
            open_world_hint: Some(true),
        };
        assert_eq!(annotations_from_wire(&annotations_to_wire(&hints)), hints);
    }

    #[test]
    fn a_top_level_internal_mark_is_moved_into_meta() {
        let listed = json!({"jsonrpc": "2.0", "id": 3, "result": {"tools": [
            {"name": "reset", "inputSchema": {"type": "object"}, "_internal": true,
             "_meta": {"owner": "ops"}},
            {"name": "search", "inputSchema": {"type": "object"}, "_internal": false},
            {"name": "plain", "inputSchema": {"type": "object"}}
        ]}});
        let lifted = lift_internal_marks(&listed.to_string()).expect("a mark was lifted");
        let lifted: Value = serde_json::from_str(&lifted).expect("JSON");
        let tools = &lifted["result"]["tools"];
        assert_eq!(
            tools[0]["_meta"],
            json!({"owner": "ops", "_internal": true})
        );
        assert_eq!(tools[1].get("_meta"), None);
        assert_eq!(tools[2].get("_meta"), None);
    }

    #[test]
    fn messages_without_a_true_mark_on_a_listed_tool_pass_unchanged() {
        for message in [
            json!({"jsonrpc": "2.0", "id": 1, "result": {"tools": []}}),
            json!({"jsonrpc": "2.0", "id": 1, "result": {"content": [], "_internal": true}}),
            json!({"jsonrpc": "2.0", "id": 1, "result": {"tools": [{"name": "a", "_internal": "yes"}]}}),
            json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"_internal": true}}),
        ] {
            assert_eq!(lift_internal_marks(&message.to_string()), None, "{message}");
        }
        assert_eq!(lift_internal_marks("{\"_internal\": tru"), None);
    }
}
