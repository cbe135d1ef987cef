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
    /// Whether `message` is the tool's configured `approvalMessage` (rendered with the call's
    /// arguments): an approver that words its own question shows this one instead.
    #[serde(skip)]
    pub configured_message: bool,
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

    /// An earlier answer that already allows this call, so nobody is asked again: the id of the
    /// approval a person answered "allow for this conversation" for the same tool in the same
    /// chat conversation ([`ApprovalQueue::answer_scoped`]). The pipeline records it as the
    /// call's `approvedBy`. `None` — ask — by default.
    fn standing_approval(&self, request: &ApprovalRequest) -> Option<uuid::Uuid> {
        let _ = request;
        None
    }
}

/// How far a person's "allow" reaches.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ApprovalScope {
    /// This call only.
    #[default]
    Once,
    /// This call and every later call of the same tool in the same chat conversation.
    Conversation,
}

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

/// The chat conversation an approval request belongs to, if any: "for this conversation"
/// grants are kept by it.
fn conversation_of(request: &ApprovalRequest) -> Option<&str> {
    match request.channel {
        Channel::Chat => request.session.as_deref(),
        _ => None,
    }
}

/// How many conversations keep "for this conversation" grants at once: a grant is a few bytes,
/// but they come from requests, so their number is bounded; past it the oldest conversation's
/// grants are forgotten (its calls ask again — the safe side).
const GRANT_CONVERSATIONS: usize = 4096;

/// Tools a person allowed for the rest of a chat conversation, by conversation, with the id of
/// the approval that allowed each, oldest conversation first.
#[derive(Default)]
struct Grants {
    by_conversation:
        std::collections::HashMap<String, std::collections::HashMap<String, uuid::Uuid>>,
    order: std::collections::VecDeque<String>,
}

impl Grants {
    fn grant(&mut self, conversation: &str, tool: &str, approval: uuid::Uuid) {
        if !self.by_conversation.contains_key(conversation) {
            if self.order.len() >= GRANT_CONVERSATIONS
                && let Some(oldest) = self.order.pop_front()
            {
                self.by_conversation.remove(&oldest);
            }
            self.order.push_back(conversation.to_string());
        }
        self.by_conversation
            .entry(conversation.to_string())
            .or_default()
            .insert(tool.to_string(), approval);
    }

    fn get(&self, conversation: &str, tool: &str) -> Option<uuid::Uuid> {
        self.by_conversation.get(conversation)?.get(tool).copied()
    }
}

/// Approvals waiting on a person who answers out of band: through the REST API
/// (`POST /api/approvals/{id}`), a button in the web UI, a line in a chat stream. The queue is an
/// [`Approver`]: an `ask` call parks here until someone answers, and leaves the queue when it is
/// answered, when the pipeline's approval timeout drops it, or when its call is cancelled.
///
/// Questions wait here too ([`Approver::ask`]: a pending *input*), so that everything waiting on
/// a person, whichever channel started it, is in one place and on one event stream
/// ([`watch`](Self::watch)).
pub struct ApprovalQueue {
    pending: std::sync::Mutex<std::collections::HashMap<uuid::Uuid, Waiting>>,
    events: tokio::sync::broadcast::Sender<PendingApproval>,
    inputs: std::sync::Mutex<std::collections::HashMap<uuid::Uuid, WaitingInput>>,
    people: tokio::sync::broadcast::Sender<PersonEvent>,
    closed: tokio::sync::watch::Sender<bool>,
    /// "Allow for this conversation" answers, kept in memory for the process's life.
    grants: std::sync::Mutex<Grants>,
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
            inputs: std::sync::Mutex::new(std::collections::HashMap::new()),
            people: tokio::sync::broadcast::channel(256).0,
            closed: tokio::sync::watch::channel(false).0,
            grants: std::sync::Mutex::new(Grants::default()),
        }
    }
}

impl std::fmt::Debug for ApprovalQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApprovalQueue")
            .field("pending", &self.lock().len())
            .field("inputs", &self.lock_inputs().len())
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
        let mut pending = self.lock();
        let request = &pending.get(&id).ok_or(NoSuchApproval(id))?.approval.request;
        if scope == ApprovalScope::Conversation {
            if !matches!(approval, Approval::Allow) {
                return Err(AnswerApprovalError::DenialNotRemembered);
            }
            let conversation =
                conversation_of(request).ok_or(AnswerApprovalError::NoConversation(id))?;
            self.grants
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .grant(conversation, &request.tool, id);
        }
        let waiting = pending.remove(&id).ok_or(NoSuchApproval(id))?;
        drop(pending);
        let outcome = match approval {
            Approval::Allow => Outcome::Allowed,
            Approval::Deny { .. } => Outcome::Denied,
        };
        // The call may have been cancelled a moment ago; then nobody hears the answer.
        let _ = waiting.answer.send(approval);
        self.resolved(id, outcome);
        Ok(())
    }

    fn lock_inputs(
        &self,
    ) -> std::sync::MutexGuard<'_, std::collections::HashMap<uuid::Uuid, WaitingInput>> {
        self.inputs
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The questions waiting now, oldest first.
    pub fn pending_inputs(&self) -> Vec<PendingInput> {
        let mut list: Vec<PendingInput> = self
            .lock_inputs()
            .values()
            .map(|w| w.input.clone())
            .collect();
        list.sort_by_key(|p| p.created);
        list
    }

    /// Answers one waiting question. An accepted answer must fit the question's schema: one
    /// that does not is refused with the reasons and the question keeps waiting, so the person
    /// can correct it.
    pub fn answer_input(&self, id: uuid::Uuid, answer: HumanAnswer) -> Result<(), AnswerError> {
        let mut inputs = self.lock_inputs();
        let waiting = inputs.get(&id).ok_or(AnswerError::NotWaiting(id))?;
        if let HumanAnswer::Accept(content) = &answer {
            let schema = crate::validate::CompiledSchema::compile(&waiting.input.question.schema)
                .map_err(|e| {
                AnswerError::Invalid(format!("the question's schema is invalid: {e}"))
            })?;
            let violations = schema.violations(content);
            if !violations.is_empty() {
                return Err(AnswerError::Invalid(crate::validate::format_violations(
                    &violations,
                )));
            }
        }
        let Some(waiting) = inputs.remove(&id) else {
            return Err(AnswerError::NotWaiting(id));
        };
        drop(inputs);
        let outcome = answer.outcome();
        // The call may have ended a moment ago; then nobody hears the answer.
        let _ = waiting.answer.send(answer);
        self.resolved(id, outcome);
        Ok(())
    }

    /// Everything waiting on a person now, approvals and questions, oldest first.
    pub fn waiting(&self) -> Vec<WaitingItem> {
        let mut all: Vec<WaitingItem> = self
            .pending(None)
            .into_iter()
            .map(WaitingItem::Approval)
            .chain(self.pending_inputs().into_iter().map(WaitingItem::Input))
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

    fn resolved(&self, id: uuid::Uuid, outcome: Outcome) {
        // Nobody listening is fine.
        let _ = self
            .people
            .send(PersonEvent::Resolved(Resolved { id, outcome }));
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
        let removed = self.queue.lock().remove(&self.id).is_some();
        // Still waiting means nobody answered: it timed out or its call was cancelled.
        if removed {
            self.queue.resolved(self.id, Outcome::Withdrawn);
        }
    }
}

/// Removes a question from the queue when its call stops waiting for any reason.
struct WithdrawInput<'a> {
    queue: &'a ApprovalQueue,
    id: uuid::Uuid,
}

impl Drop for WithdrawInput<'_> {
    fn drop(&mut self) {
        let removed = self.queue.lock_inputs().remove(&self.id).is_some();
        if removed {
            self.queue.resolved(self.id, Outcome::Withdrawn);
        }
    }
}

#[async_trait]
impl Approver for ApprovalQueue {
    fn standing_approval(&self, request: &ApprovalRequest) -> Option<uuid::Uuid> {
        let conversation = conversation_of(request)?;
        self.grants
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(conversation, &request.tool)
    }

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
        let _ = self.events.send(approval.clone());
        let _ = self
            .people
            .send(PersonEvent::Pending(Box::new(WaitingItem::Approval(
                approval,
            ))));
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
        let (tx, rx) = tokio::sync::oneshot::channel();
        let id = input.id;
        self.lock_inputs().insert(
            id,
            WaitingInput {
                input: input.clone(),
                answer: tx,
            },
        );
        let _withdraw = WithdrawInput { queue: self, id };
        let _ = self
            .people
            .send(PersonEvent::Pending(Box::new(WaitingItem::Input(input))));
        rx.await
            .map_err(|_| CannotAsk("the question was withdrawn".to_string()))
    }
}

/// A question for the person: `request_human_input`'s, or a code-mode script's `human.ask`.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HumanQuestion {
    /// The registry name of the tool whose call asks.
    pub tool: String,
    /// That call's arguments.
    pub arguments: Value,
    /// The question.
    pub question: String,
    /// The JSON Schema the answer's content must fit: an object (a free-text question asks for
    /// `{"answer": "..."}`).
    pub schema: Value,
    /// The channel the call came through.
    pub channel: Channel,
    /// The conversation or session, when there is one.
    pub session: Option<String>,
    /// How long the person has to answer; [`ask_within`] holds the wait to it.
    #[serde(skip)]
    pub time_limit: std::time::Duration,
}

/// The person's answer to a question: MCP elicitation's three actions.
#[derive(Clone, Debug, PartialEq)]
pub enum HumanAnswer {
    /// Answered, with content that fits the question's schema.
    Accept(Value),
    /// The person chose not to answer.
    Decline,
    /// The person dismissed the question without choosing.
    Cancel,
}

impl HumanAnswer {
    fn outcome(&self) -> Outcome {
        match self {
            HumanAnswer::Accept(_) => Outcome::Accepted,
            HumanAnswer::Decline => Outcome::Declined,
            HumanAnswer::Cancel => Outcome::Cancelled,
        }
    }
}

/// Why a question could not be put to anybody; the text is for the model.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct CannotAsk(pub String);

/// Asks `approver` the question and waits at most `question.time_limit`: `None` when nobody
/// answered in time. The same rule as [`approve_within`].
pub async fn ask_within(
    approver: &dyn Approver,
    question: &HumanQuestion,
) -> Option<Result<HumanAnswer, CannotAsk>> {
    tokio::time::timeout(question.time_limit, approver.ask(question))
        .await
        .ok()
}

struct WaitingInput {
    input: PendingInput,
    answer: tokio::sync::oneshot::Sender<HumanAnswer>,
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

/// Why an answer to a question was not taken.
#[derive(Debug, Clone, thiserror::Error)]
pub enum AnswerError {
    /// Nothing waits under that id.
    #[error("no question `{0}` is waiting (it was answered, timed out, or never existed)")]
    NotWaiting(uuid::Uuid),
    /// The content does not fit the question's schema; the question still waits.
    #[error("the answer does not fit the question's schema: {0}")]
    Invalid(String),
}

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

    fn created(&self) -> chrono::DateTime<chrono::Utc> {
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

/// One event of [`ApprovalQueue::watch`].
#[derive(Clone, Debug)]
pub enum PersonEvent {
    /// Something started waiting (boxed: it is large, and most events are small).
    Pending(Box<WaitingItem>),
    /// Something stopped waiting.
    Resolved(Resolved),
}

/// The events of [`ApprovalQueue::watch`].
pub struct PersonEvents {
    events: tokio::sync::broadcast::Receiver<PersonEvent>,
    closed: tokio::sync::watch::Receiver<bool>,
}

/// What [`PersonEvents::next`] gives.
#[derive(Clone, Debug)]
pub enum Watched {
    /// An event.
    Event(PersonEvent),
    /// Events were missed (a slow reader): read [`ApprovalQueue::waiting`] again.
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

/// The longest a value put into an approval message may be before it is cut.
const TEMPLATE_VALUE_CHARS: usize = 200;
/// The longest a rendered approval message may be before it is cut.
const TEMPLATE_MESSAGE_CHARS: usize = 2000;

/// A tool's configured approval message (`toolSettings.<name>.approvalMessage`): text with
/// `{{name}}` placeholders naming the call's arguments (`{{channel}}`, dotted paths into nested
/// ones: `{{target.name}}`, `{{items.0}}`). Checked when the configuration is read, so an
/// unclosed `{{` is a configuration error at its line; a name the call does not have stays
/// visible as written, since the template cannot know every tool's arguments.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApprovalTemplate(String);

/// Why an approval message template is not valid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the approval message has a `{{{{` at character {at} that no `}}}}` closes")]
pub struct TemplateError {
    /// Where the unclosed `{{` starts, counted in characters from 1.
    pub at: usize,
}

impl ApprovalTemplate {
    /// Checks a template.
    pub fn new(text: &str) -> Result<Self, TemplateError> {
        let mut rest = text;
        while let Some(open) = rest.find("{{") {
            let after = &rest[open + 2..];
            match after.find("}}") {
                Some(close) => rest = &after[close + 2..],
                None => {
                    let at = text.len() - rest.len() + open;
                    return Err(TemplateError {
                        at: text[..at].chars().count() + 1,
                    });
                }
            }
        }
        Ok(Self(text.to_string()))
    }

    /// The template as written.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The message for a call with `arguments`: each placeholder replaced by its value (a
    /// string as it is, anything else as JSON), each value and the whole message capped.
    pub fn render(&self, arguments: &Value) -> String {
        let mut out = String::new();
        let mut rest = self.0.as_str();
        while let Some(open) = rest.find("{{") {
            out.push_str(&rest[..open]);
            let after = &rest[open + 2..];
            let Some(close) = after.find("}}") else {
                // `new` refuses this; kept visible rather than dropped all the same.
                break;
            };
            let placeholder = &rest[open..open + 2 + close + 2];
            match lookup(arguments, after[..close].trim()) {
                Some(Value::String(text)) => out.push_str(&cap(text, TEMPLATE_VALUE_CHARS)),
                Some(value) => out.push_str(&cap(&value.to_string(), TEMPLATE_VALUE_CHARS)),
                None => out.push_str(placeholder),
            }
            rest = &after[close + 2..];
        }
        out.push_str(rest);
        cap(&out, TEMPLATE_MESSAGE_CHARS)
    }
}

/// The value at a dotted path (`a.b.0`) in the arguments.
fn lookup<'a>(arguments: &'a Value, path: &str) -> Option<&'a Value> {
    if path.is_empty() {
        return None;
    }
    path.split('.')
        .try_fold(arguments, |value, key| match value {
            Value::Object(map) => map.get(key),
            Value::Array(items) => key.parse::<usize>().ok().and_then(|i| items.get(i)),
            _ => None,
        })
}

/// `text` cut to `limit` characters, with an ellipsis when it was cut.
fn cap(text: &str, limit: usize) -> String {
    match text.char_indices().nth(limit) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_string(),
    }
}

impl Serialize for ApprovalTemplate {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> serde::Deserialize<'de> for ApprovalTemplate {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = std::borrow::Cow::<str>::deserialize(d)?;
        Self::new(&text).map_err(serde::de::Error::custom)
    }
}

impl schemars::JsonSchema for ApprovalTemplate {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "ApprovalTemplate".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "description": "The message a person sees when asked to approve a call of this tool, \
                            with `{{name}}` placeholders for its arguments (dotted paths into \
                            nested ones: `{{target.name}}`).",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_template_renders_arguments_by_dotted_path_and_leaves_unknown_names_visible() {
        let template = ApprovalTemplate::new(
            "Send {{text}} to {{ channel }} as {{user.name}} ({{user.roles.1}}, {{count}}, {{missing}})?",
        )
        .expect("valid");
        let arguments = json!({
            "text": "hi", "channel": "#general", "count": 3,
            "user": {"name": "ada", "roles": ["x", "admin"]}
        });
        assert_eq!(
            template.render(&arguments),
            "Send hi to #general as ada (admin, 3, {{missing}})?"
        );
        let long = "x".repeat(500);
        let rendered = template.render(&json!({"text": long}));
        assert!(
            rendered.contains(&format!("{}…", "x".repeat(200))),
            "{rendered}"
        );
        assert!(!rendered.contains(&"x".repeat(201)));
    }

    #[test]
    fn an_unclosed_placeholder_is_an_error_that_says_where() {
        assert_eq!(
            ApprovalTemplate::new("Send {{text}} to {{channel?"),
            Err(TemplateError { at: 18 })
        );
        assert!(ApprovalTemplate::new("no placeholders, }} alone is text").is_ok());
    }

    fn write_request(channel: Channel, session: Option<&str>) -> ApprovalRequest {
        ApprovalRequest {
            tool: "file_write".into(),
            source: "workspace".into(),
            arguments: json!({}),
            channel,
            session: session.map(str::to_string),
            message: "Allow?".into(),
            preview: None,
            configured_message: false,
            time_limit: std::time::Duration::from_secs(60),
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
        let question = HumanQuestion {
            tool: "request_human_input".into(),
            arguments: json!({}),
            question: "How many?".into(),
            schema: json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}),
            channel: Channel::Rest,
            session: None,
            time_limit: std::time::Duration::from_secs(60),
        };
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
