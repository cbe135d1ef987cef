//! `/api/runners`: the coding agents toolmux can start, and their detection (the
//! `list_runners` and `detect_runners` tools, through the pipeline).

use axum::extract::State;
use axum::{Extension, Json};
use serde_json::{Map, Value};
use toolmux_http::{ApiQuery, Caller, OpenApiRouter, routes};

use crate::ApiState;
use crate::error::{ApiError, CallFailures};
use crate::tool_routes::{Takes, ToolRoute};

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

/// `POST /api/runners/detect`: `detect_runners`' arguments as the query.
pub(crate) const DETECT: ToolRoute = ToolRoute {
    method: "post",
    path: "/api/runners/detect",
    tool: "detect_runners",
    takes: Takes::Query,
    from_path: &[],
};

/// Looks for every runner's program on PATH and reads its version (the `detect_runners`
/// tool).
#[utoipa::path(
    post, path = "/api/runners/detect", tag = "sessions",
    responses(
        (status = 200, description = "`detect_runners`' structured result: `count`, `runners`", body = Object),
        CallFailures,
    )
)]
pub(crate) async fn detect(
    State(state): State<ApiState>,
    Extension(caller): Extension<Caller>,
    ApiQuery(pairs): ApiQuery<Vec<(String, String)>>,
) -> Result<Json<Value>, ApiError> {
    let args = state.query_arguments(&DETECT, pairs, Vec::new())?;
    state.run_tool(caller, DETECT.tool, args).await.map(Json)
}
