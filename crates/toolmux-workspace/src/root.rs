//! Confinement: turning a path a model wrote into a file under the project root, or a refusal.
//!
//! The resolver never asks the operating system about anything outside the root. It checks the
//! text first (no NUL, `~`, absolute path, backslash or percent-encoding; `..` may not climb
//! above the root), then walks the path one component at a time from the canonical root with
//! `symlink_metadata`, following symbolic links itself. A link whose target would leave the root
//! is refused the moment that is known, before anything outside is looked at, so a link to a
//! missing file outside gives exactly the same answer as a link to an existing one.
//!
//! The walk yields a path with no symbolic link left in it. That path is then *opened by the
//! kernel* beneath a descriptor of the root ([`ProjectRoot::open_beneath`]) with symbolic links
//! forbidden on the way, so a directory swapped for a link after the walk makes the open fail
//! instead of leading outside: the check and the use are one system call.

use std::collections::VecDeque;
use std::ffi::{OsStr, OsString};
use std::fs::{File, Metadata};
use std::io;
use std::os::fd::OwnedFd;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};

use rustix::fs::{Mode, OFlags, ResolveFlags};
use rustix::io::Errno;
use toolmux_files::{Commit, stage_in};

use crate::protected::{ProtectedKind, ProtectedPaths};

/// The longest path accepted, in bytes (Linux's `PATH_MAX`).
const MAX_PATH_BYTES: usize = 4096;

/// How many symbolic links one resolution may follow (Linux's own limit).
const MAX_SYMLINK_HOPS: usize = 40;

/// toolmux's machine state under the project directory, hidden from every workspace tool.
const STATE_DIR: &str = ".toolmux/state";

/// How often an open beneath the root is retried when the kernel reports that a concurrent
/// rename raced with it (`EAGAIN` from `openat2`).
const OPEN_RETRIES: usize = 4;

/// Set once `openat2` turned out to be missing (Linux before 5.6, or a seccomp filter that
/// refuses it), so later opens go straight to the component-by-component fallback.
static NO_OPENAT2: AtomicBool = AtomicBool::new(false);

/// Why a path was refused. Every message names the path as the caller wrote it (except for a
/// NUL byte or an overlong path, which are not worth echoing) and never reveals anything about
/// what lies outside the root.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    /// The project root itself cannot be used.
    #[error("project root `{path}` cannot be opened: {message}")]
    Root {
        /// The root as configured.
        path: String,
        /// What the operating system said.
        message: String,
    },
    /// The project root is a file, not a directory.
    #[error("project root `{path}` is not a directory")]
    RootNotDirectory {
        /// The root as configured.
        path: String,
    },
    /// The path contains a NUL byte.
    #[error("path contains a NUL byte")]
    Nul,
    /// The path is longer than any real path can be.
    #[error("path is {len} bytes long; at most {MAX_PATH_BYTES} are accepted")]
    TooLong {
        /// Its length in bytes.
        len: usize,
    },
    /// The path starts with `~`, which a shell would expand and we do not.
    #[error("`~` is not expanded (`{path}`); give a path relative to the project root")]
    Tilde {
        /// The path as given.
        path: String,
    },
    /// The path is absolute (`/etc`, `C:\x`, `\\server\share`).
    #[error("absolute paths are not accepted (`{path}`); give a path relative to the project root")]
    Absolute {
        /// The path as given.
        path: String,
    },
    /// The path uses `\` as a separator.
    #[error("backslashes are not accepted (`{path}`); separate directories with `/`")]
    Backslash {
        /// The path as given.
        path: String,
    },
    /// The path contains `%` followed by two hex digits.
    #[error("percent-encoded paths are not accepted (`{path}`); write the characters themselves")]
    PercentEncoded {
        /// The path as given.
        path: String,
    },
    /// The path is inside `.toolmux/state/`: toolmux's own machine state (execution logs with
    /// call arguments, caches) is never read through the workspace tools.
    #[error(
        "`{path}` is inside `.toolmux/state`, toolmux's own state, which the workspace tools do not read"
    )]
    State {
        /// The path as given.
        path: String,
    },
    /// The path is inside a `.git` directory (or is a `.git` file): git's own data (objects,
    /// refs, hooks that run on the next commit) is never written by the workspace tools.
    #[error("`{path}` is inside `.git`, which the workspace tools never write")]
    Git {
        /// The path as given.
        path: String,
    },
    /// The path is one of the files that define what toolmux runs and how it sandboxes it
    /// ([`ProtectedPaths`]): `.toolmux/`, a registry, LeanSpec's configuration. A write
    /// there would change toolmux's own settings, so no workspace tool writes it.
    #[error(
        "`{path}` is {kind}, which defines what toolmux runs and how it is sandboxed; the \
         workspace tools never write it (a person edits it, or `toolmux config set` does)"
    )]
    Protected {
        /// The path as given.
        path: String,
        /// What it is.
        kind: ProtectedKind,
    },
    /// The path names the project root itself, or a directory, where a file is needed.
    #[error("`{path}` is a directory, not a file")]
    NotAFile {
        /// The path as given.
        path: String,
    },
    /// The tree changed while the path was being opened: a directory on the way became a
    /// symbolic link (or was renamed) between the check and the open. Nothing was opened.
    #[error("`{path}` changed while it was being opened; try again")]
    Changed {
        /// The path as given.
        path: String,
    },
    /// `..` climbs above the root.
    #[error("path `{path}` leaves the project root")]
    Escapes {
        /// The path as given.
        path: String,
    },
    /// A symbolic link on the way leads outside the root (whether or not its target exists).
    #[error("`{link}` is a symbolic link that leads outside the project root")]
    SymlinkEscapes {
        /// The link, as a prefix of the path given.
        link: String,
    },
    /// Symbolic links on the way refer to each other.
    #[error("`{path}` has too many levels of symbolic links")]
    SymlinkLoop {
        /// The path as given.
        path: String,
    },
    /// Nothing is there.
    #[error("`{path}` does not exist")]
    NotFound {
        /// The path as given.
        path: String,
    },
    /// Something is there but cannot be looked at (permissions, say).
    #[error("`{path}` cannot be read: {message}")]
    Io {
        /// The path as given.
        path: String,
        /// What the operating system said.
        message: String,
    },
}

/// A path resolved beneath the root, with the handle the kernel opened it by.
#[derive(Debug)]
pub(crate) struct Resolved {
    /// Absolute, under the root, with no symbolic link or `..` in it.
    pub(crate) path: PathBuf,
    /// The entry itself, opened `O_PATH` (never for reading: a device is not opened by it).
    /// Its metadata is that of what was checked, whatever has happened to the name since.
    pub(crate) handle: File,
}

/// Where a write goes: the file's path, and how to reach its directory beneath the root.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct WriteTarget {
    /// Absolute, under the root, with no symbolic link or `..` in it.
    pub(crate) path: PathBuf,
    /// The deepest directory on the way that exists (absolute, no link).
    dir: PathBuf,
    /// The directories below `dir` that do not exist yet, in order.
    missing: Vec<OsString>,
    /// The file's name in its directory.
    pub(crate) name: OsString,
}

/// The project root: the one directory the workspace tools may see into. Cheap to clone.
#[derive(Clone, Debug)]
pub struct ProjectRoot {
    root: PathBuf,
    /// The root, opened once (`O_PATH`): every open of a tool happens beneath it.
    fd: Arc<OwnedFd>,
    /// toolmux's state directory, canonical, which no tool may read or list.
    state: PathBuf,
    /// What no write may change, shared by every clone (so a reload that changes
    /// `registries` reaches every pack holding the root): see [`ProjectRoot::protect`].
    protected: Arc<RwLock<Arc<ProtectedPaths>>>,
}

impl ProjectRoot {
    /// Canonicalizes `path` (resolving its symbolic links once, here) and checks that it is a
    /// directory. toolmux's state is assumed at `<root>/.toolmux/state`, which is right when
    /// the root is the project directory; otherwise use [`ProjectRoot::with_state_dir`].
    pub fn new(path: impl AsRef<Path>) -> Result<Self, PathError> {
        let path = path.as_ref();
        Self::with_state_dir(path, path.join(STATE_DIR))
    }

    /// Like [`ProjectRoot::new`], with toolmux's state directory given: the project
    /// directory's `.toolmux/state`, which with `"root": ".."` lies deeper inside the root
    /// and through a symbolic `.toolmux` may lie anywhere. It is compared canonical with
    /// canonical, so neither hides it from the guard.
    pub fn with_state_dir(
        path: impl AsRef<Path>,
        state_dir: impl AsRef<Path>,
    ) -> Result<Self, PathError> {
        let path = path.as_ref();
        let shown = path.display().to_string();
        let root_error = |e: io::Error| PathError::Root {
            path: shown.clone(),
            message: e.to_string(),
        };
        let root = std::fs::canonicalize(path).map_err(root_error)?;
        let fd = rustix::fs::open(&root, OFlags::PATH | OFlags::CLOEXEC, Mode::empty())
            .map_err(|e| root_error(e.into()))?;
        let fd = File::from(fd);
        if !fd.metadata().map_err(root_error)?.is_dir() {
            return Err(PathError::RootNotDirectory { path: shown });
        }
        let state_dir = state_dir.as_ref();
        // The state directory is `<project>/.toolmux/state`; its parent is the `.toolmux`
        // to protect until a configuration says more ([`ProjectRoot::protect`]).
        let toolmux_dir = match state_dir.parent() {
            Some(parent) if state_dir.ends_with(STATE_DIR) => parent.to_path_buf(),
            _ => root.join(crate::protected::TOOLMUX_DIR),
        };
        let protected = ProtectedPaths::for_root(&root, &toolmux_dir);
        Ok(Self {
            fd: Arc::new(fd.into()),
            state: canonical_or_nearest(state_dir),
            protected: Arc::new(RwLock::new(Arc::new(protected))),
            root,
        })
    }

    /// The folder `dir` of this root (absolute beneath it, or relative to it) as a root of its
    /// own, resolved as any path is (no link leading out, never toolmux's state), sharing this
    /// root's state directory and protected paths, a later [`ProjectRoot::protect`] included:
    /// what confines a coding agent to its session's folder with the same protection list as
    /// the workspace tools.
    pub fn beneath(&self, dir: &Path) -> Result<Self, PathError> {
        let shown = dir.display().to_string();
        let relative = if dir.is_absolute() {
            dir.strip_prefix(&self.root)
                .map_err(|_| PathError::Escapes {
                    path: shown.clone(),
                })?
        } else {
            dir
        };
        let text = relative.to_str().ok_or_else(|| PathError::Io {
            path: shown.clone(),
            message: "not UTF-8".to_string(),
        })?;
        let resolved = self.resolve_open(text)?;
        let meta = resolved
            .handle
            .metadata()
            .map_err(|e| io_error(&shown, e))?;
        if !meta.is_dir() {
            return Err(PathError::RootNotDirectory { path: shown });
        }
        Ok(Self {
            root: resolved.path,
            fd: Arc::new(resolved.handle.into()),
            state: self.state.clone(),
            protected: Arc::clone(&self.protected),
        })
    }

    /// Puts `protected` in force for this root and every clone of it: from now on no write
    /// through it changes those paths. `toolmux` calls it with
    /// [`ProtectedPaths::for_project`] where it builds the packs, and again when a reload
    /// changes `registries`. Until then the project's `.toolmux/` and LeanSpec's
    /// configuration are protected; a `.toolmux` component is refused always.
    pub fn protect(&self, protected: ProtectedPaths) {
        *self
            .protected
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Arc::new(protected);
    }

    /// The protected paths in force: for a sandbox that must keep its commands off the same
    /// files the write tools refuse.
    pub fn protected(&self) -> Arc<ProtectedPaths> {
        Arc::clone(
            &self
                .protected
                .read()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        )
    }

    /// The canonical root.
    pub fn path(&self) -> &Path {
        &self.root
    }

    /// Resolves a path relative to the root into an absolute path under it with no symbolic
    /// link or `..` left in it, or says why not. `""` means the root itself. The path must
    /// exist.
    ///
    /// The result is checked by the kernel once more (opened beneath the root with no symbolic
    /// link allowed), but a caller that then opens it by name would reopen the race: the tools
    /// open through [`ProjectRoot::open_beneath`] instead.
    pub fn resolve(&self, user_path: &str) -> Result<PathBuf, PathError> {
        self.resolve_open(user_path).map(|resolved| resolved.path)
    }

    /// [`ProjectRoot::resolve`], keeping what the kernel opened (`O_PATH`, beneath the root,
    /// no link on the way) so that the caller looks at exactly that (`fstat` on the handle)
    /// instead of opening the path again.
    pub(crate) fn resolve_open(&self, user_path: &str) -> Result<Resolved, PathError> {
        let components = check_text(user_path)?;
        let resolved = self.walk(user_path, &components)?;
        // The walk has no link left in its result, so the result is its own canonical path
        // and can be compared with the canonical state directory as it is.
        if self.is_state(&resolved) {
            return Err(PathError::State {
                path: user_path.to_string(),
            });
        }
        let handle = self
            .open_beneath(&resolved, OFlags::PATH)
            .map_err(|e| open_error(user_path, e))?;
        Ok(Resolved {
            path: resolved,
            handle,
        })
    }

    /// Opens `abs` (resolved from `user_path`) for reading beneath the root with no link on
    /// the way, non-blocking, and looks at what it opened: a FIFO or device swapped in since
    /// `abs` was resolved is opened without blocking, and its metadata says so. The caller
    /// decides what it reads (a regular file, for every tool today).
    pub fn open_for_reading(
        &self,
        abs: &Path,
        user_path: &str,
    ) -> Result<(File, std::fs::Metadata), PathError> {
        let file = self
            .open_beneath(abs, OFlags::RDONLY | OFlags::NONBLOCK)
            .map_err(|e| open_error(user_path, e))?;
        let meta = file.metadata().map_err(|e| io_error(user_path, e))?;
        Ok((file, meta))
    }

    /// The text of the regular file at `user_path`, resolved and opened beneath the root as
    /// the workspace tools open files (no link out, never toolmux's state, a FIFO or device
    /// refused without blocking), read only up to `max_bytes`. For packs other than the
    /// workspace's that read a file a caller names.
    pub fn read_text(&self, user_path: &str, max_bytes: u64) -> Result<String, PathError> {
        use std::io::Read;
        let refused = |message: String| PathError::Io {
            path: user_path.to_string(),
            message,
        };
        let (file, meta) = self.open_for_reading(&self.resolve(user_path)?, user_path)?;
        if !meta.is_file() {
            return Err(refused("not a regular file".to_string()));
        }
        if meta.len() > max_bytes {
            return Err(refused(format!(
                "larger than {}",
                toolmux_core::human_bytes(max_bytes)
            )));
        }
        let mut text = String::new();
        file.take(max_bytes)
            .read_to_string(&mut text)
            .map_err(|e| refused(e.to_string()))?;
        Ok(text)
    }

    /// Writes `text` to the file at `user_path` as the workspace's write tools write: resolved
    /// beneath the root (never into `.git`, toolmux's state or a protected path such as
    /// `.toolmux/` or a registry, see [`ProjectRoot::protect`]), missing directories made
    /// beneath it, the bytes staged beside the target and renamed over it, an existing file
    /// keeping its permissions. For packs other than the workspace's that write a file a
    /// caller names (an ACP agent's `fs/write_text_file`). Returns the absolute path written.
    pub fn write_text(&self, user_path: &str, text: &str) -> Result<PathBuf, PathError> {
        let target = self.resolve_for_write(user_path)?;
        let failed = |e: io::Error| io_error(user_path, e);
        let dir =
            self.open_parent(&target, user_path, true)?
                .ok_or_else(|| PathError::NotFound {
                    path: user_path.to_string(),
                })?;
        let dir = Arc::new(dir);
        let existing = rustix::fs::statat(
            dir.as_ref(),
            target.name.as_os_str(),
            rustix::fs::AtFlags::SYMLINK_NOFOLLOW,
        );
        let (mode, how) = match existing {
            Ok(stat) if rustix::fs::FileType::from_raw_mode(stat.st_mode).is_dir() => {
                return Err(PathError::NotAFile {
                    path: user_path.to_string(),
                });
            }
            Ok(stat) => (Some(stat.st_mode), Commit::Replace),
            Err(_) => (None, Commit::New),
        };
        stage_in(&dir, &target.name, text.as_bytes(), mode, how)
            .and_then(|mut staged| staged.commit())
            .map_err(failed)?;
        dir.sync_all().map_err(failed)?;
        Ok(target.path)
    }

    /// Opens `abs` (a path [`ProjectRoot::resolve`] returned, or one a walker found under
    /// it) beneath the root's descriptor, with `flags` (plus `O_CLOEXEC` and `O_NOFOLLOW`,
    /// and `O_NOCTTY` unless `O_PATH`). The kernel follows no symbolic link on the way and
    /// never leaves the root, so whatever happened to the tree since the path was checked,
    /// what is opened is under the root at exactly this path, and not in toolmux's state. A
    /// last component that is a link is opened as the link itself with `O_PATH`, and refused
    /// otherwise.
    pub(crate) fn open_beneath(&self, abs: &Path, flags: OFlags) -> io::Result<File> {
        if self.is_state(abs) {
            return Err(io::Error::from(io::ErrorKind::PermissionDenied));
        }
        let rel = abs
            .strip_prefix(&self.root)
            .map_err(|_| io::Error::from(io::ErrorKind::PermissionDenied))?;
        // `openat2` refuses flags that mean nothing with `O_PATH` (`O_NOCTTY` among them).
        let flags = if flags.contains(OFlags::PATH) {
            flags | OFlags::CLOEXEC | OFlags::NOFOLLOW
        } else {
            flags | OFlags::CLOEXEC | OFlags::NOCTTY | OFlags::NOFOLLOW
        };
        let fd = if NO_OPENAT2.load(Ordering::Relaxed) {
            open_by_components(&self.fd, rel, flags)?
        } else {
            match open_with_openat2(&self.fd, rel, flags) {
                // `ENOSYS`: a kernel before 5.6. `EPERM`: a seccomp filter (older container
                // runtimes) that refuses system calls it does not know.
                Err(Errno::NOSYS | Errno::PERM) => {
                    NO_OPENAT2.store(true, Ordering::Relaxed);
                    open_by_components(&self.fd, rel, flags)?
                }
                other => other?,
            }
        };
        Ok(File::from(fd))
    }

    /// The metadata of `abs` itself (a link is not followed), found by opening it beneath the
    /// root; `None` when it cannot be reached that way (it is gone, a directory on the way is
    /// now a link, or it is toolmux's state). The walkers call this for every entry they
    /// report, since they read directories by name and a directory could have been swapped
    /// for a link to somewhere else while they did.
    pub(crate) fn metadata_beneath(&self, abs: &Path) -> Option<Metadata> {
        self.open_beneath(abs, OFlags::PATH)
            .and_then(|f| f.metadata())
            .ok()
    }

    /// Whether `abs` (canonical) is toolmux's state directory or inside it.
    pub(crate) fn is_state(&self, abs: &Path) -> bool {
        abs.starts_with(&self.state)
    }

    /// `abs` relative to the root with `/` separators; `.` for the root itself. A path outside
    /// the root (which the tools never produce) is shown as it is.
    pub fn display(&self, abs: &Path) -> String {
        match abs.strip_prefix(&self.root) {
            Ok(rel) => {
                let parts: Vec<_> = rel
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy())
                    .collect();
                if parts.is_empty() {
                    ".".to_string()
                } else {
                    parts.join("/")
                }
            }
            Err(_) => abs.display().to_string(),
        }
    }

    /// Resolves a path a caller wants to write: an existing file (a link inside the root is
    /// followed to the file it names, as [`ProjectRoot::resolve`] does), or a new one, whose
    /// deepest existing directory is resolved the same way and whose missing directories are
    /// created only when the write is carried out ([`ProjectRoot::open_parent`]). Refused like
    /// a read, and also inside `.git` (any component of that name, a `.git` file too) and
    /// for the root itself, and for every protected path ([`ProjectRoot::protect`]).
    pub(crate) fn resolve_for_write(&self, user_path: &str) -> Result<WriteTarget, PathError> {
        let components = check_text(user_path)?;
        let not_a_file = || PathError::NotAFile {
            path: user_path.to_string(),
        };
        let Some((last, _)) = components.split_last() else {
            return Err(not_a_file());
        };
        let (dir, missing, name) = match self.walk(user_path, &components) {
            Ok(resolved) => {
                // No link is left in `resolved`, so its parent and name are the real ones.
                let (Some(dir), Some(name)) = (resolved.parent(), resolved.file_name()) else {
                    return Err(not_a_file());
                };
                if !resolved.starts_with(&self.root) || resolved == self.root {
                    return Err(not_a_file());
                }
                (dir.to_path_buf(), Vec::new(), name.to_os_string())
            }
            Err(PathError::NotFound { .. }) => {
                // A new file: find the deepest directory on the way that exists.
                let mut found = None;
                for depth in (0..components.len()).rev() {
                    match self.walk(user_path, &components[..depth]) {
                        Ok(dir) => {
                            found = Some((dir, depth));
                            break;
                        }
                        Err(PathError::NotFound { .. }) => continue,
                        Err(e) => return Err(e),
                    }
                }
                let Some((dir, depth)) = found else {
                    return Err(PathError::NotFound {
                        path: user_path.to_string(),
                    });
                };
                let missing: Vec<OsString> = components[depth..components.len() - 1]
                    .iter()
                    .map(OsString::from)
                    .collect();
                (dir, missing, OsString::from(last))
            }
            Err(e) => return Err(e),
        };
        let mut path = dir.clone();
        path.extend(&missing);
        path.push(&name);
        if self.is_state(&path) {
            return Err(PathError::State {
                path: user_path.to_string(),
            });
        }
        let rel = path.strip_prefix(&self.root).map_err(|_| not_a_file())?;
        if rel
            .components()
            .any(|c| c.as_os_str().eq_ignore_ascii_case(".git"))
        {
            return Err(PathError::Git {
                path: user_path.to_string(),
            });
        }
        if let Some(kind) = self.protected().refusal(&self.root, &path, rel) {
            return Err(PathError::Protected {
                path: user_path.to_string(),
                kind,
            });
        }
        Ok(WriteTarget {
            path,
            dir,
            missing,
            name,
        })
    }

    /// Opens the directory `target` goes in, beneath the root with no link on the way, for
    /// the writes of [`write_in`]: with `create`, the missing directories are made one at a
    /// time, each beneath the descriptor of the one above (`mkdirat`, then `openat` with
    /// `O_NOFOLLOW`), so a directory swapped for a link meanwhile makes the open fail rather
    /// than lead outside. Without `create`, a target with missing directories gives `None`.
    pub(crate) fn open_parent(
        &self,
        target: &WriteTarget,
        user_path: &str,
        create: bool,
    ) -> Result<Option<File>, PathError> {
        let mut dir = self
            .open_beneath(&target.dir, OFlags::RDONLY | OFlags::DIRECTORY)
            .map_err(|e| match Errno::from_io_error(&e) {
                // The walk found a directory here; `ENOTDIR` is what a link put in its place
                // gives with `O_DIRECTORY | O_NOFOLLOW`.
                Some(Errno::NOTDIR) => PathError::Changed {
                    path: user_path.to_string(),
                },
                _ => open_error(user_path, e),
            })?;
        if target.missing.is_empty() {
            return Ok(Some(dir));
        }
        if !create {
            return Ok(None);
        }
        for name in &target.missing {
            match rustix::fs::mkdirat(&dir, name.as_os_str(), Mode::from_raw_mode(0o777)) {
                // Made by someone else meanwhile: use it if it is a directory, below.
                Ok(()) | Err(Errno::EXIST) => {}
                Err(e) => return Err(io_error(user_path, e.into())),
            }
            let next = rustix::fs::openat(
                &dir,
                name.as_os_str(),
                OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::empty(),
            )
            .map_err(|e| match e {
                // A link or a file where the directory was made: the tree changed.
                Errno::LOOP | Errno::NOTDIR => PathError::Changed {
                    path: user_path.to_string(),
                },
                other => io_error(user_path, other.into()),
            })?;
            dir = File::from(next);
        }
        Ok(Some(dir))
    }

    /// Follows `components` from the root, one at a time, resolving symbolic links by hand so
    /// that nothing outside the root is ever touched.
    fn walk(&self, user_path: &str, components: &[String]) -> Result<PathBuf, PathError> {
        // Each pending component remembers which of the caller's components it came from, so
        // that a link is reported by the name the caller used.
        let mut pending: VecDeque<(OsString, usize)> = components
            .iter()
            .enumerate()
            .map(|(i, c)| (OsString::from(c), i))
            .collect();
        let mut resolved = self.root.clone();
        let mut depth = 0usize;
        let mut hops = 0usize;
        let link_name = |origin: usize| components[..=origin].join("/");

        while let Some((name, origin)) = pending.pop_front() {
            if name == "." || name.is_empty() {
                continue;
            }
            if name == ".." {
                // Only a link target can produce `..` here: the caller's own were removed by
                // `check_text`. Climbing above the root means the link leads outside.
                if depth == 0 {
                    return Err(PathError::SymlinkEscapes {
                        link: link_name(origin),
                    });
                }
                resolved.pop();
                depth -= 1;
                continue;
            }
            let candidate = resolved.join(&name);
            let meta = match std::fs::symlink_metadata(&candidate) {
                Ok(meta) => meta,
                Err(e) => return Err(io_error(user_path, e)),
            };
            if meta.file_type().is_symlink() {
                hops += 1;
                if hops > MAX_SYMLINK_HOPS {
                    return Err(PathError::SymlinkLoop {
                        path: user_path.to_string(),
                    });
                }
                let target = std::fs::read_link(&candidate).map_err(|e| {
                    // `EINVAL`: no longer a link — swapped back since the look above.
                    if Errno::from_io_error(&e) == Some(Errno::INVAL) {
                        PathError::Changed {
                            path: user_path.to_string(),
                        }
                    } else {
                        io_error(user_path, e)
                    }
                })?;
                let rest = if target.is_absolute() {
                    // An absolute target counts as inside only when it names the canonical
                    // root textually; anything else is outside, and is not looked at.
                    let Ok(rest) = target.strip_prefix(&self.root) else {
                        return Err(PathError::SymlinkEscapes {
                            link: link_name(origin),
                        });
                    };
                    resolved = self.root.clone();
                    depth = 0;
                    rest.to_path_buf()
                } else {
                    target
                };
                let mut expansion = Vec::new();
                for part in rest.components() {
                    match part {
                        Component::Normal(s) => expansion.push((s.to_os_string(), origin)),
                        Component::ParentDir => expansion.push(("..".into(), origin)),
                        Component::CurDir => {}
                        Component::RootDir | Component::Prefix(_) => {
                            return Err(PathError::SymlinkEscapes {
                                link: link_name(origin),
                            });
                        }
                    }
                }
                for item in expansion.into_iter().rev() {
                    pending.push_front(item);
                }
                continue;
            }
            if !meta.is_dir() && !pending.is_empty() {
                // `file.txt/x`: a file cannot have children.
                return Err(PathError::NotFound {
                    path: user_path.to_string(),
                });
            }
            resolved = candidate;
            depth += 1;
        }
        Ok(resolved)
    }
}

/// Removes the file `name` of `dir` (never a directory, never through a link: `unlinkat`
/// removes the entry itself).
pub(crate) fn unlink_in(dir: &File, name: &OsStr) -> io::Result<()> {
    rustix::fs::unlinkat(dir, name, rustix::fs::AtFlags::empty()).map_err(Into::into)
}

/// Opens the file `name` of `dir` for reading, refusing a link and never blocking on a FIFO.
pub(crate) fn open_in(dir: &File, name: &OsStr) -> io::Result<File> {
    rustix::fs::openat(
        dir,
        name,
        OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOFOLLOW | OFlags::NOCTTY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map(File::from)
    .map_err(Into::into)
}

/// `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)`: the kernel
/// refuses any symbolic link and any step above `root`, atomically with the open.
fn open_with_openat2(root: &OwnedFd, rel: &Path, flags: OFlags) -> Result<OwnedFd, Errno> {
    let rel = if rel.as_os_str().is_empty() {
        Path::new(".")
    } else {
        rel
    };
    let resolve = ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS;
    let mut tries = 0;
    loop {
        match rustix::fs::openat2(root, rel, flags, Mode::empty(), resolve) {
            // The kernel could not rule out that a concurrent rename moved the walk; it is
            // safe to ask again.
            Err(Errno::AGAIN) if tries < OPEN_RETRIES => tries += 1,
            other => return other,
        }
    }
}

/// Without `openat2`: one `openat(O_NOFOLLOW)` per component, each relative to the directory
/// descriptor the previous one returned. Every step names one entry of a directory already
/// open beneath the root and refuses a link, so the result is as confined as `openat2`'s,
/// at the cost of a system call per component.
fn open_by_components(root: &OwnedFd, rel: &Path, flags: OFlags) -> Result<OwnedFd, Errno> {
    let names: Vec<&std::ffi::OsStr> = rel
        .components()
        .map(|c| match c {
            Component::Normal(name) => Ok(name),
            // A path from `resolve` or a walker under the root has only normal components.
            _ => Err(Errno::XDEV),
        })
        .collect::<Result<_, _>>()?;
    let Some((last, dirs)) = names.split_last() else {
        return rustix::fs::openat(root, ".", flags, Mode::empty());
    };
    let mut dir: Option<OwnedFd> = None;
    for name in dirs {
        let at = dir.as_ref().unwrap_or(root);
        // `O_PATH | O_NOFOLLOW` would open a link itself; `O_DIRECTORY` then refuses it.
        let next = rustix::fs::openat(
            at,
            *name,
            OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| if e == Errno::NOTDIR { Errno::LOOP } else { e })?;
        dir = Some(next);
    }
    rustix::fs::openat(dir.as_ref().unwrap_or(root), *last, flags, Mode::empty())
}

/// `path` canonicalized; when it does not exist (yet), its nearest existing ancestor
/// canonicalized with the rest appended, so that a state directory made after the pack is
/// still recognised as long as the links above it stay as they are.
pub(crate) fn canonical_or_nearest(path: &Path) -> PathBuf {
    let mut rest = Vec::new();
    let mut cursor = path;
    loop {
        if let Ok(real) = std::fs::canonicalize(cursor) {
            return rest.iter().rev().fold(real, |acc, part| acc.join(part));
        }
        match (cursor.parent(), cursor.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_os_string());
                cursor = parent;
            }
            _ => return path.to_path_buf(),
        }
    }
}

/// What a failed open beneath the root means for the caller.
pub(crate) fn open_error(user_path: &str, e: io::Error) -> PathError {
    match Errno::from_io_error(&e) {
        // A link where the walk saw none, or a step that would leave the root: the tree
        // changed since the walk.
        Some(Errno::LOOP | Errno::XDEV | Errno::AGAIN) => PathError::Changed {
            path: user_path.to_string(),
        },
        _ => io_error(user_path, e),
    }
}

/// Checks the text of a path and splits it into normal components with `.` and `..` applied.
fn check_text(user_path: &str) -> Result<Vec<String>, PathError> {
    let path = || user_path.to_string();
    if user_path.contains('\0') {
        return Err(PathError::Nul);
    }
    if user_path.len() > MAX_PATH_BYTES {
        return Err(PathError::TooLong {
            len: user_path.len(),
        });
    }
    if user_path.starts_with('~') {
        return Err(PathError::Tilde { path: path() });
    }
    if is_absolute(user_path) {
        return Err(PathError::Absolute { path: path() });
    }
    if user_path.contains('\\') {
        return Err(PathError::Backslash { path: path() });
    }
    if has_percent_escape(user_path) {
        return Err(PathError::PercentEncoded { path: path() });
    }
    let mut components: Vec<String> = Vec::new();
    for part in user_path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if components.pop().is_none() {
                    return Err(PathError::Escapes { path: path() });
                }
            }
            name => components.push(name.to_string()),
        }
    }
    Ok(components)
}

/// `/x`, `\x`, and Windows drive paths (`C:`, `C:\x`, `C:/x`).
fn is_absolute(path: &str) -> bool {
    let bytes = path.as_bytes();
    if matches!(bytes.first(), Some(b'/' | b'\\')) {
        return true;
    }
    bytes.len() >= 2
        && bytes[0].is_ascii_alphabetic()
        && bytes[1] == b':'
        && matches!(bytes.get(2), None | Some(b'/' | b'\\'))
}

fn has_percent_escape(path: &str) -> bool {
    path.as_bytes()
        .windows(3)
        .any(|w| w[0] == b'%' && w[1].is_ascii_hexdigit() && w[2].is_ascii_hexdigit())
}

fn io_error(user_path: &str, e: io::Error) -> PathError {
    match e.kind() {
        io::ErrorKind::NotFound | io::ErrorKind::NotADirectory | io::ErrorKind::InvalidFilename => {
            PathError::NotFound {
                path: user_path.to_string(),
            }
        }
        _ => PathError::Io {
            path: user_path.to_string(),
            message: e.to_string(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dot_dot_that_stays_inside_is_normalised_away() {
        assert_eq!(check_text("a/../b/./c//").unwrap(), ["b", "c"]);
        assert_eq!(check_text("").unwrap(), Vec::<String>::new());
        assert_eq!(check_text("a/..").unwrap(), Vec::<String>::new());
    }

    #[test]
    fn dot_dot_above_the_root_is_refused_before_touching_the_disk() {
        assert_eq!(
            check_text("a/../../x").unwrap_err().to_string(),
            "path `a/../../x` leaves the project root"
        );
    }

    #[test]
    fn windows_drive_paths_count_as_absolute_but_a_colon_name_does_not() {
        assert!(is_absolute("C:"));
        assert!(is_absolute("c:/x"));
        assert!(is_absolute("C:\\x"));
        assert!(!is_absolute("C:x"));
        assert!(!is_absolute("a:b"));
    }

    #[test]
    fn only_a_percent_with_two_hex_digits_is_an_escape() {
        assert!(has_percent_escape("%2e"));
        assert!(has_percent_escape("a%2Fb"));
        assert!(!has_percent_escape("100%"));
        assert!(!has_percent_escape("50%off"));
    }

    #[test]
    fn d6_the_fallback_open_refuses_a_link_anywhere_on_the_way() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(base.join("root/a/b")).unwrap();
        std::fs::write(base.join("root/a/b/f.txt"), "inside").unwrap();
        std::fs::create_dir_all(base.join("outside")).unwrap();
        std::fs::write(base.join("outside/f.txt"), "outside").unwrap();
        std::os::unix::fs::symlink(base.join("outside"), base.join("root/a/out")).unwrap();
        std::os::unix::fs::symlink("b/f.txt", base.join("root/a/in")).unwrap();
        let root = ProjectRoot::new(base.join("root")).unwrap();
        let read = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let fd = open_by_components(&root.fd, Path::new("a/b/f.txt"), read).unwrap();
        assert_eq!(std::io::read_to_string(File::from(fd)).unwrap(), "inside");
        // A link as a directory on the way, or as the file itself, is refused: even one that
        // stays inside (the walk resolves those before anything is opened).
        for rel in ["a/out/f.txt", "a/in"] {
            assert_eq!(
                open_by_components(&root.fd, Path::new(rel), read).err(),
                Some(Errno::LOOP),
                "{rel}"
            );
        }
        // `O_PATH | O_NOFOLLOW` opens a final link itself, as `openat2` does.
        let link = OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let fd = open_by_components(&root.fd, Path::new("a/out"), link).unwrap();
        assert!(File::from(fd).metadata().unwrap().file_type().is_symlink());
        assert_eq!(
            open_by_components(&root.fd, Path::new("../outside/f.txt"), read).err(),
            Some(Errno::XDEV)
        );
        // And `openat2` agrees on all of it.
        assert_eq!(
            open_with_openat2(&root.fd, Path::new("a/out/f.txt"), read).err(),
            Some(Errno::LOOP)
        );
        assert!(open_with_openat2(&root.fd, Path::new("a/b/f.txt"), read).is_ok());
    }

    #[test]
    fn d6_an_open_that_meets_a_link_or_leaves_the_root_says_the_path_changed() {
        for errno in [Errno::LOOP, Errno::XDEV, Errno::AGAIN] {
            let error = open_error("race/d/f.txt", errno.into());
            assert_eq!(
                error,
                PathError::Changed {
                    path: "race/d/f.txt".to_string()
                }
            );
            assert_eq!(
                error.to_string(),
                "`race/d/f.txt` changed while it was being opened; try again"
            );
        }
        assert_eq!(
            open_error("gone", Errno::NOENT.into()).to_string(),
            "`gone` does not exist"
        );
    }

    #[test]
    fn resolve_open_keeps_the_handle_of_what_it_checked() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("d")).unwrap();
        std::fs::write(dir.path().join("d/f.txt"), "12345").unwrap();
        let root = ProjectRoot::new(dir.path()).unwrap();
        let resolved = root.resolve_open("d/f.txt").unwrap();
        assert_eq!(resolved.path, root.path().join("d/f.txt"));
        assert_eq!(resolved.handle.metadata().unwrap().len(), 5);
        let resolved = root.resolve_open("d/..").unwrap();
        assert_eq!(resolved.path, root.path());
        assert!(resolved.handle.metadata().unwrap().is_dir());
    }

    #[test]
    fn display_is_relative_with_forward_slashes() {
        let dir = tempfile::tempdir().unwrap();
        let root = ProjectRoot::new(dir.path()).unwrap();
        assert_eq!(root.display(root.path()), ".");
        assert_eq!(root.display(&root.path().join("a").join("b.rs")), "a/b.rs");
    }
}
