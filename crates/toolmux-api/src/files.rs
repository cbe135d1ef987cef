//! `/api/files`: the workspace tools over GET. Each route is a call of its tool through the
//! pipeline (policy, validation, limits, root confinement and the log apply unchanged), and
//! answers with the tool's structured result ([`ApiState::run_tool`]).

use axum::extract::State;
use axum::{Extension, Json};
use serde::Deserialize;
use serde_json::Value;
use toolmux_http::{ApiQuery, Caller, OpenApiRouter, routes};
use utoipa::IntoParams;

use crate::error::{ApiError, CallFailures};
use crate::{ApiState, arguments};

pub(crate) fn routes() -> OpenApiRouter<ApiState> {
    OpenApiRouter::new()
        .routes(routes!(list))
        .routes(routes!(content))
        .routes(routes!(search))
        .routes(routes!(grep))
}

/// `GET /api/files`.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[into_params(parameter_in = Query, rename_all = "camelCase")]
pub struct ListQuery {
    /// A directory relative to the project root (default: the root).
    pub path: Option<String>,
    /// How deep to list (1 = the directory's own entries).
    pub depth: Option<u32>,
    /// List files that `.gitignore` hides too.
    pub include_ignored: Option<bool>,
}

/// `GET /api/files/content`.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[into_params(parameter_in = Query, rename_all = "camelCase")]
pub struct ContentQuery {
    /// A file relative to the project root.
    pub path: String,
    /// The first line to return (1-based).
    pub offset: Option<u64>,
    /// How many lines to return.
    pub limit: Option<u64>,
}

/// `GET /api/files/search`.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[into_params(parameter_in = Query, rename_all = "camelCase")]
pub struct SearchQuery {
    /// A glob over paths (`**/*.rs`).
    pub glob: String,
    /// The directory to search in (default: the root).
    pub path: Option<String>,
    /// The most paths to return.
    pub limit: Option<u64>,
}

/// `GET /api/files/grep`.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[into_params(parameter_in = Query, rename_all = "camelCase")]
pub struct GrepQuery {
    /// A regular expression (or literal text with `literal=true`).
    pub pattern: String,
    /// Take the pattern as literal text.
    pub literal: Option<bool>,
    /// The file or directory to search (default: the root).
    pub path: Option<String>,
    /// Only files matching this glob.
    pub glob: Option<String>,
    /// Match case exactly.
    pub case_sensitive: Option<bool>,
    /// Lines of context around each match.
    pub context: Option<u32>,
    /// The most matches to return.
    pub limit: Option<u64>,
}

/// Lists a directory (the `directory_list` tool).
#[utoipa::path(
    get, path = "/api/files", tag = "files", params(ListQuery),
    responses(
        (status = 200, description = "`directory_list`'s structured result", body = Object),
        CallFailures,
    )
)]
pub(crate) async fn list(
    State(state): State<ApiState>,
    Extension(caller): Extension<Caller>,
    ApiQuery(q): ApiQuery<ListQuery>,
) -> Result<Json<Value>, ApiError> {
    let args = arguments([
        ("path", q.path.map(Value::from)),
        ("depth", q.depth.map(Value::from)),
        ("includeIgnored", q.include_ignored.map(Value::from)),
    ]);
    state
        .run_tool(caller, "directory_list", args)
        .await
        .map(Json)
}

/// Reads a file (the `file_read` tool).
#[utoipa::path(
    get, path = "/api/files/content", tag = "files", params(ContentQuery),
    responses(
        (status = 200, description = "`file_read`'s structured result", body = Object),
        CallFailures,
    )
)]
pub(crate) async fn content(
    State(state): State<ApiState>,
    Extension(caller): Extension<Caller>,
    ApiQuery(q): ApiQuery<ContentQuery>,
) -> Result<Json<Value>, ApiError> {
    let args = arguments([
        ("path", Some(Value::from(q.path))),
        ("offset", q.offset.map(Value::from)),
        ("limit", q.limit.map(Value::from)),
    ]);
    state.run_tool(caller, "file_read", args).await.map(Json)
}

/// Finds files by glob (the `file_search` tool).
#[utoipa::path(
    get, path = "/api/files/search", tag = "files", params(SearchQuery),
    responses(
        (status = 200, description = "`file_search`'s structured result", body = Object),
        CallFailures,
    )
)]
pub(crate) async fn search(
    State(state): State<ApiState>,
    Extension(caller): Extension<Caller>,
    ApiQuery(q): ApiQuery<SearchQuery>,
) -> Result<Json<Value>, ApiError> {
    let args = arguments([
        ("pattern", Some(Value::from(q.glob))),
        ("path", q.path.map(Value::from)),
        ("limit", q.limit.map(Value::from)),
    ]);
    state.run_tool(caller, "file_search", args).await.map(Json)
}

/// Searches file contents (the `grep` tool).
#[utoipa::path(
    get, path = "/api/files/grep", tag = "files", params(GrepQuery),
    responses(
        (status = 200, description = "`grep`'s structured result", body = Object),
        CallFailures,
    )
)]
pub(crate) async fn grep(
    State(state): State<ApiState>,
    Extension(caller): Extension<Caller>,
    ApiQuery(q): ApiQuery<GrepQuery>,
) -> Result<Json<Value>, ApiError> {
    let args = arguments([
        ("pattern", Some(Value::from(q.pattern))),
        ("literal", q.literal.map(Value::from)),
        ("path", q.path.map(Value::from)),
        ("glob", q.glob.map(Value::from)),
        ("caseSensitive", q.case_sensitive.map(Value::from)),
        ("context", q.context.map(Value::from)),
        ("limit", q.limit.map(Value::from)),
    ]);
    state.run_tool(caller, "grep", args).await.map(Json)
}
