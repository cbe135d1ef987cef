//! Agent Skills as MCP prompts: each skill a model may load is the prompt `skill__NAME`, listed
//! by `prompts/list` with its description and got with its instructions and folder, over
//! `toolmux serve`'s `/mcp` with the real Python MCP client and over REST (`/api/prompts`);
//! a skill only a person starts is neither, and a `deny` of `skill_load` hides them all.

mod support;

use serde_json::{Value, json};
use support::toolmux_project;
use toolmux_testkit::project::TestProject;
use toolmux_testkit::python_client::run_mcp_steps;
use toolmux_testkit::served::{KEY, Served, config_with_key};

const CSV: &str = "---\nname: csv-summary\ndescription: Summarise a CSV file. Use when asked about a CSV.\n---\n\n# CSV summary\n\nRun `scripts/summary.py FILE`.\n";
const DEPLOY: &str = "---\nname: deploy\ndescription: Deploy the site.\ndisable-model-invocation: true\n---\n\nDeploy it.\n";

fn skills_project(extra: &str) -> TestProject {
    let project = toolmux_project();
    project.config(&config_with_key(extra));
    project.write(".toolmux/skills/csv-summary/SKILL.md", CSV);
    project.write(
        ".toolmux/skills/csv-summary/scripts/summary.py",
        "print('ok')\n",
    );
    project.write(".claude/skills/deploy/SKILL.md", DEPLOY);
    project
}

fn http_plan(served: &Served, steps: Value) -> Value {
    json!({
        "transport": "http",
        "url": served.mcp_url(),
        "headers": {"Authorization": format!("Bearer {KEY}")},
        "steps": steps,
    })
}

fn names(prompts: &Value) -> Vec<&str> {
    prompts
        .as_array()
        .unwrap_or_else(|| panic!("not a list: {prompts}"))
        .iter()
        .filter_map(|p| p["name"].as_str())
        .collect()
}

#[test]
fn skills_are_prompts_over_mcp_and_rest() {
    let project = skills_project("");
    let served = Served::start(&project, &[]);
    let lines = run_mcp_steps(&http_plan(
        &served,
        json!([
            {"op": "prompts"},
            {"op": "get_prompt", "name": "skill__csv-summary"},
            {"op": "get_prompt", "name": "skill__deploy"},
        ]),
    ));
    let prompts = &lines[0]["prompts"];
    assert_eq!(names(prompts), ["skill__csv-summary"], "{prompts}");
    assert_eq!(
        prompts[0]["description"],
        "Summarise a CSV file. Use when asked about a CSV."
    );
    let prompt = &lines[1]["prompt"];
    assert_eq!(prompt["messages"][0]["role"], "user", "{prompt}");
    let text = prompt["messages"][0]["content"]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text: {prompt}"));
    // The instructions, and the folder the workspace tools read the skill's files under.
    assert!(text.contains("Run `scripts/summary.py FILE`."), "{text}");
    assert!(text.contains(".toolmux/skills/csv-summary"), "{text}");
    assert!(text.contains("scripts/summary.py"), "{text}");
    // A skill only a person starts is no prompt.
    assert!(lines[2].get("error").is_some(), "{}", lines[2]);

    // REST: the same prompts, got the same way.
    let listed = served.get("/api/prompts").json();
    assert_eq!(
        names(&listed["prompts"]),
        ["skill__csv-summary"],
        "{listed}"
    );
    let got = served.post("/api/prompts/skill__csv-summary", "{}");
    assert_eq!(got.status, 200, "{}", got.body);
    assert_eq!(
        got.json()["messages"][0]["content"]["text"].as_str(),
        Some(text)
    );
    let missing = served.post("/api/prompts/skill__deploy", "{}");
    assert_eq!(missing.status, 404, "{}", missing.body);

    // A skill added while the server runs is listed at once.
    project.write(
        ".toolmux/skills/notes/SKILL.md",
        "---\nname: notes\ndescription: Take notes.\n---\n\nWrite them down.\n",
    );
    let listed = served.get("/api/prompts").json();
    assert_eq!(
        names(&listed["prompts"]),
        ["skill__csv-summary", "skill__notes"],
        "{listed}"
    );
    served.stop();
}

#[test]
fn a_denied_skill_load_hides_the_skill_prompts() {
    let project = skills_project(r#""policies": {"tools": {"skill_load": "deny"}}"#);
    let served = Served::start(&project, &[]);
    let lines = run_mcp_steps(&http_plan(&served, json!([{"op": "prompts"}])));
    assert!(names(&lines[0]["prompts"]).is_empty(), "{}", lines[0]);
    assert!(names(&served.get("/api/prompts").json()["prompts"]).is_empty());
    served.stop();
}
