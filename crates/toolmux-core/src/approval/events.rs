//! What waits on a person, as listings and the event stream show it, and how each wait ended.

use serde::Serialize;

use super::queue::{PendingApproval, PendingInput};

/// Something waiting on a person, as the event stream and listings show it: `kind` says which.
#[derive(Clone, Debug, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum WaitingItem {
    /// An `ask` call waiting for approval (the same object `GET /api/approvals` lists).
    Approval(PendingApproval),
    /// A question waiting for an answer.
    Input(PendingInput),
}

impl WaitingItem {
    /// Its id.
    pub fn id(&self) -> uuid::Uuid {
        match self {
            WaitingItem::Approval(a) => a.id,
            WaitingItem::Input(i) => i.id,
        }
    }

    pub(super) fn created(&self) -> chrono::DateTime<chrono::Utc> {
        match self {
            WaitingItem::Approval(a) => a.created,
            WaitingItem::Input(i) => i.created,
        }
    }
}

/// How something that waited on a person ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// An approval: the call may run.
    Allowed,
    /// An approval: the call was refused.
    Denied,
    /// A question: answered.
    Accepted,
    /// A question: the person chose not to answer.
    Declined,
    /// A question: dismissed.
    Cancelled,
    /// Nobody answered: it timed out, or its call was cancelled.
    Withdrawn,
}

/// The end of a wait.
#[derive(Clone, Debug, Serialize)]
pub struct Resolved {
    /// The approval's or question's id.
    pub id: uuid::Uuid,
    /// How it ended.
    pub outcome: Outcome,
}

/// The end of a chat turn: its last messages are saved and its conversation can take
/// another turn.
#[derive(Clone, Debug, Serialize)]
pub struct TurnEnd {
    /// The conversation whose turn ended.
    pub session: String,
}

/// One event of [`ApprovalQueue::watch`](super::ApprovalQueue::watch).
#[derive(Clone, Debug)]
pub enum PersonEvent {
    /// Something started waiting (boxed: it is large, and most events are small).
    Pending(Box<WaitingItem>),
    /// Something stopped waiting.
    Resolved(Resolved),
    /// A chat turn ended, however it ended: a page that follows a turn it did not start (it was
    /// reloaded, or the turn began in another tab) reads the conversation once more and stops,
    /// where it could otherwise only read again and again until the turn was over.
    TurnEnded(TurnEnd),
}

/// The events of [`ApprovalQueue::watch`](super::ApprovalQueue::watch).
pub struct PersonEvents {
    pub(super) events: tokio::sync::broadcast::Receiver<PersonEvent>,
    pub(super) closed: tokio::sync::watch::Receiver<bool>,
}

/// What [`PersonEvents::next`] gives.
#[derive(Clone, Debug)]
pub enum Watched {
    /// An event.
    Event(PersonEvent),
    /// Events were missed (a slow reader): read [`ApprovalQueue::waiting`](super::ApprovalQueue::waiting) again.
    Missed,
}

impl PersonEvents {
    /// The next event; `None` once the queue's streams are closed.
    pub async fn next(&mut self) -> Option<Watched> {
        if *self.closed.borrow() {
            return None;
        }
        tokio::select! {
            event = self.events.recv() => match event {
                Ok(event) => Some(Watched::Event(event)),
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => Some(Watched::Missed),
                Err(tokio::sync::broadcast::error::RecvError::Closed) => None,
            },
            // A closed sender (the queue dropped) ends the stream as closing it does.
            _ = self.closed.wait_for(|closed| *closed) => None,
        }
    }
}
