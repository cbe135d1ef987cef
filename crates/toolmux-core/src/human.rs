//! `request_human_input`: a question from a model (or a code-mode script's `human.ask`) to the
//! person behind the channel that called, on every channel. The question goes to whoever the
//! call's [`Approver`] reaches — an MCP client's user by elicitation, a pending input in the
//! REST API's queue, a code-mode script's caller — and in toolmux's own chat to the person
//! reading the conversation, through the same queue.

use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};

use crate::approval::{AnswerSchema, AskError, CannotAsk, HumanAnswer, HumanQuestion, ask_within};
use crate::context::Channel;
use crate::error::SourceError;
use crate::hub::WeakHub;
use crate::model::{ToolAnnotations, ToolDescriptor, ToolResult};
use crate::source::{Source, SourceCall, SourceKind};

/// The source id.
pub const HUMAN_SOURCE_ID: &str = "human";
/// The tool's name.
pub const HUMAN_INPUT_TOOL: &str = "request_human_input";
/// The field a free-text question's answer comes in.
pub const ANSWER_FIELD: &str = "answer";

/// The schema of a free-text answer: one string field.
pub fn free_text_schema() -> Value {
    json!({
        "type": "object",
        "properties": {ANSWER_FIELD: {"type": "string", "title": "Answer"}},
        "required": [ANSWER_FIELD]
    })
}

/// Fills the fields a form's answer leaves out (or sends as `null`) with the `default` their
/// schema gives (SEP-1034): a person who leaves a field empty means its default. Every place
/// toolmux takes an answer to a form — the chat, and the way back to an upstream server from
/// any channel — fills them in here, before the answer is checked against the schema.
pub fn fill_form_defaults(schema: &Value, content: &mut serde_json::Map<String, Value>) {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return;
    };
    for (name, field) in properties {
        let Some(default) = field.get("default") else {
            continue;
        };
        if content.get(name).is_none_or(Value::is_null) {
            content.insert(name.clone(), default.clone());
        }
    }
}

/// `request_human_input`'s arguments: its input schema is derived from this struct.
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct HumanInputArgs {
    /// The question, in one or two sentences.
    question: String,
    /// Optional JSON Schema of the answer: an object of flat fields (string, number, integer,
    /// boolean, or a string enum), as forms show them.
    schema: Option<serde_json::Map<String, Value>>,
}

/// The `human` source with its one tool.
pub struct HumanInputSource {
    descriptor: ToolDescriptor,
    hub: Option<WeakHub>,
}

impl Default for HumanInputSource {
    fn default() -> Self {
        Self::new()
    }
}

impl HumanInputSource {
    /// The source. Questions wait at most the default approval time limit until
    /// [`with_hub`](Self::with_hub) gives it the hub whose limit to follow.
    pub fn new() -> Self {
        let mut descriptor = ToolDescriptor::new(
            HUMAN_SOURCE_ID,
            HUMAN_INPUT_TOOL,
            "Ask the person you are working for a question and wait for the answer. Use it \
             when you need a decision or a fact only they have; do not use it for approvals of \
             tool calls (toolmux asks for those itself). Without `schema` the answer is free \
             text; with one, the person fills in a form and the answer is a JSON object that \
             fits it.",
            crate::input_schema::<HumanInputArgs>(),
        );
        descriptor.title = Some("Ask the person".into());
        descriptor.annotations = ToolAnnotations::read_only();
        // A person may take a while; the pipeline's default limit is for machines.
        descriptor.timeout = Some(Duration::from_secs(30 * 60));
        Self {
            descriptor,
            hub: None,
        }
    }

    /// Follows `hub`'s approval time limit (held weakly: the hub owns its sources).
    pub fn with_hub(mut self, hub: WeakHub) -> Self {
        self.hub = Some(hub);
        self
    }

    fn time_limit(&self) -> Duration {
        WeakHub::approval_timeout(self.hub.as_ref())
    }
}

#[async_trait]
impl Source for HumanInputSource {
    fn id(&self) -> &str {
        HUMAN_SOURCE_ID
    }

    fn kind(&self) -> SourceKind {
        SourceKind::Builtin
    }

    fn description(&self) -> Option<String> {
        Some("Asks the person a question and waits for the answer.".to_string())
    }

    fn tools(&self) -> Vec<ToolDescriptor> {
        vec![self.descriptor.clone()]
    }

    async fn call(&self, call: SourceCall<'_>) -> Result<ToolResult, SourceError> {
        let context = call.context;
        let HumanInputArgs {
            question: text,
            schema: given,
        } = match crate::parse_arguments(&call.arguments) {
            Ok(args) => args,
            Err(e) => return Ok(ToolResult::error(e)),
        };
        let free_text = given.is_none();
        // Compiled here, once, before the question waits anywhere; every answer is checked
        // with it.
        let schema = match given {
            None => AnswerSchema::free_text(),
            Some(given) => match object_schema(Value::Object(given)) {
                Ok(schema) => schema,
                Err(why) => return Ok(ToolResult::error(format!("the answer's schema: {why}"))),
            },
        };
        let time_limit = self.time_limit();
        let question = HumanQuestion {
            tool: call.tool.name.clone(),
            arguments: Value::Object(call.arguments.clone()),
            question: text,
            schema,
            channel: context.channel,
            session: context.session.clone(),
            asker: None,
            time_limit,
        };
        // Every channel's person is reached through the call's approver: in toolmux's own chat
        // that is the one queue, which shows the question in the conversation.
        let answer = match &context.approver {
            Some(approver) => ask_within(approver.as_ref(), &question).await,
            None => Some(Err(CannotAsk(nobody_to_ask(context.channel)).into())),
        };
        Ok(match answer {
            // `ask_within` takes only an answer that fits the schema (the one rule).
            Some(Ok(HumanAnswer::Accept(content))) => {
                let text = match (&content, free_text) {
                    (Value::Object(map), true) => map
                        .get(ANSWER_FIELD)
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string(),
                    _ => content.to_string(),
                };
                let mut result = ToolResult::text(text);
                result.structured_content = Some(content);
                result
            }
            Some(Ok(HumanAnswer::Decline)) => ToolResult::error("the person chose not to answer"),
            Some(Ok(HumanAnswer::Cancel)) => {
                ToolResult::error("the person dismissed the question without answering")
            }
            Some(Err(AskError::CannotAsk(CannotAsk(why)))) => ToolResult::error(why),
            Some(Err(AskError::DoesNotFit(why))) => ToolResult::error(why.to_string()),
            None => ToolResult::error(format!(
                "nobody answered the question within {}",
                crate::duration::format_duration(time_limit)
            )),
        })
    }
}

/// Why a call with no approver cannot ask, in words the model can act on.
fn nobody_to_ask(channel: Channel) -> String {
    match channel {
        Channel::Mcp => "this MCP client cannot show questions to its user (it did not declare \
                        the elicitation capability); ask the person in your reply instead"
            .to_string(),
        other => format!("nobody can be asked questions on the {other} channel"),
    }
}

/// The answer's schema, compiled: it must describe an object, within the bounds of a form.
fn object_schema(schema: Value) -> Result<AnswerSchema, String> {
    if schema.get("type").and_then(Value::as_str) != Some("object") {
        return Err("it must be a JSON Schema with \"type\": \"object\"".to_string());
    }
    AnswerSchema::compile(schema)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_schema_must_be_an_object_schema() {
        assert!(object_schema(free_text_schema()).is_ok());
        assert!(object_schema(json!({"type": "string"})).is_err());
        assert!(object_schema(json!({"type": "object", "properties": 3})).is_err());
    }
}
