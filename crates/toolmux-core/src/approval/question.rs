//! Questions to a person (`request_human_input`, code mode's `human.ask`, an upstream server's
//! form), their answers, and the one rule for an answer that does not fit the question's form:
//! it is refused with the field and the reason, and the question stays open, so the person can
//! answer again. Every channel follows it: the queue refuses such an answer where it is given
//! (REST, the chat, the web app, the terminal chat), and [`ask_within`] asks again, saying why,
//! when an approver that answers over a wire (an MCP client's elicitation form, the terminal
//! prompt) brings one back.

use std::sync::{Arc, LazyLock};

use serde::{Serialize, Serializer};
use serde_json::{Value, json};

use super::Approver;
use super::events::Outcome;
use crate::context::Channel;
use crate::human::{ANSWER_FIELD, fill_form_defaults, free_text_schema};
use crate::validate::{
    CompiledSchema, format_violations, nests_deeper_than, serializes_longer_than,
};

/// The largest schema a question may have, serialized: a form is a handful of flat fields.
pub const MAX_FORM_SCHEMA_BYTES: usize = 32 * 1024;
/// The deepest a question's schema may nest.
pub const MAX_FORM_SCHEMA_DEPTH: usize = 32;
/// The largest answer taken, serialized (a free-text answer is text a person typed or pasted).
pub const MAX_ANSWER_BYTES: usize = 256 * 1024;
/// The deepest an answer may nest.
pub const MAX_ANSWER_DEPTH: usize = 32;

/// The JSON Schema a question's answer must fit, compiled once — when the question is asked,
/// before it waits anywhere (never under the queue's lock) — and kept with the question, so
/// every answer to it, from every channel, is checked by the same validator. Its size and depth
/// are bounded before it is compiled: the schema comes from a model or an upstream server.
/// Cheap to clone.
#[derive(Clone)]
pub struct AnswerSchema(Arc<CompiledForm>);

struct CompiledForm {
    schema: Value,
    validator: CompiledSchema,
}

/// The free-text question's schema, compiled once for the process.
static FREE_TEXT: LazyLock<Result<AnswerSchema, String>> =
    LazyLock::new(|| AnswerSchema::compile(free_text_schema()));

impl AnswerSchema {
    /// `schema` compiled; the error says why it cannot be a question's schema (too large, too
    /// deep, not a valid JSON Schema), in words that follow the schema's name ("the answer's
    /// schema: …").
    pub fn compile(schema: Value) -> Result<Self, String> {
        if nests_deeper_than(&schema, MAX_FORM_SCHEMA_DEPTH) {
            return Err(format!(
                "it nests deeper than {MAX_FORM_SCHEMA_DEPTH} levels"
            ));
        }
        if serializes_longer_than(&schema, MAX_FORM_SCHEMA_BYTES) {
            return Err(format!(
                "it is larger than {} serialized",
                crate::human_bytes(MAX_FORM_SCHEMA_BYTES as u64)
            ));
        }
        let validator = CompiledSchema::compile(&schema)
            .map_err(|e| format!("it is not a valid JSON Schema: {e}"))?;
        Ok(Self(Arc::new(CompiledForm { schema, validator })))
    }

    /// The schema of a free-text question (`{"answer": "..."}`).
    pub fn free_text() -> Self {
        match &*FREE_TEXT {
            Ok(schema) => schema.clone(),
            Err(why) => unreachable!("the free-text schema is valid: {why}"),
        }
    }

    /// The schema as JSON.
    pub fn as_value(&self) -> &Value {
        &self.0.schema
    }

    /// Whether it asks for free text (a one-field `{"answer": …}` form) rather than a form.
    pub fn is_free_text(&self) -> bool {
        matches!(&*FREE_TEXT, Ok(free) if free.0.schema == self.0.schema)
    }

    /// The one rule: `answer` as it is taken — an accepted answer with the defaults of the
    /// fields it leaves empty filled in (SEP-1034), when it is within the answer's bounds and
    /// then fits the schema — or why not (each field and what is wrong with it), in which case
    /// the question stays open. A decline or a dismissal always fits.
    pub fn check(&self, answer: HumanAnswer) -> Result<HumanAnswer, AnswerError> {
        match answer {
            HumanAnswer::Accept(content) => self
                .fit(content)
                .map(HumanAnswer::Accept)
                .map_err(AnswerError::Invalid),
            other => Ok(other),
        }
    }

    /// `content` with the defaults of the fields it leaves empty, when it is within bounds and
    /// then fits; else why not.
    fn fit(&self, mut content: Value) -> Result<Value, String> {
        if nests_deeper_than(&content, MAX_ANSWER_DEPTH) {
            return Err(format!(
                "the answer nests deeper than {MAX_ANSWER_DEPTH} levels"
            ));
        }
        if serializes_longer_than(&content, MAX_ANSWER_BYTES) {
            return Err(format!(
                "the answer is larger than {} serialized",
                crate::human_bytes(MAX_ANSWER_BYTES as u64)
            ));
        }
        // A field left empty means its default (SEP-1034), so a required field with a default
        // is not refused for being empty.
        if let Some(fields) = content.as_object_mut() {
            fill_form_defaults(&self.0.schema, fields);
        }
        let violations = self.0.validator.violations(&content);
        if violations.is_empty() {
            Ok(content)
        } else {
            Err(format_violations(&violations))
        }
    }

    /// An answer typed as text (the terminal chat, the chat's text box), checked: the answer of
    /// a free-text question; for a form, a JSON object of its fields or, for a form of one
    /// field, that field's value in the type it declares.
    pub fn answer_text(&self, text: &str) -> Result<HumanAnswer, AnswerError> {
        let content = if self.is_free_text() {
            json!({ ANSWER_FIELD: text })
        } else {
            match serde_json::from_str::<Value>(text) {
                Ok(content @ Value::Object(_)) => content,
                _ => {
                    let properties = self.0.schema.get("properties").and_then(Value::as_object);
                    match properties.map(|p| p.iter().collect::<Vec<_>>()).as_deref() {
                        Some([(name, field)]) => {
                            json!({ (*name).clone(): field_value(field, text) })
                        }
                        _ => {
                            return Err(AnswerError::Invalid(
                                "the form has several fields; answer with a JSON object of them"
                                    .into(),
                            ));
                        }
                    }
                }
            }
        };
        self.check(HumanAnswer::Accept(content))
    }
}

impl Serialize for AnswerSchema {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.schema.serialize(serializer)
    }
}

impl std::fmt::Debug for AnswerSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.schema.fmt(f)
    }
}

impl PartialEq for AnswerSchema {
    fn eq(&self, other: &Self) -> bool {
        self.0.schema == other.0.schema
    }
}

/// A question for the person: `request_human_input`'s, a code-mode script's `human.ask`, or an
/// upstream server's form (elicitation) relayed to the person of the calling channel.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HumanQuestion {
    /// The registry name of the tool whose call asks.
    pub tool: String,
    /// That call's arguments.
    pub arguments: Value,
    /// The question.
    pub question: String,
    /// The JSON Schema the answer's content must fit, compiled: an object (a free-text
    /// question asks for `{"answer": "..."}`).
    pub schema: AnswerSchema,
    /// The channel the call came through.
    pub channel: Channel,
    /// The conversation or session, when there is one.
    pub session: Option<String>,
    /// Who asks, when it is not the model: the MCP server behind the running tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub asker: Option<String>,
    /// How long the person has to answer; [`ask_within`] holds the wait to it.
    #[serde(skip)]
    pub time_limit: std::time::Duration,
}

/// The person's answer to a question: MCP elicitation's three actions. The one answer type of
/// every question, whichever channel asked it and whichever answered it.
#[derive(Clone, Debug, PartialEq)]
pub enum HumanAnswer {
    /// Answered, with content that fits the question's schema.
    Accept(Value),
    /// The person chose not to answer.
    Decline,
    /// The person dismissed the question without choosing.
    Cancel,
}

impl HumanAnswer {
    pub(super) fn outcome(&self) -> Outcome {
        match self {
            HumanAnswer::Accept(_) => Outcome::Accepted,
            HumanAnswer::Decline => Outcome::Declined,
            HumanAnswer::Cancel => Outcome::Cancelled,
        }
    }
}

/// Why a question could not be put to anybody; the text is for the model.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct CannotAsk(pub String);

/// Why an answer to a question was not taken.
#[derive(Debug, Clone, thiserror::Error)]
pub enum AnswerError {
    /// Nothing waits under that id.
    #[error("no question `{0}` is waiting (it was answered, timed out, or never existed)")]
    NotWaiting(uuid::Uuid),
    /// The content does not fit the question's schema (the reasons name each field); the
    /// question still waits.
    #[error("the answer does not fit the question's schema: {0}")]
    Invalid(String),
}

impl HumanQuestion {
    /// `question`, asked by a call of `tool` (without arguments) on `channel`, whose answer
    /// must fit `schema`: in no conversation, from no server, with the default approval time
    /// limit until the configured one is set.
    pub fn new(
        tool: impl Into<String>,
        question: impl Into<String>,
        schema: AnswerSchema,
        channel: Channel,
    ) -> Self {
        Self {
            tool: tool.into(),
            arguments: json!({}),
            question: question.into(),
            schema,
            channel,
            session: None,
            asker: None,
            time_limit: crate::hub::HubSettings::default().approval_timeout,
        }
    }

    /// Whether it asks for free text (a one-field `{"answer": …}` form) rather than a form.
    pub fn is_free_text(&self) -> bool {
        self.schema.is_free_text()
    }

    /// The one rule ([`AnswerSchema::check`]) for this question's form.
    pub fn check(&self, answer: HumanAnswer) -> Result<HumanAnswer, AnswerError> {
        self.schema.check(answer)
    }

    /// An answer typed as text, checked ([`AnswerSchema::answer_text`]).
    pub fn answer_text(&self, text: &str) -> Result<HumanAnswer, AnswerError> {
        self.schema.answer_text(text)
    }

    /// The question asked again after `why` refused an answer.
    fn asked_again(&self, why: &AnswerError) -> Self {
        let mut again = self.clone();
        again.question = format!(
            "{}\n\n(Your last answer was not taken — {why}. Please answer again.)",
            self.question
        );
        again
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

/// How many answers that do not fit one question are refused before the question ends with
/// the last reason: an approver answering over a wire (an MCP client that fills the form
/// itself) could otherwise be asked again as fast as it answers until the time limit.
const MAX_REFUSED_ANSWERS: usize = 5;

/// Asks `approver` the question and waits at most `question.time_limit`: `None` when nobody
/// answered in time. The same rule as [`approve_within`](super::approve_within). An answer
/// that does not fit the question's form is refused and the question asked again with the
/// reason (the one rule), so what comes back fits — after [`MAX_REFUSED_ANSWERS`] refusals the
/// question ends with the last reason.
pub async fn ask_within(
    approver: &dyn Approver,
    question: &HumanQuestion,
) -> Option<Result<HumanAnswer, AskError>> {
    // The queue takes only answers that fit, where they are given: checking them again here
    // would validate each twice.
    let check = |answer: HumanAnswer| {
        if approver.checks_answers() {
            Ok(answer)
        } else {
            question.check(answer)
        }
    };
    let asking = async {
        let mut asked = question.clone();
        for _ in 0..MAX_REFUSED_ANSWERS {
            let answer = approver.ask(&asked).await.map_err(AskError::CannotAsk)?;
            match check(answer) {
                Ok(answer) => return Ok(answer),
                Err(why) => asked = question.asked_again(&why),
            }
        }
        let answer = approver.ask(&asked).await.map_err(AskError::CannotAsk)?;
        check(answer).map_err(AskError::DoesNotFit)
    };
    tokio::time::timeout(question.time_limit, asking).await.ok()
}

/// Why [`ask_within`] has no answer.
#[derive(Debug, Clone, thiserror::Error)]
pub enum AskError {
    /// Nobody can be asked.
    #[error(transparent)]
    CannotAsk(#[from] CannotAsk),
    /// Every answer given did not fit the question's form; the last reason.
    #[error(transparent)]
    DoesNotFit(AnswerError),
}

#[cfg(test)]
mod tests {
    use super::*;

    fn form(schema: Value) -> HumanQuestion {
        let schema = AnswerSchema::compile(schema).expect("a valid schema");
        HumanQuestion::new("request_human_input", "?", schema, Channel::Rest)
    }

    /// A form of two fields, one of them required.
    fn order_form() -> Value {
        json!({"type": "object", "required": ["item"], "properties": {
            "item": {"type": "string"}, "count": {"type": "integer"}
        }})
    }

    #[test]
    fn text_for_a_one_field_form_is_that_fields_value_in_its_type() {
        let count = form(
            json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}),
        );
        assert_eq!(
            count.answer_text("42").ok(),
            Some(HumanAnswer::Accept(json!({"n": 42})))
        );
        assert!(count.answer_text("many").is_err());
        assert_eq!(
            count.check(HumanAnswer::Cancel).ok(),
            Some(HumanAnswer::Cancel)
        );
        assert!(form(order_form()).answer_text("tea").is_err());
    }

    #[test]
    fn a_required_field_left_empty_takes_its_default() {
        let plan = form(json!({"type": "object", "properties": {
            "name": {"type": "string"},
            "plan": {"type": "string", "enum": ["free", "pro"], "default": "free"}
        }, "required": ["name", "plan"]}));
        assert_eq!(
            plan.check(HumanAnswer::Accept(json!({"name": "Ada", "plan": null})))
                .ok(),
            Some(HumanAnswer::Accept(json!({"name": "Ada", "plan": "free"})))
        );
        assert!(
            plan.check(HumanAnswer::Accept(json!({"plan": "pro"})))
                .is_err()
        );
    }

    #[test]
    fn a_misfit_is_refused_naming_each_field() {
        let Err(AnswerError::Invalid(why)) =
            form(order_form()).check(HumanAnswer::Accept(json!({"count": "two"})))
        else {
            panic!("a misfit was taken");
        };
        assert!(why.contains("item") && why.contains("/count"), "{why}");
        assert_eq!(
            form(free_text_schema()).answer_text("main").ok(),
            Some(HumanAnswer::Accept(json!({"answer": "main"})))
        );
    }

    /// An approver that answers each question from a list and keeps what it was asked.
    struct Answers {
        answers: std::sync::Mutex<Vec<HumanAnswer>>,
        asked: std::sync::Mutex<Vec<String>>,
    }

    #[async_trait::async_trait]
    impl Approver for Answers {
        async fn approve(&self, _: &super::super::ApprovalRequest) -> super::super::Approval {
            super::super::Approval::Allow
        }

        async fn ask(&self, question: &HumanQuestion) -> Result<HumanAnswer, CannotAsk> {
            self.asked
                .lock()
                .expect("lock")
                .push(question.question.clone());
            let mut answers = self.answers.lock().expect("lock");
            if answers.is_empty() {
                return Err(CannotAsk("no more answers".into()));
            }
            Ok(answers.remove(0))
        }
    }

    #[tokio::test]
    async fn an_approver_that_brings_a_misfit_is_asked_again_with_why() {
        let count = form(
            json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}),
        );
        let approver = Answers {
            answers: std::sync::Mutex::new(vec![
                HumanAnswer::Accept(json!({"n": "many"})),
                HumanAnswer::Accept(json!({"n": 3})),
            ]),
            asked: std::sync::Mutex::new(Vec::new()),
        };
        let answer = ask_within(&approver, &count).await;
        assert!(
            matches!(&answer, Some(Ok(HumanAnswer::Accept(content))) if *content == json!({"n": 3})),
            "{answer:?}"
        );
        let asked = approver.asked.lock().expect("lock").clone();
        assert_eq!(asked.len(), 2);
        assert!(
            asked[1].starts_with("?\n\n(Your last answer was not taken — the answer does not fit")
                && asked[1].contains("/n"),
            "{}",
            asked[1]
        );

        // One that never fits ends the question with the reason, after a bounded number of asks.
        let approver = Answers {
            answers: std::sync::Mutex::new(vec![
                HumanAnswer::Accept(json!({"n": "many"}));
                MAX_REFUSED_ANSWERS + 1
            ]),
            asked: std::sync::Mutex::new(Vec::new()),
        };
        let answer = ask_within(&approver, &count).await;
        assert!(
            matches!(&answer, Some(Err(AskError::DoesNotFit(AnswerError::Invalid(why)))) if why.contains("/n")),
            "{answer:?}"
        );
        assert_eq!(
            approver.asked.lock().expect("lock").len(),
            MAX_REFUSED_ANSWERS + 1
        );
    }
}
