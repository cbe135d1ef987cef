//! `/api/mcp-servers`: the configured MCP servers, their discovery state and tools, and
//! discovery on demand. The servers themselves live in the upstream crate; the binary hands
//! them to the API through [`McpServers`], so this crate knows no MCP client.

use std::sync::Arc;

use async_trait::async_trait;
use axum::extract::State;
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::Value;

use crate::ApiState;
use crate::error::{ApiError, ErrorBody};
use crate::extract::ApiPath;

/// The running server's MCP servers, as the API shows them.
#[async_trait]
pub trait McpServers: Send + Sync {
    /// Every configured server, by name: `name`, `prefix`, `discovery` (status, last discovery,
    /// error, config hash) and `tools` (registry names in the catalog).
    fn list(&self) -> Vec<Value>;

    /// One server, or `None` when none has that name.
    fn get(&self, name: &str) -> Option<Value>;

    /// Runs discovery now. `None` when no server has that name; `Err` holds the discovery error.
    async fn refresh(&self, name: &str) -> Option<Result<Value, String>>;
}

pub(crate) fn router() -> Router<ApiState> {
    Router::new()
        .route("/", get(list))
        .route("/{name}", get(show))
        .route("/{name}/refresh", post(refresh))
}

fn servers(state: &ApiState) -> Result<&Arc<dyn McpServers>, ApiError> {
    state
        .inner
        .mcp_servers
        .as_ref()
        .ok_or_else(|| ApiError::unavailable("this server has no MCP servers to show"))
}

/// Lists the configured MCP servers.
#[utoipa::path(
    get, path = "/api/mcp-servers", tag = "mcp-servers",
    responses((status = 200, description = "`{servers: [...]}`", body = Object))
)]
pub(crate) async fn list(State(state): State<ApiState>) -> Result<Json<Value>, ApiError> {
    let list = servers(&state)?.list();
    Ok(Json(serde_json::json!({ "servers": list })))
}

/// One MCP server.
#[utoipa::path(
    get, path = "/api/mcp-servers/{name}", tag = "mcp-servers",
    params(("name" = String, Path, description = "The server's name")),
    responses(
        (status = 200, description = "The server", body = Object),
        (status = 404, description = "No such server", body = ErrorBody),
    )
)]
pub(crate) async fn show(
    State(state): State<ApiState>,
    ApiPath(name): ApiPath<String>,
) -> Result<Json<Value>, ApiError> {
    servers(&state)?
        .get(&name)
        .map(Json)
        .ok_or_else(|| ApiError::not_found(format!("no MCP server named `{name}`")))
}

/// Discovers a server's tools now (starting it if needed).
#[utoipa::path(
    post, path = "/api/mcp-servers/{name}/refresh", tag = "mcp-servers",
    params(("name" = String, Path, description = "The server's name")),
    responses(
        (status = 200, description = "Discovered; the server with its tools", body = Object),
        (status = 401, description = "No valid API key", body = ErrorBody),
        (status = 404, description = "No such server", body = ErrorBody),
        (status = 503, description = "Discovery failed; the message says why", body = ErrorBody),
    )
)]
pub(crate) async fn refresh(
    State(state): State<ApiState>,
    ApiPath(name): ApiPath<String>,
) -> Result<Json<Value>, ApiError> {
    match servers(&state)?.refresh(&name).await {
        None => Err(ApiError::not_found(format!("no MCP server named `{name}`"))),
        Some(Ok(view)) => Ok(Json(view)),
        Some(Err(e)) => Err(ApiError::unavailable(format!(
            "discovery of `{name}` failed: {e}"
        ))),
    }
}
