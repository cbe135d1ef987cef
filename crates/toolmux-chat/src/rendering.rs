//! How tools and their results are put to a model and shown to a person: the offered tool
//! specs, a result as model text, previews, and results cut to the configured size.

use serde_json::Value;
use toolmux_config::ProviderKind;
use toolmux_core::{Catalog, Content, ContentBody, ToolResult};

use crate::provider::ToolSpec;
use crate::schema::clean_schema;

/// The tools offered to the model: the catalog's non-internal, non-denied tools with schemas
/// cleaned for the provider.
pub fn tool_specs(catalog: &Catalog, kind: ProviderKind) -> Vec<ToolSpec> {
    catalog
        .offered()
        .map(|e| ToolSpec {
            name: e.descriptor.name.clone(),
            description: e.descriptor.description.clone(),
            schema: clean_schema(kind, &e.descriptor.input_schema),
        })
        .collect()
}

/// A result as text for the model: its text blocks; the structured content when there is no
/// text; a line for each block a text model cannot read.
pub(crate) fn model_text(result: &ToolResult) -> String {
    let mut out = String::new();
    for block in &result.content {
        let piece = match &block.body {
            ContentBody::Text { text } => text.clone(),
            ContentBody::Image { mime_type, .. } | ContentBody::Audio { mime_type, .. } => {
                format!("[{mime_type} content, not shown]")
            }
            ContentBody::ResourceLink { uri, .. } => format!("[resource {uri}]"),
            ContentBody::Resource { resource } => resource
                .text
                .clone()
                .unwrap_or_else(|| format!("[resource {}]", resource.uri)),
        };
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(&piece);
    }
    if out.is_empty()
        && let Some(structured) = &result.structured_content
    {
        out = structured.to_string();
    }
    if result.is_error && out.is_empty() {
        out = "the tool reported an error without a message".into();
    }
    out
}

/// A prompt's messages (MCP's `prompts/get` result, an upstream server's) as the text of the
/// person's message that uses the prompt: each message's content as a model reads a tool
/// result's block, an assistant's marked as such, and all of it as the trust layer's cleaning
/// leaves it (`toolmux_trust::visible`), as the servers' tool descriptions are.
pub fn prompt_text(result: &Value) -> String {
    let parts: Vec<String> = result["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|message| {
            let text = match serde_json::from_value::<Content>(message["content"].clone()) {
                Ok(block) => model_text(&ToolResult {
                    content: vec![block],
                    structured_content: None,
                    is_error: false,
                }),
                Err(e) => format!("[a message toolmux cannot read: {e}]"),
            };
            match message["role"].as_str() {
                Some("assistant") => format!("(assistant) {text}"),
                _ => text,
            }
        })
        .collect();
    toolmux_trust::visible(&parts.join("\n\n")).into_owned()
}

/// The first `max` characters of `text` on one line, with an ellipsis when cut: how a long
/// text (arguments, a result, a request) is shown to a person at a glance.
pub fn preview(text: &str, max: usize) -> String {
    let one_line = text.replace('\n', " ");
    if one_line.chars().count() <= max {
        one_line
    } else {
        format!("{}…", one_line.chars().take(max).collect::<String>())
    }
}
