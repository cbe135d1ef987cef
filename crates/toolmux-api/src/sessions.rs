//! `/api/sessions`: coding sessions (a runner on a prompt in a folder of the project). Each
//! route but the stream is a call of its `sessions` tool through the pipeline
//! ([`ApiState::run_tool`]), so `POST /api/sessions` asks by default (it waits in
//! `GET /api/approvals`, whose preview shows runner, folder, prompt and command line), and
//! refusals map by kind (no such session 404, an ended one 409, a bad request 422).
//! `GET /api/sessions/{id}/stream` follows the session's log from the store as it is written:
//! one `log` event per entry, then one `status` event with status, exit code and duration.

use std::sync::Arc;

use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use serde_json::{Map, Value};
use toolmux_http::{ApiJson, ApiPath, ApiQuery, Caller, OpenApiRouter, routes};

use crate::tool_routes::{Takes, ToolRoute};

use crate::error::{ApiError, CallFailures, ErrorBody};
use crate::sse;
use crate::{ApiState, arguments};

pub(crate) fn routes() -> OpenApiRouter<ApiState> {
    OpenApiRouter::new()
        .routes(routes!(list, create))
        .routes(routes!(show))
        .routes(routes!(logs))
        .routes(routes!(cancel))
        .routes(routes!(stream))
}

/// The routes whose query or body is a session tool's arguments, read and checked by the
/// tool's input schema ([`ToolRoute`]).
pub(crate) const TOOL_ROUTES: &[ToolRoute] = &[LIST, CREATE, LOGS];

const LIST: ToolRoute = ToolRoute::get("/api/sessions", "list_sessions");

const CREATE: ToolRoute = ToolRoute {
    method: "post",
    path: "/api/sessions",
    tool: "run_session",
    takes: Takes::Body,
    from_path: &[],
};

const LOGS: ToolRoute = ToolRoute {
    method: "get",
    path: "/api/sessions/{id}/logs",
    tool: "session_logs",
    takes: Takes::Query,
    from_path: &["id"],
};

/// Sessions of this project, newest first, from every channel (the `list_sessions` tool).
#[utoipa::path(
    get, path = "/api/sessions", tag = "sessions",
    responses(
        (status = 200, description = "`list_sessions`' structured result: `count`, `total`, `sessions`", body = Object),
        CallFailures,
    )
)]
pub(crate) async fn list(
    State(state): State<ApiState>,
    Extension(caller): Extension<Caller>,
    ApiQuery(pairs): ApiQuery<Vec<(String, String)>>,
) -> Result<Json<Value>, ApiError> {
    let args = state.query_arguments(&LIST, pairs, Vec::new())?;
    state.run_tool(caller, LIST.tool, args).await.map(Json)
}

/// Starts a session (the `run_session` tool). With the default policy `ask`, the request waits
/// in `GET /api/approvals` for a person's answer.
#[utoipa::path(
    post, path = "/api/sessions", tag = "sessions",
    request_body(content = Object, description = "`run_session`'s arguments (the `run_session.input` component)"),
    responses(
        (status = 201, description = "Started: the session's record (`id`, `status`, `command`, ...); `Location` names it", body = Object),
        CallFailures,
    )
)]
pub(crate) async fn create(
    State(state): State<ApiState>,
    Extension(caller): Extension<Caller>,
    ApiJson(body): ApiJson<Map<String, Value>>,
) -> Result<Response, ApiError> {
    let args = CREATE.body_arguments(body, Vec::new())?;
    let record = state.run_tool(caller, CREATE.tool, args).await?;
    let location = record["id"]
        .as_str()
        .and_then(|id| HeaderValue::from_str(&format!("/api/sessions/{id}")).ok());
    let mut response = (StatusCode::CREATED, Json(record)).into_response();
    if let Some(location) = location {
        response.headers_mut().insert(header::LOCATION, location);
    }
    Ok(response)
}

/// One session's record (the `session_status` tool).
#[utoipa::path(
    get, path = "/api/sessions/{id}", tag = "sessions",
    params(("id" = String, Path, description = "The session's id")),
    responses(
        (status = 200, description = "The session's record", body = Object),
        CallFailures,
    )
)]
pub(crate) async fn show(
    State(state): State<ApiState>,
    Extension(caller): Extension<Caller>,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<Value>, ApiError> {
    let args = arguments([("id", Some(Value::from(id)))]);
    state
        .run_tool(caller, "session_status", args)
        .await
        .map(Json)
}

/// A page of a session's log (the `session_logs` tool).
#[utoipa::path(
    get, path = "/api/sessions/{id}/logs", tag = "sessions",
    params(("id" = String, Path, description = "The session's id")),
    responses(
        (status = 200, description = "`session_logs`' structured result: `entries`, `offset`, `nextOffset`, `more`, `status`", body = Object),
        CallFailures,
    )
)]
pub(crate) async fn logs(
    State(state): State<ApiState>,
    Extension(caller): Extension<Caller>,
    ApiPath(id): ApiPath<String>,
    ApiQuery(pairs): ApiQuery<Vec<(String, String)>>,
) -> Result<Json<Value>, ApiError> {
    let args = state.query_arguments(&LOGS, pairs, vec![Value::from(id)])?;
    state.run_tool(caller, LOGS.tool, args).await.map(Json)
}

/// Cancels a running session (the `cancel_session` tool): its runner and everything it
/// started are stopped.
#[utoipa::path(
    post, path = "/api/sessions/{id}/cancel", tag = "sessions",
    params(("id" = String, Path, description = "The session's id")),
    responses(
        (status = 200, description = "The session's record once stopped", body = Object),
        CallFailures,
    )
)]
pub(crate) async fn cancel(
    State(state): State<ApiState>,
    Extension(caller): Extension<Caller>,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<Value>, ApiError> {
    let args = arguments([("id", Some(Value::from(id)))]);
    state
        .run_tool(caller, "cancel_session", args)
        .await
        .map(Json)
}

/// Follows a session live: server-sent events, `event: log` with each log entry as it is
/// written (from the first), then one `event: status` with `status`, `exitCode`, `durationMs`
/// and `error`, and the stream ends. The session is checked first through `session_status`,
/// so an unknown id is a 404 and the policy applies as on the other routes.
#[utoipa::path(
    get, path = "/api/sessions/{id}/stream", tag = "sessions",
    params(("id" = String, Path, description = "The session's id")),
    responses(
        (status = 200, description = "Server-sent events: `log` per entry, then `status`", content_type = "text/event-stream", body = String),
        (status = 404, description = "No such session", body = ErrorBody),
        CallFailures,
    )
)]
pub(crate) async fn stream(
    State(state): State<ApiState>,
    Extension(caller): Extension<Caller>,
    ApiPath(id): ApiPath<String>,
) -> Result<Response, ApiError> {
    let args = arguments([("id", Some(Value::from(id.clone())))]);
    state.run_tool(caller, "session_status", args).await?;
    // The store's files are under the state folder that also holds the execution log.
    let state_dir = state
        .inner
        .log_dir
        .parent()
        .map(std::path::Path::to_path_buf)
        .unwrap_or_default();
    let store: Arc<dyn toolmux_sessions::SessionStore> =
        Arc::new(toolmux_sessions::DirStore::new(&state_dir));
    let follower = toolmux_sessions::Follower::new(store, &id)
        .map_err(|e| ApiError::not_found(e.to_string()))?;
    let body = futures::stream::unfold(follower, |mut follower| async move {
        let frame = match follower.next().await? {
            toolmux_sessions::FollowEvent::Entry(entry) => sse::frame("log", &entry),
            toolmux_sessions::FollowEvent::Ended(end) => sse::frame("status", &end),
        };
        Some((frame, follower))
    });
    Ok(sse::response(body))
}
