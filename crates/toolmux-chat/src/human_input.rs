//! The built-in `request_human_input` tool (source `chat`): the model asks the person a
//! question and the turn waits for the answer, which comes through whichever channel shows the
//! conversation (`POST /api/chat/{conversation}/input`, a line in `toolmux chat`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use serde::Serialize;
use serde_json::json;
use toolmux_core::{
    Source, SourceCall, SourceError, SourceKind, ToolAnnotations, ToolDescriptor, ToolResult,
};

/// The source id.
pub const SOURCE_ID: &str = "chat";
/// The tool's name.
pub const TOOL_NAME: &str = "request_human_input";

/// A question waiting for the person.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InputRequest {
    /// The id to answer it by.
    pub id: uuid::Uuid,
    /// The conversation it belongs to.
    pub conversation: String,
    /// The question.
    pub question: String,
}

/// Answering a question that is not waiting.
#[derive(Debug, Clone, thiserror::Error)]
#[error("conversation `{0}` is not waiting for input")]
pub struct NoSuchInput(pub String);

/// Questions waiting for an answer, by conversation.
pub struct HumanInputs {
    waiting: Mutex<HashMap<uuid::Uuid, (InputRequest, tokio::sync::oneshot::Sender<String>)>>,
    events: tokio::sync::broadcast::Sender<InputRequest>,
}

impl Default for HumanInputs {
    fn default() -> Self {
        Self {
            waiting: Mutex::new(HashMap::new()),
            events: tokio::sync::broadcast::channel(64).0,
        }
    }
}

impl std::fmt::Debug for HumanInputs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HumanInputs").finish_non_exhaustive()
    }
}

/// Removes a question when its call stops waiting for any reason (answered, timed out,
/// cancelled).
struct Withdraw<'a> {
    inputs: &'a HumanInputs,
    id: uuid::Uuid,
}

impl Drop for Withdraw<'_> {
    fn drop(&mut self) {
        self.inputs.lock().remove(&self.id);
    }
}

impl HumanInputs {
    fn lock(
        &self,
    ) -> std::sync::MutexGuard<
        '_,
        HashMap<uuid::Uuid, (InputRequest, tokio::sync::oneshot::Sender<String>)>,
    > {
        self.waiting.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// New questions as they are asked.
    pub fn subscribe(&self) -> tokio::sync::broadcast::Receiver<InputRequest> {
        self.events.subscribe()
    }

    /// The questions waiting in a conversation.
    pub fn pending(&self, conversation: &str) -> Vec<InputRequest> {
        self.lock()
            .values()
            .filter(|(r, _)| r.conversation == conversation)
            .map(|(r, _)| r.clone())
            .collect()
    }

    /// Answers the question waiting in `conversation` (the one with `id`, when given; else the
    /// oldest).
    pub fn answer(
        &self,
        conversation: &str,
        id: Option<uuid::Uuid>,
        answer: String,
    ) -> Result<(), NoSuchInput> {
        let mut waiting = self.lock();
        let key = waiting
            .iter()
            .filter(|(k, (r, _))| r.conversation == conversation && id.is_none_or(|id| id == **k))
            .map(|(k, _)| *k)
            .min()
            .ok_or_else(|| NoSuchInput(conversation.to_string()))?;
        if let Some((_, tx)) = waiting.remove(&key) {
            let _ = tx.send(answer);
        }
        Ok(())
    }

    /// Asks a question and waits for its answer.
    pub async fn ask(&self, conversation: &str, question: &str) -> Option<String> {
        let request = InputRequest {
            id: uuid::Uuid::now_v7(),
            conversation: conversation.to_string(),
            question: question.to_string(),
        };
        let (tx, rx) = tokio::sync::oneshot::channel();
        let id = request.id;
        self.lock().insert(id, (request.clone(), tx));
        let _withdraw = Withdraw { inputs: self, id };
        let _ = self.events.send(request);
        rx.await.ok()
    }
}

/// The `chat` source with its one tool.
pub struct HumanInputSource {
    inputs: Arc<HumanInputs>,
    descriptor: ToolDescriptor,
}

impl HumanInputSource {
    /// The source, answering through `inputs`.
    pub fn new(inputs: Arc<HumanInputs>) -> Self {
        let mut descriptor = ToolDescriptor::new(
            SOURCE_ID,
            TOOL_NAME,
            "Ask the person you are chatting with a question and wait for the answer. Use it \
             when you need a decision or a fact only they have; do not use it for approvals of \
             tool calls (toolmux asks for those itself).",
            json!({
                "type": "object",
                "properties": {
                    "question": {"type": "string", "description": "The question, in one or two sentences."}
                },
                "required": ["question"],
                "additionalProperties": false
            }),
        );
        descriptor.title = Some("Ask the person".into());
        descriptor.annotations = ToolAnnotations::read_only();
        // A person may take a while; the pipeline's default limit is for machines.
        descriptor.timeout = Some(Duration::from_secs(30 * 60));
        Self { inputs, descriptor }
    }
}

#[async_trait]
impl Source for HumanInputSource {
    fn id(&self) -> &str {
        SOURCE_ID
    }

    fn kind(&self) -> SourceKind {
        SourceKind::Builtin
    }

    fn tools(&self) -> Vec<ToolDescriptor> {
        vec![self.descriptor.clone()]
    }

    async fn call(&self, call: SourceCall<'_>) -> Result<ToolResult, SourceError> {
        // Only toolmux's own chat has a person reading the conversation; elsewhere (an MCP
        // client) the question would wait unanswered.
        if call.context.channel != toolmux_core::Channel::Chat {
            return Ok(ToolResult::error(
                "request_human_input works only in toolmux's own chat; ask the person directly",
            ));
        }
        let Some(conversation) = call.context.session.as_deref() else {
            return Ok(ToolResult::error(
                "request_human_input works only inside a chat conversation",
            ));
        };
        let question = call
            .arguments
            .get("question")
            .and_then(|q| q.as_str())
            .unwrap_or_default();
        match self.inputs.ask(conversation, question).await {
            Some(answer) => Ok(ToolResult::text(answer)),
            None => Ok(ToolResult::error("the question was withdrawn unanswered")),
        }
    }
}
