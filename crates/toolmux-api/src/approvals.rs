//! `/api/approvals`: calls with policy `ask` waiting for a person, and their answers; and
//! `/api/approvals/stream`, the one event stream of everything waiting on a person (approvals
//! and questions alike), whichever channel started it.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use toolmux_core::{AnswerApprovalError, Approval, ApprovalScope, PendingApproval};
use toolmux_http::{ApiJson, ApiPath, OpenApiRouter, routes};
use utoipa::ToSchema;

use crate::ApiState;
use crate::error::{ApiError, ErrorBody};
use crate::sse;

pub(crate) fn routes() -> OpenApiRouter<ApiState> {
    OpenApiRouter::new()
        .routes(routes!(list))
        .routes(routes!(stream))
        .routes(routes!(answer))
}

/// The calls waiting for an answer, oldest first.
#[derive(Serialize, ToSchema)]
pub struct ApprovalList {
    /// Each waiting call: `id`, `request` (`tool`, `source`, `arguments`, `channel`, `session`,
    /// `toolCallId` when the caller gave the call one, `message`, and `caller`: the configured
    /// principal that made the call, when one did) and `created`.
    #[schema(value_type = Vec<Object>)]
    pub approvals: Vec<PendingApproval>,
}

/// A person's answer.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Answer {
    /// Run the call, or refuse it.
    pub decision: Decision,
    /// Why, shown to the caller of a denied call.
    pub reason: Option<String>,
    /// How far an `allow` reaches: this call only (`once`, the default), or every later call
    /// of the same tool in the same chat conversation (`conversation`), which then runs
    /// without asking and is logged with this approval's id as `approvedBy`. Only an `allow`
    /// of a call made in a chat conversation can be remembered; a denial never is.
    pub scope: Option<Scope>,
}

/// How far an answer reaches.
#[derive(Debug, Clone, Copy, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    /// This call only.
    Once,
    /// Every later call of the same tool in the same chat conversation.
    Conversation,
}

/// Run or refuse.
#[derive(Debug, Clone, Copy, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Decision {
    /// Run the call.
    Allow,
    /// Refuse it.
    Deny,
}

/// Lists the calls waiting for an answer.
#[utoipa::path(
    get, path = "/api/approvals", tag = "approvals",
    responses((status = 200, description = "Waiting calls", body = ApprovalList))
)]
pub(crate) async fn list(State(state): State<ApiState>) -> Json<ApprovalList> {
    Json(ApprovalList {
        approvals: state.inner.approvals.pending(None),
    })
}

/// Answers a waiting call.
#[utoipa::path(
    post, path = "/api/approvals/{id}", tag = "approvals",
    params(("id" = uuid::Uuid, Path, description = "The approval's id")),
    request_body = Answer,
    responses(
        (status = 204, description = "Answered; the call goes on (or is refused)"),
        (status = 400, description = "A malformed id or body", body = ErrorBody),
        (status = 401, description = "No valid API key", body = ErrorBody),
        (status = 404, description = "Nothing is waiting under that id", body = ErrorBody),
        (status = 422, description = "`scope: conversation` with a denial, or for a call made \
            outside a chat conversation; the approval still waits", body = ErrorBody),
    )
)]
pub(crate) async fn answer(
    State(state): State<ApiState>,
    ApiPath(id): ApiPath<uuid::Uuid>,
    ApiJson(answer): ApiJson<Answer>,
) -> Result<StatusCode, ApiError> {
    let approval = match answer.decision {
        Decision::Allow => Approval::Allow,
        Decision::Deny => Approval::Deny {
            reason: answer
                .reason
                .unwrap_or_else(|| "denied through the REST API".to_string()),
        },
    };
    let scope = match answer.scope {
        None | Some(Scope::Once) => ApprovalScope::Once,
        Some(Scope::Conversation) => ApprovalScope::Conversation,
    };
    state
        .inner
        .approvals
        .answer_scoped(id, approval, scope)
        .map_err(|e| match e {
            AnswerApprovalError::NotWaiting(e) => ApiError::not_found(e.to_string()),
            other => ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid_scope",
                other.to_string(),
            ),
        })?;
    Ok(StatusCode::NO_CONTENT)
}

/// How often an idle stream sends a comment, so that proxies and clients keep it open.
const KEEP_ALIVE: std::time::Duration = std::time::Duration::from_secs(15);

/// Everything waiting on a person, as server-sent events: `event: pending` with an approval
/// (the object `GET /api/approvals` lists) or a question (as `GET /api/inputs` lists it), each
/// with `kind` (`approval` or `input`); `event: resolved` with `{id, outcome}` (`allowed`,
/// `denied`, `accepted`, `declined`, `cancelled`, `withdrawn`); `event: turn-ended` with
/// `{session}` when a chat turn of that conversation ended (its messages saved). What waits
/// already comes first.
#[utoipa::path(
    get, path = "/api/approvals/stream", tag = "approvals",
    responses(
        (status = 200, description = "Server-sent events: `pending`, `resolved` and `turn-ended`, with a \
            `: keep-alive` comment when idle", content_type = "text/event-stream", body = String),
        (status = 401, description = "No valid API key", body = ErrorBody),
    )
)]
pub(crate) async fn stream(State(state): State<ApiState>) -> axum::response::Response {
    let queue = std::sync::Arc::clone(&state.inner.approvals);
    // Subscribe before reading what waits, so nothing falls between the two.
    let mut watched = Watching {
        events: queue.watch(),
        backlog: std::collections::VecDeque::new(),
        seen: std::collections::HashSet::new(),
        queue,
    };
    watched.catch_up();
    crate::sse::response(futures::stream::unfold(
        watched,
        |mut watching| async move {
            let frame = watching.next_frame().await?;
            Some((frame, watching))
        },
    ))
}

/// One client's stream: the queue's events, with what waited when it connected (or when it
/// fell behind) sent first and not twice.
struct Watching {
    queue: std::sync::Arc<toolmux_core::ApprovalQueue>,
    events: toolmux_core::PersonEvents,
    backlog: std::collections::VecDeque<String>,
    seen: std::collections::HashSet<uuid::Uuid>,
}

impl Watching {
    /// Queues a `pending` event for everything waiting now that this client has not seen.
    fn catch_up(&mut self) {
        for item in self.queue.waiting() {
            if self.seen.insert(item.id()) {
                self.backlog.push_back(sse::frame("pending", &item));
            }
        }
    }

    /// The next frame; `None` when the queue's streams are closed (the server stops).
    async fn next_frame(&mut self) -> Option<String> {
        use toolmux_core::{PersonEvent, Watched};
        loop {
            if let Some(frame) = self.backlog.pop_front() {
                return Some(frame);
            }
            let Ok(watched) = tokio::time::timeout(KEEP_ALIVE, self.events.next()).await else {
                return Some(": keep-alive\n\n".to_string());
            };
            match watched? {
                Watched::Event(PersonEvent::Pending(item)) => {
                    if self.seen.insert(item.id()) {
                        return Some(sse::frame("pending", &item));
                    }
                }
                Watched::Event(PersonEvent::Resolved(resolved)) => {
                    self.seen.remove(&resolved.id);
                    return Some(sse::frame("resolved", &resolved));
                }
                Watched::Event(PersonEvent::TurnEnded(ended)) => {
                    return Some(sse::frame("turn-ended", &ended));
                }
                // Fell behind: what waits now is sent again (those already seen are not).
                Watched::Missed => self.catch_up(),
            }
        }
    }
}
