//! `/api/prompts`: toolmux's own prompts (each model-invocable Agent Skill as `skill__NAME`)
//! and the prompts of the upstream servers behind toolmux, named as the MCP channel serves them
//! (`PREFIX__prompt`). Listing reads the skills and the discovery caches and starts nothing;
//! getting a prompt starts its server when needed and returns what MCP's `prompts/get` returns.

use std::collections::BTreeMap;

use axum::extract::State;
use axum::{Extension, Json};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use toolmux_http::{ApiJson, ApiPath, Caller, OpenApiRouter, routes};
use utoipa::ToSchema;

use crate::ApiState;
use crate::error::{ApiError, ErrorBody, RelayFailures, relay_failure};
use crate::upstreams::relayed_servers;

pub(crate) fn routes() -> OpenApiRouter<ApiState> {
    OpenApiRouter::new()
        .routes(routes!(list))
        .routes(routes!(get_prompt))
}

/// toolmux's own prompts, then every prompt of every enabled upstream server.
#[derive(Serialize, ToSchema)]
pub struct PromptList {
    /// The prompts, server by server.
    #[schema(value_type = Vec<PromptView>)]
    pub prompts: Vec<Value>,
}

/// One prompt as MCP's `prompts/list` shows it, plus the server it comes from.
#[derive(Serialize, ToSchema)]
#[allow(dead_code)] // documents the relayed JSON for the OpenAPI document
pub struct PromptView {
    /// The name to get it by: `PREFIX__prompt`, like a tool's, or `skill__NAME` for a skill.
    name: String,
    /// The upstream server that offers it; absent for toolmux's own.
    server: Option<String>,
    /// A display title.
    title: Option<String>,
    /// What it is for.
    description: Option<String>,
    /// Its arguments: `name`, `description`, `required`.
    #[schema(value_type = Option<Vec<Object>>)]
    arguments: Option<Vec<Value>>,
}

/// The arguments to fill a prompt with; MCP's prompt arguments are strings.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PromptArguments {
    /// Argument values by name.
    #[serde(default)]
    pub arguments: BTreeMap<String, String>,
}

/// Lists toolmux's own prompts and those of the upstream servers, from their discovery caches
/// (starting nothing).
#[utoipa::path(
    get, path = "/api/prompts", tag = "prompts",
    responses((status = 200, description = "The prompts", body = PromptList))
)]
pub(crate) async fn list(
    State(state): State<ApiState>,
    Extension(caller): Extension<Caller>,
) -> Result<Json<PromptList>, ApiError> {
    let prompts = relayed_servers(&state, caller)?.prompts().await;
    Ok(Json(PromptList { prompts }))
}

/// Gets a prompt filled with arguments, from its upstream server (started when needed). A POST
/// because it starts a process and runs the server's code, so it needs a key like a tool call.
#[utoipa::path(
    post, path = "/api/prompts/{name}", tag = "prompts",
    params(("name" = String, Path, description = "The prompt's name, `PREFIX__prompt`")),
    request_body = PromptArguments,
    responses(
        (status = 200, description = "MCP's `prompts/get` result: `description` and `messages`", body = Object),
        (status = 400, description = "The body is not `{\"arguments\": {name: string}}`", body = ErrorBody),
        (status = 401, description = "No valid API key", body = ErrorBody),
        (status = 404, description = "No such prompt", body = ErrorBody),
        RelayFailures,
    )
)]
pub(crate) async fn get_prompt(
    State(state): State<ApiState>,
    Extension(caller): Extension<Caller>,
    ApiPath(name): ApiPath<String>,
    ApiJson(body): ApiJson<PromptArguments>,
) -> Result<Json<Value>, ApiError> {
    let arguments: Map<String, Value> = body
        .arguments
        .into_iter()
        .map(|(k, v)| (k, Value::String(v)))
        .collect();
    Ok(Json(
        relayed_servers(&state, caller)?
            .get_prompt(&name, arguments)
            .await
            .map_err(relay_failure)?,
    ))
}
