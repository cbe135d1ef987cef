//! The way back to the caller while a call runs: progress, log messages, and the requests a
//! tool's source may put to the caller (a model completion, a question to the person).
//!
//! A channel that can carry these fills [`CallContext::backchannel`](crate::CallContext) (the
//! MCP server from the client's progress token and capabilities); a source that produces them
//! (an upstream MCP server relaying its own notifications and requests) sends them here. Both
//! ends know MCP; the core does not read the requests it relays, so they travel as JSON.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// How far a running call has got.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Progress {
    /// Work done so far; increases with every update.
    pub progress: f64,
    /// The total, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total: Option<f64>,
    /// What is being done now.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// The severity of a [`LogMessage`], in syslog order (as MCP defines it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogLevel {
    /// Detailed debugging information.
    Debug,
    /// Normal events.
    Info,
    /// Normal but significant events.
    Notice,
    /// Warnings.
    Warning,
    /// Errors.
    Error,
    /// Critical conditions.
    Critical,
    /// Action must be taken at once.
    Alert,
    /// The system is unusable.
    Emergency,
}

/// A log message a tool's source emitted while the call ran.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LogMessage {
    /// Its severity.
    pub level: LogLevel,
    /// Who logged it (for a relayed message, the upstream's logger name).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub logger: Option<String>,
    /// The message: any JSON.
    pub data: Value,
}

/// Why the caller did not answer a relayed request.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BackchannelError {
    /// The caller's channel cannot answer this kind of request (an MCP client without the
    /// sampling capability, the REST API).
    #[error("the caller cannot answer {0} requests")]
    Unsupported(&'static str),
    /// The caller answered with an error (a JSON-RPC error code and its message).
    #[error("the caller refused: {message}")]
    Refused {
        /// The caller's error code.
        code: i32,
        /// The caller's message.
        message: String,
    },
    /// The request could not be delivered or its answer not read.
    #[error("{0}")]
    Failed(String),
}

/// Carries a running call's progress, log messages and requests back to its caller. Sending
/// never blocks the call: a caller that went away loses the update, not the call.
#[async_trait]
pub trait Backchannel: Send + Sync {
    /// Reports progress.
    fn progress(&self, update: Progress);

    /// Passes on a log message.
    fn log(&self, message: LogMessage);

    /// Asks the caller's model for a completion: `request` is MCP's `sampling/createMessage`
    /// params, the answer its result.
    async fn sample(&self, request: Value) -> Result<Value, BackchannelError> {
        let _ = request;
        Err(BackchannelError::Unsupported("sampling"))
    }

    /// Asks the caller's person for input: `request` is MCP's `elicitation/create` params, the
    /// answer its result.
    async fn elicit(&self, request: Value) -> Result<Value, BackchannelError> {
        let _ = request;
        Err(BackchannelError::Unsupported("elicitation"))
    }
}
