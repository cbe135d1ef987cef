//! Questions to the person chatting: the built-in `request_human_input` tool (source `human`,
//! toolmux-core's, which asks chat calls here), with which the model asks, and the forms MCP servers send by elicitation while one of their
//! tools runs. The turn waits for the answer, which comes through whichever channel shows the
//! conversation (`POST /api/chat/{conversation}/input`, a line in `toolmux chat`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use serde::Serialize;
use serde_json::{Map, Value, json};
use toolmux_core::{
    CannotAsk, ConversationQuestions, HumanAnswer, HumanQuestion, Source, SourceCall, SourceError,
    SourceKind, ToolDescriptor, ToolResult,
};

/// The source id (the tool is toolmux-core's, on every channel).
pub const SOURCE_ID: &str = toolmux_core::HUMAN_SOURCE_ID;
/// The tool's name.
pub const TOOL_NAME: &str = toolmux_core::HUMAN_INPUT_TOOL;

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
    /// For a server's form (MCP elicitation): the JSON Schema of its fields (MCP's
    /// `requestedSchema`, an object of flat properties). The answer must be an object that fits
    /// it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub form: Option<Value>,
    /// Who asks, when it is not the model: the MCP server behind the running tool.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub asker: Option<String>,
}

/// The person's answer to a question.
#[derive(Clone, Debug, PartialEq)]
pub enum Reply {
    /// Free text (for a form: a JSON object, or the value of its only field).
    Text(String),
    /// A form's fields, as a JSON object.
    Form(Value),
    /// The person chose not to answer.
    Decline,
    /// The person dismissed the question without choosing.
    Cancel,
}

/// Answering a question that is not waiting.
#[derive(Debug, Clone, thiserror::Error)]
#[error("conversation `{0}` is not waiting for input")]
pub struct NoSuchInput(pub String);

/// Why an answer was not taken.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ReplyError {
    /// Nothing is waiting.
    #[error(transparent)]
    NotWaiting(#[from] NoSuchInput),
    /// The answer does not fit the server's form; the request was declined.
    #[error("the answer does not fit the form, so the request was declined: {0}")]
    DoesNotFit(String),
}

type Waiting = (InputRequest, tokio::sync::oneshot::Sender<Reply>);

/// Questions waiting for an answer, by conversation.
pub struct HumanInputs {
    waiting: Mutex<HashMap<uuid::Uuid, Waiting>>,
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
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<uuid::Uuid, Waiting>> {
        self.waiting.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// New questions as they are asked.
    pub fn subscribe(&self) -> tokio::sync::broadcast::Receiver<InputRequest> {
        self.events.subscribe()
    }

    /// The questions waiting in a conversation, oldest first.
    pub fn pending(&self, conversation: &str) -> Vec<InputRequest> {
        let mut waiting: Vec<InputRequest> = self
            .lock()
            .values()
            .filter(|(r, _)| r.conversation == conversation)
            .map(|(r, _)| r.clone())
            .collect();
        // Ids are UUIDv7, so in the order the questions were asked.
        waiting.sort_by_key(|r| r.id);
        waiting
    }

    /// Answers the question waiting in `conversation` (the one with `id`, when given; else the
    /// oldest) with text.
    pub fn answer(
        &self,
        conversation: &str,
        id: Option<uuid::Uuid>,
        answer: String,
    ) -> Result<(), NoSuchInput> {
        match self.reply(conversation, id, Reply::Text(answer)) {
            Ok(()) | Err(ReplyError::DoesNotFit(_)) => Ok(()),
            Err(ReplyError::NotWaiting(e)) => Err(e),
        }
    }

    /// Replies to the question waiting in `conversation` (the one with `id`, when given; else
    /// the oldest). An answer to a form is checked against the form's schema here, where the
    /// person can be told: one that does not fit declines the request and says why.
    pub fn reply(
        &self,
        conversation: &str,
        id: Option<uuid::Uuid>,
        reply: Reply,
    ) -> Result<(), ReplyError> {
        let mut waiting = self.lock();
        let key = waiting
            .iter()
            .filter(|(k, (r, _))| r.conversation == conversation && id.is_none_or(|id| id == **k))
            .map(|(k, _)| *k)
            .min()
            .ok_or_else(|| NoSuchInput(conversation.to_string()))?;
        let Some((request, tx)) = waiting.remove(&key) else {
            return Err(NoSuchInput(conversation.to_string()).into());
        };
        drop(waiting);
        let (reply, misfit) = match &request.form {
            Some(schema) => match fill_form(schema, reply) {
                Ok(reply) => (reply, None),
                Err(why) => (Reply::Decline, Some(why)),
            },
            None => (reply, None),
        };
        // The asker may have stopped waiting a moment ago; then nobody hears the answer.
        let _ = tx.send(reply);
        match misfit {
            Some(why) => Err(ReplyError::DoesNotFit(why)),
            None => Ok(()),
        }
    }

    /// Asks a question and waits for its answer; `None` when it was withdrawn.
    pub async fn ask(&self, conversation: &str, question: &str) -> Option<Reply> {
        self.put(InputRequest {
            id: uuid::Uuid::now_v7(),
            conversation: conversation.to_string(),
            question: question.to_string(),
            form: None,
            asker: None,
        })
        .await
    }

    /// Shows a server's form and waits for the person's reply: [`Reply::Form`] holds an object
    /// that fits `schema` (checked by [`reply`](Self::reply)); `None` when it was withdrawn.
    pub async fn ask_form(
        &self,
        conversation: &str,
        asker: &str,
        message: &str,
        schema: Value,
    ) -> Option<Reply> {
        self.put(InputRequest {
            id: uuid::Uuid::now_v7(),
            conversation: conversation.to_string(),
            question: message.to_string(),
            form: Some(schema),
            asker: Some(asker.to_string()),
        })
        .await
    }

    async fn put(&self, request: InputRequest) -> Option<Reply> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let id = request.id;
        self.lock().insert(id, (request.clone(), tx));
        let _withdraw = Withdraw { inputs: self, id };
        let _ = self.events.send(request);
        rx.await.ok()
    }
}

/// The person's reply to a form as the object the form asks for, checked against its schema.
/// Text is read as a JSON object, or, for a form of one field, as that field's value.
fn fill_form(schema: &Value, reply: Reply) -> Result<Reply, String> {
    let content = match reply {
        Reply::Decline | Reply::Cancel => return Ok(reply),
        Reply::Form(content) => content,
        Reply::Text(text) => match serde_json::from_str::<Value>(&text) {
            Ok(content @ Value::Object(_)) => content,
            _ => {
                let properties = schema.get("properties").and_then(Value::as_object);
                match properties.map(|p| p.iter().collect::<Vec<_>>()).as_deref() {
                    Some([(name, field)]) => json!({ (*name).clone(): field_value(field, &text) }),
                    _ => {
                        return Err("the form has several fields; answer with a JSON object \
                                    of them"
                            .into());
                    }
                }
            }
        },
    };
    // A field left empty means its default (SEP-1034), so a required field with a default is
    // not refused for being empty.
    let mut content = content;
    if let Some(fields) = content.as_object_mut() {
        toolmux_core::fill_form_defaults(schema, fields);
    }
    let validator = jsonschema::validator_for(schema)
        .map_err(|e| format!("the server's form schema is invalid: {e}"))?;
    let problems: Vec<String> = validator
        .iter_errors(&content)
        .map(|e| {
            let at = e.instance_path().to_string();
            if at.is_empty() {
                e.to_string()
            } else {
                format!("{at}: {e}")
            }
        })
        .collect();
    if problems.is_empty() {
        Ok(Reply::Form(content))
    } else {
        Err(problems.join("; "))
    }
}

/// What a person typed for one form field, as the JSON type the field declares (text that
/// does not parse stays text, and the schema check then says what is wrong with it).
pub fn field_value(field: &Value, text: &str) -> Value {
    let text = text.trim();
    let kind = field
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("string");
    match kind {
        "integer" => text
            .parse::<i64>()
            .map(Value::from)
            .unwrap_or_else(|_| text.into()),
        "number" => text
            .parse::<f64>()
            .ok()
            .and_then(|n| serde_json::Number::from_f64(n).map(Value::Number))
            .unwrap_or_else(|| text.into()),
        "boolean" => match text.to_ascii_lowercase().as_str() {
            "y" | "yes" | "true" => Value::Bool(true),
            "n" | "no" | "false" => Value::Bool(false),
            _ => text.into(),
        },
        "array" => Value::Array(
            text.split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(Value::from)
                .collect(),
        ),
        _ => text.into(),
    }
}

/// The fields of a form, in the schema's order, with whether each is required.
pub fn form_fields(schema: &Value) -> Vec<(String, Value, bool)> {
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    schema
        .get("properties")
        .and_then(Value::as_object)
        .map(Map::iter)
        .into_iter()
        .flatten()
        .map(|(name, field)| {
            (
                name.clone(),
                field.clone(),
                required.contains(&name.as_str()),
            )
        })
        .collect()
}

/// The `human` source with `request_human_input` (toolmux-core's, on every channel), asking
/// chat calls in their conversation as the chat always did: the `data-input-request` part, the
/// terminal's prompt.
pub struct HumanInputSource(toolmux_core::HumanInputSource);

impl HumanInputSource {
    /// The source, asking chat calls through `inputs`.
    pub fn new(inputs: Arc<HumanInputs>) -> Self {
        Self(toolmux_core::HumanInputSource::new().with_conversations(inputs))
    }

    /// Follows `hub`'s approval time limit for questions asked outside the chat.
    pub fn with_hub(self, hub: toolmux_core::WeakHub) -> Self {
        Self(self.0.with_hub(hub))
    }
}

#[async_trait]
impl Source for HumanInputSource {
    fn id(&self) -> &str {
        self.0.id()
    }

    fn kind(&self) -> SourceKind {
        self.0.kind()
    }

    fn tools(&self) -> Vec<ToolDescriptor> {
        self.0.tools()
    }

    async fn call(&self, call: SourceCall<'_>) -> Result<ToolResult, SourceError> {
        self.0.call(call).await
    }
}

#[async_trait]
impl ConversationQuestions for HumanInputs {
    async fn ask(
        &self,
        conversation: &str,
        question: &HumanQuestion,
    ) -> Result<HumanAnswer, CannotAsk> {
        // A free-text question is asked as the chat always asked the model's questions; a form
        // is shown with its fields and checked against its schema when answered.
        let free_text = question.schema == toolmux_core::free_text_schema();
        let reply = self
            .put(InputRequest {
                id: uuid::Uuid::now_v7(),
                conversation: conversation.to_string(),
                question: question.question.clone(),
                form: (!free_text).then(|| question.schema.clone()),
                asker: None,
            })
            .await;
        match reply {
            // A form's answers are made objects by `reply`; text is a free-text answer.
            Some(Reply::Text(answer)) => Ok(HumanAnswer::Accept(
                json!({ (toolmux_core::ANSWER_FIELD): answer }),
            )),
            Some(Reply::Form(content)) => Ok(HumanAnswer::Accept(content)),
            Some(Reply::Decline) => Ok(HumanAnswer::Decline),
            Some(Reply::Cancel) => Ok(HumanAnswer::Cancel),
            None => Err(CannotAsk(
                "the question was withdrawn unanswered".to_string(),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user_form() -> Value {
        json!({
            "type": "object",
            "properties": {
                "username": {"type": "string"},
                "age": {"type": "integer"}
            },
            "required": ["username"]
        })
    }

    #[tokio::test]
    async fn a_form_answer_that_fits_is_passed_on_and_one_that_does_not_is_declined_with_why() {
        let inputs = Arc::new(HumanInputs::default());
        let mut asked = inputs.subscribe();
        let asker = Arc::clone(&inputs);
        let waiting =
            tokio::spawn(async move { asker.ask_form("c", "srv", "Who?", user_form()).await });
        let request = asked.recv().await.expect("the form is announced");
        assert_eq!(request.asker.as_deref(), Some("srv"));
        let misfit = inputs.reply("c", Some(request.id), Reply::Form(json!({"age": "old"})));
        let Err(ReplyError::DoesNotFit(why)) = misfit else {
            panic!("a misfit was taken: {misfit:?}");
        };
        assert!(why.contains("username") && why.contains("/age"), "{why}");
        assert_eq!(waiting.await.expect("joined"), Some(Reply::Decline));

        let asker = Arc::clone(&inputs);
        let waiting =
            tokio::spawn(async move { asker.ask_form("c", "srv", "Who?", user_form()).await });
        let request = asked.recv().await.expect("the form is announced");
        let text = r#"{"username": "ada", "age": 36}"#.to_string();
        inputs
            .reply("c", Some(request.id), Reply::Text(text))
            .expect("a fitting answer is taken");
        assert_eq!(
            waiting.await.expect("joined"),
            Some(Reply::Form(json!({"username": "ada", "age": 36})))
        );
    }

    #[test]
    fn text_for_a_one_field_form_is_that_fields_value_in_its_type() {
        let form =
            json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]});
        assert_eq!(
            fill_form(&form, Reply::Text("42".into())),
            Ok(Reply::Form(json!({"n": 42})))
        );
        assert!(fill_form(&form, Reply::Text("many".into())).is_err());
        assert_eq!(fill_form(&form, Reply::Cancel), Ok(Reply::Cancel));
        assert!(fill_form(&user_form(), Reply::Text("ada".into())).is_err());
    }

    #[test]
    fn a_required_field_left_empty_takes_its_default() {
        let form = json!({"type": "object", "properties": {
            "name": {"type": "string"},
            "plan": {"type": "string", "enum": ["free", "pro"], "default": "free"}
        }, "required": ["name", "plan"]});
        assert_eq!(
            fill_form(&form, Reply::Form(json!({"name": "Ada", "plan": null}))),
            Ok(Reply::Form(json!({"name": "Ada", "plan": "free"})))
        );
        assert!(fill_form(&form, Reply::Form(json!({"plan": "pro"}))).is_err());
    }
}
