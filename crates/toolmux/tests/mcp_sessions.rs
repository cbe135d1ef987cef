//! `server.sessionIdleTimeoutMs` reaches `toolmux serve`: an MCP session left without a
//! `DELETE` is closed after the configured idle time, its client gets `404` and starts again;
//! a change of the setting while serving is named as needing a restart.

mod support;

use serde_json::json;
use support::toolmux_project;
use toolmux_testkit::eventually::wait_until;
use toolmux_testkit::http::Response;
use toolmux_testkit::served::Served;

const PROTOCOL: &str = "2025-06-18";

fn mcp_post(served: &Served, session: Option<&str>, body: &serde_json::Value) -> Response {
    let auth = served.authorization();
    let mut headers = vec![
        ("Authorization", auth.as_str()),
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("MCP-Protocol-Version", PROTOCOL),
    ];
    if let Some(id) = session {
        headers.push(("Mcp-Session-Id", id));
    }
    served.request("POST", "/mcp", &headers, Some(&body.to_string()))
}

fn initialize(served: &Served) -> String {
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": PROTOCOL, "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}});
    let answer = mcp_post(served, None, &init);
    assert_eq!(answer.status, 200, "{}", answer.body);
    let id = answer
        .header("mcp-session-id")
        .expect("a session id")
        .to_string();
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(mcp_post(served, Some(&id), &initialized).status, 202);
    id
}

fn list_tools(served: &Served, id: &str) -> Response {
    mcp_post(
        served,
        Some(id),
        &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
    )
}

#[test]
fn an_abandoned_session_expires_after_the_configured_idle_time() {
    let project = toolmux_project();
    project.config(r#"{"server": {"sessionIdleTimeoutMs": 1000}}"#);
    let served = Served::start(&project, &[]);
    let old = initialize(&served);
    assert_eq!(list_tools(&served, &old).status, 200);

    // Every request naming the session is activity, so each look comes after twice the idle
    // time of silence.
    wait_until("the idle session is closed", || {
        std::thread::sleep(std::time::Duration::from_millis(2000));
        list_tools(&served, &old).status == 404
    });

    let new = initialize(&served);
    assert_ne!(new, old);
    let answer = list_tools(&served, &new);
    assert_eq!(answer.status, 200);
    assert!(answer.body.contains("\"tools\""), "{}", answer.body);

    // The session table is built at start: an edit is named, not half applied.
    project.config(r#"{"server": {"sessionIdleTimeoutMs": 60000}}"#);
    wait_until("the restart warning", || {
        served
            .stderr()
            .contains("`server.sessionIdleTimeoutMs` changed in the configuration")
    });
    assert!(
        !served.stderr().contains("server access settings"),
        "{}",
        served.stderr()
    );
    served.stop();
}
