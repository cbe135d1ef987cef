//! The crate's one error type.

use std::path::PathBuf;

use toolmux_core::ToolErrorKind;

/// Why a spec operation failed. Every variant names what it is about (a file, a spec, a line)
/// so a model or a person can act on it.
#[derive(Debug, thiserror::Error)]
pub enum SpecsError {
    /// A file or directory could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The path.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A spec's frontmatter is missing, unclosed or not valid YAML, or lacks a required
    /// field. Nothing is ever written to such a file.
    #[error("{path}:{line}: {message}")]
    Frontmatter {
        /// The spec file.
        path: PathBuf,
        /// The 1-based line the problem is on.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// A spec file the pack does not read: larger than it reads, or not text.
    #[error("{}: {message}", path.display())]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// Why.
        message: String,
    },
    /// The project's `.lean-spec/config.json` or `config.yaml` does not parse.
    #[error("{path}: {message}")]
    Config {
        /// The config file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// No spec matches the reference.
    #[error("spec not found: `{0}`")]
    NotFound(String),
    /// More than one spec matches the reference.
    #[error("`{reference}` is ambiguous: it matches {}", candidates.join(", "))]
    Ambiguous {
        /// What was asked for.
        reference: String,
        /// The specs it matches.
        candidates: Vec<String>,
    },
    /// The spec changed since the caller read it (`expectedContentHash`).
    #[error(
        "content hash mismatch for {spec}: expected {expected}, current {current}; the spec was modified since you read it, view it again and redo the change"
    )]
    Conflict {
        /// The spec.
        spec: String,
        /// The hash the caller sent.
        expected: String,
        /// The hash of the body now.
        current: String,
    },
    /// The request cannot be carried out as asked (bad argument, a replacement that does not
    /// match, a refused transition, a cycle...).
    #[error("{0}")]
    Invalid(String),
    /// A search query does not parse.
    #[error("invalid search query: {0}")]
    Query(String),
    /// Something on this side failed that no argument could fix (the token encoder would not
    /// load, frontmatter would not render): a server fault, not the caller's.
    #[error("{0}")]
    Internal(String),
}

impl SpecsError {
    /// The kind of failure a channel reports it as (REST: 404, 409, 422); `None` for what broke
    /// on this side (a file that cannot be read or written, the project's LeanSpec config).
    pub fn kind(&self) -> Option<ToolErrorKind> {
        match self {
            Self::NotFound(_) => Some(ToolErrorKind::NotFound),
            Self::Conflict { .. } | Self::Ambiguous { .. } => Some(ToolErrorKind::Conflict),
            Self::Invalid(_)
            | Self::Query(_)
            | Self::Frontmatter { .. }
            | Self::Unreadable { .. } => Some(ToolErrorKind::Invalid),
            Self::Io { .. } | Self::Config { .. } | Self::Internal(_) => None,
        }
    }

    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Self::Io {
            path: path.into(),
            source,
        }
    }
}
