//! The REST API channel: the registry, calls, approvals, workspace files, the project's specs,
//! the execution log, the upstream servers with their prompts and resources, health and metrics, as JSON over HTTP, with an OpenAPI 3.1 document generated from the
//! handlers' types.
//!
//! One module per resource, one error type ([`ApiError`], rendered as
//! `{"error": {"code", "message", "details"}}`), and state passed explicitly ([`ApiState`]).
//! Every call goes through [`toolmux_core::Hub::call`] on the `rest` channel, with the
//! [`ApprovalQueue`] as approver, so that policies, validation, limits and the log apply exactly
//! as they do for MCP.

mod access;
mod approvals;
pub mod chat;
mod completions;
mod config_shapes;
mod error;
mod files;
mod health;
mod import;
mod inputs;
mod logs;
mod metrics;
mod oauth;
mod openapi;
mod prompts;
mod registry;
mod resources;
mod runners;
mod sessions;
mod skills;
mod specs;
mod sse;
mod tasks;
mod tool_routes;
mod tools;
mod upstreams;

use std::path::PathBuf;
use std::sync::Arc;

use axum::Router;
use serde_json::{Map, Value, json};
use toolmux_core::{ApprovalQueue, Hub};
use toolmux_http::{Caller, OpenApiRouter, guarded, routes};

pub use access::{Access, route_access};
pub use error::{ApiError, ErrorBody, ErrorDetail};
pub use metrics::CallMetrics;
pub use oauth::SignInError;
pub use openapi::{openapi, tool_input_component};
pub use registry::{Apply, ConfigFiles, ConfigWatcher, ConfigWriter};
pub use toolmux_core::{RelayError, Unknown};
/// Who may use the API, as [`ApiState::new`] takes it.
pub use toolmux_http::{ApiOptions, LiveOptions};
pub use tools::{CallResponse, CallStatus};
pub use upstreams::{Transport, UpstreamDetail, UpstreamList, UpstreamServers, UpstreamView};

/// The path prefix of the API.
pub const API_PATH: &str = "/api";

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
    upstreams: Option<Arc<dyn UpstreamServers>>,
    rendered: std::sync::Mutex<Option<Arc<tools::RenderedCatalog>>>,
}

impl ApiState {
    /// The state for a hub, its approval queue, the metrics sink the hub records into, the
    /// execution log's folder, who may use the API (fixed [`ApiOptions`], or [`LiveOptions`]
    /// that follow the configuration), the writer of registry changes and the upstream servers
    /// (without them, their routes — prompts and resources too — answer 503).
    pub fn new(
        hub: Hub,
        approvals: Arc<ApprovalQueue>,
        metrics: Arc<CallMetrics>,
        log_dir: PathBuf,
        options: impl Into<LiveOptions>,
        writer: Option<ConfigWriter>,
        upstreams: Option<Arc<dyn UpstreamServers>>,
    ) -> Self {
        Self {
            inner: Arc::new(Inner {
                hub,
                approvals,
                metrics,
                log_dir,
                options: options.into(),
                writer,
                upstreams,
                rendered: std::sync::Mutex::new(None),
            }),
        }
    }

    /// Runs `tool` for the caller through the pipeline, as every route that stands for one tool
    /// does (`/api/files`, `/api/specs`), so that policy, validation, approvals and the log
    /// apply unchanged; answers with the tool's structured result (its text when it has none).
    /// A pipeline refusal maps as every call's does, and the tool's own error result by its
    /// kind ([`ApiError::tool_error`]): one mapping for all those routes.
    pub(crate) async fn run_tool(
        &self,
        caller: Caller,
        tool: &str,
        arguments: Map<String, Value>,
    ) -> Result<Value, ApiError> {
        let result = self
            .inner
            .hub
            .call(tool, Value::Object(arguments), &self.context(caller))
            .await?;
        if result.is_error {
            return Err(ApiError::tool_error(&result));
        }
        Ok(match result.structured_content {
            Some(value) => value,
            None => json!({ "text": result.text_content() }),
        })
    }
}

/// A tool's arguments from the parameters a request set, so that the tool's own defaults apply
/// to the others.
pub(crate) fn arguments<const N: usize>(pairs: [(&str, Option<Value>); N]) -> Map<String, Value> {
    pairs
        .into_iter()
        .filter_map(|(k, v)| v.map(|v| (k.to_string(), v)))
        .collect()
}

/// The API's router: `/api/...`, `/metrics` and `/api/openapi.json`, behind the one guard of
/// every HTTP route (`toolmux_http::guarded`: Host, Origin and API-key checks) and the one
/// table of who may use each route ([`route_access`]).
pub fn api_router(state: ApiState) -> Router {
    api_router_with(state, OpenApiRouter::new())
}

/// The API's router with `more` routes of other channels (the chat's) beside its own: behind
/// the same guard, and listed with their operations in the same `/api/openapi.json`, so that a
/// client sees one API whichever crate serves a route.
pub fn api_router_with(state: ApiState, more: OpenApiRouter) -> Router {
    let (routes, operations) = routes().split_for_parts();
    let (more, more_operations) = more.split_for_parts();
    let mut document = openapi::described(operations);
    document.merge(more_operations);
    access::document_refusals(&mut document);
    openapi::name_operations(&mut document);
    // Any other path under `/api` is answered with the error body, not an empty 404.
    let routes = routes
        .nest(API_PATH, Router::new().fallback(not_found))
        .layer(axum::Extension(openapi::Document::new(
            &document,
            &state.inner.hub.catalog(),
        )))
        .with_state(state.clone())
        .merge(more)
        // Inside the guard, which records the caller: who may use each route, by the kind of
        // credential (one table, `access::ROUTES`).
        .layer(axum::middleware::from_fn(access::enforce));
    guarded(state.inner.options.clone(), routes)
}

/// Every route of the API with its OpenAPI operation: registered together, so that a route
/// cannot exist without its entry in the document ([`openapi`] is made from the same list).
pub(crate) fn routes() -> OpenApiRouter<ApiState> {
    OpenApiRouter::new()
        .merge(tools::routes())
        .merge(approvals::routes())
        .merge(inputs::routes())
        .merge(files::routes())
        .merge(specs::routes())
        .merge(tasks::routes())
        .merge(skills::routes())
        .merge(sessions::routes())
        .merge(runners::routes())
        .merge(upstreams::routes())
        .merge(oauth::routes())
        .merge(import::routes())
        .merge(prompts::routes())
        .merge(resources::routes())
        .routes(routes!(completions::complete))
        .routes(routes!(logs::list))
        .routes(routes!(logs::stream))
        .routes(routes!(health::health))
        .routes(routes!(openapi::document))
        .routes(routes!(metrics::metrics))
}

async fn not_found(axum::extract::OriginalUri(uri): axum::extract::OriginalUri) -> ApiError {
    ApiError::not_found(format!("no API route at `{}`", uri.path()))
}
