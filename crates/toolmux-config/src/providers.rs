//! The `providers` and `chat` sections: which hosted or local LLM APIs toolmux's own chat can
//! talk to, and how the chat loop behaves.

use std::collections::BTreeMap;
use std::num::{NonZeroU32, NonZeroUsize};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The wire format a provider speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ProviderKind {
    /// OpenAI's chat completions API, spoken by OpenAI, Ollama, vLLM, llama.cpp server and LM
    /// Studio (set `baseUrl` for anything but OpenAI itself).
    Openai,
    /// Anthropic's messages API.
    Anthropic,
    /// Google's Gemini API.
    Gemini,
}

/// One LLM API the chat can use.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(
    rename_all = "camelCase",
    deny_unknown_fields,
    expecting = "an object with `kind`, and optionally `baseUrl`, `apiKey` and `defaultModel`"
)]
pub struct ProviderSettings {
    /// The API it speaks.
    pub kind: ProviderKind,
    /// The API's base URL, up to and including the version segment
    /// (`http://localhost:11434/v1/` for Ollama). Default: the provider's public API.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// The API key. Write it as a `${VAR}` reference so the file never holds the secret.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key: Option<String>,
    /// The model used when a chat names none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_model: Option<String>,
}

/// How toolmux's own chat behaves.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(
    default,
    rename_all = "camelCase",
    deny_unknown_fields,
    expecting = "an object with `defaultProvider`, `maxSteps`, `maxToolResultBytes` and `sampling`"
)]
pub struct ChatSettings {
    /// The provider (a key of `providers`) used when a chat names none. Default: the only one,
    /// when exactly one is configured.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default_provider: Option<String>,
    /// The most model calls one turn may make before it stops with a message.
    pub max_steps: NonZeroU32,
    /// Tool results longer than this many bytes are cut before the model sees them (a tool's
    /// own `toolSettings.<name>.output` cap wins); the whole result is kept for a while as
    /// `toolmux://results/<id>`, which the `result_read` tool reads a page at a time.
    pub max_tool_result_bytes: NonZeroUsize,
    /// What the chat does when an MCP server asks to use the chat's model during a tool call
    /// (MCP sampling): `ask` (the default) asks the person each time, `allow` answers without
    /// asking, which spends your tokens on the server's behalf, and `deny` refuses without
    /// asking. A server's own `mcpServers.<name>.sampling` overrides it.
    pub sampling: SamplingPolicy,
}

/// What the chat does with an MCP server's request to use the chat's model (sampling).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SamplingPolicy {
    /// Ask the person each time, as a call with policy `ask` does.
    #[default]
    Ask,
    /// Answer without asking: the server spends your tokens on its own behalf.
    Allow,
    /// Refuse without asking; the server is told that configuration denies it.
    Deny,
}

impl SamplingPolicy {
    /// The value as it is written in the file.
    pub fn as_str(self) -> &'static str {
        match self {
            SamplingPolicy::Ask => "ask",
            SamplingPolicy::Allow => "allow",
            SamplingPolicy::Deny => "deny",
        }
    }
}

/// Twenty-five steps; checked at compile time.
const DEFAULT_MAX_STEPS: NonZeroU32 = NonZeroU32::new(25).expect("not zero");
/// 32 KiB; checked at compile time.
const DEFAULT_MAX_TOOL_RESULT_BYTES: NonZeroUsize = NonZeroUsize::new(32 * 1024).expect("not zero");

impl Default for ChatSettings {
    fn default() -> Self {
        Self {
            default_provider: None,
            max_steps: DEFAULT_MAX_STEPS,
            max_tool_result_bytes: DEFAULT_MAX_TOOL_RESULT_BYTES,
            sampling: SamplingPolicy::Ask,
        }
    }
}

/// Providers by the name chats refer to them with (`openai`, `local`).
pub type Providers = BTreeMap<String, ProviderSettings>;
