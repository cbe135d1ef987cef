//! A channel's scope (`toolmux mcp --exclude grep`, `--tools …`) holds inside code mode too:
//! `search_tools` does not advertise what the channel filters out, the modules a script imports
//! do not declare it, and a script that calls it anyway is refused by the hub.

mod common;

use std::sync::Arc;

use serde_json::{Value, json};
use toolmux_codemode::{CodeModeSource, Limits};
use toolmux_core::{CallContext, Channel, Hub, NamePattern, ToolScope};
use toolmux_workspace::WorkspacePack;

fn hub_with_workspace_and_code_mode(root: &std::path::Path) -> Hub {
    let (hub, _) = common::hub_with_notes();
    hub.add_source(Arc::new(
        WorkspacePack::new(root, Default::default()).expect("workspace pack"),
    ));
    hub.add_source(Arc::new(CodeModeSource::new(
        hub.downgrade(),
        Limits::default(),
    )));
    hub
}

/// What `toolmux mcp --code-mode --exclude grep` hands every call.
fn without_grep() -> CallContext {
    let scope = ToolScope {
        exclude: vec![NamePattern::new("grep").expect("pattern")],
        entry_points: vec!["run_code".into(), "search_tools".into()],
        served_by: "this MCP server (filtered out by --exclude)".into(),
        ..ToolScope::default()
    };
    CallContext::new(Channel::Mcp).with_scope(Arc::new(scope))
}

fn listed_tools(result: &toolmux_core::ToolResult) -> Vec<String> {
    result.structured_content.as_ref().expect("structured")["matches"]
        .as_array()
        .expect("matches")
        .iter()
        .filter_map(|m| m["tool"].as_str().map(str::to_string))
        .collect()
}

#[tokio::test]
async fn d4_search_tools_does_not_list_a_tool_outside_the_callers_scope() {
    let dir = tempfile::tempdir().expect("temp dir");
    let hub = hub_with_workspace_and_code_mode(dir.path());
    let search = json!({"query": "search file contents for a pattern", "limit": 50});

    let scoped = hub
        .call("search_tools", search.clone(), &without_grep())
        .await
        .expect("search runs");
    let tools = listed_tools(&scoped);
    assert!(!tools.iter().any(|t| t == "grep"), "{tools:?}");
    assert!(tools.iter().any(|t| t == "file_read"), "{tools:?}");
    assert!(
        !scoped.text_content().contains("grep("),
        "declarations leak grep"
    );

    // Without a scope (the CLI), grep is there.
    let whole = hub
        .call("search_tools", search, &CallContext::new(Channel::Cli))
        .await
        .expect("search runs");
    assert!(listed_tools(&whole).iter().any(|t| t == "grep"));
}

#[tokio::test]
async fn d4_a_script_gets_no_typed_api_for_a_tool_outside_the_callers_scope() {
    let dir = tempfile::tempdir().expect("temp dir");
    let hub = hub_with_workspace_and_code_mode(dir.path());
    let result = hub
        .call(
            "run_code",
            json!({"code": "import { workspace } from '@capabilities/workspace';\nreturn [typeof (workspace as any).grep, typeof workspace.fileRead];"}),
            &without_grep(),
        )
        .await
        .expect("runs");
    assert!(!result.is_error, "{}", result.text_content());
    assert_eq!(
        result.structured_content.expect("structured")["result"],
        json!(["undefined", "function"])
    );
}

#[tokio::test]
async fn d4_a_script_calling_a_tool_outside_the_callers_scope_gets_not_served() {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join("a.txt"), "needle\n").expect("write");
    let hub = hub_with_workspace_and_code_mode(dir.path());
    let script = "try {\n  await (globalThis as any).__toolmux_call('grep', { pattern: 'needle' });\n  return 'reached grep';\n} catch (e) {\n  return { code: (e as any).code, message: String((e as Error).message) };\n}";
    let result = hub
        .call("run_code", json!({ "code": script }), &without_grep())
        .await
        .expect("runs");
    assert!(!result.is_error, "{}", result.text_content());
    let outcome: Value = result.structured_content.expect("structured")["result"].clone();
    assert_eq!(outcome["code"], json!("not_served"), "{outcome}");
    assert!(
        outcome["message"]
            .as_str()
            .is_some_and(|m| m.contains("grep")),
        "{outcome}"
    );

    // The same script without a scope reaches grep.
    let result = hub
        .call(
            "run_code",
            json!({ "code": script }),
            &CallContext::new(Channel::Cli),
        )
        .await
        .expect("runs");
    assert_eq!(
        result.structured_content.expect("structured")["result"],
        json!("reached grep")
    );
}
