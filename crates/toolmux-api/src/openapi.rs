//! The OpenAPI 3.1 document, generated from the handlers' `#[utoipa::path]` annotations and
//! their types. Served as JSON only: no documentation page that fetches scripts from a CDN.

use axum::Extension;
use axum::body::Bytes;
use axum::http::{HeaderValue, Method, header};
use axum::response::IntoResponse;
use serde_json::Value;
use toolmux_core::{Catalog, SourceKind};
use utoipa::openapi::path::Operation;
use utoipa::openapi::path::{Parameter, ParameterBuilder, ParameterIn, ParameterStyle};
use utoipa::openapi::security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::openapi::{RefOr, Required, Schema};
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

/// The name of a built-in tool's input in the document's components: `spec_list.input`.
pub fn tool_input_component(tool: &str) -> String {
    format!("{tool}.input")
}

/// The input schema of every built-in tool in `catalog`, by component name, for the
/// document's components: a client generating types from the document gets the same shapes the
/// tools parse (each derived from the tool's input struct, `toolmux_core::input_schema`). The
/// catalog is the one at the router's start: built-in packs do not change on a reload.
fn tool_inputs(catalog: &Catalog) -> Vec<(String, Value)> {
    let builtin: Vec<&str> = catalog
        .sources()
        .iter()
        .filter(|s| s.kind == SourceKind::Builtin)
        .map(|s| s.id.as_str())
        .collect();
    catalog
        .tools()
        .map(|entry| &entry.descriptor)
        .filter(|tool| builtin.contains(&tool.source.as_str()))
        .map(|tool| {
            (
                tool_input_component(&tool.name),
                tool.input_schema.as_ref().clone(),
            )
        })
        .collect()
}

/// A JSON Schema as utoipa's schema type.
fn as_schema(schema: &Value) -> Result<RefOr<Schema>, serde_json::Error> {
    serde_json::from_value(schema.clone())
}

/// The query parameters that stand for the arguments `schema` describes: one per property,
/// with its description, schema and whether it is required. A list is written
/// comma-separated (`tags=api,auth`: form style, not exploded).
pub(crate) fn query_parameters(schema: &Value) -> Vec<Parameter> {
    let required: Vec<&str> = schema["required"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(properties) = schema["properties"].as_object() else {
        return Vec::new();
    };
    properties
        .iter()
        .map(|(name, property)| {
            let mut property = property.clone();
            let description = property
                .as_object_mut()
                .and_then(|p| p.remove("description"))
                .and_then(|d| d.as_str().map(String::from));
            let list = property["type"] == "array";
            ParameterBuilder::new()
                .name(name)
                .parameter_in(ParameterIn::Query)
                .required(if required.contains(&name.as_str()) {
                    Required::True
                } else {
                    Required::False
                })
                .description(description)
                .schema(as_schema(&property).ok())
                .style(list.then_some(ParameterStyle::Form))
                .explode(list.then_some(false))
                .build()
        })
        .collect()
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
    /// The document with the built-in tools' inputs of `catalog` among its components. They
    /// are put in as the JSON they are, not through utoipa's schema type, which keeps only the
    /// keywords it knows.
    pub(crate) fn new(document: &utoipa::openapi::OpenApi, catalog: &Catalog) -> Self {
        // A document of plain data with string keys always serialises.
        let mut value = serde_json::to_value(document).expect("the OpenAPI document serialises");
        if let Some(root) = value.as_object_mut() {
            let components = root
                .entry("components")
                .or_insert_with(|| Value::Object(Default::default()));
            if let Some(components) = components.as_object_mut() {
                let schemas = components
                    .entry("schemas")
                    .or_insert_with(|| Value::Object(Default::default()));
                if let Some(schemas) = schemas.as_object_mut() {
                    schemas.extend(tool_inputs(catalog));
                    for route in crate::tool_routes::every() {
                        route.document(&mut value, catalog);
                    }
                }
            }
        }
        Self(Bytes::from(value.to_string()))
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
    use toolmux_core::input_schema;

    /// utoipa's schema type holds the spec filters' derived schemas whole, so their query
    /// parameters say what the tools' `inputSchema`s say, keyword for keyword.
    #[test]
    fn a_query_structs_schema_is_kept_whole() {
        for schema in [
            input_schema::<toolmux_specs::SpecBoard>(),
            input_schema::<toolmux_specs::SpecFilter>(),
        ] {
            let component = as_schema(&schema).expect("utoipa reads the schema");
            assert_eq!(
                serde_json::to_value(&component).expect("serialises"),
                schema
            );
        }
    }

    /// A query's parameters are its tool's schema's properties, lists comma-separated.
    #[test]
    fn query_parameters_come_from_the_tools_schema() {
        let parameters = query_parameters(&input_schema::<toolmux_specs::SpecFilter>());
        let parameters = serde_json::to_value(&parameters).expect("serialises");
        let names: Vec<&str> = parameters
            .as_array()
            .expect("a list")
            .iter()
            .filter_map(|p| p["name"].as_str())
            .collect();
        assert_eq!(
            names,
            [
                "status", "tags", "tagMatch", "priority", "assignee", "parent"
            ]
        );
        assert_eq!(
            parameters[1],
            serde_json::json!({
                "name": "tags", "in": "query", "required": false,
                "description": "Only specs with all of these tags (exact, case-sensitive); see `tagMatch`. On the command line and in a query string, comma-separated values are several tags.",
                "schema": {"type": "array", "items": {"type": "string"}},
                "style": "form", "explode": false,
            })
        );
    }

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
            "get /api/results/{id}",
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
            "post /api/mcp-servers/{name}/trust",
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
