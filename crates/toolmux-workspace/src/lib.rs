//! The built-in `workspace` pack: `file_read`, `file_search`, `grep` and `directory_list`,
//! every one of them confined to one project root and read-only.
//!
//! These are the tools an agent uses most, and the ones a hostile prompt would most like to
//! turn against the machine (`../../.ssh/id_rsa`). So every path a caller gives goes through
//! [`ProjectRoot::resolve`] first, and confinement works by construction rather than by a
//! check at the end:
//!
//! - the root is canonicalized once, when the pack is made;
//! - a path is refused on its text alone when it is absolute, starts with `~`, holds a NUL
//!   byte, a backslash or a percent-escape, or climbs above the root with `..` (lexically:
//!   `a/../b` is fine, `a/../../b` is not);
//! - the rest is walked one component at a time from the root with `symlink_metadata`, and
//!   symbolic links are followed by hand: the moment a link's target would leave the root it
//!   is refused, without looking at the target. A link to a missing file outside therefore
//!   answers exactly like a link to an existing one, and nothing outside the root is ever
//!   opened, listed or even tested for existence;
//! - the walkers behind `file_search`, `grep` and `directory_list` never follow links
//!   (a link is listed as a link and never searched through), never enter `.git`, and only
//!   open regular files, so a FIFO or device cannot hang or flood a call.
//!
//! What this does not defend against: another process rewriting the tree while a call runs
//! (swapping a checked directory for a link between the check and the open). The tools only
//! read and cannot make links themselves, so that takes a second, hostile writer on the
//! machine. The `.gitignore` files of the root's parent directories are honoured, as `rg`
//! does; they can only hide files, never reveal them.
//!
//! Search uses ripgrep's own crates (`ignore`, `globset`, `grep-regex`, `grep-searcher`), so
//! `.gitignore` rules behave as in `rg` (also outside a git repository) and `grep` runs at
//! ripgrep's speed. Every result carries text for a model and structured content for a
//! program, and every result is capped ([`WorkspaceLimits`]) with a note that says so.

mod args;
mod directory_list;
mod file_read;
mod file_search;
mod grep;
mod output;
mod root;
mod walk;

use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Map, Value};
use toolmux_core::{
    Source, SourceCall, SourceError, SourceKind, ToolAnnotations, ToolDescriptor, ToolResult,
};

pub use root::{PathError, ProjectRoot};

/// The id of the pack's source in the registry.
const SOURCE_ID: &str = "workspace";

/// How much one call may read and return. The caps keep a model's context (and the host's
/// memory) safe from a huge file or a search that matches everything.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkspaceLimits {
    /// The most bytes of file content `file_read` returns at once (default 256 KiB).
    pub max_read_bytes: usize,
    /// The most paths, matches or entries a search or listing returns (default 1000); also
    /// the largest `limit` a caller may ask for.
    pub max_results: usize,
    /// The most bytes of output (text and structured content together) of one call
    /// (default 1 MiB).
    pub max_output_bytes: usize,
}

impl Default for WorkspaceLimits {
    fn default() -> Self {
        Self {
            max_read_bytes: 256 * 1024,
            max_results: 1000,
            max_output_bytes: 1024 * 1024,
        }
    }
}

/// Why a workspace pack could not be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WorkspaceError {
    /// The project root cannot be used.
    #[error(transparent)]
    Root(#[from] PathError),
    /// A limit is zero, which would make every call useless.
    #[error("workspace limit `{name}` must be at least 1")]
    ZeroLimit {
        /// The field of [`WorkspaceLimits`].
        name: &'static str,
    },
}

/// The `workspace` source: the four read-only tools over one project root. Cheap to clone.
#[derive(Clone, Debug)]
pub struct WorkspacePack {
    inner: Arc<Workspace>,
}

/// What every tool needs: the root and the limits.
#[derive(Debug)]
pub(crate) struct Workspace {
    pub(crate) root: ProjectRoot,
    pub(crate) limits: WorkspaceLimits,
    tools: Vec<ToolDescriptor>,
}

impl WorkspacePack {
    /// A pack serving the project at `root` (canonicalized here, once).
    pub fn new(root: impl AsRef<Path>, limits: WorkspaceLimits) -> Result<Self, WorkspaceError> {
        for (name, value) in [
            ("max_read_bytes", limits.max_read_bytes),
            ("max_results", limits.max_results),
            ("max_output_bytes", limits.max_output_bytes),
        ] {
            if value == 0 {
                return Err(WorkspaceError::ZeroLimit { name });
            }
        }
        let root = ProjectRoot::new(root)?;
        let tools = vec![
            file_read::descriptor_for(&limits),
            file_search::descriptor_for(&limits),
            grep::descriptor_for(&limits),
            directory_list::descriptor_for(&limits),
        ];
        Ok(Self {
            inner: Arc::new(Workspace {
                root,
                limits,
                tools,
            }),
        })
    }

    /// The canonical project root.
    pub fn root(&self) -> &Path {
        self.inner.root.path()
    }
}

impl Workspace {
    /// Runs one tool; a message the caller can act on becomes a tool-level error.
    fn run(&self, tool: &str, arguments: &Map<String, Value>) -> Option<ToolResult> {
        let outcome = match tool {
            file_read::NAME => file_read::run(self, arguments),
            file_search::NAME => file_search::run(self, arguments),
            grep::NAME => grep::run(self, arguments),
            directory_list::NAME => directory_list::run(self, arguments),
            _ => return None,
        };
        Some(outcome.unwrap_or_else(ToolResult::error))
    }
}

#[async_trait]
impl Source for WorkspacePack {
    fn id(&self) -> &str {
        SOURCE_ID
    }

    fn kind(&self) -> SourceKind {
        SourceKind::Builtin
    }

    fn tools(&self) -> Vec<ToolDescriptor> {
        self.inner.tools.clone()
    }

    async fn call(&self, call: SourceCall<'_>) -> Result<ToolResult, SourceError> {
        let tool = call.tool.original_name.clone();
        let arguments = call.arguments;
        let workspace = Arc::clone(&self.inner);
        let name = tool.clone();
        // The filesystem work blocks; keep it off the async workers.
        let outcome = tokio::task::spawn_blocking(move || workspace.run(&name, &arguments))
            .await
            .map_err(|e| SourceError::Failed(format!("workspace tool `{tool}` crashed: {e}")))?;
        outcome
            .ok_or_else(|| SourceError::Failed(format!("the workspace pack has no tool `{tool}`")))
    }
}

/// A descriptor with what all four tools share: read-only, safe to run in parallel, and an
/// output schema.
fn descriptor(
    name: &str,
    title: &str,
    description: impl Into<String>,
    input_schema: Value,
    output_schema: Value,
) -> ToolDescriptor {
    let mut d = ToolDescriptor::new(SOURCE_ID, name, description, input_schema);
    d.title = Some(title.to_string());
    d.annotations = ToolAnnotations::read_only();
    d.parallel = true;
    d.output_schema = Some(Arc::new(output_schema));
    d
}
