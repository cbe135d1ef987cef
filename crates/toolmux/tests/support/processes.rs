//! Watching the processes a test starts, through Linux's `/proc`: a child that must end in
//! time, a server process that must exit, and no process left running in a project.

use std::path::{Path, PathBuf};
use std::process::{Child, ExitStatus};
use std::time::{Duration, Instant};

use super::TestProject;

/// Waits for a child, killing it (and failing) after `limit`, so that a hung peer fails its
/// test instead of hanging the run.
pub fn wait_bounded(child: &mut Child, limit: Duration) -> ExitStatus {
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("poll the child") {
            return status;
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("a child process ran longer than {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Processes whose working directory is `dir`: toolmux itself, and the upstream servers it
/// starts there. Every such process counts, whatever its name, so that no kind of leftover
/// escapes [`assert_no_process_left`].
pub fn processes_in(dir: &Path) -> Vec<(u32, String)> {
    let dir = dir.canonicalize().expect("canonical project dir");
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| {
            let proc_dir = PathBuf::from(format!("/proc/{pid}"));
            let cwd = std::fs::read_link(proc_dir.join("cwd")).ok()?;
            let cmdline = std::fs::read(proc_dir.join("cmdline")).ok()?;
            (cwd == dir).then(|| (pid, String::from_utf8_lossy(&cmdline).replace('\0', " ")))
        })
        .collect()
}

/// Fails when a process (toolmux, or a server it started) still runs in the project a few
/// seconds after its client left or its server stopped.
pub fn assert_no_process_left(project: &TestProject) {
    let started = Instant::now();
    loop {
        let left = processes_in(project.path());
        if left.is_empty() {
            return;
        }
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "processes left running in the project: {left:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Whether process `pid` runs (a zombie, dead but not yet reaped, does not).
pub fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|stat| {
            stat.rsplit_once(')')
                .is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z'))
        })
        .unwrap_or(false)
}

/// Fails unless process `pid` is gone within `limit`.
pub fn assert_exited(pid: u32, limit: Duration) {
    let deadline = Instant::now() + limit;
    while alive(pid) {
        assert!(
            Instant::now() < deadline,
            "server process {pid} is still running"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The process id a server wrote to `pid_file` (the fault server's `--pid-file`).
pub fn read_pid(pid_file: &Path) -> u32 {
    std::fs::read_to_string(pid_file)
        .expect("the server wrote its pid")
        .trim()
        .parse()
        .expect("a pid")
}
