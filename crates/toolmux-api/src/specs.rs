//! `/api/specs`: the spec pack (LeanSpec's `specs/NNN-name/README.md` files) as a resource.
//! Each route is a call of its `spec_*` tool through the pipeline, so policy (writes ask by
//! default: the request waits in `GET /api/approvals`), validation, approvals and the log apply
//! unchanged, and it answers with the tool's structured result; the tool's refusals map by
//! their kind (no such spec 404, a stale `expectedContentHash` 409, a refused request 422) as
//! on every route that stands for a tool ([`ApiState::run_tool`]).
//!
//! Every query string and body is the tool's own arguments ([`ToolRoute`]): documented from the
//! tool's input schema and checked by the pipeline against it.
//! Values the tools check themselves (a status, a priority, a link type) are strings in them:
//! the tool's input schema is the one rule, and a bad value is the pipeline's 422 with the
//! violation, as on every other channel.

use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use serde::Deserialize;
use serde_json::{Map, Value};
use toolmux_http::{ApiJson, ApiPath, ApiQuery, Caller, OpenApiRouter, routes};
use utoipa::{IntoParams, ToSchema};

use crate::error::{ApiError, CallFailures, ToolConflict};
use crate::tool_routes::{Takes, ToolRoute};
use crate::{ApiState, arguments};

pub(crate) fn routes() -> OpenApiRouter<ApiState> {
    OpenApiRouter::new()
        .routes(routes!(list, create))
        .routes(routes!(search))
        .routes(routes!(board))
        .routes(routes!(stats))
        .routes(routes!(validation))
        .routes(routes!(tokens))
        .routes(routes!(view, update))
        .routes(routes!(link, unlink))
}

/// `DELETE /api/specs/{spec}/relationships`: the link to remove.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[into_params(parameter_in = Query, rename_all = "camelCase")]
pub struct LinkQuery {
    /// `parent`, `child` or `depends_on`.
    #[serde(rename = "type")]
    pub link_type: String,
    /// The other spec.
    pub target: String,
}

/// The routes whose query or body is a spec tool's arguments: the document derives each from
/// the tool's input schema ([`ToolRoute`]), and the pipeline checks the arguments against it.
pub(crate) const TOOL_ROUTES: &[ToolRoute] =
    &[LIST, BOARD, SEARCH, VALIDATION, TOKENS, CREATE, UPDATE];

/// `GET /api/specs`: `spec_list`'s filters.
const LIST: ToolRoute = ToolRoute::get("/api/specs", "spec_list");
/// `GET /api/specs/board`: `spec_board`'s group and filters.
const BOARD: ToolRoute = ToolRoute::get("/api/specs/board", "spec_board");

/// `GET /api/specs/search`: `spec_search`'s arguments (`query`, `limit`).
const SEARCH: ToolRoute = ToolRoute::get("/api/specs/search", "spec_search");
/// `GET /api/specs/validation`: `spec_validate`'s arguments.
const VALIDATION: ToolRoute = ToolRoute::get("/api/specs/validation", "spec_validate");
/// `GET /api/specs/tokens`: `spec_tokens`'s arguments.
const TOKENS: ToolRoute = ToolRoute::get("/api/specs/tokens", "spec_tokens");

/// `POST /api/specs`: `spec_create`'s arguments.
const CREATE: ToolRoute = ToolRoute {
    method: "post",
    path: "/api/specs",
    tool: "spec_create",
    takes: Takes::Body,
    from_path: &[],
};

/// `PATCH /api/specs/{spec}`: `spec_update`'s arguments but the spec, which the path names.
const UPDATE: ToolRoute = ToolRoute {
    method: "patch",
    path: "/api/specs/{spec}",
    tool: "spec_update",
    takes: Takes::Body,
    from_path: &["spec"],
};

/// A link to add from the spec in the path.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewLink {
    /// `parent`, `child` or `depends_on`. Links that would make a cycle are refused (422).
    #[serde(rename = "type")]
    pub link_type: String,
    /// The other spec.
    pub target: String,
}

/// The source id of the spec pack (`toolmux_specs`), whose tools these routes call.
const SPECS_SOURCE: &str = "specs";

/// Runs a spec tool. The pack is in the catalog only when the project has a specs directory
/// (looked for when the server starts); without it a route says so, rather than "unknown tool
/// `spec_list`", which would name a tool the client never asked for. A spec tool switched off
/// by configuration is not "absent": the pipeline answers it (403 `disabled`) as for any tool.
async fn run(
    state: &ApiState,
    caller: Caller,
    tool: &str,
    arguments: Map<String, Value>,
) -> Result<Value, ApiError> {
    let absent = {
        let catalog = state.inner.hub.catalog();
        catalog.get(tool).is_none() && catalog.hidden_reason(tool).is_none()
    };
    if absent {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "no_specs_directory",
            "this project has no specs directory, so there are no specs to serve: create \
             `specs/` in the project (or name another directory as `specsDir` in \
             `.lean-spec/config.json`) and restart `toolmux serve`",
        )
        .with_details(serde_json::json!({ "source": SPECS_SOURCE, "tool": tool })));
    }
    state.run_tool(caller, tool, arguments).await
}

/// Lists the specs in number order (the `spec_list` tool); specs whose frontmatter cannot be
/// read are listed under `errors`.
#[utoipa::path(
    get, path = "/api/specs", tag = "specs",
    responses(
        (status = 200, description = "`spec_list`'s structured result: `count`, `specs`, `errors`", body = Object),
        CallFailures,
        ToolConflict,
    )
)]
pub(crate) async fn list(
    State(state): State<ApiState>,
    Extension(caller): Extension<Caller>,
    ApiQuery(pairs): ApiQuery<Vec<(String, String)>>,
) -> Result<Json<Value>, ApiError> {
    let args = state.query_arguments(&LIST, pairs, Vec::new())?;
    run(&state, caller, LIST.tool, args).await.map(Json)
}

/// Searches the specs with LeanSpec's query syntax and scoring, best first (the `spec_search`
/// tool).
#[utoipa::path(
    get, path = "/api/specs/search", tag = "specs",
    responses(
        (status = 200, description = "`spec_search`'s structured result: `query`, `count`, `results`", body = Object),
        CallFailures,
        ToolConflict,
    )
)]
pub(crate) async fn search(
    State(state): State<ApiState>,
    Extension(caller): Extension<Caller>,
    ApiQuery(pairs): ApiQuery<Vec<(String, String)>>,
) -> Result<Json<Value>, ApiError> {
    let args = state.query_arguments(&SEARCH, pairs, Vec::new())?;
    run(&state, caller, SEARCH.tool, args).await.map(Json)
}

/// The board: specs grouped by status, priority, assignee, tag or parent (the `spec_board`
/// tool).
#[utoipa::path(
    get, path = "/api/specs/board", tag = "specs",
    responses(
        (status = 200, description = "`spec_board`'s structured result: `groupBy`, `total`, `groups`", body = Object),
        CallFailures,
        ToolConflict,
    )
)]
pub(crate) async fn board(
    State(state): State<ApiState>,
    Extension(caller): Extension<Caller>,
    ApiQuery(pairs): ApiQuery<Vec<(String, String)>>,
) -> Result<Json<Value>, ApiError> {
    let args = state.query_arguments(&BOARD, pairs, Vec::new())?;
    run(&state, caller, BOARD.tool, args).await.map(Json)
}

/// Counts over every spec: by status, priority and tag, completion, dependencies (the
/// `spec_stats` tool).
#[utoipa::path(
    get, path = "/api/specs/stats", tag = "specs",
    responses(
        (status = 200, description = "`spec_stats`'s structured result", body = Object),
        CallFailures,
        ToolConflict,
    )
)]
pub(crate) async fn stats(
    State(state): State<ApiState>,
    Extension(caller): Extension<Caller>,
) -> Result<Json<Value>, ApiError> {
    run(&state, caller, "spec_stats", Map::new())
        .await
        .map(Json)
}

/// Checks one spec, or all, against LeanSpec's rules: errors and warnings with line numbers
/// (the `spec_validate` tool). Findings are the answer, so a spec with errors is still a 200.
#[utoipa::path(
    get, path = "/api/specs/validation", tag = "specs",
    responses(
        (status = 200, description = "`spec_validate`'s structured result: `valid`, `errors`, `warnings`, `specs`", body = Object),
        CallFailures,
        ToolConflict,
    )
)]
pub(crate) async fn validation(
    State(state): State<ApiState>,
    Extension(caller): Extension<Caller>,
    ApiQuery(pairs): ApiQuery<Vec<(String, String)>>,
) -> Result<Json<Value>, ApiError> {
    let args = state.query_arguments(&VALIDATION, pairs, Vec::new())?;
    run(&state, caller, VALIDATION.tool, args).await.map(Json)
}

/// Counts cl100k tokens of one spec, a file, or every spec, with LeanSpec's ratings (the
/// `spec_tokens` tool).
#[utoipa::path(
    get, path = "/api/specs/tokens", tag = "specs",
    responses(
        (status = 200, description = "`spec_tokens`'s structured result: `encoding`, `total`, `items`, `thresholds`", body = Object),
        CallFailures,
        ToolConflict,
    )
)]
pub(crate) async fn tokens(
    State(state): State<ApiState>,
    Extension(caller): Extension<Caller>,
    ApiQuery(pairs): ApiQuery<Vec<(String, String)>>,
) -> Result<Json<Value>, ApiError> {
    let args = state.query_arguments(&TOKENS, pairs, Vec::new())?;
    run(&state, caller, TOKENS.tool, args).await.map(Json)
}

/// One spec: frontmatter, body, sub-spec files, parent, children, dependencies and dependents,
/// and the `contentHash` to send back as `expectedContentHash` (the `spec_view` tool).
#[utoipa::path(
    get, path = "/api/specs/{spec}", tag = "specs",
    params(("spec" = String, Path, description = "The spec: its number (`42` or `042`), folder name, or a fragment of the name only one spec has")),
    responses(
        (status = 200, description = "`spec_view`'s structured result", body = Object),
        CallFailures,
        ToolConflict,
    )
)]
pub(crate) async fn view(
    State(state): State<ApiState>,
    Extension(caller): Extension<Caller>,
    ApiPath(spec): ApiPath<String>,
) -> Result<Json<Value>, ApiError> {
    let args = arguments([("spec", Some(Value::from(spec)))]);
    run(&state, caller, "spec_view", args).await.map(Json)
}

/// Creates a spec with the next number (the `spec_create` tool). A write: with the default
/// policy `ask`, the request waits in `GET /api/approvals` for a person's answer.
#[utoipa::path(
    post, path = "/api/specs", tag = "specs",
    request_body(content = Object, description = "`spec_create`'s arguments (the `spec_create.input` component)"),
    responses(
        (status = 201, description = "Created: `spec_create`'s structured result (`id`, `number`, `file`, `contentHash`, ...); `Location` names the new spec", body = Object),
        CallFailures,
        ToolConflict,
    )
)]
pub(crate) async fn create(
    State(state): State<ApiState>,
    Extension(caller): Extension<Caller>,
    ApiJson(body): ApiJson<Map<String, Value>>,
) -> Result<Response, ApiError> {
    let created = run(
        &state,
        caller,
        CREATE.tool,
        CREATE.body_arguments(body, Vec::new())?,
    )
    .await?;
    let location = created["id"]
        .as_str()
        .and_then(|id| HeaderValue::from_str(&format!("/api/specs/{id}")).ok());
    let mut response = (StatusCode::CREATED, Json(created)).into_response();
    if let Some(location) = location {
        response.headers_mut().insert(header::LOCATION, location);
    }
    Ok(response)
}

/// Changes a spec: status, priority, assignee, tags, text, sections, checklist items or the
/// whole body (the `spec_update` tool). Send `expectedContentHash` so that a concurrent change
/// is refused (409) rather than overwritten. A write: with the default policy `ask`, the
/// request waits in `GET /api/approvals` for a person's answer.
#[utoipa::path(
    patch, path = "/api/specs/{spec}", tag = "specs",
    params(("spec" = String, Path, description = "The spec: its number, folder name, or a unique fragment")),
    request_body(content = Object, description = "`spec_update`'s arguments but `spec`, which the path names (the `spec_update.body` component)"),
    responses(
        (status = 200, description = "`spec_update`'s structured result: `changed`, `previousContentHash`, `contentHash`, ...", body = Object),
        CallFailures,
        ToolConflict,
    )
)]
pub(crate) async fn update(
    State(state): State<ApiState>,
    Extension(caller): Extension<Caller>,
    ApiPath(spec): ApiPath<String>,
    ApiJson(body): ApiJson<Map<String, Value>>,
) -> Result<Json<Value>, ApiError> {
    let args = UPDATE.body_arguments(body, vec![Value::from(spec)])?;
    run(&state, caller, UPDATE.tool, args).await.map(Json)
}

/// Adds a parent, child or `depends_on` link (the `spec_relationships` tool); one that would
/// make a cycle is refused (422). A write: with the default policy `ask`, the request waits in
/// `GET /api/approvals`. The spec's links are in `GET /api/specs/{spec}`.
#[utoipa::path(
    post, path = "/api/specs/{spec}/relationships", tag = "specs",
    params(("spec" = String, Path, description = "The spec the link starts from")),
    request_body = NewLink,
    responses(
        (status = 200, description = "`spec_relationships`'s structured result: `id`, `type`, `target`, `edited` (the file changed)", body = Object),
        CallFailures,
        ToolConflict,
    )
)]
pub(crate) async fn link(
    State(state): State<ApiState>,
    Extension(caller): Extension<Caller>,
    ApiPath(spec): ApiPath<String>,
    ApiJson(link): ApiJson<NewLink>,
) -> Result<Json<Value>, ApiError> {
    relate(&state, caller, spec, "add", link.link_type, link.target).await
}

/// Removes a parent, child or `depends_on` link (the `spec_relationships` tool). A write: with
/// the default policy `ask`, the request waits in `GET /api/approvals`.
#[utoipa::path(
    delete, path = "/api/specs/{spec}/relationships", tag = "specs",
    params(("spec" = String, Path, description = "The spec the link starts from"), LinkQuery),
    responses(
        (status = 200, description = "`spec_relationships`'s structured result: `id`, `type`, `target`, `edited` (the file changed)", body = Object),
        CallFailures,
        ToolConflict,
    )
)]
pub(crate) async fn unlink(
    State(state): State<ApiState>,
    Extension(caller): Extension<Caller>,
    ApiPath(spec): ApiPath<String>,
    ApiQuery(link): ApiQuery<LinkQuery>,
) -> Result<Json<Value>, ApiError> {
    relate(&state, caller, spec, "remove", link.link_type, link.target).await
}

async fn relate(
    state: &ApiState,
    caller: Caller,
    spec: String,
    action: &str,
    link_type: String,
    target: String,
) -> Result<Json<Value>, ApiError> {
    let args = arguments([
        ("spec", Some(Value::from(spec))),
        ("action", Some(Value::from(action))),
        ("type", Some(Value::from(link_type))),
        ("target", Some(Value::from(target))),
    ]);
    run(state, caller, "spec_relationships", args)
        .await
        .map(Json)
}
