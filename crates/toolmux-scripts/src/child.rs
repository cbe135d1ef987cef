//! What every child process toolmux starts has in common, script tools and stdio MCP servers
//! alike: the environment it is given, and how everything it started is found and stopped
//! when its work ends — also what left its process group with `setsid`.
//!
//! # Environment
//! A child gets an allowlist of toolmux's environment ([`INHERITED_VARS`] and `LC_*`, the
//! variables the MCP SDKs' stdio clients pass, plus locale, time zone and temporary
//! directory), then its configured `env`. API keys and tokens in toolmux's environment are not
//! on the list, so they never reach a child unless its configuration names them. A child
//! configured to inherit the whole environment gets it as before.
//!
//! # What escaped the process group
//! Each child leads a process group of its own, killed with one `killpg`. A descendant that
//! called `setsid` (or `setpgid`) is no longer in that group, and once its parent exits it
//! would be re-parented to init and survive. So toolmux makes itself a *child subreaper*
//! ([`become_subreaper`]): orphans below it are re-parented to toolmux instead. Every child is
//! started with a [`Mark`] in its environment, which its descendants inherit; when its work
//! ends, [`Mark::sweep`] kills the processes re-parented to toolmux that carry the mark (with
//! the process group each one leads) and reaps them. The mark tells one call's or server's
//! leftovers from another's, which the process tree no longer can. A descendant that both
//! leaves the group and clears its environment cannot be told apart; [`sweep_escaped`] stops
//! those when toolmux exits.

use std::ffi::OsStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// toolmux's environment variables a child gets unless it inherits everything: those the MCP
/// SDKs' stdio clients pass (`HOME`, `LOGNAME`, `PATH`, `SHELL`, `TERM`, `USER`), plus the
/// locale, the time zone and the temporary directory. `LC_*` variables are passed too.
pub const INHERITED_VARS: &[&str] = &[
    "HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "LANGUAGE", "TMPDIR", "TZ",
];

/// The environment variable that carries a child's [`Mark`].
pub const MARK_VAR: &str = "TOOLMUX_CHILD_MARK";

/// How long [`Mark::sweep`] keeps looking for what a child left behind: killed processes
/// re-parent their own children to toolmux a moment later, and those are swept too.
const SWEEP_LIMIT: Duration = Duration::from_millis(500);
/// The pause between two passes of a sweep.
const SWEEP_PAUSE: Duration = Duration::from_millis(10);

/// Whether toolmux passes `name` to a child that does not inherit the whole environment.
pub fn is_inherited(name: &str) -> bool {
    INHERITED_VARS.contains(&name) || name.starts_with("LC_")
}

/// Sets a child's environment: the allowlist of toolmux's (or all of it with `inherit_all`),
/// then `configured`, then its `mark`.
pub fn set_environment<K, V>(
    command: &mut tokio::process::Command,
    configured: impl IntoIterator<Item = (K, V)>,
    inherit_all: bool,
    mark: &Mark,
) where
    K: AsRef<OsStr>,
    V: AsRef<OsStr>,
{
    if !inherit_all {
        command.env_clear();
        for (name, value) in std::env::vars_os() {
            let Some(name) = name.to_str() else { continue };
            // Like the MCP SDKs: a value that starts with `()` is an exported shell function,
            // which a shell in the child would run.
            if is_inherited(name) && !value.as_encoded_bytes().starts_with(b"()") {
                command.env(name, value);
            }
        }
    }
    command.envs(configured);
    command.env(MARK_VAR, &mark.0);
}

/// Makes toolmux the child subreaper of everything it starts (once per process; later calls
/// do nothing), so that a descendant whose parent exits is re-parented to toolmux, where
/// [`Mark::sweep`] finds it, instead of to init.
pub fn become_subreaper() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        #[cfg(target_os = "linux")]
        if let Err(e) = nix::sys::prctl::set_child_subreaper(true) {
            tracing::warn!(error = %e, "cannot become a child subreaper; a process that leaves its group with setsid may outlive its call");
        }
    });
}

/// The identity of one started child, inherited by everything it starts through the
/// environment ([`MARK_VAR`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mark(String);

impl Mark {
    /// A mark no other child of this toolmux process has.
    pub fn new() -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        Self(format!(
            "{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ))
    }

    /// Its value, as set in [`MARK_VAR`].
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Kills what is left of a child whose work ended: its process `group` (led by the child,
    /// which is never reaped here: its owner waits for it), and every process re-parented to
    /// toolmux that carries this mark, with the group it leads. Passes repeat while killing
    /// re-parents more, for at most half a second.
    pub async fn sweep(&self, group: Option<u32>) {
        let deadline = tokio::time::Instant::now() + SWEEP_LIMIT;
        let mut pending = Vec::new();
        loop {
            if let Some(group) = group {
                kill_group(group);
            }
            let killed = self.pass(group, &mut pending);
            let group_left = group.is_some_and(group_exists);
            if killed == 0 && pending.is_empty() && !group_left {
                return;
            }
            if tokio::time::Instant::now() >= deadline {
                tracing::debug!(mark = %self.0, "processes a child left behind are still exiting");
                return;
            }
            tokio::time::sleep(SWEEP_PAUSE).await;
        }
    }

    /// One pass of [`Mark::sweep`] that does not wait, for `Drop` (when a runtime is at hand,
    /// prefer spawning [`Mark::sweep`]).
    pub fn sweep_now(&self, group: Option<u32>) {
        if let Some(group) = group {
            kill_group(group);
        }
        self.pass(group, &mut Vec::new());
    }

    /// Kills the marked processes re-parented to toolmux (adding them to `pending`), reaps
    /// those of `pending` that died and the zombies that escaped a group; returns how many it
    /// killed. `leader` is the child itself, which its owner reaps.
    #[cfg(target_os = "linux")]
    fn pass(&self, leader: Option<u32>, pending: &mut Vec<u32>) -> usize {
        use nix::sys::signal::{Signal, kill};
        use nix::unistd::Pid;
        pending.retain(|&pid| !reap(pid));
        let us = Ids::ours();
        let mut killed = 0;
        for pid in children_of_toolmux() {
            if Some(pid) == leader || pending.contains(&pid) {
                continue;
            }
            let Some(stat) = Stat::read(pid) else {
                continue;
            };
            if stat.zombie {
                // A dead orphan: toolmux's own children (group leaders in its session, or
                // members of its group) are reaped by whoever started them, never here.
                if stat.escaped(pid, &us) {
                    reap(pid);
                }
                continue;
            }
            if !has_mark(pid, &self.0) {
                continue;
            }
            if stat.pgid == pid && stat.pgid != us.pgid {
                // It leads a group of its own (it called setsid or setpgid): what it started
                // and kept there goes with it.
                kill_group(pid);
            }
            let Ok(raw) = i32::try_from(pid) else {
                continue;
            };
            if kill(Pid::from_raw(raw), Signal::SIGKILL).is_ok() {
                killed += 1;
                pending.push(pid);
            }
        }
        killed
    }

    #[cfg(not(target_os = "linux"))]
    fn pass(&self, _leader: Option<u32>, _pending: &mut Vec<u32>) -> usize {
        0
    }
}

impl Default for Mark {
    fn default() -> Self {
        Self::new()
    }
}

/// Kills, when toolmux is about to exit, every process re-parented to it that left its
/// process group and so cannot be attributed to a child (see the module's documentation):
/// nothing toolmux started may outlive it.
pub fn sweep_escaped() {
    #[cfg(target_os = "linux")]
    {
        use nix::sys::signal::{Signal, kill};
        use nix::unistd::Pid;
        let us = Ids::ours();
        for pid in children_of_toolmux() {
            let Some(stat) = Stat::read(pid) else {
                continue;
            };
            if !stat.escaped(pid, &us) {
                continue;
            }
            if stat.zombie {
                reap(pid);
                continue;
            }
            if stat.pgid == pid && stat.pgid != us.pgid {
                kill_group(pid);
            }
            if let Ok(raw) = i32::try_from(pid) {
                let _ = kill(Pid::from_raw(raw), Signal::SIGKILL);
            }
        }
    }
}

/// Sends SIGKILL to a process group; a group that is gone already (ESRCH) is the usual case.
pub fn kill_group(pgid: u32) {
    #[cfg(unix)]
    if let Ok(pgid) = i32::try_from(pgid)
        && pgid > 1
    {
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(pgid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
}

/// Whether any process (a zombie included) is still in the group.
fn group_exists(pgid: u32) -> bool {
    #[cfg(unix)]
    {
        let Ok(raw) = i32::try_from(pgid) else {
            return false;
        };
        nix::sys::signal::killpg(nix::unistd::Pid::from_raw(raw), None).is_ok()
    }
    #[cfg(not(unix))]
    {
        let _ = pgid;
        false
    }
}

/// toolmux's own session and process group.
#[cfg(target_os = "linux")]
struct Ids {
    sid: u32,
    pgid: u32,
}

#[cfg(target_os = "linux")]
impl Ids {
    fn ours() -> Self {
        let raw = |pid: nix::unistd::Pid| u32::try_from(pid.as_raw()).unwrap_or(0);
        Self {
            sid: nix::unistd::getsid(None).map(raw).unwrap_or(0),
            pgid: raw(nix::unistd::getpgrp()),
        }
    }
}

/// What `/proc/PID/stat` says about a process.
#[cfg(target_os = "linux")]
struct Stat {
    zombie: bool,
    pgid: u32,
    sid: u32,
}

#[cfg(target_os = "linux")]
impl Stat {
    fn read(pid: u32) -> Option<Self> {
        let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        // The fields after the command name (which may hold spaces and parentheses) start
        // after its last ')': state, ppid, pgrp, session, ...
        let (_, rest) = text.rsplit_once(')')?;
        let mut fields = rest.split_whitespace();
        let state = fields.next()?;
        let _ppid = fields.next()?;
        let pgid = fields.next()?.parse().ok()?;
        let sid = fields.next()?.parse().ok()?;
        Some(Self {
            zombie: state == "Z" || state == "X",
            pgid,
            sid,
        })
    }

    /// Whether a child of toolmux is one it did not start itself: everything toolmux starts
    /// stays in its session, either leading a group (a script call, a stdio server, which as
    /// leaders cannot call setsid) or in toolmux's own group.
    fn escaped(&self, pid: u32, us: &Ids) -> bool {
        self.sid != us.sid || (self.pgid != pid && self.pgid != us.pgid)
    }
}

/// The children of toolmux's threads: what it started, and orphans re-parented to it.
#[cfg(target_os = "linux")]
fn children_of_toolmux() -> Vec<u32> {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return Vec::new();
    };
    let mut children = Vec::new();
    for task in tasks.filter_map(Result::ok) {
        let Ok(list) = std::fs::read_to_string(task.path().join("children")) else {
            continue;
        };
        children.extend(
            list.split_whitespace()
                .filter_map(|p| p.parse::<u32>().ok()),
        );
    }
    children.sort_unstable();
    children.dedup();
    children
}

/// Whether process `pid` was started with `mark` in its environment.
#[cfg(target_os = "linux")]
fn has_mark(pid: u32, mark: &str) -> bool {
    let Ok(environ) = std::fs::read(format!("/proc/{pid}/environ")) else {
        return false;
    };
    let wanted = format!("{MARK_VAR}={mark}");
    environ
        .split(|b| *b == 0)
        .any(|entry| entry == wanted.as_bytes())
}

/// Reaps a dead child of toolmux without waiting; whether it is gone (reaped now, or not a
/// child any more).
#[cfg(target_os = "linux")]
fn reap(pid: u32) -> bool {
    use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
    let Ok(raw) = i32::try_from(pid) else {
        return true;
    };
    !matches!(
        waitpid(nix::unistd::Pid::from_raw(raw), Some(WaitPidFlag::WNOHANG)),
        Ok(WaitStatus::StillAlive)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_allowlist_passes_what_a_server_needs_and_no_secret() {
        for name in [
            "HOME", "PATH", "USER", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR",
        ] {
            assert!(is_inherited(name), "{name}");
        }
        for name in [
            "OPENAI_API_KEY",
            "TOOLMUX_KEY",
            "AWS_SECRET_ACCESS_KEY",
            "GITHUB_TOKEN",
            "SSH_AUTH_SOCK",
            "LD_PRELOAD",
        ] {
            assert!(!is_inherited(name), "{name}");
        }
    }

    #[test]
    fn marks_are_unique() {
        assert_ne!(Mark::new(), Mark::new());
    }
}
