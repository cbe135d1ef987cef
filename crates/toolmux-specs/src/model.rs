//! What a spec is once read: its status and priority vocabularies, its frontmatter fields and
//! the spec itself.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use serde_json::{Map, Value};

/// A spec's status. Written forms are matched case-insensitively with LeanSpec's aliases
/// (`in_progress`, `inprogress`, `completed`); it is always reported in its canonical form.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Status {
    /// `draft`
    Draft,
    /// `planned`
    Planned,
    /// `in-progress`
    InProgress,
    /// `complete`
    Complete,
    /// `archived`
    Archived,
}

impl Status {
    /// Every status, in board order.
    pub const ALL: [Status; 5] = [
        Status::Draft,
        Status::Planned,
        Status::InProgress,
        Status::Complete,
        Status::Archived,
    ];

    /// Every written form LeanSpec accepts, canonical names first, then its aliases: the one
    /// table that parsing, `spec_update`'s schema and the error messages are read from.
    pub const WRITTEN: [(&'static str, Status); 8] = [
        ("draft", Status::Draft),
        ("planned", Status::Planned),
        ("in-progress", Status::InProgress),
        ("complete", Status::Complete),
        ("archived", Status::Archived),
        ("in_progress", Status::InProgress),
        ("inprogress", Status::InProgress),
        ("completed", Status::Complete),
    ];

    /// Parses a written status, aliases included.
    pub fn parse(text: &str) -> Option<Self> {
        lookup(&Self::WRITTEN, text)
    }

    /// Why `text` is not a status, naming the canonical ones.
    pub fn invalid(text: &str) -> String {
        invalid("status", text, Self::ALL.map(Self::as_str))
    }

    /// The canonical name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Draft => "draft",
            Self::Planned => "planned",
            Self::InProgress => "in-progress",
            Self::Complete => "complete",
            Self::Archived => "archived",
        }
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A spec's priority, with LeanSpec's aliases `med` and `urgent`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Priority {
    /// `low`
    Low,
    /// `medium`
    Medium,
    /// `high`
    High,
    /// `critical`
    Critical,
}

impl Priority {
    /// Every priority, lowest first (LeanSpec's board order).
    pub const ALL: [Priority; 4] = [
        Priority::Low,
        Priority::Medium,
        Priority::High,
        Priority::Critical,
    ];

    /// Every written form LeanSpec accepts, canonical names first, then its aliases.
    pub const WRITTEN: [(&'static str, Priority); 6] = [
        ("low", Priority::Low),
        ("medium", Priority::Medium),
        ("high", Priority::High),
        ("critical", Priority::Critical),
        ("med", Priority::Medium),
        ("urgent", Priority::Critical),
    ];

    /// Parses a written priority, aliases included.
    pub fn parse(text: &str) -> Option<Self> {
        lookup(&Self::WRITTEN, text)
    }

    /// Why `text` is not a priority, naming the canonical ones.
    pub fn invalid(text: &str) -> String {
        invalid("priority", text, Self::ALL.map(Self::as_str))
    }

    /// The canonical name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Low => "low",
            Self::Medium => "medium",
            Self::High => "high",
            Self::Critical => "critical",
        }
    }
}

impl fmt::Display for Priority {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The value a written form names, matched case-insensitively.
fn lookup<T: Copy>(written: &[(&str, T)], text: &str) -> Option<T> {
    written
        .iter()
        .find(|(form, _)| form.eq_ignore_ascii_case(text))
        .map(|&(_, value)| value)
}

fn invalid<const N: usize>(field: &str, text: &str, canonical: [&str; N]) -> String {
    format!("invalid {field} `{text}` (valid: {})", canonical.join(", "))
}

/// One entry of `transitions`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Transition {
    /// The status entered.
    pub status: Status,
    /// When (RFC 3339, as written).
    pub at: String,
}

/// The frontmatter fields LeanSpec knows, read the way it reads them, plus every other key
/// (as JSON, for display; the file itself keeps them byte for byte).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Meta {
    /// `status` (required).
    pub status: Option<Status>,
    /// `created` as written (required; validation checks `YYYY-MM-DD`).
    pub created: String,
    /// `priority`.
    pub priority: Option<Priority>,
    /// `tags` (list, JSON string or comma string).
    pub tags: Vec<String>,
    /// `depends_on` (list, JSON string or comma string).
    pub depends_on: Vec<String>,
    /// `parent` as written.
    pub parent: Option<String>,
    /// `assignee`.
    pub assignee: Option<String>,
    /// `reviewer`.
    pub reviewer: Option<String>,
    /// `created_at` (RFC 3339).
    pub created_at: Option<String>,
    /// `updated_at` (RFC 3339).
    pub updated_at: Option<String>,
    /// `completed_at` (RFC 3339).
    pub completed_at: Option<String>,
    /// `transitions`.
    pub transitions: Vec<Transition>,
    /// Every key in the order written, known ones included.
    pub keys: Vec<String>,
    /// Every key and its value as JSON, in the order written.
    pub fields: Map<String, Value>,
    /// The keys LeanSpec does not know, and the other known ones it only displays
    /// (`issue`, `pr`, `epic`, `breaking`, `due`, `updated`, `completed`), as JSON.
    pub other: Map<String, Value>,
}

impl Meta {
    /// The status, `planned` only for a spec that could not have been read without one (never
    /// happens for a parsed spec: a missing status is a parse error).
    pub fn status(&self) -> Status {
        self.status.unwrap_or(Status::Planned)
    }
}

/// A markdown file beside a spec's README (`DESIGN.md`, `TESTING.md`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SubSpec {
    /// The file name.
    pub name: String,
    /// Its size in bytes.
    pub size: u64,
    /// Its modification time: with the size, what tells an edit of the file (an edit that
    /// keeps the size must still move the snapshot's version).
    pub modified: std::time::SystemTime,
}

/// One spec, parsed.
#[derive(Clone, Debug)]
pub struct Spec {
    /// The folder name (`042-search-index`): the spec's id everywhere.
    pub id: String,
    /// The number prefix, when the folder has one that parses.
    pub number: Option<u32>,
    /// The README's absolute path.
    pub file: PathBuf,
    /// The README's path relative to the specs directory, with `/` separators.
    pub rel_file: String,
    /// The spec sits under the legacy `archived/` folder.
    pub in_archived_folder: bool,
    /// The spec folder sits inside another spec's folder: that spec's id.
    pub nested_in: Option<String>,
    /// Sub-spec files, by name.
    pub sub_specs: Vec<SubSpec>,
    /// `parent` resolved to a spec id the way LeanSpec resolves it (a fragment such as
    /// `040` becomes the id that contains it).
    pub parent: Option<String>,
    /// What was read from the README (shared with the parse cache).
    pub doc: Arc<Doc>,
}

impl Spec {
    /// The title.
    pub fn title(&self) -> &str {
        &self.doc.title
    }

    /// The frontmatter.
    pub fn meta(&self) -> &Meta {
        &self.doc.meta
    }

    /// The status.
    pub fn status(&self) -> Status {
        self.doc.meta.status()
    }

    /// The body (see [`Doc::body_start`]).
    pub fn body(&self) -> &str {
        &self.doc.raw[self.doc.body_start..]
    }
}

/// A README as read: the whole text, where its body starts, and what was parsed from it.
#[derive(Clone, Debug)]
pub struct Doc {
    /// The first `# ` heading of the body, else the folder name.
    pub title: String,
    /// Its frontmatter.
    pub meta: Meta,
    /// The whole file.
    pub raw: String,
    /// Byte offset of the body as LeanSpec defines it: the text after the closing `---`,
    /// leading `\n`s removed. `expectedContentHash` is the SHA-256 of the body.
    pub body_start: usize,
    /// The 1-based file line the body starts on.
    pub body_line: usize,
    /// The hex SHA-256 of the body.
    pub content_hash: String,
    /// Lowercased text for search (ASCII lowercasing, as LeanSpec does).
    pub(crate) search: SearchText,
    /// The whole file's cl100k_base token count, made on first use: a snapshot's documents
    /// outlive one call (the walk cache keeps unchanged ones), and counting is the slowest
    /// thing `spec_tokens` and `spec_validate` do.
    pub(crate) tokens: std::sync::OnceLock<usize>,
}

impl Doc {
    /// The whole file's cl100k_base token count.
    pub fn tokens(&self) -> Result<usize, String> {
        if let Some(n) = self.tokens.get() {
            return Ok(*n);
        }
        let n = crate::tokens::count(&self.raw)?;
        Ok(*self.tokens.get_or_init(|| n))
    }
}

/// A spec's text, lowercased once when it is parsed so a search does not redo it.
#[derive(Clone, Debug, Default)]
pub(crate) struct SearchText {
    pub title: String,
    pub path: String,
    pub tags: Vec<String>,
    pub tags_text: String,
    pub content: String,
}

/// A spec file that could not be read as a spec. LeanSpec refuses to list anything while one
/// exists; the pack lists the others and reports this.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BrokenSpec {
    /// The folder name.
    pub id: String,
    /// The README's path relative to the specs directory.
    pub rel_file: String,
    /// The 1-based line of the problem.
    pub line: usize,
    /// The validation rule it breaks: `frontmatter`, or `size` for a file larger than the pack
    /// reads.
    pub rule: &'static str,
    /// What is wrong.
    pub message: String,
}
