//! Discovery mode's `describe_tool` and `call_tool` through a real hub: offered and callable
//! only where a channel names them as entry points, describing what the caller may reach, and
//! calling through the whole pipeline (policy, approval, log) as a call of its own.

mod common;

use std::sync::Arc;

use serde_json::json;
use toolmux_codemode::{CodeModeSource, Limits};
use toolmux_core::{CallContext, Channel, DISCOVERY_TOOLS, NamePattern, Outcome, ToolScope};

/// What `toolmux mcp --discovery --exclude echo` hands every call.
fn discovering() -> CallContext {
    let scope = ToolScope {
        exclude: vec![NamePattern::new("echo").expect("pattern")],
        entry_points: DISCOVERY_TOOLS.map(String::from).to_vec(),
        served_by: "this MCP server (filtered out by --exclude)".into(),
        ..ToolScope::default()
    };
    CallContext::new(Channel::Mcp).with_scope(Arc::new(scope))
}

fn hub() -> (toolmux_core::Hub, Arc<common::Records>) {
    let (hub, records) = common::hub_with_notes();
    hub.add_source(Arc::new(CodeModeSource::new(
        hub.downgrade(),
        Limits::default(),
    )));
    (hub, records)
}

#[tokio::test]
async fn discovery_tools_are_offered_and_callable_only_as_entry_points() {
    let (hub, _) = hub();
    let catalog = hub.catalog();
    let listed: Vec<&str> = catalog
        .tools()
        .map(|e| e.descriptor.name.as_str())
        .collect();
    assert!(!listed.contains(&"describe_tool") && !listed.contains(&"call_tool"));
    let err = hub
        .call(
            "call_tool",
            json!({"name": "add", "arguments": {"a": 1, "b": 2}}),
            &CallContext::new(Channel::Mcp),
        )
        .await
        .expect_err("not an entry point here");
    assert_eq!(err.to_string(), "unknown tool `call_tool`");
    let context = discovering();
    let served: Vec<&str> = catalog
        .served_tools(context.scope.as_deref().expect("a scope"))
        .map(|e| e.descriptor.name.as_str())
        .filter(|name| DISCOVERY_TOOLS.contains(name))
        .collect();
    assert_eq!(served, ["call_tool", "describe_tool", "search_tools"]);
}

#[tokio::test]
async fn describe_tool_gives_full_schemas_of_what_the_caller_may_reach() {
    let (hub, _) = hub();
    let result = hub
        .call(
            "describe_tool",
            json!({"names": ["add", "echo", "nope"]}),
            &discovering(),
        )
        .await
        .expect("describes");
    assert_eq!(
        result.structured_content,
        Some(json!({"tools": [
            {
                "name": "add",
                "title": null,
                "description": "Adds two numbers.",
                "inputSchema": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]},
                "outputSchema": {"type": "object", "properties": {"sum": {"type": "number"}}, "required": ["sum"]},
                "annotations": {"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false}
            },
            {"name": "echo", "error": "tool `echo` is not served by this MCP server (filtered out by --exclude)"},
            {"name": "nope", "error": "unknown tool `nope`"}
        ]}))
    );
}

#[tokio::test]
async fn call_tool_runs_through_the_pipeline_as_a_call_of_its_own() {
    let (hub, records) = hub();
    let context = discovering();
    let added = hub
        .call(
            "call_tool",
            json!({"name": "add", "arguments": {"a": 2, "b": 3}}),
            &context,
        )
        .await
        .expect("calls");
    assert_eq!(added.structured_content, Some(json!({"sum": 5.0})));
    {
        let records = records.0.lock().expect("records");
        let inner = records.iter().find(|r| r.tool == "add").expect("logged");
        let outer = records
            .iter()
            .find(|r| r.tool == "call_tool")
            .expect("logged");
        assert_eq!(inner.parent, Some(outer.id));
        assert_eq!(inner.outcome, Outcome::Ok);
    }
    // Policy: a denied tool is denied, an `ask` one asks (and nobody can answer here).
    let denied = hub
        .call("call_tool", json!({"name": "wipe"}), &context)
        .await
        .expect("answers");
    assert!(denied.is_error);
    assert_eq!(
        denied.text_content(),
        "tool `wipe` was denied: its policy is `deny` (rule for `wipe`)"
    );
    let asked = hub
        .call(
            "call_tool",
            json!({"name": "delete_note", "arguments": {"id": "n1"}}),
            &context,
        )
        .await
        .expect("answers");
    assert!(asked.text_content().starts_with(
        "tool `delete_note` was denied: its policy is `ask` (tool annotations) and there is no one to ask"
    ), "{}", asked.text_content());
    // Its scope holds, and it does not nest.
    let filtered = hub
        .call(
            "call_tool",
            json!({"name": "echo", "arguments": {"text": "x"}}),
            &context,
        )
        .await
        .expect("answers");
    assert_eq!(
        filtered.text_content(),
        "tool `echo` is not served by this MCP server (filtered out by --exclude)"
    );
    let nested = hub
        .call(
            "call_tool",
            json!({"name": "call_tool", "arguments": {}}),
            &context,
        )
        .await
        .expect("answers");
    assert_eq!(
        nested.text_content(),
        "`call_tool` cannot be called through call_tool; call it directly"
    );
}
