//! The REST API channel: the registry, calls, approvals, workspace files, the execution log,
//! the MCP servers with their prompts and resources, health and metrics, as JSON over HTTP, with an OpenAPI 3.1 document generated from the
//! handlers' types.
//!
//! One module per resource, one error type ([`ApiError`], rendered as
//! `{"error": {"code", "message", "details"}}`), and state passed explicitly ([`ApiState`]).
//! Every call goes through [`toolmux_core::Hub::call`] on the `rest` channel, with the
//! [`ApprovalQueue`] as approver, so that policies, validation, limits and the log apply exactly
//! as they do for MCP.

mod approvals;
mod auth;
mod completions;
mod error;
mod extract;
mod files;
mod health;
mod logs;
mod mcp_servers;
mod metrics;
mod openapi;
mod prompts;
mod registry;
mod resources;
mod tools;

use std::path::PathBuf;
use std::sync::{Arc, PoisonError, RwLock};

use axum::Router;
use axum::routing::get;
use toolmux_core::{ApprovalQueue, Hub};

pub use auth::{API_KEY_HEADER, Caller, mcp_guarded};
pub use error::{ApiError, ErrorBody, ErrorDetail};
pub use mcp_servers::{McpServers, RelayError};
pub use metrics::CallMetrics;
pub use openapi::openapi;
pub use registry::{Apply, ConfigFiles, ConfigWatcher, ConfigWriter};
pub use tools::{CallResponse, CallStatus};

/// The path prefix of the API.
pub const API_PATH: &str = "/api";

/// Who may use the API.
#[derive(Clone, Debug, Default)]
pub struct ApiOptions {
    /// Accepted keys; a request that changes anything needs one of them.
    pub api_keys: Vec<String>,
    /// Every request needs a key, reads too: set when the server is reachable beyond loopback.
    pub require_key_for_reads: bool,
    /// Accepted `Host` values (name, or name and port); loopback names belong here too.
    pub allowed_hosts: Vec<String>,
    /// Accepted `Origin` values; `scheme://host:*` takes any port.
    pub allowed_origins: Vec<String>,
}

/// The [`ApiOptions`] in force, shared by every HTTP route and replaced as a whole when the
/// configuration changes, so that a revoked key is refused by the very next request on `/api`
/// and `/mcp` alike. Each request reads one snapshot; a change never splits a request's checks
/// between two versions.
#[derive(Clone, Debug, Default)]
pub struct LiveOptions(Arc<RwLock<Arc<ApiOptions>>>);

impl LiveOptions {
    /// Options that start as `options`.
    pub fn new(options: ApiOptions) -> Self {
        Self(Arc::new(RwLock::new(Arc::new(options))))
    }

    /// The options in force now.
    pub fn current(&self) -> Arc<ApiOptions> {
        Arc::clone(&self.0.read().unwrap_or_else(PoisonError::into_inner))
    }

    /// Puts `options` in force for every request that starts from now on.
    pub fn replace(&self, options: ApiOptions) {
        *self.0.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(options);
    }
}

impl From<ApiOptions> for LiveOptions {
    fn from(options: ApiOptions) -> Self {
        Self::new(options)
    }
}

/// What every handler needs. Cheap to clone.
#[derive(Clone)]
pub struct ApiState {
    inner: Arc<Inner>,
}

struct Inner {
    hub: Hub,
    approvals: Arc<ApprovalQueue>,
    metrics: Arc<CallMetrics>,
    log_dir: PathBuf,
    options: LiveOptions,
    writer: Option<ConfigWriter>,
    mcp_servers: Option<Arc<dyn McpServers>>,
    rendered: std::sync::Mutex<Option<Arc<tools::RenderedCatalog>>>,
}

impl ApiState {
    /// The state for a hub, its approval queue, the metrics sink the hub records into, the
    /// execution log's folder, who may use the API (fixed [`ApiOptions`], or [`LiveOptions`]
    /// that follow the configuration), the writer of registry changes and the MCP servers
    /// (without them, their routes — prompts and resources too — answer 503).
    pub fn new(
        hub: Hub,
        approvals: Arc<ApprovalQueue>,
        metrics: Arc<CallMetrics>,
        log_dir: PathBuf,
        options: impl Into<LiveOptions>,
        writer: Option<ConfigWriter>,
        mcp_servers: Option<Arc<dyn McpServers>>,
    ) -> Self {
        Self {
            inner: Arc::new(Inner {
                hub,
                approvals,
                metrics,
                log_dir,
                options: options.into(),
                writer,
                mcp_servers,
                rendered: std::sync::Mutex::new(None),
            }),
        }
    }
}

/// The API's router: `/api/...`, `/metrics` and `/api/openapi.json`, behind the Host, Origin
/// and API-key checks.
pub fn api_router(state: ApiState) -> Router {
    let api = Router::new()
        .nest("/tools", tools::router())
        .nest("/approvals", approvals::router())
        .nest("/files", files::router())
        .nest("/mcp-servers", mcp_servers::router())
        .nest("/prompts", prompts::router())
        .nest("/resources", resources::router())
        .route("/completions", axum::routing::post(completions::complete))
        .route("/logs", get(logs::list))
        .route("/health", get(health::health))
        .route("/openapi.json", get(openapi::document))
        .fallback(not_found);
    Router::new()
        .nest(API_PATH, api)
        .route("/metrics", get(metrics::metrics))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            auth::guard,
        ))
        .with_state(state)
}

/// Puts routes of another crate (the chat's) behind the API's one guard: Host and Origin checks,
/// and API keys — required for every request that changes something, and for every request
/// when the server is reachable beyond loopback.
pub fn guarded(state: ApiState, routes: Router) -> Router {
    routes.layer(axum::middleware::from_fn_with_state(state, auth::guard))
}

async fn not_found(axum::extract::OriginalUri(uri): axum::extract::OriginalUri) -> ApiError {
    ApiError::not_found(format!("no API route at `{}`", uri.path()))
}
