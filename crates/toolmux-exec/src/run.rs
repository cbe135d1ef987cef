//! Running one command to its end: started the one way toolmux starts a child
//! (`toolmux_scripts::child`: its own process group, the subreaper, a mark) with the sandbox
//! hooked in, its output read under the cap, its time limit enforced on the whole group
//! (SIGTERM, then SIGKILL a moment later), and everything it left behind stopped when it ends
//! — a `sleep 1000 &` by the group kill, a double fork that left the group by its mark. A
//! call dropped half-way (cancelled, or cut by the pipeline's own limit) does the same from
//! its drop guard.

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::task::JoinSet;
use toolmux_scripts::child::{self, Guard, Signal};

use crate::output::{Capture, Captured};
use crate::sandbox::{DanglingLink, Prepared, SandboxPolicy, SandboxReport};

/// How long a group has between SIGTERM and SIGKILL.
pub const KILL_GRACE: Duration = Duration::from_secs(1);

/// How long the output is read after the command ended and its group was stopped: only a
/// process that left the group and the mark behind can still hold a pipe open.
const DRAIN_LIMIT: Duration = Duration::from_secs(1);

/// One read from a pipe.
const READ_CHUNK: usize = 64 * 1024;

/// A command to run.
#[derive(Clone, Debug)]
pub struct CommandSpec {
    /// The program (`bash`, `python3`).
    pub program: OsString,
    /// Its arguments.
    pub args: Vec<String>,
    /// Where it runs (inside the project root).
    pub cwd: PathBuf,
    /// Variables set on top of the environment every child gets (see [`run`]).
    pub env: Vec<(OsString, OsString)>,
    /// Names of toolmux's own variables passed on besides the allowlist every child gets
    /// (`shell.env`).
    pub pass_env: Vec<String>,
    /// The time limit.
    pub timeout: Duration,
    /// The most bytes kept of each of stdout and stderr.
    pub max_output: usize,
    /// The sandbox.
    pub sandbox: SandboxPolicy,
    /// Whether to refuse to run when the sandbox is on but some of it cannot be applied here
    /// (`shell.requireSandbox`).
    pub require_sandbox: bool,
}

/// How a command ended, and what it printed.
#[derive(Clone, Debug)]
pub struct Finished {
    /// Its exit code, when it exited.
    pub exit_code: Option<i32>,
    /// The signal that ended it (`SIGKILL`), when one did.
    pub signal: Option<String>,
    /// Whether the time limit ended it.
    pub timed_out: bool,
    /// Its stdout.
    pub stdout: Captured,
    /// Its stderr.
    pub stderr: Captured,
    /// The protections that were in force.
    pub sandbox: SandboxReport,
    /// What else happened (processes stopped at the end, a pipe held open).
    pub notes: Vec<String>,
}

/// Why a command could not run at all.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The program could not be started (or the sandbox could not be applied in the child).
    #[error("cannot start `{program}`: {source}")]
    Spawn {
        /// The program.
        program: String,
        /// What the system said.
        source: std::io::Error,
    },
    /// Waiting for it failed.
    #[error("cannot wait for the command: {0}")]
    Wait(std::io::Error),
    /// A path the sandbox keeps read-only is reached through a link to nothing, which no
    /// mount can cover: a command could create what the link names (hooks git would run),
    /// so nothing runs, whatever `shell.requireSandbox` says.
    #[error(
        "not run: {}, so the sandbox cannot keep it read-only and a command could create it \
         there. Remove the link (or make what it names) and ask again",
        dangling_text(.0)
    )]
    DanglingLink(Vec<DanglingLink>),
    /// The process that relays the command's end out of its PID namespace was killed from
    /// outside before it did (the command cannot reach it): the command's end is unknown, and
    /// the command and everything it started were stopped.
    #[error(
        "the command's end is unknown: the process that relays it out of the sandbox was \
         killed from outside toolmux ({how}) while the command ran; the command and everything \
         it started were stopped"
    )]
    RelayLost {
        /// How the relay ended (`SIGKILL`).
        how: String,
    },
    /// The sandbox is on and required, and this system cannot give all of it.
    #[error(
        "not run: the sandbox is required (`shell.requireSandbox`) but this system cannot give \
         {}. {} Set `\"shell\": {{\"requireSandbox\": false}}` to run with the protections \
         that are available (each result names them)",
        missing.join(", "),
        notes.join(" ")
    )]
    Unconfined {
        /// The protections missing.
        missing: Vec<&'static str>,
        /// The report's notes: why.
        notes: Vec<String>,
        /// What could be applied.
        report: SandboxReport,
    },
}

/// The paths of `links`, for [`RunError::DanglingLink`].
fn dangling_text(links: &[DanglingLink]) -> String {
    links
        .iter()
        .map(|d| {
            let through = if d.link == d.path {
                String::new()
            } else {
                format!(" (through `{}`)", d.link.display())
            };
            format!(
                "`{}`{through} is a link to `{}`, which does not exist",
                d.path.display(),
                d.target.display()
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// The values of toolmux's variables named in `names` (`shell.env`), when set and not an
/// exported shell function, which a shell would run. Everything else of toolmux's environment
/// stays out but for the allowlist every child gets
/// ([`toolmux_scripts::child::is_inherited`]: `PATH`, `HOME`, the locale…), which
/// [`child::spawn_prepared`] applies: a secret reaches a command only when the configuration
/// names it, whatever it is called.
pub fn passed_env(names: &[String]) -> Vec<(OsString, OsString)> {
    names
        .iter()
        .filter_map(|name| {
            // Through the copy kept at start: a secret `shell.env` names was taken out of the
            // process environment (so that no other child inherits it), not out of reach.
            let value = std::env::var_os(name)
                .or_else(|| toolmux_core::process_env::var(name).map(OsString::from))?;
            (!value.as_encoded_bytes().starts_with(b"()")).then(|| (OsString::from(name), value))
        })
        .collect()
}

/// Runs `spec` to its end (or its time limit).
pub async fn run(spec: CommandSpec) -> Result<Finished, RunError> {
    let prepared = Prepared::new(&spec.sandbox);
    if !prepared.dangling().is_empty() {
        return Err(RunError::DanglingLink(prepared.dangling().to_vec()));
    }
    let sandbox = prepared.report().clone();
    let missing = sandbox.missing();
    if spec.require_sandbox && !missing.is_empty() {
        return Err(RunError::Unconfined {
            missing,
            notes: sandbox.notes.clone(),
            report: sandbox,
        });
    }
    let mut env = passed_env(&spec.pass_env);
    env.extend(spec.env.iter().cloned());
    let mut relay = None;
    let (mut started, guard) = child::spawn_prepared(
        &spec.program,
        &spec.args,
        &spec.cwd,
        env,
        false,
        |command| relay = prepared.install(command, &spec.cwd),
    )
    .map_err(|source| RunError::Spawn {
        program: spec.program.to_string_lossy().into_owned(),
        source,
    })?;
    // Nothing is sent: a command that reads stdin sees its end at once instead of waiting.
    drop(started.stdin.take());
    let pgid = guard.pgid();
    let stdout = Arc::new(Mutex::new(Capture::new(spec.max_output)));
    let stderr = Arc::new(Mutex::new(Capture::new(spec.max_output)));
    // Dropped with the call, a `JoinSet` aborts its readers.
    let mut readers = JoinSet::new();
    if let Some(pipe) = started.stdout.take() {
        readers.spawn(read_into(pipe, stdout.clone()));
    }
    if let Some(pipe) = started.stderr.take() {
        readers.spawn(read_into(pipe, stderr.clone()));
    }
    let mut running = Running {
        child: Some(started),
        guard: Some(guard),
    };
    let mut notes = Vec::new();
    let mut timed_out = false;
    let status = {
        let child = running.child_mut();
        match tokio::time::timeout(spec.timeout, child.wait()).await {
            Ok(status) => status.map_err(RunError::Wait)?,
            Err(_) => {
                timed_out = true;
                if let Some(pgid) = pgid {
                    child::signal_group(pgid, Signal::Term);
                }
                match tokio::time::timeout(KILL_GRACE, child.wait()).await {
                    Ok(status) => status.map_err(RunError::Wait)?,
                    Err(_) => {
                        if let Some(pgid) = pgid {
                            child::signal_group(pgid, Signal::Kill);
                        }
                        child.wait().await.map_err(RunError::Wait)?
                    }
                }
            }
        }
    };
    // Killed from outside before it relayed the command's end (toolmux's own time limit
    // aside): the command's end is unknown, and what it left is stopped below all the same.
    let relay_lost = !timed_out && relay.as_ref().is_some_and(|watch| !watch.relayed());
    if !relay_lost && !timed_out && pgid.is_some_and(group_alive) {
        notes.push(
            "processes the command left running in the background were stopped when it ended"
                .to_string(),
        );
    }
    running.finish().await;
    if relay_lost {
        let (exit_code, signal) = ended_by(status);
        return Err(RunError::RelayLost {
            how: signal.unwrap_or_else(|| format!("exit code {}", exit_code.unwrap_or(-1))),
        });
    }
    let drained = tokio::time::timeout(DRAIN_LIMIT, async {
        while readers.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        readers.abort_all();
        notes.push(
            "a process outside the command's group kept its output open; what was read before \
             is shown"
                .to_string(),
        );
    }
    let finish = |capture: &Mutex<Capture>| {
        capture
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .finish()
    };
    let (exit_code, signal) = ended_by(status);
    Ok(Finished {
        exit_code,
        signal,
        timed_out,
        stdout: finish(&stdout),
        stderr: finish(&stderr),
        sandbox,
        notes,
    })
}

/// The exit code, or the name of the signal that ended the process.
fn ended_by(status: std::process::ExitStatus) -> (Option<i32>, Option<String>) {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(number) = status.signal() {
            let name = nix::sys::signal::Signal::try_from(number)
                .map(|s| s.as_str().to_string())
                .unwrap_or_else(|_| format!("signal {number}"));
            return (None, Some(name));
        }
    }
    (status.code(), None)
}

/// Whether any process is still in group `pgid` (after its leader was reaped: what the command
/// left behind).
fn group_alive(pgid: u32) -> bool {
    #[cfg(unix)]
    {
        i32::try_from(pgid).is_ok_and(|raw| {
            raw > 1 && nix::sys::signal::killpg(nix::unistd::Pid::from_raw(raw), None).is_ok()
        })
    }
    #[cfg(not(unix))]
    {
        let _ = pgid;
        false
    }
}

async fn read_into(mut pipe: impl AsyncRead + Unpin, capture: Arc<Mutex<Capture>>) {
    let mut buffer = vec![0u8; READ_CHUNK];
    loop {
        match pipe.read(&mut buffer).await {
            Ok(0) | Err(_) => return,
            Ok(n) => capture
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(&buffer[..n]),
        }
    }
}

/// A started command until it is finished: dropped before (the call was cancelled, or the
/// pipeline's limit cut it), it stops the group as the time limit does — SIGTERM now, SIGKILL
/// and the sweep after [`KILL_GRACE`] — from a task, since a drop cannot wait.
struct Running {
    child: Option<tokio::process::Child>,
    guard: Option<Guard>,
}

impl Running {
    fn child_mut(&mut self) -> &mut tokio::process::Child {
        self.child
            .as_mut()
            .unwrap_or_else(|| unreachable!("taken only by finish and drop"))
    }

    /// Stops what the command left behind (its group, and what escaped it with its mark).
    async fn finish(&mut self) {
        if let Some(mut guard) = self.guard.take() {
            guard.sweep().await;
        }
        self.child = None;
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let Some(guard) = self.guard.take() else {
            return;
        };
        if let Some(pgid) = guard.pgid() {
            child::signal_group(pgid, Signal::Term);
        }
        let child = self.child.take();
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn(async move {
                    tokio::time::sleep(KILL_GRACE).await;
                    // The guard's drop kills the group and sweeps; the child's, its leader.
                    drop(guard);
                    drop(child);
                });
            }
            Err(_) => {
                drop(guard);
                drop(child);
            }
        }
    }
}
