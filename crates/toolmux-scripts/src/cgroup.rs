//! A cgroup for each child toolmux starts, so that everything the child starts ends with its
//! work: no `setsid`, `setpgid`, double fork or empty environment takes a process out of its
//! cgroup. A child can move itself out only by writing to a cgroup its user may write — toolmux's
//! own, in a tree delegated to that user — which a sandboxed command cannot (its writes are
//! confined to the project); an unsandboxed child has its user's powers anyway (it could
//! `kill` toolmux or leave through `systemd-run`), so containment stops leftovers, not intent.
//!
//! # Where
//! Below toolmux's own cgroup, which is writable when the user owns it (under systemd, a
//! process started inside `user@UID.service` — a terminal's scope, a user service, anything
//! `systemd-run --user --scope` starts — is in a subtree delegated to its user; root may write
//! anywhere): `<toolmux's cgroup>/toolmux-<pid>/c<n>`, one `c<n>` per child. The cgroup2
//! hierarchy is preferred (found from `/proc/self/mountinfo` and `/proc/self/cgroup`, wherever
//! it is mounted); where only cgroup v1 is mounted, the v1 freezer hierarchy. A [probe](probe)
//! at the first child makes sure a process can join: when it cannot (toolmux's cgroup belongs
//! to root, as a login session's scope does, or cgroups are read-only in a container),
//! children are contained by process group, marks and the subreaper instead
//! ([`crate::child`]), and [`crate::child::Containment`] says so.
//!
//! # How
//! The parent makes the child's cgroup and opens its `cgroup.procs` before starting it; the
//! child, between fork and exec, writes `0` (itself) to that descriptor — a plain `write`,
//! which is async-signal-safe — so it is inside before its program runs its first instruction.
//! Ending the work kills the whole cgroup: `cgroup.kill` (Linux 5.14), else freeze, kill each
//! member, thaw (cgroup2's `cgroup.freeze`, or the v1 freezer's `freezer.state`); then the
//! cgroup is removed and the dead members re-parented to toolmux are reaped.

#![allow(unsafe_code)] // The join runs in the child between fork and exec, and `pre_exec` is unsafe.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::fd::{AsRawFd, RawFd};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// How long ending a cgroup keeps killing and waiting for its members to exit: a process in
/// an uninterruptible sleep (a hung network file system) exits only when the sleep ends.
const END_LIMIT: Duration = Duration::from_secs(2);
/// How long a freeze may take before the members are killed anyway.
const FREEZE_LIMIT: Duration = Duration::from_millis(500);
/// The pause between two looks at a cgroup that is being emptied.
const PAUSE: Duration = Duration::from_millis(1);

/// How a cgroup's members are killed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// cgroup2 with `cgroup.kill`.
    V2Kill,
    /// cgroup2 before Linux 5.14: `cgroup.freeze`, kill each member, thaw.
    V2Freeze,
    /// The cgroup v1 freezer: `freezer.state`, kill each member, thaw.
    V1Freezer,
}

/// Where toolmux's children's cgroups are made.
#[derive(Debug)]
pub(crate) struct Tree {
    kind: Kind,
    /// `<toolmux's cgroup>/toolmux-<pid>` on disk.
    base: PathBuf,
    /// The same as `/proc/PID/cgroup` names it.
    base_name: String,
    /// The start of the hierarchy's line in `/proc/PID/cgroup` (`0::` for cgroup2).
    line_prefix: String,
}

static TREE: OnceLock<Option<Tree>> = OnceLock::new();

/// The tree, probed at the first call (see [`probe`]); `None` where children cannot have
/// cgroups of their own.
pub(crate) fn tree() -> Option<&'static Tree> {
    TREE.get_or_init(|| match probe() {
        Ok(tree) => {
            tracing::debug!(cgroup = %tree.base.display(), kind = ?tree.kind, "each child runs in a cgroup of its own");
            Some(tree)
        }
        Err(why) => {
            tracing::info!("children cannot have cgroups of their own here ({why}); each is contained by its process group and mark instead");
            None
        }
    })
    .as_ref()
}

/// The tree when it was made already: what toolmux's exit must clean up.
fn made_tree() -> Option<&'static Tree> {
    TREE.get().and_then(Option::as_ref)
}

/// Finds toolmux's cgroup, makes `toolmux-<pid>` below it and checks that a process can join
/// a cgroup there (a forked probe that joins one and exits without exec).
fn probe() -> Result<Tree, String> {
    #[cfg(target_os = "linux")]
    {
        let mounts = std::fs::read_to_string("/proc/self/mountinfo")
            .map_err(|e| format!("cannot read /proc/self/mountinfo: {e}"))?;
        let own = std::fs::read_to_string("/proc/self/cgroup")
            .map_err(|e| format!("cannot read /proc/self/cgroup: {e}"))?;
        let mut problems = Vec::new();
        for candidate in [v2_place(&mounts, &own), v1_freezer_place(&mounts, &own)]
            .into_iter()
            .flatten()
        {
            match candidate.make() {
                Ok(tree) => return Ok(tree),
                Err(e) => problems.push(e),
            }
        }
        if problems.is_empty() {
            problems.push("no cgroup2 or cgroup v1 freezer hierarchy is mounted".to_string());
        }
        Err(problems.join("; "))
    }
    #[cfg(not(target_os = "linux"))]
    Err("cgroups are Linux's".to_string())
}

/// A hierarchy and toolmux's cgroup in it, before anything was made.
#[derive(Debug)]
struct Place {
    kind: Kind,
    /// toolmux's cgroup on disk.
    dir: PathBuf,
    /// toolmux's cgroup as `/proc/PID/cgroup` names it.
    name: String,
    line_prefix: String,
}

impl Place {
    fn make(self) -> Result<Tree, String> {
        self.end_stale();
        let base = self.dir.join(format!("toolmux-{}", std::process::id()));
        match std::fs::create_dir(&base) {
            Ok(()) => {}
            // A toolmux with this pid that died without cleaning up: its cgroup is reused.
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(format!("cannot make {}: {e}", base.display())),
        }
        let kind = match self.kind {
            Kind::V2Kill | Kind::V2Freeze if base.join("cgroup.kill").exists() => Kind::V2Kill,
            Kind::V2Kill | Kind::V2Freeze if base.join("cgroup.freeze").exists() => Kind::V2Freeze,
            Kind::V2Kill | Kind::V2Freeze => {
                let _ = std::fs::remove_dir(&base);
                return Err(format!(
                    "{} has neither cgroup.kill nor cgroup.freeze (Linux before 5.2)",
                    base.display()
                ));
            }
            Kind::V1Freezer => Kind::V1Freezer,
        };
        let tree = Tree {
            kind,
            base_name: format!(
                "{}/toolmux-{}",
                self.name.trim_end_matches('/'),
                std::process::id()
            ),
            base,
            line_prefix: self.line_prefix,
        };
        match tree.check_join() {
            Ok(()) => Ok(tree),
            Err(e) => {
                let _ = std::fs::remove_dir(&tree.base);
                Err(format!(
                    "a process cannot join a cgroup below {}: {e}",
                    self.dir.display()
                ))
            }
        }
    }
}

impl Place {
    /// Ends the trees of toolmux processes that are gone (killed before their exit could
    /// end their children, or a test process, which never runs that exit): what is left in
    /// them dies, and they are removed. A tree whose process still runs is never touched.
    fn end_stale(&self) {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return;
        };
        for entry in entries.filter_map(Result::ok) {
            let name = entry.file_name();
            let Some(pid) = name
                .to_str()
                .and_then(|n| n.strip_prefix("toolmux-"))
                .and_then(|p| p.parse::<u32>().ok())
            else {
                continue;
            };
            if pid == std::process::id() || Path::new(&format!("/proc/{pid}")).exists() {
                continue;
            }
            let base = entry.path();
            let kind = match self.kind {
                Kind::V1Freezer => Kind::V1Freezer,
                _ if base.join("cgroup.kill").exists() => Kind::V2Kill,
                _ => Kind::V2Freeze,
            };
            let stale = Tree {
                kind,
                base_name: format!("{}/toolmux-{pid}", self.name.trim_end_matches('/')),
                base,
                line_prefix: self.line_prefix.clone(),
            };
            tracing::debug!(cgroup = %stale.base.display(), "ending what a toolmux process that is gone left");
            end_tree(&stale);
        }
    }
}

/// Undoes the octal escapes `/proc/self/mountinfo` writes for spaces, tabs, newlines and
/// backslashes in paths (`\040`).
fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\'
            && i + 3 < bytes.len()
            && bytes[i + 1..i + 4]
                .iter()
                .all(|b| (b'0'..=b'7').contains(b))
        {
            let value = bytes[i + 1..i + 4]
                .iter()
                .fold(0u32, |acc, b| acc * 8 + u32::from(b - b'0'));
            out.push(u8::try_from(value).unwrap_or(b'?'));
            i += 4;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// One line of `/proc/self/mountinfo`: the mount's root in its hierarchy, where it is
/// mounted, the file system type and its super options.
struct Mount {
    root: String,
    point: PathBuf,
    fstype: String,
    options: String,
}

fn mounts(text: &str) -> impl Iterator<Item = Mount> + '_ {
    text.lines().filter_map(|line| {
        let (before, after) = line.split_once(" - ")?;
        let mut fields = before.split(' ');
        let root = unescape(fields.nth(3)?);
        let point = PathBuf::from(unescape(fields.next()?));
        let mut after = after.split(' ');
        let fstype = after.next()?.to_string();
        let options = after.nth(1).unwrap_or_default().to_string();
        Some(Mount {
            root,
            point,
            fstype,
            options,
        })
    })
}

/// Where `cgroup` (a path as `/proc/self/cgroup` names it) is under `mount`, if the mount
/// shows it.
fn on_disk(mount: &Mount, cgroup: &str) -> Option<PathBuf> {
    let root = mount.root.trim_end_matches('/');
    let relative = cgroup.strip_prefix(root)?;
    if !relative.is_empty() && !relative.starts_with('/') {
        return None;
    }
    Some(mount.point.join(relative.trim_start_matches('/')))
}

/// toolmux's cgroup in the cgroup2 hierarchy.
fn v2_place(mounts_text: &str, own: &str) -> Option<Place> {
    let name = own.lines().find_map(|l| l.strip_prefix("0::"))?.to_string();
    let dir = mounts(mounts_text)
        .filter(|m| m.fstype == "cgroup2")
        .find_map(|m| on_disk(&m, &name))?;
    Some(Place {
        // Settled once `toolmux-<pid>` exists: the root cgroup, which toolmux may be in,
        // has neither `cgroup.kill` nor `cgroup.freeze`.
        kind: Kind::V2Kill,
        dir,
        name,
        line_prefix: "0::".to_string(),
    })
}

/// toolmux's cgroup in the cgroup v1 freezer hierarchy.
fn v1_freezer_place(mounts_text: &str, own: &str) -> Option<Place> {
    let (prefix, name) = own.lines().find_map(|line| {
        let mut parts = line.splitn(3, ':');
        let id = parts.next()?;
        let controllers = parts.next()?;
        let path = parts.next()?;
        controllers
            .split(',')
            .any(|c| c == "freezer")
            .then(|| (format!("{id}:{controllers}:"), path.to_string()))
    })?;
    let dir = mounts(mounts_text)
        .filter(|m| m.fstype == "cgroup" && m.options.split(',').any(|o| o == "freezer"))
        .find_map(|m| on_disk(&m, &name))?;
    Some(Place {
        kind: Kind::V1Freezer,
        dir,
        name,
        line_prefix: prefix,
    })
}

impl Tree {
    /// Forks a process that joins a fresh cgroup and exits at once, without exec: whether
    /// joining works here (permissions, delegation, a read-only cgroup file system).
    fn check_join(&self) -> io::Result<()> {
        let cgroup = self.make_child()?;
        let result = (|| {
            let fd = cgroup.procs_fd()?;
            let mut probe = std::process::Command::new("/");
            probe
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null());
            // SAFETY: the hook makes only async-signal-safe calls (write, _exit).
            unsafe {
                use std::os::unix::process::CommandExt;
                probe.pre_exec(move || {
                    join(fd)?;
                    nix::libc::_exit(0)
                });
            }
            let status = probe.spawn()?.wait()?;
            if status.success() {
                Ok(())
            } else {
                Err(io::Error::other(format!("the probe ended with {status}")))
            }
        })();
        let ended = cgroup.end(None);
        result.and(ended)
    }

    /// A new, empty cgroup for one child.
    pub(crate) fn make_child(&self) -> io::Result<Cgroup> {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = self.base.join(format!("c{n}"));
        std::fs::create_dir(&dir)?;
        let procs = OpenOptions::new()
            .write(true)
            .open(dir.join("cgroup.procs"));
        match procs {
            Ok(procs) => Ok(Cgroup {
                dir,
                name: format!("{}/c{n}", self.base_name),
                kind: self.kind,
                line_prefix: self.line_prefix.clone(),
                procs: Some(procs),
            }),
            Err(e) => {
                let _ = std::fs::remove_dir(&dir);
                Err(e)
            }
        }
    }
}

/// Joins the cgroup whose `cgroup.procs` is open as `fd`: in the child, between fork and exec,
/// so only an async-signal-safe `write`.
pub(crate) fn join(fd: RawFd) -> io::Result<()> {
    // SAFETY: writes one byte from a static buffer to a descriptor the parent opened.
    let written = unsafe { nix::libc::write(fd, b"0".as_ptr().cast(), 1) };
    if written == 1 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// One child's cgroup.
#[derive(Debug)]
pub(crate) struct Cgroup {
    dir: PathBuf,
    /// As `/proc/PID/cgroup` names it.
    name: String,
    kind: Kind,
    /// The start of its hierarchy's line in `/proc/PID/cgroup`.
    line_prefix: String,
    /// Its `cgroup.procs`, open until the child joined.
    procs: Option<File>,
}

impl Cgroup {
    /// The descriptor the child writes itself into; open until [`Cgroup::joined`].
    pub(crate) fn procs_fd(&self) -> io::Result<RawFd> {
        self.procs
            .as_ref()
            .map(AsRawFd::as_raw_fd)
            .ok_or_else(|| io::Error::other("the cgroup was joined already"))
    }

    /// Makes `command`'s child join this cgroup between fork and exec, before any other
    /// `pre_exec` step (a sandbox that enters a user namespace would lose the right to).
    pub(crate) fn join_before_exec(&self, command: &mut tokio::process::Command) -> io::Result<()> {
        let fd = self.procs_fd()?;
        // SAFETY: the hook makes one async-signal-safe call (write) on a descriptor that stays
        // open until the child started (`joined` closes it after the spawn).
        unsafe {
            command.pre_exec(move || join(fd));
        }
        Ok(())
    }

    /// Closes the descriptor once the child started (it was inherited across fork, and
    /// closed on exec, `O_CLOEXEC`).
    pub(crate) fn joined(&mut self) {
        self.procs = None;
    }

    /// Kills every member, without waiting for them to exit.
    pub(crate) fn kill(&self) -> io::Result<()> {
        match self.kind {
            Kind::V2Kill => write_file(&self.dir.join("cgroup.kill"), "1"),
            Kind::V2Freeze => freeze_and_kill(&self.dir, "cgroup.freeze", "1", "0", |dir| {
                std::fs::read_to_string(dir.join("cgroup.events"))
                    .is_ok_and(|e| e.lines().any(|l| l == "frozen 1"))
            }),
            Kind::V1Freezer => {
                freeze_and_kill(&self.dir, "freezer.state", "FROZEN", "THAWED", |dir| {
                    std::fs::read_to_string(dir.join("freezer.state"))
                        .is_ok_and(|s| s.trim() == "FROZEN")
                })
            }
        }
    }

    /// Kills what is left in the cgroup until it is empty (for at most [`END_LIMIT`]), reaps
    /// its dead members re-parented to toolmux (never `leader`, which its owner reaps) and
    /// removes it. Blocks; an empty cgroup costs one `rmdir`.
    pub(crate) fn end(&self, leader: Option<u32>) -> io::Result<()> {
        let deadline = Instant::now() + END_LIMIT;
        let result = loop {
            match std::fs::remove_dir(&self.dir) {
                Ok(()) => break Ok(()),
                Err(e) if e.kind() == io::ErrorKind::NotFound => break Ok(()),
                Err(e) if e.raw_os_error() == Some(nix::libc::EBUSY) => {
                    if Instant::now() >= deadline {
                        break Err(io::Error::other(format!(
                            "processes of {} are still exiting after {END_LIMIT:?}",
                            self.dir.display()
                        )));
                    }
                    if let Err(e) = self.kill() {
                        tracing::debug!(cgroup = %self.dir.display(), error = %e, "cannot kill a cgroup's members");
                    }
                    std::thread::sleep(PAUSE);
                }
                Err(e) => break Err(e),
            }
        };
        reap_members(&self.line_prefix, &self.name, leader);
        result
    }
}

/// Freezes the cgroup (writing `frozen` to `file`), kills each member, thaws it: a frozen
/// cgroup cannot fork a new member between the reading of the list and the kills.
fn freeze_and_kill(
    dir: &Path,
    file: &str,
    frozen: &str,
    thawed: &str,
    is_frozen: impl Fn(&Path) -> bool,
) -> io::Result<()> {
    let control = dir.join(file);
    write_file(&control, frozen)?;
    let deadline = Instant::now() + FREEZE_LIMIT;
    while !is_frozen(dir) && Instant::now() < deadline {
        std::thread::sleep(PAUSE);
    }
    let members = std::fs::read_to_string(dir.join("cgroup.procs")).unwrap_or_default();
    for pid in members
        .split_whitespace()
        .filter_map(|p| p.parse::<i32>().ok())
    {
        if pid > 1 {
            // A member that is gone already (ESRCH) is what is wanted.
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    }
    // The kills are delivered as the members thaw.
    write_file(&control, thawed)
}

fn write_file(path: &Path, value: &str) -> io::Result<()> {
    OpenOptions::new()
        .write(true)
        .open(path)?
        .write_all(value.as_bytes())
}

/// Reaps the dead processes re-parented to toolmux that were in the cgroup `name` (of the
/// hierarchy whose `/proc/PID/cgroup` line starts with `line_prefix`): a process that left its
/// group for toolmux's own one is not recognisable otherwise. Never `leader`, nor another
/// child's leader, whose owners reap them.
fn reap_members(line_prefix: &str, name: &str, leader: Option<u32>) {
    #[cfg(target_os = "linux")]
    {
        let leaders = crate::child::leader_ids();
        for pid in crate::child::children_of_toolmux() {
            if Some(pid) == leader || leaders.contains(&pid) || !crate::child::is_zombie(pid) {
                continue;
            }
            let Ok(cgroups) = std::fs::read_to_string(format!("/proc/{pid}/cgroup")) else {
                continue;
            };
            let was_member = cgroups.lines().any(|line| {
                line.strip_prefix(line_prefix).is_some_and(|path| {
                    let path = path.strip_suffix(" (deleted)").unwrap_or(path);
                    path == name || path.starts_with(&format!("{name}/"))
                })
            });
            if was_member {
                crate::child::reap(pid);
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (line_prefix, name, leader);
}

/// Kills everything in every child's cgroup, then removes them and toolmux's own
/// `toolmux-<pid>`: what toolmux does when it exits, so that nothing it started outlives it
/// even where a child's own end was never reached.
pub(crate) fn end_all() {
    if let Some(tree) = made_tree() {
        end_tree(tree);
    }
}

/// Kills everything below `tree`'s base, removes each child's cgroup, then the base.
fn end_tree(tree: &Tree) {
    if tree.kind == Kind::V2Kill {
        // One write kills the whole subtree.
        let _ = write_file(&tree.base.join("cgroup.kill"), "1");
    }
    let Ok(entries) = std::fs::read_dir(&tree.base) else {
        return;
    };
    for entry in entries.filter_map(Result::ok) {
        let Some(name) = entry.file_name().to_str().map(str::to_string) else {
            continue;
        };
        if !entry.path().is_dir() {
            continue;
        }
        let cgroup = Cgroup {
            dir: entry.path(),
            name: format!("{}/{name}", tree.base_name),
            kind: tree.kind,
            line_prefix: tree.line_prefix.clone(),
            procs: None,
        };
        if let Err(e) = cgroup.end(None) {
            tracing::warn!(error = %e, "what a child left running could not all be stopped");
        }
    }
    if let Err(e) = std::fs::remove_dir(&tree.base)
        && e.kind() != io::ErrorKind::NotFound
    {
        tracing::debug!(cgroup = %tree.base.display(), error = %e, "cannot remove toolmux's cgroup");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTINFO: &str = "\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
37 31 0:34 / /sys/fs/cgroup/freezer rw,relatime - cgroup cgroup rw,freezer
39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
50 41 0:38 /user.slice /mnt/my\\040cgroups rw,relatime - cgroup2 cgroup2 rw
";

    #[test]
    fn the_cgroup2_mount_and_own_cgroup_are_found_wherever_mounted() {
        let own =
            "6:freezer:/a\n0::/user.slice/user-1000.slice/user@1000.service/app.slice/x.scope\n";
        let place = v2_place(MOUNTINFO, own).expect("found");
        assert_eq!(
            place.dir,
            Path::new(
                "/sys/fs/cgroup/unified/user.slice/user-1000.slice/user@1000.service/app.slice/x.scope"
            )
        );
        assert_eq!(place.line_prefix, "0::");
        let only_nested = MOUNTINFO.replace(
            "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n",
            "",
        );
        let place = v2_place(&only_nested, own).expect("found");
        assert_eq!(
            place.dir,
            Path::new("/mnt/my cgroups/user-1000.slice/user@1000.service/app.slice/x.scope")
        );
        let root = v2_place(MOUNTINFO, "0::/\n").expect("found");
        assert_eq!(root.dir, Path::new("/sys/fs/cgroup/unified"));
        assert!(v2_place("", own).is_none());
        assert!(v2_place(MOUNTINFO, "6:freezer:/a\n").is_none());
    }

    #[test]
    fn the_v1_freezer_is_found_when_listed_with_other_controllers() {
        let own = "6:cpu,freezer:/docker/abc\n0::/\n";
        let mounts = MOUNTINFO.replace("rw,freezer", "rw,cpu,freezer");
        let place = v1_freezer_place(&mounts, own).expect("found");
        assert_eq!(place.dir, Path::new("/sys/fs/cgroup/freezer/docker/abc"));
        assert_eq!(place.line_prefix, "6:cpu,freezer:");
        assert!(v1_freezer_place(MOUNTINFO, "0::/\n").is_none());
    }

    #[test]
    fn a_cgroup_outside_the_mount_is_not_guessed() {
        let own = "0::/system.slice/other.service\n";
        let mounts = "50 41 0:38 /user.slice /mnt/c rw - cgroup2 cgroup2 rw\n";
        assert!(v2_place(mounts, own).is_none());
        let mounts = "50 41 0:38 /sys /mnt/c rw - cgroup2 cgroup2 rw\n";
        assert!(v2_place(mounts, "0::/system.slice\n").is_none());
    }

    #[test]
    fn mountinfo_escapes_are_undone_and_odd_lines_never_panic() {
        assert_eq!(unescape("a\\040b\\134c"), "a b\\c");
        assert_eq!(unescape("trailing\\04"), "trailing\\04");
        assert_eq!(unescape("\\999"), "\\999");
        for line in [
            "",
            " - ",
            "1 2 3",
            "1 2 3 4 5 - ",
            "\\\\\\",
            "1 2 3 / / - cgroup2",
        ] {
            let _ = mounts(line).count();
            let _ = v2_place(line, "0::/");
            let _ = v1_freezer_place(line, "1:freezer:/");
        }
    }

    /// Runs a shell in the cgroup whose `cgroup.procs` is open as `fd` that leaves a daemon
    /// behind (`sleep MARKER`, in a session of its own, with an empty environment) and exits;
    /// returns the marker.
    #[cfg(target_os = "linux")]
    fn leave_a_daemon_in(fd: RawFd) -> String {
        use std::os::unix::process::CommandExt;

        let marker = toolmux_testkit::processes::unique_sleep();
        let mut command = std::process::Command::new("sh");
        command.args([
            "-c",
            &format!("setsid env -i sleep {marker} & sleep 0.2; exit 0"),
        ]);
        // SAFETY: one async-signal-safe write.
        unsafe {
            command.pre_exec(move || join(fd));
        }
        assert!(command.status().expect("run sh").success());
        marker
    }

    /// Where only cgroup v1 is mounted, the freezer ends a cgroup: freeze, kill each member,
    /// thaw. This machine has the v1 freezer beside cgroup2, so the v1 way is checked here.
    #[cfg(target_os = "linux")]
    #[test]
    fn the_v1_freezer_ends_what_left_its_group_with_an_empty_environment() {
        use toolmux_testkit::processes::processes_with;

        let mounts = std::fs::read_to_string("/proc/self/mountinfo").expect("mountinfo");
        let own = std::fs::read_to_string("/proc/self/cgroup").expect("cgroup");
        let Some(place) = v1_freezer_place(&mounts, &own) else {
            eprintln!("no cgroup v1 freezer is mounted here: the v1 way cannot be checked");
            return;
        };
        let tree = place.make().expect("a cgroup in the v1 freezer");
        assert_eq!(tree.kind, Kind::V1Freezer);
        let group = tree.make_child().expect("a child's cgroup");
        let fd = group.procs_fd().expect("open");
        let marker = leave_a_daemon_in(fd);
        let sleeping = || processes_with(&format!("sleep\0{marker}"));
        assert_eq!(sleeping().len(), 1, "the daemon runs");
        group.end(None).expect("the cgroup ends");
        assert!(sleeping().is_empty(), "the daemon outlived its v1 cgroup");
        assert!(!group.dir.exists());
        std::fs::remove_dir(&tree.base).expect("remove the tree");
    }

    /// A toolmux killed before its exit leaves its children's cgroups behind, with whatever
    /// runs in them; the next toolmux to start a child in the same place ends them.
    #[cfg(target_os = "linux")]
    #[test]
    fn what_a_toolmux_that_is_gone_left_is_ended_by_the_next_one() {
        use toolmux_testkit::processes::processes_with;

        let mounts = std::fs::read_to_string("/proc/self/mountinfo").expect("mountinfo");
        let own = std::fs::read_to_string("/proc/self/cgroup").expect("cgroup");
        let place = v2_place(&mounts, &own).expect("a cgroup2 hierarchy");
        // A pid that no process has now: one that just exited.
        let gone = std::process::Command::new("true")
            .spawn()
            .and_then(|mut c| c.wait().map(|_| c.id()))
            .expect("run true");
        let stale = place.dir.join(format!("toolmux-{gone}"));
        let left = stale.join("c1");
        std::fs::create_dir_all(&left).expect("a stale cgroup");
        let procs = OpenOptions::new()
            .write(true)
            .open(left.join("cgroup.procs"))
            .expect("open");
        let fd = procs.as_raw_fd();
        let marker = leave_a_daemon_in(fd);
        drop(procs);
        let sleeping = || processes_with(&format!("sleep\0{marker}"));
        assert_eq!(sleeping().len(), 1, "the leftover runs");

        let tree = place.make().expect("a tree");
        assert!(sleeping().is_empty(), "the leftover survived");
        assert!(!stale.exists(), "the stale tree is still there");
        assert!(tree.base.exists());
    }
}
