//! Conversions between the core's types and rmcp's wire types. The core's result type already has
//! MCP's shape, so this is field-for-field; nothing is lost on the way.

use std::collections::HashMap;
use std::sync::Arc;

use rmcp::model::{CallToolResult, ContentBlock, JsonObject, Tool};
use serde_json::Value;
use toolmux_core::{Catalog, Content, ContentBody, Policy, ToolEntry, ToolResult, ToolScope};
use toolmux_upstream::wire::annotations_to_wire;

/// The tools one server shows, computed once per catalog version: the wire descriptors in
/// catalog order and the way back from a served name to a registry name.
#[derive(Debug)]
pub(crate) struct View {
    /// The catalog version this view was made from.
    pub version: u64,
    /// The `tools/list` entries.
    pub tools: Vec<Tool>,
    /// Served name → (position in `tools`, registry name).
    index: HashMap<String, (usize, String)>,
    /// Served name → registry name of the tools these options would serve but a `deny` policy
    /// keeps from the list: a call to one still runs through the hub, which refuses it with
    /// the rule that denies it and logs the attempt.
    denied: HashMap<String, String>,
}

impl View {
    /// The view of `catalog` through `scope`: the tools offered to a model (internal and
    /// denied tools are never listed; see `Catalog::offered`).
    pub fn new(catalog: &Catalog, scope: &ToolScope) -> Self {
        let mut tools = Vec::new();
        let mut index = HashMap::new();
        let mut denied = HashMap::new();
        for entry in catalog.served_tools(scope) {
            let descriptor = &entry.descriptor;
            let Some(exposed) = scope.served_name(descriptor) else {
                continue;
            };
            if entry.policy == Policy::Deny {
                denied.insert(exposed.to_string(), descriptor.name.clone());
                continue;
            }
            if index.contains_key(exposed) {
                tracing::warn!(
                    tool = %descriptor.name,
                    served_as = exposed,
                    "two tools would be served under one name; keeping the first"
                );
                continue;
            }
            index.insert(exposed.to_string(), (tools.len(), descriptor.name.clone()));
            tools.push(wire_tool(exposed, entry));
        }
        Self {
            version: catalog.version(),
            tools,
            index,
            denied,
        }
    }

    /// The registry name of a served tool.
    pub fn registry_name(&self, served: &str) -> Option<&str> {
        self.index.get(served).map(|(_, name)| name.as_str())
    }

    /// The registry name of a tool that would be served but is denied by policy.
    pub fn denied(&self, served: &str) -> Option<&str> {
        self.denied.get(served).map(String::as_str)
    }

    /// A served tool's wire descriptor.
    pub fn tool(&self, served: &str) -> Option<&Tool> {
        self.index.get(served).map(|&(i, _)| &self.tools[i])
    }

    /// The served name closest to `name`, when one is close enough to be a likely typo.
    pub fn suggest(&self, name: &str) -> Option<&str> {
        self.index
            .keys()
            .map(|k| (strsim::jaro_winkler(name, k), k.as_str()))
            .filter(|(score, _)| *score >= 0.85)
            .max_by(|a, b| a.0.total_cmp(&b.0))
            .map(|(_, k)| k)
    }
}

/// A catalog entry as an MCP tool descriptor, under the name it is served as.
pub(crate) fn wire_tool(served_name: &str, entry: &ToolEntry) -> Tool {
    let descriptor = &entry.descriptor;
    let mut tool = Tool::new(
        served_name.to_string(),
        descriptor.description.clone(),
        schema_object(&descriptor.input_schema),
    );
    if let Some(title) = &descriptor.title {
        tool = tool.with_title(title.clone());
    }
    if let Some(output) = &descriptor.output_schema {
        tool = tool.with_raw_output_schema(Arc::new(schema_object(output)));
    }
    let hints = &descriptor.annotations;
    if !hints.is_empty() {
        tool = tool.with_annotations(annotations_to_wire(hints));
    }
    tool
}

/// MCP requires schemas to be objects. A source that declared something else (which the core's
/// validation would reject at call time anyway) is shown as accepting any object rather than
/// breaking the whole listing.
fn schema_object(schema: &Value) -> JsonObject {
    match schema {
        Value::Object(map) => map.clone(),
        _ => {
            let mut map = JsonObject::new();
            map.insert("type".into(), Value::String("object".into()));
            map
        }
    }
}

/// A core tool result as an MCP `tools/call` result.
pub(crate) fn wire_result(result: ToolResult) -> CallToolResult {
    let content = result.content.into_iter().map(wire_content).collect();
    let mut wire = if result.is_error {
        CallToolResult::error(content)
    } else {
        CallToolResult::success(content)
    };
    wire.structured_content = result.structured_content;
    wire
}

/// One content block. Plain text, the common case, is built directly; every other block goes
/// through its JSON form, which the core keeps in MCP's shape.
fn wire_content(content: Content) -> ContentBlock {
    if content.annotations.is_none()
        && content.meta.is_none()
        && let ContentBody::Text { text } = content.body
    {
        return ContentBlock::text(text);
    }
    let json = match serde_json::to_value(&content) {
        Ok(json) => json,
        Err(e) => return ContentBlock::text(format!("[unserializable content: {e}]")),
    };
    match serde_json::from_value::<ContentBlock>(json.clone()) {
        Ok(block) => block,
        // A block the wire types reject (a malformed URI, say) is still shown to the caller,
        // as its JSON text, rather than failing the whole call.
        Err(e) => {
            tracing::warn!(error = %e, "a content block does not fit MCP's shape; sending it as text");
            ContentBlock::text(json.to_string())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use toolmux_core::EmbeddedResource;

    #[test]
    fn results_keep_every_content_kind_and_structured_content() {
        let mut result = ToolResult::structured_with_text(json!({"n": 2}), "two");
        result.content.push(Content::from(ContentBody::Image {
            data: "AAAA".into(),
            mime_type: "image/png".into(),
        }));
        result.content.push(Content::from(ContentBody::Resource {
            resource: EmbeddedResource {
                uri: "file:///a.txt".into(),
                mime_type: Some("text/plain".into()),
                text: Some("a".into()),
                blob: None,
            },
        }));
        result
            .content
            .push(Content::from(ContentBody::ResourceLink {
                uri: "file:///b".into(),
                name: "b".into(),
                title: None,
                description: None,
                mime_type: None,
                size: Some(3),
            }));
        let wire = serde_json::to_value(wire_result(result)).expect("serializes");
        assert_eq!(
            wire,
            json!({
                "content": [
                    {"type": "text", "text": "two"},
                    {"type": "image", "data": "AAAA", "mimeType": "image/png"},
                    {"type": "resource", "resource": {"uri": "file:///a.txt", "mimeType": "text/plain", "text": "a"}},
                    {"type": "resource_link", "uri": "file:///b", "name": "b", "size": 3}
                ],
                "structuredContent": {"n": 2},
                "isError": false,
                "resultType": "complete"
            })
        );
    }

    #[test]
    fn error_results_are_flagged() {
        let wire = serde_json::to_value(wire_result(ToolResult::error("boom"))).expect("json");
        assert_eq!(wire["isError"], json!(true));
        assert_eq!(wire["content"][0]["text"], json!("boom"));
    }
}
