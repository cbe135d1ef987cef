//! Tool overrides and derived tools (`toolSettings.<name>` presentation keys, `derivedTools`)
//! against a real upstream, the reference `server-everything`: a renamed tool with a hidden
//! fixed argument the upstream still receives, an annotation that changes the policy, a
//! derived tool, and a stale override — the same on MCP (the Python SDK client), REST and
//! `capabilities build`, and reported by `config check` and `mcp list`.

mod support;

use serde_json::{Value, json};
use support::toolmux_project;
use toolmux_testkit::eventually::wait_until;
use toolmux_testkit::peers::node_peer;
use toolmux_testkit::python_client::{result_text, run_mcp_steps};
use toolmux_testkit::served::{Served, config_with_key};

/// What every channel must show for the renamed echo tool: no `message` argument at all.
fn say_schema() -> Value {
    json!({
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "properties": {},
        "required": []
    })
}

fn overrides_config() -> String {
    let everything = node_peer("upstream", "mcp-server-everything");
    let extra = json!({
        "mcpServers": {"everything": {"command": everything.display().to_string()}},
        "toolSettings": {
            "everything__echo": {
                "name": "say",
                "description": "Says the team's fixed greeting.",
                "arguments": {"message": {"value": "hello from org/x", "hidden": true}}
            },
            "everything__get-sum": {
                "annotations": {"readOnlyHint": false, "destructiveHint": true}
            },
            "everything__renamed_away": {"title": "An upstream tool that is gone"}
        },
        "derivedTools": {
            "add_two": {
                "from": "everything__get-sum",
                "description": "Adds two to a number.",
                "arguments": {"a": 2}
            }
        }
    });
    let extra = extra.to_string();
    config_with_key(&extra[1..extra.len() - 1])
}

/// One tool of a listing, by name.
fn tool<'a>(tools: &'a Value, name: &str) -> &'a Value {
    tools
        .as_array()
        .and_then(|tools| tools.iter().find(|t| t["name"] == name))
        .unwrap_or_else(|| panic!("no tool `{name}` in {tools}"))
}

#[test]
fn overrides_show_the_same_tool_on_every_channel_and_the_upstream_gets_the_fixed_argument() {
    let project = toolmux_project();
    project.config(&overrides_config());
    let served = Served::start(&project, &[]);
    wait_until("server-everything's tools are discovered", || {
        served.tool_names("everything").contains(&"say".to_string())
    });

    // REST: renamed, described and reshaped; the original name is gone; the annotation
    // override decides the policy.
    let listed = served.get("/api/tools?source=everything").json();
    let tools = &listed["tools"];
    let say = tool(tools, "say");
    assert_eq!(say["originalName"], "echo");
    assert_eq!(say["description"], "Says the team's fixed greeting.");
    assert_eq!(say["inputSchema"], say_schema(), "{say}");
    assert!(
        tools
            .as_array()
            .is_some_and(|t| t.iter().all(|t| t["name"] != "everything__echo")),
        "{tools}"
    );
    let sum = tool(tools, "everything__get-sum");
    assert_eq!(
        (&sum["policy"], &sum["policyOrigin"]),
        (&json!("ask"), &json!("tool annotations")),
        "{sum}"
    );
    let add_two = tool(tools, "add_two");
    assert_eq!(add_two["description"], "Adds two to a number.");
    assert_eq!(
        add_two["inputSchema"]["required"],
        json!(["b"]),
        "{add_two}"
    );
    let called = served.post("/api/tools/say/call", "{}").json();
    assert_eq!(called["status"], "success", "{called}");

    // MCP through the Python SDK client: the same tools, and the upstream receives the hidden
    // fixed argument and the derived tool's fixed argument.
    let steps = run_mcp_steps(&json!({
        "transport": "http",
        "url": served.mcp_url(),
        "headers": {"Authorization": served.authorization()},
        "steps": [
            {"op": "list"},
            {"op": "call", "name": "say", "arguments": {}},
            {"op": "call", "name": "add_two", "arguments": {"b": 3}},
            {"op": "call", "name": "everything__echo", "arguments": {"message": "x"}},
        ],
    }));
    let mcp_say = tool(&steps[0]["tools"], "say");
    assert_eq!(mcp_say["description"], "Says the team's fixed greeting.");
    assert_eq!(mcp_say["inputSchema"], say_schema(), "{mcp_say}");
    assert_eq!(result_text(&steps[1]), "Echo: hello from org/x");
    assert_eq!(result_text(&steps[2]), "The sum of 2 and 3 is 5.");
    // The old name is gone. (The suggestion after it is one of two equally close names,
    // `everything__get-env` or `everything__get-sum`: the MCP view breaks the tie by hash order.)
    assert_eq!(steps[3]["error"]["code"], -32602, "{}", steps[3]);
    let refused = steps[3]["error"]["message"].as_str().unwrap_or_default();
    assert!(
        refused.starts_with("unknown tool `everything__echo`; did you mean `everything__get-"),
        "{refused}"
    );
    served.stop();

    // Code mode's generated types: the renamed function without the hidden argument.
    project.run_keyed(&["capabilities", "build"]).ok();
    let dts = std::fs::read_to_string(
        project
            .path()
            .join(".toolmux/capabilities/everything/index.d.ts"),
    )
    .expect("declarations written");
    assert!(dts.contains("Says the team's fixed greeting."), "{dts}");
    assert!(dts.contains("say(input?: SayInput)"), "{dts}");
    assert!(!dts.contains("echo("), "{dts}");

    // The override that matches nothing is reported, never silently dropped.
    let stale = "stale override: toolSettings.everything__renamed_away: \
                 no source provides a tool `everything__renamed_away`";
    let checked = project.run_keyed(&["config", "check"]).ok();
    assert!(checked.lines().any(|l| l == stale), "{checked}");
    let listed = project.run_keyed(&["mcp", "list"]).ok();
    assert!(listed.lines().any(|l| l == stale), "{listed}");
    let rows = project.run_keyed(&["mcp", "list", "--json"]).json();
    assert_eq!(
        rows[0]["staleOverrides"],
        json!([stale.trim_start_matches("stale override: ")])
    );
}
