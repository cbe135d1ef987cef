//! `run_code` and `search_tools` as registry tools, called through the hub like any other tool.

mod common;

use std::sync::Arc;

use serde_json::json;
use toolmux_codemode::{CodeModeSource, Limits};
use toolmux_core::{CallContext, Channel, Hub};

use common::hub_with_notes;

fn hub_with_code_mode() -> Hub {
    let (hub, _) = hub_with_notes();
    hub.add_source(Arc::new(CodeModeSource::new(
        hub.downgrade(),
        Limits::default(),
    )));
    hub
}

#[tokio::test]
async fn run_code_returns_the_result_logs_and_call_count() {
    let hub = hub_with_code_mode();
    let result = hub
        .call(
            "run_code",
            json!({"code": "import { notes } from '@capabilities/notes';\nconst r = await Promise.all([1, 2, 3].map((a) => notes.add({ a, b: 10 })));\nconsole.log('summing');\nreturn r.map((x) => x.sum);"}),
            &CallContext::new(Channel::Mcp),
        )
        .await
        .expect("runs");
    assert!(!result.is_error);
    assert_eq!(
        result.structured_content,
        Some(json!({
            "result": [11, 12, 13],
            "logs": [{"level": "log", "message": "summing"}],
            "calls": 3
        }))
    );
}

#[tokio::test]
async fn run_code_reports_a_failing_script_as_a_tool_error_with_its_console_output() {
    let hub = hub_with_code_mode();
    let result = hub
        .call(
            "run_code",
            json!({"code": "console.log('step 1');\nconst x: any = null;\nreturn x.y;"}),
            &CallContext::new(Channel::Mcp),
        )
        .await
        .expect("the call itself succeeds");
    assert!(result.is_error);
    let text = result.text_content();
    assert!(text.starts_with("TypeError"), "{text}");
    assert!(text.contains("script.ts:3:"), "{text}");
    assert!(
        text.ends_with("console output before the error:\n[log] step 1"),
        "{text}"
    );
}

#[tokio::test]
async fn a_script_cannot_call_code_mode_itself() {
    let hub = hub_with_code_mode();
    let result = hub
        .call(
            "run_code",
            json!({"code": "try { await (globalThis as any).__toolmux_call('run_code', { code: 'return 1' }); } catch (e) { return (e as ToolError).code + ': ' + (e as Error).message; }"}),
            &CallContext::new(Channel::Mcp),
        )
        .await
        .expect("runs");
    assert_eq!(
        result.structured_content.expect("structured")["result"],
        json!("denied: `run_code` cannot be called from a script (scripts do not nest)")
    );
}

#[tokio::test]
async fn search_tools_ranks_the_best_match_first_with_its_declaration() {
    let hub = hub_with_code_mode();
    let result = hub
        .call(
            "search_tools",
            json!({"query": "add numbers", "limit": 3}),
            &CallContext::new(Channel::Mcp),
        )
        .await
        .expect("searches");
    let structured = result.structured_content.expect("structured");
    let matches = structured["matches"].as_array().expect("matches");
    assert_eq!(matches[0]["tool"], json!("add"));
    assert_eq!(matches[0]["module"], json!("@capabilities/notes"));
    assert_eq!(matches[0]["function"], json!("add"));
    let text = result.content[0].as_text().expect("text");
    assert!(text.starts_with("// import { notes } from \"@capabilities/notes\";\ninterface AddInput {\n  a: number;\n  b: number;\n}\ninterface AddOutput {\n  sum: number;\n}\ndeclare const notes: {\n  /**\n   * Adds two numbers.\n   *\n   * Calls the tool `add`.\n   */\n  add(input: AddInput): Promise<AddOutput>;\n};\n"), "{text}");
    // Code mode's own tools are never offered to scripts.
    assert!(!text.contains("run_code"));
}

#[tokio::test]
async fn search_tools_says_so_when_nothing_matches() {
    let hub = hub_with_code_mode();
    let result = hub
        .call(
            "search_tools",
            json!({"query": "kubernetes"}),
            &CallContext::new(Channel::Mcp),
        )
        .await
        .expect("searches");
    assert_eq!(result.structured_content, Some(json!({"matches": []})));
    assert!(
        result
            .text_content()
            .starts_with("No tool matches `kubernetes`")
    );
}

#[tokio::test]
async fn the_code_mode_source_does_not_keep_its_hub_alive() {
    let hub = hub_with_code_mode();
    let weak = hub.downgrade();
    drop(hub);
    assert!(weak.upgrade().is_none());
}
