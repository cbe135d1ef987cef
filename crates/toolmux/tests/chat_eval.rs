//! `toolmux eval` against aimock, which answers each gold-set prompt with a fixture tool call
//! (`tests/peers/chat/fixtures/eval.json`: the expected tool for all but two prompts). It proves
//! the harness: prompts reach the model with the catalog's tools, the first call is read, and
//! accuracy is counted per tool.

mod support;

use serde_json::Value;
use support::toolmux_project;
use toolmux_testkit::aimock::Aimock;

#[test]
fn eval_reports_accuracy_per_tool_over_the_builtin_gold_set() {
    let aimock = Aimock::start("eval.json");
    let project = toolmux_project();
    project.config(&format!(
        r#"{{"providers": {{"mock": {{"kind": "openai", "baseUrl": "{}/v1", "defaultModel": "gpt-4o"}}}}}}"#,
        aimock.url
    ));
    let report: Value =
        serde_json::from_str(&project.run(&["eval", "--json"]).ok()).expect("JSON report");
    assert_eq!(report["cases"], 52, "{report}");
    assert_eq!(report["correct"], 50);
    assert!(report["skipped"].as_array().expect("skipped").is_empty());
    let score = |tool: &str| {
        report["perTool"]
            .as_array()
            .expect("perTool")
            .iter()
            .find(|s| s["tool"] == tool)
            .map(|s| (s["cases"].as_u64(), s["correct"].as_u64()))
            .expect("a score for the tool")
    };
    assert_eq!(score("grep"), (Some(8), Some(8)));
    assert_eq!(score("file_search"), (Some(7), Some(6)));
    assert_eq!(score("request_human_input"), (Some(8), Some(7)));

    // Below the bar is exit code 1, with the misses named on stderr.
    let run = project.run(&["eval", "--min-accuracy", "99"]);
    assert_eq!(run.code(), 1);
    assert!(run.stdout().contains("50 of 52 cases"), "{}", run.stdout());
    assert!(
        run.stderr().contains("expected file_search, got grep"),
        "{}",
        run.stderr()
    );
}
