//! Where tools come from: built-in packs, script tools, external MCP servers.

use std::sync::{Arc, Weak};

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::{Map, Value};

use crate::context::CallContext;
use crate::error::SourceError;
use crate::model::{ToolDescriptor, ToolResult};

/// The family a source belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SourceKind {
    /// A pack compiled into toolmux.
    Builtin,
    /// User-defined tools backed by commands.
    Script,
    /// An external MCP server.
    Mcp,
}

/// Whether a source's tool list is known.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SourceState {
    /// Tools were never discovered.
    Never,
    /// Discovery is running.
    Discovering,
    /// The tool list is known.
    Success,
    /// The last discovery failed; the tools shown (if any) are from an earlier success.
    Failed,
}

/// A source's health, shown in the catalog.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SourceStatus {
    /// Discovery state.
    pub state: SourceState,
    /// The last error, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// When the tool list was last discovered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_discovery: Option<DateTime<Utc>>,
}

impl SourceStatus {
    /// The status of a source whose tools are always known (built-in packs, script tools).
    pub fn ready() -> Self {
        Self {
            state: SourceState::Success,
            error: None,
            last_discovery: None,
        }
    }
}

/// One call handed to a source, after the pipeline has checked it.
#[derive(Debug)]
pub struct SourceCall<'a> {
    /// The tool (its `original_name` is the source's own name for it).
    pub tool: &'a ToolDescriptor,
    /// The validated arguments.
    pub arguments: Map<String, Value>,
    /// The caller's context.
    pub context: &'a CallContext,
}

/// A provider of tools. Listing must be cheap and must never start a process or open a
/// connection (it reads a cache); calling may do either.
#[async_trait]
pub trait Source: Send + Sync + 'static {
    /// The source's id: a built-in pack's name or a configured server's name.
    fn id(&self) -> &str;

    /// Its family.
    fn kind(&self) -> SourceKind;

    /// What its tools are for, in a sentence a model reads in the chat's system prompt to know
    /// when to turn to this source; `None` when it cannot say.
    fn description(&self) -> Option<String> {
        None
    }

    /// The tools it provides now, with registry names already assigned.
    fn tools(&self) -> Vec<ToolDescriptor>;

    /// Its health.
    fn status(&self) -> SourceStatus {
        SourceStatus::ready()
    }

    /// Runs one tool.
    async fn call(&self, call: SourceCall<'_>) -> Result<ToolResult, SourceError>;

    /// What the call would change, shown to the person asked to approve it (a diff, say);
    /// `None` when the source has nothing to show. It must change nothing: the hub calls it
    /// before asking about an `ask` call, within the tool's time limit. Its context carries
    /// the approval's id ([`CallContext::approval`]), which the call gets too if the approval
    /// lets it run: what the preview planned from is kept under that id, never under the
    /// call's arguments (an identical call is another approval).
    async fn preview(&self, _call: SourceCall<'_>) -> Option<String> {
        None
    }

    /// The approval `approval` (the [`CallContext::approval`] its preview got) is over: its
    /// call has ended, or will never run (denied, unanswered, cancelled, refused after the
    /// answer). The hub says so exactly once per approval it asked; a source drops here what
    /// it kept for the call, so what a preview keeps lives as long as its approval and no
    /// longer.
    fn approval_ended(&self, _approval: uuid::Uuid) {}

    /// Called once when the source joins a hub, with a handle to report that its tool list
    /// changed (after a discovery, say). Sources whose tools never change ignore it.
    fn attach(&self, _notifier: ChangeNotifier) {}
}

/// Tells the hub that a source's tools changed, so it publishes a new catalog. Holds the hub
/// weakly: a source never keeps a hub alive.
#[derive(Clone)]
pub struct ChangeNotifier {
    pub(crate) hub: Weak<crate::hub::HubInner>,
}

impl ChangeNotifier {
    /// Publishes a new catalog snapshot if the hub still exists.
    pub fn notify(&self) {
        if let Some(inner) = self.hub.upgrade() {
            crate::hub::HubInner::rebuild(&inner);
        }
    }

    /// A notifier attached to no hub.
    pub fn detached() -> Self {
        Self { hub: Weak::new() }
    }
}

impl std::fmt::Debug for ChangeNotifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChangeNotifier")
            .field("attached", &(self.hub.strong_count() > 0))
            .finish()
    }
}

pub(crate) type SharedSource = Arc<dyn Source>;

/// Runs one call of a source whose tools do blocking file work (the spec and skills packs) on
/// tokio's blocking pool, off the async workers. `work` answers `None` for a tool the source
/// does not have; a panic in it fails the call, not the process.
pub async fn run_blocking(
    source: &str,
    tool: &str,
    work: impl FnOnce() -> Option<ToolResult> + Send + 'static,
) -> Result<ToolResult, SourceError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| {
            SourceError::Failed(format!("tool `{tool}` of source `{source}` crashed: {e}"))
        })?
        .ok_or_else(|| SourceError::Failed(format!("source `{source}` has no tool `{tool}`")))
}
