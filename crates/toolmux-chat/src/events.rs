//! What a turn is asked to do and what it reports, in channel-neutral terms: the engine speaks
//! these, and each channel (the UI message stream, the terminal) renders them at its edge.

use serde::Serialize;
use serde_json::Value;
use toolmux_core::{LogMessage, PendingApproval, Progress};

use crate::backchannel::SamplingSettings;
use crate::human_input::InputRequest;
use crate::provider::{ToolCall, Usage};

/// Limits of the loop.
#[derive(Clone, Debug)]
pub struct EngineSettings {
    /// The most model calls in one turn.
    pub max_steps: u32,
    /// The project's name, for the system prompt.
    pub project_name: String,
    /// What a server's request to use the turn's model gets.
    pub sampling: SamplingSettings,
}

impl EngineSettings {
    /// Settings from the `chat` configuration section, with each MCP server's `sampling`.
    pub fn from_config(config: &toolmux_config::Config, project_name: &str) -> Self {
        let chat = &config.chat;
        Self {
            max_steps: chat.max_steps.get(),
            project_name: project_name.to_string(),
            sampling: SamplingSettings::from_config(config),
        }
    }
}

/// What a turn asks for.
#[derive(Clone, Debug, Default)]
pub struct TurnRequest {
    /// The conversation to continue; a new one is started when it is `None` or unknown.
    pub conversation: Option<String>,
    /// What the person wrote.
    pub text: String,
    /// The provider's name; default: the conversation's, else the configured default.
    pub provider: Option<String>,
    /// The model; default: the conversation's, else the provider's default model.
    pub model: Option<String>,
    /// Takes this turn of the conversation again (0 for the first): it and every later message
    /// are dropped before the turn starts, and `text` is the person's message in its place
    /// (edit and resend; the same text regenerates the answer). The conversation's next turn
    /// (its number of turns) drops nothing: a retry of a message that never started a turn.
    pub replace_turn: Option<usize>,
}

/// Why a turn ended without an error.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FinishReason {
    /// The model answered without calling a tool.
    Stop,
    /// The step limit was reached.
    StepLimit,
    /// The turn was cancelled.
    Cancelled,
}

/// The outcome of one tool call, as channels show it.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolOutput {
    /// The call it answers.
    pub call_id: String,
    /// The tool.
    pub name: String,
    /// What the model is given (possibly cut).
    pub content: String,
    /// Structured content, when the tool returned some.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub structured: Option<Value>,
    /// The images and audio the tool returned (its MCP content blocks), shown to the person;
    /// the model's text only says each was there.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub media: Vec<toolmux_core::Content>,
    /// Whether the call failed or was refused.
    pub is_error: bool,
    /// A `CallError` code (`denied`, `timeout`...) when the pipeline refused or broke the call.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_code: Option<String>,
    /// Its execution-log id.
    pub log_id: String,
    /// How long the pipeline took, in milliseconds.
    pub duration_ms: u64,
}

/// What a turn reports while it runs, channel-neutral; the HTTP stream and the terminal render
/// it. Every turn ends with exactly one `Finished` or `Error`.
#[derive(Clone, Debug)]
pub enum TurnEvent {
    /// The turn started.
    Started {
        /// The conversation id.
        conversation: String,
        /// The provider used.
        provider: String,
        /// The model used.
        model: String,
    },
    /// A model call starts.
    StepStart {
        /// Its number in the turn, from 1.
        step: u32,
    },
    /// More answer text.
    TextDelta(String),
    /// The model started writing a tool call.
    ToolInputStart {
        /// The call's id.
        call_id: String,
        /// The tool.
        name: String,
    },
    /// A complete tool call, about to run.
    ToolInput {
        /// The call.
        call: ToolCall,
        /// The tool's source, when the tool exists.
        source: Option<String>,
    },
    /// A running tool reported how far it has got.
    ToolProgress {
        /// The call.
        call_id: String,
        /// How far, as the source reported it.
        progress: Progress,
    },
    /// A running tool's source logged a message (an upstream MCP server's log notification).
    ToolLog {
        /// The call.
        call_id: String,
        /// The message.
        message: LogMessage,
    },
    /// A call waits for the person's approval (answer through the [`ApprovalQueue`]): an `ask`
    /// call, or a server's request to use the turn's model (sampling).
    ApprovalRequested(PendingApproval),
    /// The model asked the person a question, or a running tool's server sent a form (answer
    /// through [`ChatEngine::answer_input`](crate::ChatEngine::answer_input)).
    InputRequested(InputRequest),
    /// A tool call finished.
    ToolOutput(ToolOutput),
    /// A model call and its tool calls are done.
    StepFinish {
        /// Its number.
        step: u32,
    },
    /// The turn ended.
    Finished {
        /// Why.
        reason: FinishReason,
        /// Tokens of every model call of the turn.
        usage: Usage,
        /// Model calls made.
        steps: u32,
    },
    /// The turn failed (the provider refused or broke off); nothing follows.
    Error {
        /// What happened, for a person.
        message: String,
    },
}
