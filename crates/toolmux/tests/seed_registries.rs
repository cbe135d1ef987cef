//! Seed 004's registries: a `tools.json` of script tools (`description`, `inputSchema`,
//! `outputSchema`, `parallel_capable`, `timeout` in seconds, `script`) and an `mcp.json` of
//! servers, read in place when the configuration names them in `registries` (their tools
//! callable, a mistake reported with the registry's file, line and field, an edit picked up by
//! a running `serve`), and copied into the configuration by `toolmux import --registry`.
//!
//! The seed describes the files' fields but gives no example file, so the files here are
//! written from its description, in its layout (`backend/src/tools/`).

mod support;

use serde_json::{Value, json};
use support::toolmux_project;
use toolmux_testkit::eventually::wait_until;
use toolmux_testkit::peers::mcp_python;
use toolmux_testkit::project::TestProject;
use toolmux_testkit::served::{Served, config_with_key};
use toolmux_testkit::servers::faults_script;

const HELLO: &str = "import json, sys\nargs = json.load(sys.stdin)\nprint(json.dumps({\"greeting\": \"Hello, \" + args.get(\"who\", \"world\") + \"!\"}))\n";

/// The seed's `tools.json`: a list under `tools`, with the seed's key names.
fn tools_json(extra: &str) -> String {
    format!(
        r#"{{
  "tools": [
    {{
      "name": "hello_world",
      "description": "Greet someone by name.",
      "inputSchema": {{"type": "object", "properties": {{"who": {{"type": "string"}}}}, "required": ["who"]}},
      "outputSchema": {{"type": "object", "properties": {{"greeting": {{"type": "string"}}}}, "required": ["greeting"]}},
      "parallel_capable": true,
      "timeout": 2.5,
      "script": "hello_world.py"
    }}{extra}
  ]
}}
"#
    )
}

/// The seed's `mcp.json`: servers with a `transport`.
fn mcp_json() -> String {
    json!({
        "mcpServers": {
            "faults": {
                "transport": "stdio",
                "command": mcp_python(),
                "args": [faults_script()],
            }
        }
    })
    .to_string()
}

fn seed_project(config: &str) -> TestProject {
    let project = toolmux_project();
    project.write("backend/src/tools/tools.json", &tools_json(""));
    project.write("backend/src/tools/hello_world.py", HELLO);
    project.write("backend/mcp.json", &mcp_json());
    project.config(config);
    project
}

fn names(listing: &Value) -> Vec<String> {
    listing["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str().map(str::to_string))
        .collect()
}

#[test]
fn registries_are_read_in_place_and_their_mistakes_named() {
    let project =
        seed_project(r#"{"registries": ["backend/src/tools/tools.json", "backend/mcp.json"]}"#);
    let called = project
        .run(&["tools", "call", "hello_world", "-a", "who=Ada", "--json"])
        .json();
    assert_eq!(
        called["structuredContent"],
        json!({"greeting": "Hello, Ada!"}),
        "{called}"
    );
    let shown = project
        .run(&["tools", "show", "hello_world", "--json"])
        .json();
    assert_eq!(shown["effectiveTimeoutMs"], 2500, "{shown}");
    assert_eq!(shown["parallel"], true, "{shown}");
    assert_eq!(shown["source"], "scripts");
    // The seed's input schema is enforced.
    let refused = project.run(&["tools", "call", "hello_world"]);
    assert_eq!(refused.code(), 4, "{}", refused.stdout());

    let servers = project.run(&["mcp", "list", "--json"]).json();
    assert_eq!(servers[0]["name"], "faults", "{servers}");
    assert_eq!(servers[0]["transport"], "stdio", "{servers}");

    // A mistake names the registry, its line and the tool.
    let broken = tools_json("").replace("\"timeout\": 2.5", "\"timeout\": 2.5, \"retries\": 3");
    project.write("backend/src/tools/tools.json", &broken);
    let check = project.run(&["config", "check"]);
    assert_eq!(check.code(), 3, "{}", check.stdout());
    let line = broken
        .lines()
        .position(|l| l.contains("\"retries\""))
        .expect("the line")
        + 1;
    assert!(
        check
            .stderr()
            .contains(&format!("backend/src/tools/tools.json:{line}:")),
        "{}",
        check.stderr()
    );
    assert!(check.stderr().contains("retries"), "{}", check.stderr());
}

#[test]
fn a_running_server_picks_up_a_registry_edit() {
    let project = seed_project(&config_with_key(
        r#""registries": ["backend/src/tools/tools.json"]"#,
    ));
    let served = Served::start(&project, &[]);
    assert!(
        names(&served.get("/api/tools?source=scripts").json()).contains(&"hello_world".to_string())
    );
    project.write(
        "backend/src/tools/tools.json",
        &tools_json(
            r#", {"name": "goodbye", "description": "Say goodbye.", "script": "hello_world.py"}"#,
        ),
    );
    wait_until("the registry's new tool to be served", || {
        names(&served.get("/api/tools?source=scripts").json()).contains(&"goodbye".to_string())
    });
    served.stop();
}

#[test]
fn import_copies_a_registry_into_the_configuration() {
    let project = seed_project("{}");
    let out = project
        .run(&[
            "import",
            "--registry",
            "backend/src/tools/tools.json",
            "--registry",
            "backend/mcp.json",
        ])
        .ok();
    assert!(out.contains("added script tool hello_world"), "{out}");
    assert!(out.contains("added MCP server faults from"), "{out}");
    let saved = project.saved_config();
    assert_eq!(
        saved["tools"]["hello_world"]["command"],
        json!(["python3", "backend/src/tools/hello_world.py"]),
        "{saved}"
    );
    assert_eq!(saved["tools"]["hello_world"]["timeoutMs"], 2500, "{saved}");
    assert_eq!(
        saved["mcpServers"]["faults"]["args"],
        json!([faults_script()]),
        "{saved}"
    );
    assert!(saved["mcpServers"]["faults"].get("transport").is_none());
    let called = project
        .run(&["tools", "call", "hello_world", "-a", "who=Bo", "--json"])
        .json();
    assert_eq!(called["structuredContent"]["greeting"], "Hello, Bo!");
    // Again: nothing is replaced without --force.
    let again = project
        .run(&["import", "--registry", "backend/src/tools/tools.json"])
        .ok();
    assert!(again.contains("skipped script tool hello_world"), "{again}");
}
