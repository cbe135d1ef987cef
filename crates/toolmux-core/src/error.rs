//! Why a call did not produce a tool result.

use std::time::Duration;

use crate::duration::format_duration;
use crate::validate::{Violation, format_violations};

/// A failure reported by a source while running a tool.
#[derive(Debug, Clone, thiserror::Error)]
pub enum SourceError {
    /// The source cannot serve calls now (an upstream server is down or backing off).
    #[error("{0}")]
    Unavailable(String),
    /// The source could not run the tool (it could not be started, the protocol broke).
    #[error("{0}")]
    Failed(String),
    /// The source's own time limit ran out.
    #[error("timed out after {}", crate::duration::format_duration(*.0))]
    Timeout(Duration),
}

/// Why a call was refused or failed before a tool result could be returned. Each variant maps
/// to one status in every channel (for REST: 404, 403, 422, 429, 504, 503, 502).
#[derive(Debug, Clone, thiserror::Error)]
pub enum CallError {
    /// No tool has that name (or it is internal and the caller is not trusted).
    #[error("unknown tool `{name}`{}", suggestion.as_ref().map(|s| format!("; did you mean `{s}`?")).unwrap_or_default())]
    NotFound {
        /// The requested name.
        name: String,
        /// The closest existing name, if one is close.
        suggestion: Option<String>,
    },
    /// The tool exists but configuration switched it off.
    #[error("tool `{name}` is disabled: {reason}")]
    Disabled {
        /// The tool.
        name: String,
        /// Which setting disabled it.
        reason: String,
    },
    /// The tool exists but the channel the call came through does not serve it (its
    /// [`ToolScope`](crate::ToolScope) filters it out), so neither a direct call nor a script
    /// started on that channel may reach it.
    #[error("tool `{name}` is not served by {served_by}")]
    NotServed {
        /// The tool.
        name: String,
        /// What narrowed the channel, e.g. "this MCP server (filtered out by --tools, …)".
        served_by: String,
    },
    /// A policy or a person refused the call.
    #[error("tool `{name}` was denied: {reason}")]
    Denied {
        /// The tool.
        name: String,
        /// Why.
        reason: String,
    },
    /// The arguments do not match the tool's input schema.
    #[error("invalid arguments for `{name}`: {}", format_violations(violations))]
    InvalidArguments {
        /// The tool.
        name: String,
        /// Every violation, each with its JSON pointer.
        violations: Vec<Violation>,
    },
    /// The tool's rate limit is exhausted.
    #[error("tool `{name}` is rate limited; retry in {}", format_duration(*retry_after))]
    RateLimited {
        /// The tool.
        name: String,
        /// When a call would be allowed again.
        retry_after: Duration,
    },
    /// The call ran past its time limit and was cancelled.
    #[error("tool `{name}` timed out after {}", format_duration(*after))]
    Timeout {
        /// The tool.
        name: String,
        /// The limit that was exceeded.
        after: Duration,
    },
    /// The tool's source cannot serve calls now.
    #[error("tool `{name}` is unavailable: {message}")]
    Unavailable {
        /// The tool.
        name: String,
        /// What the source said.
        message: String,
    },
    /// The source could not run the tool.
    #[error("tool `{name}` failed: {message}")]
    Failed {
        /// The tool.
        name: String,
        /// What went wrong.
        message: String,
    },
    /// The tool returned output that does not match its declared output schema.
    #[error(
        "tool `{name}` returned output that does not match its output schema: {}",
        format_violations(violations)
    )]
    InvalidOutput {
        /// The tool.
        name: String,
        /// Every violation, each with its JSON pointer.
        violations: Vec<Violation>,
    },
}

impl CallError {
    /// A short stable code for the error (`not_found`, `denied`, ...), used by wire formats.
    pub fn code(&self) -> &'static str {
        match self {
            CallError::NotFound { .. } => "not_found",
            CallError::Disabled { .. } => "disabled",
            CallError::NotServed { .. } => "not_served",
            CallError::Denied { .. } => "denied",
            CallError::InvalidArguments { .. } => "invalid_arguments",
            CallError::RateLimited { .. } => "rate_limited",
            CallError::Timeout { .. } => "timeout",
            CallError::Unavailable { .. } => "unavailable",
            CallError::Failed { .. } => "failed",
            CallError::InvalidOutput { .. } => "invalid_output",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_naturally() {
        assert_eq!(format_duration(Duration::from_millis(250)), "250ms");
        assert_eq!(format_duration(Duration::from_secs(5)), "5s");
        assert_eq!(format_duration(Duration::from_millis(1500)), "1.5s");
        assert_eq!(format_duration(Duration::from_secs(120)), "2m");
    }

    #[test]
    fn not_found_suggests_the_closest_name() {
        let err = CallError::NotFound {
            name: "grpe".into(),
            suggestion: Some("grep".into()),
        };
        assert_eq!(err.to_string(), "unknown tool `grpe`; did you mean `grep`?");
    }
}
