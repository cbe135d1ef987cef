//! What a tool is and what a call returns. The result shape is MCP's, because it is the richest
//! of the wire formats we speak; other channels render it down.

use std::sync::Arc;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::duration::opt_millis;
use crate::policy::Policy;

/// Behaviour hints a tool declares about itself (MCP's tool annotations). Policies take their
/// defaults from them: a read-only tool may run without asking, a destructive one asks.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolAnnotations {
    /// The tool does not modify its environment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only_hint: Option<bool>,
    /// The tool may perform destructive updates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destructive_hint: Option<bool>,
    /// Calling the tool twice with the same arguments has no additional effect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent_hint: Option<bool>,
    /// The tool interacts with an open world of external entities (the web, other people).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_world_hint: Option<bool>,
}

impl ToolAnnotations {
    /// Annotations of a tool that only reads.
    pub fn read_only() -> Self {
        Self {
            read_only_hint: Some(true),
            destructive_hint: Some(false),
            idempotent_hint: Some(true),
            open_world_hint: Some(false),
        }
    }

    /// True when no hint is set.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

/// At most `requests` calls per `period`, per tool.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RateLimit {
    /// Calls allowed in one period (also the burst size).
    pub requests: u32,
    /// The length of the period.
    #[serde(with = "period_text")]
    pub period: Duration,
}

/// Rate-limit periods are written like `"1m"` in configuration and read back the same way.
mod period_text {
    use serde::{Deserialize, Deserializer, Serializer, de::Error};
    use std::time::Duration;

    pub fn serialize<S: Serializer>(value: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format!("{}ms", value.as_millis()))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let text = String::deserialize(d)?;
        crate::duration::parse_duration(&text).map_err(D::Error::custom)
    }
}

/// Everything the registry knows about one tool.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolDescriptor {
    /// The registry name, unique across sources (`grep`, `github__create_issue`).
    pub name: String,
    /// The name the source itself uses for the tool (what is sent to an upstream server).
    pub original_name: String,
    /// The id of the source that provides the tool (`workspace`, `github`).
    pub source: String,
    /// A human-readable title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the tool does, for a model and for a person.
    pub description: String,
    /// JSON Schema (draft 2020-12 unless it says otherwise) of the arguments object.
    pub input_schema: Arc<Value>,
    /// JSON Schema of the structured result, when the tool declares one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Arc<Value>>,
    /// Behaviour hints.
    #[serde(default, skip_serializing_if = "ToolAnnotations::is_empty")]
    pub annotations: ToolAnnotations,
    /// Host-only tools (configuration, secrets, health): never listed to a model or MCP client.
    #[serde(default)]
    pub internal: bool,
    /// The tool may run concurrently with other parallel tools of a batch.
    #[serde(default)]
    pub parallel: bool,
    /// The source's own time limit for the tool; configuration may override it.
    #[serde(
        default,
        rename = "timeoutMs",
        with = "opt_millis",
        skip_serializing_if = "Option::is_none"
    )]
    pub timeout: Option<Duration>,
    /// The source's own rate limit for the tool; configuration may override it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_limit: Option<RateLimit>,
    /// A policy the source asks for (for example a per-server setting); explicit configuration
    /// rules for the tool's name still win.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<Policy>,
    /// Why the source holds the tool back until a person accepts it (an upstream tool whose
    /// definition changed since it was pinned): it is left out of the catalog, and a call
    /// is refused with this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held: Option<String>,
    /// Configuration renamed the tool (`toolSettings.<name>.name`, a derived tool): callers
    /// know it by its registry name alone, never by its source's name.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub renamed: bool,
    /// Offered only by a channel that names it among its entry points (discovery mode's
    /// `describe_tool` and `call_tool`): left out of every other listing, and a call to it
    /// from elsewhere is an unknown tool.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub entry_point: bool,
}

impl ToolDescriptor {
    /// A descriptor with the required parts; the rest start empty.
    pub fn new(
        source: impl Into<String>,
        name: impl Into<String>,
        description: impl Into<String>,
        input_schema: Value,
    ) -> Self {
        let name = name.into();
        Self {
            original_name: name.clone(),
            name,
            source: source.into(),
            title: None,
            description: description.into(),
            input_schema: Arc::new(input_schema),
            output_schema: None,
            annotations: ToolAnnotations::default(),
            internal: false,
            parallel: false,
            timeout: None,
            rate_limit: None,
            policy: None,
            held: None,
            renamed: false,
            entry_point: false,
        }
    }

    /// The tool's name within its source as callers see it (code mode's function names,
    /// pass-through listings): the source's own name, unless configuration renamed the tool.
    pub fn local_name(&self) -> &str {
        if self.renamed {
            &self.name
        } else {
            &self.original_name
        }
    }
}

/// One block of a tool result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Content {
    /// The block itself.
    #[serde(flatten)]
    pub body: ContentBody,
    /// Audience and priority hints, passed through untouched.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Value>,
    /// Extra metadata, passed through untouched.
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Value>,
}

/// The kinds of content a tool can return.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "type",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum ContentBody {
    /// Plain text.
    Text {
        /// The text.
        text: String,
    },
    /// An image, base64-encoded.
    Image {
        /// Base64 data.
        data: String,
        /// For example `image/png`.
        mime_type: String,
    },
    /// Audio, base64-encoded.
    Audio {
        /// Base64 data.
        data: String,
        /// For example `audio/wav`.
        mime_type: String,
    },
    /// A link to a resource the client may fetch.
    ResourceLink {
        /// The resource URI.
        uri: String,
        /// A short name.
        name: String,
        /// A display title.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        title: Option<String>,
        /// What the resource is.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        description: Option<String>,
        /// Its MIME type.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
        /// Its size in bytes.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        size: Option<u64>,
    },
    /// A resource whose contents are embedded in the result.
    Resource {
        /// The resource.
        resource: EmbeddedResource,
    },
}

/// The contents of an embedded resource: text or a base64 blob.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EmbeddedResource {
    /// The resource URI.
    pub uri: String,
    /// Its MIME type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Text contents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Binary contents, base64-encoded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blob: Option<String>,
}

impl Content {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self::from(ContentBody::Text { text: text.into() })
    }

    /// The text of a text block.
    pub fn as_text(&self) -> Option<&str> {
        match &self.body {
            ContentBody::Text { text } => Some(text),
            _ => None,
        }
    }
}

impl From<ContentBody> for Content {
    fn from(body: ContentBody) -> Self {
        Self {
            body,
            annotations: None,
            meta: None,
        }
    }
}

/// What a tool call returns: content blocks, optional structured content, and whether the tool
/// reports an error. A tool-level error is a result, not a `CallError`: the caller (often a
/// model) reads it and may correct itself.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolResult {
    /// The blocks, in order.
    pub content: Vec<Content>,
    /// Machine-readable result, matching the output schema when the tool declares one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    /// The tool reports that it failed.
    #[serde(default)]
    pub is_error: bool,
}

impl ToolResult {
    /// A successful text result.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            content: vec![Content::text(text)],
            structured_content: None,
            is_error: false,
        }
    }

    /// A successful structured result, with its JSON text as the content block for clients that
    /// read only content.
    pub fn structured(value: Value) -> Self {
        Self {
            content: vec![Content::text(value.to_string())],
            structured_content: Some(value),
            is_error: false,
        }
    }

    /// A structured result with a human-readable text block of its own.
    pub fn structured_with_text(value: Value, text: impl Into<String>) -> Self {
        Self {
            content: vec![Content::text(text)],
            structured_content: Some(value),
            is_error: false,
        }
    }

    /// A tool-level error with a message.
    pub fn error(message: impl Into<String>) -> Self {
        Self {
            content: vec![Content::text(message)],
            structured_content: None,
            is_error: true,
        }
    }

    /// A tool-level error of a known kind: the message for whoever reads it (often a model),
    /// and `structuredContent: {"error": {"kind", "message"}}` so that a channel can answer in
    /// its own terms (REST: 404 for `not_found`, 409 for `conflict`, 422 for `invalid`).
    pub fn kind_error(kind: ToolErrorKind, message: impl Into<String>) -> Self {
        let message = message.into();
        Self {
            content: vec![Content::text(message.clone())],
            structured_content: Some(serde_json::json!({
                "error": { "kind": kind.as_str(), "message": message }
            })),
            is_error: true,
        }
    }

    /// A tool-level error of a kind when the failure has one, else a plain one: how a pack turns
    /// its own error (whose `kind()` says not found, conflict, invalid or nothing) into a result.
    pub fn failure(kind: Option<ToolErrorKind>, message: impl Into<String>) -> Self {
        match kind {
            Some(kind) => Self::kind_error(kind, message),
            None => Self::error(message),
        }
    }

    /// The kind of a tool-level error made with [`ToolResult::kind_error`]; `None` for a
    /// result that is not an error or whose tool did not say.
    pub fn error_kind(&self) -> Option<ToolErrorKind> {
        if !self.is_error {
            return None;
        }
        let kind = self
            .structured_content
            .as_ref()?
            .get("error")?
            .get("kind")?;
        ToolErrorKind::parse(kind.as_str()?)
    }

    /// All text blocks joined by newlines.
    pub fn text_content(&self) -> String {
        let mut out = String::new();
        for text in self.content.iter().filter_map(Content::as_text) {
            if !out.is_empty() {
                out.push('\n');
            }
            out.push_str(text);
        }
        out
    }
}

/// What kind of failure a tool reports (see [`ToolResult::kind_error`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ToolErrorKind {
    /// What the call names does not exist (a file, a spec).
    NotFound,
    /// The thing changed since the caller read it, or the name is ambiguous: read again.
    Conflict,
    /// The request cannot be carried out as asked (a bad value, a refused transition).
    Invalid,
}

impl ToolErrorKind {
    /// The stable name on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::NotFound => "not_found",
            Self::Conflict => "conflict",
            Self::Invalid => "invalid",
        }
    }

    fn parse(name: &str) -> Option<Self> {
        [Self::NotFound, Self::Conflict, Self::Invalid]
            .into_iter()
            .find(|k| k.as_str() == name)
    }
}

/// The arguments of a call: a JSON object. `null` or a missing body counts as `{}`.
pub(crate) fn arguments_object(value: Value) -> Result<Map<String, Value>, Value> {
    match value {
        Value::Object(map) => Ok(map),
        Value::Null => Ok(Map::new()),
        other => Err(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn content_round_trips_in_mcp_shape() {
        let wire = json!([
            {"type": "text", "text": "hi", "annotations": {"audience": ["user"]}},
            {"type": "image", "data": "AAAA", "mimeType": "image/png"},
            {"type": "audio", "data": "AAAA", "mimeType": "audio/wav"},
            {"type": "resource_link", "uri": "file:///a", "name": "a", "mimeType": "text/plain"},
            {"type": "resource", "resource": {"uri": "file:///b", "text": "b", "mimeType": "text/plain"}, "_meta": {"k": 1}}
        ]);
        let content: Vec<Content> = serde_json::from_value(wire.clone()).expect("parses");
        assert_eq!(content.len(), 5);
        assert_eq!(serde_json::to_value(&content).expect("serializes"), wire);
    }

    #[test]
    fn text_content_joins_text_blocks_only() {
        let mut result = ToolResult::text("one");
        result.content.push(Content::from(ContentBody::Image {
            data: String::new(),
            mime_type: "image/png".into(),
        }));
        result.content.push(Content::text("two"));
        assert_eq!(result.text_content(), "one\ntwo");
    }

    #[test]
    fn a_kind_error_carries_its_kind_and_message_and_others_have_none() {
        let result = ToolResult::kind_error(ToolErrorKind::Conflict, "changed since read");
        assert!(result.is_error);
        assert_eq!(result.text_content(), "changed since read");
        assert_eq!(result.error_kind(), Some(ToolErrorKind::Conflict));
        assert_eq!(
            result.structured_content,
            Some(json!({"error": {"kind": "conflict", "message": "changed since read"}}))
        );
        assert_eq!(ToolResult::error("plain").error_kind(), None);
        // A successful result whose data happens to look like an error is not one.
        let lookalike = ToolResult::structured(json!({"error": {"kind": "not_found"}}));
        assert_eq!(lookalike.error_kind(), None);
    }
}
