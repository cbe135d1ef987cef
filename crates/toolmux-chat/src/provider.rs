//! The provider seam: our own small trait over LLM APIs, and the message model the loop and the
//! conversation store share. Nothing outside `genai_provider` knows a provider SDK's types.

use futures::stream::BoxStream;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::ProviderError;

/// A tool call as the model made it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCall {
    /// The provider's id for the call, which its result must carry back.
    pub id: String,
    /// The registry name of the tool.
    pub name: String,
    /// The arguments object (a string when the model sent JSON that does not parse).
    pub arguments: Value,
    /// The tool's source (a built-in pack's id, `script`, or the MCP server's name), set by the
    /// loop from the catalog, never by a provider, and kept so that a reopened conversation
    /// badges the call as the live one did (also while it still runs); the model never sees
    /// it. `None` for a tool the catalog does not have.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

/// One message of a conversation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "role",
    rename_all = "lowercase",
    rename_all_fields = "camelCase"
)]
pub enum Message {
    /// What the person wrote.
    User {
        /// The text.
        text: String,
    },
    /// What the model answered: text, tool calls, or both.
    Assistant {
        /// The text (may be empty).
        text: String,
        /// The tool calls, in the order the model made them.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCall>,
    },
    /// The result of one tool call, as the model sees it.
    Tool {
        /// The call it answers.
        call_id: String,
        /// The tool.
        name: String,
        /// The (possibly cut) result text.
        content: String,
        /// Whether the call failed or was refused.
        is_error: bool,
        /// The execution-log id of the call, where the full result is kept.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        log_id: Option<String>,
        /// How long the pipeline took, in milliseconds, kept so that a reopened conversation
        /// shows it as the live card did; the model never sees it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        duration_ms: Option<u64>,
        /// The tool's structured content, for the person's result views; kept only when it is
        /// no larger than the chat's tool-result limit (the execution log keeps all of it).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        structured: Option<Value>,
        /// The images and audio the tool returned, for the person's card; kept only when they
        /// are no larger together than the chat's tool-result limit, as `structured`.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        media: Vec<toolmux_core::Content>,
    },
}

/// A tool offered to the model.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolSpec {
    /// The registry name.
    pub name: String,
    /// What it does.
    pub description: String,
    /// The JSON Schema of its arguments, already cleaned for the provider.
    pub schema: Value,
}

/// One request to the model: a whole conversation so far.
#[derive(Clone, Debug)]
pub struct ModelRequest {
    /// The model id.
    pub model: String,
    /// The system prompt.
    pub system: String,
    /// The conversation.
    pub messages: Vec<Message>,
    /// The tools the model may call (shared: the same list serves every step until the
    /// catalog changes).
    pub tools: std::sync::Arc<[ToolSpec]>,
    /// The most tokens the answer may take; the provider's default when `None` (a sampling
    /// request from an MCP server names its own limit).
    pub max_tokens: Option<u32>,
}

/// Token counts of one model call.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    /// Tokens read.
    pub input_tokens: u64,
    /// Tokens written.
    pub output_tokens: u64,
}

/// What a provider's stream yields.
#[derive(Clone, Debug, PartialEq)]
pub enum ProviderEvent {
    /// More answer text.
    TextDelta(String),
    /// A tool call is being written; `arguments` is everything received so far (providers send
    /// arguments in pieces; this is the concatenation, not the piece).
    ToolCallDelta {
        /// The call's id.
        id: String,
        /// The tool.
        name: String,
        /// The argument text received so far.
        arguments: String,
    },
    /// A complete tool call.
    ToolCall(ToolCall),
    /// Token counts.
    Usage(Usage),
    /// The model finished this call; the reason is the provider's own (`stop`, `tool_calls`).
    Finish {
        /// Why it stopped, when the provider said.
        reason: Option<String>,
    },
}

/// A stream of provider events; it ends after `Finish`, or with an error.
pub type ProviderStream = BoxStream<'static, Result<ProviderEvent, ProviderError>>;

/// An LLM API the chat can talk to.
#[async_trait::async_trait]
pub trait ChatProvider: Send + Sync {
    /// The name it is configured under.
    fn name(&self) -> &str;

    /// The model used when a chat names none.
    fn default_model(&self) -> Option<&str>;

    /// Starts one streaming model call.
    async fn stream(&self, request: ModelRequest) -> Result<ProviderStream, ProviderError>;

    /// The models the API offers.
    async fn models(&self) -> Result<Vec<String>, ProviderError>;
}
