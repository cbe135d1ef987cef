//! `server.apiKeys`, `server.allowedHosts` and `server.allowedOrigins` are live: an edit of the
//! config file while `toolmux serve` runs counts from the next request, on `/mcp` and `/api`
//! alike, with no restart and no "restart to apply" warning.

mod support;

use serde_json::json;
use support::toolmux_project;
use toolmux_testkit::eventually::wait_until;
use toolmux_testkit::http::Response;
use toolmux_testkit::project::TestProject;
use toolmux_testkit::python_client::run_mcp_steps;
use toolmux_testkit::served::{KEY, Served};

const SECOND_KEY: &str = "second-key-9876543210";

/// An MCP `initialize` request, as a client's first POST.
const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;

fn set_server_settings(project: &TestProject, server: serde_json::Value) {
    project.config(&json!({ "server": server }).to_string());
}

fn api_with(served: &Served, key: &str) -> Response {
    served.request(
        "GET",
        "/api/tools",
        &[("Authorization", &format!("Bearer {key}"))],
        None,
    )
}

/// A POST to `/mcp` that the guard answers before any MCP session exists when it refuses.
fn mcp_post(served: &Served, headers: &[(&str, &str)]) -> Response {
    let mut all = vec![
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
    ];
    all.extend_from_slice(headers);
    served.request("POST", "/mcp", &all, Some(INITIALIZE))
}

/// Whether a real MCP client gets the tool list from `/mcp` with `key`.
fn mcp_lists_tools_with(served: &Served, key: &str) -> bool {
    let lines = run_mcp_steps(&json!({
        "transport": "http",
        "url": served.mcp_url(),
        "headers": {"Authorization": format!("Bearer {key}")},
        "steps": [{"op": "list"}],
    }));
    lines[0]["tools"].as_array().is_some_and(|t| !t.is_empty())
}

#[test]
fn a_key_added_or_removed_in_the_config_counts_at_once_on_mcp_and_api() {
    let project = toolmux_project();
    set_server_settings(&project, json!({"apiKeys": ["${TOOLMUX_TEST_KEY}"]}));
    let served = Served::start_with_env(&project, &[], &[("TOOLMUX_TEST_KEY2", SECOND_KEY)]);

    api_with(&served, SECOND_KEY).error(401, "unauthorized");
    let second = format!("Bearer {SECOND_KEY}");
    mcp_post(&served, &[("Authorization", &second)]).json_rpc_refusal(401, "unauthorized");

    // Added: accepted by the API as soon as the edit is applied, and by `/mcp` with it.
    set_server_settings(
        &project,
        json!({"apiKeys": ["${TOOLMUX_TEST_KEY}", "${TOOLMUX_TEST_KEY2}"]}),
    );
    wait_until("the added key to be accepted", || {
        api_with(&served, SECOND_KEY).status == 200
    });
    assert!(mcp_lists_tools_with(&served, SECOND_KEY));
    assert!(mcp_lists_tools_with(&served, KEY));

    // Removed: refused by both.
    set_server_settings(&project, json!({"apiKeys": ["${TOOLMUX_TEST_KEY2}"]}));
    wait_until("the removed key to be refused", || {
        api_with(&served, KEY).status == 401
    });
    let first = format!("Bearer {KEY}");
    let refused = mcp_post(&served, &[("Authorization", &first)]);
    refused.json_rpc_refusal(401, "unauthorized");
    assert!(refused.header("www-authenticate").is_some());
    assert_eq!(api_with(&served, SECOND_KEY).status, 200);
    assert!(mcp_lists_tools_with(&served, SECOND_KEY));

    let stderr = served.stderr();
    assert!(
        !stderr.contains("restart the server"),
        "a live setting was reported as needing a restart:\n{stderr}"
    );
    served.stop();
}

#[test]
fn allowed_hosts_and_origins_edited_in_the_config_count_at_once_on_mcp_and_api() {
    let project = toolmux_project();
    set_server_settings(&project, json!({"apiKeys": ["${TOOLMUX_TEST_KEY}"]}));
    let served = Served::start(&project, &[]);
    let host = format!("tools.example:{}", served.port());
    let auth = format!("Bearer {KEY}");
    let from_host = [("Host", host.as_str()), ("Authorization", auth.as_str())];
    let from_origin = [
        ("Origin", "https://app.example"),
        ("Authorization", auth.as_str()),
    ];

    served
        .request("GET", "/api/health", &from_host, None)
        .error(403, "forbidden");
    mcp_post(&served, &from_host).json_rpc_refusal(403, "forbidden");
    served
        .request("GET", "/api/health", &from_origin, None)
        .error(403, "forbidden");
    mcp_post(&served, &from_origin).json_rpc_refusal(403, "forbidden");

    set_server_settings(
        &project,
        json!({
            "apiKeys": ["${TOOLMUX_TEST_KEY}"],
            "allowedHosts": ["tools.example"],
            "allowedOrigins": ["https://app.example"],
        }),
    );
    wait_until("the added host to be accepted", || {
        served
            .request("GET", "/api/health", &from_host, None)
            .status
            == 200
    });
    assert_eq!(
        served
            .request("GET", "/api/health", &from_origin, None)
            .status,
        200
    );
    // Past the guard, rmcp answers the initialize (200) instead of refusing it.
    assert_eq!(mcp_post(&served, &from_host).status, 200);
    assert_eq!(mcp_post(&served, &from_origin).status, 200);

    set_server_settings(&project, json!({"apiKeys": ["${TOOLMUX_TEST_KEY}"]}));
    wait_until("the removed host to be refused", || {
        served
            .request("GET", "/api/health", &from_host, None)
            .status
            == 403
    });
    mcp_post(&served, &from_host).json_rpc_refusal(403, "forbidden");
    mcp_post(&served, &from_origin).json_rpc_refusal(403, "forbidden");
    served.stop();
}

/// Issue 12, D2: deleting or renaming the config file while `serve` ran loaded it as an empty
/// configuration and applied that, dropping the keys and deny rules. The last good
/// configuration must stay in force, with a warning at the default log level, and the file,
/// once back (or written anew by an editor that renamed the original away), must apply.
#[test]
fn d2_a_config_file_moved_away_keeps_its_keys_and_policies_and_applies_when_back() {
    let project = toolmux_project();
    let guarded = json!({
        "server": {"apiKeys": ["${TOOLMUX_TEST_KEY}"]},
        "policies": {"tools": {"grep": "deny"}},
    });
    project.config(&guarded.to_string());
    project.write("notes.txt", "needle\n");
    let served = Served::start(&project, &[]);
    let grep = || served.post("/api/tools/grep/call", r#"{"pattern": "needle"}"#);
    grep().error(403, "denied");
    mcp_post(&served, &[]).json_rpc_refusal(401, "unauthorized");

    let config = project.config_file();
    let moved = project.path().join("config.json.bak");
    std::fs::rename(&config, &moved).expect("move the config away");
    wait_until("the server to notice the file is gone", || {
        served.stderr().contains("is gone")
    });
    mcp_post(&served, &[]).json_rpc_refusal(401, "unauthorized");
    grep().error(403, "denied");
    assert_eq!(served.get_anonymous("/api/logs").status, 401);

    // Back, changed: grep is allowed now.
    let allowed = json!({
        "server": {"apiKeys": ["${TOOLMUX_TEST_KEY}"]},
        "policies": {"tools": {"grep": "allow"}},
    });
    std::fs::write(&moved, allowed.to_string()).expect("change the moved file");
    std::fs::rename(&moved, &config).expect("put the config back");
    wait_until("the restored file to apply", || grep().status == 200);
    mcp_post(&served, &[]).json_rpc_refusal(401, "unauthorized");

    // An editor's save: the original renamed away, then a new file written in its place.
    std::fs::rename(&config, project.path().join(".toolmux/config.json~")).expect("rename");
    std::fs::write(&config, guarded.to_string()).expect("write the new file");
    wait_until("the editor's new file to apply", || grep().status == 403);
    grep().error(403, "denied");
    mcp_post(&served, &[]).json_rpc_refusal(401, "unauthorized");
    served.stop();
}
