//! The one home of every map between rmcp's wire types and the core's, used both where toolmux
//! is an MCP client (this crate) and where it is an MCP server (`toolmux-mcp-server`), so the
//! two directions cannot drift apart.

// MCP's logging is deprecated in a draft revision (SEP-2577), but every protocol revision
// toolmux speaks still defines `notifications/message` and `logging/setLevel`.
#![allow(deprecated)]

use rmcp::model::LoggingLevel;
use toolmux_core::{LogLevel, ToolAnnotations};

/// MCP's log level as the core's.
pub fn log_level_from_wire(level: LoggingLevel) -> LogLevel {
    match level {
        LoggingLevel::Debug => LogLevel::Debug,
        LoggingLevel::Info => LogLevel::Info,
        LoggingLevel::Notice => LogLevel::Notice,
        LoggingLevel::Warning => LogLevel::Warning,
        LoggingLevel::Error => LogLevel::Error,
        LoggingLevel::Critical => LogLevel::Critical,
        LoggingLevel::Alert => LogLevel::Alert,
        LoggingLevel::Emergency => LogLevel::Emergency,
    }
}

/// The core's log level as MCP's.
pub fn log_level_to_wire(level: LogLevel) -> LoggingLevel {
    match level {
        LogLevel::Debug => LoggingLevel::Debug,
        LogLevel::Info => LoggingLevel::Info,
        LogLevel::Notice => LoggingLevel::Notice,
        LogLevel::Warning => LoggingLevel::Warning,
        LogLevel::Error => LoggingLevel::Error,
        LogLevel::Critical => LoggingLevel::Critical,
        LogLevel::Alert => LoggingLevel::Alert,
        LogLevel::Emergency => LoggingLevel::Emergency,
    }
}

/// A tool's behaviour hints as the core keeps them (the display title stays on the tool).
pub fn annotations_from_wire(hints: &rmcp::model::ToolAnnotations) -> ToolAnnotations {
    ToolAnnotations {
        read_only_hint: hints.read_only_hint,
        destructive_hint: hints.destructive_hint,
        idempotent_hint: hints.idempotent_hint,
        open_world_hint: hints.open_world_hint,
    }
}

/// The core's behaviour hints as MCP's tool annotations.
pub fn annotations_to_wire(hints: &ToolAnnotations) -> rmcp::model::ToolAnnotations {
    rmcp::model::ToolAnnotations::from_raw(
        None,
        hints.read_only_hint,
        hints.destructive_hint,
        hints.idempotent_hint,
        hints.open_world_hint,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_level_and_hint_survives_the_round_trip() {
        for level in [
            LogLevel::Debug,
            LogLevel::Info,
            LogLevel::Notice,
            LogLevel::Warning,
            LogLevel::Error,
            LogLevel::Critical,
            LogLevel::Alert,
            LogLevel::Emergency,
        ] {
            assert_eq!(log_level_from_wire(log_level_to_wire(level)), level);
        }
        let hints = ToolAnnotations {
            read_only_hint: Some(true),
            destructive_hint: Some(false),
            idempotent_hint: None,
            open_world_hint: Some(true),
        };
        assert_eq!(annotations_from_wire(&annotations_to_wire(&hints)), hints);
    }
}
