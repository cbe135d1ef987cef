//! What a session is on disk and on every channel: its record (`session.json`) and the lines
//! of its log (`log.jsonl`).

use std::path::PathBuf;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use toolmux_config::RunnerProtocol;

/// Where a session is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Accepted, its process not started yet.
    Pending,
    /// Its process runs.
    Running,
    /// The runner exited with status 0.
    Completed,
    /// The runner exited otherwise, could not start, or ran past its time limit.
    Failed,
    /// Cancelled by a person or a tool call.
    Cancelled,
    /// The toolmux process that ran it died before it ended (found at toolmux's next start).
    Lost,
}

impl Status {
    /// Whether the session has ended.
    pub fn is_final(self) -> bool {
        !matches!(self, Self::Pending | Self::Running)
    }

    /// Its name, as serialised.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Running => "running",
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
            Self::Lost => "lost",
        }
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The git worktree a session runs in.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Worktree {
    /// Its folder (absolute).
    pub path: PathBuf,
    /// The new branch it is on.
    pub branch: String,
}

/// The toolmux process that runs a session: its process id and start time (clock ticks since
/// boot), which together tell it from a later process that got the same id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Owner {
    /// Its process id.
    pub pid: u32,
    /// Its start time, from `/proc/<pid>/stat`.
    pub start_time: u64,
}

impl Owner {
    /// This process.
    pub fn current() -> Self {
        let pid = std::process::id();
        Self {
            pid,
            start_time: start_time_of(pid).unwrap_or_default(),
        }
    }

    /// Whether that process still runs.
    pub fn is_alive(&self) -> bool {
        start_time_of(self.pid) == Some(self.start_time)
    }
}

/// A process's start time (field 22 of `/proc/<pid>/stat`).
fn start_time_of(pid: u32) -> Option<u64> {
    toolmux_files::ProcStat::of(pid)?.number(22)
}

/// One session, as `session.json` holds it and every channel shows it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionRecord {
    /// Its id (a UUID v7, so ids sort by start).
    pub id: String,
    /// The runner's name.
    pub runner: String,
    /// `shell` or `acp`.
    pub protocol: RunnerProtocol,
    /// Where it is in its life.
    pub status: Status,
    /// The prompt the runner was given.
    pub prompt: String,
    /// The specs the prompt was built from.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub specs: Vec<String>,
    /// The model asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The folder it runs in (absolute).
    pub cwd: PathBuf,
    /// The worktree it runs in, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worktree: Option<Worktree>,
    /// The exact command line (program first).
    pub command: Vec<String>,
    /// The names of the variables set for it besides toolmux's allowlist (never their values).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<String>,
    /// Its time limit, in milliseconds.
    pub timeout_ms: u64,
    /// The channel it was started from (`mcp`, `rest`, `cli`, `chat`, `code`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel: Option<String>,
    /// When it was created, started and ended.
    pub created_at: DateTime<Utc>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<DateTime<Utc>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_at: Option<DateTime<Utc>>,
    /// How long it ran, in milliseconds, once it ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// The runner's exit code, when it exited on its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// Why it failed, was cancelled or was lost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The runner's version as an ACP agent gave it in its `initialize` answer (`agentInfo`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_version: Option<String>,
    /// The agent's final answer, once it ended: the text of its last message (an ACP agent's
    /// message after its last tool call, a stream-json `result`, Codex's last `agent_message`),
    /// when it gave one. What a caller of `session_status` wants without reading the log.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub final_answer: Option<String>,
    /// How many log lines it has written (set when it ends).
    #[serde(default)]
    pub log_lines: u64,
    /// The runner's process group while it runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pgid: Option<u32>,
    /// The toolmux process that runs it.
    pub owner: Owner,
}

/// Where a log line came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Stream {
    /// The runner's standard output.
    Stdout,
    /// Its standard error.
    Stderr,
    /// An ACP update (message chunk, plan, tool call …).
    Acp,
    /// toolmux's own note (started, cut, time limit …).
    Toolmux,
}

/// One line of a session's log.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LogEntry {
    /// Its position in the log, from 0.
    pub seq: u64,
    /// When toolmux read it.
    pub at: DateTime<Utc>,
    /// Where it came from.
    pub stream: Stream,
    /// The line (without its newline), cut at the line cap.
    pub text: String,
    /// The line parsed, when the runner printed a JSON object (stream-json modes), or the
    /// ACP update.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub json: Option<Value>,
    /// The kind of an ACP update (`message_chunk`, `tool_call`, `plan` …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// The line was longer than the cap and was cut.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cut: bool,
}
