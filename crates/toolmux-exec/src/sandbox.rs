//! The sandbox a command runs in, applied in the child between `fork` and `exec` (a
//! `pre_exec` hook), so that toolmux itself is never restricted.
//!
//! - **Files: Landlock.** Everything may be read and executed; files may be written, created,
//!   removed and renamed only beneath the project root, the call's temp dir and the configured
//!   `writablePaths` (plus the harmless devices such as `/dev/null`). Landlock grants rights to
//!   whole hierarchies and has no exceptions beneath a granted directory, so it cannot keep a
//!   command out of `.git/` or `.toolmux/state/` inside the root; the result says so. From ABI
//!   6 the command also cannot signal processes outside its sandbox (toolmux, say) or connect
//!   to abstract Unix sockets made outside it.
//! - **Network: a network namespace of its own** (`unshare(CLONE_NEWNET)`; for a user without
//!   `CAP_SYS_ADMIN`, with a user namespace that maps only their own ids). It has no interface
//!   but a downed loopback, so nothing is reachable — TCP, UDP, raw sockets, abstract Unix
//!   sockets, loopback servers — whatever the syscall used to get there. A seccomp filter on
//!   `socket(2)` would have to know every address family and the syscalls that make sockets
//!   (`socketcall` on 32-bit entry points, `io_uring`), and answers only "denied"; the
//!   namespace is the smaller thing to get right. Unix sockets on the file system (a Docker
//!   socket, say) are not networking and stay reachable where the files are.
//!
//! Both are probed once per process (Landlock by the crate's own negotiation on a throwaway
//! thread, the namespace by starting `bash -c :` in one) and every result reports what was in
//! force, degrading with a note where the kernel lacks a protection rather than failing.
#![allow(unsafe_code)] // `pre_exec` is unsafe: the hook runs between fork and exec.

use std::path::PathBuf;

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

/// Which protections were in force for one call, as its result reports them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SandboxReport {
    /// How writes were confined.
    pub landlock: Landlock,
    /// Whether the network was reachable.
    pub network: Network,
    /// What the two words do not say: a protection the kernel lacks, what Landlock cannot
    /// express.
    pub notes: Vec<String>,
}

/// What one call asks of the sandbox.
#[derive(Clone, Debug)]
pub struct SandboxPolicy {
    /// Whether to sandbox at all (`shell.sandbox`).
    pub enabled: bool,
    /// Whether the command may reach the network.
    pub network: bool,
    /// The directories it may write in: the project root, the call's temp dir, the
    /// configured `writablePaths`.
    pub writable: Vec<PathBuf>,
}

/// The sandbox prepared for one child, in the parent (opening the paths, building the
/// ruleset), so that the hook in the child only makes system calls.
pub struct Prepared {
    report: SandboxReport,
    #[cfg(target_os = "linux")]
    hook: linux::Hook,
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
                report: SandboxReport {
                    landlock: Landlock::Off,
                    network: Network::Allowed,
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
            let (hook, report) = linux::prepare(policy);
            Self { report, hook }
        }
        #[cfg(not(target_os = "linux"))]
        {
            Self {
                report: SandboxReport {
                    landlock: Landlock::Unavailable,
                    network: if policy.network {
                        Network::Allowed
                    } else {
                        Network::Unavailable
                    },
                    notes: vec![
                        "the sandbox exists on Linux only: the command runs with toolmux's \
                         own rights"
                            .to_string(),
                    ],
                },
            }
        }
    }

    /// What will be in force.
    pub fn report(&self) -> &SandboxReport {
        &self.report
    }

    /// Installs the sandbox into `command`, to be applied in the child before it runs.
    pub fn install(self, command: &mut tokio::process::Command) {
        #[cfg(target_os = "linux")]
        self.hook.install(command);
        #[cfg(not(target_os = "linux"))]
        let _ = command;
    }
}

#[cfg(target_os = "linux")]
mod linux {
    use std::io;
    use std::sync::OnceLock;

    use landlock::{
        ABI, Access, AccessFs, PathBeneath, PathFd, Ruleset, RulesetAttr, RulesetCreated,
        RulesetCreatedAttr, RulesetStatus, Scope,
    };
    use nix::fcntl::OFlag;
    use nix::sched::CloneFlags;
    use nix::sys::stat::Mode;

    use super::{Landlock, Network, SandboxPolicy, SandboxReport};

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

    /// How the child leaves the network.
    #[derive(Clone, Debug)]
    enum Isolation {
        /// `unshare(CLONE_NEWNET)` (toolmux has `CAP_SYS_ADMIN`).
        Namespace,
        /// `unshare(CLONE_NEWUSER | CLONE_NEWNET)`, then map the user's own ids, so files keep
        /// their owner and `id` says who the user is.
        UserNamespace { uid_map: Vec<u8>, gid_map: Vec<u8> },
    }

    /// What the child does before `exec`.
    pub(super) struct Hook {
        ruleset: Option<RulesetCreated>,
        isolation: Option<Isolation>,
    }

    impl Hook {
        pub(super) fn none() -> Self {
            Self {
                ruleset: None,
                isolation: None,
            }
        }

        pub(super) fn install(self, command: &mut tokio::process::Command) {
            if self.ruleset.is_none() && self.isolation.is_none() {
                return;
            }
            let Hook {
                mut ruleset,
                isolation,
            } = self;
            // SAFETY: between fork and exec only async-signal-safe work is allowed. The hook
            // makes system calls (unshare, open, write, prctl, landlock_restrict_self) on
            // values prepared in the parent, and allocates nothing on success; on failure it
            // returns an error built from an errno, which allocates nothing either.
            unsafe {
                command.pre_exec(move || {
                    if let Some(isolation) = &isolation {
                        isolate(isolation)?;
                    }
                    if let Some(ruleset) = ruleset.take() {
                        ruleset
                            .restrict_self()
                            .map_err(|_| io::Error::from_raw_os_error(nix::libc::EPERM))?;
                    }
                    Ok(())
                });
            }
        }
    }

    /// Leaves the network, in the child. Landlock comes after: the id maps are written under
    /// `/proc`, which the ruleset does not let the command write.
    fn isolate(isolation: &Isolation) -> io::Result<()> {
        match isolation {
            Isolation::Namespace => nix::sched::unshare(CloneFlags::CLONE_NEWNET)?,
            Isolation::UserNamespace { uid_map, gid_map } => {
                nix::sched::unshare(CloneFlags::CLONE_NEWUSER | CloneFlags::CLONE_NEWNET)?;
                // Without `deny` here an unprivileged process may not write its gid map.
                match write_proc(c"/proc/self/setgroups", b"deny") {
                    Err(e) if e.raw_os_error() == Some(nix::libc::ENOENT) => {}
                    other => other?,
                }
                write_proc(c"/proc/self/uid_map", uid_map)?;
                write_proc(c"/proc/self/gid_map", gid_map)?;
            }
        }
        Ok(())
    }

    fn write_proc(path: &std::ffi::CStr, contents: &[u8]) -> io::Result<()> {
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

    /// How this process can take a child off the network, tried once: a child that unshares
    /// its network namespace and exits.
    fn isolation_support() -> &'static Result<Isolation, String> {
        static SUPPORT: OnceLock<Result<Isolation, String>> = OnceLock::new();
        SUPPORT.get_or_init(|| {
            let uid = nix::unistd::getuid().as_raw();
            let gid = nix::unistd::getgid().as_raw();
            let mut candidates = Vec::new();
            if nix::unistd::geteuid().is_root() {
                candidates.push(Isolation::Namespace);
            }
            candidates.push(Isolation::UserNamespace {
                uid_map: format!("{uid} {uid} 1").into_bytes(),
                gid_map: format!("{gid} {gid} 1").into_bytes(),
            });
            let mut last = String::new();
            for candidate in candidates {
                match try_isolation(&candidate) {
                    Ok(()) => return Ok(candidate),
                    Err(e) => last = e,
                }
            }
            Err(last)
        })
    }

    /// Starts `bash -c :` isolated as `isolation` says; whether it ran.
    fn try_isolation(isolation: &Isolation) -> Result<(), String> {
        use std::os::unix::process::CommandExt;
        let owned = isolation.clone();
        let mut probe = std::process::Command::new("bash");
        probe
            .args(["-c", ":"])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        // SAFETY: as in `Hook::install`: system calls on prepared values only.
        unsafe {
            probe.pre_exec(move || isolate(&owned));
        }
        match probe.status() {
            Ok(status) if status.success() => Ok(()),
            Ok(status) => Err(format!("the probe exited with {status}")),
            Err(e) => Err(e.to_string()),
        }
    }

    /// The hook and the report for `policy` (enabled).
    pub(super) fn prepare(policy: &SandboxPolicy) -> (Hook, SandboxReport) {
        let mut notes = Vec::new();
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
                        notes.push(
                            "this kernel's Landlock is older than the rules (ABI 6): some \
                             rights (truncation, device ioctls, signal and socket scoping) \
                             are not enforced"
                                .to_string(),
                        );
                        Landlock::Partial
                    };
                    notes.push(
                        "Landlock cannot make exceptions beneath a writable directory: \
                         `.git/` and `.toolmux/state/` inside the project root are writable too"
                            .to_string(),
                    );
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
        let (network, isolation) = if policy.network {
            (Network::Allowed, None)
        } else {
            match isolation_support() {
                Ok(isolation) => (Network::Blocked, Some(isolation.clone())),
                Err(e) => {
                    notes.push(format!(
                        "no network namespace can be made here ({e}): the command can reach \
                         the network"
                    ));
                    (Network::Unavailable, None)
                }
            }
        };
        (
            Hook { ruleset, isolation },
            SandboxReport {
                landlock,
                network,
                notes,
            },
        )
    }

    /// Read and execute everywhere; write beneath `writable` and to the harmless devices.
    fn ruleset_for(
        writable: &[std::path::PathBuf],
        notes: &mut Vec<String>,
    ) -> Result<RulesetCreated, String> {
        let text = |e: landlock::RulesetError| e.to_string();
        let everywhere = PathFd::new("/").map_err(|e| e.to_string())?;
        let mut ruleset = base()
            .and_then(|r| r.create())
            .and_then(|r| r.add_rule(PathBeneath::new(everywhere, AccessFs::from_read(FS_ABI))))
            .map_err(text)?;
        for path in writable {
            let is_dir = std::fs::metadata(path).is_ok_and(|m| m.is_dir());
            match PathFd::new(path) {
                Ok(fd) => {
                    let rights = if is_dir {
                        AccessFs::from_all(FS_ABI)
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
