//! The files that define what toolmux runs and how it sandboxes it: no workspace write may
//! change them, and (through [`ProjectRoot::protected`](crate::ProjectRoot::protected)) the
//! exec sandbox can keep its commands off the same list.
//!
//! They live inside the writable root and are read again when they change (`toolmux serve`
//! reloads the configuration and the registries), so a write there would be a write to
//! toolmux's own settings: a model that may `file_write` could switch the shell's sandbox off,
//! or add a server whose command then runs unsandboxed (finding D20). The list:
//!
//! - the project's `.toolmux/` directory, all of it (the configuration, skills, state), as
//!   its canonical path — wherever a symbolic `.toolmux` or `"root": ".."` puts it;
//! - every file named in the configuration's `registries` (seed 004's `tools.json` and
//!   `mcp.json`: script commands and servers), both the name the configuration gives and,
//!   through a link, the file it leads to;
//! - LeanSpec's `.lean-spec/config.json` and `config.yaml` under the root (where the spec pack
//!   looks for its specs and templates).
//!
//! `skills.paths` are not on it: a skill's files are instructions and references a model
//! reads, which may narrow a turn's tools but never grant one or run anything by themselves.
//!
//! Besides the list, the write tools refuse any path with a `.toolmux` component (compared
//! without regard to case, as `.git` is), so a nested project's configuration is refused too.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use toolmux_config::Config;

/// The name of toolmux's project directory, refused as a component of any written path.
pub(crate) const TOOLMUX_DIR: &str = ".toolmux";

/// Where `toolmux_sessions` makes a session's git worktree, inside `.toolmux/`.
const WORKTREES_DIR: &str = "worktrees";

/// LeanSpec's configuration files, relative to the root.
const LEAN_SPEC_CONFIGS: [&str; 2] = [".lean-spec/config.json", ".lean-spec/config.yaml"];

/// What a protected path is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ProtectedKind {
    /// The project's `.toolmux/` directory (everything beneath it).
    ToolmuxDir,
    /// A file named in the configuration's `registries`.
    Registry,
    /// LeanSpec's `.lean-spec/config.json` or `config.yaml`.
    LeanSpecConfig,
    /// The user's toolmux configuration (`~/.config/toolmux/config.json`), which a project
    /// rooted at the home directory holds beneath its root.
    UserConfig,
}

impl ProtectedKind {
    /// Whether the path is a directory, protected with everything beneath it (else a file).
    pub fn is_dir(self) -> bool {
        matches!(self, ProtectedKind::ToolmuxDir)
    }

    /// What it is, for a refusal.
    pub fn describe(self) -> &'static str {
        match self {
            ProtectedKind::ToolmuxDir => "inside `.toolmux`, toolmux's own configuration",
            ProtectedKind::Registry => "a tool registry named in the configuration's `registries`",
            ProtectedKind::LeanSpecConfig => "LeanSpec's configuration",
            ProtectedKind::UserConfig => "the user's toolmux configuration",
        }
    }
}

impl std::fmt::Display for ProtectedKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.describe())
    }
}

/// One protected path: absolute, with the links above it resolved (the file itself may not
/// exist yet).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProtectedPath {
    /// The path.
    pub path: PathBuf,
    /// What it is.
    pub kind: ProtectedKind,
}

impl ProtectedPath {
    /// Whether it covers `abs` (absolute, no link in it): the same file, or, for a directory,
    /// anything beneath it.
    fn covers(&self, abs: &Path) -> bool {
        if self.kind.is_dir() {
            abs.starts_with(&self.path)
        } else {
            abs == self.path
        }
    }
}

/// The set of protected paths of one project (see the module's doc). Cheap to compare; a
/// [`ProjectRoot`](crate::ProjectRoot) holds the one in force.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProtectedPaths {
    entries: Vec<ProtectedPath>,
}

impl ProtectedPaths {
    /// The protected paths of the project at `project_dir` (the directory that holds
    /// `.toolmux/`) with tools working in `root`, under `config` (its `registries`, relative
    /// to `project_dir`). What `toolmux` computes where it builds the workspace pack, and again
    /// when a reload changes `registries`.
    pub fn for_project(root: &Path, project_dir: &Path, config: &Config) -> Self {
        let mut set = Self::for_root(root, &project_dir.join(TOOLMUX_DIR));
        for registry in &config.registries {
            set.add(&project_dir.join(registry), ProtectedKind::Registry);
        }
        // Read at every load like the project's, and hot-reloaded: beneath a root at `$HOME` a
        // write could switch the sandbox off through it.
        if let Some(user) = toolmux_config::user_config_path() {
            set.add(&user, ProtectedKind::UserConfig);
        }
        set
    }

    /// What is protected when no configuration is known: `toolmux_dir` (the project's
    /// `.toolmux`) and LeanSpec's configuration under `root`.
    pub(crate) fn for_root(root: &Path, toolmux_dir: &Path) -> Self {
        let mut set = Self::default();
        set.add(toolmux_dir, ProtectedKind::ToolmuxDir);
        for config in LEAN_SPEC_CONFIGS {
            set.add(&root.join(config), ProtectedKind::LeanSpecConfig);
        }
        set
    }

    /// Adds `path` as it is named (the links above it resolved) and, when it is a link, the
    /// file it leads to: writing either would change what toolmux reads.
    fn add(&mut self, path: &Path, kind: ProtectedKind) {
        let named = canonical_parent(path);
        let target = std::fs::canonicalize(path).ok();
        for path in std::iter::once(named).chain(target) {
            let entry = ProtectedPath { path, kind };
            if !self.entries.contains(&entry) {
                self.entries.push(entry);
            }
        }
    }

    /// Every protected path.
    pub fn iter(&self) -> impl Iterator<Item = &ProtectedPath> {
        self.entries.iter()
    }

    /// The protected path that covers `abs` (absolute, no link in it): the same file, or a
    /// protected directory or anything beneath it.
    pub fn covering(&self, abs: &Path) -> Option<&ProtectedPath> {
        self.entries.iter().find(|p| p.covers(abs))
    }

    /// Why a write to `abs` under `root` is refused, if it is: covered by the list, or a
    /// `.toolmux` component of `rel` (its path under the root). The one exception: a root
    /// inside `.toolmux/worktrees/` — a coding session's worktree, which toolmux makes there
    /// and confines its agent to ([`ProjectRoot::beneath`](crate::ProjectRoot::beneath)) — is
    /// not covered by `.toolmux/`: it is a checkout toolmux never reads its settings from, and
    /// the protected files and the `.toolmux` component rule still hold in it.
    pub(crate) fn refusal(&self, root: &Path, abs: &Path, rel: &Path) -> Option<ProtectedKind> {
        let a_worktree_of = |toolmux_dir: &Path| {
            let worktrees = toolmux_dir.join(WORKTREES_DIR);
            root.starts_with(&worktrees) && root != worktrees
        };
        let covering = self.entries.iter().find(|p| {
            p.covers(abs) && !(p.kind == ProtectedKind::ToolmuxDir && a_worktree_of(&p.path))
        });
        if let Some(found) = covering {
            return Some(found.kind);
        }
        rel.components()
            .any(|c| is_toolmux_dir(c.as_os_str()))
            .then_some(ProtectedKind::ToolmuxDir)
    }
}

fn is_toolmux_dir(name: &OsStr) -> bool {
    name.eq_ignore_ascii_case(TOOLMUX_DIR)
}

/// `path` with its parent canonicalized (the nearest existing ancestor, when the parent does
/// not exist) and its own name kept: a link is named, not followed.
fn canonical_parent(path: &Path) -> PathBuf {
    match (path.parent(), path.file_name()) {
        (Some(parent), Some(name)) => crate::root::canonical_or_nearest(parent).join(name),
        _ => crate::root::canonical_or_nearest(path),
    }
}
