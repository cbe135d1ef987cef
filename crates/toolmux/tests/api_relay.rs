//! The REST API relays the prompts, resources and completions of the MCP servers behind
//! toolmux exactly as the MCP channel does: the same lists, the same answers, each from the
//! server that offers it. Against the conformance fixture server (Python MCP SDK) with a real
//! MCP client (`tests/peers/mcp/client.py`) on the same `toolmux serve`; listing starts no
//! server, and no process outlives the test.

mod support;

use std::collections::BTreeMap;

use serde_json::{Value, json};
use support::toolmux_project;
use toolmux_testkit::peers::{peer_file, python};
use toolmux_testkit::processes::{assert_no_process_left, processes_in};
use toolmux_testkit::project::TestProject;
use toolmux_testkit::python_client::run_mcp_steps;
use toolmux_testkit::served::{KEY, Served, config_with_key, run_with_key};

const PROMPT_WITH_ARGUMENTS: &str = "conformance__test_prompt_with_arguments";

/// A project whose one MCP server is the conformance fixture, discovered (so its prompts and
/// resources are in the cache) and not running.
fn project_with_fixture() -> TestProject {
    let project = toolmux_project();
    let server = json!({
        "conformance": {
            "command": python(),
            "args": [peer_file("mcp/conformance_fixture.py")],
        }
    });
    project.config(&config_with_key(&format!(r#""mcpServers": {server}"#)));
    run_with_key(&project, &["mcp", "refresh"]).ok();
    project
}

/// Runs MCP steps against the server's `/mcp` with the key; returns one outcome per step.
fn over_mcp(served: &Served, steps: Value) -> Vec<Value> {
    run_mcp_steps(&json!({
        "transport": "http",
        "url": served.mcp_url(),
        "headers": {"Authorization": format!("Bearer {KEY}")},
        "steps": steps,
    }))
}

/// Whether the fixture server runs (it is started in the project directory).
fn fixture_running(project: &TestProject) -> bool {
    processes_in(project.path())
        .iter()
        .any(|(_, cmdline)| cmdline.contains("conformance_fixture.py"))
}

/// Items by name, each without the `server` REST adds, so they compare with MCP's.
fn by_name(items: &Value, server_expected: Option<&str>) -> BTreeMap<String, Value> {
    items
        .as_array()
        .unwrap_or_else(|| panic!("not a list: {items}"))
        .iter()
        .map(|item| {
            let mut item = item.clone();
            if let Some(server) = server_expected {
                let fields = item.as_object_mut().expect("an object");
                assert_eq!(fields.remove("server"), Some(json!(server)), "{item}");
            }
            (item["name"].as_str().expect("a name").to_string(), item)
        })
        .collect()
}

#[test]
fn prompts_and_resources_are_listed_over_rest_as_over_mcp_without_starting_the_server() {
    let project = project_with_fixture();
    let served = Served::start(&project, &[]);

    let prompts = served.get_with_key("/api/prompts");
    assert_eq!(prompts.status, 200, "{}", prompts.body);
    let resources = served.get_with_key("/api/resources");
    assert_eq!(resources.status, 200, "{}", resources.body);
    assert!(
        !fixture_running(&project),
        "listing over REST started the server"
    );

    let mcp = over_mcp(&served, json!([{"op": "prompts"}, {"op": "resources"}]));
    let rest_prompts = by_name(&prompts.json()["prompts"], Some("conformance"));
    let mcp_prompts = by_name(&mcp[0]["prompts"], None);
    assert!(
        rest_prompts.contains_key(PROMPT_WITH_ARGUMENTS),
        "{rest_prompts:?}"
    );
    assert_eq!(rest_prompts, mcp_prompts, "REST and MCP list other prompts");
    let arguments: Vec<&str> = rest_prompts[PROMPT_WITH_ARGUMENTS]["arguments"]
        .as_array()
        .expect("arguments")
        .iter()
        .map(|a| a["name"].as_str().expect("an argument name"))
        .collect();
    assert_eq!(arguments, ["arg1", "arg2"]);

    let resources = resources.json();
    let rest_resources = by_name(&resources["resources"], Some("conformance"));
    assert_eq!(rest_resources, by_name(&mcp[1]["resources"], None));
    assert!(
        rest_resources
            .values()
            .any(|r| r["uri"] == "test://static-text"),
        "{rest_resources:?}"
    );
    let rest_templates = by_name(&resources["resourceTemplates"], Some("conformance"));
    assert_eq!(rest_templates, by_name(&mcp[1]["templates"], None));
    assert!(
        rest_templates
            .values()
            .any(|t| t["uriTemplate"] == "test://template/{id}/data"),
        "{rest_templates:?}"
    );
    assert!(
        !fixture_running(&project),
        "listing over MCP started the server"
    );

    served.stop();
    assert_no_process_left(project.path());
}

#[test]
fn prompts_resources_and_completions_are_relayed_over_rest_with_mcps_answers() {
    let project = project_with_fixture();
    let served = Served::start(&project, &[]);
    let arguments = json!({"arg1": "paris", "arg2": "beta"});

    // A prompt filled with arguments, as MCP's prompts/get returns it.
    let got = served.post(
        &format!("/api/prompts/{PROMPT_WITH_ARGUMENTS}"),
        &json!({ "arguments": arguments }).to_string(),
    );
    assert_eq!(got.status, 200, "{}", got.body);
    let got = got.json();
    assert_eq!(
        got["messages"][0]["content"]["text"], "Prompt with arguments: arg1='paris', arg2='beta'",
        "{got}"
    );
    assert_eq!(got["messages"][0]["role"], "user", "{got}");

    let mcp = over_mcp(
        &served,
        json!([
            {"op": "get_prompt", "name": PROMPT_WITH_ARGUMENTS, "arguments": arguments},
            {"op": "read", "uri": "test://static-text"},
            {"op": "read", "uri": "test://template/42/data"},
            {"op": "complete",
             "ref": {"type": "ref/prompt", "name": PROMPT_WITH_ARGUMENTS},
             "argument": {"name": "arg1", "value": "par"}},
        ]),
    );
    assert_eq!(mcp[0]["prompt"]["messages"], got["messages"], "{mcp:?}");

    // Resources: a listed one and an expansion of a template, as MCP's resources/read returns
    // them.
    let text = served.get_with_key("/api/resources/read?uri=test%3A%2F%2Fstatic-text");
    assert_eq!(text.status, 200, "{}", text.body);
    let text = text.json();
    assert_eq!(
        text["contents"][0]["text"], "This is the content of the static text resource.",
        "{text}"
    );
    assert_eq!(text["contents"], mcp[1]["contents"]);
    let templated = served.get_with_key("/api/resources/read?uri=test://template/42/data");
    assert_eq!(templated.status, 200, "{}", templated.body);
    let templated = templated.json();
    let data: Value = serde_json::from_str(
        templated["contents"][0]["text"]
            .as_str()
            .unwrap_or_else(|| panic!("no text: {templated}")),
    )
    .expect("the template's JSON");
    assert_eq!(data["id"], "42", "{data}");
    assert_eq!(templated["contents"], mcp[2]["contents"]);

    // Completions, as MCP's completion/complete returns them.
    let completed = served.post(
        "/api/completions",
        &json!({
            "ref": {"type": "ref/prompt", "name": PROMPT_WITH_ARGUMENTS},
            "argument": {"name": "arg1", "value": "par"},
        })
        .to_string(),
    );
    assert_eq!(completed.status, 200, "{}", completed.body);
    let completed = completed.json();
    assert_eq!(
        completed["completion"]["values"],
        json!(["paris", "park", "party"]),
        "{completed}"
    );
    assert_eq!(completed["completion"], mcp[3]["completion"]);

    // Failures, in the API's one error shape.
    served
        .get_with_key("/api/resources/read?uri=test://nowhere")
        .error(404, "not_found");
    served
        .post("/api/prompts/conformance__no_such_prompt", "{}")
        .error(404, "not_found");
    let refused = served
        .post(
            &format!("/api/prompts/{PROMPT_WITH_ARGUMENTS}"),
            r#"{"arguments": {"arg1": "only one"}}"#,
        )
        .error(502, "upstream_error");
    assert_eq!(refused["details"]["server"], "conformance", "{refused}");
    assert_eq!(refused["details"]["code"], -32602, "{refused}");
    assert!(
        refused["details"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("arg2")),
        "{refused}"
    );
    // Getting a prompt runs the server's code: like a tool call, it needs the key.
    let keyless = served.request(
        "POST",
        &format!("/api/prompts/{PROMPT_WITH_ARGUMENTS}"),
        &[("Content-Type", "application/json")],
        Some(r#"{"arguments": {"arg1": "a", "arg2": "b"}}"#),
    );
    keyless.error(401, "unauthorized");

    served.stop();
    assert_no_process_left(project.path());
}
