//! `/api/tasks`: the tasks pack (the project's task list, `.toolmux/state/tasks.json`) as a
//! resource. Each route is a call of its `task_*` tool through the pipeline, so validation,
//! policy and the log apply unchanged and the state is the one MCP and the CLI see; it answers
//! with the tool's structured result, a missing task as 404 and a refused change (a parent
//! that would make a cycle) as 422 ([`ApiState::run_tool`]).

use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use serde_json::{Map, Value};
use toolmux_http::{ApiJson, ApiPath, ApiQuery, Caller, OpenApiRouter, routes};

use crate::error::{ApiError, CallFailures};
use crate::tool_routes::{Takes, ToolRoute};
use crate::{ApiState, arguments};

pub(crate) fn routes() -> OpenApiRouter<ApiState> {
    OpenApiRouter::new()
        .routes(routes!(list, create))
        .routes(routes!(view, update, remove))
        .routes(routes!(add_note))
}

/// The routes whose query or body is a task tool's arguments, read and checked by the tool's
/// input schema ([`ToolRoute`]); a task the path names is its `id`.
pub(crate) const TOOL_ROUTES: &[ToolRoute] = &[LIST, CREATE, UPDATE, ADD_NOTE];

const LIST: ToolRoute = ToolRoute::get("/api/tasks", "task_list");

const CREATE: ToolRoute = ToolRoute {
    method: "post",
    path: "/api/tasks",
    tool: "task_create",
    takes: Takes::Body,
    from_path: &[],
};

const UPDATE: ToolRoute = ToolRoute {
    method: "patch",
    path: "/api/tasks/{id}",
    tool: "task_update",
    takes: Takes::Body,
    from_path: &["id"],
};

const ADD_NOTE: ToolRoute = ToolRoute {
    method: "post",
    path: "/api/tasks/{id}/notes",
    tool: "task_add_note",
    takes: Takes::Body,
    from_path: &["id"],
};

fn id_argument(id: u64) -> Map<String, Value> {
    arguments([("id", Some(Value::from(id)))])
}

/// Lists the tasks in plan order (each followed by its steps), with counts by status, a page
/// at a time (the `task_list` tool).
#[utoipa::path(
    get, path = "/api/tasks", tag = "tasks",
    responses(
        (status = 200, description = "`task_list`'s structured result: `tasks` (one page), `counts`, `total`, `offset`, `limit`, `nextOffset`", body = Object),
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

/// Adds a task (the `task_create` tool).
#[utoipa::path(
    post, path = "/api/tasks", tag = "tasks",
    request_body(content = Object, description = "`task_create`'s arguments (the `task_create.input` component)"),
    responses(
        (status = 201, description = "Created: `task_create`'s structured result (`task`); `Location` names it", body = Object),
        CallFailures,
    )
)]
pub(crate) async fn create(
    State(state): State<ApiState>,
    Extension(caller): Extension<Caller>,
    ApiJson(body): ApiJson<Map<String, Value>>,
) -> Result<Response, ApiError> {
    let args = CREATE.body_arguments(body, Vec::new())?;
    let created = state.run_tool(caller, CREATE.tool, args).await?;
    let location = created["task"]["id"]
        .as_u64()
        .and_then(|id| HeaderValue::from_str(&format!("/api/tasks/{id}")).ok());
    let mut response = (StatusCode::CREATED, Json(created)).into_response();
    if let Some(location) = location {
        response.headers_mut().insert(header::LOCATION, location);
    }
    Ok(response)
}

/// One task with its notes (the `task_view` tool).
#[utoipa::path(
    get, path = "/api/tasks/{id}", tag = "tasks",
    params(("id" = u64, Path, description = "The task's id")),
    responses(
        (status = 200, description = "`task_view`'s structured result (`task`)", body = Object),
        CallFailures,
    )
)]
pub(crate) async fn view(
    State(state): State<ApiState>,
    Extension(caller): Extension<Caller>,
    ApiPath(id): ApiPath<u64>,
) -> Result<Json<Value>, ApiError> {
    state
        .run_tool(caller, "task_view", id_argument(id))
        .await
        .map(Json)
}

/// Changes a task: title, description, status, parent or position (the `task_update` tool).
#[utoipa::path(
    patch, path = "/api/tasks/{id}", tag = "tasks",
    params(("id" = u64, Path, description = "The task's id")),
    request_body(content = Object, description = "`task_update`'s arguments but `id`, which the path names (the `task_update.body` component); what is left out stays as it is, and `parent` and `description` may be `null` (top level; no description)"),
    responses(
        (status = 200, description = "`task_update`'s structured result (`task`)", body = Object),
        CallFailures,
    )
)]
pub(crate) async fn update(
    State(state): State<ApiState>,
    Extension(caller): Extension<Caller>,
    ApiPath(id): ApiPath<u64>,
    ApiJson(body): ApiJson<Map<String, Value>>,
) -> Result<Json<Value>, ApiError> {
    let args = UPDATE.body_arguments(body, vec![Value::from(id)])?;
    state.run_tool(caller, UPDATE.tool, args).await.map(Json)
}

/// Removes a task and its steps (the `task_delete` tool).
#[utoipa::path(
    delete, path = "/api/tasks/{id}", tag = "tasks",
    params(("id" = u64, Path, description = "The task's id")),
    responses(
        (status = 200, description = "`task_delete`'s structured result: `deleted`, the ids removed", body = Object),
        CallFailures,
    )
)]
pub(crate) async fn remove(
    State(state): State<ApiState>,
    Extension(caller): Extension<Caller>,
    ApiPath(id): ApiPath<u64>,
) -> Result<Json<Value>, ApiError> {
    state
        .run_tool(caller, "task_delete", id_argument(id))
        .await
        .map(Json)
}

/// Adds a note to a task (the `task_add_note` tool).
#[utoipa::path(
    post, path = "/api/tasks/{id}/notes", tag = "tasks",
    params(("id" = u64, Path, description = "The task's id")),
    request_body(content = Object, description = "`task_add_note`'s arguments but `id`, which the path names (the `task_add_note.body` component)"),
    responses(
        (status = 200, description = "`task_add_note`'s structured result (`task`)", body = Object),
        CallFailures,
    )
)]
pub(crate) async fn add_note(
    State(state): State<ApiState>,
    Extension(caller): Extension<Caller>,
    ApiPath(id): ApiPath<u64>,
    ApiJson(body): ApiJson<Map<String, Value>>,
) -> Result<Json<Value>, ApiError> {
    let args = ADD_NOTE.body_arguments(body, vec![Value::from(id)])?;
    state.run_tool(caller, ADD_NOTE.tool, args).await.map(Json)
}
