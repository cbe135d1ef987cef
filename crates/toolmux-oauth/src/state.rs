//! Whether a server needs sign-in, remembered across processes: a server answered 401 (or 403
//! `insufficient_scope`) and refreshing could not help. Kept in
//! `.toolmux/state/oauth/<server>.json` with the `WWW-Authenticate` challenge that said so —
//! no secret: a challenge names the metadata URL and the scopes, never a token — so that
//! `toolmux mcp list`, the REST API and the next `toolmux mcp login` (which asks for the scopes
//! a step-up challenge named) all read the same answer.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// What is remembered about one server's sign-in.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SignInState {
    /// The server refused toolmux's requests and a person must sign in.
    pub needs_sign_in: bool,
    /// The `WWW-Authenticate` header of that refusal, when it had one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub challenge: Option<String>,
}

fn path(project_dir: &Path, server: &str) -> PathBuf {
    let mut file = String::new();
    for byte in server.bytes() {
        if byte.is_ascii_alphanumeric() || byte == b'-' {
            file.push(char::from(byte));
        } else {
            file.push_str(&format!("_{byte:02X}"));
        }
    }
    toolmux_config::state_dir(project_dir)
        .join("oauth")
        .join(format!("{file}.json"))
}

/// What is remembered about `server` (nothing: signed in, or never refused).
pub fn read(project_dir: &Path, server: &str) -> SignInState {
    std::fs::read(path(project_dir, server))
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or_default()
}

/// Whether `server` needs a person to sign in (`toolmux mcp login`) before it can be used.
pub fn needs_sign_in(project_dir: &Path, server: &str) -> bool {
    read(project_dir, server).needs_sign_in
}

/// Remembers that `server` refused toolmux with `challenge` (its `WWW-Authenticate` header).
pub fn record_challenge(project_dir: &Path, server: &str, challenge: Option<&str>) {
    let state = SignInState {
        needs_sign_in: true,
        challenge: challenge.map(str::to_string),
    };
    write(project_dir, server, &state);
}

/// Forgets that `server` needed sign-in: it has tokens now.
pub fn signed_in(project_dir: &Path, server: &str) {
    forget(project_dir, server);
}

pub(crate) fn forget(project_dir: &Path, server: &str) {
    let _ = std::fs::remove_file(path(project_dir, server));
}

fn write(project_dir: &Path, server: &str, state: &SignInState) {
    let file = path(project_dir, server);
    if read(project_dir, server) == *state {
        return;
    }
    let written = file
        .parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|()| serde_json::to_vec_pretty(state).map_err(std::io::Error::other))
        .and_then(|bytes| toolmux_files::write_atomic(&file, &bytes));
    // The state is a convenience for what is shown; a server that cannot record it still fails
    // its calls with the sign-in error.
    if let Err(e) = written {
        tracing::warn!(server, error = %e, "cannot record that the server needs sign-in");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recorded_challenge_is_read_back_until_signed_in() {
        let dir = tempfile::tempdir().expect("tempdir");
        assert!(!needs_sign_in(dir.path(), "gh"));
        record_challenge(dir.path(), "gh", Some(r#"Bearer scope="a b""#));
        let state = read(dir.path(), "gh");
        assert!(state.needs_sign_in);
        assert_eq!(state.challenge.as_deref(), Some(r#"Bearer scope="a b""#));
        signed_in(dir.path(), "gh");
        assert!(!needs_sign_in(dir.path(), "gh"));
    }
}
