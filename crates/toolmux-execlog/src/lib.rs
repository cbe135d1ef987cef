//! The execution log: every call, from every channel, as one JSON line on disk.
//!
//! # Format
//!
//! Calls are appended to `<dir>/calls-YYYY-MM-DD.jsonl`, one file per UTC day. The day is the
//! day of the call's own timestamp (when it started), not of the moment it was written, so a
//! call that starts at 23:59:59 and ends after midnight lands in the earlier file. `dir` is
//! normally `.toolmux/state/logs/`. Each line is one JSON object with camelCase keys:
//!
//! ```text
//! {"id":"0193…","timestamp":"2026-11-22T10:15:30.123456Z","tool":"grep","source":"workspace",
//!  "channel":"mcp","session":"s-1","arguments":{"pattern":"todo","apiKey":"[redacted]"},
//!  "outcome":"ok","durationUs":812,"result":{"content":[…],"isError":false},"resultBytes":93}
//! ```
//!
//! | key | when | what |
//! |---|---|---|
//! | `id` | always | the call's UUID (v7, time-ordered) |
//! | `timestamp` | always | RFC 3339, UTC, microseconds, `Z` suffix |
//! | `tool` | always | the registry name that was requested |
//! | `source` | always | the tool's source, or `null` when the name did not resolve |
//! | `channel` | always | `cli`, `mcp`, `rest`, `chat` or `code` |
//! | `session` | when known | the session or conversation id |
//! | `caller` | when known | who called (an MCP client's name) |
//! | `parent` | when the call was made for another | that call's id: a delegated task's calls name their `delegate` call |
//! | `approvedBy` | when an earlier answer allowed it | the id of the approval a person answered "allow for this conversation" |
//! | `arguments` | always | the arguments, with secret-looking keys redacted ([`redact`]); if capped, a string; `null` if abridged |
//! | `argumentsBytes` | if capped or abridged | size of the full serialized (redacted) arguments |
//! | `argumentsTruncated` | if capped | `true`; absent otherwise |
//! | `argumentsFile` | if capped and kept | where the whole arguments are kept, relative to the folder |
//! | `outcome` | always | `ok`, `error`, `denied`, `timeout` or `invalid` |
//! | `error` | outcome ≠ ok | the error message |
//! | `durationUs` | always | wall time of the whole pipeline, in microseconds |
//! | `result` | with a result | the `ToolResult`; if capped, a string (see below) |
//! | `resultBytes` | with a result | size of the full serialized `ToolResult`, capped or not |
//! | `resultTruncated` | if capped | `true`; absent otherwise |
//! | `resultFile` | if capped and kept | where the whole result is kept, relative to the folder |
//! | `abridged` | if abridged | `true`: the day's budget was spent, so no arguments or result |
//!
//! A result whose compact serialization exceeds [`LogSettings::result_cap_bytes`] is stored as a
//! JSON *string* holding the first `cap` bytes of that serialization (cut back to a UTF-8
//! boundary), so a reader can still see how it began, and `resultTruncated` is `true`. The
//! whole result is kept in `results/YYYY-MM-DD/<id>.json` beside the day files (written before
//! its line, removed with its day by retention), so a channel that hands a caller a cut result —
//! the chat loop does — can say where the rest is. Arguments are capped the same way
//! ([`LogBudget::argument_cap_bytes`], kept whole in `<id>.arguments.json`), whatever the
//! call's outcome — a call refused by validation too.
//!
//! The disk is bounded ([`LogBudget`]): only values up to `whole_file_cap_bytes` are kept whole
//! (a larger one only by the start in its line), tool names, sessions and callers are cut at
//! 256 bytes and errors at the argument cap, and once a day's file and whole values pass
//! `max_day_bytes` the rest of that day's lines are *abridged* (facts and sizes only), with one
//! warning; past twice the budget, that day's calls are no longer written, with another.
//!
//! # Design
//!
//! - **A thread, not a task.** [`ExecutionSink::record`] is on the hot path of every call, so it
//!   only moves the record into a `std::sync::mpsc` channel: no serialization, no file lock,
//!   no async runtime. (When the writer is idle, the send also wakes it; that wake-up is most
//!   of the cost, about 2 µs p50 on the 2-core dev machine.) One background thread owns the
//!   file: it redacts, caps, serializes and writes. Blocking file I/O belongs on a plain thread, and this crate
//!   stays usable from the CLI, the server and tests alike without a Tokio runtime.
//! - **Batching.** The writer writes through a `BufWriter` and flushes whenever the channel is
//!   momentarily empty: under load, many lines go out in one `write`; when idle, every line is
//!   on disk at once. A crash loses at most the batch in flight. [`ExecutionLog::flush`] waits
//!   until everything sent so far has been written; dropping the log flushes and joins.
//! - **Append mode, whole lines.** Files are opened with `O_APPEND` and the writer only ever
//!   hands the OS whole lines in one `write` call, so several toolmux processes (a server and a
//!   CLI call, say) can share one day file without interleaving inside a line.
//! - **Retention by name.** Files named `calls-YYYY-MM-DD.jsonl` whose date is more than
//!   `retention_days` before today are deleted when the log opens and when the date rolls over.
//!   Nothing else in the folder is ever touched.
//! - **Readers are plain functions.** [`query`] and [`follow`] read the files directly, so the
//!   CLI and the REST API can read a log that another process is writing. They read only the
//!   day files a time range needs, and skip a corrupt line with a warning instead of failing.

mod day_file;
mod entry;
mod follow;
mod query;
pub mod redact;
mod writer;

use std::path::PathBuf;

pub use day_file::day_file;
pub use entry::LogEntry;
pub use follow::{Follower, follow};
pub use query::{LogQuery, parse_since, query};
pub use writer::{
    DEFAULT_ARGUMENT_CAP_BYTES, DEFAULT_MAX_DAY_BYTES, DEFAULT_RESULT_CAP_BYTES,
    DEFAULT_RETENTION_DAYS, DEFAULT_WHOLE_FILE_CAP_BYTES, ExecutionLog, LogBudget, LogSettings,
};

#[doc(no_inline)]
pub use toolmux_core::{ExecutionSink, Outcome};

/// What can go wrong opening or reading the execution log. Writing happens on a background
/// thread, so write failures are reported through `tracing`, never returned.
#[derive(Debug, thiserror::Error)]
pub enum LogError {
    /// The log folder could not be created.
    #[error("cannot create the log folder {}: {source}", path.display())]
    CreateDir {
        /// The folder.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A log folder or file could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// The folder or file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The background writer thread could not be started.
    #[error("cannot start the execution log writer thread: {0}")]
    Spawn(#[source] std::io::Error),
    /// The `tool` filter of a query is not a valid pattern.
    #[error(transparent)]
    Pattern(#[from] toolmux_core::PatternError),
}
