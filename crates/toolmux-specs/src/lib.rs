//! The built-in `specs` pack: LeanSpec-compatible spec tools over a project's
//! `specs/NNN-name/README.md` files — `spec_list`, `spec_view`, `spec_search`, `spec_create`,
//! `spec_update`, `spec_validate`, `spec_tokens`, `spec_board`, `spec_stats` and
//! `spec_relationships`.
//!
//! It reads and writes LeanSpec's on-disk format exactly, so a team that already keeps specs
//! gets the tools with nothing to migrate, and LeanSpec's own CLI (0.3.0) and this pack give
//! the same ids, order, counts and search scores (the comparison test runs both).
//!
//! - **Discovery** (`discovery`): the specs directory comes from `LEANSPEC_SPECS_DIR`, else
//!   `.lean-spec/config.json` `specsDir` (or `config.yaml` `specs_dir`), else the first of
//!   `specs`, `.lean-spec/specs`, `doc/specs`, `docs/specs`. Spec folders are found up to
//!   three levels deep, links never followed.
//! - **Reading** (`frontmatter`, `store`): frontmatter is split and read the way LeanSpec
//!   reads it (same YAML library family, same aliases, same list shapes). Parses are cached
//!   by path, size and modification time, folder listings by modification time; an
//!   unchanged directory gives back the same snapshot (with its list and stats answers), so a
//!   warm call over a thousand specs costs a `stat` per folder and file. A spec whose
//!   frontmatter is malformed is reported with its file and line, never guessed at.
//! - **Search** (`search`): LeanSpec's query language and scoring, rule for rule.
//! - **Writing** (`update`, `body`, `write`): the frontmatter is edited line by line, never
//!   re-serialised, so unknown keys, key order, comments, quoting and CRLF stay byte for
//!   byte; every edit is re-parsed and checked to change only what it meant to. Writes are
//!   atomic (temp file, fsync, rename) and serialised per spec under a lock held across the
//!   `expectedContentHash` check and the write, so of two racing updates exactly one wins.
//! - **Tools** (`tools`): input and output schemas; reads are annotated read-only (allowed by
//!   default), writes destructive (asked by default).

mod body;
mod discovery;
mod error;
mod file;
mod frontmatter;
mod input;
mod model;
mod read;
mod resources;
mod search;
mod store;
mod tokens;
mod tools;
mod update;
mod validate;
mod write;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;
use toolmux_core::{
    Source, SourceCall, SourceError, SourceKind, ToolDescriptor, ToolResult, run_blocking,
};
use toolmux_workspace::ProjectRoot;

pub use discovery::{Config, Limits, find_specs_dir};
pub use error::SpecsError;
#[cfg(feature = "cli")]
pub use input::cli;
pub use input::{GroupBy, SpecBoard, SpecFilter, TagMatch};
pub use model::{BrokenSpec, Doc, Meta, Priority, Spec, Status, SubSpec, Transition};
pub use resources::{SPEC_SCHEME, spec_uri};
pub use store::Snapshot;
pub use tools::TOOL_NAMES;

/// The environment variable that overrides the specs directory (relative to the root).
pub const SPECS_DIR_ENV: &str = "LEANSPEC_SPECS_DIR";

/// The `specs` source. Cheap to clone.
#[derive(Clone, Debug)]
pub struct SpecsSource {
    inner: Arc<Inner>,
}

#[derive(Debug)]
pub(crate) struct Inner {
    pub(crate) root: PathBuf,
    /// The same root as the workspace pack sees it: what a caller names by path (`spec_tokens`
    /// of a file) is read through it, confined as the workspace tools are.
    pub(crate) project: ProjectRoot,
    pub(crate) config: Config,
    pub(crate) store: store::Store,
    pub(crate) locks: write::Locks,
    tools: Vec<ToolDescriptor>,
}

impl SpecsSource {
    /// The pack for `project` (the root the workspace pack confines to, with toolmux's state
    /// directory), with the specs directory found as LeanSpec finds it (`LEANSPEC_SPECS_DIR`
    /// included). `None` when the project has no specs directory.
    pub fn open(project: &ProjectRoot) -> Result<Option<Self>, SpecsError> {
        let env = std::env::var(SPECS_DIR_ENV).ok();
        Self::open_in(project.clone(), env.as_deref())
    }

    /// The pack for the project at `root` (its state at `<root>/.toolmux/state`), with the
    /// override given instead of read from the environment.
    pub fn open_with(root: &Path, specs_dir: Option<&str>) -> Result<Option<Self>, SpecsError> {
        let project = ProjectRoot::new(root).map_err(|e| SpecsError::Config {
            path: root.to_path_buf(),
            message: e.to_string(),
        })?;
        Self::open_in(project, specs_dir)
    }

    fn open_in(project: ProjectRoot, specs_dir: Option<&str>) -> Result<Option<Self>, SpecsError> {
        let root = project.path().to_path_buf();
        let config = Config::load(&project)?;
        let Some(dir) = find_specs_dir(&root, &config, specs_dir) else {
            return Ok(None);
        };
        let dir = dir.canonicalize().map_err(|e| SpecsError::io(&dir, e))?;
        // The pack reads and writes only inside the project, like the workspace pack: a
        // `specsDir` (or `LEANSPEC_SPECS_DIR`) that leads out of it, by `..`, an absolute
        // path or a link, is refused rather than followed.
        if !dir.starts_with(&root) {
            return Err(SpecsError::Config {
                path: dir,
                message: format!(
                    "the specs directory is outside the project root `{}`",
                    root.display()
                ),
            });
        }
        Ok(Some(Self {
            inner: Arc::new(Inner {
                root,
                store: store::Store::new(dir, project.clone()),
                project,
                config,
                locks: write::Locks::default(),
                tools: tools::descriptors(),
            }),
        }))
    }

    /// The canonical project root.
    pub fn root(&self) -> &Path {
        &self.inner.root
    }

    /// The canonical specs directory.
    pub fn specs_dir(&self) -> &Path {
        self.inner.store.specs_dir()
    }

    /// The project's LeanSpec config.
    pub fn config(&self) -> &Config {
        &self.inner.config
    }

    /// All specs now (cached; see the crate docs). For REST listings and MCP resources.
    pub fn snapshot(&self) -> Result<Arc<Snapshot>, SpecsError> {
        self.inner.store.snapshot()
    }

    /// One spec by number, folder name or unique fragment.
    pub fn spec(&self, reference: &str) -> Result<Spec, SpecsError> {
        self.snapshot()?.lookup(reference).cloned()
    }

    /// A number that changes whenever a spec file is added, removed or changed: poll it to
    /// send `list_changed`, or compare it with a cached one.
    pub fn version(&self) -> Result<u64, SpecsError> {
        Ok(self.snapshot()?.version)
    }

    /// Runs a tool by name, synchronously (it reads and writes files: call it off the async
    /// workers). `None` when the pack has no such tool. A refusal the caller can act on is a
    /// tool-level error result.
    pub fn run(
        &self,
        tool: &str,
        arguments: &serde_json::Map<String, Value>,
    ) -> Option<ToolResult> {
        let outcome = tools::run(&self.inner, tool, arguments)?;
        Some(match outcome {
            Ok((value, text)) => ToolResult::structured_with_text(value, text),
            Err(e) => ToolResult::failure(e.kind(), e.to_string()),
        })
    }
}

#[async_trait]
impl Source for SpecsSource {
    fn id(&self) -> &str {
        tools::SOURCE_ID
    }

    fn kind(&self) -> SourceKind {
        SourceKind::Builtin
    }

    fn description(&self) -> Option<String> {
        Some(
            "The project's specs (LeanSpec's format): list, read, search, create and update them."
                .to_string(),
        )
    }

    fn tools(&self) -> Vec<ToolDescriptor> {
        self.inner.tools.clone()
    }

    async fn call(&self, call: SourceCall<'_>) -> Result<ToolResult, SourceError> {
        let tool = call.tool.original_name.clone();
        let (this, name, arguments) = (self.clone(), tool.clone(), call.arguments);
        run_blocking(tools::SOURCE_ID, &tool, move || this.run(&name, &arguments)).await
    }
}
