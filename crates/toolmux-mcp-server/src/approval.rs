//! Approvals over MCP: an `ask` call becomes an `elicitation/create` request to the client, with
//! three choices — allow once, allow for the rest of this session, deny. A question
//! (`request_human_input`, code mode's `human.ask`) becomes one too, with the question's own
//! form.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use rmcp::model::{
    CancelledNotificationParam, ClientResult, ElicitRequest, ElicitRequestParams, ElicitResult,
    ElicitationAction, ElicitationSchema, RequestId, ServerRequest,
};
use rmcp::service::{Peer, PeerRequestOptions, RequestHandle, RoleServer, ServiceError};
use serde_json::{Value, json};
use toolmux_core::{
    Approval, ApprovalQueue, ApprovalRequest, Approver, CannotAsk, HumanAnswer, HumanQuestion,
};

/// The property of the elicitation form that carries the answer.
pub const DECISION_FIELD: &str = "decision";
/// Run this call.
pub const ALLOW_ONCE: &str = "allow_once";
/// Run this call and every later call of the same tool in this session without asking.
pub const ALLOW_SESSION: &str = "allow_session";
/// Do not run it.
pub const DENY: &str = "deny";

/// Tools a person allowed for the rest of one MCP session.
#[derive(Debug, Default)]
pub(crate) struct SessionGrants {
    tools: Mutex<HashSet<String>>,
}

impl SessionGrants {
    fn contains(&self, tool: &str) -> bool {
        self.tools
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(tool)
    }

    fn grant(&self, tool: &str) {
        self.tools
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(tool.to_string());
    }
}

/// Asks the MCP client's user through elicitation. Installed only for clients that declared the
/// elicitation capability; the pipeline denies `ask` calls of other clients with a message that
/// says how to change the policy.
pub(crate) struct ElicitationApprover {
    peer: Peer<RoleServer>,
    grants: Arc<SessionGrants>,
    /// The name the client knows the tool by (differs from the registry name in pass-through
    /// mode).
    served_name: String,
}

impl ElicitationApprover {
    pub(crate) fn new(
        peer: Peer<RoleServer>,
        grants: Arc<SessionGrants>,
        served_name: String,
    ) -> Self {
        Self {
            peer,
            grants,
            served_name,
        }
    }
}

/// The form sent with every approval request. A request that belongs to no session (a
/// 2026-07-28 client's) is not offered "allow for this session": there is no session to
/// remember it in.
pub(crate) fn decision_schema(for_session: bool) -> ElicitationSchema {
    let mut choices = vec![json!({"const": ALLOW_ONCE, "title": "Allow once"})];
    if for_session {
        choices.push(json!({"const": ALLOW_SESSION, "title": "Allow always for this session"}));
    }
    choices.push(json!({"const": DENY, "title": "Deny"}));
    let schema = json!({
        "type": "object",
        "properties": {
            DECISION_FIELD: {
                "type": "string",
                "title": "Decision",
                "oneOf": choices
            }
        },
        "required": [DECISION_FIELD]
    });
    let Value::Object(map) = schema else {
        unreachable!("a json! object literal is an object")
    };
    // The literal above is a valid elicitation schema; a failure here is a bug in this file,
    // and the fallback (an empty form) still lets the person answer by accepting or declining.
    ElicitationSchema::from_json_schema(map).unwrap_or_else(|e| {
        tracing::error!(error = %e, "the approval form is not a valid elicitation schema");
        ElicitationSchema::new(Default::default())
    })
}

/// The approval form for `request`, naming the tool as the client knows it (`served_name`,
/// which differs from the registry name in pass-through mode).
pub(crate) fn approval_params(
    served_name: &str,
    request: &ApprovalRequest,
    for_session: bool,
) -> ElicitRequestParams {
    let arguments =
        serde_json::to_string_pretty(&request.arguments).unwrap_or_else(|_| "{}".into());
    // A configured `approvalMessage` is the question as its author worded it; otherwise the
    // tool is named as this client knows it.
    let mut message = if request.configured_message {
        request.message.clone()
    } else {
        // Who wants the call made, where a configured principal made it.
        let asker = (request.caller.as_ref())
            .map(|caller| format!("{caller} wants to run `{served_name}`. "))
            .unwrap_or_default();
        format!(
            "{asker}Allow `{served_name}` (from `{}`) to run with these arguments?\n{arguments}",
            request.source
        )
    };
    if let Some(preview) = request
        .preview
        .as_ref()
        .filter(|_| !request.configured_message)
    {
        message.push_str("\n\n");
        message.push_str(preview);
    }
    ElicitRequestParams::FormElicitationParams {
        meta: None,
        message,
        requested_schema: decision_schema(for_session),
    }
}

/// What a person's answer means for the call.
pub(crate) fn decide(action: ElicitationAction, content: Option<&Value>) -> Decision {
    match action {
        ElicitationAction::Accept => {
            let choice = content
                .and_then(|c| c.get(DECISION_FIELD))
                .and_then(Value::as_str);
            match choice {
                Some(ALLOW_ONCE) => Decision::Once,
                Some(ALLOW_SESSION) => Decision::Session,
                Some(DENY) => Decision::Deny("the user chose to deny it".into()),
                // Accepting a form whose only field is the decision without choosing is read
                // as "no": running a tool needs an explicit yes.
                None => Decision::Deny("the user accepted the request without choosing".into()),
                Some(other) => Decision::Deny(format!(
                    "the client answered `{other}`, which is not one of {ALLOW_ONCE}, {ALLOW_SESSION}, {DENY}"
                )),
            }
        }
        ElicitationAction::Decline => Decision::Deny("the user declined it".into()),
        ElicitationAction::Cancel => {
            Decision::Deny("the user dismissed the approval request".into())
        }
        other => Decision::Deny(format!(
            "the client answered with an unknown action ({other:?})"
        )),
    }
}

/// A person's answer.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Decision {
    Once,
    Session,
    Deny(String),
}

impl ElicitationApprover {
    /// Sends one elicitation; its handle carries the request id, by which the client can be
    /// told to close the form ([`withdraw`](Self::withdraw)). The time limit is given to rmcp
    /// so that when it runs out the client is told (`notifications/cancelled`) and closes its
    /// form, rather than the wait merely being dropped on our side.
    async fn send(
        &self,
        params: ElicitRequestParams,
        time_limit: Duration,
    ) -> Result<RequestHandle<RoleServer>, ServiceError> {
        self.peer
            .send_request_with_option(
                ServerRequest::ElicitRequest(ElicitRequest::new(params)),
                PeerRequestOptions::with_timeout(time_limit),
            )
            .await
    }

    /// The approval form for `request`, as this session's client is shown it.
    fn params_for(&self, request: &ApprovalRequest) -> ElicitRequestParams {
        approval_params(&self.served_name, request, true)
    }

    /// Tells the client that the form it shows for `id` was answered elsewhere, so it closes
    /// it.
    async fn withdraw(&self, id: RequestId) {
        let notice = CancelledNotificationParam::new(
            Some(id),
            Some("answered elsewhere (the web app or the REST API)".into()),
        );
        if let Err(e) = self.peer.notify_cancelled(notice).await {
            // The call goes on with the other channel's answer; the client merely keeps a
            // stale form, which it drops when it answers or disconnects.
            tracing::warn!(error = %e, "could not withdraw an elicitation from the MCP client");
        }
    }

    /// What an answer to the approval form means for the call.
    fn approval_of(&self, request: &ApprovalRequest, answer: ElicitResult) -> Approval {
        match decide(answer.action, answer.content.as_ref()) {
            Decision::Once => Approval::Allow,
            Decision::Session => {
                self.grants.grant(&request.tool);
                Approval::Allow
            }
            Decision::Deny(reason) => Approval::Deny { reason },
        }
    }
}

/// The client's answer to one elicitation.
async fn elicit_result(handle: RequestHandle<RoleServer>) -> Result<ElicitResult, ServiceError> {
    match handle.await_response().await? {
        ClientResult::ElicitResult(result) => Ok(result),
        _ => Err(ServiceError::UnexpectedResponse),
    }
}

fn approval_failed(e: &ServiceError) -> Approval {
    Approval::Deny {
        reason: format!("the approval request to the MCP client failed: {e}"),
    }
}

/// The form for a question.
pub(crate) fn question_params(question: &HumanQuestion) -> Result<ElicitRequestParams, CannotAsk> {
    let Value::Object(schema) = question.schema.as_value().clone() else {
        return Err(CannotAsk(
            "the answer's schema must be a JSON object".into(),
        ));
    };
    let requested_schema = ElicitationSchema::from_json_schema(schema).map_err(|e| {
        CannotAsk(format!(
            "the answer's schema cannot be shown as an MCP form ({e}); a form is an object \
             of flat fields: string, number, integer, boolean, or a string enum"
        ))
    })?;
    Ok(ElicitRequestParams::FormElicitationParams {
        meta: None,
        message: question.question.clone(),
        requested_schema,
    })
}

fn question_failed(e: &ServiceError) -> CannotAsk {
    CannotAsk(format!("the question to the MCP client failed: {e}"))
}

pub(crate) fn human_answer(answer: ElicitResult) -> HumanAnswer {
    match answer.action {
        ElicitationAction::Accept => {
            HumanAnswer::Accept(answer.content.unwrap_or_else(|| json!({})))
        }
        ElicitationAction::Decline => HumanAnswer::Decline,
        _ => HumanAnswer::Cancel,
    }
}

#[async_trait]
impl Approver for ElicitationApprover {
    async fn approve(&self, request: &ApprovalRequest) -> Approval {
        if self.grants.contains(&request.tool) {
            return Approval::Allow;
        }
        let sent = self
            .send(self.params_for(request), request.time_limit)
            .await;
        match sent {
            Ok(handle) => match elicit_result(handle).await {
                Ok(answer) => self.approval_of(request, answer),
                Err(e) => approval_failed(&e),
            },
            Err(e) => approval_failed(&e),
        }
    }

    async fn ask(&self, question: &HumanQuestion) -> Result<HumanAnswer, CannotAsk> {
        let handle = self
            .send(question_params(question)?, question.time_limit)
            .await
            .map_err(|e| question_failed(&e))?;
        elicit_result(handle)
            .await
            .map(human_answer)
            .map_err(|e| question_failed(&e))
    }
}

/// Under `toolmux serve`, where a person can also answer through the REST API (the web app, a
/// bot on `/api/approvals/stream`): each approval and question is put to the client by
/// elicitation and parked in the process's queue at once, and the first answer wins (the other
/// is withdrawn: an answer from the queue sends the client `notifications/cancelled` for its
/// form). A client's `cancel` is no answer: the queue keeps waiting. A client that cannot elicit
/// has its approvals and its questions (`request_human_input`) parked in the queue alone, where
/// the web app, the REST API or the terminal answers them.
pub(crate) struct QueuedApprover {
    client: Option<ElicitationApprover>,
    queue: Arc<ApprovalQueue>,
}

impl QueuedApprover {
    pub(crate) fn new(client: Option<ElicitationApprover>, queue: Arc<ApprovalQueue>) -> Self {
        Self { client, queue }
    }
}

#[async_trait]
impl Approver for QueuedApprover {
    async fn approve(&self, request: &ApprovalRequest) -> Approval {
        let Some(client) = &self.client else {
            return self.queue.approve(request).await;
        };
        // A tool allowed for the session answers at once, before the queue shows anything.
        if client.grants.contains(&request.tool) {
            return Approval::Allow;
        }
        let handle = match client
            .send(client.params_for(request), request.time_limit)
            .await
        {
            Ok(handle) => handle,
            Err(e) => return approval_failed(&e),
        };
        first_answer(
            client,
            handle,
            self.queue.approve(request),
            |answer| match answer {
                // `cancel` is "no answer here" (headless clients such as `claude -p` answer it at
                // once): the approval keeps waiting in the queue for a person, until its time
                // limit. A `decline` is a denial.
                Ok(answer) if answer.action == ElicitationAction::Cancel => None,
                Ok(answer) => Some(client.approval_of(request, answer)),
                Err(e) => Some(approval_failed(&e)),
            },
        )
        .await
    }

    async fn ask(&self, question: &HumanQuestion) -> Result<HumanAnswer, CannotAsk> {
        let Some(client) = &self.client else {
            return self.queue.ask(question).await;
        };
        let handle = client
            .send(question_params(question)?, question.time_limit)
            .await
            .map_err(|e| question_failed(&e))?;
        first_answer(client, handle, self.queue.ask(question), |answer| {
            match answer.map(human_answer) {
                // As for approvals: `cancel` leaves the question to the queue.
                Ok(HumanAnswer::Cancel) => None,
                Ok(answer) => Some(Ok(answer)),
                Err(e) => Some(Err(question_failed(&e))),
            }
        })
        .await
    }
}

/// The first answer, the client's (to the elicitation `handle` stands for) or the queue's. The
/// client's is read by `read`, where `None` is no answer (a `cancel`): the queue's is then
/// awaited. When the queue answers first, the client is told to close its form.
async fn first_answer<T>(
    client: &ElicitationApprover,
    handle: RequestHandle<RoleServer>,
    queued: impl Future<Output = T>,
    read: impl FnOnce(Result<ElicitResult, ServiceError>) -> Option<T>,
) -> T {
    let id = handle.id.clone();
    let from_client = elicit_result(handle);
    tokio::pin!(from_client, queued);
    tokio::select! {
        biased;
        answer = &mut from_client => match read(answer) {
            Some(answer) => answer,
            None => queued.await,
        },
        answer = &mut queued => {
            client.withdraw(id).await;
            answer
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_form_offers_three_choices() {
        let schema = serde_json::to_value(decision_schema(true)).expect("serializes");
        let choices: Vec<&str> = schema["properties"][DECISION_FIELD]["oneOf"]
            .as_array()
            .expect("oneOf")
            .iter()
            .filter_map(|c| c["const"].as_str())
            .collect();
        assert_eq!(choices, [ALLOW_ONCE, ALLOW_SESSION, DENY]);
        assert_eq!(schema["required"], json!([DECISION_FIELD]));
    }

    #[test]
    fn only_an_explicit_allow_runs_the_tool() {
        let accept = |v: Value| decide(ElicitationAction::Accept, Some(&v));
        assert_eq!(accept(json!({"decision": "allow_once"})), Decision::Once);
        assert_eq!(
            accept(json!({"decision": "allow_session"})),
            Decision::Session
        );
        assert!(matches!(
            accept(json!({"decision": "deny"})),
            Decision::Deny(_)
        ));
        assert!(matches!(accept(json!({})), Decision::Deny(_)));
        assert!(matches!(
            accept(json!({"decision": "yes"})),
            Decision::Deny(_)
        ));
        assert!(matches!(
            decide(ElicitationAction::Decline, None),
            Decision::Deny(r) if r.contains("declined")
        ));
        assert!(matches!(
            decide(ElicitationAction::Cancel, None),
            Decision::Deny(r) if r.contains("dismissed")
        ));
    }
}
