//! The OpenAPI 3.1 document, generated from the handlers' `#[utoipa::path]` annotations and
//! their types. Served as JSON only: no documentation page that fetches scripts from a CDN.

use std::sync::Arc;

use axum::{Extension, Json};
use utoipa::openapi::security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

use crate::{approvals, completions, error, health, logs, mcp_servers, prompts, resources, tools};

/// What the document says besides its paths, which come from the routes themselves
/// ([`crate::routes`]): the title, the schemas and the two ways to send a key.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "toolmux",
        description = "One registry of tools for AI agents: list tools, call them through the \
                       pipeline, answer approvals, read workspace files and the execution log, \
                       and use the prompts and resources of the MCP servers behind toolmux."
    ),
    components(schemas(
        error::ErrorBody, error::ErrorDetail,
        tools::ToolList, tools::ToolView, tools::CallResponse, tools::CallStatus, tools::PolicyName, tools::ScriptToolDefinition,
        mcp_servers::McpServerDefinition,
        prompts::PromptList, prompts::PromptView, prompts::PromptArguments,
        resources::ResourceList, resources::ResourceView, resources::ResourceTemplateView,
        completions::CompletionRequest, completions::CompletionArgument,
        approvals::ApprovalList, approvals::Answer, approvals::Decision,
        logs::LogList, health::Health,
    )),
    modifiers(&Security),
    security((), ("bearer" = []), ("apiKey" = [])),
)]
struct ApiDoc;

struct Security;

impl Modify for Security {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
        );
        components.add_security_scheme(
            "apiKey",
            SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::new("X-API-Key"))),
        );
    }
}

/// The API's OpenAPI document: one operation per registered route.
pub fn openapi() -> utoipa::openapi::OpenApi {
    let (_, paths) = crate::routes().split_for_parts();
    let mut doc = ApiDoc::openapi();
    doc.merge(paths);
    doc.info.version = env!("CARGO_PKG_VERSION").to_string();
    doc
}

/// Serves the OpenAPI document: the API's own operations and those of the routes served beside
/// them ([`crate::api_router_with`]), made once when the router is built.
#[utoipa::path(
    get, path = "/api/openapi.json", tag = "health",
    responses((status = 200, description = "The OpenAPI 3.1 document", body = Object))
)]
pub(crate) async fn document(
    Extension(document): Extension<Arc<utoipa::openapi::OpenApi>>,
) -> Json<utoipa::openapi::OpenApi> {
    Json(utoipa::openapi::OpenApi::clone(&document))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every route is registered with its operation, so the document lists each one, with its
    /// method, and nothing else.
    #[test]
    fn the_document_has_one_operation_per_route() {
        let operations = toolmux_http::operations(&openapi());
        let expected = [
            "delete /api/mcp-servers/{name}",
            "delete /api/tools/{name}",
            "get /api/approvals",
            "get /api/files",
            "get /api/files/content",
            "get /api/files/grep",
            "get /api/files/search",
            "get /api/health",
            "get /api/logs",
            "get /api/mcp-servers",
            "get /api/mcp-servers/{name}",
            "get /api/openapi.json",
            "get /api/prompts",
            "get /api/resources",
            "get /api/resources/read",
            "get /api/tools",
            "get /api/tools/{name}",
            "get /metrics",
            "post /api/approvals/{id}",
            "post /api/completions",
            "post /api/mcp-servers",
            "post /api/mcp-servers/{name}/refresh",
            "post /api/prompts/{name}",
            "post /api/tools",
            "post /api/tools/{name}/call",
            "put /api/mcp-servers/{name}",
            "put /api/tools/{name}",
        ];
        assert_eq!(operations, expected);
    }
}
