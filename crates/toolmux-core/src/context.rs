//! Who is calling, and through which channel.

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::approval::Approver;
use crate::backchannel::Backchannel;
use crate::scope::ToolScope;

/// The channel a call came through. It is recorded in the execution log.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Channel {
    /// The `toolmux` command line.
    Cli,
    /// The MCP server channel.
    Mcp,
    /// The REST API.
    Rest,
    /// toolmux's own chat loop.
    Chat,
    /// A code-mode script.
    Code,
}

impl fmt::Display for Channel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Channel::Cli => "cli",
            Channel::Mcp => "mcp",
            Channel::Rest => "rest",
            Channel::Chat => "chat",
            Channel::Code => "code",
        })
    }
}

/// The context of a call: its channel, the conversation or session it belongs to, the caller,
/// and how to ask a person when a policy says `ask`.
#[derive(Clone)]
pub struct CallContext {
    /// The channel.
    pub channel: Channel,
    /// Conversation or session id, when the channel has one.
    pub session: Option<String>,
    /// Who called (a client name, a key id), when known.
    pub caller: Option<String>,
    /// Asks a person about `ask` calls. Without one, such calls are denied with a message
    /// that says how to change the policy.
    pub approver: Option<Arc<dyn Approver>>,
    /// A trusted host caller (an authenticated REST request, the CLI) that may call internal
    /// tools. Model-facing channels never set this.
    pub trusted: bool,
    /// Carries the call's progress, log messages and requests back to the caller, when its
    /// channel can carry them.
    pub backchannel: Option<Arc<dyn Backchannel>>,
    /// The part of the catalog the channel serves. The hub refuses calls to tools outside it,
    /// and a code-mode script inherits it, so a filtered-out tool has no second door.
    pub scope: Option<Arc<ToolScope>>,
    /// This call's execution-log id, set by the hub as the call starts, so that a source whose
    /// work makes calls of its own (`delegate`) can name it as their parent.
    pub call: Option<uuid::Uuid>,
    /// The execution-log id of the call this one is made for (a delegated task's calls name
    /// their `delegate` call), recorded in the log as `parent`.
    pub parent: Option<uuid::Uuid>,
    /// The id of the approval this call was asked under, set by the hub (never by a caller:
    /// the hub clears it as a call starts) on the context it hands [`Source::preview`] and,
    /// once the approval lets the call run, [`Source::call`]. A source keys what its preview
    /// showed by it, so that the call carries out exactly what was approved or nothing
    /// (THREATS.md rule 6). `None` for a call nobody was asked about.
    ///
    /// [`Source::preview`]: crate::Source::preview
    /// [`Source::call`]: crate::Source::call
    pub approval: Option<uuid::Uuid>,
    /// The id the caller gave this call (the model's tool call id in a chat turn), carried into
    /// the approval it raises so a page shows the approval on that call's card instead of
    /// guessing the call from its tool and arguments. `None` for callers that give none.
    pub tool_call_id: Option<String>,
}

impl CallContext {
    /// A context for a channel with no session, caller or approver.
    pub fn new(channel: Channel) -> Self {
        Self {
            channel,
            session: None,
            caller: None,
            approver: None,
            trusted: false,
            backchannel: None,
            scope: None,
            call: None,
            parent: None,
            approval: None,
            tool_call_id: None,
        }
    }

    /// Sets the approver.
    pub fn with_approver(mut self, approver: Arc<dyn Approver>) -> Self {
        self.approver = Some(approver);
        self
    }

    /// Sets the session id.
    pub fn with_session(mut self, session: impl Into<String>) -> Self {
        self.session = Some(session.into());
        self
    }

    /// Sets the id the caller gave the call.
    pub fn with_tool_call_id(mut self, id: impl Into<String>) -> Self {
        self.tool_call_id = Some(id.into());
        self
    }

    /// Sets the way back to the caller.
    pub fn with_backchannel(mut self, backchannel: Arc<dyn Backchannel>) -> Self {
        self.backchannel = Some(backchannel);
        self
    }

    /// Narrows the call, and every call a script it runs makes, to what the channel serves.
    pub fn with_scope(mut self, scope: Arc<ToolScope>) -> Self {
        self.scope = Some(scope);
        self
    }

    /// Whether a tool is within the channel's scope (every tool is, without one).
    pub fn admits(&self, tool: &crate::model::ToolDescriptor) -> bool {
        self.scope.as_ref().is_none_or(|s| s.admits(tool))
    }

    /// Whether the channel offers `name` as one of its entry points (code mode, discovery mode).
    pub fn names_entry_point(&self, name: &str) -> bool {
        self.scope
            .as_ref()
            .is_some_and(|s| s.entry_points.iter().any(|p| p == name))
    }

    /// Marks the caller as trusted to use internal tools.
    pub fn trusted(mut self) -> Self {
        self.trusted = true;
        self
    }
}

impl fmt::Debug for CallContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CallContext")
            .field("channel", &self.channel)
            .field("session", &self.session)
            .field("caller", &self.caller)
            .field("approver", &self.approver.is_some())
            .field("trusted", &self.trusted)
            .field("backchannel", &self.backchannel.is_some())
            .field("scope", &self.scope)
            .field("call", &self.call)
            .field("parent", &self.parent)
            .field("approval", &self.approval)
            .field("tool_call_id", &self.tool_call_id)
            .finish()
    }
}
