//! MCP servers added, replaced and removed through the REST API of a running `toolmux serve`,
//! and by hand edits of the config file: written through the one writer, applied live (new
//! tools listed and callable over REST and MCP, reconfigured servers kept running, replaced
//! ones restarted, removed ones stopped), and a bad entry refused with the file untouched. Against the Python fault server
//! of `tests/peers/upstream`; no server process outlives a test.

mod support;

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};
use support::toolmux_project;
use toolmux_testkit::eventually::wait_until;
use toolmux_testkit::peers::python;
use toolmux_testkit::processes::{alive, assert_exited, read_pid};
use toolmux_testkit::python_client::run_mcp_client;
use toolmux_testkit::served::{KEY, Served, config_with_key};
use toolmux_testkit::servers::faults;

/// How long a replaced or removed server may take to exit.
const EXIT_LIMIT: Duration = Duration::from_secs(10);

/// The entry of the fault server, writing its process id to `pid_file`.
fn faults_entry(pid_file: &Path, extra: &[&str]) -> Value {
    let pid_file = pid_file.display().to_string();
    let mut args = vec!["--pid-file", pid_file.as_str()];
    args.extend_from_slice(extra);
    faults(&args)
}

#[test]
fn a_server_added_through_the_api_is_discovered_callable_replaced_and_removed() {
    let project = toolmux_project();
    project.config(&config_with_key(""));
    let served = Served::start(&project, &[]);
    let pid_file = project.path().join("faults.pid");

    // Added: discovered at once, its tools in the answer, in the catalog, callable.
    let mut body = faults_entry(&pid_file, &[]);
    body["name"] = json!("faults");
    let added = served.post("/api/mcp-servers", &body.to_string());
    assert_eq!(added.status, 201, "{}", added.body);
    let added = added.json();
    assert_eq!(added["discovery"]["discoveryStatus"], "success", "{added}");
    assert!(
        added["tools"]
            .as_array()
            .expect("tools")
            .contains(&json!("faults__echo")),
        "{added}"
    );
    let listed = served.tool_names("faults");
    assert!(listed.contains(&"faults__echo".to_string()), "{listed:?}");
    assert!(listed.contains(&"faults__pid".to_string()), "{listed:?}");
    let echoed = served
        .post("/api/tools/faults__echo/call", r#"{"text": "over REST"}"#)
        .json();
    assert_eq!(echoed["status"], "success", "{echoed}");
    assert_eq!(echoed["content"][0]["text"], "over REST", "{echoed}");
    let first_pid = read_pid(&pid_file);
    assert!(alive(first_pid));

    // The entry is in the file as written, next to the key setting.
    let saved = project.saved_config();
    assert_eq!(saved["mcpServers"]["faults"]["command"], json!(python()));
    assert_eq!(saved["server"]["apiKeys"], json!(["${TOOLMUX_TEST_KEY}"]));

    // Over MCP too.
    let lines = run_mcp_client(&json!({
        "transport": "http",
        "url": served.mcp_url(),
        "headers": {"Authorization": format!("Bearer {KEY}")},
        "steps": [
            {"op": "list"},
            {"op": "call", "name": "faults__echo", "arguments": {"text": "over MCP"}},
        ],
    }));
    let over_mcp: Vec<&str> = lines[1]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(over_mcp.contains(&"faults__echo"), "{over_mcp:?}");
    assert_eq!(
        lines[2]["result"]["content"][0]["text"], "over MCP",
        "{}",
        lines[2]
    );

    // Reconfigured: a new filter applies at once, to the same running process.
    let mut filtered = faults_entry(&pid_file, &[]);
    filtered["enabledTools"] = json!(["echo", "pid"]);
    let put = served.send(
        "PUT",
        "/api/mcp-servers/faults",
        Some(&filtered.to_string()),
    );
    assert_eq!(put.status, 200, "{}", put.body);
    assert_eq!(
        put.json()["tools"],
        json!(["faults__echo", "faults__pid"]),
        "{}",
        put.body
    );
    assert_eq!(served.tool_names("faults"), ["faults__echo", "faults__pid"]);
    let called = served.post("/api/tools/faults__pid/call", "{}").json();
    assert_eq!(called["status"], "success", "{called}");
    assert_eq!(
        read_pid(&pid_file),
        first_pid,
        "a filter change needs no restart"
    );
    assert!(alive(first_pid));

    // Replaced: a new command line stops the old process; the filter still applies.
    let mut changed = faults_entry(&pid_file, &["--page-size", "50"]);
    changed["enabledTools"] = json!(["echo", "pid"]);
    let put = served.send("PUT", "/api/mcp-servers/faults", Some(&changed.to_string()));
    assert_eq!(put.status, 200, "{}", put.body);
    assert_exited(first_pid, EXIT_LIMIT);
    assert_eq!(served.tool_names("faults"), ["faults__echo", "faults__pid"]);
    let called = served.post("/api/tools/faults__pid/call", "{}").json();
    assert_eq!(called["status"], "success", "{called}");
    let second_pid = read_pid(&pid_file);
    assert_ne!(second_pid, first_pid);

    // Removed: out of the file and the catalog, its process gone.
    let deleted = served.send("DELETE", "/api/mcp-servers/faults", None);
    assert_eq!(deleted.status, 204, "{}", deleted.body);
    assert!(served.tool_names("faults").is_empty());
    served
        .post("/api/tools/faults__echo/call", r#"{"text": "x"}"#)
        .error(404, "not_found");
    served
        .get_with_key("/api/mcp-servers/faults")
        .error(404, "not_found");
    assert_exited(second_pid, EXIT_LIMIT);
    let saved = project.saved_config();
    assert!(saved.get("mcpServers").is_none(), "{saved}");
    served.stop();
}

#[test]
fn a_server_whose_discovery_fails_is_saved_with_its_error() {
    let project = toolmux_project();
    project.config(&config_with_key(""));
    let served = Served::start(&project, &[]);
    let missing = project.path().join("no-such-server");
    let body = json!({"name": "broken", "command": missing.display().to_string()});
    let added = served.post("/api/mcp-servers", &body.to_string());
    assert_eq!(added.status, 201, "{}", added.body);
    let added = added.json();
    assert_eq!(added["discovery"]["discoveryStatus"], "failed", "{added}");
    assert!(
        added["discovery"]["discoveryError"]
            .as_str()
            .is_some_and(|e| e.contains("no-such-server")),
        "{added}"
    );
    assert_eq!(added["tools"], json!([]));
    let saved = project.saved_config();
    assert_eq!(
        saved["mcpServers"]["broken"]["command"],
        json!(missing.display().to_string())
    );
    served.stop();
}

#[test]
fn a_bad_server_entry_is_refused_with_422_and_the_file_is_byte_identical() {
    let project = toolmux_project();
    project.config(&config_with_key(
        r#""mcpServers": {"kept": {"command": "true", "enabled": false}}"#,
    ));
    let served = Served::start(&project, &[]);
    let before = std::fs::read(project.config_file()).expect("read");

    let neither = served
        .post("/api/mcp-servers", r#"{"name": "x", "args": ["a"]}"#)
        .error(422, "invalid_definition");
    assert_eq!(
        neither["details"]["violations"][0]["field"], "mcpServers.x",
        "{neither}"
    );
    let unknown = served
        .post(
            "/api/mcp-servers",
            r#"{"name": "x", "command": "true", "timeout": 5}"#,
        )
        .error(422, "invalid_definition");
    assert!(
        unknown["message"]
            .as_str()
            .is_some_and(|m| m.contains("timeout")),
        "{unknown}"
    );
    served
        .post(
            "/api/mcp-servers",
            r#"{"name": "x", "type": "pigeon", "command": "true"}"#,
        )
        .error(422, "invalid_definition");
    served
        .post("/api/mcp-servers", r#"{"command": "true"}"#)
        .error(422, "invalid_definition");
    served
        .post("/api/mcp-servers", r#"{"name": "kept", "command": "true"}"#)
        .error(409, "conflict");
    served
        .post(
            "/api/mcp-servers",
            r#"{"name": "workspace", "command": "true"}"#,
        )
        .error(409, "conflict");
    served
        .send(
            "PUT",
            "/api/mcp-servers/nothing",
            Some(r#"{"command": "true"}"#),
        )
        .error(404, "not_found");
    served
        .send("DELETE", "/api/mcp-servers/nothing", None)
        .error(404, "not_found");
    served
        .send("PUT", "/api/mcp-servers/kept", Some(r#"{"command": 5}"#))
        .error(422, "invalid_definition");
    // Without a key nothing is written either.
    served
        .request(
            "POST",
            "/api/mcp-servers",
            &[],
            Some(r#"{"name": "y", "command": "true"}"#),
        )
        .error(401, "unauthorized");
    served
        .request("DELETE", "/api/mcp-servers/kept", &[], None)
        .error(401, "unauthorized");

    assert_eq!(std::fs::read(project.config_file()).expect("read"), before);
    served.stop();
}

#[test]
fn hand_edits_of_mcp_servers_apply_live_and_leave_unchanged_servers_running() {
    let project = toolmux_project();
    let pid_file = project.path().join("faults.pid");
    let servers = |entry: Option<Value>, tools: &str| {
        let servers = match entry {
            Some(entry) => format!(r#", "mcpServers": {{"faults": {entry}}}"#),
            None => String::new(),
        };
        config_with_key(&format!(r#""tools": {tools}{servers}"#))
    };
    project.config(&servers(Some(faults_entry(&pid_file, &[])), "{}"));
    let served = Served::start(&project, &[]);
    // Started at serve's start (never discovered), then called: one running process.
    wait_until("the server's tools", || {
        !served.tool_names("faults").is_empty()
    });
    let called = served.post("/api/tools/faults__pid/call", "{}").json();
    assert_eq!(called["status"], "success", "{called}");
    let pid = read_pid(&pid_file);

    // An unrelated edit (a script tool) leaves the running server alone.
    project.config(&servers(
        Some(faults_entry(&pid_file, &[])),
        r#"{"hello": {"description": "Greets.", "command": ["echo", "hi"]}}"#,
    ));
    wait_until("the script tool", || {
        served.tool_names("scripts") == ["hello"]
    });
    let again = served.post("/api/tools/faults__pid/call", "{}").json();
    assert_eq!(again["content"], called["content"], "restarted: {again}");
    assert!(alive(pid));

    // A changed access setting takes effect at once, and leaves the running server alone.
    project.config(&format!(
        r#"{{"server": {{"apiKeys": ["${{TOOLMUX_TEST_KEY}}"], "allowedHosts": ["tools.example"]}}, "mcpServers": {{"faults": {}}}}}"#,
        faults_entry(&pid_file, &[])
    ));
    let host = format!("tools.example:{}", served.port());
    wait_until("the allowed host", || {
        served
            .request("GET", "/api/health", &[("Host", &host)], None)
            .status
            == 200
    });
    assert!(!served.stderr().contains("restart the server"));
    assert!(served.tool_names("scripts").is_empty());
    assert!(alive(pid));

    // Removed by hand: its tools leave the catalog and its process stops.
    project.config(&servers(None, "{}"));
    wait_until("the server's removal", || {
        served.tool_names("faults").is_empty()
    });
    assert_exited(pid, EXIT_LIMIT);
    served.stop();
}
