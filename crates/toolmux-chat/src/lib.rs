//! toolmux's own chat: providers behind a small trait of ours (implemented on `genai`), the
//! streaming tool-calling loop and conversations in the state database. The REST crate
//! (`toolmux-api`, its `chat` module) serves it over HTTP, as the AI SDK's UI message stream.
//!
//! The loop is a channel like any other: every tool call goes through
//! [`toolmux_core::Hub::call_reported`] on [`toolmux_core::Channel::Chat`], with the
//! conversation id as session and the [`toolmux_core::ApprovalQueue`] as approver, so policies,
//! approvals, validation, limits and the execution log apply unchanged. Internal tools are
//! never offered to a model.

mod backchannel;
mod delegate;
mod error;
mod eval;
mod events;
mod forwarding;
mod genai_provider;
mod human_input;
mod prompt;
mod provider;
mod providers;
mod rendering;
mod schema;
mod store;
mod turn;

pub use backchannel::SamplingSettings;
pub use delegate::{DELEGATE_SOURCE_ID, DELEGATE_TOOL, DelegateSource};
pub use error::{ChatError, ProviderError, StoreError};
pub use eval::{CaseResult, EvalCase, EvalReport, GoldSet, NO_TOOL, ToolScore, evaluate};
pub use events::{EngineSettings, FinishReason, ToolOutput, TurnEvent, TurnRequest};
pub use genai_provider::GenaiProvider;
pub use human_input::{InputRequest, NoSuchInput, ReplyError, TOOL_NAME, form_fields};
pub use prompt::{SkillSummary, system_prompt};
pub use provider::{
    ChatProvider, Message, ModelRequest, ProviderEvent, ProviderStream, ToolCall, ToolSpec, Usage,
};
pub use providers::Providers;
pub use rendering::{preview, prompt_text, tool_specs};
pub use schema::clean_schema;
pub use store::{Conversation, ConversationStore, SqliteStore, StoredMessage};
pub use tokio_util::sync::CancellationToken;
pub use turn::{ChatEngine, MAX_RUNNING_TURNS};

/// Where the state database lives, relative to the project directory.
pub const DATABASE_PATH: &str = ".toolmux/state/toolmux.db";
