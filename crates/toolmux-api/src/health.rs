//! `/api/health`: whether the server is up, and the state of each source.

use axum::Json;
use axum::extract::State;
use serde::Serialize;
use toolmux_core::SourceInfo;
use utoipa::ToSchema;

use crate::ApiState;

/// The server's health.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Health {
    /// `ok` while the server answers.
    pub status: String,
    /// toolmux's version.
    pub version: String,
    /// The current catalog version.
    pub catalog_version: u64,
    /// Tools in the catalog (internal ones left out).
    pub tools: usize,
    /// Each source: `id`, `kind`, `status` (`state`, `error`, `lastDiscovery`), `toolCount`,
    /// `enabled`.
    #[schema(value_type = Vec<Object>)]
    pub sources: Vec<SourceInfo>,
}

/// Reports health.
#[utoipa::path(
    get, path = "/api/health", tag = "health",
    responses((status = 200, description = "The server is up", body = Health))
)]
pub(crate) async fn health(State(state): State<ApiState>) -> Json<Health> {
    let catalog = state.inner.hub.catalog();
    Json(Health {
        status: "ok".to_string(),
        version: env!("CARGO_PKG_VERSION").to_string(),
        catalog_version: catalog.version(),
        tools: catalog.tools().count(),
        sources: catalog.sources().to_vec(),
    })
}
