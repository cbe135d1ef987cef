//! The crate's one error type.

use std::path::PathBuf;

use toolmux_core::ToolErrorKind;

/// Why a skill could not be read or found.
#[derive(Debug, thiserror::Error)]
pub enum SkillError {
    /// A `SKILL.md` breaks the format; nothing of it is offered to a model.
    #[error("{}:{line}: {}{message}", file.display(), field.as_ref().map(|f| format!("{f}: ")).unwrap_or_default())]
    Invalid {
        /// The `SKILL.md`.
        file: PathBuf,
        /// The 1-based line the problem is on.
        line: usize,
        /// The frontmatter field, when the problem is one field's.
        field: Option<String>,
        /// What is wrong.
        message: String,
    },
    /// A file or folder could not be read.
    #[error("{}: {source}", path.display())]
    Io {
        /// The path.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// No skill has this name.
    #[error("no skill named `{name}`{}", if known.is_empty() { "; no skill is installed".to_string() } else { format!("; skills: {}", known.join(", ")) })]
    NotFound {
        /// What was asked for.
        name: String,
        /// The names there are.
        known: Vec<String>,
    },
    /// The skill is for a person to start (`disable-model-invocation: true`), not a model.
    #[error(
        "the skill `{0}` is started by a person, not loaded by a model (its SKILL.md sets `disable-model-invocation: true`)"
    )]
    PersonOnly(String),
    /// A call's arguments do not fit the tool's input struct.
    #[error("{0}")]
    Arguments(String),
}

impl SkillError {
    /// The kind a channel reports it as.
    pub fn kind(&self) -> Option<ToolErrorKind> {
        match self {
            Self::NotFound { .. } => Some(ToolErrorKind::NotFound),
            Self::Invalid { .. } | Self::PersonOnly(_) | Self::Arguments(_) => {
                Some(ToolErrorKind::Invalid)
            }
            Self::Io { .. } => None,
        }
    }
}
