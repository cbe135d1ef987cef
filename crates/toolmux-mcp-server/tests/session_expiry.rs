//! Sessions over streamable HTTP that their client abandons are closed after the configured
//! idle time, with everything the server kept for them; a client that comes back with the old
//! id gets `404` and starts again, as MCP's transport spec prescribes. Sessions whose client is
//! still there — asking, or listening on its stream — are kept.

#[allow(dead_code)] // each test binary uses a part of the shared helpers
mod common;

use std::time::Duration;

use common::{HttpServer, hub, post, raw_http};
use serde_json::{Value, json};
use toolmux_mcp_server::ServeOptions;
use toolmux_testkit::eventually::eventually;
use toolmux_testkit::python_client::PythonClient;

const PROTOCOL: &str = "2025-06-18";

/// How long the waits for an expiry may take on a loaded machine; not a measure of anything.
const PATIENCE: Duration = Duration::from_secs(20);

fn options(idle: Duration) -> ServeOptions {
    ServeOptions {
        session_idle_timeout: Some(idle),
        ..ServeOptions::default()
    }
}

fn session_header(id: &str) -> String {
    format!("Mcp-Session-Id: {id}\r\nMCP-Protocol-Version: {PROTOCOL}\r\n")
}

/// Initialises a session over raw HTTP, as a client without a library would; returns its id.
async fn initialize(port: u16) -> String {
    initialize_at(port, "/mcp").await
}

/// [`initialize`] at the MCP door at `path` (`/mcp`, or an endpoint's `/mcp/<name>`).
async fn initialize_at(port: u16, path: &str) -> String {
    let at = |request: String| request.replacen("POST /mcp ", &format!("POST {path} "), 1);
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": PROTOCOL, "capabilities": {},
        "clientInfo": {"name": "session-test", "version": "0"}}});
    let answer = raw_http(port, &at(post(port, &init, ""))).await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    let id = answer
        .header("mcp-session-id")
        .expect("a session id")
        .to_string();
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let answer = raw_http(port, &at(post(port, &initialized, &session_header(&id)))).await;
    assert_eq!(answer.status, 202, "{}", answer.body);
    id
}

/// `tools/list` in session `id`: the HTTP status and, on success, the JSON-RPC answer.
async fn list_tools(port: u16, id: &str) -> (u16, Option<Value>) {
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let answer = raw_http(port, &post(port, &list, &session_header(id))).await;
    let message = answer
        .body
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .find_map(|d| serde_json::from_str::<Value>(d.trim()).ok());
    (answer.status, message)
}

async fn request_without_body(port: u16, method: &str, id: &str) -> u16 {
    let request = format!(
        "{method} /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAccept: text/event-stream\r\n\
         Connection: close\r\n{}\r\n",
        session_header(id)
    );
    raw_http(port, &request).await.status
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_abandoned_session_expires_and_its_client_gets_404_then_starts_again() {
    let options = options(Duration::from_secs(1));
    let live = options.live_sessions.clone();
    let server = HttpServer::start(hub(), options).await;
    let old = initialize(server.port).await;
    assert_eq!(live.count(), 1);

    // Left without a DELETE: the session's server, and with it its catalog watcher, goes.
    eventually(PATIENCE, "the abandoned session is closed", async || {
        live.count() == 0
    })
    .await;

    assert_eq!(list_tools(server.port, &old).await.0, 404);
    assert_eq!(request_without_body(server.port, "GET", &old).await, 404);
    assert_eq!(request_without_body(server.port, "DELETE", &old).await, 404);

    // The spec's recovery: a new `initialize` without the old id.
    let new = initialize(server.port).await;
    assert_ne!(new, old);
    let (status, answer) = list_tools(server.port, &new).await;
    assert_eq!(status, 200);
    let answer = answer.expect("a JSON-RPC answer");
    assert!(answer["result"]["tools"].is_array(), "{answer}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_that_keeps_asking_is_kept() {
    let idle = Duration::from_secs(2);
    let options = options(idle);
    let live = options.live_sessions.clone();
    let server = HttpServer::start(hub(), options).await;
    let id = initialize(server.port).await;

    // Several idle times long, with a request far more often than the idle time.
    for _ in 0..20 {
        let (status, answer) = list_tools(server.port, &id).await;
        assert_eq!(
            status, 200,
            "the session was closed while in use: {answer:?}"
        );
        tokio::time::sleep(idle / 10).await;
    }
    assert_eq!(live.count(), 1);

    // Once it stops asking, it is idle like any other.
    eventually(PATIENCE, "the session closes once idle", async || {
        live.count() == 0
    })
    .await;
    assert_eq!(list_tools(server.port, &id).await.0, 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listening_client_is_kept_and_one_that_vanishes_without_delete_expires() {
    let idle = Duration::from_millis(500);
    let options = options(idle);
    let live = options.live_sessions.clone();
    let server = HttpServer::start(hub(), options).await;
    let mut client = PythonClient::start(json!({
        "transport": "http",
        "url": server.url,
        "steps": [
            {"op": "list"},
            {"op": "signal", "text": "listening"},
            // Sits on its open GET stream, asking nothing, for several idle times.
            {"op": "wait_list_changed", "timeout": 3},
            {"op": "ping"},
            {"op": "signal", "text": "still here"},
            // Stays connected while the test counts the live sessions: a client that ran out
            // of steps closes its session (a DELETE), which raced the count.
            {"op": "wait_list_changed", "timeout": 5}
        ]
    }));
    assert!(client.next().await.get("connected").is_some());
    assert!(client.next().await.get("tools").is_some());
    assert_eq!(client.next().await, json!({"signal": "listening"}));
    assert_eq!(client.next().await, json!({"list_changed": false}));
    // The session outlived six idle times because its client was there.
    assert_eq!(client.next().await, json!({"ok": true}));
    assert_eq!(client.next().await, json!({"signal": "still here"}));
    // Besides the session, rmcp may hold a server value for a moment (the client's stateless
    // `server/discover` probe), so only "at least".
    assert!(live.count() >= 1);

    // Killed: its connections close, no DELETE is sent.
    drop(client);
    eventually(
        PATIENCE,
        "the vanished client's session is closed",
        async || live.count() == 0,
    )
    .await;
}

/// The door of an endpoint taken out of the configuration (as a live reload of the config file
/// does: a new hub configuration without it) is closed: its sessions end after a short grace
/// (in which they hear that their list changed), not at their idle time, and a request to it,
/// its old session's included, gets `404`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endpoint_removed_from_the_configuration_ends_its_sessions() {
    let hub = hub();
    let mut settings = (*hub.settings()).clone();
    let endpoint = toolmux_core::Endpoint::new("e", toolmux_core::EndpointFilter::default(), None);
    settings.endpoints =
        std::sync::Arc::new([("e".to_string(), std::sync::Arc::new(endpoint))].into());
    hub.configure(settings.clone());
    let options = ServeOptions::default();
    let live = options.live_sessions.clone();
    let server = HttpServer::start(hub.clone(), options).await;
    let session = initialize_at(server.port, "/mcp/e").await;
    assert_eq!(live.count(), 1);

    settings.endpoints = std::sync::Arc::default();
    hub.configure(settings);
    eventually(
        PATIENCE,
        "the removed endpoint's session ended",
        async || live.count() == 0,
    )
    .await;
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let answer = raw_http(
        server.port,
        &post(server.port, &list, &session_header(&session)).replacen(
            "POST /mcp ",
            "POST /mcp/e ",
            1,
        ),
    )
    .await;
    assert_eq!(answer.status, 404, "{}", answer.body);
    let refusal: Value = serde_json::from_str(&answer.body).expect("JSON");
    assert_eq!(
        refusal["error"]["message"],
        toolmux_core::unknown_endpoint("e", &toolmux_core::Endpoints::new()),
        "{refusal}"
    );
}
