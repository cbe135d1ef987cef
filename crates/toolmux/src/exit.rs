//! Exit codes, documented in the README, and the one error type commands return.

/// The command did what was asked.
pub const OK: u8 = 0;
/// The tool ran and failed: it returned an error result, timed out, its source was
/// unavailable, or its output broke its output schema.
pub const TOOL_FAILED: u8 = 1;
/// The command line was wrong (clap also uses 2).
pub const USAGE: u8 = 2;
/// The configuration is invalid.
pub const CONFIG: u8 = 3;
/// The call was refused: before the tool ran (unknown or disabled tool, denied by policy or by
/// a person, invalid arguments, rate limited), or by the tool itself with a kind of refusal
/// (what it names does not exist, it changed since it was read, it cannot be done as asked).
pub const REFUSED: u8 = 4;
/// Anything else went wrong (I/O, a broken state directory).
pub const RUNTIME: u8 = 5;

/// Why a command failed, with the exit code it maps to.
#[derive(Debug)]
pub enum Failure {
    /// Bad command-line input.
    Usage(String),
    /// Bad configuration.
    Config(String),
    /// A call refused before it ran.
    Refused(String),
    /// A tool that ran and failed.
    ToolFailed(String),
    /// Anything else.
    Runtime(anyhow::Error),
    /// Stdout was closed by its reader (`toolmux logs | head`): a normal end, reported quietly.
    BrokenPipe,
}

impl Failure {
    pub fn code(&self) -> u8 {
        match self {
            Failure::Usage(_) => USAGE,
            Failure::Config(_) => CONFIG,
            Failure::Refused(_) => REFUSED,
            Failure::ToolFailed(_) => TOOL_FAILED,
            Failure::Runtime(_) => RUNTIME,
            Failure::BrokenPipe => OK,
        }
    }

    pub fn report(&self) {
        match self {
            Failure::Usage(m) => eprintln!("toolmux: {m}"),
            Failure::Config(m) => eprintln!("toolmux: invalid configuration: {m}"),
            Failure::Refused(m) | Failure::ToolFailed(m) => eprintln!("toolmux: {m}"),
            Failure::Runtime(e) => eprintln!("toolmux: {e:#}"),
            Failure::BrokenPipe => {}
        }
    }
}

/// A call the pipeline did not complete: refused before the tool ran (exit code 4) or broken
/// around it — a timeout, an unavailable source, an output that breaks its schema (exit code 1).
impl From<toolmux_core::CallError> for Failure {
    fn from(e: toolmux_core::CallError) -> Self {
        use toolmux_core::CallError;
        match e {
            CallError::NotFound { .. }
            | CallError::Disabled { .. }
            | CallError::NotServed { .. }
            | CallError::Denied { .. }
            | CallError::InvalidArguments { .. }
            | CallError::RateLimited { .. } => Failure::Refused(e.to_string()),
            CallError::Timeout { .. }
            | CallError::Unavailable { .. }
            | CallError::Failed { .. }
            | CallError::InvalidOutput { .. } => Failure::ToolFailed(e.to_string()),
        }
    }
}

impl Failure {
    /// A tool's error result: a refusal of a known kind (`ToolResult::error_kind`: not found,
    /// conflict, invalid) changed nothing and asks the caller to change the request, so it is
    /// reported like a refusal by the pipeline (exit code 4); any other error is the tool
    /// failing (exit code 1).
    pub fn from_tool_error(result: &toolmux_core::ToolResult) -> Self {
        let message = result.text_content();
        match result.error_kind() {
            Some(_) => Failure::Refused(message),
            None => Failure::ToolFailed(message),
        }
    }
}

impl From<anyhow::Error> for Failure {
    fn from(e: anyhow::Error) -> Self {
        Failure::Runtime(e)
    }
}

impl From<std::io::Error> for Failure {
    fn from(e: std::io::Error) -> Self {
        Failure::Runtime(e.into())
    }
}

/// An edit that was not made: a result that would not load, or a file a program cannot edit,
/// is a configuration error (exit code 3); a file that cannot be read or written is a runtime
/// one.
impl From<toolmux_config::EditError> for Failure {
    fn from(e: toolmux_config::EditError) -> Self {
        match e {
            toolmux_config::EditError::Invalid(_)
            | toolmux_config::EditError::Uneditable { .. } => Failure::Config(e.to_string()),
            toolmux_config::EditError::Io { .. } => Failure::Runtime(e.into()),
        }
    }
}
