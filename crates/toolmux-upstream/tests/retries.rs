//! Calls whose connection drops, against a real Python server that crashes in the middle of a
//! call on its first run (`support/flaky.py`, with a marker file) and answers on the next: a
//! read-only or idempotent call is made again and succeeds, a call that may have changed
//! something is not repeated and says it may have run (the server counts what it received),
//! and another server never notices. Also: tools the server or the configuration marks
//! internal are internal in the catalog.

mod support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};
use support::{Project, assert_answers, call};
use toolmux_core::{CallError, Hub};
use toolmux_testkit::peers::mcp_python;
use toolmux_testkit::processes::{Background, free_port};
use toolmux_testkit::servers::faults;
use toolmux_upstream::{Backoff, Upstreams};

fn flaky_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/flaky.py")
}

/// Where the flaky server keeps its marker and its count of received calls.
struct Files {
    _dir: tempfile::TempDir,
    marker: PathBuf,
    received: PathBuf,
}

impl Files {
    fn new() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        Self {
            marker: dir.path().join("crashed-once"),
            received: dir.path().join("received"),
            _dir: dir,
        }
    }

    fn args(&self) -> Vec<String> {
        vec![
            flaky_script().display().to_string(),
            "--marker".into(),
            self.marker.display().to_string(),
            "--received".into(),
            self.received.display().to_string(),
        ]
    }

    /// A stdio entry for the flaky server, with `extra` keys.
    fn entry(&self, extra: Value) -> Value {
        let mut entry = json!({"command": mcp_python(), "args": self.args()});
        if let (Some(entry), Value::Object(extra)) = (entry.as_object_mut(), extra) {
            entry.extend(extra);
        }
        entry
    }

    /// How many calls of `tool` the server received, over all its runs.
    fn received(&self, tool: &str) -> usize {
        std::fs::read_to_string(&self.received)
            .unwrap_or_default()
            .lines()
            .filter(|l| *l == tool)
            .count()
    }

    /// The next call of a crashing tool crashes the server again.
    fn rearm(&self) {
        std::fs::remove_file(&self.marker).expect("remove the marker");
    }
}

async fn discovered(upstreams: &Upstreams) {
    for server in upstreams.servers() {
        server.discover().await.expect("discovers");
    }
}

/// The call of `server__tool` is made again after the crash: it answers `<tool> after restart`
/// and the server received it twice; `why` says what the call shows when it fails.
async fn assert_made_again(hub: &Hub, files: &Files, server: &str, tool: &str, why: &str) {
    let name = format!("{server}__{tool}");
    let expected = format!("{tool} after restart");
    assert_answers(hub, &name, json!({}), &expected, why).await;
    assert_eq!(files.received(tool), 2);
}

/// With the crash rearmed, the call of `tool` fails; `why` says what the call shows when it
/// does not.
async fn fails_once_rearmed(hub: &Hub, files: &Files, tool: &str, why: &str) -> CallError {
    files.rearm();
    call(hub, tool, json!({})).await.expect_err(why)
}

/// The project's upstreams, every one discovered, and the hub over them.
async fn started(project: &Project) -> (Upstreams, Hub) {
    let upstreams = project.upstreams();
    let hub = project.hub(&upstreams);
    discovered(&upstreams).await;
    (upstreams, hub)
}

fn failure(err: &CallError) -> &str {
    match err {
        CallError::Failed { message, .. } => message,
        other => panic!("expected a failure, got {other:?}"),
    }
}

async fn pid(upstreams: &Upstreams, server: &str) -> u32 {
    upstreams
        .get(server)
        .expect("configured")
        .pid()
        .await
        .expect("running")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_or_idempotent_call_whose_server_crashes_is_made_again_and_succeeds() {
    let files = Files::new();
    let project = Project::new(&json!({"mcpServers": {
        "flaky": files.entry(json!({})),
        "steady": faults(&[]),
    }}));
    let (upstreams, hub) = started(&project).await;
    let steady = pid(&upstreams, "steady").await;
    let first = pid(&upstreams, "flaky").await;

    assert_answers(
        &hub,
        "flaky__lookup",
        json!({}),
        "lookup after restart",
        "a read-only call is made again after the crash",
    )
    .await;
    assert_eq!(
        files.received("lookup"),
        2,
        "received by the crashed run and the next"
    );
    assert_ne!(
        pid(&upstreams, "flaky").await,
        first,
        "the server was restarted"
    );

    files.rearm();
    assert_made_again(
        &hub,
        &files,
        "flaky",
        "tally",
        "an idempotent call is made again after the crash",
    )
    .await;

    let echo = call(&hub, "steady__echo", json!({"text": "still here"}))
        .await
        .expect("the other server is unaffected");
    assert_eq!(echo.text_content(), "still here");
    assert_eq!(
        pid(&upstreams, "steady").await,
        steady,
        "and never restarted"
    );
    upstreams.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_that_may_have_run_is_not_made_again_and_says_so() {
    let files = Files::new();
    let project = Project::new(&json!({"mcpServers": {"flaky": files.entry(json!({}))}}));
    let (upstreams, hub) = started(&project).await;

    let err = call(&hub, "flaky__touch", json!({}))
        .await
        .expect_err("the server crashed during a call that is not safe to repeat");
    let message = failure(&err);
    assert!(
        message.starts_with("MCP server `flaky` exited during the call; the call may have run"),
        "{message}"
    );
    assert_eq!(files.received("touch"), 1, "not repeated");

    assert_answers(
        &hub,
        "flaky__touch",
        json!({}),
        "touch after restart",
        "the next call restarts the server",
    )
    .await;
    upstreams.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retry_always_and_never_override_the_tools_hints() {
    let files = Files::new();
    let project = Project::new(&json!({"mcpServers": {"flaky": files.entry(json!({
        "toolRetry": {"touch": "always"},
        "retry": "never",
    }))}}));
    let (upstreams, hub) = started(&project).await;

    assert_made_again(
        &hub,
        &files,
        "flaky",
        "touch",
        "`always` repeats a tool without hints",
    )
    .await;

    let err = fails_once_rearmed(
        &hub,
        &files,
        "flaky__lookup",
        "`never` keeps even a read-only call from being repeated",
    )
    .await;
    assert!(failure(&err).contains("may have run"), "{err:?}");
    assert_eq!(files.received("lookup"), 1);
    upstreams.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_server_that_dies_mid_call_and_comes_back_gets_the_safe_call_again() {
    let files = Files::new();
    let port = free_port();
    // The first run crashes during the first crashing call; the shell starts the next at once,
    // on the same port, as a supervisor would.
    let python = mcp_python().display().to_string();
    let run = format!(
        "'{python}' {args} --http {port}; exec '{python}' {args} --http {port}",
        args = files
            .args()
            .iter()
            .map(|a| format!("'{a}'"))
            .collect::<Vec<_>>()
            .join(" ")
    );
    let mut server = Background::start("sh", &["-c", &run], &[]);
    server.wait_for_port(port);
    let project = Project::new(&json!({"mcpServers": {
        "remote": {"url": format!("http://127.0.0.1:{port}/mcp")},
    }}));
    let loaded = toolmux_config::load(project.path(), None).expect("config loads");
    // Pauses long enough for a Python HTTP server to come back (a second or two).
    let backoff = Backoff {
        tries: 3,
        first_delay: Duration::from_millis(400),
        window: Duration::from_millis(500),
    };
    let upstreams = Upstreams::with_backoff(
        &loaded,
        &toolmux_upstream::state_dir(project.path()),
        backoff,
    );
    let hub = project.hub(&upstreams);
    discovered(&upstreams).await;

    assert_made_again(
        &hub,
        &files,
        "remote",
        "lookup",
        "a read-only call is made again on a new session once the server is back",
    )
    .await;

    let err = fails_once_rearmed(
        &hub,
        &files,
        "remote__touch",
        "the second run crashes too, during a call not safe to repeat",
    )
    .await;
    let message = failure(&err);
    assert!(
        message.contains("lost its connection during the call")
            && message.contains("the call may have run"),
        "{message}"
    );
    assert_eq!(files.received("touch"), 1, "not repeated");
    upstreams.shutdown().await;
    server.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_marked_internal_by_the_server_or_the_configuration_are_internal() {
    let files = Files::new();
    let project = Project::new(&json!({"mcpServers": {"flaky": files.entry(json!({
        "internalTools": ["admin_*"],
    }))}}));
    let (upstreams, hub) = started(&project).await;

    let catalog = hub.catalog();
    let internal = |name: &str| {
        catalog
            .get(name)
            .unwrap_or_else(|| panic!("{name} is in the catalog"))
            .descriptor
            .internal
    };
    assert!(internal("flaky__secret_get"), "`_meta._internal: true`");
    assert!(internal("flaky__admin_reset"), "`internalTools`");
    assert!(!internal("flaky__pid"));
    let offered: Vec<String> = catalog.tools().map(|t| t.descriptor.name.clone()).collect();
    assert!(offered.contains(&"flaky__pid".to_string()), "{offered:?}");
    assert!(
        !offered
            .iter()
            .any(|n| n == "flaky__secret_get" || n == "flaky__admin_reset"),
        "internal tools are never offered: {offered:?}"
    );
    // A trusted caller (the CLI) may still call one.
    let ran = call(&hub, "flaky__secret_get", json!({}))
        .await
        .expect("trusted callers reach internal tools");
    assert_eq!(ran.text_content(), "secret_get ran");
    upstreams.shutdown().await;
}
