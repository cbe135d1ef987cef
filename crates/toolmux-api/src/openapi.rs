//! The OpenAPI 3.1 document, generated from the handlers' `#[utoipa::path]` annotations and
//! their types. Served as JSON only: no documentation page that fetches scripts from a CDN.

use axum::Json;
use utoipa::openapi::security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

use crate::{
    approvals, completions, error, files, health, logs, mcp_servers, metrics, prompts, resources,
    tools,
};

#[derive(OpenApi)]
#[openapi(
    info(
        title = "toolmux",
        description = "One registry of tools for AI agents: list tools, call them through the \
                       pipeline, answer approvals, read workspace files and the execution log, \
                       and use the prompts and resources of the MCP servers behind toolmux."
    ),
    paths(
        tools::list, tools::show, tools::call, tools::register, tools::replace, tools::remove,
        approvals::list, approvals::answer,
        files::list, files::content, files::search, files::grep,
        mcp_servers::list, mcp_servers::show, mcp_servers::refresh,
        mcp_servers::add, mcp_servers::replace, mcp_servers::remove,
        prompts::list, prompts::get_prompt, resources::list, resources::read, completions::complete,
        logs::list, health::health, metrics::metrics, document,
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

/// The API's OpenAPI document.
pub fn openapi() -> utoipa::openapi::OpenApi {
    let mut doc = ApiDoc::openapi();
    doc.info.version = env!("CARGO_PKG_VERSION").to_string();
    doc
}

/// Serves the OpenAPI document.
#[utoipa::path(
    get, path = "/api/openapi.json", tag = "health",
    responses((status = 200, description = "The OpenAPI 3.1 document", body = Object))
)]
pub(crate) async fn document() -> Json<utoipa::openapi::OpenApi> {
    Json(openapi())
}
