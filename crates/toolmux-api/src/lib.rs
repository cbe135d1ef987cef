//! The REST API channel: the registry, calls, approvals, workspace files, the execution log,
//! health and metrics, as JSON over HTTP, with an OpenAPI 3.1 document generated from the
//! handlers' types.
//!
//! One module per resource, one error type ([`ApiError`], rendered as
//! `{"error": {"code", "message", "details"}}`), and state passed explicitly ([`ApiState`]).
//! Every call goes through [`toolmux_core::Hub::call`] on the `rest` channel, with the
//! [`ApprovalQueue`] as approver, so that policies, validation, limits and the log apply exactly
//! as they do for MCP.

mod approvals;
mod auth;
mod error;
mod extract;
mod files;
mod health;
mod logs;
mod mcp_servers;
mod metrics;
mod openapi;
mod registry;
mod tools;

use std::path::PathBuf;
use std::sync::Arc;

use axum::Router;
use axum::routing::get;
use toolmux_core::{ApprovalQueue, Hub};

pub use auth::{API_KEY_HEADER, Caller};
pub use error::{ApiError, ErrorBody, ErrorDetail};
pub use mcp_servers::McpServers;
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
    options: ApiOptions,
    writer: Option<ConfigWriter>,
    mcp_servers: Option<Arc<dyn McpServers>>,
    rendered: std::sync::Mutex<Option<Arc<tools::RenderedCatalog>>>,
}

impl ApiState {
    /// The state for a hub, its approval queue, the metrics sink the hub records into, the
    /// execution log's folder, the writer of registry changes and the MCP servers (without
    /// them, their routes answer 503).
    pub fn new(
        hub: Hub,
        approvals: Arc<ApprovalQueue>,
        metrics: Arc<CallMetrics>,
        log_dir: PathBuf,
        options: ApiOptions,
        writer: Option<ConfigWriter>,
        mcp_servers: Option<Arc<dyn McpServers>>,
    ) -> Self {
        Self {
            inner: Arc::new(Inner {
                hub,
                approvals,
                metrics,
                log_dir,
                options,
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
