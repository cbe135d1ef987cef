//! `/api/sessions`: coding sessions (a runner on a prompt in a folder of the project). Each
//! route but the stream is a call of its `sessions` tool through the pipeline
//! ([`ApiState::run_tool`]), so `POST /api/sessions` asks by default (it waits in
//! `GET /api/approvals`, whose preview shows runner, folder, prompt and command line), and
//! refusals map by kind (no such session 404, an ended one 409, a bad request 422).
//! `GET /api/sessions/{id}/stream` follows the session's log from the store as it is written:
//! one `log` event per entry, then one `status` event with status, exit code and duration.

use std::sync::Arc;

use axum::Extension;
use axum::extract::State;
use axum::response::Response;
use serde_json::Value;
use toolmux_http::{ApiPath, Caller, OpenApiRouter, routes};

use crate::error::{ApiError, CallFailures, ErrorBody};
use crate::sse;
use crate::tool_routes::{Takes, ToolRoute, Verb};
use crate::{ApiState, arguments};

pub(crate) fn routes() -> OpenApiRouter<ApiState> {
    crate::tool_routes::router(TOOL_ROUTES).routes(routes!(stream))
}

/// The routes whose query or body is a session tool's arguments, read and checked by the
/// tool's input schema ([`ToolRoute`]); a session the path names is its `id`.
pub(crate) const TOOL_ROUTES: &[ToolRoute] = &[
    ToolRoute::new(
        Verb::Get,
        "/api/sessions",
        "list_sessions",
        Takes::Query,
        "sessions",
        "Sessions of this project, newest first, from every channel (the `list_sessions` tool).",
        "`list_sessions`' structured result: `count`, `total`, `sessions`",
    ),
    ToolRoute::new(
        Verb::Post,
        "/api/sessions",
        "run_session",
        Takes::Body,
        "sessions",
        "Starts a session (the `run_session` tool). With the default policy `ask`, the request \
         waits in `GET /api/approvals` for a person's answer.",
        "Started: the session's record (`id`, `status`, `command`, ...); `Location` names it",
    )
    .creates("/id", "/api/sessions/"),
    ToolRoute::new(
        Verb::Get,
        "/api/sessions/{id}",
        "session_status",
        Takes::Query,
        "sessions",
        "One session's record (the `session_status` tool).",
        "The session's record",
    )
    .path_gives(&["id"]),
    ToolRoute::new(
        Verb::Get,
        "/api/sessions/{id}/logs",
        "session_logs",
        Takes::Query,
        "sessions",
        "A page of a session's log (the `session_logs` tool).",
        "`session_logs`' structured result: `entries`, `offset`, `nextOffset`, `more`, `status`",
    )
    .path_gives(&["id"]),
    ToolRoute::new(
        Verb::Post,
        "/api/sessions/{id}/cancel",
        "cancel_session",
        Takes::Query,
        "sessions",
        "Cancels a running session (the `cancel_session` tool): its runner and everything it \
         started are stopped.",
        "The session's record once stopped",
    )
    .path_gives(&["id"]),
];

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
