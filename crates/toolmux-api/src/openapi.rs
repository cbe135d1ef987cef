//! The OpenAPI 3.1 document, generated from the handlers' `#[utoipa::path]` annotations and
//! their types. Served as JSON only: no documentation page that fetches scripts from a CDN.

use axum::Extension;
use axum::body::Bytes;
use axum::http::{HeaderValue, Method, header};
use axum::response::IntoResponse;
use utoipa::openapi::path::Operation;
use utoipa::openapi::security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

use crate::{
    approvals, completions, config_shapes, error, health, logs, prompts, resources, tools,
    upstreams,
};

/// What the document says besides its paths, which come from the routes themselves
/// ([`crate::routes`]): the title, the schemas and the two ways to send a key.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "toolmux",
        description = "One registry of tools for AI agents: list tools, call them through the \
                       pipeline, answer approvals, read workspace files and the execution log, \
                       and use the prompts and resources of the upstream servers behind toolmux."
    ),
    components(schemas(
        error::ErrorBody, error::ErrorDetail,
        tools::ToolList, tools::ToolView, tools::CallResponse, tools::CallStatus, tools::PolicyName,
        config_shapes::ScriptToolDefinition, config_shapes::UpstreamDefinition,
        upstreams::UpstreamList, upstreams::UpstreamView, upstreams::UpstreamDetail, upstreams::Transport,
        prompts::PromptList, prompts::PromptView, prompts::PromptArguments,
        resources::ResourceList, resources::ResourceView, resources::ResourceTemplateView,
        completions::CompletionRequest, completions::CompletionArgument,
        approvals::ApprovalList, approvals::Answer, approvals::Decision, approvals::Scope,
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
    described(paths)
}

/// The document for these operations (the routes' own, split off once when the router is
/// built): its title, schemas, security schemes and version, and the operations.
pub(crate) fn described(operations: utoipa::openapi::OpenApi) -> utoipa::openapi::OpenApi {
    let mut doc = ApiDoc::openapi();
    doc.merge(operations);
    doc.info.version = env!("CARGO_PKG_VERSION").to_string();
    crate::access::document_refusals(&mut doc);
    doc
}

/// Calls `edit` with every operation of `document`, its path and its method (the five the API
/// serves).
pub(crate) fn each_operation(
    document: &mut utoipa::openapi::OpenApi,
    mut edit: impl FnMut(&str, Method, &mut Operation),
) {
    for (path, item) in document.paths.paths.iter_mut() {
        let operations = [
            (Method::GET, &mut item.get),
            (Method::POST, &mut item.post),
            (Method::PUT, &mut item.put),
            (Method::PATCH, &mut item.patch),
            (Method::DELETE, &mut item.delete),
        ];
        for (method, operation) in operations {
            if let Some(operation) = operation.as_mut() {
                edit(path, method, operation);
            }
        }
    }
}

/// Names every operation after its method and path (`get /api/tools/{name}` is
/// `get_api_tools_name`). OpenAPI wants operation ids unique in the document, since generated
/// clients (the web app's types) name their functions and types after them; utoipa takes the
/// handler's name, which repeats across modules (`list`, `show`).
pub(crate) fn name_operations(document: &mut utoipa::openapi::OpenApi) {
    each_operation(document, |path, method, operation| {
        let words: Vec<&str> = path
            .split(['/', '{', '}', '-', '.'])
            .filter(|w| !w.is_empty())
            .collect();
        let method = method.as_str().to_lowercase();
        operation.operation_id = Some(format!("{method}_{}", words.join("_")));
    });
}

/// The document as served: serialised once, when the router is built, and shared by every
/// request for it.
#[derive(Clone)]
pub(crate) struct Document(Bytes);

impl Document {
    pub(crate) fn new(document: &utoipa::openapi::OpenApi) -> Self {
        // A document of plain data with string keys always serialises.
        Self(Bytes::from(
            serde_json::to_vec(document).expect("the OpenAPI document serialises"),
        ))
    }
}

/// Serves the OpenAPI document: the API's own operations and those of the routes served beside
/// them ([`crate::api_router_with`]), made once when the router is built.
#[utoipa::path(
    get, path = "/api/openapi.json", tag = "health",
    responses((status = 200, description = "The OpenAPI 3.1 document", body = Object))
)]
pub(crate) async fn document(Extension(document): Extension<Document>) -> impl IntoResponse {
    (
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        document.0,
    )
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
            "delete /api/specs/{spec}/relationships",
            "delete /api/tasks/{id}",
            "delete /api/tools/{name}",
            "get /api/approvals",
            "get /api/approvals/stream",
            "get /api/files",
            "get /api/files/content",
            "get /api/files/grep",
            "get /api/files/search",
            "get /api/health",
            "get /api/inputs",
            "get /api/logs",
            "get /api/logs/stream",
            "get /api/mcp-servers",
            "get /api/mcp-servers/{name}",
            "get /api/openapi.json",
            "get /api/prompts",
            "get /api/resources",
            "get /api/resources/read",
            "get /api/runners",
            "get /api/sessions",
            "get /api/sessions/{id}",
            "get /api/sessions/{id}/logs",
            "get /api/sessions/{id}/stream",
            "get /api/skills",
            "get /api/skills/{name}",
            "get /api/specs",
            "get /api/specs/board",
            "get /api/specs/search",
            "get /api/specs/stats",
            "get /api/specs/tokens",
            "get /api/specs/validation",
            "get /api/specs/{spec}",
            "get /api/tasks",
            "get /api/tasks/{id}",
            "get /api/tools",
            "get /api/tools/{name}",
            "get /metrics",
            "patch /api/specs/{spec}",
            "patch /api/tasks/{id}",
            "patch /api/tools/{name}",
            "post /api/approvals/{id}",
            "post /api/completions",
            "post /api/import",
            "post /api/inputs/{id}",
            "post /api/mcp-servers",
            "post /api/mcp-servers/{name}/login",
            "post /api/mcp-servers/{name}/logout",
            "post /api/mcp-servers/{name}/refresh",
            "post /api/prompts/{name}",
            "post /api/runners/detect",
            "post /api/sessions",
            "post /api/sessions/{id}/cancel",
            "post /api/specs",
            "post /api/specs/{spec}/relationships",
            "post /api/tasks",
            "post /api/tasks/{id}/notes",
            "post /api/tools",
            "post /api/tools/{name}/call",
            "put /api/mcp-servers/{name}",
            "put /api/tools/{name}",
        ];
        assert_eq!(operations, expected);
    }
}
