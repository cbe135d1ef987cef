//! `/api/approvals`: calls with policy `ask` waiting for a person, and their answers.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use toolmux_core::{Approval, PendingApproval};
use toolmux_http::{ApiJson, ApiPath, OpenApiRouter, routes};
use utoipa::ToSchema;

use crate::ApiState;
use crate::error::{ApiError, ErrorBody};

pub(crate) fn routes() -> OpenApiRouter<ApiState> {
    OpenApiRouter::new()
        .routes(routes!(list))
        .routes(routes!(answer))
}

/// The calls waiting for an answer, oldest first.
#[derive(Serialize, ToSchema)]
pub struct ApprovalList {
    /// Each waiting call: `id`, `request` (`tool`, `source`, `arguments`, `channel`, `session`,
    /// `message`) and `created`.
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
    state
        .inner
        .approvals
        .answer(id, approval)
        .map_err(|e| ApiError::not_found(e.to_string()))?;
    Ok(StatusCode::NO_CONTENT)
}
