//! The one error type of the crate.

use std::path::PathBuf;
use std::time::Duration;

use toolmux_core::format_duration;

/// Why code mode could not build capabilities or run a script.
#[derive(Debug, thiserror::Error)]
pub enum CodeModeError {
    /// Writing the capability files failed.
    #[error("cannot write `{}`: {source}", path.display())]
    Write {
        /// The file or folder.
        path: PathBuf,
        /// What the file system said.
        source: std::io::Error,
    },
    /// The script is not valid TypeScript.
    #[error("the script does not parse:\n{0}")]
    Syntax(String),
    /// The script threw, or a module could not be resolved; the message carries the
    /// TypeScript line and column when they are known.
    #[error("{0}")]
    Script(String),
    /// The script used more memory than allowed.
    #[error("the script ran out of memory (limit {} MB)", .0 / (1024 * 1024))]
    OutOfMemory(usize),
    /// The script used up its CPU-time budget.
    #[error("the script used up its CPU-time budget of {}", format_duration(*.0))]
    CpuBudget(Duration),
    /// The script ran past its wall-clock timeout.
    #[error("the script ran past its wall-clock timeout of {}", format_duration(*.0))]
    Timeout(Duration),
    /// A built-in ignored the interrupt past the watchdog's grace period; the sandbox thread
    /// was abandoned and its runtime is discarded when the built-in returns.
    #[error(
        "the script did not stop within {} of its wall-clock timeout of {} (a built-in ignored the interrupt); its sandbox was abandoned",
        format_duration(*grace),
        format_duration(*timeout)
    )]
    Watchdog {
        /// The wall-clock timeout.
        timeout: Duration,
        /// How long the watchdog waited after it.
        grace: Duration,
    },
    /// The script exceeded the stack (deep recursion).
    #[error("the script exceeded the stack size (too deep recursion): {0}")]
    StackOverflow(String),
    /// The sandbox itself failed (the thread could not start, the hub is gone).
    #[error("the sandbox failed: {0}")]
    Sandbox(String),
}
