//! The sandbox a command runs in, applied in the child between `fork` and `exec` (a
//! `pre_exec` hook), so that toolmux itself is never restricted.
//!
//! - **Namespaces of its own, without capabilities.** The child enters a user namespace that
//!   maps only toolmux's own user and group (root stays root by id, but every capability it
//!   holds there counts for nothing outside: no device nodes, no module loading, no other
//!   user's files, no `/proc` of toolmux where toolmux is not dumpable), a mount namespace and
//!   an IPC namespace (SysV queues, semaphores and shared memory of its own). Before `exec` it
//!   drops every capability — bounding set, ambient, effective, permitted, inheritable — and
//!   locks the securebits so that running a program as uid 0 gives none back. Root where no
//!   user namespace can be made enters the same namespaces directly and drops the same
//!   capabilities.
//! - **Processes: a PID namespace of its own**, with its own `/proc` where the system allows
//!   mounting one: toolmux and the user's other processes are not there to be signalled or
//!   listed, on every kernel (Landlock scopes signals only from ABI 6), and everything the
//!   command starts ends with the namespace's init, `setsid` or not. The init is a fork of
//!   the process toolmux starts, which relays the command's end (see `enter_pid_namespace`).
//! - **Protected paths.** In the mount namespace, the paths the caller names ([`Protected`]:
//!   `.toolmux/`, the registries, `.git/`…) are bound read-only onto themselves and toolmux's
//!   own Unix socket is covered by `/dev/null`, although they lie beneath the writable project
//!   root: Landlock grants whole hierarchies and cannot subtract from one. The binds cannot be
//!   undone from inside (no capabilities; Landlock forbids mount changes), a protected path
//!   cannot be renamed away (a mount point) or hard-linked out (another mount). A mount covers
//!   only what exists, so a protected path reached through a link to nothing (`.git/hooks ->
//!   /tmp/evil`) cannot be covered — the command could create what the link names — and the
//!   call is refused ([`DanglingLink`]).
//! - **Files: Landlock.** Everything may be read and executed; files may be written, created,
//!   removed and renamed only beneath the project root, the call's temp dir and the configured
//!   `writablePaths` (plus the harmless devices such as `/dev/null`), and no device node may be
//!   made anywhere. From ABI 6 Landlock also keeps signals and abstract Unix sockets in (the
//!   PID and network namespaces already do, on older kernels too); from ABI 1 it cannot
//!   trace them — and without `CAP_SYS_PTRACE` nothing lifts that — which keeps
//!   `/proc/<toolmux>/environ` and `mem` closed although the command runs as toolmux's user.
//! - **Network: a network namespace of its own** (`CLONE_NEWNET` with the others). It has no
//!   interface but a downed loopback, so nothing is reachable — TCP, UDP, raw sockets, abstract
//!   Unix sockets, loopback servers — whatever the syscall used to get there. A seccomp filter
//!   on `socket(2)` would have to know every address family and the syscalls that make sockets
//!   (`socketcall` on 32-bit entry points, `io_uring`), and answers only "denied"; the
//!   namespace is the smaller thing to get right. Unix sockets on the file system stay
//!   reachable where the files are, except toolmux's own (hidden, above).
//!
//! Landlock and the namespaces are probed once per process (Landlock by the crate's own
//! negotiation on a throwaway thread, the namespaces by starting `bash -c :` in them) and every
//! result reports what was in force. A protection the kernel lacks is named in the report;
//! with `shell.requireSandbox` (the default) the call is then refused rather than run with less
//! than was asked for ([`SandboxReport::missing`]).
#![allow(unsafe_code)] // `pre_exec` is unsafe: the hook runs between fork and exec.

use std::path::PathBuf;
use std::sync::{Arc, PoisonError, RwLock};

use serde::Serialize;

/// How writes were confined for one call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Landlock {
    /// Every right asked for is enforced.
    Full,
    /// The kernel's Landlock is older than the rules: some rights are not enforced.
    Partial,
    /// No Landlock on this kernel: writes are not confined.
    Unavailable,
    /// The sandbox is switched off by configuration.
    Off,
}

impl Landlock {
    /// The word the result uses.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Full => "full",
            Self::Partial => "partial",
            Self::Unavailable => "unavailable",
            Self::Off => "off",
        }
    }
}

/// Whether the call could reach the network.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Network {
    /// The command ran in a network namespace of its own, with nothing in it.
    Blocked,
    /// The configuration (or the call, as the configuration permits) let it reach the network.
    Allowed,
    /// It was to be blocked, but the system cannot make a network namespace here.
    Unavailable,
}

impl Network {
    /// The word the result uses.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Blocked => "blocked",
            Self::Allowed => "allowed",
            Self::Unavailable => "unavailable",
        }
    }
}

/// Whether the command ran in namespaces of its own, without capabilities.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Namespaces {
    /// A user namespace (or root's own namespaces where none can be made) with every
    /// capability dropped, a mount namespace with the protected paths read-only and toolmux's
    /// socket hidden, a PID namespace (no process outside it can be signalled), and SysV IPC
    /// of its own.
    Full,
    /// The system cannot make them here: the command keeps toolmux's capabilities, may
    /// signal the user's processes (toolmux among them) where Landlock cannot scope signals,
    /// and the protected paths beneath the root are writable.
    Unavailable,
    /// The sandbox is switched off by configuration.
    Off,
}

impl Namespaces {
    /// The word the result uses.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Full => "full",
            Self::Unavailable => "unavailable",
            Self::Off => "off",
        }
    }
}

/// Which protections were in force for one call, as its result reports them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SandboxReport {
    /// How writes were confined.
    pub landlock: Landlock,
    /// Whether the network was reachable.
    pub network: Network,
    /// Whether the command ran in namespaces of its own, without capabilities.
    pub namespaces: Namespaces,
    /// What the words do not say: a protection the kernel lacks, a protected path that does
    /// not exist.
    pub notes: Vec<String>,
}

impl SandboxReport {
    /// The protections that were asked for and that this system cannot give (empty when the
    /// sandbox is complete, or switched off): what `shell.requireSandbox` refuses to run without.
    /// Landlock `partial` counts as given: writes are confined, the older kernel lacks only the
    /// later file rights, which the notes name. What it also lacks below ABI 6 — keeping
    /// signals and abstract Unix sockets in — the namespaces give on every kernel (a PID
    /// namespace, a network namespace), so it is missing exactly when they are.
    pub fn missing(&self) -> Vec<&'static str> {
        let mut missing = Vec::new();
        if self.landlock == Landlock::Unavailable {
            missing.push("Landlock (writes outside the project)");
        }
        if self.network == Network::Unavailable {
            missing.push("a network namespace (no network)");
        }
        if self.namespaces == Namespaces::Unavailable {
            missing.push(
                "user, mount and PID namespaces (no capabilities, no signal to toolmux or the \
                 user's other processes, read-only `.toolmux/` and registries, toolmux's \
                 socket hidden, SysV IPC of its own)",
            );
        }
        missing
    }
}

/// What one call asks of the sandbox.
#[derive(Clone, Debug, Default)]
pub struct SandboxPolicy {
    /// Whether to sandbox at all (`shell.sandbox`).
    pub enabled: bool,
    /// Whether the command may reach the network.
    pub network: bool,
    /// The directories it may write in: the project root, the call's temp dir, the
    /// configured `writablePaths`.
    pub writable: Vec<PathBuf>,
    /// Paths it may read but never change, although they may lie beneath a writable directory
    /// (`.toolmux/`, the registries, `.git/`). One that does not exist is named in the report.
    pub read_only: Vec<PathBuf>,
    /// Paths it may not reach at all (toolmux's own Unix socket): covered by `/dev/null`.
    pub hidden: Vec<PathBuf>,
    /// What the caller did to make the policy hold, for the report's notes (a placeholder
    /// made for a protected path that did not exist).
    pub notes: Vec<String>,
}

/// The paths a caller keeps from commands, shared with the packs that run them, so that what
/// is learnt later counts from the next call: a reloaded configuration names other
/// registries, and `serve` makes its socket after the packs exist. Cheap to clone.
#[derive(Clone, Debug, Default)]
pub struct Protected(Arc<RwLock<ProtectedPaths>>);

/// What [`Protected`] holds.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProtectedPaths {
    /// Read, never changed ([`SandboxPolicy::read_only`]).
    pub read_only: Vec<PathBuf>,
    /// Never reached ([`SandboxPolicy::hidden`]).
    pub hidden: Vec<PathBuf>,
}

impl Protected {
    /// Replaces the read-only paths (the configuration's files, as a reload names them).
    pub fn set_read_only(&self, paths: Vec<PathBuf>) {
        self.0
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .read_only = paths;
    }

    /// Hides `path` from every later command (toolmux's own socket).
    pub fn hide(&self, path: PathBuf) {
        let mut paths = self.0.write().unwrap_or_else(PoisonError::into_inner);
        if !paths.hidden.contains(&path) {
            paths.hidden.push(path);
        }
    }

    /// What is protected now.
    pub fn paths(&self) -> ProtectedPaths {
        self.0
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

/// The sandbox prepared for one child, in the parent (opening the paths, building the
/// ruleset), so that the hook in the child only makes system calls.
pub struct Prepared {
    report: SandboxReport,
    /// Protected paths reached through a link to nothing: no call may run while there is one.
    dangling: Vec<DanglingLink>,
    #[cfg(target_os = "linux")]
    hook: linux::Hook,
}

/// A protected path that a link to nothing leads to (`.git/hooks -> /tmp/evil`, where
/// `/tmp/evil` does not exist). A mount covers only what exists, and a command could create
/// what the link names — a folder of hooks that git, outside any sandbox, then runs — so no
/// command runs while there is one ([`Prepared::dangling`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DanglingLink {
    /// The protected path.
    pub path: PathBuf,
    /// The link on the way to it (the path itself, or a folder above it).
    pub link: PathBuf,
    /// What the link names.
    pub target: PathBuf,
}

impl std::fmt::Debug for Prepared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prepared")
            .field("report", &self.report)
            .finish_non_exhaustive()
    }
}

impl Prepared {
    /// Prepares `policy`; the first call also probes what this system offers (a few
    /// milliseconds, once per process).
    pub fn new(policy: &SandboxPolicy) -> Self {
        if !policy.enabled {
            return Self {
                dangling: Vec::new(),
                report: SandboxReport {
                    landlock: Landlock::Off,
                    network: Network::Allowed,
                    namespaces: Namespaces::Off,
                    notes: vec![
                        "the sandbox is switched off (`shell.sandbox: false`): the command \
                         runs with toolmux's own rights"
                            .to_string(),
                    ],
                },
                #[cfg(target_os = "linux")]
                hook: linux::Hook::none(),
            };
        }
        #[cfg(target_os = "linux")]
        {
            let (hook, report, dangling) = linux::prepare(policy);
            Self {
                report,
                dangling,
                hook,
            }
        }
        #[cfg(not(target_os = "linux"))]
        {
            Self {
                dangling: Vec::new(),
                report: SandboxReport {
                    landlock: Landlock::Unavailable,
                    network: if policy.network {
                        Network::Allowed
                    } else {
                        Network::Unavailable
                    },
                    namespaces: Namespaces::Unavailable,
                    notes: std::iter::once(
                        "the sandbox exists on Linux only: the command runs with toolmux's \
                         own rights"
                            .to_string(),
                    )
                    .chain(policy.notes.iter().cloned())
                    .collect(),
                },
            }
        }
    }

    /// What will be in force.
    pub fn report(&self) -> &SandboxReport {
        &self.report
    }

    /// The protected paths a link to nothing leads to: the call must not run while there is
    /// one (empty when the sandbox is off, which protects nothing).
    pub fn dangling(&self) -> &[DanglingLink] {
        &self.dangling
    }

    /// Installs the sandbox into `command`, to be applied in the child before it runs. `cwd`
    /// is the command's directory, entered again once the protected paths are bound, so that a
    /// command started inside one sees it read-only too.
    ///
    /// Returns the watch on the PID namespace's relay, when there is one: after the child was
    /// waited for, it tells whether the relay ended as the command did or was killed first.
    pub fn install(
        self,
        command: &mut tokio::process::Command,
        cwd: &std::path::Path,
    ) -> Option<RelayWatch> {
        #[cfg(target_os = "linux")]
        {
            self.hook.install(command, cwd)
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = (command, cwd);
            None
        }
    }
}

/// Whether the process toolmux started — the relay of a PID namespace (see
/// `enter_pid_namespace`) — reported the command's end before it ended. Only a relay killed
/// from outside (by the user, the OOM killer) ends without: the command cannot reach it from
/// its namespace, and toolmux's own time limit is known to the caller. Without the report, a
/// relay killed by SIGKILL would read as a command that died of it.
#[derive(Debug)]
pub struct RelayWatch {
    #[cfg(target_os = "linux")]
    read: std::os::fd::OwnedFd,
}

impl RelayWatch {
    /// Whether the relay reported the command's end (ask once the child was waited for).
    pub fn relayed(&self) -> bool {
        #[cfg(target_os = "linux")]
        {
            let mut byte = [0u8; 1];
            nix::unistd::read(&self.read, &mut byte) == Ok(1)
        }
        #[cfg(not(target_os = "linux"))]
        {
            true
        }
    }
}

#[cfg(target_os = "linux")]
mod linux {
    use std::ffi::{CStr, CString};
    use std::io;
    use std::os::fd::{AsRawFd, OwnedFd};
    use std::os::unix::ffi::OsStrExt;
    use std::path::{Path, PathBuf};
    use std::sync::OnceLock;

    use landlock::{
        ABI, Access, AccessFs, PathBeneath, PathFd, Ruleset, RulesetAttr, RulesetCreated,
        RulesetCreatedAttr, RulesetStatus, Scope,
    };
    use nix::fcntl::OFlag;
    use nix::libc;
    use nix::mount::MsFlags;
    use nix::sched::CloneFlags;
    use nix::sys::stat::Mode;

    use super::{Landlock, Namespaces, Network, SandboxPolicy, SandboxReport};

    /// The file rights handled: ABI 5's (writes, truncation, device ioctls). Older kernels
    /// enforce what they know (`partial`).
    const FS_ABI: ABI = ABI::V5;
    /// The scopes (signals, abstract Unix sockets) of ABI 6.
    const SCOPE_ABI: ABI = ABI::V6;
    /// Devices a command may write to although they are outside the writable directories.
    const DEVICES: &[&str] = &[
        "/dev/null",
        "/dev/zero",
        "/dev/full",
        "/dev/random",
        "/dev/urandom",
        "/dev/tty",
    ];
    /// The securebits set before `exec`, each with its lock: uid 0 gets no capabilities from
    /// running a program (`NOROOT`), changing uids neither drops nor grants any
    /// (`NO_SETUID_FIXUP`), `KEEP_CAPS` stays off, and no ambient capability can be raised.
    const SECUREBITS: libc::c_ulong = 0b1110_1111;
    /// `_LINUX_CAPABILITY_VERSION_3`: two 32-bit words per set.
    const CAPABILITY_VERSION_3: u32 = 0x2008_0522;
    /// `MOUNT_ATTR_RDONLY` of `mount_setattr(2)`.
    const MOUNT_ATTR_RDONLY: u64 = 1;

    /// How the child enters namespaces of its own.
    #[derive(Clone, Debug)]
    enum Method {
        /// `unshare(CLONE_NEWUSER | …)`, then map only the user's own ids, so files keep their
        /// owner and `id` says who the user is — and capabilities held in the namespace count
        /// for nothing outside it.
        User { uid_map: Vec<u8>, gid_map: Vec<u8> },
        /// Root where no user namespace can be made: the namespaces directly, with
        /// `CAP_SYS_ADMIN`; the capabilities are dropped before `exec` all the same.
        Root,
    }

    /// What the child does before Landlock: enter the namespaces, bind the protected paths,
    /// drop every capability. Everything is prepared in the parent, so the child only makes
    /// system calls.
    struct Enter {
        method: Method,
        /// Whether the command keeps the network (no network namespace).
        network: bool,
        /// The writable folders that lead to a read-only path, outermost first: bound onto
        /// themselves (still writable) so that they cannot be renamed away and replaced by a
        /// folder holding a file of the command's own at the protected path.
        pinned: Vec<CString>,
        read_only: Vec<CString>,
        hidden: Vec<CString>,
        /// Whether the command gets a `/proc` of its own PID namespace (see [`Support`]).
        fresh_proc: bool,
        /// The command's directory, entered again after the binds.
        cwd: Option<CString>,
        /// The write end of the relay's report ([`super::RelayWatch`]): the relay writes one
        /// byte there just before it ends as the command did.
        report: Option<libc::c_int>,
    }

    /// How this system gives a command namespaces of its own, as the probe found.
    #[derive(Clone, Debug)]
    struct Support {
        method: Method,
        /// Whether a `/proc` of the command's own PID namespace can be mounted. Where the
        /// system's `/proc` is partly covered (a container's masked paths) a user namespace
        /// may not mount another; the command then still cannot signal what is outside its PID
        /// namespace (the numbers name nothing there), but lists it in `/proc`. The error
        /// says why not.
        fresh_proc: Result<(), String>,
    }

    /// What the child does before `exec`.
    pub(super) struct Hook {
        ruleset: Option<RulesetCreated>,
        enter: Option<Enter>,
        /// The relay's report pipe (read end, write end), when there is a relay.
        report: Option<(OwnedFd, OwnedFd)>,
    }

    impl Hook {
        pub(super) fn none() -> Self {
            Self {
                ruleset: None,
                enter: None,
                report: None,
            }
        }

        /// Hooks the sandbox into `command`; the watch on the relay's report, when there is
        /// a relay.
        pub(super) fn install(
            self,
            command: &mut tokio::process::Command,
            cwd: &Path,
        ) -> Option<super::RelayWatch> {
            let Hook {
                mut ruleset,
                mut enter,
                report,
            } = self;
            if ruleset.is_none() && enter.is_none() {
                return None;
            }
            // The write end lives in the hook, and so in the command, until it is started:
            // then only the relay holds it (its other copies close at `exec` or in `settle`),
            // and the read end says whether the relay reported before it ended.
            let (watch, report_end) = match report {
                Some((read, write)) => (Some(super::RelayWatch { read }), Some(write)),
                None => (None, None),
            };
            if let Some(enter) = &mut enter {
                enter.cwd = Some(c_path(cwd));
            }
            // SAFETY: between fork and exec only async-signal-safe work is allowed. The hook
            // makes system calls (unshare, open, write, mount, chdir, prctl, capset,
            // landlock_restrict_self) on values prepared in the parent, and allocates nothing
            // on success; on failure it returns an error built from an errno, which allocates
            // nothing either.
            unsafe {
                command.pre_exec(move || {
                    let _kept_until_started = &report_end;
                    if let Some(enter) = &enter {
                        enter.apply()?;
                    }
                    if let Some(ruleset) = ruleset.take() {
                        ruleset
                            .restrict_self()
                            .map_err(|_| io::Error::from_raw_os_error(libc::EPERM))?;
                    }
                    Ok(())
                });
            }
            watch
        }
    }

    /// A path as the system calls take it (a path never holds a NUL byte; one that did would
    /// name nothing, so the empty string, which the calls refuse, stands for it).
    fn c_path(path: &Path) -> CString {
        CString::new(path.as_os_str().as_bytes()).unwrap_or_default()
    }

    /// `prctl(PR_SET_DUMPABLE)` for the calling process: async-signal-safe, one system call.
    fn set_dumpable(dumpable: bool) -> io::Result<()> {
        // SAFETY: PR_SET_DUMPABLE takes one integer argument and touches no memory of ours.
        let done = unsafe {
            libc::prctl(
                libc::PR_SET_DUMPABLE,
                libc::c_ulong::from(dumpable),
                0,
                0,
                0,
            )
        };
        if done == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }

    impl Enter {
        /// In the child: the namespaces, the id maps, the binds, the PID namespace's init
        /// (returning only in the process that goes on to run the command, see
        /// [`enter_pid_namespace`]), the directory, the capabilities. Landlock comes after:
        /// the id maps are written under `/proc` and the binds are mounts, which a Landlock
        /// domain may not make.
        fn apply(&self) -> io::Result<()> {
            let mut flags =
                CloneFlags::CLONE_NEWNS | CloneFlags::CLONE_NEWIPC | CloneFlags::CLONE_NEWPID;
            if !self.network {
                flags |= CloneFlags::CLONE_NEWNET;
            }
            match &self.method {
                Method::Root => nix::sched::unshare(flags)?,
                Method::User { uid_map, gid_map } => {
                    nix::sched::unshare(flags | CloneFlags::CLONE_NEWUSER)?;
                    // toolmux makes itself not dumpable at start (so that its children cannot
                    // read its `/proc`), and a fork inherits that: its `/proc/self` files then
                    // belong to root, who is not mapped in the new namespace, and writing the
                    // maps fails. Dumpable just while the maps are written; `exec` decides
                    // afresh for the command.
                    set_dumpable(true)?;
                    // Without `deny` here an unprivileged process may not write its gid map.
                    match write_proc(c"/proc/self/setgroups", b"deny") {
                        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {}
                        other => other?,
                    }
                    write_proc(c"/proc/self/uid_map", uid_map)?;
                    write_proc(c"/proc/self/gid_map", gid_map)?;
                    set_dumpable(false)?;
                }
            }
            // The binds below must never propagate back into toolmux's namespace.
            nix::mount::mount(
                None::<&CStr>,
                c"/",
                None::<&CStr>,
                MsFlags::MS_REC | MsFlags::MS_SLAVE,
                None::<&CStr>,
            )?;
            for path in &self.pinned {
                nix::mount::mount(
                    Some(path.as_c_str()),
                    path.as_c_str(),
                    None::<&CStr>,
                    MsFlags::MS_BIND | MsFlags::MS_REC,
                    None::<&CStr>,
                )?;
            }
            for path in &self.read_only {
                bind_read_only(path)?;
            }
            for path in &self.hidden {
                nix::mount::mount(
                    Some(c"/dev/null"),
                    path.as_c_str(),
                    None::<&CStr>,
                    MsFlags::MS_BIND,
                    None::<&CStr>,
                )?;
            }
            enter_pid_namespace(self.report)?;
            if self.fresh_proc {
                // The `/proc` of the command's own PID namespace: toolmux and the user's other
                // processes are not in it.
                nix::mount::mount(
                    Some(c"proc"),
                    c"/proc",
                    Some(c"proc"),
                    MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC,
                    None::<&CStr>,
                )?;
            }
            // The directory was entered before the binds: entered again, a protected one is
            // seen through its read-only bind.
            if let Some(cwd) = &self.cwd {
                nix::unistd::chdir(cwd.as_c_str())?;
            }
            drop_capabilities()
        }
    }

    /// Puts the command in a PID namespace of its own, where toolmux and every other process
    /// of the user are not there to be signalled (`kill` names no process outside; a pidfd of
    /// one is refused) — what Landlock's signal scoping (ABI 6) does on newer kernels, on
    /// every kernel. `unshare(CLONE_NEWPID)` moves only the children of the caller, so the
    /// process toolmux started (the *relay*) forks the namespace's init, which forks the
    /// process that returns from here to run the command:
    ///
    /// - The **init** (pid 1) reaps what is re-parented to it. When the command ends it sends
    ///   the relay the command's wait status and whether anything is left running; with
    ///   nothing left it exits, which ends the namespace, and otherwise it waits to be killed
    ///   with the call's group (which ends the namespace and everything left in it, `setsid`
    ///   or not). The command is not pid 1, so it keeps the usual signal semantics
    ///   (`kill -KILL $$` kills it).
    /// - The **relay** (what toolmux waits for, the leader of the call's group) ends as the
    ///   command did (its exit code, or dying by its signal), after the init when nothing was
    ///   left, so toolmux's check for processes left behind sees the init only when there are
    ///   some. A signal to the group (the time limit's SIGTERM) ends the relay at once. Just
    ///   before it ends as the command did, it writes a byte to toolmux ([`super::RelayWatch`]),
    ///   so that a relay killed from outside is not taken for a command that died.
    ///
    /// Both close every descriptor they hold (the command's pipes, std's report of a failed
    /// `exec`, which then closes when the command's `exec` does) and drop their capabilities;
    /// neither ever returns, so nothing but the command runs the rest of the hook.
    fn enter_pid_namespace(report: Option<libc::c_int>) -> io::Result<()> {
        let (status_read, status_write) = nix::unistd::pipe2(OFlag::O_CLOEXEC)?;
        // SAFETY: fork in the single-threaded child of a fork; both sides go on with system
        // calls only.
        match unsafe { nix::unistd::fork() }? {
            nix::unistd::ForkResult::Parent { child } => {
                drop(status_write);
                relay(child, status_read, report)
            }
            nix::unistd::ForkResult::Child => {
                drop(status_read);
                // SAFETY: as above.
                match unsafe { nix::unistd::fork() }? {
                    nix::unistd::ForkResult::Parent { child } => init(child, status_write),
                    nix::unistd::ForkResult::Child => {
                        drop(status_write);
                        Ok(())
                    }
                }
            }
        }
    }

    /// The relay's part (see [`enter_pid_namespace`]): never returns.
    fn relay(init: nix::unistd::Pid, status: OwnedFd, report: Option<libc::c_int>) -> ! {
        match report {
            Some(report) => {
                let (low, high) = if report < status.as_raw_fd() {
                    (report, status.as_raw_fd())
                } else {
                    (status.as_raw_fd(), report)
                };
                settle(&[low, high]);
            }
            None => settle(&[status.as_raw_fd()]),
        }
        let mut message = [0u8; 5];
        let mut got = 0;
        while got < message.len() {
            match nix::unistd::read(&status, &mut message[got..]) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(nix::errno::Errno::EINTR) => {}
                Err(_) => break,
            }
        }
        let (ended, left) = if got == message.len() {
            let [a, b, c, d, left] = message;
            (Some(libc::c_int::from_ne_bytes([a, b, c, d])), left != 0)
        } else {
            (None, false)
        };
        // Nothing left: the init exits at once, and is reaped before the relay ends, so that
        // toolmux finds the group empty.
        let init_ended = if left { None } else { wait_raw(init.as_raw()) };
        if let Some(report) = report {
            // SAFETY: write of one byte from a static to a descriptor we hold. A failure
            // leaves toolmux to report a lost relay, which it then is.
            unsafe { libc::write(report, c"r".as_ptr().cast(), 1) };
        }
        end_as(ended.or(init_ended).unwrap_or(libc::EXIT_FAILURE << 8))
    }

    /// The init's part (see [`enter_pid_namespace`]): never returns.
    fn init(command: nix::unistd::Pid, status: OwnedFd) -> ! {
        settle(&[status.as_raw_fd()]);
        let ended = loop {
            let mut raw = 0;
            // SAFETY: waitpid with a pointer to a local integer.
            let pid = unsafe { libc::waitpid(-1, &raw mut raw, 0) };
            if pid == command.as_raw() {
                break raw;
            }
            if pid == -1 && nix::errno::Errno::last() != nix::errno::Errno::EINTR {
                break libc::EXIT_FAILURE << 8;
            }
        };
        // SAFETY: as above; WNOHANG reaps what already died.
        while unsafe { libc::waitpid(-1, std::ptr::null_mut(), libc::WNOHANG) } > 0 {}
        // Signal 0 to -1 from the init: whether any process but the init is left.
        // SAFETY: kill with integers only.
        let left = unsafe { libc::kill(-1, 0) } == 0;
        let mut message = [0u8; 5];
        message[..4].copy_from_slice(&ended.to_ne_bytes());
        message[4] = u8::from(left);
        // The relay may be gone (killed with the group): nothing to tell then.
        let _ = nix::unistd::write(&status, &message);
        drop(status);
        if left {
            // Reaping until the group's kill ends the namespace (or everything ended).
            // SAFETY: as above.
            while unsafe { libc::waitpid(-1, std::ptr::null_mut(), 0) } != -1
                || nix::errno::Errno::last() == nix::errno::Errno::EINTR
            {}
        }
        // SAFETY: _exit ends the process without running anything of toolmux's.
        unsafe { libc::_exit(0) }
    }

    /// What the relay and the init do first: the default action for every signal (toolmux's
    /// handlers write to its own descriptors), no descriptor but `keep` (ascending), no
    /// capabilities.
    fn settle(keep: &[libc::c_int]) {
        use nix::sys::signal::{SaFlags, SigAction, SigHandler, SigSet, Signal, sigaction};
        let default = SigAction::new(SigHandler::SigDfl, SaFlags::empty(), SigSet::empty());
        for signal in Signal::iterator() {
            if !matches!(signal, Signal::SIGKILL | Signal::SIGSTOP) {
                // SAFETY: the default action, no handler of ours.
                let _ = unsafe { sigaction(signal, &default) };
            }
        }
        close_all_but(keep);
        // Not dumpable: they hold a copy of toolmux's memory, which no command may read. A
        // failure has nowhere to be reported from here (the command's own drop, which fails
        // its start, is what guards it); both are belt and braces.
        let _ = set_dumpable(false);
        let _ = drop_capabilities();
    }

    /// Closes every descriptor but those of `keep` (ascending).
    fn close_all_but(keep: &[libc::c_int]) {
        let close_range = |first: libc::c_uint, last: libc::c_uint| {
            // SAFETY: close_range with integers only.
            unsafe { libc::syscall(libc::SYS_close_range, first, last, 0) == 0 }
        };
        let mut first: libc::c_uint = 0;
        let mut closed = true;
        for fd in keep
            .iter()
            .filter_map(|fd| libc::c_uint::try_from(*fd).ok())
        {
            if fd > first {
                closed &= close_range(first, fd - 1);
            }
            first = fd.saturating_add(1);
        }
        if closed && close_range(first, libc::c_uint::MAX) {
            return;
        }
        // Before Linux 5.9: one at a time, up to the limit of open descriptors.
        // SAFETY: sysconf and close with integers only.
        let limit = unsafe { libc::sysconf(libc::_SC_OPEN_MAX) };
        let limit = libc::c_int::try_from(limit).unwrap_or(1 << 20).min(1 << 20);
        for fd in 0..limit {
            if !keep.contains(&fd) {
                // SAFETY: as above.
                unsafe { libc::close(fd) };
            }
        }
    }

    /// Waits for `pid` (retrying when interrupted); its raw wait status.
    fn wait_raw(pid: libc::pid_t) -> Option<libc::c_int> {
        loop {
            let mut raw = 0;
            // SAFETY: waitpid with a pointer to a local integer.
            let done = unsafe { libc::waitpid(pid, &raw mut raw, 0) };
            if done == pid {
                return Some(raw);
            }
            if nix::errno::Errno::last() != nix::errno::Errno::EINTR {
                return None;
            }
        }
    }

    /// Ends the calling process as the wait status `raw` says: by the same signal, or with
    /// the same exit code.
    fn end_as(raw: libc::c_int) -> ! {
        if libc::WIFSIGNALED(raw) {
            let signal = libc::WTERMSIG(raw);
            // SAFETY: the default action for that signal, unblocked, then sent to ourselves.
            unsafe {
                libc::signal(signal, libc::SIG_DFL);
                let mut set = std::mem::zeroed::<libc::sigset_t>();
                libc::sigemptyset(&raw mut set);
                libc::sigaddset(&raw mut set, signal);
                libc::sigprocmask(libc::SIG_UNBLOCK, &raw const set, std::ptr::null_mut());
                libc::kill(libc::getpid(), signal);
            }
            // SAFETY: _exit with an integer (a signal that does not end a process).
            unsafe { libc::_exit(128 + signal) }
        }
        let code = if libc::WIFEXITED(raw) {
            libc::WEXITSTATUS(raw)
        } else {
            libc::EXIT_FAILURE
        };
        // SAFETY: _exit ends the process without running anything of toolmux's.
        unsafe { libc::_exit(code) }
    }

    /// Binds `path` onto itself and makes the bind (and every mount beneath it) read-only.
    fn bind_read_only(path: &CStr) -> io::Result<()> {
        nix::mount::mount(
            Some(path),
            path,
            None::<&CStr>,
            MsFlags::MS_BIND | MsFlags::MS_REC,
            None::<&CStr>,
        )?;
        #[repr(C)]
        struct MountAttr {
            attr_set: u64,
            attr_clr: u64,
            propagation: u64,
            userns_fd: u64,
        }
        let attr = MountAttr {
            attr_set: MOUNT_ATTR_RDONLY,
            attr_clr: 0,
            propagation: 0,
            userns_fd: 0,
        };
        // SAFETY: `mount_setattr(AT_FDCWD, path, AT_RECURSIVE, &attr, size)`: a valid C string
        // and a `struct mount_attr` of the size given, both alive for the call.
        let set = unsafe {
            libc::syscall(
                libc::SYS_mount_setattr,
                libc::AT_FDCWD,
                path.as_ptr(),
                libc::AT_RECURSIVE as libc::c_uint,
                &raw const attr,
                std::mem::size_of::<MountAttr>(),
            )
        };
        if set == 0 {
            return Ok(());
        }
        let error = io::Error::last_os_error();
        if error.raw_os_error() != Some(libc::ENOSYS) {
            return Err(error);
        }
        // Before Linux 5.12: remount the bind read-only, repeating the flags the mount has,
        // which a mount namespace owned by a user namespace may not change (they are locked).
        use nix::sys::statvfs::FsFlags;
        let have = nix::sys::statvfs::statvfs(path)?.flags();
        let mut flags = MsFlags::MS_REMOUNT | MsFlags::MS_BIND | MsFlags::MS_RDONLY;
        for (has, flag) in [
            (FsFlags::ST_NOSUID, MsFlags::MS_NOSUID),
            (FsFlags::ST_NODEV, MsFlags::MS_NODEV),
            (FsFlags::ST_NOEXEC, MsFlags::MS_NOEXEC),
            (FsFlags::ST_NOATIME, MsFlags::MS_NOATIME),
            (FsFlags::ST_NODIRATIME, MsFlags::MS_NODIRATIME),
            (FsFlags::ST_RELATIME, MsFlags::MS_RELATIME),
        ] {
            if have.contains(has) {
                flags |= flag;
            }
        }
        if !have.intersects(FsFlags::ST_NOATIME | FsFlags::ST_RELATIME) {
            flags |= MsFlags::MS_STRICTATIME;
        }
        nix::mount::mount(None::<&CStr>, path, None::<&CStr>, flags, None::<&CStr>)?;
        Ok(())
    }

    /// Drops every capability for good: the securebits (locked), the ambient set, the bounding
    /// set (so `exec` as uid 0 grants nothing), then effective, permitted and inheritable.
    fn drop_capabilities() -> io::Result<()> {
        let check = |r: libc::c_int| {
            if r == 0 {
                Ok(())
            } else {
                Err(io::Error::last_os_error())
            }
        };
        // SAFETY: prctl with integer arguments only.
        check(unsafe { libc::prctl(libc::PR_SET_SECUREBITS, SECUREBITS, 0, 0, 0) })?;
        // SAFETY: as above. EINVAL: a kernel before 4.3, which has no ambient set to clear.
        match check(unsafe {
            libc::prctl(
                libc::PR_CAP_AMBIENT,
                libc::PR_CAP_AMBIENT_CLEAR_ALL,
                0,
                0,
                0,
            )
        }) {
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {}
            other => other?,
        }
        for capability in 0..64 {
            // SAFETY: as above. EINVAL: past the last capability this kernel knows.
            match check(unsafe { libc::prctl(libc::PR_CAPBSET_DROP, capability, 0, 0, 0) }) {
                Err(e) if e.raw_os_error() == Some(libc::EINVAL) => break,
                other => other?,
            }
        }
        #[repr(C)]
        struct Header {
            version: u32,
            pid: libc::c_int,
        }
        #[repr(C)]
        #[derive(Clone, Copy)]
        struct Data {
            effective: u32,
            permitted: u32,
            inheritable: u32,
        }
        let header = Header {
            version: CAPABILITY_VERSION_3,
            pid: 0,
        };
        let none = [Data {
            effective: 0,
            permitted: 0,
            inheritable: 0,
        }; 2];
        // SAFETY: `capset(&header, data)` with a version 3 header and its two data words,
        // alive for the call.
        let set = unsafe { libc::syscall(libc::SYS_capset, &raw const header, none.as_ptr()) };
        if set == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }

    fn write_proc(path: &CStr, contents: &[u8]) -> io::Result<()> {
        let fd = nix::fcntl::open(path, OFlag::O_WRONLY | OFlag::O_CLOEXEC, Mode::empty())?;
        nix::unistd::write(&fd, contents)?;
        Ok(())
    }

    /// The rights every ruleset handles.
    fn base() -> Result<Ruleset, landlock::RulesetError> {
        Ruleset::default()
            .handle_access(AccessFs::from_all(FS_ABI))?
            .scope(Scope::from_all(SCOPE_ABI))
    }

    /// What Landlock enforces on this kernel: the crate's own answer for a ruleset handling
    /// the rights above, from restricting a throwaway thread (a Landlock domain and
    /// `no_new_privs` are per thread; toolmux's other threads are untouched).
    fn landlock_support() -> &'static Result<RulesetStatus, String> {
        static SUPPORT: OnceLock<Result<RulesetStatus, String>> = OnceLock::new();
        SUPPORT.get_or_init(|| {
            std::thread::Builder::new()
                .name("landlock-probe".to_string())
                .spawn(|| -> Result<RulesetStatus, String> {
                    let status = base()
                        .and_then(|r| r.create())
                        .and_then(|r| r.restrict_self())
                        .map_err(|e| e.to_string())?;
                    Ok(status.ruleset)
                })
                .map_err(|e| e.to_string())
                .and_then(|probe| {
                    probe
                        .join()
                        .unwrap_or_else(|_| Err("the probe panicked".to_string()))
                })
        })
    }

    /// How this process can give a child namespaces of its own, tried once: a child that
    /// enters them (network and PID included), binds `/dev/null` onto itself, mounts its
    /// `/proc` (or, failing that, not), drops its capabilities and runs `bash -c :`.
    fn namespace_support() -> &'static Result<Support, String> {
        static SUPPORT: OnceLock<Result<Support, String>> = OnceLock::new();
        SUPPORT.get_or_init(|| {
            let uid = nix::unistd::getuid().as_raw();
            let gid = nix::unistd::getgid().as_raw();
            let mut candidates = vec![Method::User {
                uid_map: format!("{uid} {uid} 1").into_bytes(),
                gid_map: format!("{gid} {gid} 1").into_bytes(),
            }];
            if nix::unistd::geteuid().is_root() {
                candidates.push(Method::Root);
            }
            let mut failures = Vec::new();
            for candidate in candidates {
                let fresh_proc = match try_method(&candidate, true) {
                    Ok(()) => Ok(()),
                    Err(e) => match try_method(&candidate, false) {
                        Ok(()) => Err(e),
                        Err(without) => {
                            failures.push(without);
                            continue;
                        }
                    },
                };
                return Ok(Support {
                    method: candidate,
                    fresh_proc,
                });
            }
            Err(failures.join("; "))
        })
    }

    /// Starts `bash -c :` in namespaces entered by `method`, with a `/proc` of its own or
    /// not; whether it ran.
    fn try_method(method: &Method, fresh_proc: bool) -> Result<(), String> {
        use std::os::unix::process::CommandExt;
        let what = match method {
            Method::User { .. } => "a user namespace",
            Method::Root => "root's namespaces",
        };
        let enter = Enter {
            method: method.clone(),
            network: false,
            pinned: Vec::new(),
            read_only: Vec::new(),
            hidden: vec![c"/dev/null".to_owned()],
            fresh_proc,
            cwd: None,
            report: None,
        };
        let mut probe = std::process::Command::new("bash");
        probe
            .args(["-c", ":"])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        // SAFETY: as in `Hook::install`: system calls on prepared values only.
        unsafe {
            probe.pre_exec(move || enter.apply());
        }
        match probe.status() {
            Ok(status) if status.success() => Ok(()),
            Ok(status) => Err(format!("{what}: the probe exited with {status}")),
            Err(e) => Err(format!("{what}: {e}")),
        }
    }

    /// The paths of `paths` that exist, canonical (as the binds will find them), with, when
    /// `link_folders`, the folder holding each one named through a link; a note for each that
    /// does not exist — but, when `link_folders`, one reached through a link to nothing goes
    /// to `dangling` instead (see [`super::DanglingLink`]).
    fn existing(
        paths: &[PathBuf],
        notes: &mut Vec<String>,
        what: &str,
        link_folders: bool,
        dangling: &mut Vec<super::DanglingLink>,
    ) -> Vec<PathBuf> {
        let mut found = Vec::new();
        for path in paths {
            match std::fs::canonicalize(path) {
                Ok(real) => {
                    // A mount follows a link, so binding the named path covers only what it
                    // points at, and the link itself could be removed and replaced by a file
                    // of the command's. The folder holding the link is kept as well.
                    let is_link = path
                        .symlink_metadata()
                        .is_ok_and(|meta| meta.file_type().is_symlink());
                    let holder = path
                        .parent()
                        .filter(|_| is_link && link_folders)
                        .and_then(|parent| std::fs::canonicalize(parent).ok());
                    if let Some(holder) = holder {
                        notes.push(format!(
                            "`{}` is a link, so the folder holding it is {what} too",
                            path.display()
                        ));
                        if !found.contains(&holder) {
                            found.push(holder);
                        }
                    }
                    if !found.contains(&real) {
                        found.push(real);
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => match link_to_nothing(path) {
                    // A mount covers only what exists, and what the link names would be
                    // created by the command where the link sends whoever reads the path
                    // later (git reading `.git/hooks`): the call is refused instead.
                    Some(link) if link_folders => dangling.push(link),
                    _ => notes.push(format!(
                        "`{}` does not exist, so it could not be {what}: a command may create \
                         it",
                        path.display()
                    )),
                },
                Err(e) => notes.push(format!("`{}` could not be {what}: {e}", path.display())),
            }
        }
        found
    }

    /// The link to nothing on the way to `path`, which does not resolve: the innermost part
    /// of it that exists, when that is a link whose target does not. `None` when `path` is
    /// simply missing.
    fn link_to_nothing(path: &Path) -> Option<super::DanglingLink> {
        let link = path
            .ancestors()
            .find(|part| part.symlink_metadata().is_ok())?;
        let is_link = link
            .symlink_metadata()
            .is_ok_and(|meta| meta.file_type().is_symlink());
        if !is_link || std::fs::canonicalize(link).is_ok() {
            return None;
        }
        Some(super::DanglingLink {
            path: path.to_path_buf(),
            link: link.to_path_buf(),
            target: std::fs::read_link(link).unwrap_or_default(),
        })
    }

    /// The folders between a writable folder (itself included) and each of `read_only`,
    /// outermost first. A read-only bind keeps its own path from being renamed, not its
    /// parents': `mv backend old && mkdir backend` would put a fresh `backend/mcp.json` where
    /// toolmux reads the registry. Bound onto themselves, they are mount points too.
    fn pinned(read_only: &[PathBuf], writable: &[PathBuf]) -> Vec<PathBuf> {
        let writable: Vec<PathBuf> = writable
            .iter()
            .map(|w| std::fs::canonicalize(w).unwrap_or_else(|_| w.clone()))
            .collect();
        let mut pinned: Vec<PathBuf> = Vec::new();
        for path in read_only {
            for folder in path.ancestors().skip(1) {
                if writable.iter().any(|w| folder.starts_with(w))
                    && !pinned.iter().any(|p| p == folder)
                {
                    pinned.push(folder.to_path_buf());
                }
            }
        }
        pinned.sort_by_key(|p| p.components().count());
        pinned
    }

    /// The hook and the report for `policy` (enabled).
    pub(super) fn prepare(
        policy: &SandboxPolicy,
    ) -> (Hook, SandboxReport, Vec<super::DanglingLink>) {
        let mut notes = policy.notes.clone();
        let mut dangling = Vec::new();
        let mut report = None;
        let (landlock, ruleset) = match landlock_support() {
            Ok(RulesetStatus::NotEnforced) => {
                notes.push(
                    "this kernel has no Landlock (not built in, or not enabled at boot): \
                     writes are not confined to the project root"
                        .to_string(),
                );
                (Landlock::Unavailable, None)
            }
            Err(e) => {
                notes.push(format!(
                    "Landlock cannot be used ({e}): writes are not confined to the project root"
                ));
                (Landlock::Unavailable, None)
            }
            Ok(status) => match ruleset_for(&policy.writable, &mut notes) {
                Ok(ruleset) => {
                    let level = if *status == RulesetStatus::FullyEnforced {
                        Landlock::Full
                    } else {
                        // Abstract Unix sockets belong to a network namespace: with the
                        // network allowed, the command shares toolmux's.
                        let sockets = if policy.network {
                            "abstract Unix sockets outside are reachable, like the rest of the \
                             network it is allowed"
                        } else {
                            "abstract Unix sockets are kept in by its network namespace"
                        };
                        notes.push(format!(
                            "this kernel's Landlock is older than the rules (ABI 6): \
                             truncating files and device ioctls outside the writable folders \
                             are not confined where it lacks them (ABI 3 and 5); signals, which \
                             it scopes from ABI 6, are kept in by the command's own PID \
                             namespace, and {sockets}"
                        ));
                        Landlock::Partial
                    };
                    (level, Some(ruleset))
                }
                Err(e) => {
                    notes.push(format!(
                        "the Landlock rules could not be built ({e}): writes are not confined"
                    ));
                    (Landlock::Unavailable, None)
                }
            },
        };
        let (namespaces, enter) = match namespace_support() {
            Ok(Support { method, fresh_proc }) => {
                if let Err(e) = fresh_proc {
                    notes.push(format!(
                        "a `/proc` of the command's own could not be mounted here ({e}): it \
                         cannot signal toolmux or the user's other processes (its own PID \
                         namespace), but sees them listed in `/proc`"
                    ));
                }
                let read_only = existing(
                    &policy.read_only,
                    &mut notes,
                    "made read-only",
                    true,
                    &mut dangling,
                );
                let hidden = existing(&policy.hidden, &mut notes, "hidden", false, &mut dangling);
                let pinned = pinned(&read_only, &policy.writable);
                let c = |paths: &[PathBuf]| paths.iter().map(|p| c_path(p)).collect();
                report = match nix::unistd::pipe2(OFlag::O_CLOEXEC | OFlag::O_NONBLOCK) {
                    Ok(pipe) => Some(pipe),
                    Err(e) => {
                        notes.push(format!(
                            "no pipe for the relay's report ({e}): were the process that \
                             relays the command's end killed from outside, the result would \
                             show its end as the command's"
                        ));
                        None
                    }
                };
                (
                    Namespaces::Full,
                    Some(Enter {
                        method: method.clone(),
                        network: policy.network,
                        pinned: c(&pinned),
                        read_only: c(&read_only),
                        hidden: c(&hidden),
                        fresh_proc: fresh_proc.is_ok(),
                        cwd: None,
                        report: report.as_ref().map(|(_, write)| write.as_raw_fd()),
                    }),
                )
            }
            Err(e) => {
                notes.push(format!(
                    "no user or mount namespace can be made here ({e}): the command keeps \
                     toolmux's capabilities and SysV IPC, and `.toolmux/`, the registries and \
                     toolmux's socket are not protected from it"
                ));
                (Namespaces::Unavailable, None)
            }
        };
        let network = match (policy.network, &enter) {
            (true, _) => Network::Allowed,
            (false, Some(_)) => Network::Blocked,
            (false, None) => {
                notes.push(
                    "no network namespace can be made here: the command can reach the network"
                        .to_string(),
                );
                Network::Unavailable
            }
        };
        (
            Hook {
                ruleset,
                enter,
                report,
            },
            SandboxReport {
                landlock,
                network,
                namespaces,
                notes,
            },
            dangling,
        )
    }

    /// Read and execute everywhere; write beneath `writable` and to the harmless devices;
    /// make no device node anywhere (a block device bound to a disk or a loop file would
    /// write around every rule).
    fn ruleset_for(
        writable: &[PathBuf],
        notes: &mut Vec<String>,
    ) -> Result<RulesetCreated, String> {
        let text = |e: landlock::RulesetError| e.to_string();
        let everywhere = PathFd::new("/").map_err(|e| e.to_string())?;
        let mut ruleset = base()
            .and_then(|r| r.create())
            .and_then(|r| r.add_rule(PathBeneath::new(everywhere, AccessFs::from_read(FS_ABI))))
            .map_err(text)?;
        let in_directories =
            AccessFs::from_all(FS_ABI) & !(AccessFs::MakeChar | AccessFs::MakeBlock);
        for path in writable {
            let is_dir = std::fs::metadata(path).is_ok_and(|m| m.is_dir());
            match PathFd::new(path) {
                Ok(fd) => {
                    let rights = if is_dir {
                        in_directories
                    } else {
                        AccessFs::from_file(FS_ABI)
                    };
                    ruleset = ruleset
                        .add_rule(PathBeneath::new(fd, rights))
                        .map_err(text)?;
                }
                Err(e) => notes.push(format!("`{}` cannot be made writable: {e}", path.display())),
            }
        }
        for device in DEVICES {
            if let Ok(fd) = PathFd::new(device) {
                ruleset = ruleset
                    .add_rule(PathBeneath::new(fd, AccessFs::from_file(FS_ABI)))
                    .map_err(text)?;
            }
        }
        Ok(ruleset)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(landlock: Landlock, network: Network, namespaces: Namespaces) -> SandboxReport {
        SandboxReport {
            landlock,
            network,
            namespaces,
            notes: Vec::new(),
        }
    }

    #[test]
    fn what_is_missing_is_named_and_partial_landlock_is_not_missing() {
        let complete = report(Landlock::Partial, Network::Blocked, Namespaces::Full);
        assert!(complete.missing().is_empty());
        let off = report(Landlock::Off, Network::Allowed, Namespaces::Off);
        assert!(off.missing().is_empty(), "switched off is not missing");
        let bare = report(
            Landlock::Unavailable,
            Network::Unavailable,
            Namespaces::Unavailable,
        );
        let missing = bare.missing().join("; ");
        for word in [
            "Landlock",
            "network namespace",
            "user, mount and PID namespaces",
            "no signal to toolmux",
        ] {
            assert!(missing.contains(word), "{missing}");
        }
    }

    #[test]
    fn the_protected_paths_are_shared_and_hidden_ones_kept_once() {
        let protected = Protected::default();
        let seen_by_pack = protected.clone();
        protected.set_read_only(vec![PathBuf::from("/p/.toolmux")]);
        protected.hide(PathBuf::from("/p/tm.sock"));
        protected.hide(PathBuf::from("/p/tm.sock"));
        assert_eq!(
            seen_by_pack.paths(),
            ProtectedPaths {
                read_only: vec![PathBuf::from("/p/.toolmux")],
                hidden: vec![PathBuf::from("/p/tm.sock")],
            }
        );
    }
}
