//! Children that try to outlive their work (findings D12, D21): a daemon that leaves its
//! process group and clears its environment, and one that joins toolmux's own process group
//! with an empty environment (`esc.py`). Started through the one child recipe
//! (`child::spawn`) and as script tools, they must be gone once their guard or call ends.

#![cfg(target_os = "linux")]

mod support;

use std::ffi::OsStr;
use std::path::Path;
use std::time::Duration;

use serde_json::json;
use support::{call_ok, hub, hub_in_tempdir, sh_tool};
use toolmux_core::{CallContext, Channel};
use toolmux_scripts::child::{self, Containment};
use toolmux_testkit::eventually::eventually;
use toolmux_testkit::peers::plain_python;
use toolmux_testkit::processes::{ESCAPE_PY, processes_with, unique_sleep};

/// The live processes running `sleep MARKER`.
fn sleeping(marker: &str) -> Vec<u32> {
    processes_with(&format!("sleep\0{marker}"))
}

/// Starts `sh -c script` in `dir` through the one child recipe, with no configured environment.
fn spawn_sh(dir: &Path, script: String) -> (tokio::process::Child, child::Guard) {
    child::spawn(
        OsStr::new("sh"),
        &["-c".to_string(), script],
        dir,
        std::iter::empty::<(&str, &str)>(),
        false,
    )
    .expect("spawn")
}

/// Every process running `sleep MARKER` ends within five seconds; `what` names them.
async fn assert_all_end(marker: &str, what: &str) {
    eventually(Duration::from_secs(5), what, async || {
        sleeping(marker).is_empty()
    })
    .await;
}

#[test]
fn children_get_a_cgroup_here() {
    // The tests below need the containment that no trick escapes; this machine (root, a
    // cgroup2 hierarchy) gives it, and a machine that cannot must say so, not pass quietly.
    assert_eq!(child::containment(), Containment::Cgroup);
    assert_eq!(Containment::Cgroup.to_string(), "cgroup");
    assert_eq!(Containment::ProcessGroup.as_str(), "process-group");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn d21_a_setsid_env_i_daemon_dies_when_the_guard_sweeps() {
    let dir = tempfile::tempdir().expect("dir");
    let marker = unique_sleep();
    let script = format!("setsid env -i sleep {marker} & sleep 0.2; exit 0");
    let (mut process, mut guard) = spawn_sh(dir.path(), script);
    assert_eq!(guard.containment(), Containment::Cgroup);
    let status = process.wait().await.expect("wait");
    assert!(status.success());
    assert_eq!(
        sleeping(&marker).len(),
        1,
        "the daemon runs before the sweep"
    );
    guard.sweep().await;
    // The sweep returns once the cgroup is empty and removed.
    assert_eq!(
        sleeping(&marker),
        Vec::<u32>::new(),
        "the daemon outlived its guard"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn d21_a_dropped_guard_kills_what_its_child_left_in_any_group() {
    let dir = tempfile::tempdir().expect("dir");
    let marker = unique_sleep();
    std::fs::write(dir.path().join("esc.py"), ESCAPE_PY).expect("write esc.py");
    // The child keeps running: the guard is dropped as a cancelled call's is.
    let script = format!(
        "setsid env -i sleep {marker} & {} esc.py {marker}; sleep 300",
        plain_python().display()
    );
    let (process, guard) = spawn_sh(dir.path(), script);
    eventually(Duration::from_secs(10), "both escapes to run", async || {
        sleeping(&marker).len() == 2
    })
    .await;
    drop(guard);
    drop(process);
    assert_all_end(&marker, "everything the child started to end").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn d21_a_script_that_joins_toolmuxs_process_group_with_an_empty_environment_dies_with_its_call()
 {
    let dir = tempfile::tempdir().expect("dir");
    let marker = unique_sleep();
    std::fs::write(dir.path().join("esc.py"), ESCAPE_PY).expect("write esc.py");
    let hub = hub(
        dir.path(),
        json!({"esc": {
            "description": "Escapes into its parent's process group.",
            "command": [plain_python(), "esc.py", marker],
        }}),
    );
    let result = call_ok(&hub, "esc").await;
    assert_eq!(result.text_content(), "escaped\n", "{result:?}");
    // The call answers after its cgroup was emptied.
    assert_eq!(
        sleeping(&marker),
        Vec::<u32>::new(),
        "the escaped process outlived its call"
    );
    // Nor is a dead one left unreaped: the zombie was in the call's cgroup.
    let zombies: Vec<u32> =
        std::fs::read_to_string(format!("/proc/self/task/{}/children", std::process::id()))
            .unwrap_or_default()
            .split_whitespace()
            .filter_map(|p| p.parse().ok())
            .filter(|pid: &u32| {
                std::fs::read(format!("/proc/{pid}/cmdline"))
                    .is_ok_and(|c| String::from_utf8_lossy(&c).contains(&marker))
            })
            .collect();
    assert!(zombies.is_empty(), "unreaped: {zombies:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn d21_a_timed_out_script_takes_its_escaped_processes_with_it() {
    let marker = unique_sleep();
    let script = format!("setsid env -i sleep {marker} & sleep 300");
    let (_dir, hub) = hub_in_tempdir(sh_tool("slow", "Never ends.", &script, Some(1000)));
    let outcome = hub
        .call("slow", json!({}), &CallContext::new(Channel::Cli))
        .await;
    assert!(outcome.is_err(), "{outcome:?}");
    assert_all_end(&marker, "the daemon of a timed-out call to end").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_children_in_parallel_each_end_with_their_own_cgroup() {
    let dir = tempfile::tempdir().expect("dir");
    let marker = unique_sleep();
    let mut running = Vec::new();
    for _ in 0..20 {
        let script = format!("setsid env -i sleep {marker} & exit 0");
        running.push(tokio::spawn({
            let dir = dir.path().to_path_buf();
            async move {
                let (mut process, mut guard) = spawn_sh(&dir, script);
                process.wait().await.expect("wait");
                guard.sweep().await;
            }
        }));
    }
    for task in running {
        task.await.expect("task");
    }
    assert_eq!(sleeping(&marker), Vec::<u32>::new());
}
