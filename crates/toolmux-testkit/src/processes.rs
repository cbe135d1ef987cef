//! Watching the processes a test starts, through Linux's `/proc`: a child that must end in
//! time, a process that must exit, a process group or a project directory that must be left
//! empty, and a server the test runs itself.

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// Secret variables and their values, as a user's shell may hold them when it starts toolmux:
/// what no child toolmux starts may see.
pub const SHELL_SECRETS: &[(&str, &str)] = &[
    ("OPENAI_API_KEY", "sk-test-openai-0123456789"),
    ("TOOLMUX_API_KEY", "tmk-test-0123456789"),
    ("MYSQL_PWD", "mysql-pw-4815162342"),
    (
        "DATABASE_URL",
        "postgres://app:db-pw-2718281828@db.example/app",
    ),
    ("GITHUB_PAT", "github-pat-value-31415"),
    (
        "SLACK_WEBHOOK_URL",
        "https://hooks.slack.example/services/T0/B0/slack-hook-1618",
    ),
];

/// The reproduction of D21 (`esc.py MARKER [PID]`): forks a child that joins the process group
/// of process PID (else of the script's parent: toolmux, or the test process), closes its
/// descriptors and execs `sleep MARKER` with an empty environment; the script prints `escaped`
/// and exits at once.
pub const ESCAPE_PY: &str = r#"
import os, sys
owner = int(sys.argv[2]) if len(sys.argv) > 2 else os.getppid()
pg = int(open(f"/proc/{owner}/stat").read().rsplit(")", 1)[1].split()[2])
if os.fork() == 0:
    os.setpgid(0, pg)
    os.closerange(0, 256)
    os.execve("/bin/sleep", ["sleep", sys.argv[1]], {})
print("escaped")
"#;

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

/// The pids listed in `/proc`.
fn all_pids() -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .collect()
}

/// Whether process `pid` runs (a zombie, dead but not yet reaped, does not).
pub fn alive(pid: u32) -> bool {
    toolmux_files::ProcStat::of(pid).is_some_and(|stat| stat.field(3).is_some_and(|s| s != "Z"))
}

/// The parent of process `pid`, while it exists.
pub fn parent(pid: u32) -> Option<u32> {
    toolmux_files::ProcStat::of(pid)?.number(4)
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

/// Processes whose working directory is `dir`: toolmux itself, and the servers it starts
/// there. Every such process counts, whatever its name, so that no kind of leftover escapes
/// [`assert_no_process_left`]. Each comes with its command line, arguments joined by spaces.
pub fn processes_in(dir: &Path) -> Vec<(u32, String)> {
    let dir = dir.canonicalize().expect("canonical project dir");
    all_pids()
        .into_iter()
        .filter_map(|pid| {
            let proc_dir = PathBuf::from(format!("/proc/{pid}"));
            let cwd = std::fs::read_link(proc_dir.join("cwd")).ok()?;
            let cmdline = std::fs::read(proc_dir.join("cmdline")).ok()?;
            (cwd == dir).then(|| (pid, String::from_utf8_lossy(&cmdline).replace('\0', " ")))
        })
        .collect()
}

/// Fails when a process (toolmux, or a server it started) still runs in `dir` a few seconds
/// after its client left or its server stopped.
pub fn assert_no_process_left(dir: &Path) {
    let started = Instant::now();
    loop {
        let left = processes_in(dir);
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

/// The live (non-zombie) processes in the process group `pgid`.
fn group_members(pgid: u32) -> Vec<u32> {
    all_pids()
        .into_iter()
        .filter(|pid| {
            toolmux_files::ProcStat::of(*pid).is_some_and(|stat| {
                stat.field(3).is_some_and(|s| s != "Z") && stat.number::<u32>(5) == Some(pgid)
            })
        })
        .collect()
}

/// Waits until no process is left in the process group `pgid` (a stopped server and
/// everything it started), failing after ten seconds with the ones still running.
pub fn assert_group_gone(pgid: u32) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let members = group_members(pgid);
        if members.is_empty() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "processes of group {pgid} are still running: {members:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Live processes whose command line (its arguments joined by NUL bytes, so `sleep\0300.1`
/// finds `sleep 300.1`) contains `marker`.
pub fn processes_with(marker: &str) -> Vec<u32> {
    all_pids()
        .into_iter()
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains(marker))
        })
        .collect()
}

/// The live processes whose environment holds `entry` (`NAME=value`): what a session or a call
/// started, whatever each process calls itself. Zombies are left out: they have ended, only
/// their parent has yet to reap them.
pub fn processes_with_env(entry: &str) -> Vec<u32> {
    all_pids()
        .into_iter()
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| env.split(|&b| b == 0).any(|v| v == entry.as_bytes()))
                && !std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
                    s.rsplit(')')
                        .next()
                        .is_some_and(|r| r.trim_start().starts_with('Z'))
                })
        })
        .collect()
}

/// A `sleep` argument no other test uses (fractional seconds, about 300 s), for finding the
/// process by its command line with [`processes_with`].
pub fn unique_sleep() -> String {
    static NEXT: AtomicU32 = AtomicU32::new(1);
    format!(
        "300.{}{:03}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// A free TCP port on loopback.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// A server process the test starts itself (an HTTP or SSE server); killed when dropped.
pub struct Background {
    child: Child,
}

impl Background {
    /// Starts `program ARGS` with `envs` added, its output discarded.
    pub fn start(program: impl AsRef<Path>, args: &[&str], envs: &[(&str, String)]) -> Self {
        let program = program.as_ref();
        let child = Command::new(program)
            .args(args)
            .envs(envs.iter().map(|(k, v)| (*k, v.as_str())))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", program.display()));
        Self { child }
    }

    /// Waits until the port accepts connections, failing if the server exits first.
    pub fn wait_for_port(&mut self, port: u16) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("the server exited before listening on {port}: {status}");
            }
            assert!(Instant::now() < deadline, "nothing listens on port {port}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Kills the server and reaps it.
    pub fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        self.stop();
    }
}
