//! The crate's one error type.

use std::path::PathBuf;

use toolmux_core::ToolErrorKind;

/// What can go wrong with a runner or a session.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// No runner of that name (built in or configured).
    #[error("there is no runner `{name}`; the runners are: {known}")]
    UnknownRunner { name: String, known: String },
    /// The runner is known but its program is not on this machine.
    #[error(
        "runner `{name}` is not installed: `{command}` was not found on PATH. {install} \
         (or point `runners.{name}.command` in .toolmux/config.json at it)"
    )]
    NotInstalled {
        name: String,
        command: String,
        install: String,
    },
    /// The runner is switched off in the configuration.
    #[error("runner `{0}` is switched off (`runners.{0}.enabled` is false)")]
    Disabled(String),
    /// No session with that id.
    #[error("there is no session `{0}`")]
    UnknownSession(String),
    /// The session has ended already.
    #[error("session `{id}` has ended already ({status})")]
    Ended { id: String, status: String },
    /// The request cannot be carried out as given.
    #[error("{0}")]
    Invalid(String),
    /// The ACP client failed or is not available.
    #[error("{0}")]
    Acp(String),
    /// A file of the session store could not be read or written.
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// Something else failed (git, the spec pack, starting the process).
    #[error("{0}")]
    Failed(String),
    /// An approved call found no plan its approval showed (the preview could not be made or
    /// kept): nothing was started, rather than a plan nobody saw.
    #[error(
        "the session was not started: no plan was shown for its approval (the preview failed, \
         or too many session approvals were waiting); ask again"
    )]
    NotApproved,
}

impl SessionError {
    /// An I/O error on `path`.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Self::Io {
            path: path.into(),
            source,
        }
    }

    /// The kind a tool's error result carries, so that every channel answers in its terms
    /// (REST 404 / 409 / 422).
    pub fn kind(&self) -> Option<ToolErrorKind> {
        match self {
            Self::UnknownRunner { .. } | Self::UnknownSession(_) => Some(ToolErrorKind::NotFound),
            Self::Ended { .. } | Self::NotApproved => Some(ToolErrorKind::Conflict),
            Self::Invalid(_) | Self::Disabled(_) => Some(ToolErrorKind::Invalid),
            _ => None,
        }
    }
}
