//! A server served per client gives each MCP session its own upstream session: two real
//! Python MCP clients whose calls run at the same time each get their own server process and
//! their own elicitation (never refused as ambiguous, never the other's), and a client that
//! ends its session (`DELETE`) ends its upstream session with it while the other carries on.

#[allow(dead_code)] // each test binary uses a part of the shared helpers
mod common;

use std::path::Path;
use std::time::Duration;

use common::serve_upstream;
use serde_json::{Value, json};
use toolmux_testkit::eventually::eventually;
use toolmux_testkit::peers::mcp_python;
use toolmux_testkit::processes::alive;
use toolmux_testkit::python_client::{PythonClient, result_text};

/// How long waits for a process to end may take on a loaded machine; not a measure of anything.
const PATIENCE: Duration = Duration::from_secs(20);

fn sessions_script() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/common/sessions.py")
        .display()
        .to_string()
}

/// The calls a client makes: who serves it, then the elicitation tool.
fn plan(url: &str, name: &str, more: &[Value]) -> Value {
    let mut steps = vec![
        json!({"op": "call", "name": "whoami", "arguments": {}}),
        json!({"op": "call", "name": "ask", "arguments": {}}),
    ];
    steps.extend(more.iter().cloned());
    json!({
        "transport": "http",
        "url": url,
        "elicitation": [{"name": name}],
        "steps": steps,
    })
}

fn pid_of(line: &Value) -> u32 {
    result_text(line).parse().expect("a process id")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_mcp_session_gets_its_own_upstream_session_and_ending_it_ends_that_one() {
    let meet = tempfile::tempdir().expect("tempdir");
    let entry = json!({
        "command": mcp_python(),
        "args": [sessions_script(), "--meet", meet.path()],
        "sessionMode": "per-client",
    });
    let (_project, upstreams, http) = serve_upstream("sessions", entry, true).await;
    let server = upstreams.get("sessions").expect("configured");

    // Both calls of `ask` wait for each other in the server, so they run at the same time.
    let mut alice = PythonClient::start(plan(&http.url, "alice", &[]));
    let mut bob = PythonClient::start(plan(
        &http.url,
        "bob",
        &[
            json!({"op": "signal", "text": "holding"}),
            json!({"op": "wait_list_changed", "timeout": 60}),
        ],
    ));
    assert!(alice.next().await.get("connected").is_some());
    assert!(bob.next().await.get("connected").is_some());
    let alice_pid = pid_of(&alice.next().await);
    let bob_pid = pid_of(&bob.next().await);
    assert_ne!(
        alice_pid, bob_pid,
        "each session has its own server process"
    );
    let alice_asked = alice.next().await;
    let bob_asked = bob.next().await;
    assert_eq!(result_text(&alice_asked), format!("{alice_pid}:alice"));
    assert_eq!(result_text(&bob_asked), format!("{bob_pid}:bob"));
    assert_eq!(bob.next().await["signal"], "holding");

    // Alice ends her session (the client sends DELETE as it exits): her server goes with it.
    let lines = alice.finish().await;
    let done = &lines.last().expect("a done line")["done"];
    assert_eq!(
        done["elicitations"].as_array().map(Vec::len),
        Some(1),
        "alice was asked once, for her own call: {done}"
    );
    eventually(PATIENCE, "alice's upstream session ends", async || {
        !alive(alice_pid) && server.client_sessions() == 1
    })
    .await;
    assert!(alive(bob_pid), "bob's upstream session carries on");

    drop(bob);
    upstreams.shutdown().await;
    eventually(
        PATIENCE,
        "shutting down ends every per-client session",
        async || !alive(bob_pid),
    )
    .await;
}
