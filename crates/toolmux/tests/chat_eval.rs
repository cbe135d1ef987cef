//! `toolmux eval` against aimock, which answers each gold-set prompt with a fixture tool call or,
//! for the prompts that need no tool, with words (`tests/peers/chat/fixtures/eval.json`: the
//! expected answer for all but three prompts). It proves the harness: prompts reach the model
//! with the catalog's tools, the first call (or none) is read, accuracy is counted per tool, and
//! `--min-accuracy` fails the run with a message.

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
    assert_eq!(report["cases"], 72, "{report}");
    assert_eq!(report["correct"], 69);
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
    assert_eq!(score("web_search"), (Some(10), Some(10)));
    assert_eq!(score("(no tool)"), (Some(10), Some(9)));

    // Below the bar is exit code 1, with the misses named on stderr.
    let run = project.run(&["eval", "--min-accuracy", "99"]);
    assert_eq!(run.code(), 1);
    assert!(run.stdout().contains("69 of 72 cases"), "{}", run.stdout());
    assert!(
        run.stderr().contains("expected file_search, got grep"),
        "{}",
        run.stderr()
    );
    assert!(
        run.stderr().contains(
            "\"What is the plural of the word 'index'?\" expected no tool, got web_search"
        ),
        "{}",
        run.stderr()
    );
    assert!(
        run.stderr()
            .ends_with("toolmux: accuracy 95.8% is below --min-accuracy 99%\n"),
        "{}",
        run.stderr()
    );
    // At or above the bar the run passes.
    assert_eq!(project.run(&["eval", "--min-accuracy", "95"]).code(), 0);
}
