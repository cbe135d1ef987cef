//! Why a relayed request — a prompt, a resource, a completion, a subscription passed to an
//! upstream server, or one of toolmux's own resources — failed: one error type that the one
//! relay (`toolmux_upstream::Relay`) sorts every failure into, and that each channel maps kind
//! for kind to its wire answer (MCP's JSON-RPC error, REST's status and body). It lives here,
//! below both, so that the REST channel, which knows no MCP client, takes the relay's own error
//! instead of a copy of it.

use std::time::Duration;

/// Why a relayed request failed, sorted so that each channel maps a kind to one answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RelayError {
    /// Nothing the channel serves answers to the name or URI.
    #[error("{0}")]
    NotFound(Unknown),
    /// The request is not one an MCP server could take.
    #[error("{0}")]
    Invalid(String),
    /// The server does not offer resource subscriptions.
    #[error("MCP server `{server}` does not offer resource subscriptions")]
    NoSubscriptions {
        /// The server's name.
        server: String,
    },
    /// The server answered with a JSON-RPC error of its own, passed on as it is.
    #[error("MCP server `{server}` answered with error {code}: {message}")]
    Answered {
        /// The server's name.
        server: String,
        /// Its JSON-RPC error code.
        code: i32,
        /// Its message.
        message: String,
    },
    /// The server broke the protocol or the connection; the text names the server.
    #[error("{0}")]
    Failed(String),
    /// The server cannot be started, is switched off, or was replaced while the request was on
    /// its way; the text names the server and says why.
    #[error("{0}")]
    Unavailable(String),
    /// The server did not answer within `after`.
    #[error("{message}")]
    Timeout {
        /// What timed out, naming the server.
        message: String,
        /// The limit.
        after: Duration,
    },
    /// A resource of toolmux's own exists but cannot be read now (its file cannot be read).
    #[error("{0}")]
    Unreadable(String),
}

/// What a request named that nothing relayed answers to.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unknown {
    /// A prompt, by its served name.
    #[error("no MCP server behind toolmux offers the prompt `{0}`")]
    Prompt(String),
    /// A resource, by its URI.
    #[error("no MCP server behind toolmux lists the resource `{0}`")]
    Resource(String),
    /// A resource template, by its URI template (or a URI it matches).
    #[error("no MCP server behind toolmux lists the resource template `{0}`")]
    Template(String),
    /// Something the upstream crate itself found no server for.
    #[error("{0}")]
    Reported(String),
    /// A URI of toolmux's own resources (`spec://…`) that names nothing, with its provider's
    /// word on what was looked for.
    #[error("{message}")]
    Builtin {
        /// The URI.
        uri: String,
        /// What the provider said.
        message: String,
    },
}
