//! Questions to the person chatting: the built-in `request_human_input` tool (source `human`,
//! toolmux-core's), with which the model asks, and the forms MCP servers send by elicitation
//! while one of their tools runs. Both wait in the one queue ([`ApprovalQueue`]) under the
//! conversation's id, like the chat's approvals; the turn shows them in its stream and waits for
//! the answer, which comes through whichever channel shows the conversation
//! (`POST /api/chat/{conversation}/input`, a line in `toolmux chat`, `POST /api/inputs/{id}`).
//! An answer that does not fit the form is refused with why, and the question keeps waiting
//! (the queue's one rule).

use serde::Serialize;
use serde_json::{Map, Value};
use toolmux_core::{AnswerError, ApprovalQueue, HumanAnswer, PendingInput};

use crate::turn::ChatEngine;

/// The tool's name.
pub const TOOL_NAME: &str = toolmux_core::HUMAN_INPUT_TOOL;

/// A question waiting for the person, as the chat shows it.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InputRequest {
    /// The id to answer it by.
    pub id: uuid::Uuid,
    /// The conversation it belongs to.
    pub conversation: String,
    /// The question.
    pub question: String,
    /// For a form (a server's elicitation, a question with a schema): the JSON Schema of its
    /// fields, an object of flat properties. The answer must be an object that fits it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub form: Option<Value>,
    /// Who asks, when it is not the model: the MCP server behind the running tool.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub asker: Option<String>,
}

impl InputRequest {
    /// A waiting question as the chat shows it; `None` for one of no conversation.
    pub(crate) fn of(input: &PendingInput) -> Option<Self> {
        let question = &input.question;
        Some(Self {
            id: input.id,
            conversation: question.session.clone()?,
            question: question.question.clone(),
            form: (!question.is_free_text()).then(|| question.schema.as_value().clone()),
            asker: question.asker.clone(),
        })
    }
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
    /// The answer does not fit the form; the question still waits.
    #[error("the answer does not fit the form, so the question still waits: {0}")]
    DoesNotFit(String),
}

/// The questions waiting in `conversation`, oldest first.
fn pending(queue: &ApprovalQueue, conversation: &str) -> Vec<InputRequest> {
    queue
        .pending_inputs()
        .iter()
        .filter_map(InputRequest::of)
        .filter(|request| request.conversation == conversation)
        .collect()
}

/// Answers the question waiting in `conversation` (the one with `id`, when given; else the
/// oldest) through `answer`, which the queue checks against the question's form.
fn answer_in(
    queue: &ApprovalQueue,
    conversation: &str,
    id: Option<uuid::Uuid>,
    answer: impl FnOnce(uuid::Uuid) -> Result<(), AnswerError>,
) -> Result<(), ReplyError> {
    let not_waiting = || NoSuchInput(conversation.to_string());
    let id = pending(queue, conversation)
        .into_iter()
        .map(|request| request.id)
        .find(|waiting| id.is_none_or(|id| id == *waiting))
        .ok_or_else(not_waiting)?;
    answer(id).map_err(|e| match e {
        AnswerError::NotWaiting(_) => not_waiting().into(),
        AnswerError::Invalid(why) => ReplyError::DoesNotFit(why),
    })
}

impl ChatEngine {
    /// The questions waiting in a conversation, oldest first.
    pub fn pending_inputs(&self, conversation: &str) -> Vec<InputRequest> {
        pending(self.approvals(), conversation)
    }

    /// Answers the question waiting in `conversation` (the one with `id`, when given; else the
    /// oldest). An accepted answer that does not fit the form is refused with why, and the
    /// question keeps waiting.
    pub fn answer_input(
        &self,
        conversation: &str,
        id: Option<uuid::Uuid>,
        answer: HumanAnswer,
    ) -> Result<(), ReplyError> {
        let queue = self.approvals();
        answer_in(queue, conversation, id, |id| queue.answer_input(id, answer))
    }

    /// Answers with text the person typed: a free-text question's answer, or for a form a JSON
    /// object of its fields (the value of its only field, for a form of one), under the same
    /// rule as [`answer_input`](Self::answer_input).
    pub fn answer_input_text(
        &self,
        conversation: &str,
        id: Option<uuid::Uuid>,
        text: &str,
    ) -> Result<(), ReplyError> {
        let queue = self.approvals();
        answer_in(queue, conversation, id, |id| {
            queue.answer_input_text(id, text)
        })
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

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;
    use toolmux_core::{Approver, Channel, HumanQuestion, PersonEvent, WaitingItem, Watched};

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

    fn form_question(conversation: &str) -> HumanQuestion {
        HumanQuestion {
            session: Some(conversation.into()),
            asker: Some("srv".into()),
            ..HumanQuestion::new(
                "register",
                "Who?",
                toolmux_core::AnswerSchema::compile(user_form()).expect("a valid schema"),
                Channel::Chat,
            )
        }
    }

    #[tokio::test]
    async fn a_form_answer_that_fits_is_passed_on_and_one_that_does_not_is_refused_with_why() {
        let queue = Arc::new(ApprovalQueue::new());
        let mut asked = queue.watch();
        let asker = Arc::clone(&queue);
        let waiting = tokio::spawn(async move { asker.ask(&form_question("c")).await });
        let Some(Watched::Event(PersonEvent::Pending(item))) = asked.next().await else {
            panic!("the form is announced");
        };
        let WaitingItem::Input(input) = *item else {
            panic!("a question: {item:?}");
        };
        let request = InputRequest::of(&input).expect("of a conversation");
        assert_eq!(request.asker.as_deref(), Some("srv"));
        let misfit = answer_in(&queue, "c", Some(request.id), |id| {
            queue.answer_input(id, HumanAnswer::Accept(json!({"age": "old"})))
        });
        let Err(ReplyError::DoesNotFit(why)) = misfit else {
            panic!("a misfit was taken: {misfit:?}");
        };
        assert!(why.contains("username") && why.contains("/age"), "{why}");
        assert_eq!(pending(&queue, "c").len(), 1, "a misfit leaves it waiting");
        assert!(pending(&queue, "other").is_empty());

        let text = r#"{"username": "ada", "age": 36}"#;
        answer_in(&queue, "c", None, |id| queue.answer_input_text(id, text))
            .expect("a fitting answer is taken");
        assert_eq!(
            waiting.await.expect("joined").expect("answered"),
            HumanAnswer::Accept(json!({"username": "ada", "age": 36}))
        );
        assert!(matches!(
            answer_in(&queue, "c", None, |id| queue
                .answer_input(id, HumanAnswer::Decline)),
            Err(ReplyError::NotWaiting(_))
        ));
    }
}
