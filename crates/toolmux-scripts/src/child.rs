//! What every child process toolmux starts has in common — script tools, stdio MCP servers,
//! the exec pack's commands and coding sessions alike: the environment it is given, and how
//! everything it started is found and stopped when its work ends.
//!
//! # Environment
//! A child gets an allowlist of toolmux's environment ([`INHERITED_VARS`] and `LC_*`, the
//! variables the MCP SDKs' stdio clients pass, plus locale, time zone and temporary
//! directory), then its configured `env`. API keys and tokens in toolmux's environment are not
//! on the list, so they never reach a child unless its configuration names them. A child
//! configured to inherit the whole environment gets all of it but the secrets
//! ([`toolmux_core::is_secret`]): those reach a child only by name, through its `env`
//! (`"GITHUB_TOKEN": "${GITHUB_TOKEN}"`), so that each goes only where it was given. (The
//! binary also takes them out of its own environment at start, [`crate::environ`].)
//!
//! # Containment
//! Each child runs in a cgroup of its own where the system allows it ([`crate::cgroup`]): it
//! joins the cgroup before its program starts, nothing it starts can leave it (`setsid`,
//! `setpgid` into toolmux's own group and an empty environment included), and when its work
//! ends the [`Guard`] kills the whole cgroup and removes it. [`Containment`] says which way a
//! child is contained, for callers to report.
//!
//! Where no cgroup can be made, the fallback is the process group and a mark. Each child
//! ([`spawn`]) leads a process group of its own, killed with one `killpg`. A descendant that
//! called `setsid` (or `setpgid`) is no longer in that group, and once its parent exits it
//! would be re-parented to init and survive. So toolmux makes itself a *child subreaper*
//! ([`become_subreaper`], before its first child starts): orphans below it are re-parented to
//! toolmux instead. Every child is started with a mark in its environment ([`MARK_VAR`]),
//! which its descendants inherit; when its work ends, its [`Guard`] kills the processes
//! re-parented to toolmux that carry the mark (with the process group each one leads) and
//! reaps them. A descendant that both leaves the group and clears its environment cannot be
//! told apart; [`sweep_escaped`] stops those that left toolmux's session or group when toolmux
//! exits — but one that joins toolmux's own process group is missed: only a cgroup holds it.

use std::collections::BTreeSet;
use std::ffi::OsStr;
use std::io;
use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use crate::cgroup::{self, Cgroup};

/// toolmux's environment variables a child gets unless it inherits everything: those the MCP
/// SDKs' stdio clients pass (`HOME`, `LOGNAME`, `PATH`, `SHELL`, `TERM`, `USER`), plus the
/// locale, the time zone and the temporary directory. `LC_*` variables are passed too.
pub const INHERITED_VARS: &[&str] = &[
    "HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "LANGUAGE", "TMPDIR", "TZ",
];

/// The environment variable that carries a child's mark.
pub const MARK_VAR: &str = "TOOLMUX_CHILD_MARK";

/// How long a sweep keeps looking for what a child left behind: killed processes re-parent
/// their own children to toolmux a moment later, and those are swept too.
const SWEEP_LIMIT: Duration = Duration::from_millis(500);
/// The pause between two passes of a sweep.
const SWEEP_PAUSE: Duration = Duration::from_millis(10);

/// Whether toolmux passes `name` to a child that does not inherit the whole environment.
pub fn is_inherited(name: &str) -> bool {
    INHERITED_VARS.contains(&name) || name.starts_with("LC_")
}

/// Whether toolmux passes a variable's value: like the MCP SDKs, not a value that starts
/// with `()`, an exported shell function, which a shell in the child would run.
fn is_passed(name: &str, value: &OsStr) -> bool {
    is_inherited(name) && !value.as_encoded_bytes().starts_with(b"()")
}

/// Whether toolmux passes a variable to a child: on the allowlist ([`is_passed`]), or, for a
/// child that inherits the whole environment, anything but a secret.
fn passes(name: &OsStr, value: &OsStr, inherit_all: bool) -> bool {
    if inherit_all {
        !toolmux_core::is_secret(&name.to_string_lossy(), value)
    } else {
        name.to_str().is_some_and(|name| is_passed(name, value))
    }
}

/// How a child, and everything it starts, is held together so that it all ends with its work.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Containment {
    /// A cgroup of its own, which nothing it starts can leave.
    Cgroup,
    /// Its process group, the subreaper and its mark: a descendant that joins toolmux's own
    /// process group with an empty environment is stopped only when toolmux exits.
    ProcessGroup,
}

impl Containment {
    /// The word callers report: `cgroup` or `process-group`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Cgroup => "cgroup",
            Self::ProcessGroup => "process-group",
        }
    }
}

impl std::fmt::Display for Containment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How the children toolmux starts now are contained (the system is asked once).
pub fn containment() -> Containment {
    if cgroup::tree().is_some() {
        Containment::Cgroup
    } else {
        Containment::ProcessGroup
    }
}

/// Set once the first child is about to start (see [`become_subreaper`]).
static SUBREAPER: std::sync::Once = std::sync::Once::new();

/// Makes toolmux the child subreaper of everything it starts, so that a descendant whose
/// parent exits is re-parented to toolmux, where the sweeps find it, instead of to init.
/// A process-wide setting, made before the first child starts ([`spawn`] calls it); later
/// calls do nothing.
fn become_subreaper() {
    SUBREAPER.call_once(|| {
        #[cfg(target_os = "linux")]
        if let Err(e) = nix::sys::prctl::set_child_subreaper(true) {
            tracing::warn!(error = %e, "cannot become a child subreaper; a process that leaves its group with setsid may outlive its call");
        }
    });
}

/// Starts `program` as toolmux starts every child: in `cwd`, with stdin, stdout and stderr
/// piped, in a cgroup of its own where the system allows it, leading a process group of its
/// own, killed when dropped, with the allowlisted environment (all of toolmux's but its
/// secrets with `inherit_all`), then its `configured` variables and a fresh mark. The
/// [`Guard`] stops everything the child started when its work ends.
pub fn spawn<K, V>(
    program: &OsStr,
    args: &[String],
    cwd: &Path,
    configured: impl IntoIterator<Item = (K, V)>,
    inherit_all: bool,
) -> io::Result<(tokio::process::Child, Guard)>
where
    K: AsRef<OsStr>,
    V: AsRef<OsStr>,
{
    spawn_prepared(program, args, cwd, configured, inherit_all, |_| {})
}

/// [`spawn`], with `prepare` given the command last, just before it starts: the exec pack's
/// shell adds its sandbox there (a `pre_exec` hook), so that a sandboxed child is still
/// started, grouped, marked and swept the one way.
pub fn spawn_prepared<K, V>(
    program: &OsStr,
    args: &[String],
    cwd: &Path,
    configured: impl IntoIterator<Item = (K, V)>,
    inherit_all: bool,
    prepare: impl FnOnce(&mut tokio::process::Command),
) -> io::Result<(tokio::process::Child, Guard)>
where
    K: AsRef<OsStr>,
    V: AsRef<OsStr>,
{
    become_subreaper();
    let mark = Mark::new();
    let mut command = tokio::process::Command::new(program);
    command
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let configured: Vec<(K, V)> = configured.into_iter().collect();
    command.env_clear();
    for (name, value) in std::env::vars_os() {
        if passes(&name, &value, inherit_all) {
            command.env(name, value);
        }
    }
    if tracing::enabled!(tracing::Level::DEBUG) {
        log_dropped(program, &configured, inherit_all);
    }
    command.envs(configured);
    command.env(MARK_VAR, &*mark.0);
    #[cfg(unix)]
    command.process_group(0);
    let mut cgroup = own_cgroup();
    // Joined first, before `prepare`'s steps: a sandbox that enters a user namespace could
    // no longer move the child.
    if let Some(group) = &cgroup
        && let Err(e) = group.join_before_exec(&mut command)
    {
        tracing::warn!(error = %e, "cannot put a child in its cgroup; it is contained by its process group");
        end_unused(cgroup.take());
    }
    prepare(&mut command);
    let child = match command.spawn() {
        Ok(child) => child,
        Err(e) => {
            end_unused(cgroup);
            return Err(e);
        }
    };
    if let Some(group) = &mut cgroup {
        group.joined();
    }
    let pgid = child.id();
    if let Some(pgid) = pgid {
        leaders().insert(pgid);
    }
    let containment = if cgroup.is_some() {
        Containment::Cgroup
    } else {
        Containment::ProcessGroup
    };
    Ok((
        child,
        Guard {
            pgid,
            mark,
            cgroup,
            containment,
        },
    ))
}

/// A new cgroup for a child, when children have cgroups here.
fn own_cgroup() -> Option<Cgroup> {
    match cgroup::tree()?.make_child() {
        Ok(group) => Some(group),
        Err(e) => {
            tracing::warn!(error = %e, "cannot make a cgroup for a child; it is contained by its process group");
            None
        }
    }
}

/// Removes a cgroup no child started in.
fn end_unused(cgroup: Option<Cgroup>) {
    if let Some(group) = cgroup
        && let Err(e) = group.end(None)
    {
        tracing::debug!(error = %e, "cannot remove an unused cgroup");
    }
}

/// Logs (at debug) the names of toolmux's variables a child does not get — a server that
/// needs `PYTHONPATH` or `NODE_OPTIONS` must have it configured — never their values.
fn log_dropped<K: AsRef<OsStr>, V>(program: &OsStr, configured: &[(K, V)], inherit_all: bool) {
    let dropped: Vec<String> = std::env::vars_os()
        .filter(|(name, value)| {
            !passes(name, value, inherit_all) && !configured.iter().any(|(k, _)| k.as_ref() == name)
        })
        .map(|(name, _)| name.to_string_lossy().into_owned())
        .collect();
    if !dropped.is_empty() {
        tracing::debug!(
            program = %Path::new(program).display(),
            dropped = %dropped.join(" "),
            "variables of toolmux's environment not passed to a child (configure `env` or `inheritEnv` to pass them)"
        );
    }
}

/// A signal for a process group.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Signal {
    /// SIGTERM: asks it to stop.
    Term,
    /// SIGKILL.
    Kill,
}

/// Sends `signal` to the process group `pgid` — the one way toolmux signals a group. A group
/// that is gone already (ESRCH) is the usual case; `pgid` 0 and 1 are never signalled.
pub fn signal_group(pgid: u32, signal: Signal) {
    #[cfg(unix)]
    if let Ok(pgid) = i32::try_from(pgid)
        && pgid > 1
    {
        use nix::sys::signal::Signal as Unix;
        let signal = match signal {
            Signal::Term => Unix::SIGTERM,
            Signal::Kill => Unix::SIGKILL,
        };
        let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pgid), signal);
    }
    #[cfg(not(unix))]
    let _ = (pgid, signal);
}

/// The process ids of the group leaders [`spawn`] started whose [`Guard`] still lives: a
/// sweep knows they are not orphans and skips them without reading their `/proc` entries.
fn leaders() -> std::sync::MutexGuard<'static, BTreeSet<u32>> {
    static LEADERS: Mutex<BTreeSet<u32>> = Mutex::new(BTreeSet::new());
    LEADERS.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A copy of [`leaders`], for a pass that must not hold the lock.
pub(crate) fn leader_ids() -> BTreeSet<u32> {
    leaders().clone()
}

/// What stops a started child's process group, and everything that left it carrying the
/// child's mark: [`Guard::sweep`] once the child was waited for, or dropping the guard (a
/// call timed out or cancelled, a server dropped without a clean shutdown).
#[derive(Debug)]
pub struct Guard {
    /// The group (the child's process id), until it was stopped.
    pgid: Option<u32>,
    mark: Mark,
    /// The child's cgroup, until it was ended.
    cgroup: Option<Cgroup>,
    containment: Containment,
}

impl Guard {
    /// The child's process group (its process id), until it was stopped.
    pub fn pgid(&self) -> Option<u32> {
        self.pgid
    }

    /// How the child and everything it starts are contained.
    pub fn containment(&self) -> Containment {
        self.containment
    }

    /// Kills what is left of the child (the child itself is never reaped here: its owner
    /// waits for it). In a cgroup: everything in it, then the cgroup is removed and its dead
    /// members re-parented to toolmux are reaped. Otherwise: its process group, and every
    /// process re-parented to toolmux that carries its mark, with the group it leads, in
    /// passes that repeat while killing re-parents more, for at most half a second. Either
    /// way the work runs on the blocking pool. Later calls, and dropping the guard, do
    /// nothing.
    pub async fn sweep(&mut self) {
        let Some(pgid) = self.pgid.take() else { return };
        match self.cgroup.take() {
            Some(group) => {
                // The cgroup is exact; the process group adds nothing (and its id may have
                // been reused once the child was reaped).
                match tokio::task::spawn_blocking(move || group.end(Some(pgid))).await {
                    Ok(Ok(())) => {}
                    Ok(Err(e)) => {
                        tracing::warn!(error = %e, "what a child left running could not all be stopped");
                    }
                    Err(e) => tracing::warn!(error = %e, "the end of a child's cgroup failed"),
                }
            }
            None => self.mark.sweep(pgid).await,
        }
        leaders().remove(&pgid);
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        let Some(pgid) = self.pgid.take() else { return };
        leaders().remove(&pgid);
        if let Some(group) = self.cgroup.take() {
            // Killed now; emptied and removed on the blocking pool, since a drop cannot wait.
            if let Err(e) = group.kill() {
                tracing::debug!(error = %e, "cannot kill a child's cgroup");
            }
            let end = move || {
                if let Err(e) = group.end(Some(pgid)) {
                    tracing::warn!(error = %e, "what a child left running could not all be stopped");
                }
            };
            match tokio::runtime::Handle::try_current() {
                Ok(runtime) => drop(runtime.spawn_blocking(end)),
                Err(_) => end(),
            }
            return;
        }
        signal_group(pgid, Signal::Kill);
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                // What the kill re-parents to toolmux arrives a moment later.
                let mark = self.mark.clone();
                runtime.spawn(async move { mark.sweep(pgid).await });
            }
            Err(_) => {
                pass(&self.mark.0, Some(pgid), &mut Vec::new());
            }
        }
    }
}

/// The identity of one started child, inherited by everything it starts through the
/// environment ([`MARK_VAR`]).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Mark(Arc<str>);

impl Mark {
    /// A mark no other child of this toolmux process has.
    fn new() -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        Self(
            format!(
                "{}-{}",
                std::process::id(),
                NEXT.fetch_add(1, Ordering::Relaxed)
            )
            .into(),
        )
    }

    /// See [`Guard::sweep`].
    async fn sweep(&self, group: u32) {
        let deadline = tokio::time::Instant::now() + SWEEP_LIMIT;
        let mut pending = Vec::new();
        loop {
            signal_group(group, Signal::Kill);
            let mark = Arc::clone(&self.0);
            let Ok((killed, still)) = tokio::task::spawn_blocking(move || {
                let killed = pass(&mark, Some(group), &mut pending);
                (killed, pending)
            })
            .await
            else {
                return;
            };
            pending = still;
            let group_left = group_exists(group);
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
}

/// One pass of a sweep, which blocks on `/proc`: kills the processes re-parented to toolmux
/// that carry `mark` (adding them to `pending`), reaps those of `pending` that died and the
/// zombies that escaped a group; returns how many it killed. `leader` is the child itself,
/// which its owner reaps; the other leaders toolmux started are skipped unread.
#[cfg(target_os = "linux")]
fn pass(mark: &str, leader: Option<u32>, pending: &mut Vec<u32>) -> usize {
    use nix::sys::signal::{Signal, kill};
    use nix::unistd::Pid;
    pending.retain(|&pid| !reap(pid));
    let us = Ids::ours();
    let leaders = leaders().clone();
    let mut killed = 0;
    for pid in children_of_toolmux() {
        if Some(pid) == leader || pending.contains(&pid) || leaders.contains(&pid) {
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
        if !has_mark(pid, mark) {
            continue;
        }
        if stat.pgid == pid && stat.pgid != us.pgid {
            // It leads a group of its own (it called setsid or setpgid): what it started
            // and kept there goes with it.
            signal_group(pid, self::Signal::Kill);
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
fn pass(_mark: &str, _leader: Option<u32>, _pending: &mut Vec<u32>) -> usize {
    0
}

/// Kills, when toolmux is about to exit, everything in its children's cgroups, then every
/// process re-parented to it that left its process group and so cannot be attributed to a
/// child (see the module's documentation): nothing toolmux started may outlive it. Passes repeat, for at most half a second, while
/// killing re-parents more. The `toolmux` binary calls it once its command has ended.
pub fn sweep_escaped() {
    // Nothing can have been re-parented to a process that never became a subreaper (no child
    // started): most commands (`config`, `logs`, `tools list`) need not read `/proc`.
    if !SUBREAPER.is_completed() {
        return;
    }
    // Every child's cgroup, whatever its guard did: a server whose guard is dropped only with
    // the runtime, after this, or a guard that could not empty its cgroup.
    cgroup::end_all();
    let deadline = std::time::Instant::now() + SWEEP_LIMIT;
    while escaped_pass() > 0 && std::time::Instant::now() < deadline {
        std::thread::sleep(SWEEP_PAUSE);
    }
}

/// One pass of [`sweep_escaped`]: how many processes it killed or reaped.
#[cfg(target_os = "linux")]
fn escaped_pass() -> usize {
    use nix::sys::signal::{Signal, kill};
    use nix::unistd::Pid;
    let us = Ids::ours();
    let leaders = leaders().clone();
    let mut acted = 0;
    for pid in children_of_toolmux() {
        if leaders.contains(&pid) {
            continue;
        }
        let Some(stat) = Stat::read(pid) else {
            continue;
        };
        if !stat.escaped(pid, &us) {
            continue;
        }
        acted += 1;
        if stat.zombie {
            reap(pid);
            continue;
        }
        if stat.pgid == pid && stat.pgid != us.pgid {
            signal_group(pid, self::Signal::Kill);
        }
        if let Ok(raw) = i32::try_from(pid) {
            let _ = kill(Pid::from_raw(raw), Signal::SIGKILL);
        }
    }
    acted
}

#[cfg(not(target_os = "linux"))]
fn escaped_pass() -> usize {
    0
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
        let stat = toolmux_files::ProcStat::of(pid)?;
        Some(Self {
            zombie: stat.is_zombie(),
            pgid: stat.number(5)?,
            sid: stat.number(6)?,
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
pub(crate) fn children_of_toolmux() -> Vec<u32> {
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

/// Whether process `pid` is dead but not reaped yet.
#[cfg(target_os = "linux")]
pub(crate) fn is_zombie(pid: u32) -> bool {
    Stat::read(pid).is_some_and(|stat| stat.zombie)
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
pub(crate) fn reap(pid: u32) -> bool {
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
