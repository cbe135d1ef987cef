//! `/api/mcp-servers`: the upstream servers (the `mcpServers` section of the configuration),
//! their discovery state and tools, discovery on demand, and servers added, replaced and removed
//! (written to the configuration through the one writer queue, then applied live). The servers
//! themselves live in the upstream crate; the binary hands them to the API through
//! [`UpstreamServers`], so this crate knows no MCP client. The same trait carries what the
//! servers offer besides tools — prompts, resources and completions — as MCP's JSON, for the
//! `prompts`, `resources` and `completions` modules, and toolmux's own resources (`spec://…`),
//! which the one relay merges with the servers' for MCP and REST alike.

use std::sync::Arc;

use async_trait::async_trait;
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::Deserialize;
use serde_json::{Map, Value};
use toolmux_http::{ApiJson, ApiPath, OpenApiRouter, routes};
use utoipa::ToSchema;

use crate::ApiState;
use crate::error::{ApiError, ErrorBody};
use crate::registry::{Edit, Section, no_server_named};

/// The running server's upstream servers, as the API shows them.
#[async_trait]
pub trait UpstreamServers: Send + Sync {
    /// Every configured server, by name: `name`, `prefix`, `transport` (`stdio`, `http` or
    /// `sse`), `enabled`, `discovery` (status, last discovery, error, config hash) and `tools`
    /// (registry names in the catalog).
    fn list(&self) -> Vec<Value>;

    /// One server, or `None` when none has that name.
    fn get(&self, name: &str) -> Option<Value>;

    /// The end of a server's stderr log (stdio servers; toolmux's notes about any server), at
    /// most 200 lines. `None` when no server has that name.
    async fn stderr_tail(&self, name: &str) -> Option<Vec<String>>;

    /// Runs discovery now. `None` when no server has that name; `Err` holds the discovery error.
    async fn refresh(&self, name: &str) -> Option<Result<Value, String>>;

    /// toolmux's own prompts (the skills', `skill__NAME`, without `server`), then every prompt
    /// of every enabled server, from the discovery caches (starting nothing), as MCP lists it
    /// but named as served (`PREFIX__prompt`) and with its `server`. Async because toolmux's
    /// own are read from disk.
    async fn prompts(&self) -> Vec<Value>;

    /// Gets a prompt by its served name, starting its server when needed: MCP's `prompts/get`
    /// result (`description`, `messages`).
    async fn get_prompt(
        &self,
        name: &str,
        arguments: Map<String, Value>,
    ) -> Result<Value, RelayError>;

    /// toolmux's own resources (`spec://…`, without `server`), then every resource of every
    /// enabled server, from the discovery caches, as MCP lists it (named as served) with its
    /// `server`. Async because toolmux's own are read from disk.
    async fn resources(&self) -> Vec<Value>;

    /// Every resource template of every enabled server, like [`UpstreamServers::resources`].
    fn resource_templates(&self) -> Vec<Value>;

    /// Reads a resource — one of toolmux's own from its provider, else from the server that
    /// lists it (or has a template matching it), starting the server when needed: MCP's
    /// `resources/read` result (`contents`).
    async fn read_resource(&self, uri: &str) -> Result<Value, RelayError>;

    /// Completes an argument of a prompt (by served name) or resource template: `request` and
    /// the result are MCP's `completion/complete` params and result.
    async fn complete(&self, request: Value) -> Result<Value, RelayError>;

    /// Starts signing in to a server (`crate::oauth`): the URL to open, or `None` when it was
    /// signed in to without a person. `None` when no server has that name.
    async fn login(&self, name: &str) -> Option<Result<Option<String>, crate::SignInError>> {
        let _ = name;
        Some(Err(crate::SignInError::Unavailable(
            "this server cannot sign in to MCP servers".to_string(),
        )))
    }

    /// Forgets a server's tokens. `None` when no server has that name.
    async fn logout(&self, name: &str) -> Option<Result<(), crate::SignInError>> {
        let _ = name;
        Some(Err(crate::SignInError::Unavailable(
            "this server cannot sign in to MCP servers".to_string(),
        )))
    }
}

/// Why a prompt, resource or completion could not be relayed. Each maps to one status.
///
/// It mirrors the kinds of the one relay's error (`toolmux_upstream::RelayError`) on purpose:
/// this crate knows no MCP client, so the binary converts that error kind for kind, and the
/// status each kind gets is decided here, with the REST channel's other statuses. `Answered` keeps the server's own JSON-RPC
/// error, which a client then finds in the error body's `details`.
#[derive(Debug, Clone, thiserror::Error)]
pub enum RelayError {
    /// No enabled server offers that prompt or resource, or toolmux has no such resource of
    /// its own (404).
    #[error("{0}")]
    NotFound(String),
    /// The request is not one an upstream server could take (400).
    #[error("{0}")]
    Invalid(String),
    /// The server answered with a JSON-RPC error (502, or 404 for MCP's "resource not found").
    #[error("MCP server `{server}` answered with error {code}: {message}")]
    Answered {
        /// The server's name.
        server: String,
        /// Its JSON-RPC error code.
        code: i32,
        /// Its message.
        message: String,
    },
    /// The server broke the protocol or the connection (502).
    #[error("{0}")]
    Failed(String),
    /// The server cannot be started or is switched off, or one of toolmux's own resources
    /// cannot be read now (503).
    #[error("{0}")]
    Unavailable(String),
    /// The server did not answer in time (504).
    #[error("{message}")]
    Timeout {
        /// What timed out, naming the server.
        message: String,
        /// The limit, in milliseconds.
        after_ms: u64,
    },
}

pub(crate) fn routes() -> OpenApiRouter<ApiState> {
    OpenApiRouter::new()
        .routes(routes!(list, add))
        .routes(routes!(show, replace, remove))
        .routes(routes!(refresh))
}

pub(crate) fn servers(state: &ApiState) -> Result<&Arc<dyn UpstreamServers>, ApiError> {
    state
        .inner
        .upstreams
        .as_ref()
        .ok_or_else(|| ApiError::unavailable("this server has no MCP servers to show"))
}

/// Lists the upstream servers (the `mcpServers` section).
#[utoipa::path(
    get, path = "/api/mcp-servers", tag = "mcp-servers",
    responses((status = 200, description = "`{servers: [...]}`", body = Object))
)]
pub(crate) async fn list(State(state): State<ApiState>) -> Result<Json<Value>, ApiError> {
    let list = servers(&state)?.list();
    Ok(Json(serde_json::json!({ "servers": list })))
}

/// One upstream server, as the list shows it, plus `stderrTail`: the last lines (at most 200)
/// of its stderr log — a stdio server's stderr, with a `--- … started pid …` line per start,
/// and toolmux's notes about it.
#[utoipa::path(
    get, path = "/api/mcp-servers/{name}", tag = "mcp-servers",
    params(("name" = String, Path, description = "The server's name")),
    responses(
        (status = 200, description = "The server, with `stderrTail`", body = Object),
        (status = 404, description = "No such server", body = ErrorBody),
    )
)]
pub(crate) async fn show(
    State(state): State<ApiState>,
    ApiPath(name): ApiPath<String>,
) -> Result<Json<Value>, ApiError> {
    let servers = servers(&state)?;
    let mut view = servers.get(&name).ok_or_else(|| no_server_named(&name))?;
    let tail = servers.stderr_tail(&name).await.unwrap_or_default();
    if let Some(fields) = view.as_object_mut() {
        fields.insert("stderrTail".into(), Value::from(tail));
    }
    Ok(Json(view))
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
        None => Err(no_server_named(&name)),
        Some(Ok(view)) => Ok(Json(view)),
        Some(Err(e)) => Err(ApiError::unavailable(format!(
            "discovery of `{name}` failed: {e}"
        ))),
    }
}

/// An upstream server's entry, as under `mcpServers` in the configuration: `command`, `args`, `env`,
/// `cwd` for a local (stdio) server; `url` and `headers` (with `type` `http` or `sse`) for a
/// remote one; plus toolmux's per-server settings.
#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
// documents the request body for the OpenAPI document
// The document keeps the name clients already generate code from.
#[schema(as = McpServerDefinition)]
pub struct UpstreamDefinition {
    /// The server's name (only in `POST /api/mcp-servers`); its tools are named `NAME__tool`.
    name: Option<String>,
    /// `stdio` (the default with `command`), `http` (the default with `url`) or `sse`.
    #[serde(rename = "type")]
    kind: Option<String>,
    /// The program of a stdio server.
    command: Option<String>,
    /// Its arguments.
    args: Option<Vec<String>>,
    /// Extra environment variables (values may be `${VAR}` references).
    #[schema(value_type = Option<Object>)]
    env: Option<Value>,
    /// Working directory, relative to the project directory.
    cwd: Option<String>,
    /// The URL of an HTTP or SSE server.
    url: Option<String>,
    /// Headers for an HTTP or SSE server (values may be `${VAR}` references).
    #[schema(value_type = Option<Object>)]
    headers: Option<Value>,
    /// `false` keeps the server configured but unused.
    enabled: Option<bool>,
    /// Only these tools (name patterns).
    enabled_tools: Option<Vec<String>>,
    /// Not these tools (name patterns).
    disabled_tools: Option<Vec<String>>,
    /// The policy of its tools.
    policy: Option<String>,
    /// Policies by tool-name pattern.
    #[schema(value_type = Option<Object>)]
    tool_policies: Option<Value>,
    /// How long a start may take, in milliseconds.
    startup_timeout_ms: Option<u64>,
    /// How long listing its tools may take, in milliseconds.
    discovery_timeout_ms: Option<u64>,
    /// How long one of its calls may take, in milliseconds.
    tool_timeout_ms: Option<u64>,
    /// Stop it after this long without calls, in milliseconds (0: never).
    idle_timeout_ms: Option<u64>,
    /// The prefix of its tools' names (default: derived from the name).
    prefix: Option<String>,
}

/// Discovers a server that was just written and shows it: its tools, or in `discovery` the
/// reason there are none. The server stays saved when discovery fails.
async fn discovered(state: &ApiState, name: &str) -> Result<Value, ApiError> {
    let servers = servers(state)?;
    if let Some(Err(e)) = servers.refresh(name).await {
        tracing::warn!(server = name, error = %e, "discovery of a server added through the API failed");
    }
    servers.get(name).ok_or_else(|| no_server_named(name))
}

/// Adds an upstream server: written to the configuration, started and discovered at once. Saved
/// even when discovery fails; `discovery` then says why.
#[utoipa::path(
    post, path = "/api/mcp-servers", tag = "mcp-servers",
    request_body = UpstreamDefinition,
    responses(
        (status = 201, description = "Added; the server with its tools or its discovery error", body = Object),
        (status = 400, description = "The body is not a JSON object", body = ErrorBody),
        (status = 401, description = "No valid API key", body = ErrorBody),
        (status = 409, description = "The name is taken", body = ErrorBody),
        (status = 422, description = "The entry does not pass the configuration's checks", body = ErrorBody),
    )
)]
pub(crate) async fn add(
    State(state): State<ApiState>,
    ApiJson(entry): ApiJson<Map<String, Value>>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let edit = Edit::add(Section::Upstreams, entry)?;
    servers(&state)?;
    let name = state.write_config(edit).await?;
    Ok((StatusCode::CREATED, Json(discovered(&state, &name).await?)))
}

/// Replaces an upstream server's entry: the running server is stopped and the new one discovered.
#[utoipa::path(
    put, path = "/api/mcp-servers/{name}", tag = "mcp-servers",
    params(("name" = String, Path, description = "The server's name")),
    request_body = UpstreamDefinition,
    responses(
        (status = 200, description = "Replaced; the server with its tools or its discovery error", body = Object),
        (status = 400, description = "The body is not a JSON object", body = ErrorBody),
        (status = 401, description = "No valid API key", body = ErrorBody),
        (status = 404, description = "No such server", body = ErrorBody),
        (status = 409, description = "Not a server of the project's configuration file", body = ErrorBody),
        (status = 422, description = "The entry does not pass the configuration's checks", body = ErrorBody),
    )
)]
pub(crate) async fn replace(
    State(state): State<ApiState>,
    ApiPath(name): ApiPath<String>,
    ApiJson(entry): ApiJson<Map<String, Value>>,
) -> Result<Json<Value>, ApiError> {
    let edit = Edit::replace(Section::Upstreams, name, entry)?;
    servers(&state)?;
    let name = state.write_config(edit).await?;
    Ok(Json(discovered(&state, &name).await?))
}

/// Removes an upstream server: taken out of the configuration and the catalog, its process stopped.
#[utoipa::path(
    delete, path = "/api/mcp-servers/{name}", tag = "mcp-servers",
    params(("name" = String, Path, description = "The server's name")),
    responses(
        (status = 204, description = "Removed"),
        (status = 401, description = "No valid API key", body = ErrorBody),
        (status = 404, description = "No such server", body = ErrorBody),
        (status = 409, description = "Not a server of the project's configuration file", body = ErrorBody),
    )
)]
pub(crate) async fn remove(
    State(state): State<ApiState>,
    ApiPath(name): ApiPath<String>,
) -> Result<StatusCode, ApiError> {
    servers(&state)?;
    state
        .write_config(Edit::remove(Section::Upstreams, name))
        .await?;
    Ok(StatusCode::NO_CONTENT)
}
