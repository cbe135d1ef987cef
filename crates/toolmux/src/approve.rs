//! The command line's approver: a yes/no prompt on the terminal, and a form for the questions
//! `request_human_input` puts (one prompt per field of the answer's schema: text, number,
//! a choice from an enum, yes/no, each with its default).

use std::io::IsTerminal;

use async_trait::async_trait;
use dialoguer::console::Term;
use dialoguer::{Confirm, Input, Select};
use serde_json::{Map, Value};
use toolmux_core::{Approval, ApprovalRequest, Approver, CannotAsk, HumanAnswer, HumanQuestion};

/// Asks on the terminal. Only installed when stdin and stderr are terminals; without one the
/// pipeline denies `ask` calls with a message saying how to change the policy.
pub struct TerminalApprover;

impl TerminalApprover {
    /// The approver, when there is a terminal to ask on.
    pub fn if_interactive() -> Option<Self> {
        (std::io::stdin().is_terminal() && std::io::stderr().is_terminal()).then_some(Self)
    }
}

#[async_trait]
impl Approver for TerminalApprover {
    async fn approve(&self, request: &ApprovalRequest) -> Approval {
        let prompt = format!(
            "{}\n  arguments: {}\nRun it?",
            request.message,
            serde_json::to_string(&request.arguments).unwrap_or_default()
        );
        let answer = tokio::task::spawn_blocking(move || {
            Confirm::new()
                .with_prompt(prompt)
                .default(false)
                .interact_on(&Term::stderr())
        })
        .await;
        match answer {
            Ok(Ok(true)) => Approval::Allow,
            Ok(Ok(false)) => Approval::Deny {
                reason: "the user declined at the terminal".to_string(),
            },
            Ok(Err(e)) => Approval::Deny {
                reason: format!("the terminal prompt failed: {e}"),
            },
            Err(e) => Approval::Deny {
                reason: format!("the terminal prompt failed: {e}"),
            },
        }
    }

    /// Asks on the terminal, field by field; Esc on a choice (or a prompt that fails, the
    /// terminal gone) dismisses the question.
    async fn ask(&self, question: &HumanQuestion) -> Result<HumanAnswer, CannotAsk> {
        let question = question.clone();
        let answer = tokio::task::spawn_blocking(move || fill_in(&question, &Term::stderr()))
            .await
            .map_err(|e| CannotAsk(format!("the terminal prompt failed: {e}")))?;
        Ok(match answer {
            Ok(Some(content)) => HumanAnswer::Accept(Value::Object(content)),
            Ok(None) | Err(_) => HumanAnswer::Cancel,
        })
    }
}

/// The answer to `question`, one prompt per property of its schema; `None` when dismissed.
fn fill_in(question: &HumanQuestion, term: &Term) -> dialoguer::Result<Option<Map<String, Value>>> {
    let properties = question
        .schema
        .as_value()
        .get("properties")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let required: Vec<&str> = question
        .schema
        .as_value()
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    // A free-text question is one line: the question is its prompt.
    let single = properties.len() == 1;
    if !single {
        term.write_line(&question.question)?;
    }
    let mut answer = Map::new();
    for (name, field) in &properties {
        let label = field
            .get("title")
            .or_else(|| field.get("description"))
            .and_then(Value::as_str)
            .unwrap_or(name);
        let prompt = if single {
            question.question.clone()
        } else {
            label.to_string()
        };
        let default = field.get("default");
        let optional = !required.contains(&name.as_str());
        let kind = field
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("string");
        let value = if let Some(choices) = choices(field) {
            let shown: Vec<&str> = choices.iter().map(|(_, title)| title.as_str()).collect();
            let start = default
                .and_then(|d| choices.iter().position(|(v, _)| v == d))
                .unwrap_or(0);
            match Select::new()
                .with_prompt(prompt)
                .items(&shown)
                .default(start)
                .interact_on_opt(term)?
            {
                Some(i) => choices[i].0.clone(),
                None => return Ok(None),
            }
        } else if kind == "boolean" {
            let mut confirm = Confirm::new().with_prompt(prompt);
            if let Some(d) = default.and_then(Value::as_bool) {
                confirm = confirm.default(d);
            }
            match confirm.interact_on_opt(term)? {
                Some(yes) => Value::Bool(yes),
                None => return Ok(None),
            }
        } else {
            let number = matches!(kind, "number" | "integer");
            let mut input = Input::<String>::new()
                .with_prompt(prompt)
                .allow_empty(optional);
            if let Some(d) = default {
                input = input.default(d.as_str().map_or_else(|| d.to_string(), str::to_string));
            }
            let integer = kind == "integer";
            let text = input
                .validate_with(move |text: &String| -> Result<(), String> {
                    if !number || text.is_empty() {
                        return Ok(());
                    }
                    match (integer, text.trim().parse::<f64>()) {
                        (true, Ok(n)) if n.fract() == 0.0 => Ok(()),
                        (false, Ok(n)) if n.is_finite() => Ok(()),
                        _ if integer => Err("a whole number, please".into()),
                        _ => Err("a number, please".into()),
                    }
                })
                .interact_text_on(term)?;
            if text.is_empty() && optional {
                continue;
            }
            match (kind, text.trim()) {
                ("integer", t) => t
                    .parse::<i64>()
                    .map(Value::from)
                    .unwrap_or(Value::String(text)),
                ("number", t) => t
                    .parse::<f64>()
                    .map(Value::from)
                    .unwrap_or(Value::String(text)),
                _ => Value::String(text),
            }
        };
        answer.insert(name.clone(), value);
    }
    Ok(Some(answer))
}

/// The values a field may take, with what to show for each: its `enum` (with `enumNames`), or
/// its `oneOf` of `const`s with their titles, as elicitation forms write them.
fn choices(field: &Value) -> Option<Vec<(Value, String)>> {
    if let Some(values) = field.get("enum").and_then(Value::as_array) {
        let names = field.get("enumNames").and_then(Value::as_array);
        return Some(
            values
                .iter()
                .enumerate()
                .map(|(i, v)| {
                    let shown = names
                        .and_then(|n| n.get(i))
                        .and_then(Value::as_str)
                        .map(str::to_string)
                        .unwrap_or_else(|| {
                            v.as_str().map_or_else(|| v.to_string(), str::to_string)
                        });
                    (v.clone(), shown)
                })
                .collect(),
        );
    }
    let options = field.get("oneOf").and_then(Value::as_array)?;
    options
        .iter()
        .map(|o| {
            let value = o.get("const")?.clone();
            let shown = o
                .get("title")
                .and_then(Value::as_str)
                .map(str::to_string)
                .unwrap_or_else(|| {
                    value
                        .as_str()
                        .map_or_else(|| value.to_string(), str::to_string)
                });
            Some((value, shown))
        })
        .collect()
}
