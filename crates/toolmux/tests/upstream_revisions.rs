//! toolmux as a client of both eras of MCP (issue 27): an HTTP upstream server that speaks
//! 2026-07-28 (the conformance suite's 2026 reference server, `tests/peers/reference-2026`, and
//! a Python SDK server, `tests/peers/upstream/marked_server.py`) is spoken to statelessly after
//! `server/discover`; one of the handshake era (the 2025-11-25 reference server,
//! `tests/peers/reference`), and every stdio server, is initialized as before. Both are discovered, listed and
//! called side by side, through the command line and through `toolmux serve` to a real MCP
//! client (the Python SDK's, `tests/peers/mcp/client.py`). Also: the lists' caching hints
//! (`ttlMs`, `cacheScope`) in the discovery cache, input-required results followed back to
//! the caller, and a tool marked internal by a top-level `_internal` (issue 29).

mod support;

use serde_json::{Value, json};
use support::toolmux_project;
use toolmux_testkit::peers::{
    mcp_python, peer_file, start_reference_server, start_reference_server_2026,
};
use toolmux_testkit::processes::{Background, free_port};
use toolmux_testkit::project::TestProject;
use toolmux_testkit::python_client::{result_text, run_mcp_steps, tool_names};
use toolmux_testkit::served::{KEY, Served, config_with_key};

/// The project's discovery cache file of `server`, as JSON.
fn cache_of(project: &TestProject, server: &str) -> Value {
    let path = project
        .path()
        .join(format!(".toolmux/state/servers/{server}.json"));
    let text =
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    serde_json::from_str(&text).expect("the cache is JSON")
}

/// `mcp list --json`'s row of `server`.
fn listed(project: &TestProject, server: &str) -> Value {
    let rows = project.run_keyed(&["mcp", "list", "--json"]).json();
    rows.as_array()
        .and_then(|rows| rows.iter().find(|r| r["name"] == server))
        .cloned()
        .unwrap_or_else(|| panic!("`{server}` is not listed: {rows}"))
}

/// A configuration with `servers` that requires [`KEY`] (for `toolmux serve`).
fn keyed(servers: Value) -> String {
    config_with_key(&format!("\"mcpServers\": {servers}"))
}

/// A stdio entry that runs the marked server.
fn marked_stdio() -> Value {
    json!({"command": mcp_python(), "args": [peer_file("upstream/marked_server.py")]})
}

/// The marked server over streamable HTTP with `args`, and its entry.
fn marked_http(args: &[&str]) -> (Background, Value) {
    let port = free_port();
    let script = peer_file("upstream/marked_server.py");
    let port_arg = port.to_string();
    let mut all = vec![script.to_str().expect("a UTF-8 path"), "--http", &port_arg];
    all.extend(args);
    let mut server = Background::start(mcp_python(), &all, &[]);
    server.wait_for_port(port);
    (
        server,
        json!({"url": format!("http://127.0.0.1:{port}/mcp")}),
    )
}

#[test]
fn both_eras_are_discovered_listed_and_called_side_by_side() {
    let (new_port, old_port) = (free_port(), free_port());
    let mut new = start_reference_server_2026(new_port);
    let mut old = start_reference_server(old_port);
    let project = toolmux_project();
    project.config(&keyed(json!({
        "new": {"url": format!("http://localhost:{new_port}/mcp")},
        "old": {"url": format!("http://localhost:{old_port}/mcp")},
    })));
    let refreshed = project.run_keyed(&["mcp", "refresh"]).ok();
    assert!(refreshed.contains("new: 25 tools"), "{refreshed}");
    assert!(refreshed.contains("old: 14 tools"), "{refreshed}");

    // The revision agreed on, per server.
    let (new_row, old_row) = (listed(&project, "new"), listed(&project, "old"));
    assert_eq!(new_row["status"], "success", "{new_row}");
    assert_eq!(new_row["protocolVersion"], "2026-07-28", "{new_row}");
    assert_eq!(old_row["status"], "success", "{old_row}");
    assert_eq!(old_row["protocolVersion"], "2025-11-25", "{old_row}");
    let shown = project.run_keyed(&["mcp", "show", "new"]).ok();
    assert!(
        shown.lines().any(|l| l == "protocol: 2026-07-28"),
        "{shown}"
    );

    // The 2026 server's lists are public for five minutes: on disk, fresh until then; the
    // handshake-era server gives no hint, so its lists stay fresh until something changes.
    let new_cache = cache_of(&project, "new");
    let discovered = chrono::DateTime::parse_from_rfc3339(
        new_cache["lastDiscovery"]
            .as_str()
            .expect("a discovery time"),
    )
    .expect("a time");
    let fresh_until = chrono::DateTime::parse_from_rfc3339(
        new_cache["freshUntil"].as_str().expect("a freshness limit"),
    )
    .expect("a time");
    assert_eq!(fresh_until - discovered, chrono::TimeDelta::minutes(5));
    assert_eq!(new_cache["tools"].as_array().map(Vec::len), Some(25));
    assert_eq!(cache_of(&project, "old").get("freshUntil"), None);

    // Both callable from the command line.
    for server in ["new", "old"] {
        let called = project
            .run_keyed(&["tools", "call", &format!("{server}__test_simple_text")])
            .ok();
        assert_eq!(called.trim(), "This is a simple text response for testing.");
    }

    // And through `toolmux serve` to an MCP client of the handshake era, whose form answers
    // the 2026 server's input-required result (toolmux asks it, then calls again with the
    // answer); a multi-round one carries the server's request state between rounds.
    let served = Served::start(&project, &[]);
    let outcomes = run_mcp_steps(&json!({
        "transport": "http",
        "url": served.mcp_url(),
        "headers": {"Authorization": format!("Bearer {KEY}")},
        "elicitation": [{"name": "Ada"}],
        "steps": [
            {"op": "list"},
            {"op": "call", "name": "old__test_simple_text", "arguments": {}},
            {"op": "call", "name": "new__test_input_required_result_elicitation", "arguments": {}},
        ],
    }));
    let names = tool_names(&outcomes[0]);
    for name in ["new__test_simple_text", "old__test_simple_text"] {
        assert!(
            names.iter().any(|n| n == name),
            "{name} is not listed: {names:?}"
        );
    }
    assert_eq!(
        result_text(&outcomes[1]),
        "This is a simple text response for testing."
    );
    assert_eq!(result_text(&outcomes[2]), "Hello, Ada!", "{}", outcomes[2]);
    served.stop();
    new.stop();
    old.stop();
}

#[test]
fn an_input_request_with_no_one_to_ask_fails_the_call_and_says_why() {
    let port = free_port();
    let mut new = start_reference_server_2026(port);
    let project = toolmux_project();
    project.config(
        &json!({"mcpServers": {"new": {"url": format!("http://localhost:{port}/mcp")}}})
            .to_string(),
    );
    project.run(&["mcp", "refresh"]).ok();
    let called = project.run(&[
        "tools",
        "call",
        "new__test_input_required_result_elicitation",
    ]);
    assert_eq!(called.code(), 1, "{}", called.stdout());
    assert_eq!(
        called.stderr().trim(),
        "toolmux: tool `new__test_input_required_result_elicitation` failed: MCP server `new`: \
         the server answered with error -32602: no caller that can answer elicitation requests \
         is waiting on this server: toolmux relays them to the MCP client or chat whose tool \
         call is running (calls from the command line or the REST API cannot answer them)"
    );
    new.stop();
}

#[test]
fn a_top_level_internal_mark_hides_the_tool_from_models_and_clients() {
    let project = toolmux_project();
    project.config(&keyed(json!({"marked": marked_stdio()})));
    project.run_keyed(&["mcp", "refresh"]).ok();
    // Over stdio, the session begins with the handshake.
    assert_eq!(listed(&project, "marked")["protocolVersion"], "2025-11-25");

    let shown = project.run_keyed(&["tools", "list", "--json"]).json();
    let names: Vec<&str> = shown
        .as_array()
        .expect("a list")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .filter(|n| n.starts_with("marked__"))
        .collect();
    assert_eq!(names, ["marked__search"]);
    let all = project
        .run_keyed(&["tools", "list", "--all", "--json"])
        .json();
    let internal: Vec<&Value> = all
        .as_array()
        .expect("a list")
        .iter()
        .filter(|t| t["name"] == "marked__reset")
        .collect();
    assert_eq!(internal.len(), 1, "{all}");
    assert_eq!(internal[0]["internal"], true, "{}", internal[0]);

    let served = Served::start(&project, &[]);
    let outcomes = run_mcp_steps(&json!({
        "transport": "http",
        "url": served.mcp_url(),
        "headers": {"Authorization": format!("Bearer {KEY}")},
        "steps": [{"op": "list"}],
    }));
    let names = tool_names(&outcomes[0]);
    assert!(names.iter().any(|n| n == "marked__search"), "{names:?}");
    assert!(!names.iter().any(|n| n == "marked__reset"), "{names:?}");
    served.stop();
}

#[test]
fn private_lists_are_never_written_to_the_cache_file() {
    let (mut server, entry) = marked_http(&["--cache-scope", "private"]);
    let project = toolmux_project();
    project.config(&json!({"mcpServers": {"marked": entry}}).to_string());
    let refreshed = project.run(&["mcp", "refresh"]).ok();
    assert_eq!(refreshed.trim(), "marked: 2 tools");

    let cache = cache_of(&project, "marked");
    assert_eq!(cache["private"], true, "{cache}");
    assert_eq!(cache["tools"], json!([]), "{cache}");
    assert_eq!(cache["discoveryStatus"], "never", "{cache}");
    assert_eq!(
        cache["discoveryError"],
        "the server marked its lists private (cacheScope); they are not kept on disk, and each \
         toolmux process discovers them again"
    );
    // Another process discovers the server itself before it reads the catalog.
    let called = project
        .run(&[
            "tools",
            "call",
            "marked__search",
            "-a",
            "query=kept in memory",
        ])
        .ok();
    assert_eq!(called.trim(), "found: kept in memory");
    assert_eq!(cache_of(&project, "marked")["tools"], json!([]));
    server.stop();
}

#[test]
fn lists_past_their_ttl_are_discovered_again_by_the_next_call() {
    let (mut stale_server, stale_entry) = marked_http(&["--ttl-ms", "0"]);
    let (mut fresh_server, fresh_entry) = marked_http(&[]);
    let project = toolmux_project();
    project
        .config(&json!({"mcpServers": {"stale": stale_entry, "fresh": fresh_entry}}).to_string());
    project.run(&["mcp", "refresh"]).ok();
    let before = |server: &str| cache_of(&project, server)["lastDiscovery"].clone();
    let (stale, fresh) = (before("stale"), before("fresh"));
    for server in ["stale", "fresh"] {
        let called = project
            .run(&[
                "tools",
                "call",
                &format!("{server}__search"),
                "-a",
                "query=q",
            ])
            .ok();
        assert_eq!(called.trim(), "found: q");
    }
    // The call to the server whose lists were fresh for no time listed them again; the other
    // one's are still those of the refresh.
    assert_ne!(before("stale"), stale);
    assert_eq!(before("fresh"), fresh);
    stale_server.stop();
    fresh_server.stop();
}
