//! Coding sessions: the coding agents installed on the machine (*runners* — Claude Code,
//! Codex, Gemini CLI, Copilot, aider, goose, opencode, Cursor's agent, and any configured in
//! `runners`) and the *sessions* toolmux runs with them (one runner on one prompt in one
//! folder), as the built-in source `sessions`: `list_runners`, `detect_runners`,
//! `run_session` (and its alias `run_subagent`), `session_status`, `list_sessions`,
//! `session_logs` and `cancel_session`.
//!
//! - **Runners** (`runners`): the built-in launch conventions, the configuration applied over
//!   them, detection (on `PATH`, version from `--version`) cached in
//!   `.toolmux/state/runners.json`, so listing never starts a process.
//! - **Sessions** (`sessions`, `supervise`, `worktree`, `prompt`): a plan (runner, folder
//!   inside the root, prompt — built from specs through the spec pack —, the exact command
//!   line), shown in the approval (`run_session` asks by default); then the process, in its
//!   own group, with a time limit, its output logged line by line, stopped with everything it
//!   started on cancel, at the limit, and when it exits.
//! - **Store** (`store`): `.toolmux/state/sessions/<id>/session.json` (atomic) and
//!   `log.jsonl` (appended), behind [`SessionStore`]; logs live on disk, never whole in
//!   memory. A session whose toolmux process died is marked `lost` at the next start.
//! - **Following** (`follow`): the terminal and the REST stream read the log as it grows.

pub mod acp;
mod acp_run;
mod error;
mod follow;
mod prompt;
mod record;
mod runners;
mod sessions;
mod store;
mod supervise;
mod tools;
mod worktree;

pub use error::SessionError;
pub use follow::{Final, FollowEvent, Follower};
pub use prompt::DEFAULT_TEMPLATE;
pub use record::{LogEntry, Owner, SessionRecord, Status, Stream, Worktree};
pub use runners::{DEFAULT_SESSION_TIMEOUT, Detection, Runner, parse_version, which};
pub use sessions::{
    CALLER_ENV_ALLOWED, MAX_CALLER_ENV_NAME_BYTES, MAX_CALLER_ENV_VALUE_BYTES, MAX_CALLER_ENV_VARS,
    Plan, RunRequest, SESSION_ID_VAR, Sessions, StartedBy,
};
pub use store::{DirStore, LogPage, LogSink, SessionStore};
pub use supervise::{GRACE, LINE_CAP, LOG_CAP};
pub use tools::{Handoff, SOURCE_ID, SessionsSource, TOOL_NAMES};
