//! Everything a client asks of a server served per client goes to that client's own upstream
//! session, and everything that session sends comes back to that client only: two real Python
//! MCP clients through a pass-through in front of a Python MCP server whose every answer names
//! its process (`tests/common/relay_sessions.py`) get their own prompts, completions, log levels,
//! log lines and resource updates; an idle client's server process is stopped and transparently
//! started again; and a shared server is asked for the most verbose level its clients want.

#[allow(dead_code)] // each test binary uses a part of the shared helpers
mod common;

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{HttpServer, serve_upstream};
use serde_json::{Value, json};
use toolmux_testkit::eventually::eventually;
use toolmux_testkit::peers::mcp_python;
use toolmux_testkit::processes::alive;
use toolmux_testkit::project::TestProject;
use toolmux_testkit::python_client::{PythonClient, result_text, run_client};
use toolmux_upstream::{UpstreamSource, Upstreams};

/// How long waits for a process to end may take on a loaded machine; not a measure of anything.
const PATIENCE: Duration = Duration::from_secs(20);
/// The subscribable resource of the test server.
const URI: &str = "session://state";

fn server_script() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/common/relay_sessions.py")
        .display()
        .to_string()
}

/// The test server configured as `relay` with `extra` settings, discovered, behind `/mcp`
/// (passing it through when `pass_through`, which serves it per client as `toolmux serve
/// --pass-through relay` does, whatever its `sessionMode`).
async fn serve(extra: Value, pass_through: bool) -> (TestProject, Arc<Upstreams>, HttpServer) {
    let mut server = json!({"command": mcp_python(), "args": [server_script()]});
    if let (Some(server), Some(extra)) = (server.as_object_mut(), extra.as_object()) {
        server.extend(extra.clone());
    }
    serve_upstream("relay", server, pass_through).await
}

fn relay(upstreams: &Upstreams) -> UpstreamSource {
    upstreams.get("relay").expect("configured")
}

fn call(name: &str) -> Value {
    json!({"op": "call", "name": name, "arguments": {}})
}

fn plan(url: &str, steps: Vec<Value>) -> Value {
    json!({"transport": "http", "url": url, "steps": steps})
}

/// What a client asks first: its level and subscription, then who answers each kind of request.
fn identify(level: &str) -> Vec<Value> {
    vec![
        json!({"op": "set_level", "level": level}),
        json!({"op": "subscribe", "uri": URI}),
        call("whoami"),
        json!({"op": "get_prompt", "name": "who"}),
        json!({"op": "complete", "ref": {"type": "ref/prompt", "name": "who"},
               "argument": {"name": "topic", "value": ""}}),
        json!({"op": "read", "uri": URI}),
    ]
}

/// Reads the lines of [`identify`] and checks that one upstream process answered them all;
/// returns its pid.
async fn identified(client: &mut PythonClient) -> String {
    assert!(client.next().await.get("connected").is_some());
    assert_eq!(client.next().await, json!({"ok": true}), "set_level");
    assert_eq!(client.next().await, json!({"ok": true}), "subscribe");
    let pid = result_text(&client.next().await).to_string();
    let prompt = client.next().await;
    assert_eq!(
        prompt["prompt"]["messages"][0]["content"]["text"], pid,
        "prompts/get reaches the client's own upstream session: {prompt}"
    );
    let completion = client.next().await;
    assert_eq!(
        completion["completion"]["values"],
        json!([pid]),
        "completion/complete reaches the client's own upstream session"
    );
    let read = client.next().await;
    assert_eq!(read["contents"][0]["text"], pid, "resources/read: {read}");
    pid
}

/// The levels and pids of the log lines a `wait_logs` step or `done` line reports.
fn logs(lines: &Value) -> Vec<(String, String)> {
    lines
        .as_array()
        .expect("a list of log messages")
        .iter()
        .map(|m| {
            let level = m["level"].as_str().expect("a level").to_string();
            let pid = m["data"]["pid"].as_str().expect("a pid").to_string();
            (level, pid)
        })
        .collect()
}

fn at(levels: &[&str], pid: &str) -> Vec<(String, String)> {
    levels
        .iter()
        .map(|l| (l.to_string(), pid.to_string()))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_client_gets_its_own_prompts_completions_log_level_logs_and_updates() {
    let (_project, upstreams, http) = serve(json!({}), true).await;
    // How long bob listens for what alice's server sends; alice must be done well within it.
    let window = Duration::from_secs(25);

    let mut bob_steps = identify("warning");
    bob_steps.extend([
        json!({"op": "signal", "text": "listening"}),
        json!({"op": "wait_updated", "uri": URI, "timeout": window.as_secs()}),
        call("emit"),
        json!({"op": "wait_updated", "uri": URI, "timeout": 15}),
        json!({"op": "wait_logs", "count": 2, "timeout": 15}),
    ]);
    let mut bob = PythonClient::start(plan(&http.url, bob_steps));
    let bob_pid = identified(&mut bob).await;
    assert_eq!(bob.next().await["signal"], "listening");
    let listening = Instant::now();

    let mut alice_steps = identify("debug");
    alice_steps.extend([
        call("emit"),
        json!({"op": "wait_updated", "uri": URI, "timeout": 15}),
        json!({"op": "wait_logs", "count": 4, "timeout": 15}),
    ]);
    let mut alice = PythonClient::start(plan(&http.url, alice_steps));
    let alice_pid = identified(&mut alice).await;
    assert_ne!(alice_pid, bob_pid, "each client has its own server process");
    assert_eq!(result_text(&alice.next().await), "scheduled");
    assert_eq!(
        alice.next().await,
        json!({"updated": true}),
        "alice hears of her own update"
    );
    let alice_logs = alice.next().await;
    assert_eq!(
        logs(&alice_logs["logs"]),
        at(&["debug", "info", "warning", "error"], &alice_pid),
        "alice gets her server's log lines, sent between calls, at the level she asked for"
    );
    let alice_done = Instant::now();
    assert!(
        alice_done - listening < window - Duration::from_secs(3),
        "alice took {:?}, too long to prove that bob heard nothing of her",
        alice_done - listening
    );
    drop(alice);

    // Bob's answer comes at the end of his window; the client driver waits 20 s for a line.
    tokio::time::sleep_until((listening + window - Duration::from_secs(5)).into()).await;
    assert_eq!(
        bob.next().await,
        json!({"updated": false}),
        "alice's resource update never reaches bob, though both subscribe to the same URI"
    );
    assert_eq!(result_text(&bob.next().await), "scheduled");
    assert_eq!(bob.next().await, json!({"updated": true}));
    let bob_logs = bob.next().await;
    assert_eq!(
        logs(&bob_logs["logs"]),
        at(&["warning", "error"], &bob_pid),
        "bob gets only his own server's lines, at his own level (alice's debug changed nothing)"
    );

    drop(bob);
    upstreams.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_client_processes_are_stopped_and_started_again_on_the_next_request() {
    const CLIENTS: usize = 3;
    let idle = Duration::from_millis(1500);
    let (_project, upstreams, http) = serve(
        json!({"sessionMode": "per-client", "clientIdleTimeoutMs": idle.as_millis() as u64}),
        true,
    )
    .await;
    let server = relay(&upstreams);
    // Each client calls, then stays connected but quiet for longer than the idle time, then
    // calls again.
    let steps = vec![
        json!({"op": "set_level", "level": "error"}),
        call("whoami"),
        json!({"op": "signal", "text": "quiet"}),
        json!({"op": "wait_updated", "uri": "none://ever", "timeout": 12}),
        call("whoami"),
        call("level"),
    ];
    let mut clients: Vec<PythonClient> = (0..CLIENTS)
        .map(|_| PythonClient::start(plan(&http.url, steps.clone())))
        .collect();
    let mut first = Vec::new();
    for client in &mut clients {
        assert!(client.next().await.get("connected").is_some());
        assert_eq!(client.next().await, json!({"ok": true}));
        let pid: u32 = result_text(&client.next().await).parse().expect("a pid");
        assert_eq!(client.next().await["signal"], "quiet");
        first.push(pid);
    }
    let quiet_since = Instant::now();
    assert!(first.iter().all(|&pid| alive(pid)), "{first:?}");
    assert_eq!(server.client_sessions(), CLIENTS);

    eventually(
        PATIENCE,
        "every idle client's process is stopped",
        async || first.iter().all(|&pid| !alive(pid)),
    )
    .await;
    let stopped_after = quiet_since.elapsed();
    assert_eq!(
        server.client_sessions(),
        0,
        "stopped connections free their places under maxSessions"
    );
    eprintln!(
        "{CLIENTS} idle per-client stdio processes stopped {} ms after their clients went quiet \
         (clientIdleTimeoutMs {})",
        stopped_after.as_millis(),
        idle.as_millis()
    );

    for (client, old) in clients.iter_mut().zip(&first) {
        assert_eq!(client.next().await, json!({"updated": false}));
        let pid: u32 = result_text(&client.next().await).parse().expect("a pid");
        // (Not checked alive: the client may have ended its session since, ending it.)
        assert_ne!(pid, *old, "a new process serves the client's next request");
        assert_eq!(
            result_text(&client.next().await),
            "error",
            "the new process was told the level the client asked for"
        );
    }
    drop(clients);
    upstreams.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shared_server_is_asked_for_the_most_verbose_level_its_clients_want() {
    let (_project, upstreams, http) = serve(json!({}), false).await;
    let level = call("relay__level");
    let mut bob = PythonClient::start(plan(
        &http.url,
        vec![
            json!({"op": "set_level", "level": "warning"}),
            level.clone(),
            json!({"op": "signal", "text": "holding"}),
            json!({"op": "wait_updated", "uri": "none://ever", "timeout": 60}),
        ],
    ));
    assert!(bob.next().await.get("connected").is_some());
    assert_eq!(bob.next().await, json!({"ok": true}));
    assert_eq!(result_text(&bob.next().await), "warning");
    assert_eq!(bob.next().await["signal"], "holding");

    let alice = run_client(plan(
        &http.url,
        vec![json!({"op": "set_level", "level": "debug"}), level.clone()],
    ))
    .await;
    assert_eq!(
        result_text(&alice[2]),
        "debug",
        "the most verbose level wins"
    );

    // Alice's session ended (DELETE): the server is asked for what the remaining client wants.
    eventually(PATIENCE, "the level falls back to bob's", async || {
        let carol = run_client(plan(&http.url, vec![level.clone()])).await;
        result_text(&carol[1]) == "warning"
    })
    .await;
    drop(bob);
    upstreams.shutdown().await;
}
