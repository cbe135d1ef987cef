//! Approvals and questions for 2026-07-28 clients, as input-required results (SEP-2322, the
//! revision's multi round-trip requests): the revision has no server-to-client requests, so
//! where the handshake era sends `elicitation/create` and waits, a stateless `tools/call` is
//! answered with `resultType: "input_required"`, the form in `inputRequests`, and a sealed
//! `requestState`. The client asks its user and sends the same call again with the answer in
//! `inputResponses` and the state echoed; the call then runs through the hub's pipeline again,
//! where the approver hands the pipeline the answers given so far, in the order it asks. So an
//! approval is decided and recorded by the pipeline exactly as an elicitation's answer is, and
//! a question's answer is checked by the question's own rule (`ask_within`).
//!
//! The state is attacker-controlled input (the spec says so): it is sealed with an HMAC under a
//! key drawn for this process (rmcp's `RequestStateCodec`), expires with the approval time
//! limit, names the caller and the exact call (tool and arguments) it was issued for, and is
//! redeemed once. A call whose approval text changed between the rounds (a write tool's preview
//! of a file that changed meanwhile) is asked again: what runs is what the person was shown.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rmcp::model::{
    ElicitRequest, ElicitRequestParams, ElicitResult, InputRequest, InputRequiredResult,
    InputResponses, JsonObject, RequestStateCodec, RequestStateError, SealOptions,
};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use tokio::sync::mpsc;
use toolmux_core::{Approval, ApprovalRequest, Approver, CannotAsk, HumanAnswer, HumanQuestion};

use crate::approval::{Decision, approval_params, decide, human_answer, question_params};

/// The `inputRequests` key of an approval form.
pub(crate) const APPROVAL_KEY: &str = "toolmux/approval";
/// The `inputRequests` key of a question (`request_human_input`, code mode's `human.ask`).
pub(crate) const QUESTION_KEY: &str = "toolmux/question";
/// The most answers one call gathers across its rounds: every approval and question, and every
/// answer refused for not fitting its form. A call that asks more is ended with an error
/// instead of growing its state without end.
const MAX_ANSWERS: usize = 8;
/// The largest `requestState` taken back; toolmux never issues one larger.
pub(crate) const MAX_STATE_BYTES: usize = 1024 * 1024;
/// The largest answer taken from `inputResponses`, serialized: the size cap of an answer to a
/// question, with room for the envelope.
const MAX_RESPONSE_BYTES: usize = toolmux_core::MAX_ANSWER_BYTES + 1024;

/// Why a `requestState` or an `inputResponses` entry is refused. Every one ends the request with
/// a JSON-RPC error (invalid params); the tool never runs.
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
        "requestState has expired (it lasts as long as the approval time limit); call the tool again without it"
    )]
    Expired,
    #[error("requestState was issued to another caller")]
    OtherCaller,
    #[error("requestState was issued for another call (another tool or other arguments)")]
    OtherCall,
    #[error("requestState was already used; call the tool again without it")]
    Used,
    #[error("inputResponses[\"{key}\"] is larger than {MAX_RESPONSE_BYTES} bytes")]
    ResponseTooLarge { key: &'static str },
    #[error("inputResponses[\"{key}\"] is not an elicitation result: {why}")]
    NotAnAnswer { key: &'static str, why: String },
    #[error("the call asked for more than {MAX_ANSWERS} answers; it is not run")]
    TooManyRounds,
    #[error("the request state could not be sealed: {0}")]
    Unsealable(String),
}

impl From<Refused> for rmcp::ErrorData {
    fn from(refused: Refused) -> Self {
        rmcp::ErrorData::invalid_params(refused.to_string(), None)
    }
}

/// What one input request put to the person: an approval or a question, and a digest of the
/// form shown, by which an answer is matched to the same form when the call runs again.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
enum Asked {
    Approval { shown: String },
    Question { shown: String },
}

impl Asked {
    fn approval(params: &ElicitRequestParams) -> Self {
        Self::Approval {
            shown: digest_of(params),
        }
    }

    fn question(params: &ElicitRequestParams) -> Self {
        Self::Question {
            shown: digest_of(params),
        }
    }

    fn key(&self) -> &'static str {
        match self {
            Self::Approval { .. } => APPROVAL_KEY,
            Self::Question { .. } => QUESTION_KEY,
        }
    }
}

/// A form and the person's answer to it.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct Answered {
    asked: Asked,
    answer: ElicitResult,
}

/// What a `requestState` carries (signed, not encrypted: nothing secret goes in).
#[derive(Debug, Serialize, Deserialize)]
struct Suspended {
    /// Redeemed once ([`RequestStates::redeem`]).
    nonce: String,
    /// Who the state was issued to.
    caller: String,
    /// A digest of the tool and the arguments it was issued for.
    call: String,
    /// The answers of the earlier rounds, in the order the call asked for them.
    answered: Vec<Answered>,
    /// What the state's own input request asked.
    pending: Asked,
    /// When the state expires, in milliseconds since the Unix epoch (the codec checks the
    /// expiry it seals; this one tells how long to remember the state as redeemed).
    expires_ms: u64,
}

/// The sealing key of this process and the states already redeemed.
pub(crate) struct RequestStates {
    codec: RequestStateCodec,
    /// Nonces of redeemed states, with their expiry (ms since the epoch): a state is refused
    /// once redeemed, until it would have expired anyway.
    redeemed: Mutex<HashMap<String, u64>>,
}

impl RequestStates {
    /// A codec under a key drawn from the system's random source for this process: states do
    /// not outlive it (a restarted server refuses them, and the client starts the call over).
    /// `None` when the random source fails: a guessable key would make states forgeable, so
    /// the server then serves 2026-07-28 clients as those that cannot show forms.
    pub(crate) fn new() -> Option<Self> {
        let mut key = vec![0u8; RequestStateCodec::MIN_KEY_LENGTH];
        if let Err(e) = getrandom::fill(&mut key) {
            tracing::error!(error = %e, "no random key for requestState: 2026-07-28 clients get no input-required results");
            return None;
        }
        Some(Self {
            codec: RequestStateCodec::try_new(key).ok()?,
            redeemed: Mutex::default(),
        })
    }

    fn seal(&self, state: &Suspended, ttl: Duration) -> Result<String, Refused> {
        // Serializing a struct of strings and JSON values cannot fail.
        let sealed = self
            .codec
            .seal_json_with(state, &SealOptions::new().ttl(ttl))
            .map_err(|e| Refused::Unsealable(e.to_string()))?;
        if sealed.len() > MAX_STATE_BYTES {
            return Err(Refused::TooManyRounds);
        }
        Ok(sealed)
    }

    /// The state `sealed` stands for, when this process issued it to `caller` for `call`,
    /// it has not expired and was not redeemed before; redeemed by this.
    fn open(&self, sealed: &str, caller: &str, call: &str) -> Result<Suspended, Refused> {
        if sealed.len() > MAX_STATE_BYTES {
            return Err(Refused::TooLarge);
        }
        let state: Suspended = self.codec.open_json(sealed).map_err(|e| match e {
            RequestStateError::Expired => Refused::Expired,
            _ => Refused::Forged,
        })?;
        if state.caller != caller {
            return Err(Refused::OtherCaller);
        }
        if state.call != call {
            return Err(Refused::OtherCall);
        }
        if state.answered.len() >= MAX_ANSWERS {
            return Err(Refused::TooManyRounds);
        }
        self.redeem(&state)?;
        Ok(state)
    }

    fn redeem(&self, state: &Suspended) -> Result<(), Refused> {
        let now = now_ms();
        let mut redeemed = self.redeemed.lock().unwrap_or_else(PoisonError::into_inner);
        redeemed.retain(|_, expires| *expires > now);
        if redeemed
            .insert(state.nonce.clone(), state.expires_ms)
            .is_some()
        {
            return Err(Refused::Used);
        }
        Ok(())
    }
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// A SHA-256 digest, base64url: short, and the same for the same bytes.
fn digest(bytes: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(bytes))
}

fn digest_of(params: &ElicitRequestParams) -> String {
    // A form toolmux built serializes; the fallback still tells different forms apart by text.
    let text = serde_json::to_string(params).unwrap_or_else(|e| e.to_string());
    digest(text.as_bytes())
}

/// The digest of one call: the tool as the client named it and its arguments as sent. A
/// retry sends the same request again, so the same bytes.
fn call_digest(tool: &str, arguments: Option<&JsonObject>) -> String {
    let arguments = arguments.map_or_else(String::new, |a| {
        serde_json::to_string(a).unwrap_or_else(|e| e.to_string())
    });
    digest(format!("{tool}\n{arguments}").as_bytes())
}

/// A form the pipeline asked for that no answer given so far answers: the call stops here, and
/// the client is sent the form.
struct Pending {
    asked: Asked,
    params: ElicitRequestParams,
    /// The answers handed to the pipeline before it asked this, carried to the next round.
    answered: Vec<Answered>,
    /// How long the person has to answer.
    time_limit: Duration,
}

/// One round of a `tools/call` from a 2026-07-28 client that can show forms: the approver the
/// pipeline asks, and where it says that it needs a form answered.
pub(crate) struct InputRound<'a> {
    states: &'a RequestStates,
    approver: Arc<RoundApprover>,
    suspended: mpsc::Receiver<Pending>,
    caller: String,
    call: String,
}

impl<'a> InputRound<'a> {
    /// The round `tool` with `arguments` is called in: a first one without `request_state`;
    /// else the one the state continues, with the answer `input_responses` gives to the
    /// state's form (a missing answer leaves the form to be asked again).
    pub(crate) fn begin(
        states: &'a RequestStates,
        caller: &str,
        tool: &str,
        arguments: Option<&JsonObject>,
        request_state: Option<&str>,
        input_responses: Option<&InputResponses>,
    ) -> Result<Self, Refused> {
        let call = call_digest(tool, arguments);
        let mut answers = VecDeque::new();
        if let Some(sealed) = request_state {
            let state = states.open(sealed, caller, &call)?;
            answers.extend(state.answered);
            let key = state.pending.key();
            if let Some(response) = input_responses.and_then(|r| r.get(key)) {
                answers.push_back(Answered {
                    asked: state.pending,
                    answer: elicit_result(key, response)?,
                });
            }
        }
        let (suspend, suspended) = mpsc::channel(1);
        Ok(Self {
            states,
            approver: Arc::new(RoundApprover {
                served_name: tool.to_string(),
                answers: Mutex::new(Answers {
                    remaining: answers,
                    used: Vec::new(),
                }),
                suspend,
            }),
            suspended,
            caller: caller.to_string(),
            call,
        })
    }

    /// The approver of the round's call.
    pub(crate) fn approver(&self) -> Arc<dyn Approver> {
        Arc::clone(&self.approver) as Arc<dyn Approver>
    }

    /// The input-required result that puts the form the call stopped at to the client, with
    /// the state the client's retry continues from; pending until the call stops at a form.
    pub(crate) async fn input_required(&mut self) -> Result<InputRequiredResult, Refused> {
        let Some(pending) = self.suspended.recv().await else {
            // The approver holds the sender for as long as the round lasts.
            return std::future::pending().await;
        };
        if pending.answered.len() >= MAX_ANSWERS {
            return Err(Refused::TooManyRounds);
        }
        let key = pending.asked.key();
        let state = Suspended {
            nonce: uuid::Uuid::new_v4().to_string(),
            caller: self.caller.clone(),
            call: self.call.clone(),
            answered: pending.answered,
            pending: pending.asked,
            expires_ms: now_ms().saturating_add(pending.time_limit.as_millis() as u64),
        };
        let sealed = self.states.seal(&state, pending.time_limit)?;
        let request = InputRequest::Elicitation(ElicitRequest::new(pending.params));
        Ok(InputRequiredResult::new(
            Some([(key.to_string(), request)].into_iter().collect()),
            Some(sealed),
        ))
    }
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

struct Answers {
    /// The answers not yet handed to the pipeline, in the order it asked for them.
    remaining: VecDeque<Answered>,
    /// The ones handed to it.
    used: Vec<Answered>,
}

/// Hands the pipeline the answers of the earlier rounds in the order it asks; at the first
/// form no answer is given for, tells the round and waits until the round drops the call.
struct RoundApprover {
    served_name: String,
    answers: Mutex<Answers>,
    suspend: mpsc::Sender<Pending>,
}

impl RoundApprover {
    async fn answer(
        &self,
        asked: Asked,
        params: ElicitRequestParams,
        time_limit: Duration,
    ) -> ElicitResult {
        let answered = {
            let mut answers = self.answers.lock().unwrap_or_else(PoisonError::into_inner);
            match answers.remaining.pop_front() {
                Some(next) if next.asked == asked => {
                    let answer = next.answer.clone();
                    answers.used.push(next);
                    return answer;
                }
                // The call asks something else than it asked before (its approval shows
                // another preview now): what was answered no longer applies.
                Some(_) => answers.remaining.clear(),
                None => {}
            }
            answers.used.clone()
        };
        let pending = Pending {
            asked,
            params,
            answered,
            time_limit,
        };
        // The round drops the call once it reads this; a second form asked concurrently (a
        // script's parallel calls) waits with it.
        if self.suspend.send(pending).await.is_err() {
            tracing::debug!("an input-required round ended before its form was read");
        }
        std::future::pending().await
    }
}

#[async_trait]
impl Approver for RoundApprover {
    async fn approve(&self, request: &ApprovalRequest) -> Approval {
        let params = approval_params(&self.served_name, request, false);
        let asked = Asked::approval(&params);
        let answer = self.answer(asked, params, request.time_limit).await;
        match decide(answer.action, answer.content.as_ref()) {
            // "For this session" is not offered (there is no session), and is a yes to this
            // call at least.
            Decision::Once | Decision::Session => Approval::Allow,
            Decision::Deny(reason) => Approval::Deny { reason },
        }
    }

    async fn ask(&self, question: &HumanQuestion) -> Result<HumanAnswer, CannotAsk> {
        let params = question_params(question)?;
        let asked = Asked::question(&params);
        let answer = self.answer(asked, params, question.time_limit).await;
        Ok(human_answer(answer))
    }
}
