//! The way back from a running tool to the person chatting: one [`Backchannel`] per tool call,
//! which turns what the tool's source sends (an upstream MCP server's progress, log messages,
//! sampling and elicitation requests) into the turn's events and questions.
//!
//! - Progress and log messages become [`TurnEvent::ToolProgress`] and [`TurnEvent::ToolLog`].
//! - Elicitation shows the server's form to the person through the [`ApprovalQueue`], as the
//!   model's own questions are shown (within the approval time limit), and answers with MCP's
//!   `ElicitResult`.
//! - Sampling spends the person's tokens on a server's behalf, so by default (`ask`) it waits
//!   for the person's approval in the [`ApprovalQueue`], as an `ask` call does, then asks the
//!   turn's own provider and model, without tools. `chat.sampling` and a server's
//!   `mcpServers.<name>.sampling` can instead answer without asking (`allow`) or refuse without
//!   asking (`deny`). The tokens an answer takes count in the turn's usage.
//!
//! Nothing here waits past the call: when the call ends or the turn is cancelled, a pending
//! question or approval is withdrawn and the request fails with a message that says which.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use toolmux_config::SamplingPolicy;
use toolmux_core::{
    AnswerSchema, Approval, ApprovalQueue, ApprovalRequest, Backchannel, BackchannelError, Channel,
    HumanAnswer, HumanQuestion, LogMessage, Progress,
};

use crate::events::TurnEvent;
use crate::provider::{ChatProvider, Message, ModelRequest, ProviderEvent, ToolSpec, Usage};
use crate::rendering::preview;

/// MCP's error code for a sampling request the person rejected.
const USER_REJECTED: i32 = -1;

/// What the chat does with each server's sampling requests: `chat.sampling`, and the servers
/// whose `mcpServers.<name>.sampling` overrides it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SamplingSettings {
    /// `chat.sampling`.
    pub default: SamplingPolicy,
    /// `mcpServers.<name>.sampling`, by server name (the source id of its tools).
    pub servers: HashMap<String, SamplingPolicy>,
}

impl SamplingSettings {
    /// The settings of a loaded configuration.
    pub fn from_config(config: &toolmux_config::Config) -> Self {
        Self {
            default: config.chat.sampling,
            servers: config
                .upstreams
                .iter()
                .filter_map(|(name, server)| Some((name.as_str().to_string(), server.sampling?)))
                .collect(),
        }
    }

    /// What applies to `server`'s requests, and whether the server's own setting decided.
    pub(crate) fn for_server(&self, server: &str) -> SamplingRule {
        match self.servers.get(server) {
            Some(policy) => SamplingRule {
                policy: *policy,
                from_server: true,
            },
            None => SamplingRule {
                policy: self.default,
                from_server: false,
            },
        }
    }
}

/// The sampling setting that applies to one call's server.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SamplingRule {
    pub(crate) policy: SamplingPolicy,
    /// Whether it is the server's `mcpServers.<name>.sampling` (else `chat.sampling`).
    pub(crate) from_server: bool,
}

/// Tokens a turn's model spent on sampling, added to by each call's backchannel while the
/// loop runs; the loop adds them to the turn's usage when it ends.
#[derive(Debug, Default)]
pub(crate) struct TurnUsage {
    input_tokens: AtomicU64,
    output_tokens: AtomicU64,
}

impl TurnUsage {
    fn add(&self, usage: Usage) {
        self.input_tokens
            .fetch_add(usage.input_tokens, Ordering::Relaxed);
        self.output_tokens
            .fetch_add(usage.output_tokens, Ordering::Relaxed);
    }

    pub(crate) fn get(&self) -> Usage {
        Usage {
            input_tokens: self.input_tokens.load(Ordering::Relaxed),
            output_tokens: self.output_tokens.load(Ordering::Relaxed),
        }
    }
}

/// The backchannel of one tool call in a chat turn.
pub(crate) struct CallBackchannel {
    /// The model's id for the call.
    pub(crate) call_id: String,
    /// The tool's registry name.
    pub(crate) tool: String,
    /// The tool's source (for an upstream tool, the MCP server's name).
    pub(crate) source: String,
    pub(crate) conversation: String,
    pub(crate) events: mpsc::Sender<TurnEvent>,
    /// The turn's token: cancelled when the person cancels the turn.
    pub(crate) turn: CancellationToken,
    /// Cancelled when the call ends (a child of `turn`).
    pub(crate) ended: CancellationToken,
    pub(crate) approvals: Arc<ApprovalQueue>,
    /// How long a sampling request waits for approval: the hub's `ask` limit.
    pub(crate) approval_timeout: Duration,
    /// The turn's provider and model, which answer sampling requests.
    pub(crate) provider: Arc<dyn ChatProvider>,
    pub(crate) model: String,
    /// Whether the server's sampling requests are asked about, answered or refused.
    pub(crate) sampling: SamplingRule,
    /// Where the tokens of sampling answers are counted for the turn.
    pub(crate) sampled: Arc<TurnUsage>,
}

impl CallBackchannel {
    /// Sends an event without waiting: a full event queue (a reader far behind) loses the
    /// update, never stalls the call.
    fn send(&self, event: TurnEvent) {
        if let Err(e) = self.events.try_send(event) {
            tracing::debug!(error = %e, call = %self.call_id, "dropped a tool update for the chat");
        }
    }

    /// Runs `work` until it finishes, the call ends or the turn is cancelled.
    async fn until_ended<T>(
        &self,
        waiting_for: &str,
        work: impl Future<Output = T>,
    ) -> Result<T, BackchannelError> {
        tokio::select! {
            out = work => Ok(out),
            () = self.ended.cancelled() => Err(BackchannelError::Failed(if self.turn.is_cancelled() {
                format!("the chat turn was cancelled while {waiting_for}")
            } else {
                format!("the tool call ended while {waiting_for}")
            })),
        }
    }

    /// Waits for the person's approval of a sampling request; an error is the refusal the
    /// server hears.
    async fn ask_to_sample(
        &self,
        request: Value,
        sampling: &Sampling,
    ) -> Result<(), BackchannelError> {
        let approval = ApprovalRequest {
            tool: self.tool.clone(),
            source: self.source.clone(),
            arguments: request,
            channel: Channel::Chat,
            session: Some(self.conversation.clone()),
            tool_call_id: Some(self.call_id.clone()),
            message: format!(
                "server `{}` asks your model ({}): {}",
                self.source, self.model, sampling.preview
            ),
            preview: None,
            configured_message: false,
            time_limit: self.approval_timeout,
            caller: None,
        };
        let asked = toolmux_core::approve_within(self.approvals.as_ref(), &approval);
        match self
            .until_ended("its sampling request waited for approval", asked)
            .await?
        {
            Some(Approval::Allow) => Ok(()),
            Some(Approval::Deny { reason }) => Err(BackchannelError::Refused {
                code: USER_REJECTED,
                message: format!(
                    "the person did not let server `{}` use their model: {reason}",
                    self.source
                ),
            }),
            None => Err(BackchannelError::Refused {
                code: USER_REJECTED,
                message: format!(
                    "nobody approved the sampling request within {}",
                    toolmux_core::format_duration(self.approval_timeout)
                ),
            }),
        }
    }

    /// The turn's model's answer to a sampling request.
    async fn complete(&self, sampling: Sampling) -> Result<Value, BackchannelError> {
        let failed = |e: crate::error::ProviderError| {
            BackchannelError::Failed(format!("the chat's model could not answer: {e}"))
        };
        let request = ModelRequest {
            model: self.model.clone(),
            system: sampling.system,
            messages: sampling.messages,
            tools: Arc::<[ToolSpec]>::from(Vec::new()),
            max_tokens: sampling.max_tokens,
        };
        let mut stream = self.provider.stream(request).await.map_err(failed)?;
        let mut text = String::new();
        let mut stop = "endTurn";
        while let Some(event) = stream.next().await {
            match event.map_err(failed)? {
                ProviderEvent::TextDelta(delta) => text.push_str(&delta),
                ProviderEvent::Finish { reason } => {
                    // Providers name a cut answer `length` (OpenAI), `max_tokens` (Anthropic)
                    // or `MAX_TOKENS` (Gemini); the server may want to know it was cut.
                    if reason
                        .as_deref()
                        .is_some_and(|r| matches!(r, "length" | "max_tokens" | "MAX_TOKENS"))
                    {
                        stop = "maxTokens";
                    }
                    break;
                }
                // The person pays for these tokens as for the turn's own.
                ProviderEvent::Usage(usage) => self.sampled.add(usage),
                // No tools are offered.
                ProviderEvent::ToolCallDelta { .. } | ProviderEvent::ToolCall(_) => {}
            }
        }
        Ok(json!({
            "role": "assistant",
            "content": {"type": "text", "text": text},
            "model": self.model,
            "stopReason": stop,
        }))
    }
}

#[async_trait]
impl Backchannel for CallBackchannel {
    fn progress(&self, update: Progress) {
        self.send(TurnEvent::ToolProgress {
            call_id: self.call_id.clone(),
            progress: update,
        });
    }

    fn log(&self, message: LogMessage) {
        self.send(TurnEvent::ToolLog {
            call_id: self.call_id.clone(),
            message,
        });
    }

    async fn sample(&self, request: Value) -> Result<Value, BackchannelError> {
        let sampling = Sampling::from_params(&request)?;
        match self.sampling.policy {
            SamplingPolicy::Ask => self.ask_to_sample(request, &sampling).await?,
            SamplingPolicy::Allow => {}
            SamplingPolicy::Deny => {
                let setting = if self.sampling.from_server {
                    format!("mcpServers.{}.sampling", self.source)
                } else {
                    "chat.sampling".to_string()
                };
                return Err(BackchannelError::Refused {
                    code: USER_REJECTED,
                    message: format!(
                        "sampling is denied by configuration: `{setting}` is `deny`, so server \
                         `{}` may not use the chat's model",
                        self.source
                    ),
                });
            }
        }
        self.until_ended(
            "the model answered its sampling request",
            self.complete(sampling),
        )
        .await?
    }

    async fn elicit(&self, request: Value) -> Result<Value, BackchannelError> {
        // URL mode sends the person to a web page; the chat shows forms only.
        if request
            .get("mode")
            .and_then(Value::as_str)
            .is_some_and(|m| m != "form")
        {
            return Err(BackchannelError::Unsupported("URL-mode elicitation"));
        }
        let message = request
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let schema = request
            .get("requestedSchema")
            .cloned()
            .ok_or_else(|| BackchannelError::Failed("the form has no `requestedSchema`".into()))?;
        // Compiled once, here, before the form waits; every answer is checked with it. A
        // schema that cannot check an answer (or is too large or deep for a form) would make
        // every answer a decline; the server hears why instead, and the person is not bothered.
        let schema = AnswerSchema::compile(schema).map_err(|why| {
            BackchannelError::Failed(format!("the form's `requestedSchema`: {why}"))
        })?;
        // The form waits in the one queue, in the conversation, like the model's questions:
        // an answer that does not fit is refused there and the form stays open.
        let question = HumanQuestion {
            tool: self.tool.clone(),
            arguments: request,
            question: message,
            schema,
            channel: Channel::Chat,
            session: Some(self.conversation.clone()),
            asker: Some(self.source.clone()),
            time_limit: self.approval_timeout,
        };
        let answer = self
            .until_ended(
                "its form waited for the person",
                toolmux_core::ask_within(self.approvals.as_ref(), &question),
            )
            .await?;
        Ok(match answer {
            Some(Ok(HumanAnswer::Accept(content))) => {
                json!({"action": "accept", "content": content})
            }
            Some(Ok(HumanAnswer::Decline)) => json!({"action": "decline"}),
            // Dismissed, withdrawn, or nobody answered within the approval time limit.
            Some(Ok(HumanAnswer::Cancel) | Err(_)) | None => json!({"action": "cancel"}),
        })
    }
}

/// A sampling request (MCP's `sampling/createMessage` params) as a provider request.
///
/// What is not carried over, and why: `modelPreferences` (the turn's model answers: the person
/// chose it), `includeContext` (the chat shares no other conversation with a server),
/// `temperature`, `stopSequences` and `metadata` (the provider seam has no place for them; the
/// provider's defaults apply). Images and audio are replaced by a line that says they were left
/// out, because the chat speaks to its model in text only.
struct Sampling {
    system: String,
    messages: Vec<Message>,
    max_tokens: Option<u32>,
    /// The last user text, shortened, to show the person what is asked.
    preview: String,
}

impl Sampling {
    fn from_params(params: &Value) -> Result<Self, BackchannelError> {
        let malformed =
            |what: &str| BackchannelError::Failed(format!("a malformed sampling request: {what}"));
        let list = params
            .get("messages")
            .and_then(Value::as_array)
            .filter(|m| !m.is_empty())
            .ok_or_else(|| malformed("`messages` must be a non-empty list"))?;
        let mut messages = Vec::with_capacity(list.len());
        for message in list {
            let text = match message.get("content") {
                Some(Value::Array(blocks)) => {
                    blocks.iter().map(block_text).collect::<Vec<_>>().join("\n")
                }
                Some(block) => block_text(block),
                None => return Err(malformed("a message has no `content`")),
            };
            messages.push(match message.get("role").and_then(Value::as_str) {
                Some("user") => Message::User { text },
                Some("assistant") => Message::Assistant {
                    text,
                    tool_calls: Vec::new(),
                },
                _ => {
                    return Err(malformed(
                        "a message's `role` must be `user` or `assistant`",
                    ));
                }
            });
        }
        let preview = messages
            .iter()
            .rev()
            .find_map(|m| match m {
                Message::User { text } => Some(preview(text, 160)),
                _ => None,
            })
            .unwrap_or_default();
        Ok(Self {
            system: params
                .get("systemPrompt")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            messages,
            max_tokens: params
                .get("maxTokens")
                .and_then(Value::as_u64)
                .map(|n| u32::try_from(n).unwrap_or(u32::MAX)),
            preview,
        })
    }
}

/// One content block of a sampling message as text.
fn block_text(block: &Value) -> String {
    let text_of = |key: &str| block.get(key).and_then(Value::as_str);
    match text_of("type") {
        Some("text") => text_of("text").unwrap_or_default().to_string(),
        Some(kind @ ("image" | "audio")) => format!(
            "[{kind} ({}) from the server, left out: this chat sends its model text only]",
            text_of("mimeType").unwrap_or("unknown type")
        ),
        other => format!(
            "[a `{}` block from the server, left out]",
            other.unwrap_or("unknown")
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A call's backchannel in conversation `c`, whose provider is never reached.
    fn call_backchannel(approvals: Arc<ApprovalQueue>) -> CallBackchannel {
        let settings = toolmux_config::ProviderSettings {
            kind: toolmux_config::ProviderKind::Openai,
            base_url: Some("http://127.0.0.1:9/v1/".into()),
            api_key: None,
            default_model: None,
        };
        let provider = crate::GenaiProvider::new("unused", &settings).expect("a provider");
        CallBackchannel {
            call_id: "call-1".into(),
            tool: "srv__register".into(),
            source: "srv".into(),
            conversation: "c".into(),
            events: mpsc::channel(8).0,
            turn: CancellationToken::new(),
            ended: CancellationToken::new(),
            approvals,
            approval_timeout: Duration::from_secs(60),
            provider: Arc::new(provider),
            model: "unused".into(),
            sampling: SamplingSettings::default().for_server("srv"),
            sampled: Arc::new(TurnUsage::default()),
        }
    }

    /// Found in review of issue 28: a server's form was compiled with no bound on its schema
    /// (and compiled again for every answer, in the queue's lock). A form nested too deep or too
    /// large is refused to the server with why, before anything waits on the person.
    #[tokio::test]
    async fn a_form_nested_too_deep_or_too_large_is_refused_before_it_waits() {
        let approvals = Arc::new(ApprovalQueue::new());
        let backchannel = call_backchannel(Arc::clone(&approvals));
        let mut deep = json!({"type": "string"});
        for _ in 0..40 {
            deep = json!({"type": "object", "properties": {"f": deep}});
        }
        let refused = backchannel
            .elicit(json!({"message": "Who?", "requestedSchema": deep}))
            .await;
        assert_eq!(
            refused,
            Err(BackchannelError::Failed(
                "the form's `requestedSchema`: it nests deeper than 32 levels".into()
            ))
        );
        let properties: serde_json::Map<String, Value> = (0..2_000)
            .map(|n| (format!("field{n}"), json!({"type": "string"})))
            .collect();
        let huge = json!({"type": "object", "properties": properties});
        let refused = backchannel
            .elicit(json!({"message": "Who?", "requestedSchema": huge}))
            .await;
        assert_eq!(
            refused,
            Err(BackchannelError::Failed(
                "the form's `requestedSchema`: it is larger than 32 KiB serialized".into()
            ))
        );
        assert!(approvals.waiting().is_empty(), "nothing waits");
    }

    #[test]
    fn a_sampling_request_becomes_text_messages_with_its_images_named() {
        let sampling = Sampling::from_params(&json!({
            "messages": [
                {"role": "user", "content": {"type": "text", "text": "Describe this"}},
                {"role": "assistant", "content": {"type": "text", "text": "Which one?"}},
                {"role": "user", "content": [
                    {"type": "text", "text": "This picture"},
                    {"type": "image", "data": "AAAA", "mimeType": "image/png"}
                ]}
            ],
            "systemPrompt": "Be brief.",
            "maxTokens": 50
        }))
        .expect("a valid request");
        assert_eq!(sampling.system, "Be brief.");
        assert_eq!(sampling.max_tokens, Some(50));
        assert_eq!(sampling.messages.len(), 3);
        let Message::User { text } = &sampling.messages[2] else {
            panic!("a user message: {:?}", sampling.messages[2]);
        };
        assert!(
            text.starts_with("This picture\n[image (image/png)"),
            "{text}"
        );
        assert!(
            matches!(&sampling.messages[1], Message::Assistant { text, .. } if text == "Which one?")
        );
        assert_eq!(sampling.preview, text.replace('\n', " "));
    }

    #[test]
    fn a_servers_own_sampling_setting_wins_over_the_chats() {
        let settings = SamplingSettings {
            default: SamplingPolicy::Deny,
            servers: HashMap::from([("trusted".to_string(), SamplingPolicy::Allow)]),
        };
        let trusted = settings.for_server("trusted");
        assert_eq!(
            (trusted.policy, trusted.from_server),
            (SamplingPolicy::Allow, true)
        );
        let other = settings.for_server("other");
        assert_eq!(
            (other.policy, other.from_server),
            (SamplingPolicy::Deny, false)
        );
    }

    #[test]
    fn a_sampling_request_without_messages_is_refused_with_the_reason() {
        let Err(e) = Sampling::from_params(&json!({"messages": [], "maxTokens": 5})) else {
            panic!("accepted an empty request");
        };
        assert!(e.to_string().contains("non-empty list"), "{e}");
        let Err(e) = Sampling::from_params(
            &json!({"messages": [{"role": "system", "content": {"type": "text", "text": "x"}}]}),
        ) else {
            panic!("accepted a system role");
        };
        assert!(e.to_string().contains("`user` or `assistant`"), "{e}");
    }
}
