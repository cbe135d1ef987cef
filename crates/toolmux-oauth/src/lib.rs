//! toolmux as an OAuth 2.1 client of the HTTP and SSE MCP servers it sits in front of: signing
//! in to a server that answers 401, and keeping its tokens.
//!
//! The protocol is rmcp's (`rmcp::transport::auth`): discovery as the MCP authorization spec
//! orders it (protected-resource metadata from the 401's `resource_metadata` or the well-known
//! paths, then RFC 8414 and OpenID Connect discovery), the client identity in the spec's order
//! (pre-registered, Client ID Metadata Document, dynamic registration), PKCE S256, scope
//! selection, the RFC 8707 `resource` parameter, refresh, and client credentials. This crate
//! adds what rmcp leaves to its caller:
//!
//! - where tokens live: [`SecretCredentialStore`], rmcp's `CredentialStore` over the project's
//!   secret store (`oauth/<server>/credentials`), so they survive a restart and never reach the
//!   config file;
//! - the person's part of the flow: a loopback redirect listener on an ephemeral port and the
//!   URL to open ([`start_login`], [`PendingLogin`]);
//! - whether a server needs sign-in, remembered across processes with the challenge that said
//!   so ([`SignInState`], a small file under `.toolmux/state/oauth/`, no secret in it), so that
//!   `toolmux mcp list`, the REST API and a step-up sign-in read the same answer;
//! - the manager a connection signs its requests with ([`connection_manager`]).
//!
//! No token is ever logged, printed or put in an error: rmcp's types redact them in `Debug`,
//! and the errors here carry rmcp's messages, which name endpoints and OAuth error codes only.

mod login;
mod state;
mod store;
mod transport;

use std::path::{Path, PathBuf};

pub use login::{PendingLogin, start_login};
pub use rmcp::transport::auth::{AuthClient, AuthorizationManager};
pub use state::{SignInState, needs_sign_in, record_challenge, signed_in};
pub use store::{SecretCredentialStore, logout};
pub use toolmux_config::{OAuthGrant, OAuthSettings};
pub use transport::connection_manager;

/// One server to sign in to.
#[derive(Clone, Debug)]
pub struct Target {
    /// The project whose secret store and state keep its tokens.
    pub project_dir: PathBuf,
    /// The server's configured name.
    pub server: String,
    /// Its MCP endpoint (the protected resource).
    pub url: String,
    /// What its configuration says about signing in.
    pub settings: OAuthSettings,
}

impl Target {
    /// A target for the server `server` of the project in `project_dir`.
    pub fn new(
        project_dir: &Path,
        server: &str,
        url: &str,
        settings: Option<&OAuthSettings>,
    ) -> Self {
        Self {
            project_dir: project_dir.to_path_buf(),
            server: server.to_string(),
            url: url.to_string(),
            settings: settings.cloned().unwrap_or_default(),
        }
    }
}

/// Why signing in, or keeping a server's tokens, failed.
#[derive(Debug, thiserror::Error)]
pub enum OAuthError {
    /// The OAuth exchange itself failed (discovery, registration, token request).
    #[error("MCP server `{server}`: sign-in failed: {message}")]
    Flow {
        /// The server's name.
        server: String,
        /// rmcp's error, which names endpoints and OAuth error codes, never a token — and
        /// repeats what the authorization server said (its `error_description`), so it is kept
        /// as [`printable`] text, not as the error itself that a report would print whole.
        message: String,
    },
    /// The secret store could not be read or written.
    #[error("MCP server `{server}`: cannot keep its tokens: {message}")]
    Store {
        /// The server's name.
        server: String,
        /// What went wrong.
        message: String,
    },
    /// The redirect listener could not be opened, or the redirect never came.
    #[error("MCP server `{server}`: {message}")]
    Redirect {
        /// The server's name.
        server: String,
        /// What went wrong.
        message: String,
    },
    /// The authorization server sent the person back with an error (RFC 6749 §4.1.2.1): they
    /// declined, or it refused the request.
    #[error("MCP server `{server}`: the authorization server refused the sign-in: {error}{}",
        .description.as_deref().map(|d| format!(" ({d})")).unwrap_or_default())]
    Refused {
        /// The server's name.
        server: String,
        /// Its `error` code (`access_denied`, `invalid_scope`, ...).
        error: String,
        /// Its `error_description`, cleaned of control characters and shortened.
        description: Option<String>,
    },
    /// The server does not ask for OAuth at all.
    #[error("MCP server `{server}` did not ask for sign-in (it answered without a 401)")]
    NotProtected {
        /// The server's name.
        server: String,
    },
    /// The server refuses toolmux (a 401) but names no authorization server (no
    /// protected-resource, authorization-server or OpenID metadata), and the endpoints guessed
    /// from its URL (2025-03-26's fallback) failed too: most likely it offers no OAuth at all
    /// (another toolmux, a server that takes a key), which says more than the answer of
    /// whatever serves those guessed paths.
    #[error(
        "MCP server `{server}` offers no OAuth sign-in: {url} publishes no protected-resource \
         or authorization-server metadata, and the endpoints guessed from its URL failed \
         ({cause}); if it takes a key, set it in the server's `headers`"
    )]
    NoAuthorizationServer {
        /// The server's name.
        server: String,
        /// Its URL.
        url: String,
        /// How the guessed endpoints failed (made printable).
        cause: String,
    },
}

impl OAuthError {
    pub(crate) fn no_authorization_server(
        server: &str,
        url: &str,
        source: rmcp::transport::auth::AuthError,
    ) -> Self {
        Self::NoAuthorizationServer {
            server: server.to_string(),
            url: url.to_string(),
            cause: printable(&source.to_string(), MAX_ERROR_CHARS),
        }
    }

    fn flow(server: &str, source: rmcp::transport::auth::AuthError) -> Self {
        Self::Flow {
            server: server.to_string(),
            message: printable(&source.to_string(), MAX_ERROR_CHARS),
        }
    }
}

/// The most of an OAuth error (rmcp's words around what the authorization server said) kept
/// for a terminal or a log.
const MAX_ERROR_CHARS: usize = 1000;

/// Text an authorization server (or an MCP server) had a say in, made fit for a terminal or a
/// log: no control characters (no escape sequence reaches the terminal, no line break forges
/// a log line), at most `max_chars` of it, and `…` when more was cut.
pub fn printable(text: &str, max_chars: usize) -> String {
    let mut clean: String = text
        .chars()
        .filter(|c| !c.is_control())
        .take(max_chars)
        .collect();
    if text.chars().count() > max_chars {
        clean.push('…');
    }
    clean
}
