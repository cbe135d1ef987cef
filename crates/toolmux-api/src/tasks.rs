//! `/api/tasks`: the tasks pack (the project's task list, `.toolmux/state/tasks.json`) as a
//! resource. Each route is a call of its `task_*` tool through the pipeline, so validation,
//! policy and the log apply unchanged and the state is the one MCP and the CLI see; it answers
//! with the tool's structured result, a missing task as 404 and a refused change (a parent
//! that would make a cycle) as 422 ([`ApiState::run_tool`]).

use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use toolmux_http::{ApiJson, ApiPath, ApiQuery, Caller, OpenApiRouter, routes};
use utoipa::{IntoParams, ToSchema};

use crate::error::{ApiError, CallFailures};
use crate::{ApiState, arguments};

pub(crate) fn routes() -> OpenApiRouter<ApiState> {
    OpenApiRouter::new()
        .routes(routes!(list, create))
        .routes(routes!(view, update, remove))
        .routes(routes!(add_note))
}

/// `GET /api/tasks`: every filter that is set must match.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[into_params(parameter_in = Query, rename_all = "camelCase")]
pub struct TaskFilter {
    /// Only tasks with this status: `pending`, `in_progress` or `completed`.
    pub status: Option<String>,
    /// Only the steps (at any depth) of this task.
    pub parent: Option<u64>,
    /// How many tasks to answer with (100 when omitted, at most 1000).
    pub limit: Option<u64>,
    /// How many matching tasks to skip, in plan order (the previous page's `nextOffset`).
    pub offset: Option<u64>,
}

/// A new task: `task_create`'s arguments.
#[derive(Debug, Deserialize, Serialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewTask {
    /// What is to be done, in a line.
    pub title: String,
    /// More detail.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// `pending` (default), `in_progress` or `completed`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// The task this is a step of.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent: Option<u64>,
    /// Where among its siblings (0 is first; the end when omitted).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub position: Option<u64>,
}

/// Changes to a task: `task_update`'s arguments; what is left out stays as it is. `parent` and
/// `description` may be `null` (top level; no description).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TaskChanges {
    /// A new title.
    pub title: Option<String>,
    /// A new description, or `null` to remove it.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<String>)]
    pub description: Option<Value>,
    /// `pending`, `in_progress` or `completed`.
    pub status: Option<String>,
    /// A new parent, or `null` for the top level.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<u64>)]
    pub parent: Option<Value>,
    /// A new place among its siblings.
    pub position: Option<u64>,
}

/// Keeps an explicit `null` (as `Some(Value::Null)`) apart from a missing key (`None`).
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

/// A note: `task_add_note`'s text.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewNote {
    /// What the note says.
    pub text: String,
}

fn id_argument(id: u64) -> Map<String, Value> {
    arguments([("id", Some(Value::from(id)))])
}

/// Lists the tasks in plan order (each followed by its steps), with counts by status, a page
/// at a time (the `task_list` tool).
#[utoipa::path(
    get, path = "/api/tasks", tag = "tasks", params(TaskFilter),
    responses(
        (status = 200, description = "`task_list`'s structured result: `tasks` (one page), `counts`, `total`, `offset`, `limit`, `nextOffset`", body = Object),
        CallFailures,
    )
)]
pub(crate) async fn list(
    State(state): State<ApiState>,
    Extension(caller): Extension<Caller>,
    ApiQuery(filter): ApiQuery<TaskFilter>,
) -> Result<Json<Value>, ApiError> {
    let args = arguments([
        ("status", filter.status.map(Value::from)),
        ("parent", filter.parent.map(Value::from)),
        ("limit", filter.limit.map(Value::from)),
        ("offset", filter.offset.map(Value::from)),
    ]);
    state.run_tool(caller, "task_list", args).await.map(Json)
}

/// Adds a task (the `task_create` tool).
#[utoipa::path(
    post, path = "/api/tasks", tag = "tasks",
    request_body = NewTask,
    responses(
        (status = 201, description = "Created: `task_create`'s structured result (`task`); `Location` names it", body = Object),
        CallFailures,
    )
)]
pub(crate) async fn create(
    State(state): State<ApiState>,
    Extension(caller): Extension<Caller>,
    ApiJson(task): ApiJson<NewTask>,
) -> Result<Response, ApiError> {
    let args = match serde_json::to_value(&task) {
        Ok(Value::Object(map)) => map,
        _ => return Err(ApiError::internal("a new task cannot be passed on")),
    };
    let created = state.run_tool(caller, "task_create", args).await?;
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
    request_body = TaskChanges,
    responses(
        (status = 200, description = "`task_update`'s structured result (`task`)", body = Object),
        CallFailures,
    )
)]
pub(crate) async fn update(
    State(state): State<ApiState>,
    Extension(caller): Extension<Caller>,
    ApiPath(id): ApiPath<u64>,
    ApiJson(changes): ApiJson<TaskChanges>,
) -> Result<Json<Value>, ApiError> {
    let mut args = arguments([
        ("title", changes.title.map(Value::from)),
        ("description", changes.description),
        ("status", changes.status.map(Value::from)),
        ("parent", changes.parent),
        ("position", changes.position.map(Value::from)),
    ]);
    args.extend(id_argument(id));
    state.run_tool(caller, "task_update", args).await.map(Json)
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
    request_body = NewNote,
    responses(
        (status = 200, description = "`task_add_note`'s structured result (`task`)", body = Object),
        CallFailures,
    )
)]
pub(crate) async fn add_note(
    State(state): State<ApiState>,
    Extension(caller): Extension<Caller>,
    ApiPath(id): ApiPath<u64>,
    ApiJson(note): ApiJson<NewNote>,
) -> Result<Json<Value>, ApiError> {
    let mut args = id_argument(id);
    args.insert("text".into(), Value::from(note.text));
    state
        .run_tool(caller, "task_add_note", args)
        .await
        .map(Json)
}
