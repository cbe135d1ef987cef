//! `/api/files`: the workspace tools over GET. Each route is a call of its tool through the
//! pipeline (policy, validation, limits, root confinement and the log apply unchanged), and
//! answers with the tool's structured result ([`ApiState::run_tool`]). Each query string is
//! its tool's arguments, read by the tool's input schema ([`ToolRoute`]): `grep`'s parameters
//! are `grep`'s arguments, with their names.

use axum::extract::State;
use axum::{Extension, Json};
use serde_json::Value;
use toolmux_http::{ApiQuery, Caller, OpenApiRouter, routes};

use crate::ApiState;
use crate::error::{ApiError, CallFailures};
use crate::tool_routes::ToolRoute;

pub(crate) fn routes() -> OpenApiRouter<ApiState> {
    OpenApiRouter::new()
        .routes(routes!(list))
        .routes(routes!(content))
        .routes(routes!(search))
        .routes(routes!(grep))
}

/// The routes of this module, each its tool's arguments as its query.
pub(crate) const TOOL_ROUTES: &[ToolRoute] = &[LIST, CONTENT, SEARCH, GREP];

const LIST: ToolRoute = ToolRoute::get("/api/files", "directory_list");
const CONTENT: ToolRoute = ToolRoute::get("/api/files/content", "file_read");
const SEARCH: ToolRoute = ToolRoute::get("/api/files/search", "file_search");
const GREP: ToolRoute = ToolRoute::get("/api/files/grep", "grep");

/// Calls `route`'s tool with the query's `pairs` as its arguments.
async fn call(
    state: &ApiState,
    caller: Caller,
    route: &ToolRoute,
    pairs: Vec<(String, String)>,
) -> Result<Json<Value>, ApiError> {
    let arguments = state.query_arguments(route, pairs, Vec::new())?;
    state
        .run_tool(caller, route.tool, arguments)
        .await
        .map(Json)
}

/// Lists a directory (the `directory_list` tool).
#[utoipa::path(
    get, path = "/api/files", tag = "files",
    responses(
        (status = 200, description = "`directory_list`'s structured result", body = Object),
        CallFailures,
    )
)]
pub(crate) async fn list(
    State(state): State<ApiState>,
    Extension(caller): Extension<Caller>,
    ApiQuery(pairs): ApiQuery<Vec<(String, String)>>,
) -> Result<Json<Value>, ApiError> {
    call(&state, caller, &LIST, pairs).await
}

/// Reads a file (the `file_read` tool).
#[utoipa::path(
    get, path = "/api/files/content", tag = "files",
    responses(
        (status = 200, description = "`file_read`'s structured result", body = Object),
        CallFailures,
    )
)]
pub(crate) async fn content(
    State(state): State<ApiState>,
    Extension(caller): Extension<Caller>,
    ApiQuery(pairs): ApiQuery<Vec<(String, String)>>,
) -> Result<Json<Value>, ApiError> {
    call(&state, caller, &CONTENT, pairs).await
}

/// Finds files by glob (the `file_search` tool).
#[utoipa::path(
    get, path = "/api/files/search", tag = "files",
    responses(
        (status = 200, description = "`file_search`'s structured result", body = Object),
        CallFailures,
    )
)]
pub(crate) async fn search(
    State(state): State<ApiState>,
    Extension(caller): Extension<Caller>,
    ApiQuery(pairs): ApiQuery<Vec<(String, String)>>,
) -> Result<Json<Value>, ApiError> {
    call(&state, caller, &SEARCH, pairs).await
}

/// Searches file contents (the `grep` tool).
#[utoipa::path(
    get, path = "/api/files/grep", tag = "files",
    responses(
        (status = 200, description = "`grep`'s structured result", body = Object),
        CallFailures,
    )
)]
pub(crate) async fn grep(
    State(state): State<ApiState>,
    Extension(caller): Extension<Caller>,
    ApiQuery(pairs): ApiQuery<Vec<(String, String)>>,
) -> Result<Json<Value>, ApiError> {
    call(&state, caller, &GREP, pairs).await
}
