//! [`ChatProvider`] on the `genai` crate: OpenAI-compatible chat completions (any base URL),
//! Anthropic messages and Gemini. This is the only module that knows genai's types.
//!
//! Every call names a complete `ServiceTarget` (endpoint, key, adapter), so genai never guesses
//! the provider from the model's name and never reads an environment variable of its own: what
//! the configuration says is what is used.

use futures::StreamExt;
use genai::adapter::AdapterKind;
use genai::chat::{
    ChatMessage, ChatOptions, ChatRequest, ChatStreamEvent, MessageContent, Tool, ToolResponse,
};
use genai::resolver::{AuthData, Endpoint};
use genai::{Client, ModelIden, ServiceTarget};
use toolmux_config::{ProviderKind, ProviderSettings};

use crate::error::ProviderError;
use crate::provider::{
    ChatProvider, Message, ModelRequest, ProviderEvent, ProviderStream, ToolCall, Usage,
};

/// A configured LLM API reached through genai.
pub struct GenaiProvider {
    name: String,
    kind: ProviderKind,
    endpoint: String,
    api_key: Option<String>,
    default_model: Option<String>,
    client: Client,
}

impl std::fmt::Debug for GenaiProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GenaiProvider")
            .field("name", &self.name)
            .field("kind", &self.kind)
            .field("endpoint", &self.endpoint)
            .field("api_key", &self.api_key.as_ref().map(|_| "***"))
            .finish_non_exhaustive()
    }
}

/// The public API of each kind, used when `baseUrl` is not set.
fn default_base_url(kind: ProviderKind) -> &'static str {
    match kind {
        ProviderKind::Openai => "https://api.openai.com/v1/",
        ProviderKind::Anthropic => "https://api.anthropic.com/v1/",
        ProviderKind::Gemini => "https://generativelanguage.googleapis.com/v1beta/",
    }
}

fn adapter(kind: ProviderKind) -> AdapterKind {
    match kind {
        ProviderKind::Openai => AdapterKind::OpenAI,
        ProviderKind::Anthropic => AdapterKind::Anthropic,
        ProviderKind::Gemini => AdapterKind::Gemini,
    }
}

impl GenaiProvider {
    /// A provider from its configuration.
    pub fn new(name: &str, settings: &ProviderSettings) -> Result<Self, ProviderError> {
        let mut endpoint = settings
            .base_url
            .clone()
            .unwrap_or_else(|| default_base_url(settings.kind).to_string());
        if !(endpoint.starts_with("http://") || endpoint.starts_with("https://")) {
            return Err(ProviderError::Config {
                provider: name.to_string(),
                message: format!("`baseUrl` must start with http:// or https://, not `{endpoint}`"),
            });
        }
        // genai joins paths (`chat/completions`, `messages`) onto the base URL.
        if !endpoint.ends_with('/') {
            endpoint.push('/');
        }
        let client = Client::new().map_err(|e| ProviderError::Config {
            provider: name.to_string(),
            message: format!(
                "cannot build the HTTP client: {}",
                first_line(&e.to_string())
            ),
        })?;
        Ok(Self {
            name: name.to_string(),
            kind: settings.kind,
            endpoint,
            api_key: settings.api_key.clone().filter(|k| !k.is_empty()),
            default_model: settings.default_model.clone(),
            client,
        })
    }

    /// The kind of API it speaks.
    pub fn kind(&self) -> ProviderKind {
        self.kind
    }

    fn auth(&self) -> AuthData {
        // Local OpenAI-compatible servers (Ollama, llama.cpp) take no key, but genai's OpenAI
        // adapter always sends a bearer header; any value will do for them.
        AuthData::from_single(self.api_key.clone().unwrap_or_else(|| "none".to_string()))
    }

    fn target(&self, model: &str) -> ServiceTarget {
        ServiceTarget {
            endpoint: Endpoint::from_owned(self.endpoint.clone()),
            auth: self.auth(),
            model: ModelIden::new(adapter(self.kind), model.to_string()),
        }
    }

    fn error(&self, error: &genai::Error) -> ProviderError {
        provider_error(&self.name, error)
    }
}

/// A genai failure as a [`ProviderError`] a person can act on.
fn provider_error(provider: &str, error: &genai::Error) -> ProviderError {
    // A streaming call reports an HTTP error status from inside the stream, wrapped.
    if let genai::Error::WebStream {
        error: inner,
        cause,
        ..
    } = error
    {
        if let Some(inner) = inner.downcast_ref::<genai::Error>() {
            return provider_error(provider, inner);
        }
        if let Some(webc) = inner.downcast_ref::<genai::webc::Error>()
            && let Some(status) = webc.status()
        {
            return ProviderError::Status {
                provider: provider.to_string(),
                status: status.as_u16(),
                message: message_of(&webc.to_string()),
                retry_after: retry_after(webc.headers()),
            };
        }
        // Anything else that breaks a stream that was flowing is the connection going away.
        return ProviderError::Dropped {
            provider: provider.to_string(),
            cause: Some(first_line(cause)).filter(|c| !c.is_empty()),
        };
    }
    if let Some(status) = error.status() {
        return ProviderError::Status {
            provider: provider.to_string(),
            status: status.as_u16(),
            message: message_of(&error.to_string()),
            retry_after: retry_after(error.headers()),
        };
    }
    ProviderError::Transport {
        provider: provider.to_string(),
        message: first_line(&error.to_string()),
    }
}

fn retry_after(headers: Option<&reqwest::header::HeaderMap>) -> Option<String> {
    headers
        .and_then(|h| h.get("retry-after"))
        .and_then(|v| v.to_str().ok())
        .map(|v| format!("{v}s"))
}

/// The provider's own message out of an error's text, whose body is JSON
/// (`{"error": {"message": ..}}` in OpenAI's, Anthropic's and Gemini's formats), else the
/// body's first line.
fn message_of(text: &str) -> String {
    let body = text
        .split_once("Response body:")
        .or_else(|| text.split_once("Body:"))
        .map(|(_, b)| b.trim())
        .unwrap_or(text);
    if let Ok(value) = serde_json::from_str::<serde_json::Value>(body)
        && let Some(message) = value
            .pointer("/error/message")
            .or_else(|| value.pointer("/message"))
            .and_then(|m| m.as_str())
    {
        return message.to_string();
    }
    first_line(body)
}

fn first_line(text: &str) -> String {
    let line = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    line.chars().take(500).collect()
}

fn to_genai_messages(messages: &[Message]) -> Vec<ChatMessage> {
    messages
        .iter()
        .map(|message| match message {
            Message::User { text } => ChatMessage::user(text.clone()),
            Message::Assistant { text, tool_calls } => {
                let mut content = MessageContent::from_text(text.clone());
                if text.is_empty() {
                    content = MessageContent::from_parts(Vec::new());
                }
                if !tool_calls.is_empty() {
                    let calls = tool_calls
                        .iter()
                        .map(|c| genai::chat::ToolCall {
                            call_id: c.id.clone(),
                            fn_name: c.name.clone(),
                            fn_arguments: c.arguments.clone(),
                            thought_signatures: None,
                        })
                        .collect();
                    content.extend(MessageContent::from_tool_calls(calls));
                }
                ChatMessage::assistant(content)
            }
            Message::Tool {
                call_id,
                name,
                content,
                ..
            } => ChatMessage::from(
                ToolResponse::new(call_id.clone(), content.clone()).with_fn_name(name.clone()),
            ),
        })
        .collect()
}

#[async_trait::async_trait]
impl ChatProvider for GenaiProvider {
    fn name(&self) -> &str {
        &self.name
    }

    fn default_model(&self) -> Option<&str> {
        self.default_model.as_deref()
    }

    async fn stream(&self, request: ModelRequest) -> Result<ProviderStream, ProviderError> {
        let tools: Vec<Tool> = request
            .tools
            .iter()
            .map(|t| {
                Tool::new(t.name.clone())
                    .with_description(t.description.clone())
                    .with_schema(t.schema.clone())
            })
            .collect();
        let mut chat = ChatRequest::new(to_genai_messages(&request.messages));
        // A sampling request may come without a system prompt; an empty one is not sent.
        if !request.system.is_empty() {
            chat = chat.with_system(request.system.clone());
        }
        if !tools.is_empty() {
            chat = chat.with_tools(tools);
        }
        // Tool-call chunks then carry the arguments received so far, and the end event the
        // complete calls; usage comes with the end event.
        let mut options = ChatOptions::default()
            .with_capture_tool_calls(true)
            .with_capture_usage(true);
        if let Some(max) = request.max_tokens {
            options = options.with_max_tokens(max);
        }
        let response = self
            .client
            .exec_chat_stream(self.target(&request.model), chat, Some(&options))
            .await
            .map_err(|e| self.error(&e))?;
        let provider = self.name.clone();
        let events = response
            .stream
            .map(move |item| convert(&provider, item))
            .flat_map(futures::stream::iter);
        Ok(ensure_finished(self.name.clone(), events).boxed())
    }

    async fn models(&self) -> Result<Vec<String>, ProviderError> {
        let config = genai::resolver::ProviderConfig::from_endpoint(Endpoint::from_owned(
            self.endpoint.clone(),
        ))
        .with_auth(self.auth());
        self.client
            .all_model_names(adapter(self.kind), config)
            .await
            .map_err(|e| self.error(&e))
    }
}

fn convert(
    provider: &str,
    item: Result<ChatStreamEvent, genai::Error>,
) -> Vec<Result<ProviderEvent, ProviderError>> {
    let event = match item {
        Ok(event) => event,
        Err(e) => return vec![Err(provider_error(provider, &e))],
    };
    match event {
        ChatStreamEvent::Chunk(chunk) if !chunk.content.is_empty() => {
            vec![Ok(ProviderEvent::TextDelta(chunk.content))]
        }
        ChatStreamEvent::ToolCallChunk(chunk) => {
            let call = chunk.tool_call;
            let arguments = match call.fn_arguments {
                serde_json::Value::String(s) => s,
                other => other.to_string(),
            };
            vec![Ok(ProviderEvent::ToolCallDelta {
                id: call.call_id,
                name: call.fn_name,
                arguments,
            })]
        }
        ChatStreamEvent::End(end) => {
            let mut out = Vec::new();
            if let Some(content) = &end.captured_content {
                for call in content.tool_calls() {
                    out.push(Ok(ProviderEvent::ToolCall(ToolCall {
                        id: call.call_id.clone(),
                        name: call.fn_name.clone(),
                        arguments: parse_arguments(&call.fn_arguments),
                        source: None,
                    })));
                }
            }
            if let Some(usage) = &end.captured_usage {
                let tokens = |v: Option<i32>| v.map(|n| n.max(0) as u64).unwrap_or(0);
                out.push(Ok(ProviderEvent::Usage(Usage {
                    input_tokens: tokens(usage.prompt_tokens),
                    output_tokens: tokens(usage.completion_tokens),
                })));
            }
            let reason = end.captured_stop_reason.as_ref().map(stop_reason);
            out.push(Ok(ProviderEvent::Finish { reason }));
            out
        }
        _ => Vec::new(),
    }
}

fn stop_reason(reason: &genai::chat::StopReason) -> String {
    use genai::chat::StopReason::*;
    match reason {
        Completed(r) | MaxTokens(r) | ToolCall(r) | ContentFilter(r) | StopSequence(r)
        | Other(r) => r.clone(),
    }
}

/// Arguments arrive as JSON text; an empty text is `{}`, and text that does not parse is kept as
/// a string so the pipeline's validation tells the model what was wrong.
fn parse_arguments(value: &serde_json::Value) -> serde_json::Value {
    match value {
        serde_json::Value::String(text) if text.trim().is_empty() => serde_json::json!({}),
        serde_json::Value::String(text) => {
            serde_json::from_str(text).unwrap_or_else(|_| serde_json::Value::String(text.clone()))
        }
        other => other.clone(),
    }
}

/// A stream that ends without `Finish` was cut off; say so instead of ending quietly, so that a
/// half answer is never taken for a whole one.
fn ensure_finished(
    provider: String,
    events: impl futures::Stream<Item = Result<ProviderEvent, ProviderError>> + Send + 'static,
) -> impl futures::Stream<Item = Result<ProviderEvent, ProviderError>> + Send + 'static {
    let events = events.boxed();
    futures::stream::unfold(
        (events, provider, false),
        |(mut events, provider, done)| async move {
            if done {
                return None;
            }
            match events.next().await {
                Some(Ok(event)) => {
                    let finished = matches!(event, ProviderEvent::Finish { .. });
                    Some((Ok(event), (events, provider, finished)))
                }
                Some(Err(e)) => Some((Err(e), (events, provider, true))),
                None => Some((
                    Err(ProviderError::Dropped {
                        provider: provider.clone(),
                        cause: None,
                    }),
                    (events, provider, true),
                )),
            }
        },
    )
}
