//! The one queue of everything waiting on a person who answers out of band: `ask` calls waiting
//! for approval and questions waiting for an answer, whichever channel raised them (REST, MCP
//! under `toolmux serve`, the chat, a code-mode script, an ACP agent's permission request, an
//! upstream server's form in the chat), answered through whichever channel shows them.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use async_trait::async_trait;
use serde::Serialize;
use tokio::sync::{broadcast, oneshot, watch};

use super::events::{Outcome, PersonEvent, PersonEvents, Resolved, TurnEnd, WaitingItem};
use super::grants::{ApprovalScope, Grants, conversation_of};
use super::question::{AnswerError, AnswerSchema, CannotAsk, HumanAnswer, HumanQuestion};
use super::{Approval, ApprovalRequest, Approver};

/// Everything waiting on a person who answers out of band: through the REST API
/// (`POST /api/approvals/{id}`, `POST /api/inputs/{id}`), a button in the web UI, a line in a
/// chat stream. The queue is an [`Approver`]: an `ask` call (or a question) parks here until
/// someone answers, and leaves the queue when it is answered, when its time limit drops it, or
/// when its call is cancelled.
///
/// Approvals and questions wait in one map under one kind of id and are announced on one event
/// stream ([`watch`](Self::watch)), so that everything waiting on a person, whichever channel
/// started it, is in one place.
pub struct ApprovalQueue {
    waiting: Mutex<HashMap<uuid::Uuid, Waiting>>,
    events: broadcast::Sender<PendingApproval>,
    people: broadcast::Sender<PersonEvent>,
    closed: watch::Sender<bool>,
    /// "Allow for this conversation" answers, kept in memory for the process's life.
    grants: Mutex<Grants>,
}

/// One wait, with the way its answer gets back to the waiting call.
enum Waiting {
    Approval(PendingApproval, oneshot::Sender<Approval>),
    Input(PendingInput, oneshot::Sender<HumanAnswer>),
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

/// A question waiting for an answer.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingInput {
    /// The id to answer it by.
    pub id: uuid::Uuid,
    /// What is asked, by which call.
    #[serde(flatten)]
    pub question: HumanQuestion,
    /// When it was asked.
    pub created: chrono::DateTime<chrono::Utc>,
    /// When the wait runs out.
    pub expires: Option<chrono::DateTime<chrono::Utc>>,
}

/// Answering an approval that is not waiting (answered already, timed out, or never existed).
#[derive(Debug, Clone, thiserror::Error)]
#[error("no approval `{0}` is waiting (it was answered, timed out, or never existed)")]
pub struct NoSuchApproval(pub uuid::Uuid);

/// Why an answer to an approval was not taken.
#[derive(Debug, Clone, thiserror::Error)]
pub enum AnswerApprovalError {
    /// Nothing waits under that id.
    #[error(transparent)]
    NotWaiting(#[from] NoSuchApproval),
    /// "For this conversation" was asked of a call that belongs to no chat conversation; the
    /// approval still waits.
    #[error(
        "approval `{0}` is for a call outside a chat conversation, so it can only be answered once \
         (leave `scope` out, or send \"once\")"
    )]
    NoConversation(uuid::Uuid),
    /// "For this conversation" was sent with a denial: a denial is never remembered, so the
    /// answer is refused rather than half taken; the approval still waits.
    #[error("a denial is never remembered: deny with `scope` \"once\" or without `scope`")]
    DenialNotRemembered,
}

impl Default for ApprovalQueue {
    fn default() -> Self {
        Self {
            waiting: Mutex::new(HashMap::new()),
            events: broadcast::channel(256).0,
            people: broadcast::channel(256).0,
            closed: watch::channel(false).0,
            grants: Mutex::new(Grants::default()),
        }
    }
}

impl std::fmt::Debug for ApprovalQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let waiting = self.lock();
        let approvals = waiting
            .values()
            .filter(|w| matches!(w, Waiting::Approval(..)))
            .count();
        f.debug_struct("ApprovalQueue")
            .field("pending", &approvals)
            .field("inputs", &(waiting.len() - approvals))
            .finish()
    }
}

impl ApprovalQueue {
    /// An empty queue.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<uuid::Uuid, Waiting>> {
        self.waiting.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The calls waiting now, oldest first; only those of `session` when it is given.
    pub fn pending(&self, session: Option<&str>) -> Vec<PendingApproval> {
        let mut list: Vec<PendingApproval> = self
            .lock()
            .values()
            .filter_map(|w| match w {
                Waiting::Approval(approval, _) => Some(approval),
                Waiting::Input(..) => None,
            })
            .filter(|a| session.is_none() || a.request.session.as_deref() == session)
            .cloned()
            .collect();
        list.sort_by_key(|p| p.created);
        list
    }

    /// Answers one waiting call.
    pub fn answer(&self, id: uuid::Uuid, approval: Approval) -> Result<(), NoSuchApproval> {
        match self.answer_scoped(id, approval, ApprovalScope::Once) {
            Ok(()) => Ok(()),
            Err(AnswerApprovalError::NotWaiting(e)) => Err(e),
            Err(_) => unreachable!("an answer for this call only is always taken"),
        }
    }

    /// Answers one waiting call, for this call only or — an "allow" for a call of a chat
    /// conversation — for every later call of the same tool in that conversation, which
    /// [`Approver::standing_approval`] then allows without asking. A refused scope leaves the
    /// approval waiting, so the person can answer again.
    pub fn answer_scoped(
        &self,
        id: uuid::Uuid,
        approval: Approval,
        scope: ApprovalScope,
    ) -> Result<(), AnswerApprovalError> {
        let mut waiting = self.lock();
        let Some(Waiting::Approval(pending, _)) = waiting.get(&id) else {
            return Err(NoSuchApproval(id).into());
        };
        if scope == ApprovalScope::Conversation {
            if !matches!(approval, Approval::Allow) {
                return Err(AnswerApprovalError::DenialNotRemembered);
            }
            let conversation =
                conversation_of(&pending.request).ok_or(AnswerApprovalError::NoConversation(id))?;
            self.grants
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .grant(conversation, &pending.request, id);
        }
        let Some(Waiting::Approval(_, answer)) = waiting.remove(&id) else {
            unreachable!("the approval was found under this id with the lock held");
        };
        drop(waiting);
        let outcome = match approval {
            Approval::Allow => Outcome::Allowed,
            Approval::Deny { .. } => Outcome::Denied,
        };
        // The call may have been cancelled a moment ago; then nobody hears the answer.
        let _ = answer.send(approval);
        self.resolved(id, outcome);
        Ok(())
    }

    /// The questions waiting now, oldest first.
    pub fn pending_inputs(&self) -> Vec<PendingInput> {
        let mut list: Vec<PendingInput> = self
            .lock()
            .values()
            .filter_map(|w| match w {
                Waiting::Input(input, _) => Some(input.clone()),
                Waiting::Approval(..) => None,
            })
            .collect();
        list.sort_by_key(|p| p.created);
        list
    }

    /// Answers one waiting question. An answer that does not fit the question's form is
    /// refused with the reasons (each field and what is wrong) and the question keeps waiting,
    /// so the person can correct it ([`AnswerSchema::check`], the one rule).
    pub fn answer_input(&self, id: uuid::Uuid, answer: HumanAnswer) -> Result<(), AnswerError> {
        self.answer_input_with(id, |schema| schema.check(answer))
    }

    /// Answers one waiting question with text a person typed ([`AnswerSchema::answer_text`]),
    /// under the same rule as [`answer_input`](Self::answer_input).
    pub fn answer_input_text(&self, id: uuid::Uuid, text: &str) -> Result<(), AnswerError> {
        self.answer_input_with(id, |schema| schema.answer_text(text))
    }

    /// Checks an answer with the question's compiled schema outside the lock — an answer is
    /// outside input, and every approval and question waits behind that lock — then takes it
    /// if the question still waits.
    fn answer_input_with(
        &self,
        id: uuid::Uuid,
        answer: impl FnOnce(&AnswerSchema) -> Result<HumanAnswer, AnswerError>,
    ) -> Result<(), AnswerError> {
        let schema = match self.lock().get(&id) {
            Some(Waiting::Input(input, _)) => input.question.schema.clone(),
            _ => return Err(AnswerError::NotWaiting(id)),
        };
        let answer = answer(&schema)?;
        // Answered by another channel, or withdrawn, while this answer was checked.
        let Some(Waiting::Input(_, tx)) = self.lock().remove(&id) else {
            return Err(AnswerError::NotWaiting(id));
        };
        let outcome = answer.outcome();
        // The call may have ended a moment ago; then nobody hears the answer.
        let _ = tx.send(answer);
        self.resolved(id, outcome);
        Ok(())
    }

    /// Everything waiting on a person now, approvals and questions, oldest first.
    pub fn waiting(&self) -> Vec<WaitingItem> {
        let mut all: Vec<WaitingItem> = self
            .lock()
            .values()
            .map(|w| match w {
                Waiting::Approval(approval, _) => WaitingItem::Approval(approval.clone()),
                Waiting::Input(input, _) => WaitingItem::Input(input.clone()),
            })
            .collect();
        all.sort_by_key(WaitingItem::created);
        all
    }

    /// Every approval and question as it starts waiting and as it is resolved, for streams that
    /// let a person (or a bot) answer what another channel started. Read [`waiting`](Self::waiting)
    /// after subscribing to see what already waits.
    pub fn watch(&self) -> PersonEvents {
        PersonEvents {
            events: self.people.subscribe(),
            closed: self.closed.subscribe(),
        }
    }

    /// Ends every stream made by [`watch`](Self::watch) (a server shutting down, so that open
    /// streams do not hold its graceful shutdown).
    pub fn close_streams(&self) {
        self.closed.send_replace(true);
    }

    /// Tells the queue's watchers that the chat turn of conversation `session` ended, after its
    /// last messages were saved and it stopped counting as running, so that a page following
    /// it reads it once and sees it whole.
    pub fn turn_ended(&self, session: &str) {
        // Nobody listening is fine: a page that opens the conversation later reads it ended.
        let _ = self.people.send(PersonEvent::TurnEnded(TurnEnd {
            session: session.to_string(),
        }));
    }

    fn resolved(&self, id: uuid::Uuid, outcome: Outcome) {
        // Nobody listening is fine.
        let _ = self
            .people
            .send(PersonEvent::Resolved(Resolved { id, outcome }));
    }

    /// New approval requests as they arrive, for streams that show them to a person.
    pub fn subscribe(&self) -> broadcast::Receiver<PendingApproval> {
        self.events.subscribe()
    }

    /// Parks `waiting` until its answer comes; the returned guard withdraws it when the waiting
    /// call stops waiting for any reason.
    fn park(&self, id: uuid::Uuid, waiting: Waiting, item: WaitingItem) -> Withdraw<'_> {
        self.lock().insert(id, waiting);
        // Nobody listening is fine: it is still listed by `waiting`.
        let _ = self.people.send(PersonEvent::Pending(Box::new(item)));
        Withdraw { queue: self, id }
    }
}

/// Removes an approval or a question from the queue when its call stops waiting for any
/// reason.
struct Withdraw<'a> {
    queue: &'a ApprovalQueue,
    id: uuid::Uuid,
}

impl Drop for Withdraw<'_> {
    fn drop(&mut self) {
        let removed = self.queue.lock().remove(&self.id).is_some();
        // Still waiting means nobody answered: it timed out or its call was cancelled.
        if removed {
            self.queue.resolved(self.id, Outcome::Withdrawn);
        }
    }
}

#[async_trait]
impl Approver for ApprovalQueue {
    /// [`answer_input`](ApprovalQueue::answer_input) takes only answers that fit.
    fn checks_answers(&self) -> bool {
        true
    }

    fn standing_approval(&self, request: &ApprovalRequest) -> Option<uuid::Uuid> {
        let conversation = conversation_of(request)?;
        self.grants
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(conversation, request)
    }

    async fn approve(&self, request: &ApprovalRequest) -> Approval {
        let approval = PendingApproval {
            id: uuid::Uuid::now_v7(),
            request: request.clone(),
            created: chrono::Utc::now(),
        };
        let (tx, rx) = oneshot::channel();
        let id = approval.id;
        let _withdraw = self.park(
            id,
            Waiting::Approval(approval.clone(), tx),
            WaitingItem::Approval(approval.clone()),
        );
        // Nobody listening is fine: the approval is still listed by `pending`.
        let _ = self.events.send(approval);
        rx.await.unwrap_or(Approval::Deny {
            reason: "the approval was withdrawn".to_string(),
        })
    }

    async fn ask(&self, question: &HumanQuestion) -> Result<HumanAnswer, CannotAsk> {
        let created = chrono::Utc::now();
        let input = PendingInput {
            id: uuid::Uuid::now_v7(),
            question: question.clone(),
            created,
            expires: chrono::Duration::from_std(question.time_limit)
                .ok()
                .and_then(|limit| created.checked_add_signed(limit)),
        };
        let (tx, rx) = oneshot::channel();
        let id = input.id;
        let _withdraw = self.park(
            id,
            Waiting::Input(input.clone(), tx),
            WaitingItem::Input(input),
        );
        rx.await
            .map_err(|_| CannotAsk("the question was withdrawn".to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::super::events::Watched;
    use super::*;
    use crate::context::Channel;
    use serde_json::json;

    fn write_request(channel: Channel, session: Option<&str>) -> ApprovalRequest {
        ApprovalRequest {
            tool: "file_write".into(),
            source: "workspace".into(),
            arguments: json!({}),
            channel,
            session: session.map(str::to_string),
            tool_call_id: None,
            message: "Allow?".into(),
            preview: None,
            configured_message: false,
            time_limit: std::time::Duration::from_secs(60),
            caller: None,
        }
    }

    /// Waits until `queue` has a pending approval and returns its id.
    async fn waiting_id(queue: &ApprovalQueue) -> uuid::Uuid {
        loop {
            if let Some(first) = queue.pending(None).first() {
                return first.id;
            }
            tokio::task::yield_now().await;
        }
    }

    #[tokio::test]
    async fn allow_for_a_conversation_stands_for_that_conversation_and_tool_only() {
        let queue = std::sync::Arc::new(ApprovalQueue::new());
        let chat = write_request(Channel::Chat, Some("c-1"));
        let asker = std::sync::Arc::clone(&queue);
        let asked = tokio::spawn(async move { asker.approve(&chat).await });
        let id = waiting_id(&queue).await;
        // A denial is never remembered: refused, and the approval still waits.
        let denial = queue.answer_scoped(
            id,
            Approval::Deny {
                reason: "no".into(),
            },
            ApprovalScope::Conversation,
        );
        assert!(matches!(
            denial,
            Err(AnswerApprovalError::DenialNotRemembered)
        ));
        assert_eq!(queue.pending(None).len(), 1);
        queue
            .answer_scoped(id, Approval::Allow, ApprovalScope::Conversation)
            .expect("taken");
        assert_eq!(asked.await.expect("joined"), Approval::Allow);

        let standing = |request: &ApprovalRequest| queue.standing_approval(request);
        assert_eq!(
            standing(&write_request(Channel::Chat, Some("c-1"))),
            Some(id)
        );
        assert_eq!(standing(&write_request(Channel::Chat, Some("c-2"))), None);
        assert_eq!(standing(&write_request(Channel::Mcp, Some("c-1"))), None);
        let other_tool = ApprovalRequest {
            tool: "shell".into(),
            ..write_request(Channel::Chat, Some("c-1"))
        };
        assert_eq!(standing(&other_tool), None);
        // A coding agent's request of the same name, from the same conversation, is not it.
        let agents = ApprovalRequest {
            source: "acp:agent".into(),
            ..write_request(Channel::Chat, Some("c-1"))
        };
        assert_eq!(standing(&agents), None);

        // A call outside a conversation can be answered once only.
        let rest = write_request(Channel::Rest, None);
        let asker = std::sync::Arc::clone(&queue);
        let asked = tokio::spawn(async move { asker.approve(&rest).await });
        let id = waiting_id(&queue).await;
        let refused = queue.answer_scoped(id, Approval::Allow, ApprovalScope::Conversation);
        assert!(matches!(
            refused,
            Err(AnswerApprovalError::NoConversation(_))
        ));
        queue.answer(id, Approval::Allow).expect("taken once");
        assert_eq!(asked.await.expect("joined"), Approval::Allow);
    }

    #[tokio::test]
    async fn a_question_waits_until_an_answer_fits_its_schema_and_the_stream_sees_both_ends() {
        let queue = std::sync::Arc::new(ApprovalQueue::new());
        let mut events = queue.watch();
        let schema = AnswerSchema::compile(
            json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}),
        )
        .expect("a valid schema");
        let question =
            HumanQuestion::new("request_human_input", "How many?", schema, Channel::Rest);
        let asker = std::sync::Arc::clone(&queue);
        let asked = tokio::spawn(async move { asker.ask(&question).await });
        let Some(Watched::Event(PersonEvent::Pending(item))) = events.next().await else {
            panic!("the question is announced");
        };
        let WaitingItem::Input(input) = *item else {
            panic!("a question, not an approval: {item:?}");
        };
        assert!(input.expires.is_some());
        let misfit = queue.answer_input(input.id, HumanAnswer::Accept(json!({"n": "many"})));
        assert!(matches!(misfit, Err(AnswerError::Invalid(why)) if why.contains("/n")));
        assert_eq!(
            queue.pending_inputs().len(),
            1,
            "a misfit leaves it waiting"
        );
        queue
            .answer_input(input.id, HumanAnswer::Accept(json!({"n": 2})))
            .expect("a fitting answer is taken");
        assert_eq!(
            asked.await.expect("joined").expect("answered"),
            HumanAnswer::Accept(json!({"n": 2}))
        );
        let Some(Watched::Event(PersonEvent::Resolved(resolved))) = events.next().await else {
            panic!("the answer is announced");
        };
        assert_eq!(
            (resolved.id, resolved.outcome),
            (input.id, Outcome::Accepted)
        );
        queue.close_streams();
        assert!(events.next().await.is_none());
    }
}
