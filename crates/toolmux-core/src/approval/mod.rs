//! Asking a person: before an `ask` call runs, and the questions calls put to them. Each
//! channel brings its own approver: a terminal prompt, an MCP elicitation, or the one queue
//! ([`ApprovalQueue`]) that the REST API, the web app and the chat stream answer.
//!
//! - `queue`: the queue of everything waiting on a person.
//! - `question`: questions, the one answer type, and the one rule for an answer that does not
//!   fit.
//! - `events`: what waits, as listings and the event stream show it.
//! - `grants`: "allow for this conversation".
//! - `template`: a tool's configured approval message.

mod events;
mod grants;
mod question;
mod queue;
mod template;

pub use events::{Outcome, PersonEvent, PersonEvents, Resolved, TurnEnd, WaitingItem, Watched};
pub use grants::ApprovalScope;
pub use question::{
    AnswerError, AnswerSchema, AskError, CannotAsk, HumanAnswer, HumanQuestion, MAX_ANSWER_BYTES,
    MAX_ANSWER_DEPTH, MAX_FORM_SCHEMA_BYTES, MAX_FORM_SCHEMA_DEPTH, ask_within, field_value,
};
pub use queue::{
    AnswerApprovalError, ApprovalQueue, NoSuchApproval, PendingApproval, PendingInput,
};
pub use template::{ApprovalTemplate, TemplateError};

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde::Serialize;
use serde_json::Value;

use crate::context::Channel;

/// What the approver is asked about.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalRequest {
    /// The registry name of the tool.
    pub tool: String,
    /// Its source.
    pub source: String,
    /// The arguments of the call.
    pub arguments: Value,
    /// The channel the call came through.
    pub channel: Channel,
    /// The conversation or session, when there is one.
    pub session: Option<String>,
    /// The id the caller gave the call asked about (the model's tool call id in a chat turn;
    /// a call a code-mode script makes inside it carries its `run_code` call's), so that a page
    /// shows the approval on that call's card.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// A sentence to show the person, ending with the preview when there is one.
    pub message: String,
    /// What the call would change (a write tool's diff, `Source::preview`), also at the end of
    /// `message`: for an approver that words its own question (MCP's names the tool as its
    /// client knows it) and must still show it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preview: Option<String>,
    /// Whether `message` is worded for the person as it stands: the tool's configured
    /// `approvalMessage` (rendered with the call's arguments), or the words of whoever asks on
    /// the call's behalf (a delegated task, a coding agent's permission request). An approver
    /// that words its own question shows this one instead.
    #[serde(skip)]
    pub configured_message: bool,
    /// How long the person has to answer; [`approve_within`] holds the wait to it, and an
    /// approver that asks over a wire (an MCP elicitation) gives the same limit to the peer, so
    /// the question is withdrawn there when it runs out here.
    #[serde(skip)]
    pub time_limit: std::time::Duration,
    /// The configured principal that made the call (`ci-bot`), when one did: approvers show
    /// it ("ci-bot wants to run …"), and `message` already names it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub caller: Option<String>,
}

/// Who is asked about what a call's work raises after the call itself ran its pipeline (an ACP
/// agent's permission requests in a coding session the call started): the person the call's
/// channel reaches, and what the question is recorded under — that channel and conversation —
/// with the configured approval time limit, as the pipeline's own `ask` has.
#[derive(Clone)]
pub struct Asker {
    /// Who answers.
    pub approver: Arc<dyn Approver>,
    /// The channel the call came through.
    pub channel: Channel,
    /// Its conversation or session, when there is one.
    pub session: Option<String>,
    /// How long the person has to answer (`defaults.approvalTimeoutMs`).
    pub time_limit: Duration,
}

impl Asker {
    /// Asks through `approver`, recorded under `channel` and no conversation, with the default
    /// approval time limit until [`with_time_limit`](Self::with_time_limit) gives the
    /// configured one.
    pub fn new(approver: Arc<dyn Approver>, channel: Channel) -> Self {
        Self {
            approver,
            channel,
            session: None,
            time_limit: crate::hub::HubSettings::default().approval_timeout,
        }
    }

    /// Recorded under this conversation or session.
    pub fn with_session(mut self, session: Option<String>) -> Self {
        self.session = session;
        self
    }

    /// With this time limit.
    pub fn with_time_limit(mut self, time_limit: Duration) -> Self {
        self.time_limit = time_limit;
        self
    }
}

impl std::fmt::Debug for Asker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Asker")
            .field("channel", &self.channel)
            .field("session", &self.session)
            .field("time_limit", &self.time_limit)
            .finish_non_exhaustive()
    }
}

/// Asks `approver` about `request` and waits at most `request.time_limit` for the answer:
/// `None` when nobody answered in time. The one way toolmux waits for a person — the pipeline's
/// `ask` calls and the chat's sampling requests alike.
pub async fn approve_within(
    approver: &dyn Approver,
    request: &ApprovalRequest,
) -> Option<Approval> {
    tokio::time::timeout(request.time_limit, approver.approve(request))
        .await
        .ok()
}

/// The person's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Approval {
    /// Run the call.
    Allow,
    /// Do not run it; the reason is shown to the caller.
    Deny {
        /// Why, when the person or the channel said.
        reason: String,
    },
}

/// Asks a person whether a call may run, and puts the questions of `request_human_input` (and
/// code mode's `human.ask`) to them: the person a channel can reach is the same for both.
/// Implementations must answer: when nobody can be asked, deny (or refuse the question) with a
/// reason instead of waiting (the pipeline also bounds the wait).
#[async_trait]
pub trait Approver: Send + Sync {
    /// Decides one call.
    async fn approve(&self, request: &ApprovalRequest) -> Approval;

    /// Puts a question to the person and waits for the answer. An approver that cannot ask
    /// questions (a yes/no terminal prompt) keeps this default, which says so at once.
    async fn ask(&self, question: &HumanQuestion) -> Result<HumanAnswer, CannotAsk> {
        let _ = question;
        Err(CannotAsk(
            "nobody can answer questions on this channel".to_string(),
        ))
    }

    /// Whether every answer [`ask`](Self::ask) brings back was already taken under the
    /// question's one rule ([`HumanQuestion::check`]) — the queue refuses a misfit where it is
    /// given — so that [`ask_within`] does not check it a second time. `false` by default: an
    /// answer brought over a wire (an MCP client's form, the terminal) is checked there.
    fn checks_answers(&self) -> bool {
        false
    }

    /// An earlier answer that already allows this call, so nobody is asked again: the id of the
    /// approval a person answered "allow for this conversation" for the same tool in the same
    /// chat conversation ([`ApprovalQueue::answer_scoped`]). The pipeline records it as the
    /// call's `approvedBy`. `None` — ask — by default.
    fn standing_approval(&self, request: &ApprovalRequest) -> Option<uuid::Uuid> {
        let _ = request;
        None
    }
}
