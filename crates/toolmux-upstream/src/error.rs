//! The crate's one error type. Every message names the server it is about, because a person
//! reading it may have a dozen configured.

use std::time::Duration;

/// The most of one message a server had a say in that an error keeps.
const MAX_SERVER_TEXT_CHARS: usize = 1000;

/// Text a server had a say in — its HTTP answer, its stderr, its JSON-RPC error, what its
/// authorization server answered rmcp's token refresh — made fit for where an error goes:
/// the server's `last_error`, the logs, the REST API's server list and `mcp list`. Printable
/// (no escape sequence, no line break) and at most [`MAX_SERVER_TEXT_CHARS`] characters; every
/// message of [`UpstreamError`] that can carry such text is made through it.
pub(crate) fn server_text(text: &str) -> String {
    toolmux_oauth::printable(text, MAX_SERVER_TEXT_CHARS)
}

impl UpstreamError {
    /// [`UpstreamError::Start`], its message through [`server_text`].
    pub(crate) fn start(server: &str, message: &str) -> Self {
        Self::Start {
            server: server.to_string(),
            message: server_text(message),
        }
    }

    /// [`UpstreamError::Protocol`], its message through [`server_text`].
    pub(crate) fn protocol(server: &str, message: &str) -> Self {
        Self::Protocol {
            server: server.to_string(),
            message: server_text(message),
        }
    }

    /// [`UpstreamError::Answered`], its message through [`server_text`].
    pub(crate) fn answered(server: &str, code: i32, message: &str) -> Self {
        Self::Answered {
            server: server.to_string(),
            code,
            message: server_text(message),
        }
    }
}

/// Why talking to an upstream server failed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum UpstreamError {
    /// The process could not be started or the connection could not be opened.
    #[error("MCP server `{server}`: cannot start: {message}")]
    Start {
        /// The server's name.
        server: String,
        /// What went wrong.
        message: String,
    },
    /// The MCP handshake or a request broke the protocol or the connection.
    #[error("MCP server `{server}`: {message}")]
    Protocol {
        /// The server's name.
        server: String,
        /// What went wrong.
        message: String,
    },
    /// A step ran past its limit.
    #[error("MCP server `{server}`: {what} timed out after {}ms", after.as_millis())]
    Timeout {
        /// The server's name.
        server: String,
        /// Which step.
        what: &'static str,
        /// The limit.
        after: Duration,
    },
    /// The server failed to start several times in a row and is not tried again until its
    /// backoff window passes.
    #[error(
        "MCP server `{server}` is unavailable (service unavailable) after {attempts} failed \
         starts; last error: {last_error}; next try in {}s",
        retry_in.as_secs().max(1)
    )]
    Unavailable {
        /// The server's name.
        server: String,
        /// Failed starts in a row.
        attempts: u32,
        /// The last failure.
        last_error: String,
        /// How long until a call tries to start it again.
        retry_in: Duration,
    },
    /// The server answered a relayed request with a JSON-RPC error.
    #[error("MCP server `{server}` answered with error {code}: {message}")]
    Answered {
        /// The server's name.
        server: String,
        /// Its error code.
        code: i32,
        /// Its message.
        message: String,
    },
    /// No configured server offers what was asked for.
    #[error("{0}")]
    NotFound(String),
    /// The server's configuration was changed or removed while this request was on its way;
    /// the request went to the old one, which toolmux no longer starts.
    #[error(
        "MCP server `{server}` was reconfigured or removed while this request was on its way; \
         call again"
    )]
    Retired {
        /// The server's name.
        server: String,
    },
    /// The server refused toolmux for want of sign-in (401, or 403 `insufficient_scope`), and
    /// the kept tokens (if any) could not be refreshed.
    #[error(
        "MCP server `{server}` needs sign-in: run `toolmux mcp login {server}` (or use Sign in \
         on its card in the web app)"
    )]
    NeedsSignIn {
        /// The server's name.
        server: String,
    },
    /// The server refused the credential its configuration sends (a header in `headers` that
    /// holds a secret — `Authorization`, `X-API-Key` — which toolmux never replaces with a
    /// sign-in): only a changed configuration or secret can help, as other MCP clients say.
    #[error(
        "MCP server `{server}` rejected the configured credential (HTTP {status}): check the \
         `{header}` header in its `headers` and the secret or variable it reads"
    )]
    CredentialRejected {
        /// The server's name.
        server: String,
        /// 401, or 403 for a credential without the scope asked for.
        status: u16,
        /// The configured header that sent it, as the configuration names it.
        header: String,
    },
    /// The server is switched off in configuration.
    #[error("MCP server `{server}` is disabled in configuration")]
    Disabled {
        /// The server's name.
        server: String,
    },
    /// A per-client server has as many client sessions open as it may have.
    #[error(
        "MCP server `{server}` is serving {max} client sessions, as many as it may \
         (`maxSessions`); close a session (or raise `maxSessions`) and call again"
    )]
    TooManySessions {
        /// The server's name.
        server: String,
        /// Its `maxSessions`.
        max: usize,
    },
    /// The caller's session ended while its call waited for the session's connection.
    #[error("MCP server `{server}`: the client session ended before the call could start")]
    SessionEnded {
        /// The server's name.
        server: String,
    },
    /// The discovery cache could not be written.
    #[error("MCP server `{server}`: cannot write the discovery cache `{path}`: {message}")]
    Cache {
        /// The server's name.
        server: String,
        /// The cache file.
        path: String,
        /// What went wrong.
        message: String,
    },
    /// The pins of a server's tools could not be read or written.
    #[error("MCP server `{server}`: cannot keep its pinned tools in `{path}`: {message}")]
    Pins {
        /// The server's name.
        server: String,
        /// The pins file.
        path: String,
        /// What went wrong.
        message: String,
    },
    /// A person accepted tools that are not held.
    #[error("MCP server `{server}`: {message}")]
    NotHeld {
        /// The server's name.
        server: String,
        /// Which tools, and which are held.
        message: String,
    },
}
