//! `/api/resources`: toolmux's own resources (each spec as `spec://NNN-name`) and the resources
//! and resource templates of the upstream servers behind toolmux, under their own URIs — the
//! same list `resources/list` gives over MCP. Listing reads the discovery caches and starts
//! nothing; reading a resource reads toolmux's own from disk, or starts the server that lists
//! it (or whose template matches it) when needed, and returns what MCP's `resources/read`
//! returns.

use axum::extract::State;
use axum::http::header::CONTENT_TYPE;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use toolmux_http::{ApiPath, ApiQuery, Caller, OpenApiRouter, routes};
use utoipa::{IntoParams, ToSchema};

use crate::ApiState;
use crate::error::{ApiError, ErrorBody, RelayFailures, relay_failure};
use crate::upstreams::{relayed_servers, servers};

pub(crate) fn routes() -> OpenApiRouter<ApiState> {
    OpenApiRouter::new()
        .routes(routes!(list))
        .routes(routes!(read))
        .routes(routes!(kept_result))
}

/// toolmux's own resources, then every resource and resource template of every enabled
/// upstream server.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceList {
    /// The resources: toolmux's own, then server by server.
    #[schema(value_type = Vec<ResourceView>)]
    pub resources: Vec<Value>,
    /// The resource templates (RFC 6570 URI templates), server by server.
    #[schema(value_type = Vec<ResourceTemplateView>)]
    pub resource_templates: Vec<Value>,
}

/// One resource as MCP's `resources/list` shows it, plus the server it comes from (none for
/// toolmux's own).
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)] // documents the relayed JSON for the OpenAPI document
pub struct ResourceView {
    /// Its URI, the one to read it by.
    uri: String,
    /// Its name as served: `PREFIX__name` (the server's own name is then the `title`), or for
    /// a spec its folder name.
    name: String,
    /// The upstream server that offers it; absent for toolmux's own (`spec://…`).
    server: Option<String>,
    /// A display title (a spec's title).
    title: Option<String>,
    /// What it holds (a spec's status and priority).
    description: Option<String>,
    /// Its media type.
    mime_type: Option<String>,
    /// Its size in bytes, when known.
    size: Option<u64>,
}

/// One resource template as MCP's `resources/templates/list` shows it, plus its server.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)] // documents the relayed JSON for the OpenAPI document
pub struct ResourceTemplateView {
    /// The RFC 6570 URI template (`test://template/{id}/data`); read an expansion of it.
    uri_template: String,
    /// Its name as served, `PREFIX__name`.
    name: String,
    /// The upstream server that offers it.
    server: String,
    /// A display title.
    title: Option<String>,
    /// What its resources hold.
    description: Option<String>,
    /// The media type of its resources.
    mime_type: Option<String>,
}

/// Which resource to read.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ReadQuery {
    /// The resource's URI: a listed one, or an expansion of a listed template.
    pub uri: String,
}

/// Lists toolmux's own resources (specs) and the resources and resource templates of the
/// upstream servers, from their discovery caches (starting nothing).
#[utoipa::path(
    get, path = "/api/resources", tag = "resources",
    responses((status = 200, description = "The resources and templates", body = ResourceList))
)]
pub(crate) async fn list(
    State(state): State<ApiState>,
    Extension(caller): Extension<Caller>,
) -> Result<Json<ResourceList>, ApiError> {
    let servers = relayed_servers(&state, caller)?;
    Ok(Json(ResourceList {
        resources: servers.resources().await,
        resource_templates: servers.resource_templates(),
    }))
}

/// Reads a resource: one of toolmux's own (a spec's text), or from its upstream server
/// (started when needed).
#[utoipa::path(
    get, path = "/api/resources/read", tag = "resources",
    params(ReadQuery),
    responses(
        (status = 200, description = "MCP's `resources/read` result: `contents`", body = Object),
        (status = 400, description = "No `uri` in the query string", body = ErrorBody),
        (status = 404, description = "No spec has the URI, no server lists it or a template matching it, or the server has no such resource", body = ErrorBody),
        RelayFailures,
    )
)]
pub(crate) async fn read(
    State(state): State<ApiState>,
    Extension(caller): Extension<Caller>,
    ApiQuery(query): ApiQuery<ReadQuery>,
) -> Result<Json<Value>, ApiError> {
    Ok(Json(
        relayed_servers(&state, caller)?
            .read_resource(&query.uri)
            .await
            .map_err(relay_failure)?,
    ))
}

/// A whole result toolmux cut to fit and kept for a while (`toolmux://results/<id>`, named in
/// the cut result's note): its pretty-printed JSON or its text, as `resources/read` gives it
/// over MCP. Read through the same relay, so it is served where `result_read` is.
#[utoipa::path(
    get, path = "/api/results/{id}", tag = "resources",
    params(("id" = String, Path, description = "The kept result's id (32 hex digits)")),
    responses(
        (status = 200, description = "The whole result: its JSON, pretty-printed, or its text", content(
            (String = "application/json"),
            (String = "text/plain"),
        )),
        (status = 404, description = "No such result: it expired, never existed, or the id is not one", body = ErrorBody),
        RelayFailures,
    )
)]
pub(crate) async fn kept_result(
    State(state): State<ApiState>,
    ApiPath(id): ApiPath<String>,
) -> Result<Response, ApiError> {
    let uri = format!("{}{id}", toolmux_shaping::RESULTS_URI_PREFIX);
    let read = servers(&state)?
        .read_resource(&uri)
        .await
        .map_err(relay_failure)?;
    let content = &read["contents"][0];
    let (Some(text), Some(mime_type)) = (content["text"].as_str(), content["mimeType"].as_str())
    else {
        return Err(ApiError::internal(format!(
            "the kept result `{id}` was read without its text or media type"
        )));
    };
    Ok(([(CONTENT_TYPE, mime_type.to_string())], text.to_string()).into_response())
}
