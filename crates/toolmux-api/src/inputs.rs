//! `/api/inputs`: questions waiting for a person (`request_human_input` and code mode's
//! `human.ask`, called over REST or from a script), beside the approvals, and their answers.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use toolmux_core::{AnswerError, HumanAnswer, PendingInput};
use toolmux_http::{ApiJson, ApiPath, OpenApiRouter, routes};
use utoipa::ToSchema;

use crate::ApiState;
use crate::error::{ApiError, ErrorBody};

pub(crate) fn routes() -> OpenApiRouter<ApiState> {
    OpenApiRouter::new()
        .routes(routes!(list))
        .routes(routes!(answer))
}

/// The questions waiting for an answer, oldest first.
#[derive(Serialize, ToSchema)]
pub struct InputList {
    /// Each waiting question: `id`, the asking call (`tool`, `arguments`), `question`, `schema`
    /// (the JSON Schema the answer's `content` must fit), `channel`, `session`, `created` and
    /// `expires`.
    #[schema(value_type = Vec<Object>)]
    pub inputs: Vec<PendingInput>,
}

/// A person's answer to a question.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct InputAnswer {
    /// Answer, decline, or dismiss.
    pub action: InputAction,
    /// With `accept`: the answer, an object that fits the question's schema (a free-text
    /// question's is `{"answer": "..."}`).
    #[schema(value_type = Option<Object>)]
    pub content: Option<Value>,
}

/// What the person did.
#[derive(Debug, Clone, Copy, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum InputAction {
    /// Answered, with `content`.
    Accept,
    /// Chose not to answer.
    Decline,
    /// Dismissed the question.
    Cancel,
}

/// Lists the questions waiting for an answer.
#[utoipa::path(
    get, path = "/api/inputs", tag = "approvals",
    responses((status = 200, description = "Waiting questions", body = InputList))
)]
pub(crate) async fn list(State(state): State<ApiState>) -> Json<InputList> {
    Json(InputList {
        inputs: state.inner.approvals.pending_inputs(),
    })
}

/// Answers a waiting question. An accepted answer that does not fit the question's schema is
/// refused with the reasons, and the question keeps waiting.
#[utoipa::path(
    post, path = "/api/inputs/{id}", tag = "approvals",
    params(("id" = uuid::Uuid, Path, description = "The question's id")),
    request_body = InputAnswer,
    responses(
        (status = 204, description = "Answered; the asking call goes on"),
        (status = 400, description = "A malformed id or body", body = ErrorBody),
        (status = 401, description = "No valid API key", body = ErrorBody),
        (status = 404, description = "Nothing is waiting under that id", body = ErrorBody),
        (status = 422, description = "The content does not fit the question's schema", body = ErrorBody),
    )
)]
pub(crate) async fn answer(
    State(state): State<ApiState>,
    ApiPath(id): ApiPath<uuid::Uuid>,
    ApiJson(answer): ApiJson<InputAnswer>,
) -> Result<StatusCode, ApiError> {
    let answer = match answer.action {
        InputAction::Accept => HumanAnswer::Accept(
            answer
                .content
                .unwrap_or_else(|| Value::Object(Default::default())),
        ),
        InputAction::Decline => HumanAnswer::Decline,
        InputAction::Cancel => HumanAnswer::Cancel,
    };
    match state.inner.approvals.answer_input(id, answer) {
        Ok(()) => Ok(StatusCode::NO_CONTENT),
        Err(e @ AnswerError::NotWaiting(_)) => Err(ApiError::not_found(e.to_string())),
        Err(e @ AnswerError::Invalid(_)) => Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_answer",
            e.to_string(),
        )),
    }
}
