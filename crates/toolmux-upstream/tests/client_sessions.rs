//! A server served per client, against a real Python server: each downstream session gets a
//! process of its own on its first call, calls without a session and toolmux's own discovery
//! share one, `maxSessions` caps them with an error that says so, and ending a session ends
//! its process.

mod support;

use std::path::Path;
use std::time::Duration;

use serde_json::json;
use support::{Project, call};
use toolmux_core::{CallContext, CallError, Channel, Hub};
use toolmux_testkit::eventually::eventually;
use toolmux_testkit::peers::mcp_python;
use toolmux_testkit::processes::alive;

const PATIENCE: Duration = Duration::from_secs(20);

/// `flaky.py`'s `pid` tool, as called from one MCP session, or from the CLI without one.
async fn pid_in(hub: &Hub, session: Option<&str>) -> Result<u32, CallError> {
    let result = match session {
        Some(session) => {
            let context = CallContext::new(Channel::Mcp).with_session(session);
            hub.call("flaky__pid", json!({}), &context).await?
        }
        None => call(hub, "flaky__pid", json!({})).await?,
    };
    Ok(result.text_content().parse().expect("a process id"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_session_gets_its_own_process_up_to_the_cap_and_ending_it_ends_that_process() {
    let dir = tempfile::tempdir().expect("tempdir");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/flaky.py");
    let project = Project::new(&json!({"mcpServers": {"flaky": {
        "command": mcp_python(),
        "args": [script, "--marker", dir.path().join("m"), "--received", dir.path().join("r")],
        "sessionMode": "per-client",
        "maxSessions": 2,
    }}}));
    let upstreams = project.upstreams();
    let hub = project.hub(&upstreams);
    let server = upstreams.get("flaky").expect("configured");
    server.discover().await.expect("discovers");
    let shared = server
        .pid()
        .await
        .expect("discovery runs on the shared connection");

    let a = pid_in(&hub, Some("a")).await.expect("session a");
    let b = pid_in(&hub, Some("b")).await.expect("session b");
    assert_ne!(a, b, "each session has its own process");
    assert!(a != shared && b != shared, "and neither is toolmux's own");
    assert_eq!(pid_in(&hub, Some("a")).await.expect("again"), a, "kept");
    assert_eq!(
        pid_in(&hub, None).await.expect("no session"),
        shared,
        "a call without a session uses the shared connection"
    );
    assert_eq!(server.client_sessions(), 2);

    let err = pid_in(&hub, Some("c"))
        .await
        .expect_err("a third session is over the cap");
    assert!(
        err.to_string()
            .contains("is serving 2 client sessions, as many as it may (`maxSessions`)"),
        "{err}"
    );

    upstreams.end_session("a").await;
    eventually(PATIENCE, "session a's process ends", async || !alive(a)).await;
    assert!(alive(b), "session b's carries on");
    assert_eq!(server.client_sessions(), 1);
    let c = pid_in(&hub, Some("c"))
        .await
        .expect("room for session c now");
    assert!(c != a && c != b);

    upstreams.shutdown().await;
    eventually(PATIENCE, "every process ends with toolmux", async || {
        !alive(b) && !alive(c) && !alive(shared)
    })
    .await;
}
