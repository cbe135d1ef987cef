//! The built-in `workspace` pack: `file_read`, `file_search`, `grep` and `directory_list`,
//! which read, and `file_write`, `file_edit` and `apply_patch`, which write (see `write.rs`:
//! planned whole, then carried out atomically, all files or none), every one of them confined
//! to one project root. The writers are annotated destructive, so policy asks by default, and
//! the person asked sees the diff ([`Source::preview`]).
//!
//! These are the tools an agent uses most, and the ones a hostile prompt would most like to
//! turn against the machine (`../../.ssh/id_rsa`). So every path a caller gives goes through
//! [`ProjectRoot::resolve`] first, and confinement works by construction rather than by a
//! check at the end:
//!
//! - the root is canonicalized and opened once, when the pack is made;
//! - a path is refused on its text alone when it is absolute, starts with `~`, holds a NUL
//!   byte, a backslash or a percent-escape, or climbs above the root with `..` (lexically:
//!   `a/../b` is fine, `a/../../b` is not);
//! - the rest is walked one component at a time from the root with `symlink_metadata`, and
//!   symbolic links are followed by hand: the moment a link's target would leave the root it
//!   is refused, without looking at the target. A link to a missing file outside therefore
//!   answers exactly like a link to an existing one, and nothing outside the root is ever
//!   opened, listed or even tested for existence;
//! - the resulting path (which has no link left in it) is opened by the kernel beneath the
//!   root's descriptor with `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)` (on kernels
//!   without it, one `openat(O_NOFOLLOW)` per component), and the file is read from that
//!   descriptor. It is opened non-blocking and checked with `fstat` to be a regular file, so a
//!   FIFO swapped in cannot hang a thread;
//! - the walkers behind `file_search`, `grep` and `directory_list` never follow links (a link
//!   is listed as a link and never searched through), never enter `.git`, and only open
//!   regular files. Every entry they report or search is opened again beneath the root's
//!   descriptor first, and skipped when that fails. The `.gitignore` and `.ignore` files
//!   they honour are read by the `ignore` crate by name, so a directory is entered only when
//!   those are absent, directories or regular files of at most 1 MiB (a FIFO there would
//!   block the walk for good, a link to `/dev/zero` would exhaust memory); another is
//!   skipped, and `.git/info/exclude` is not read. A writer that swaps an ignore file for a
//!   FIFO between that check and the crate's open can still block one walk;
//! - toolmux's own state directory (the execution log holds every call's arguments and
//!   results) is refused by every tool and skipped by every walker, compared canonical with
//!   canonical, wherever the project directory and a symbolic `.toolmux` put it;
//! - the write tools (and [`ProjectRoot::write_text`]) never write the files that define what
//!   toolmux runs and how it is sandboxed ([`ProtectedPaths`]: `.toolmux/`, the registries,
//!   LeanSpec's configuration), nor `.git`.
//!
//! So confinement holds against a concurrent writer too: another process swapping a checked
//! directory for a link to elsewhere while a call runs makes the open fail (the call says the
//! path changed, or a walker skips the entry) instead of reaching outside the root. What is
//! still not defended: a bind mount inside the root (mounting takes privileges), and names of
//! directories that were swapped back before the entry was checked, which are then names
//! inside the root. The `.gitignore` files of the root's parent directories are honoured, as
//! `rg` does; they can only hide files, never reveal them.
//!
//! One call never takes more than its share: a file is read under a byte cap, `grep` holds at
//! most [`WorkspaceLimits::max_line_bytes`] of one line in memory (a file with a longer line
//! is skipped with a note), `file_read` stops counting lines after a byte budget, and at most
//! [`WorkspaceLimits::max_concurrent_calls`] calls run at once; the others wait their turn
//! without holding a thread.
//!
//! Search uses ripgrep's own crates (`ignore`, `globset`, `grep-regex`, `grep-searcher`), so
//! `.gitignore` rules behave as in `rg` (also outside a git repository) and `grep` runs at
//! ripgrep's speed. Every result carries text for a model and structured content for a
//! program, and every result is capped ([`WorkspaceLimits`]) with a note that says so.

mod apply_patch;
mod args;
mod directory_list;
mod file_edit;
mod file_read;
mod file_search;
mod file_write;
mod grep;
mod output;
mod pins;
mod protected;
mod reads;
mod root;
mod walk;
mod write;

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use async_trait::async_trait;
use serde_json::{Map, Value};
use tokio::sync::Semaphore;
use toolmux_core::{
    Source, SourceCall, SourceError, SourceKind, ToolAnnotations, ToolDescriptor, ToolErrorKind,
    ToolResult,
};
use uuid::Uuid;

pub use protected::{ProtectedKind, ProtectedPath, ProtectedPaths};
pub use root::{PathError, ProjectRoot};

/// The id of the pack's source in the registry.
const SOURCE_ID: &str = "workspace";

/// The error of a call whose walk stopped because its caller went away (see [`Abandon`]).
pub(crate) const ABANDONED: &str = "the call was abandoned by its caller";

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
    /// The most memory `grep` gives one line (with its context) of one file (default 1 MiB:
    /// four times the read cap, as [`WorkspaceLimits::from_read_bytes`] derives it). The searcher holds a whole line at once, so without a
    /// limit a one-line file of a gigabyte costs a gigabyte per call; a file with a longer
    /// line is not searched past it, and the result says so.
    pub max_line_bytes: usize,
    /// How many calls of the pack may run at once (default 8). Each runs on a blocking thread
    /// (and `grep` on a few more), so a fan-out of thousands of calls must queue rather than
    /// start thousands of threads; a waiting call holds no thread.
    pub max_concurrent_calls: usize,
    /// The largest file `file_write`, `file_edit` and `apply_patch` change (default 32 MiB):
    /// a change holds the old content, the new one and their diff in memory.
    pub max_edit_bytes: usize,
}

/// How many read caps' worth of one line `grep` holds at most ([`WorkspaceLimits::max_line_bytes`]).
const LINE_BYTES_PER_READ_BYTE: usize = 4;

impl WorkspaceLimits {
    /// The default limits with the read cap `max_read_bytes`, and the line limit that goes
    /// with it: [`WorkspaceLimits::max_line_bytes`] is four read caps' worth, here and in the
    /// defaults alike. Set other fields with struct update syntax.
    pub fn from_read_bytes(max_read_bytes: usize) -> Self {
        Self {
            max_read_bytes,
            max_results: 1000,
            max_output_bytes: 1024 * 1024,
            max_line_bytes: max_read_bytes.saturating_mul(LINE_BYTES_PER_READ_BYTE),
            max_concurrent_calls: 8,
            max_edit_bytes: 32 * 1024 * 1024,
        }
    }
}

impl Default for WorkspaceLimits {
    fn default() -> Self {
        Self::from_read_bytes(256 * 1024)
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
    /// One permit per call running (`max_concurrent_calls`).
    running: Arc<Semaphore>,
    /// What each session has read, for `file_write`'s read-before-replace rule.
    pub(crate) reads: reads::Reads,
    /// What approvals showed of writes, so that a write carries out what was approved.
    pins: pins::Pins,
}

impl WorkspacePack {
    /// A pack serving the project at `root` (canonicalized here, once), with toolmux's state
    /// assumed at `<root>/.toolmux/state`: right when the root is the project directory.
    pub fn new(root: impl AsRef<Path>, limits: WorkspaceLimits) -> Result<Self, WorkspaceError> {
        Self::make(ProjectRoot::new(root), limits)
    }

    /// A pack serving `root` that hides toolmux's state directory `state_dir` (the project
    /// directory's `.toolmux/state`, wherever the root is) from every tool.
    pub fn with_state_dir(
        root: impl AsRef<Path>,
        state_dir: impl AsRef<Path>,
        limits: WorkspaceLimits,
    ) -> Result<Self, WorkspaceError> {
        Self::make(ProjectRoot::with_state_dir(root, state_dir), limits)
    }

    /// A pack serving `root` as it was opened: the same root (and so the same protected
    /// paths, [`ProjectRoot::protect`]) as the other packs given clones of it.
    pub fn on_root(root: ProjectRoot, limits: WorkspaceLimits) -> Result<Self, WorkspaceError> {
        Self::make(Ok(root), limits)
    }

    fn make(
        root: Result<ProjectRoot, PathError>,
        limits: WorkspaceLimits,
    ) -> Result<Self, WorkspaceError> {
        for (name, value) in [
            ("max_read_bytes", limits.max_read_bytes),
            ("max_results", limits.max_results),
            ("max_output_bytes", limits.max_output_bytes),
            ("max_line_bytes", limits.max_line_bytes),
            ("max_concurrent_calls", limits.max_concurrent_calls),
            ("max_edit_bytes", limits.max_edit_bytes),
        ] {
            if value == 0 {
                return Err(WorkspaceError::ZeroLimit { name });
            }
        }
        let root = root?;
        let tools = vec![
            file_read::descriptor_for(&limits),
            file_search::descriptor_for(&limits),
            grep::descriptor_for(&limits),
            directory_list::descriptor_for(&limits),
            file_write::descriptor_for(&limits),
            file_edit::descriptor_for(&limits),
            apply_patch::descriptor_for(&limits),
        ];
        let running = Arc::new(Semaphore::new(
            limits.max_concurrent_calls.min(Semaphore::MAX_PERMITS),
        ));
        Ok(Self {
            inner: Arc::new(Workspace {
                root,
                limits,
                tools,
                running,
                reads: reads::Reads::default(),
                pins: pins::Pins::default(),
            }),
        })
    }

    /// The canonical project root.
    pub fn root(&self) -> &Path {
        self.inner.root.path()
    }

    /// The project root the pack works in, with its protected paths.
    pub fn project_root(&self) -> &ProjectRoot {
        &self.inner.root
    }
}

impl Workspace {
    /// Runs one tool; a message the caller can act on becomes a tool-level error. The walks of
    /// `grep`, `file_search` and `directory_list` stop early once `abandoned` is set (the
    /// caller gave up). A write asked about (`approval`, [`CallContext::approval`]) carries out what that
    /// approval's preview showed, or nothing.
    ///
    /// [`CallContext::approval`]: toolmux_core::CallContext::approval
    fn run(
        &self,
        tool: &str,
        arguments: &Map<String, Value>,
        session: Option<&str>,
        approval: Option<Uuid>,
        abandoned: &AtomicBool,
    ) -> Option<ToolResult> {
        if let Some(plan) = self.plan(tool, arguments, session) {
            return Some(match plan {
                Ok(plan) => {
                    let shown = || write::preview(&plan.reports, PREVIEW_BYTES);
                    match self.pins.check(approval, &plan.stamps(), shown) {
                        Ok(()) => plan.carry_out(self, session),
                        Err(moved) => ToolResult::failure(Some(ToolErrorKind::Conflict), moved),
                    }
                }
                Err(refused) => refused,
            });
        }
        let outcome = match tool {
            file_read::NAME => file_read::run(self, arguments, session),
            file_search::NAME => file_search::run(self, arguments, abandoned),
            grep::NAME => grep::run(self, arguments, abandoned),
            directory_list::NAME => directory_list::run(self, arguments, abandoned),
            _ => return None,
        };
        Some(outcome.unwrap_or_else(ToolResult::error))
    }

    /// The plan of a write tool's call (nothing written yet); `None` for the other tools.
    fn plan(
        &self,
        tool: &str,
        arguments: &Map<String, Value>,
        session: Option<&str>,
    ) -> Option<Result<write::Plan, ToolResult>> {
        Some(match tool {
            file_write::NAME => file_write::plan(self, arguments, session),
            file_edit::NAME => file_edit::plan(self, arguments),
            apply_patch::NAME => apply_patch::plan(self, arguments),
            _ => return None,
        })
    }
}

/// The most of a diff an approval request shows.
const PREVIEW_BYTES: usize = 64 * 1024;

#[async_trait]
impl Source for WorkspacePack {
    fn id(&self) -> &str {
        SOURCE_ID
    }

    fn kind(&self) -> SourceKind {
        SourceKind::Builtin
    }

    fn description(&self) -> Option<String> {
        Some("Reads, searches and edits the project's files.".to_string())
    }

    fn tools(&self) -> Vec<ToolDescriptor> {
        self.inner.tools.clone()
    }

    /// A write tool's diff, planned as the call would plan it (nothing is written), or why the
    /// call would be refused.
    async fn preview(&self, call: SourceCall<'_>) -> Option<String> {
        let tool = call.tool.original_name.clone();
        if ![file_write::NAME, file_edit::NAME, apply_patch::NAME].contains(&tool.as_str()) {
            return None;
        }
        let workspace = Arc::clone(&self.inner);
        let arguments = call.arguments;
        let session = call.context.session.clone();
        let turn = Arc::clone(&self.inner.running).acquire_owned().await.ok()?;
        let planned = tokio::task::spawn_blocking(move || {
            let plan = workspace.plan(&tool, &arguments, session.as_deref())?;
            drop(turn);
            Some(match plan {
                Ok(plan) => Ok((write::preview(&plan.reports, PREVIEW_BYTES), plan.stamps())),
                Err(refused) => Err(refused.text_content()),
            })
        })
        .await
        .ok()
        .flatten()?;
        // Pinned here, not on the blocking thread: a preview the hub stopped waiting for (its
        // time limit) is dropped at this await and pins nothing, so no pin outlives the
        // approval's end, which the hub reports only after this future is gone.
        Some(match planned {
            Ok((shown, stamps)) => match call.context.approval {
                Some(approval) => match self.inner.pins.pin(approval, stamps, &shown) {
                    Ok(()) => shown,
                    Err(full) => format!("(the call would fail: {full})"),
                },
                // Nobody is asked under an id: nothing to pin for.
                None => shown,
            },
            Err(refused) => format!("(the call would fail: {refused})"),
        })
    }

    fn approval_ended(&self, approval: Uuid) {
        self.inner.pins.forget(approval);
    }

    async fn call(&self, call: SourceCall<'_>) -> Result<ToolResult, SourceError> {
        let tool = call.tool.original_name.clone();
        let arguments = call.arguments;
        let workspace = Arc::clone(&self.inner);
        let name = tool.clone();
        // Wait for a turn before taking a thread: a call beyond `max_concurrent_calls` waits
        // here, as a future, not on a blocking thread. The semaphore is never closed.
        let turn = Arc::clone(&self.inner.running)
            .acquire_owned()
            .await
            .map_err(|_| SourceError::Failed("the workspace pack is shutting down".to_string()))?;
        // The filesystem work blocks; keep it off the async workers. The turn is given back
        // when the work ends, not when the caller stops waiting for it (a timeout): work that
        // outlives its caller still counts. So that it does not keep the turn long, a caller
        // that goes away (this future dropped: a timeout, a cancelled script or turn) tells
        // the walks to stop.
        let abandoned = Arc::new(AtomicBool::new(false));
        let _abandon = Abandon(Arc::clone(&abandoned));
        let session = call.context.session.clone();
        let approval = call.context.approval;
        let outcome = tokio::task::spawn_blocking(move || {
            let outcome =
                workspace.run(&name, &arguments, session.as_deref(), approval, &abandoned);
            drop(turn);
            outcome
        })
        .await
        .map_err(|e| SourceError::Failed(format!("workspace tool `{tool}` crashed: {e}")))?;
        outcome
            .ok_or_else(|| SourceError::Failed(format!("the workspace pack has no tool `{tool}`")))
    }
}

/// Sets its flag when dropped: when a call's future goes away, finished or not.
struct Abandon(Arc<AtomicBool>);

impl Drop for Abandon {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// How a tool of the pack touches the project, which decides what its descriptor tells the hub.
#[derive(Clone, Copy)]
enum Access {
    /// Read-only, and safe to run in parallel.
    Read,
    /// Destructive (so policy asks by default), not idempotent, and run alone in a batch.
    Write,
}

/// A descriptor with what every tool of the pack shares (its title, an output schema) and
/// what its `access` implies.
fn descriptor(
    access: Access,
    name: &str,
    title: &str,
    description: impl Into<String>,
    input_schema: Value,
    output_schema: Value,
) -> ToolDescriptor {
    let mut d = ToolDescriptor::new(SOURCE_ID, name, description, input_schema);
    d.title = Some(title.to_string());
    match access {
        Access::Read => {
            d.annotations = ToolAnnotations::read_only();
            d.parallel = true;
        }
        Access::Write => {
            d.annotations = ToolAnnotations {
                read_only_hint: Some(false),
                destructive_hint: Some(true),
                idempotent_hint: Some(false),
                open_world_hint: Some(false),
            };
        }
    }
    d.output_schema = Some(Arc::new(output_schema));
    d
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn arguments(value: Value) -> Map<String, Value> {
        let Value::Object(map) = value else {
            unreachable!()
        };
        map
    }

    #[test]
    fn an_abandoned_walk_stops_instead_of_keeping_its_turn() {
        let dir = tempfile::tempdir().unwrap();
        for i in 0..50 {
            std::fs::write(dir.path().join(format!("f{i}.txt")), "needle\n").unwrap();
        }
        let pack = WorkspacePack::new(dir.path(), WorkspaceLimits::default()).unwrap();
        let ws = &pack.inner;
        let grep = arguments(json!({"pattern": "needle"}));
        let search = arguments(json!({"pattern": "*.txt"}));
        let list = arguments(json!({}));
        // Not abandoned: everything is found.
        let live = AtomicBool::new(false);
        let found = ws.run("grep", &grep, None, None, &live).unwrap();
        assert_eq!(found.structured_content.unwrap()["filesSearched"], 50);
        assert!(
            !ws.run("file_search", &search, None, None, &live)
                .unwrap()
                .is_error
        );
        let listed = ws.run("directory_list", &list, None, None, &live).unwrap();
        assert_eq!(
            listed.structured_content.unwrap()["entries"]
                .as_array()
                .unwrap()
                .len(),
            50
        );
        // Abandoned (the caller's future was dropped): the walks stop at the next entry.
        let gone = AtomicBool::new(true);
        for (tool, args) in [
            ("grep", &grep),
            ("file_search", &search),
            ("directory_list", &list),
        ] {
            let result = ws.run(tool, args, None, None, &gone).unwrap();
            assert!(result.is_error, "{tool}");
            assert_eq!(result.text_content(), ABANDONED, "{tool}");
            assert_eq!(ABANDONED, "the call was abandoned by its caller");
        }
    }

    #[test]
    fn the_line_limit_is_four_read_caps_by_default_and_when_derived() {
        let defaults = WorkspaceLimits::default();
        assert_eq!(defaults.max_read_bytes, 256 * 1024);
        assert_eq!(defaults.max_line_bytes, 1024 * 1024);
        let derived = WorkspaceLimits::from_read_bytes(1000);
        assert_eq!(derived.max_line_bytes, 4000);
        assert_eq!(
            WorkspaceLimits {
                max_read_bytes: 256 * 1024,
                max_line_bytes: 1024 * 1024,
                ..derived
            },
            defaults
        );
        assert_eq!(
            WorkspaceLimits::from_read_bytes(usize::MAX).max_line_bytes,
            usize::MAX
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_pin_lives_as_long_as_its_approval_denied_or_cancelled() {
        use toolmux_core::{Approval, ApprovalQueue, CallContext, Channel, Hub, NullSink};
        let dir = tempfile::tempdir().unwrap();
        let pack = WorkspacePack::new(dir.path(), WorkspaceLimits::default()).unwrap();
        let hub = Hub::new(Default::default(), Arc::new(NullSink));
        hub.add_source(Arc::new(pack.clone()));
        let queue = Arc::new(ApprovalQueue::new());
        let context = CallContext::new(Channel::Rest).with_approver(queue.clone());
        let waiting = |count: usize| {
            let queue = Arc::clone(&queue);
            async move {
                // Polled, not timed: the bound only turns a hang into a failure.
                for _ in 0..20_000 {
                    let pending = queue.pending(None);
                    if pending.len() >= count {
                        return pending;
                    }
                    tokio::time::sleep(std::time::Duration::from_millis(1)).await;
                }
                panic!("no approval waited");
            }
        };
        let write = json!({"path": "a.txt", "content": "x"});
        // Denied: the call never runs, and its pin goes with the approval.
        let call = {
            let (hub, context, write) = (hub.clone(), context.clone(), write.clone());
            tokio::spawn(async move { hub.call("file_write", write, &context).await })
        };
        let id = waiting(1).await[0].id;
        assert_eq!(pack.inner.pins.len(), 1);
        queue
            .answer(
                id,
                Approval::Deny {
                    reason: "no".into(),
                },
            )
            .unwrap();
        assert!(call.await.unwrap().is_err());
        assert_eq!(pack.inner.pins.len(), 0);
        // Cancelled while waiting (the caller went away): the same.
        let call = {
            let (hub, context) = (hub.clone(), context.clone());
            tokio::spawn(async move { hub.call("file_write", write, &context).await })
        };
        waiting(1).await;
        assert_eq!(pack.inner.pins.len(), 1);
        call.abort();
        assert!(call.await.unwrap_err().is_cancelled());
        assert_eq!(pack.inner.pins.len(), 0);
        assert!(queue.pending(None).is_empty());
        assert!(!dir.path().join("a.txt").exists());
    }

    #[test]
    fn dropping_a_call_marks_it_abandoned() {
        let flag = Arc::new(AtomicBool::new(false));
        drop(Abandon(Arc::clone(&flag)));
        assert!(flag.load(Ordering::Relaxed));
    }
}
