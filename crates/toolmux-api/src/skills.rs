//! `/api/skills`: the Agent Skills over GET. Each route is a call of its `skills` tool through
//! the pipeline (`ApiState::run_tool`), answering with the tool's structured result.

use axum::extract::State;
use axum::{Extension, Json};
use serde_json::{Map, Value};
use toolmux_http::{ApiPath, Caller, OpenApiRouter, routes};

use crate::error::{ApiError, CallFailures};
use crate::{ApiState, arguments};

pub(crate) fn routes() -> OpenApiRouter<ApiState> {
    OpenApiRouter::new()
        .routes(routes!(list))
        .routes(routes!(show))
}

/// Every skill's name, description, allowed tools and folder, the `SKILL.md` files that break
/// the format (with file, line and field), and the skills hidden by one of the same name (the
/// `skill_list` tool).
#[utoipa::path(
    get, path = "/api/skills", tag = "skills",
    responses(
        (status = 200, description = "`skill_list`'s structured result: `count`, `skills`, `invalid`, `shadowed`", body = Object),
        CallFailures,
    )
)]
pub(crate) async fn list(
    State(state): State<ApiState>,
    Extension(caller): Extension<Caller>,
) -> Result<Json<Value>, ApiError> {
    state
        .run_tool(caller, "skill_list", Map::new())
        .await
        .map(Json)
}

/// One skill: its instructions and the files it bundles (the `skill_load` tool).
#[utoipa::path(
    get, path = "/api/skills/{name}", tag = "skills",
    params(("name" = String, Path, description = "The skill's name")),
    responses(
        (status = 200, description = "`skill_load`'s structured result", body = Object),
        CallFailures,
    )
)]
pub(crate) async fn show(
    State(state): State<ApiState>,
    Extension(caller): Extension<Caller>,
    ApiPath(name): ApiPath<String>,
) -> Result<Json<Value>, ApiError> {
    let args = arguments([("name", Some(Value::from(name)))]);
    state.run_tool(caller, "skill_load", args).await.map(Json)
}
