//! The execution log's record of one call, and where records go.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

use crate::context::Channel;
use crate::model::ToolResult;

/// How a call ended, as recorded in the execution log.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// The tool ran and returned a result that is not an error.
    Ok,
    /// The tool ran and reported an error, or its source failed.
    Error,
    /// A policy, a person, or a rate limit refused the call.
    Denied,
    /// The call ran past its time limit.
    Timeout,
    /// The call was malformed: unknown tool, invalid arguments, or output that breaks the
    /// tool's output schema.
    Invalid,
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Outcome::Ok => "ok",
            Outcome::Error => "error",
            Outcome::Denied => "denied",
            Outcome::Timeout => "timeout",
            Outcome::Invalid => "invalid",
        })
    }
}

impl std::str::FromStr for Outcome {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "ok" => Ok(Outcome::Ok),
            "error" => Ok(Outcome::Error),
            "denied" => Ok(Outcome::Denied),
            "timeout" => Ok(Outcome::Timeout),
            "invalid" => Ok(Outcome::Invalid),
            other => Err(format!(
                "unknown outcome `{other}` (expected ok, error, denied, timeout or invalid)"
            )),
        }
    }
}

/// One call, as the pipeline saw it. The sink decides how to redact, cap and store it.
#[derive(Clone, Debug)]
pub struct ExecutionRecord {
    /// Unique, time-ordered id of the call.
    pub id: Uuid,
    /// When the call started.
    pub timestamp: DateTime<Utc>,
    /// The registry name requested.
    pub tool: String,
    /// The source of the tool, when it was resolved.
    pub source: Option<String>,
    /// The channel.
    pub channel: Channel,
    /// The session or conversation.
    pub session: Option<String>,
    /// Who called, when the channel knows (an MCP client's name).
    pub caller: Option<String>,
    /// The arguments as received.
    pub arguments: Value,
    /// How it ended.
    pub outcome: Outcome,
    /// The error message for every outcome but `ok`.
    pub error: Option<String>,
    /// Wall time of the whole pipeline, in microseconds.
    pub duration_us: u64,
    /// The result, when the tool returned one.
    pub result: Option<ToolResult>,
    /// The call this one was made for (a delegated task's `delegate` call).
    pub parent: Option<Uuid>,
    /// The earlier approval that allowed this call without asking ("allow for this
    /// conversation").
    pub approved_by: Option<Uuid>,
}

/// Where the pipeline sends records. `record` is called on the hot path of every call, so an
/// implementation hands the record to a background writer and returns at once.
pub trait ExecutionSink: Send + Sync {
    /// Accepts one record.
    fn record(&self, record: ExecutionRecord);
}

/// A sink that keeps nothing, for tests and for embedding the core without a log.
#[derive(Debug, Default, Clone, Copy)]
pub struct NullSink;

impl ExecutionSink for NullSink {
    fn record(&self, _record: ExecutionRecord) {}
}
