//! Confinement: turning a path a model wrote into a file under the project root, or a refusal.
//!
//! The resolver never asks the operating system about anything outside the root. It checks the
//! text first (no NUL, `~`, absolute path, backslash or percent-encoding; `..` may not climb
//! above the root), then walks the path one component at a time from the canonical root with
//! `symlink_metadata`, following symbolic links itself. A link whose target would leave the root
//! is refused the moment that is known, before anything outside is looked at, so a link to a
//! missing file outside gives exactly the same answer as a link to an existing one.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::io;
use std::path::{Component, Path, PathBuf};

/// The longest path accepted, in bytes (Linux's `PATH_MAX`).
const MAX_PATH_BYTES: usize = 4096;

/// How many symbolic links one resolution may follow (Linux's own limit).
const MAX_SYMLINK_HOPS: usize = 40;

/// toolmux's machine state under the project root, hidden from every workspace tool.
pub(crate) const STATE_DIR: &str = ".toolmux/state";

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

/// The project root: the one directory the workspace tools may see into. Cheap to clone.
#[derive(Clone, Debug)]
pub struct ProjectRoot {
    root: PathBuf,
}

impl ProjectRoot {
    /// Canonicalizes `path` (resolving its symbolic links once, here) and checks that it is a
    /// directory.
    pub fn new(path: impl AsRef<Path>) -> Result<Self, PathError> {
        let path = path.as_ref();
        let shown = path.display().to_string();
        let root = std::fs::canonicalize(path).map_err(|e| PathError::Root {
            path: shown.clone(),
            message: e.to_string(),
        })?;
        if !root.is_dir() {
            return Err(PathError::RootNotDirectory { path: shown });
        }
        Ok(Self { root })
    }

    /// The canonical root.
    pub fn path(&self) -> &Path {
        &self.root
    }

    /// Resolves a path relative to the root into an absolute path under it with no symbolic
    /// link or `..` left in it, or says why not. `""` means the root itself. The path must
    /// exist.
    pub fn resolve(&self, user_path: &str) -> Result<PathBuf, PathError> {
        let components = check_text(user_path)?;
        let resolved = self.walk(user_path, &components)?;
        // Belt and braces: the walk above already proved the result is under the root, but a
        // concurrent rename could have changed the tree since; ask the OS once more.
        match std::fs::canonicalize(&resolved) {
            Ok(real) if real.starts_with(self.root.join(STATE_DIR)) => Err(PathError::State {
                path: user_path.to_string(),
            }),
            Ok(real) if real.starts_with(&self.root) => Ok(resolved),
            Ok(_) => Err(PathError::SymlinkEscapes {
                link: components.join("/"),
            }),
            Err(e) => Err(io_error(user_path, e)),
        }
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
                let target = std::fs::read_link(&candidate).map_err(|e| io_error(user_path, e))?;
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
    fn display_is_relative_with_forward_slashes() {
        let dir = tempfile::tempdir().unwrap();
        let root = ProjectRoot::new(dir.path()).unwrap();
        assert_eq!(root.display(root.path()), ".");
        assert_eq!(root.display(&root.path().join("a").join("b.rs")), "a/b.rs");
    }
}
