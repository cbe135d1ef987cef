//! The per-project local token: `.toolmux/state/local-token`, 32 random bytes in base64url,
//! readable by its owner only. `serve` makes it on loopback when no key is configured and reuses
//! it across restarts, so a bookmarked URL and a local MCP client's configuration keep working.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use crate::auth::random_token;

/// The token file's name under the project's state directory.
pub const LOCAL_TOKEN_FILE: &str = "local-token";

/// Why the local token could not be read or made.
#[derive(Debug, thiserror::Error)]
pub enum LocalTokenError {
    #[error("cannot read or write the local token `{path}`: {source}")]
    Io { path: PathBuf, source: io::Error },
    #[error("`{path}` is not a regular file; remove it so that toolmux can make the local token")]
    NotAFile { path: PathBuf },
    #[error("cannot make a random token: {0}")]
    Random(#[from] getrandom::Error),
}

/// What [`load_or_create`] found.
#[derive(Debug)]
pub struct LocalToken {
    pub token: String,
    /// Set when a file others could read was replaced by a new token (the old one may have
    /// been read, so it is not reused): what to tell the person.
    pub replaced: Option<String>,
}

/// The project's local token in `state_dir`, made on first use. A file readable by group or
/// others is never used: it is replaced by a new token with mode 0600.
pub fn load_or_create(state_dir: &Path) -> Result<LocalToken, LocalTokenError> {
    let path = state_dir.join(LOCAL_TOKEN_FILE);
    let io = |source| LocalTokenError::Io {
        path: path.clone(),
        source,
    };
    fs::create_dir_all(state_dir).map_err(io)?;
    let mut replaced = None;
    match fs::symlink_metadata(&path) {
        Ok(meta) if !meta.file_type().is_file() => {
            return Err(LocalTokenError::NotAFile { path });
        }
        Ok(meta) => {
            if let Some(mode) = loose_mode(&meta) {
                replaced = Some(format!(
                    "`{}` was readable by others (mode {mode:o}); it was replaced by a new token \
                     with mode 600",
                    path.display()
                ));
                fs::remove_file(&path).map_err(io)?;
            } else {
                let text = fs::read_to_string(&path).map_err(io)?;
                let token = text.trim();
                if is_well_formed(token) {
                    return Ok(LocalToken {
                        token: token.to_string(),
                        replaced: None,
                    });
                }
                replaced = Some(format!(
                    "`{}` did not hold a token; it was replaced by a new one",
                    path.display()
                ));
                fs::remove_file(&path).map_err(io)?;
            }
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(io(e)),
    }
    let token = random_token()?;
    match write_new_private(&path, &token) {
        Ok(()) => Ok(LocalToken { token, replaced }),
        // Another `serve` in the same project made it first: use theirs.
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            let text = fs::read_to_string(&path).map_err(io)?;
            Ok(LocalToken {
                token: text.trim().to_string(),
                replaced,
            })
        }
        Err(e) => Err(io(e)),
    }
}

/// The token is what [`random_token`] makes: 43 base64url characters.
fn is_well_formed(token: &str) -> bool {
    token.len() == 43
        && token
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// The file's mode when group or others have any access to it.
#[cfg(unix)]
fn loose_mode(meta: &fs::Metadata) -> Option<u32> {
    use std::os::unix::fs::PermissionsExt;
    let mode = meta.permissions().mode() & 0o777;
    (mode & 0o077 != 0).then_some(mode)
}

#[cfg(not(unix))]
fn loose_mode(_meta: &fs::Metadata) -> Option<u32> {
    None
}

/// Writes `token` to `path`, which must not exist: toolmux's one atomic writer, with the file
/// private from the moment it is created; fails rather than replace a file that appeared
/// meanwhile.
fn write_new_private(path: &Path, token: &str) -> io::Result<()> {
    toolmux_files::write_new_private(path, format!("{token}\n").as_bytes())
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn mode(path: &Path) -> u32 {
        fs::metadata(path).expect("stat").permissions().mode() & 0o777
    }

    #[test]
    fn the_token_is_made_private_and_reused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let first = load_or_create(dir.path()).expect("made");
        assert!(is_well_formed(&first.token), "{}", first.token);
        assert_eq!(mode(&dir.path().join(LOCAL_TOKEN_FILE)), 0o600);
        let again = load_or_create(dir.path()).expect("read");
        assert_eq!(again.token, first.token);
        assert!(again.replaced.is_none());
    }

    #[test]
    fn a_token_others_could_read_is_replaced() {
        let dir = tempfile::tempdir().expect("tempdir");
        let first = load_or_create(dir.path()).expect("made");
        let path = dir.path().join(LOCAL_TOKEN_FILE);
        fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).expect("chmod");
        let next = load_or_create(dir.path()).expect("replaced");
        assert_ne!(next.token, first.token);
        assert!(next.replaced.is_some());
        assert_eq!(mode(&path), 0o600);
    }
}
