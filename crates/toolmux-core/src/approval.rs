//! Asking a person before an `ask` call runs. Each channel brings its own approver: a terminal
//! prompt, an MCP elicitation, a pending approval in the REST API, an event in the chat stream.

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
    /// A sentence to show the person, ending with the preview when there is one.
    pub message: String,
    /// What the call would change (a write tool's diff, `Source::preview`), also at the end of
    /// `message`: for an approver that words its own question (MCP's names the tool as its
    /// client knows it) and must still show it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preview: Option<String>,
    /// How long the person has to answer; [`approve_within`] holds the wait to it, and an
    /// approver that asks over a wire (an MCP elicitation) gives the same limit to the peer, so
    /// the question is withdrawn there when it runs out here.
    #[serde(skip)]
    pub time_limit: std::time::Duration,
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

/// Asks a person whether a call may run. Implementations must answer: when nobody can be asked,
/// deny with a reason instead of waiting (the pipeline also bounds the wait).
#[async_trait]
pub trait Approver: Send + Sync {
    /// Decides one call.
    async fn approve(&self, request: &ApprovalRequest) -> Approval;
}

/// Approvals waiting on a person who answers out of band: through the REST API
/// (`POST /api/approvals/{id}`), a button in the web UI, a line in a chat stream. The queue is an
/// [`Approver`]: an `ask` call parks here until someone answers, and leaves the queue when it is
/// answered, when the pipeline's approval timeout drops it, or when its call is cancelled.
pub struct ApprovalQueue {
    pending: std::sync::Mutex<std::collections::HashMap<uuid::Uuid, Waiting>>,
    events: tokio::sync::broadcast::Sender<PendingApproval>,
}

struct Waiting {
    approval: PendingApproval,
    answer: tokio::sync::oneshot::Sender<Approval>,
}

/// A call waiting for an answer.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingApproval {
    /// The id to answer it by.
    pub id: uuid::Uuid,
    /// What is asked.
    pub request: ApprovalRequest,
    /// When it was asked.
    pub created: chrono::DateTime<chrono::Utc>,
}

/// Answering an approval that is not waiting (answered already, timed out, or never existed).
#[derive(Debug, Clone, thiserror::Error)]
#[error("no approval `{0}` is waiting (it was answered, timed out, or never existed)")]
pub struct NoSuchApproval(pub uuid::Uuid);

impl Default for ApprovalQueue {
    fn default() -> Self {
        Self {
            pending: std::sync::Mutex::new(std::collections::HashMap::new()),
            events: tokio::sync::broadcast::channel(256).0,
        }
    }
}

impl std::fmt::Debug for ApprovalQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApprovalQueue")
            .field("pending", &self.lock().len())
            .finish()
    }
}

impl ApprovalQueue {
    /// An empty queue.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, std::collections::HashMap<uuid::Uuid, Waiting>> {
        self.pending
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The calls waiting now, oldest first; only those of `session` when it is given.
    pub fn pending(&self, session: Option<&str>) -> Vec<PendingApproval> {
        let mut list: Vec<PendingApproval> = self
            .lock()
            .values()
            .filter(|w| session.is_none() || w.approval.request.session.as_deref() == session)
            .map(|w| w.approval.clone())
            .collect();
        list.sort_by_key(|p| p.created);
        list
    }

    /// Answers one waiting call.
    pub fn answer(&self, id: uuid::Uuid, approval: Approval) -> Result<(), NoSuchApproval> {
        let waiting = self.lock().remove(&id).ok_or(NoSuchApproval(id))?;
        // The call may have been cancelled a moment ago; then nobody hears the answer.
        let _ = waiting.answer.send(approval);
        Ok(())
    }

    /// New requests as they arrive, for streams that show them to a person.
    pub fn subscribe(&self) -> tokio::sync::broadcast::Receiver<PendingApproval> {
        self.events.subscribe()
    }
}

/// Removes an approval from the queue when its call stops waiting for any reason.
struct Withdraw<'a> {
    queue: &'a ApprovalQueue,
    id: uuid::Uuid,
}

impl Drop for Withdraw<'_> {
    fn drop(&mut self) {
        self.queue.lock().remove(&self.id);
    }
}

#[async_trait]
impl Approver for ApprovalQueue {
    async fn approve(&self, request: &ApprovalRequest) -> Approval {
        let approval = PendingApproval {
            id: uuid::Uuid::now_v7(),
            request: request.clone(),
            created: chrono::Utc::now(),
        };
        let (tx, rx) = tokio::sync::oneshot::channel();
        let id = approval.id;
        self.lock().insert(
            id,
            Waiting {
                approval: approval.clone(),
                answer: tx,
            },
        );
        let _withdraw = Withdraw { queue: self, id };
        // Nobody listening is fine: the approval is still listed by `pending`.
        let _ = self.events.send(approval);
        rx.await.unwrap_or(Approval::Deny {
            reason: "the approval was withdrawn".to_string(),
        })
    }
}
