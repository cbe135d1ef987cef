//! `/api/mcp-servers`: the upstream servers (the `mcpServers` section of the configuration),
//! their discovery state and tools, discovery on demand, and servers added, replaced and removed
//! (written to the configuration through the one writer queue, then applied live). The servers
//! themselves live in the upstream crate; the binary hands them to the API through
//! [`UpstreamServers`], so this crate knows no MCP client. The same trait carries what the
//! servers offer besides tools — prompts, resources and completions — as MCP's JSON, for the
//! `prompts`, `resources` and `completions` modules, and toolmux's own resources (`spec://…`),
//! which the one relay merges with the servers' for MCP and REST alike. A relayed request fails
//! with the relay's own error ([`RelayError`], from `toolmux-core`), which `crate::error` maps
//! to a status: no copy of it here and no converter in the binary.

use std::sync::Arc;

use async_trait::async_trait;
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::Serialize;
use serde_json::{Map, Value};
use toolmux_core::RelayError;
use toolmux_http::{ApiJson, ApiPath, OpenApiRouter, routes};
use utoipa::ToSchema;

use crate::ApiState;
use crate::config_shapes::UpstreamDefinition;
use crate::error::{ApiError, ErrorBody};
use crate::registry::{Edit, Section, no_server_named};

/// The running server's upstream servers, as the API shows them.
#[async_trait]
pub trait UpstreamServers: Send + Sync {
    /// Every configured server, by name.
    fn list(&self) -> Vec<UpstreamView>;

    /// One server, or `None` when none has that name.
    fn get(&self, name: &str) -> Option<UpstreamView>;

    /// The end of a server's stderr log (stdio servers; toolmux's notes about any server), at
    /// most 200 lines. `None` when no server has that name.
    async fn stderr_tail(&self, name: &str) -> Option<Vec<String>>;

    /// Runs discovery now. `None` when no server has that name; `Err` holds the discovery error.
    async fn refresh(&self, name: &str) -> Option<Result<UpstreamView, String>>;

    /// Accepts a server's held tools (every held one when `tools` is empty): pinned as the
    /// server presents them now, and offered again. `None` when no server has that name; `Err`
    /// says why nothing was accepted (a tool named is not held).
    async fn trust(&self, name: &str, tools: Vec<String>) -> Option<Result<UpstreamView, String>>;

    /// Forgets a server removed from the configuration: its discovery cache and its pins, so
    /// that one added again by that name is trusted on its first discovery. `Err` says why a
    /// file could not be removed.
    fn forget(&self, name: &str) -> Result<(), String>;

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

/// One upstream server as `/api/mcp-servers` shows it.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = McpServerView)]
pub struct UpstreamView {
    /// Its name under `mcpServers`.
    pub name: String,
    /// The prefix of its tools' names (`PREFIX__tool`).
    pub prefix: String,
    /// How toolmux reaches it.
    pub transport: Transport,
    /// `false` when the configuration keeps it but switched it off.
    pub enabled: bool,
    /// Its discovery record without the cached tool list: `discoveryStatus` (`never`,
    /// `success`, `failed`, `needs-sign-in`, `unavailable`: the configuration names an unset
    /// variable, said in `discoveryError`), `lastDiscovery`, `discoveryError`, `configHash`,
    /// `serverInfo`, its prompts and resources as MCP lists them, `offers`, and `findings`:
    /// what the trust scanner found in each tool's definition (`tool`, `action`: `warn`, `ask`
    /// or `block`, and `findings` with `kind`, `severity`, `field`, `span` and `text`), and
    /// `held`: the tools held until a person accepts them (`tool`, `reason`: `changed`,
    /// `renamed` or `new`, `replaces`, and `changes`: each `field` with its accepted `before`
    /// and its `after`). MCP's JSON as the upstream crate keeps it, which this crate does not
    /// type.
    #[schema(value_type = Object)]
    pub discovery: Value,
    /// The registry names of its tools in the catalog.
    pub tools: Vec<String>,
}

/// How toolmux reaches an upstream server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Transport {
    /// A child process speaking over stdin and stdout.
    Stdio,
    /// Streamable HTTP.
    Http,
    /// The legacy HTTP+SSE transport.
    Sse,
}

/// One upstream server as `GET /api/mcp-servers/{name}` shows it: as listed, plus the end of
/// its stderr log.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = McpServerDetail)]
pub struct UpstreamDetail {
    /// The server as listed.
    #[serde(flatten)]
    pub server: UpstreamView,
    /// The last lines (at most 200) of its stderr log.
    pub stderr_tail: Vec<String>,
}

/// The upstream servers.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = McpServerList)]
pub struct UpstreamList {
    /// Every configured server, by name.
    pub servers: Vec<UpstreamView>,
}

pub(crate) fn routes() -> OpenApiRouter<ApiState> {
    OpenApiRouter::new()
        .routes(routes!(list, add))
        .routes(routes!(show, replace, remove))
        .routes(routes!(refresh))
        .routes(routes!(trust))
}

pub(crate) fn servers(state: &ApiState) -> Result<&Arc<dyn UpstreamServers>, ApiError> {
    state
        .inner
        .upstreams
        .as_ref()
        .ok_or_else(|| ApiError::unavailable("this server has no MCP servers to show"))
}

/// [`servers`] for relaying prompts, resources and completions to `caller`: refused (403
/// `forbidden`) to a caller a configured principal's rights narrow, since these routes do not
/// narrow them per caller — deny by default; over MCP its roles narrow them.
pub(crate) fn relayed_servers(
    state: &ApiState,
    caller: toolmux_http::Caller,
) -> Result<&Arc<dyn UpstreamServers>, ApiError> {
    if crate::tools::caller_rights(caller, &state.inner.hub.catalog()).is_some() {
        return Err(ApiError::forbidden(
            "prompts, resources and completions are served to a configured principal over MCP, \
             where its roles narrow them; the REST API does not narrow them per caller",
        ));
    }
    servers(state)
}

/// Lists the upstream servers (the `mcpServers` section).
#[utoipa::path(
    get, path = "/api/mcp-servers", tag = "mcp-servers",
    responses((status = 200, description = "The servers", body = UpstreamList))
)]
pub(crate) async fn list(State(state): State<ApiState>) -> Result<Json<UpstreamList>, ApiError> {
    Ok(Json(UpstreamList {
        servers: servers(&state)?.list(),
    }))
}

/// One upstream server, as the list shows it, plus `stderrTail`: the last lines (at most 200)
/// of its stderr log — a stdio server's stderr, with a `--- … started pid …` line per start,
/// and toolmux's notes about it.
#[utoipa::path(
    get, path = "/api/mcp-servers/{name}", tag = "mcp-servers",
    params(("name" = String, Path, description = "The server's name")),
    responses(
        (status = 200, description = "The server, with `stderrTail`", body = UpstreamDetail),
        (status = 404, description = "No such server", body = ErrorBody),
    )
)]
pub(crate) async fn show(
    State(state): State<ApiState>,
    ApiPath(name): ApiPath<String>,
) -> Result<Json<UpstreamDetail>, ApiError> {
    let servers = servers(&state)?;
    let server = servers.get(&name).ok_or_else(|| no_server_named(&name))?;
    let stderr_tail = servers.stderr_tail(&name).await.unwrap_or_default();
    Ok(Json(UpstreamDetail {
        server,
        stderr_tail,
    }))
}

/// Discovers a server's tools now (starting it if needed).
#[utoipa::path(
    post, path = "/api/mcp-servers/{name}/refresh", tag = "mcp-servers",
    params(("name" = String, Path, description = "The server's name")),
    responses(
        (status = 200, description = "Discovered; the server with its tools", body = UpstreamView),
        (status = 401, description = "No valid API key", body = ErrorBody),
        (status = 404, description = "No such server", body = ErrorBody),
        (status = 503, description = "Discovery failed; the message says why", body = ErrorBody),
    )
)]
pub(crate) async fn refresh(
    State(state): State<ApiState>,
    ApiPath(name): ApiPath<String>,
) -> Result<Json<UpstreamView>, ApiError> {
    match servers(&state)?.refresh(&name).await {
        None => Err(no_server_named(&name)),
        Some(Ok(view)) => Ok(Json(view)),
        Some(Err(e)) => Err(ApiError::unavailable(format!(
            "discovery of `{name}` failed: {e}"
        ))),
    }
}

/// Which held tools a person accepts.
#[derive(Debug, Default, serde::Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct TrustBody {
    /// The server's own names of the tools to accept; every held tool when empty or left out.
    #[serde(default)]
    pub tools: Vec<String>,
}

/// Accepts a server's held tools (changed since they were pinned, renamed, or new): they are
/// pinned as the server presents them now and offered again.
#[utoipa::path(
    post, path = "/api/mcp-servers/{name}/trust", tag = "mcp-servers",
    params(("name" = String, Path, description = "The server's name")),
    request_body = TrustBody,
    responses(
        (status = 200, description = "Accepted; the server with its tools", body = UpstreamView),
        (status = 400, description = "The body is not a JSON object", body = ErrorBody),
        (status = 401, description = "No valid API key", body = ErrorBody),
        (status = 404, description = "No such server", body = ErrorBody),
        (status = 409, description = "A tool named is not held (or none is); nothing was accepted", body = ErrorBody),
    )
)]
pub(crate) async fn trust(
    State(state): State<ApiState>,
    ApiPath(name): ApiPath<String>,
    ApiJson(body): ApiJson<TrustBody>,
) -> Result<Json<UpstreamView>, ApiError> {
    match servers(&state)?.trust(&name, body.tools).await {
        None => Err(no_server_named(&name)),
        Some(Ok(view)) => Ok(Json(view)),
        Some(Err(e)) => Err(ApiError::conflict(e)),
    }
}

/// Discovers a server that was just written and shows it: its tools, or in `discovery` the
/// reason there are none. The server stays saved when discovery fails.
async fn discovered(state: &ApiState, name: &str) -> Result<UpstreamView, ApiError> {
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
        (status = 201, description = "Added; the server with its tools or its discovery error", body = UpstreamView),
        (status = 400, description = "The body is not a JSON object", body = ErrorBody),
        (status = 401, description = "No valid API key", body = ErrorBody),
        (status = 409, description = "The name is taken", body = ErrorBody),
        (status = 422, description = "The entry does not pass the configuration's checks", body = ErrorBody),
    )
)]
pub(crate) async fn add(
    State(state): State<ApiState>,
    ApiJson(entry): ApiJson<Map<String, Value>>,
) -> Result<(StatusCode, Json<UpstreamView>), ApiError> {
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
        (status = 200, description = "Replaced; the server with its tools or its discovery error", body = UpstreamView),
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
) -> Result<Json<UpstreamView>, ApiError> {
    let edit = Edit::replace(Section::Upstreams, name, entry)?;
    servers(&state)?;
    let name = state.write_config(edit).await?;
    Ok(Json(discovered(&state, &name).await?))
}

/// Removes an upstream server: taken out of the configuration and the catalog, its process stopped.
// Its discovery cache and pins are removed too (kept out of the summary above, which is the
// route's OpenAPI summary: one line).
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
    let servers = servers(&state)?;
    let name = state
        .write_config(Edit::remove(Section::Upstreams, name))
        .await?;
    if let Err(e) = servers.forget(&name) {
        // Removed from the configuration all the same; stale state only misleads later views.
        tracing::warn!(server = %name, error = %e, "cannot remove its cache and pins");
    }
    Ok(StatusCode::NO_CONTENT)
}
