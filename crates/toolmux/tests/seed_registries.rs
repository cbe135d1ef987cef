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

/// Issue 29, item 11: an edit through the API lands in the file the entry came from — a
/// `tools.json` tool in `tools.json`, an `mcp.json` server in `mcp.json`, in their format, the
/// rest of the file as it was — and a new entry in the registry of its kind when it fits there.
/// A definition the registry cannot hold, and a write that fails, leave every file as it was.
#[test]
fn api_edits_land_in_the_registry_the_entry_came_from() {
    let project = seed_project(&config_with_key(
        r#""registries": ["backend/src/tools/tools.json", "backend/mcp.json"]"#,
    ));
    let served = Served::start(&project, &[]);
    let config_before = std::fs::read_to_string(project.config_file()).expect("config");
    let tools_file = project.path().join("backend/src/tools/tools.json");
    let mcp_file = project.path().join("backend/mcp.json");
    let read = |path: &std::path::Path| -> Value {
        serde_json::from_str(&std::fs::read_to_string(path).expect("read")).expect("JSON")
    };

    // Changed in place, in the seed's terms; the script is written relative to the registry.
    let replaced = served.send(
        "PUT",
        "/api/tools/hello_world",
        Some(
            &json!({
                "description": "Greet someone, replaced.",
                "inputSchema": {"type": "object", "properties": {"who": {"type": "string"}}},
                "timeoutMs": 4000,
                "command": ["python3", "backend/src/tools/hello_world.py"],
            })
            .to_string(),
        ),
    );
    assert_eq!(replaced.status, 200, "{}", replaced.body);
    assert_eq!(replaced.json()["description"], "Greet someone, replaced.");
    let hello = json!({
        "name": "hello_world",
        "description": "Greet someone, replaced.",
        "inputSchema": {"type": "object", "properties": {"who": {"type": "string"}}},
        "timeout": 4.0,
        "script": "hello_world.py",
    });
    assert_eq!(read(&tools_file), json!({"tools": [hello]}));

    // A new tool that fits the seed's format joins tools.json; one with an `env` cannot, and
    // goes to the config file.
    let goodbye = json!({
        "name": "goodbye",
        "description": "Say goodbye.",
        "parallel": true,
        "command": ["python3", "backend/src/tools/hello_world.py"],
    });
    let added = served.post("/api/tools", &goodbye.to_string());
    assert_eq!(added.status, 201, "{}", added.body);
    let with_env = json!({
        "name": "with_env",
        "description": "Has an env.",
        "env": {"GREETING": "hi"},
        "command": ["python3", "backend/src/tools/hello_world.py"],
    });
    let added = served.post("/api/tools", &with_env.to_string());
    assert_eq!(added.status, 201, "{}", added.body);
    assert_eq!(
        read(&tools_file),
        json!({"tools": [hello, {
            "name": "goodbye",
            "description": "Say goodbye.",
            "parallel_capable": true,
            "script": "hello_world.py",
        }]})
    );
    assert_eq!(
        project.saved_config()["tools"]["with_env"]["env"],
        json!({"GREETING": "hi"})
    );
    let called = served
        .post("/api/tools/goodbye/call", r#"{"who": "Cy"}"#)
        .json();
    assert_eq!(
        called["structuredContent"],
        json!({"greeting": "Hello, Cy!"})
    );

    // A definition the registry cannot hold is refused; nothing is written.
    let tools_before = std::fs::read_to_string(&tools_file).expect("tools.json");
    let refused = served.send(
        "PUT",
        "/api/tools/hello_world",
        Some(
            &json!({"description": "d", "cwd": "backend", "command": ["python3", "x.py"]})
                .to_string(),
        ),
    );
    let error = refused.error(422, "invalid_definition");
    assert_eq!(
        error["details"]["violations"][0]["message"],
        "`cwd` cannot be written to this registry: a tool there has only `description`, \
         `inputSchema`, `outputSchema`, `parallel`, `timeoutMs` and `command` (its script)",
        "{error}"
    );
    assert_eq!(
        std::fs::read_to_string(&tools_file).expect("tools.json"),
        tools_before
    );

    // Removed from tools.json.
    let deleted = served.send("DELETE", "/api/tools/goodbye", None);
    assert_eq!(deleted.status, 204, "{}", deleted.body);
    assert_eq!(read(&tools_file), json!({"tools": [hello]}));
    assert!(
        !served
            .tool_names("scripts")
            .contains(&"goodbye".to_string())
    );

    // A new server joins mcp.json, written with the seed's `transport` as its neighbours are;
    // the registry's own server is removed from it.
    let added = served.post(
        "/api/mcp-servers",
        &json!({"name": "faults2", "type": "stdio", "command": mcp_python(), "args": [faults_script()]})
            .to_string(),
    );
    assert_eq!(added.status, 201, "{}", added.body);
    let deleted = served.send("DELETE", "/api/mcp-servers/faults", None);
    assert_eq!(deleted.status, 204, "{}", deleted.body);
    assert_eq!(
        read(&mcp_file),
        json!({"mcpServers": {"faults2": {
            "command": mcp_python(),
            "args": [faults_script()],
            "transport": "stdio",
        }}})
    );
    // The config file changed only by the tool that could not go to tools.json.
    let mut config: Value = serde_json::from_str(&config_before).expect("JSON");
    config["tools"] = json!({"with_env": {
        "description": "Has an env.",
        "env": {"GREETING": "hi"},
        "command": ["python3", "backend/src/tools/hello_world.py"],
    }});
    assert_eq!(project.saved_config(), config);

    // A write that fails (the registry's folder cannot be written) leaves the file as it was.
    let folder = tools_file.parent().expect("folder").to_path_buf();
    let _unlocked = Unwritable::make(&folder);
    let tools_before = std::fs::read_to_string(&tools_file).expect("tools.json");
    let failed = served.send(
        "PUT",
        "/api/tools/hello_world",
        Some(
            &json!({"description": "Never written.", "command": ["python3", "hello_world.py"]})
                .to_string(),
        ),
    );
    let error = failed.error(500, "internal");
    assert!(
        error["message"]
            .as_str()
            .is_some_and(|m| m.starts_with(&format!("cannot write `{}`", tools_file.display()))),
        "{error}"
    );
    assert_eq!(
        std::fs::read_to_string(&tools_file).expect("tools.json"),
        tools_before
    );
    drop(_unlocked);
    served.stop();
}

/// A folder no one can write to while it lives: immutable (`chattr +i`) for root, whom
/// permissions do not stop, else mode 0555. Checked, so the test cannot pass by accident.
struct Unwritable(std::path::PathBuf);

impl Unwritable {
    fn make(folder: &std::path::Path) -> Self {
        use std::os::unix::fs::PermissionsExt;
        let immutable = std::process::Command::new("chattr")
            .arg("+i")
            .arg(folder)
            .status()
            .is_ok_and(|s| s.success());
        if !immutable {
            std::fs::set_permissions(folder, std::fs::Permissions::from_mode(0o555))
                .expect("chmod");
        }
        let probe = folder.join(".probe");
        assert!(
            std::fs::write(&probe, "x").is_err(),
            "the folder is still writable"
        );
        Self(folder.to_path_buf())
    }
}

impl Drop for Unwritable {
    fn drop(&mut self) {
        use std::os::unix::fs::PermissionsExt;
        let _ = std::process::Command::new("chattr")
            .arg("-i")
            .arg(&self.0)
            .status();
        let _ = std::fs::set_permissions(&self.0, std::fs::Permissions::from_mode(0o755));
    }
}
