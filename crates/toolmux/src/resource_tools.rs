//! The `resources` source: `list_resources` and `read_resource`, the MCP resources (the upstream
//! servers' and toolmux's own `spec://…`) as tools, through the one relay that serves MCP's
//! `resources/*` and REST's `/api/resources`. A model reaches resources only by calling a tool —
//! the chat's above all, which has no other way (issue 29) — so they are registry tools, on every
//! channel like any other (an MCP client's own `resources/read` is for its person; many clients
//! give their model no way to read resources at all).
//!
//! What a server says is shown to a model only as the trust layer's cleaning leaves it
//! (`toolmux_trust::visible_value`: no invisible or bidirectional-control characters), as its
//! tool descriptions are.

use std::sync::Arc;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use toolmux_core::{
    BuiltinResources, Source, SourceCall, SourceError, SourceKind, ToolAnnotations, ToolDescriptor,
    ToolErrorKind, ToolResult, WeakHub, input_schema, parse_arguments,
};
use toolmux_upstream::{Relay, RelayError, Upstreams};

use crate::rest_upstreams::{from_json, served, to_json};

/// The source's id.
pub const SOURCE_ID: &str = "resources";

/// The resources of the upstream servers and toolmux's own, as tools.
pub struct ResourceTools {
    upstreams: Arc<Upstreams>,
    resources: BuiltinResources,
    /// The hub whose catalog scopes toolmux's own resources (held weakly: the hub owns its
    /// sources).
    hub: WeakHub,
    tools: Vec<ToolDescriptor>,
}

impl ResourceTools {
    pub fn new(upstreams: Arc<Upstreams>, resources: BuiltinResources, hub: WeakHub) -> Self {
        Self {
            upstreams,
            resources,
            hub,
            tools: descriptors(),
        }
    }

    async fn list(&self, relay: Relay<'_>, args: ListArgs) -> ToolResult {
        let server = args.server.as_deref();
        let of_server = |item: &Value| server.is_none_or(|s| item["server"] == s);
        let resources: Vec<Value> = served(relay.resources().await)
            .into_iter()
            .filter(of_server)
            .collect();
        let templates: Vec<Value> = served(relay.resource_templates())
            .into_iter()
            .filter(of_server)
            .collect();
        let value = clean(json!({
            "count": resources.len(),
            "resources": resources,
            "templates": templates,
        }));
        let line = |item: &Value, key: &str| {
            let mut line = format!(
                "{} ({}",
                item[key].as_str().unwrap_or_default(),
                item["name"].as_str().unwrap_or_default()
            );
            if let Some(server) = item["server"].as_str() {
                line.push_str(&format!(", server `{server}`"));
            }
            line.push(')');
            if let Some(description) = item["description"].as_str() {
                line.push_str(&format!(": {description}"));
            }
            line
        };
        let mut text: Vec<String> = value["resources"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|r| line(r, "uri"))
            .collect();
        if text.is_empty() {
            text.push("no resources".to_string());
        }
        let templates: Vec<String> = value["templates"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|t| line(t, "uriTemplate"))
            .collect();
        if !templates.is_empty() {
            text.push("templates (read with the placeholders filled in):".to_string());
            text.extend(templates);
        }
        ToolResult::structured_with_text(value, text.join("\n"))
    }

    async fn read(&self, relay: Relay<'_>, args: ReadArgs) -> ToolResult {
        let read = match from_json(json!({ "uri": args.uri })) {
            Ok(request) => to_json(relay.read_resource(request).await),
            Err(e) => Err(e),
        };
        let value = match read {
            Ok(value) => clean(value),
            Err(e @ RelayError::NotFound(_)) => {
                return ToolResult::kind_error(ToolErrorKind::NotFound, e.to_string());
            }
            Err(e @ RelayError::Invalid(_)) => {
                return ToolResult::kind_error(ToolErrorKind::Invalid, e.to_string());
            }
            Err(e) => return ToolResult::error(e.to_string()),
        };
        let text: Vec<String> = value["contents"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|part| match part["text"].as_str() {
                Some(text) => text.to_string(),
                None => format!(
                    "[{} content of {} base64 characters, not shown as text]",
                    part["mimeType"].as_str().unwrap_or("binary"),
                    part["blob"].as_str().map_or(0, str::len)
                ),
            })
            .collect();
        ToolResult::structured_with_text(value, text.join("\n\n"))
    }
}

/// A server's JSON as a model may see it: every string and key through the trust layer's
/// cleaning.
fn clean(value: Value) -> Value {
    toolmux_trust::visible_value(&value).unwrap_or(value)
}

/// `list_resources`' arguments.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ListArgs {
    /// Only this MCP server's resources (its name).
    server: Option<String>,
}

/// `read_resource`'s arguments.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ReadArgs {
    /// The resource's URI.
    #[schemars(length(min = 1))]
    uri: String,
}

fn descriptors() -> Vec<ToolDescriptor> {
    let read_only = ToolAnnotations {
        read_only_hint: Some(true),
        // The upstream servers' resources are whatever they serve.
        open_world_hint: Some(true),
        ..ToolAnnotations::default()
    };
    let mut list = ToolDescriptor::new(
        SOURCE_ID,
        "list_resources",
        "Lists the MCP resources you can read with read_resource: the connected MCP servers' \
         (documents, files, records they offer by URI) and toolmux's own (specs as \
         spec://NNN-name), each with its URI, name, server and description, and the servers' \
         URI templates.",
        input_schema::<ListArgs>(),
    );
    list.annotations = read_only.clone();
    let mut read = ToolDescriptor::new(
        SOURCE_ID,
        "read_resource",
        "Reads one MCP resource by its URI (from list_resources, or a template with its \
         placeholders filled in) and returns its contents.",
        input_schema::<ReadArgs>(),
    );
    read.annotations = read_only;
    vec![list, read]
}

#[async_trait]
impl Source for ResourceTools {
    fn id(&self) -> &str {
        SOURCE_ID
    }

    fn kind(&self) -> SourceKind {
        SourceKind::Builtin
    }

    fn description(&self) -> Option<String> {
        Some(
            "the MCP resources of the connected servers and toolmux's specs: list and read \
             them by URI"
                .to_string(),
        )
    }

    fn tools(&self) -> Vec<ToolDescriptor> {
        self.tools.clone()
    }

    async fn call(&self, call: SourceCall<'_>) -> Result<ToolResult, SourceError> {
        let hub = self
            .hub
            .upgrade()
            .ok_or_else(|| SourceError::Unavailable("toolmux is shutting down".into()))?;
        // The call's scope (a skill's, a delegated task's) limits the servers it reaches, as
        // it limits their tools.
        let relay = Relay::new(Some(&self.upstreams), call.context.scope.as_deref())
            .with_builtin(&self.resources, hub.catalog());
        let invalid = |e: String| ToolResult::kind_error(ToolErrorKind::Invalid, e);
        Ok(match call.tool.original_name.as_str() {
            "list_resources" => match parse_arguments(&call.arguments) {
                Ok(args) => self.list(relay, args).await,
                Err(e) => invalid(e),
            },
            "read_resource" => match parse_arguments(&call.arguments) {
                Ok(args) => self.read(relay, args).await,
                Err(e) => invalid(e),
            },
            other => ToolResult::error(format!("the resources source has no tool `{other}`")),
        })
    }
}
