//! `/api/completions`: completion of a prompt's or resource template's argument, asked of the
//! upstream server that offers it, in the shape of MCP's `completion/complete`.

use axum::extract::State;
use axum::{Extension, Json};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use crate::ApiState;
use crate::error::{ApiError, ErrorBody, RelayFailures, relay_failure};
use crate::upstreams::relayed_servers;
use toolmux_http::{ApiJson, Caller};

/// What to complete: MCP's `completion/complete` params.
#[derive(Debug, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CompletionRequest {
    /// `{"type": "ref/prompt", "name": "PREFIX__prompt"}` or
    /// `{"type": "ref/resource", "uri": "<URI template>"}`.
    #[serde(rename = "ref")]
    #[schema(value_type = Object)]
    pub reference: Value,
    /// The argument being completed and what was typed so far.
    pub argument: CompletionArgument,
    /// Values of the other arguments already chosen: `{"arguments": {name: value}}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub context: Option<Value>,
}

/// An argument and its partial value.
#[derive(Debug, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CompletionArgument {
    /// The argument's name.
    pub name: String,
    /// What was typed so far.
    pub value: String,
}

/// Completes an argument; a server that offers no completions gives an empty list.
#[utoipa::path(
    post, path = "/api/completions", tag = "prompts",
    request_body = CompletionRequest,
    responses(
        (status = 200, description = "MCP's `completion/complete` result: `{completion: {values, total, hasMore}}`", body = Object),
        (status = 400, description = "The body is not a completion request", body = ErrorBody),
        (status = 401, description = "No valid API key", body = ErrorBody),
        (status = 404, description = "No such prompt or resource template", body = ErrorBody),
        RelayFailures,
    )
)]
pub(crate) async fn complete(
    State(state): State<ApiState>,
    Extension(caller): Extension<Caller>,
    ApiJson(request): ApiJson<CompletionRequest>,
) -> Result<Json<Value>, ApiError> {
    let request = serde_json::to_value(&request)
        .map_err(|e| ApiError::malformed(format!("the completion request is not valid: {e}")))?;
    Ok(Json(
        relayed_servers(&state, caller)?
            .complete(request)
            .await
            .map_err(relay_failure)?,
    ))
}
