//! Forms for 2026-07-28 clients, as input-required results (SEP-2322, the revision's multi
//! round-trip requests). The revision has no server-to-client requests, so where the handshake
//! era sends `elicitation/create` and waits for the answer on the same call, a stateless
//! `tools/call` that needs a person's answer — its approval, a question (`request_human_input`,
//! code mode's `human.ask`), or an upstream server's own elicitation relayed — is answered with
//! `resultType: "input_required"`, the form in `inputRequests`, and a sealed `requestState`.
//! The call itself waits, parked in this process, exactly as it waits for an elicitation's
//! answer: the client's retry carries the answer in `inputResponses`, which resumes it. So the
//! pipeline decides and records an approval as it does every other (one execution-log entry),
//! a question's answer is checked by the question's own rule (`ask_within`, which asks again,
//! in a further round, when it does not fit), and what runs is what the person was shown.
//!
//! The state is attacker-controlled input (the spec says so): it is sealed with an HMAC under a
//! key drawn for this process (rmcp's `RequestStateCodec`), names the caller and the exact call
//! (tool and arguments) it was issued for, expires with the time the person has to answer, and
//! is redeemed once (the parked call is taken out when it is). A parked call is bounded as the
//! wait for an elicitation is: by the approval time limit, or for a relayed form by the tool's
//! own time limit; a client that never comes back leaves it to end there.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rmcp::model::{
    ElicitRequest, ElicitRequestParams, ElicitResult, InputRequest, InputRequiredResult,
    InputResponses, JsonObject, RequestStateCodec, RequestStateError, SealOptions,
};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use toolmux_core::{
    Approval, ApprovalRequest, Approver, CallError, CannotAsk, HumanAnswer, HumanQuestion,
    ToolResult,
};

use crate::approval::{Decision, approval_params, decide, human_answer, question_params};

/// The `inputRequests` key of an approval form.
pub(crate) const APPROVAL_KEY: &str = "toolmux/approval";
/// The `inputRequests` key of a question (`request_human_input`, code mode's `human.ask`).
pub(crate) const QUESTION_KEY: &str = "toolmux/question";
/// The `inputRequests` key of an upstream server's own form, relayed.
pub(crate) const RELAYED_KEY: &str = "toolmux/relayed";
/// The largest `requestState` taken back; toolmux issues ones of about 300 bytes.
pub(crate) const MAX_STATE_BYTES: usize = 4096;
/// The largest answer taken from `inputResponses`, serialized: the size cap of an answer to a
/// question, with room for the envelope.
const MAX_RESPONSE_BYTES: usize = toolmux_core::MAX_ANSWER_BYTES + 1024;
/// Calls parked at once in one server (all its doors: `/mcp` and every `/mcp/<name>` share
/// one [`Rounds`]), waiting for their clients' answers. Each holds what a call waiting for an
/// elicitation holds; past this many, a further one is refused.
const MAX_PARKED: usize = 1024;
/// Calls parked at once for one caller: one caller must not fill the whole pool, which would
/// refuse everyone else. A caller with a credential is known by its principal; one without is
/// known only by the name it gives itself (`clientInfo`), which it may change — for those the
/// bound is fairness among honest clients, and `MAX_PARKED` is what bounds the rest.
const MAX_PARKED_PER_CALLER: usize = 64;

/// Why a `requestState` or an `inputResponses` entry is refused. Every one ends the request
/// with a JSON-RPC error (invalid params) and resumes nothing.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub(crate) enum Refused {
    #[error(
        "requestState is larger than {MAX_STATE_BYTES} bytes, so it is not one this server issued"
    )]
    TooLarge,
    #[error(
        "requestState was not issued by this server or was altered; call the tool again without it"
    )]
    Forged,
    #[error(
        "requestState has expired (it lasts as long as the person had to answer); call the tool again without it"
    )]
    Expired,
    #[error("requestState was issued to another caller")]
    OtherCaller,
    #[error("requestState was issued at another MCP endpoint; retry the call where it was made")]
    OtherDoor,
    #[error("requestState was issued for another call (another tool or other arguments)")]
    OtherCall,
    #[error("requestState was already used, or its call has ended; call the tool again without it")]
    Used,
    #[error("inputResponses[\"{key}\"] is larger than {MAX_RESPONSE_BYTES} bytes")]
    ResponseTooLarge { key: &'static str },
    #[error("inputResponses[\"{key}\"] is not an elicitation result: {why}")]
    NotAnAnswer { key: &'static str, why: String },
    #[error("{MAX_PARKED} calls already wait for their clients' answers; try again later")]
    Busy,
    #[error(
        "{MAX_PARKED_PER_CALLER} of this caller's calls already wait for its answers; answer them (or let them expire) before making more"
    )]
    CallerBusy,
    #[error("the request state could not be sealed: {0}")]
    Unsealable(String),
}

impl From<Refused> for rmcp::ErrorData {
    fn from(refused: Refused) -> Self {
        rmcp::ErrorData::invalid_params(refused.to_string(), None)
    }
}

/// What a `requestState` carries (signed, not encrypted: nothing secret goes in).
#[derive(Debug, Serialize, Deserialize)]
struct Sealed {
    /// The parked call's handle.
    nonce: String,
    /// Who the state was issued to.
    caller: String,
    /// The endpoint it was issued at: empty for `/mcp`, else the name in `/mcp/<name>` (the
    /// doors share one key, and a call parked at one is not another's to resume).
    door: String,
    /// A digest of the tool and the arguments it was issued for.
    call: String,
}

/// A form a call waits on, and where its answer goes.
pub(crate) struct Form {
    key: &'static str,
    params: ElicitRequestParams,
    answer: oneshot::Sender<ElicitResult>,
    /// How long the person has to answer.
    time_limit: Duration,
}

/// What a running call tells its round: it waits on a form, or it ended.
pub(crate) enum Event {
    Asks(Form),
    Done(Result<ToolResult, CallError>),
}

/// Where a call's forms go: its approver's and its backchannel's (an upstream server's own).
#[derive(Clone)]
pub(crate) struct Forms(mpsc::Sender<Event>);

impl Forms {
    /// Puts `params` to the client under `key` and waits for the answer; `None` when the call's
    /// round is over (the client went away or gave up, and the call is being stopped).
    pub(crate) async fn ask(
        &self,
        key: &'static str,
        params: ElicitRequestParams,
        time_limit: Duration,
    ) -> Option<ElicitResult> {
        let (answer, answered) = oneshot::channel();
        let form = Form {
            key,
            params,
            answer,
            time_limit,
        };
        self.0.send(Event::Asks(form)).await.ok()?;
        answered.await.ok()
    }
}

/// A call waiting for its client's answer between two requests.
struct Parked {
    /// Who made it: the identity its door computed (see [`Rounds::start`]).
    caller: String,
    /// The form it waits on.
    form: Form,
    /// What it does once answered.
    events: mpsc::Receiver<Event>,
    /// The call; stopped if dropped unanswered.
    task: AbortOnDrop,
}

struct AbortOnDrop(JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The sealing key of this process and the calls parked until their clients answer.
pub(crate) struct Rounds {
    codec: RequestStateCodec,
    parked: Mutex<HashMap<String, Parked>>,
}

impl Rounds {
    /// A codec under a key drawn from the system's random source for this process: states do
    /// not outlive it (nor do the calls they stand for). `None` when the random source fails:
    /// a guessable key would make states forgeable, so the server then serves 2026-07-28
    /// clients as those that cannot show forms.
    pub(crate) fn new() -> Option<Self> {
        let mut key = vec![0u8; RequestStateCodec::MIN_KEY_LENGTH];
        if let Err(e) = getrandom::fill(&mut key) {
            tracing::error!(error = %e, "no random key for requestState: 2026-07-28 clients get no input-required results");
            return None;
        }
        Some(Self {
            codec: RequestStateCodec::try_new(key).ok()?,
            parked: Mutex::default(),
        })
    }

    /// A round for a call about to start, and where the call's forms go. The call is handed to
    /// the round by [`Round::spawn`]. `caller` is the identity the door computed for the
    /// request (the principal's, else the client's own name); the per-caller cap counts by it.
    /// `door` is the endpoint's name, empty for `/mcp`.
    pub(crate) fn start(
        &self,
        door: &str,
        caller: &str,
        tool: &str,
        arguments: Option<&JsonObject>,
    ) -> (Round<'_>, Forms) {
        let (tx, events) = mpsc::channel(1);
        let forms = Forms(tx);
        let round = Round {
            rounds: self,
            tool: tool.to_string(),
            door: door.to_string(),
            caller: caller.to_string(),
            call: call_digest(tool, arguments),
            events,
            unanswered: None,
            task: None,
            done: Some(forms.clone()),
        };
        (round, forms)
    }

    /// The round `sealed` continues, with the answer `input_responses` gives to its form (a
    /// missing answer leaves the form to be asked again): when this process issued the state
    /// to `caller` for this very call, it has not expired, and the call still waits.
    pub(crate) fn resume(
        &self,
        sealed: &str,
        door: &str,
        caller: &str,
        tool: &str,
        arguments: Option<&JsonObject>,
        input_responses: Option<&InputResponses>,
    ) -> Result<Round<'_>, Refused> {
        if sealed.len() > MAX_STATE_BYTES {
            return Err(Refused::TooLarge);
        }
        let state: Sealed = self.codec.open_json(sealed).map_err(|e| match e {
            RequestStateError::Expired => Refused::Expired,
            _ => Refused::Forged,
        })?;
        if state.door != door {
            return Err(Refused::OtherDoor);
        }
        if state.caller != caller {
            return Err(Refused::OtherCaller);
        }
        let call = call_digest(tool, arguments);
        if state.call != call {
            return Err(Refused::OtherCall);
        }
        let mut parked = self.parked.lock().unwrap_or_else(PoisonError::into_inner);
        let waiting = parked.get(&state.nonce).ok_or(Refused::Used)?;
        // Read before the call is taken out, so that a malformed answer leaves it waiting for a
        // well-formed one.
        let key = waiting.form.key;
        let answer = input_responses
            .and_then(|responses| responses.get(key))
            .map(|response| elicit_result(key, response))
            .transpose()?;
        let parked = parked.remove(&state.nonce).ok_or(Refused::Used)?;
        let unanswered = match answer {
            Some(answer) => {
                // The call may have ended meanwhile (its time limit ran out): its end is then
                // its next event.
                let _ = parked.form.answer.send(answer);
                None
            }
            None => Some(parked.form),
        };
        Ok(Round {
            rounds: self,
            tool: tool.to_string(),
            door: door.to_string(),
            caller: caller.to_string(),
            call,
            events: parked.events,
            unanswered,
            task: Some(parked.task),
            done: None,
        })
    }

    /// Parks a call on `form` until its client's retry; the state the retry must carry.
    fn park(&self, round: Round<'_>, form: Form) -> Result<InputRequiredResult, Refused> {
        let nonce = uuid::Uuid::new_v4().to_string();
        let state = Sealed {
            nonce: nonce.clone(),
            caller: round.caller.clone(),
            door: round.door.clone(),
            call: round.call.clone(),
        };
        let sealed = self
            .codec
            .seal_json_with(&state, &SealOptions::new().ttl(form.time_limit))
            .map_err(|e| Refused::Unsealable(e.to_string()))?;
        let request = InputRequest::Elicitation(ElicitRequest::new(form.params.clone()));
        let key = form.key.to_string();
        let Round {
            events,
            task,
            caller,
            ..
        } = round;
        let Some(task) = task else {
            return Err(Refused::Unsealable("the call is not running".into()));
        };
        let mut parked = self.parked.lock().unwrap_or_else(PoisonError::into_inner);
        // Calls that ended while parked (their time limit ran out: the client never came back)
        // are forgotten here, before counting, so they hold no place in either cap.
        parked.retain(|_, call| !call.task.0.is_finished());
        if parked.values().filter(|call| call.caller == caller).count() >= MAX_PARKED_PER_CALLER {
            return Err(Refused::CallerBusy);
        }
        if parked.len() >= MAX_PARKED {
            return Err(Refused::Busy);
        }
        parked.insert(
            nonce,
            Parked {
                caller,
                form,
                events,
                task,
            },
        );
        Ok(InputRequiredResult::new(
            Some([(key, request)].into_iter().collect()),
            Some(sealed),
        ))
    }
}

/// One request's part of a call of a 2026-07-28 client that can show forms: the call runs (or
/// resumes) until it ends or waits on a form.
pub(crate) struct Round<'a> {
    rounds: &'a Rounds,
    /// The tool as the client named it.
    tool: String,
    door: String,
    caller: String,
    call: String,
    events: mpsc::Receiver<Event>,
    /// A form the retry did not answer: asked again.
    unanswered: Option<Form>,
    task: Option<AbortOnDrop>,
    /// Where a call started in this round tells that it ended.
    done: Option<Forms>,
}

/// What a round comes to.
pub(crate) enum Next {
    /// The call ended.
    Done(Result<ToolResult, CallError>),
    /// It waits on a form, which goes to the client.
    InputRequired(InputRequiredResult),
}

impl Round<'_> {
    /// Runs `call` as this round's call, in a task of its own: it outlives this request when
    /// it waits on a form.
    pub(crate) fn spawn(
        &mut self,
        call: impl Future<Output = Result<ToolResult, CallError>> + Send + 'static,
    ) {
        let Some(Forms(done)) = self.done.take() else {
            return;
        };
        self.task = Some(AbortOnDrop(tokio::spawn(async move {
            let result = call.await;
            // Nobody reads it when the round was given up; the call is being stopped then.
            let _ = done.send(Event::Done(result)).await;
        })));
    }

    /// Waits until the call ends or waits on a form; dropping this future stops the call.
    pub(crate) async fn next(mut self) -> Result<Next, Refused> {
        let form = match self.unanswered.take() {
            Some(form) => form,
            None => match self.events.recv().await {
                Some(Event::Asks(form)) => form,
                Some(Event::Done(result)) => return Ok(Next::Done(result)),
                // The task ended without a word: it panicked.
                None => {
                    return Ok(Next::Done(Err(CallError::Failed {
                        name: self.tool.clone(),
                        message: "the call stopped unexpectedly".into(),
                    })));
                }
            },
        };
        self.rounds.park(self, form).map(Next::InputRequired)
    }
}

/// A SHA-256 digest, base64url.
fn digest(bytes: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(bytes))
}

/// The digest of one call: the tool as the client named it and its arguments as sent. A
/// retry sends the same request again, so the same bytes.
fn call_digest(tool: &str, arguments: Option<&JsonObject>) -> String {
    let arguments = arguments.map_or_else(String::new, |a| {
        serde_json::to_string(a).unwrap_or_else(|e| e.to_string())
    });
    digest(format!("{tool}\n{arguments}").as_bytes())
}

/// An `inputResponses` entry as the elicitation result it must be.
fn elicit_result(key: &'static str, response: &serde_json::Value) -> Result<ElicitResult, Refused> {
    let size = serde_json::to_vec(response).map_or(usize::MAX, |bytes| bytes.len());
    if size > MAX_RESPONSE_BYTES {
        return Err(Refused::ResponseTooLarge { key });
    }
    ElicitResult::deserialize(response).map_err(|e| Refused::NotAnAnswer {
        key,
        why: e.to_string(),
    })
}

/// Asks approvals and questions of a 2026-07-28 client through its round.
pub(crate) struct FormApprover {
    /// The name the client knows the tool by.
    served_name: String,
    forms: Forms,
}

impl FormApprover {
    pub(crate) fn new(served_name: String, forms: Forms) -> Self {
        Self { served_name, forms }
    }
}

/// Why a form got no answer: the request that would carry it is gone.
const GONE: &str = "the client's request ended before it answered";

#[async_trait]
impl Approver for FormApprover {
    async fn approve(&self, request: &ApprovalRequest) -> Approval {
        let params = approval_params(&self.served_name, request, false);
        let Some(answer) = self
            .forms
            .ask(APPROVAL_KEY, params, request.time_limit)
            .await
        else {
            return Approval::Deny {
                reason: GONE.into(),
            };
        };
        match decide(answer.action, answer.content.as_ref()) {
            // "For this session" is not offered (there is no session), and is a yes to this
            // call at least.
            Decision::Once | Decision::Session => Approval::Allow,
            Decision::Deny(reason) => Approval::Deny { reason },
        }
    }

    async fn ask(&self, question: &HumanQuestion) -> Result<HumanAnswer, CannotAsk> {
        let params = question_params(question)?;
        self.forms
            .ask(QUESTION_KEY, params, question.time_limit)
            .await
            .map(human_answer)
            .ok_or_else(|| CannotAsk(GONE.into()))
    }
}
