//! `/api/runners`: the coding agents toolmux can start, and their detection (the
//! `list_runners` and `detect_runners` tools, through the pipeline).

use axum::extract::State;
use axum::{Extension, Json};
use serde::Deserialize;
use serde_json::{Map, Value};
use toolmux_http::{ApiQuery, Caller, OpenApiRouter, routes};
use utoipa::IntoParams;

use crate::error::{ApiError, CallFailures};
use crate::{ApiState, arguments};

pub(crate) fn routes() -> OpenApiRouter<ApiState> {
    OpenApiRouter::new()
        .routes(routes!(list))
        .routes(routes!(detect))
}

/// Every runner (built in and configured), how it is launched and what the last detection
/// found; starts nothing (the `list_runners` tool).
#[utoipa::path(
    get, path = "/api/runners", tag = "sessions",
    responses(
        (status = 200, description = "`list_runners`' structured result: `count`, `runners`", body = Object),
        CallFailures,
    )
)]
pub(crate) async fn list(
    State(state): State<ApiState>,
    Extension(caller): Extension<Caller>,
) -> Result<Json<Value>, ApiError> {
    state
        .run_tool(caller, "list_runners", Map::new())
        .await
        .map(Json)
}

/// `POST /api/runners/detect`.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[into_params(parameter_in = Query, rename_all = "camelCase")]
pub struct DetectQuery {
    /// Check again even where the cache is still valid.
    pub refresh: Option<bool>,
}

/// Looks for every runner's program on PATH and reads its version (the `detect_runners`
/// tool).
#[utoipa::path(
    post, path = "/api/runners/detect", tag = "sessions",
    params(DetectQuery),
    responses(
        (status = 200, description = "`detect_runners`' structured result: `count`, `runners`", body = Object),
        CallFailures,
    )
)]
pub(crate) async fn detect(
    State(state): State<ApiState>,
    Extension(caller): Extension<Caller>,
    ApiQuery(query): ApiQuery<DetectQuery>,
) -> Result<Json<Value>, ApiError> {
    let args = arguments([("refresh", query.refresh.map(Value::from))]);
    state
        .run_tool(caller, "detect_runners", args)
        .await
        .map(Json)
}
