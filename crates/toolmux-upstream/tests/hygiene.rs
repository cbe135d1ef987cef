//! What a stdio server gets from toolmux and what it leaves behind, against a server that
//! misbehaves on request (`servers/rogue.py` of `toolmux-testkit`): the environment it sees, a
//! daemon it starts in a session of its own, a message too large to read, and a server that
//! stops answering.

mod support;

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::{Project, assert_echoes, call, shut_down, with_setting};
use toolmux_core::CallError;
use toolmux_testkit::eventually::eventually;
use toolmux_testkit::processes::{
    alive, assert_group_gone, processes_with, read_pid, unique_sleep,
};
use toolmux_testkit::servers::{HungServer, rogue};

/// The environment the server reports.
fn reported_env(result: &toolmux_core::ToolResult) -> serde_json::Map<String, Value> {
    serde_json::from_str::<Value>(&result.text_content())
        .expect("the environment as JSON")
        .as_object()
        .cloned()
        .expect("an object")
}

/// A variable of the test process's environment that no allowlist contains: cargo sets it
/// for every test it runs, so a server that inherited everything would see it.
const NOT_ALLOWLISTED: &str = "CARGO_MANIFEST_DIR";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn d9_a_stdio_server_gets_only_the_allowlist_and_its_configured_env() {
    assert!(
        std::env::var_os(NOT_ALLOWLISTED).is_some(),
        "cargo sets {NOT_ALLOWLISTED} for tests"
    );
    let mut server = rogue(&[]);
    server["env"] = json!({"GIVEN": "by the config"});
    let project = Project::new(&json!({"mcpServers": {"rogue": server}}));
    let (upstreams, hub, source) = project.discovered("rogue").await;

    let env = reported_env(&call(&hub, "rogue__env", json!({})).await.expect("env"));
    assert_eq!(env.get("GIVEN"), Some(&json!("by the config")));
    assert!(env.contains_key("PATH"), "{env:?}");
    assert!(!env.contains_key(NOT_ALLOWLISTED), "{env:?}");
    let unexpected: Vec<&String> = env
        .keys()
        .filter(|k| {
            !toolmux_scripts::child::is_inherited(k)
                && *k != "GIVEN"
                && *k != toolmux_scripts::child::MARK_VAR
        })
        .collect();
    assert!(
        unexpected.is_empty(),
        "not on the allowlist: {unexpected:?}"
    );

    shut_down(&upstreams, &source).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn d9_a_server_that_inherits_the_environment_gets_all_of_it() {
    let mut server = rogue(&[]);
    server["inheritEnv"] = json!(true);
    let project = Project::new(&json!({"mcpServers": {"rogue": server}}));
    let (upstreams, hub, source) = project.discovered("rogue").await;
    let env = reported_env(&call(&hub, "rogue__env", json!({})).await.expect("env"));
    assert!(env.contains_key(NOT_ALLOWLISTED), "{env:?}");
    shut_down(&upstreams, &source).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn d12_a_daemon_a_stdio_server_started_with_setsid_dies_with_the_server() {
    let marker = unique_sleep();
    let project = Project::new(&json!({"mcpServers": {"rogue": rogue(&[])}}));
    let (upstreams, hub, _source) = project.discovered("rogue").await;
    let started = call(&hub, "rogue__daemon", json!({"marker": marker}))
        .await
        .expect("starts a daemon");
    assert_eq!(started.text_content(), "started");
    eventually(Duration::from_secs(5), "the daemon to run", async || {
        !processes_with(&marker).is_empty()
    })
    .await;

    upstreams.shutdown().await;
    eventually(
        Duration::from_secs(5),
        "the daemon to be gone",
        async || processes_with(&marker).is_empty(),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn d14_a_result_too_large_to_read_fails_the_call_at_once_and_the_server_restarts() {
    let server = with_setting(rogue(&[]), "toolTimeoutMs", json!(30_000));
    let project = Project::new(&json!({"mcpServers": {"rogue": server}}));
    let (upstreams, hub, source) = project.discovered("rogue").await;
    let started = Instant::now();
    let first = source.pid().await.expect("running");
    let err = call(&hub, "rogue__huge", json!({"bytes": 20_000_000}))
        .await
        .expect_err("too large");
    assert!(!matches!(err, CallError::Timeout { .. }), "{err:?}");
    assert!(
        err.to_string()
            .contains("the server sent a message larger than 16 MiB"),
        "{err}"
    );
    // Well within the 30 s limit: the call did not wait for it.
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    assert_group_gone(first);

    assert_echoes(
        &hub,
        "rogue__echo",
        "again",
        "the next call restarts the server",
    )
    .await;
    let pgid = shut_down(&upstreams, &source).await;
    assert_ne!(pgid, first);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn d15_a_server_that_stops_answering_is_recycled_after_three_timeouts() {
    // Long enough for the restart (a Python start-up) to fit in the last call's limit.
    let server = with_setting(rogue(&[]), "toolTimeoutMs", json!(5_000));
    let project = Project::new(&json!({"mcpServers": {"rogue": server}}));
    let (upstreams, hub, source) = project.discovered("rogue").await;
    let hung = call(&hub, "rogue__pid", json!({}))
        .await
        .expect("pid")
        .text_content();

    // The first call freezes the whole server; the next two find it frozen.
    for (tool, arguments) in [
        ("rogue__freeze", json!({})),
        ("rogue__echo", json!({"text": "frozen"})),
        ("rogue__echo", json!({"text": "frozen"})),
    ] {
        let err = call(&hub, tool, arguments).await.expect_err("hangs");
        assert!(matches!(err, CallError::Timeout { .. }), "{err:?}");
    }
    let hung: u32 = hung.parse().expect("a pid");
    assert_group_gone(hung);

    assert_echoes(&hub, "rogue__echo", "thawed", "a fresh server answers").await;
    let pgid = shut_down(&upstreams, &source).await;
    assert_ne!(pgid, hung);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn d13_shutdown_stops_a_background_discovery_still_starting_its_server() {
    // A server that never finishes its handshake and never exits on its own, under a shell.
    let dir = tempfile::tempdir().expect("tempdir");
    let hung = HungServer::write(dir.path());
    let pid_file = hung.pid_file;
    let project = Project::new(&json!({"mcpServers": {"hung": hung.entry}}));
    let upstreams = project.upstreams();
    upstreams.discover_stale_in_background();
    // The file exists a moment before its pid is written: wait for the pid itself.
    eventually(Duration::from_secs(10), "the server to start", async || {
        std::fs::read_to_string(&pid_file).is_ok_and(|s| s.trim().parse::<u32>().is_ok())
    })
    .await;
    let pid = read_pid(&pid_file);

    // Shutting down does not wait for the start-up limit, and stops what was starting.
    tokio::time::timeout(Duration::from_secs(10), upstreams.shutdown())
        .await
        .expect("shutdown stops the discovery instead of waiting for it");
    eventually(
        Duration::from_secs(5),
        "the server to be gone",
        async || !alive(pid),
    )
    .await;
}

/// The reproduction of D21 (`esc.py`): forks a child that joins the process group of the
/// process named by the second argument, closes its descriptors and execs `sleep MARKER` with
/// an empty environment — no mark, no group of the server's: only the server's cgroup holds it.
#[cfg(target_os = "linux")]
const ESC_PY: &str = r#"
import os, sys
pg = int(open(f"/proc/{sys.argv[2]}/stat").read().rsplit(")", 1)[1].split()[2])
if os.fork() == 0:
    os.setpgid(0, pg)
    os.closerange(0, 256)
    os.execve("/bin/sleep", ["sleep", sys.argv[1]], {})
"#;

#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn d21_what_a_stdio_server_left_in_toolmuxs_own_group_dies_with_the_server() {
    let marker = unique_sleep();
    let rogue = rogue(&[]);
    // The server's shell leaves the process in toolmux's (here the test's) group, `$PPID`,
    // then runs the server as usual.
    let server = json!({
        "command": "sh",
        "args": [
            "-c",
            format!("\"$0\" esc.py {marker} $PPID && exec \"$0\" \"$@\""),
            rogue["command"],
            rogue["args"][0],
        ],
    });
    let project = Project::new(&json!({"mcpServers": {"rogue": server}}));
    std::fs::write(project.path().join("esc.py"), ESC_PY).expect("write esc.py");
    let upstreams = project.upstreams();
    let source = upstreams.get("rogue").expect("configured");
    source.discover().await.expect("discovers");
    let sleeping = || processes_with(&format!("sleep\0{marker}"));
    assert_eq!(sleeping().len(), 1, "the escaped process runs");
    upstreams.shutdown().await;
    assert_eq!(
        sleeping(),
        Vec::<u32>::new(),
        "what the server left in toolmux's own group outlived it"
    );
}
