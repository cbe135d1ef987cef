//! Tool overrides and derived tools: what configuration changes in how a tool presents itself
//! (name, title, description, annotations, arguments), applied once, when a catalog snapshot is
//! built, so that every channel — MCP, REST, the chat, code mode's generated types — shows the
//! same tool. The source never sees the change: a call is routed by the tool's
//! `original_name`, and its arguments are put back into the shape the source declared
//! ([`ArgumentPlan::apply`]) and validated against the source's own schema.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::model::{ToolAnnotations, ToolDescriptor};

/// How an override changes a tool's description.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DescriptionChange {
    /// The description is this text instead.
    Replace(String),
    /// This text follows the source's description, after a blank line.
    Append(String),
}

/// What configuration changes about one argument of a tool.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ArgumentOverride {
    /// Injected on every call, whatever the caller sent.
    pub value: Option<Value>,
    /// Left out of the schema callers see (with `value`: the caller cannot even name it).
    pub hidden: bool,
    /// Used when the caller sends none; shown as the schema's `default`.
    pub default: Option<Value>,
    /// The name callers use for the argument instead of the source's.
    pub rename: Option<String>,
}

/// How configuration changes the way one tool presents itself.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Presentation {
    /// The registry name callers see instead.
    pub name: Option<String>,
    /// The title instead.
    pub title: Option<String>,
    /// The description, replaced or extended.
    pub description: Option<DescriptionChange>,
    /// Hints that replace the source's, hint by hint (an unset hint keeps the source's); they
    /// feed the policy rule that reads annotations.
    pub annotations: Option<ToolAnnotations>,
    /// Changes to arguments, by the source's name for them.
    pub arguments: BTreeMap<String, ArgumentOverride>,
}

impl Presentation {
    /// True when it changes nothing.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

/// A tool defined as an existing one plus fixed arguments, with its own name and description
/// (`get_open_bugs` = `tracker__search` with `{"state": "open"}`).
#[derive(Clone, Debug, PartialEq)]
pub struct DerivedTool {
    /// Its registry name.
    pub name: String,
    /// The registry name of the tool it calls (as its source names it, before any override).
    pub from: String,
    /// Its title.
    pub title: Option<String>,
    /// Its description.
    pub description: String,
    /// Arguments fixed on every call and left out of its schema.
    pub arguments: Map<String, Value>,
}

impl DerivedTool {
    /// The derived tool as an override of the tool it calls: the one way a tool is reshaped.
    pub(crate) fn presentation(&self) -> Presentation {
        Presentation {
            name: Some(self.name.clone()),
            title: self.title.clone(),
            description: Some(DescriptionChange::Replace(self.description.clone())),
            annotations: None,
            arguments: self
                .arguments
                .iter()
                .map(|(name, value)| {
                    let fixed = ArgumentOverride {
                        value: Some(value.clone()),
                        hidden: true,
                        ..ArgumentOverride::default()
                    };
                    (name.clone(), fixed)
                })
                .collect(),
        }
    }
}

/// A configured override or derived tool that matched nothing when the catalog was built (the
/// upstream renamed the tool, or dropped an argument): reported, never silently dropped.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct StaleOverride {
    /// Where it is configured (`toolSettings.github__search`, `derivedTools.open_bugs`).
    pub setting: String,
    /// The registry name of the tool it names, as its source gives it (`github__search`).
    pub tool: String,
    /// What it did not match.
    pub reason: String,
}

impl std::fmt::Display for StaleOverride {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.setting, self.reason)
    }
}

/// How a call's arguments, as the caller sent them, become the arguments the source declared:
/// renamed back, defaults filled in, fixed values injected.
#[derive(Debug)]
pub(crate) struct ArgumentPlan {
    /// The source's own input schema, which the merged arguments are validated against.
    pub(crate) original_schema: Arc<Value>,
    /// (caller's name, source's name).
    renames: Vec<(String, String)>,
    /// Source names a caller may not send: hidden arguments and the old names of renamed ones.
    /// Else the source's own schema, which the merged arguments are checked against, would
    /// accept them: a hidden argument set anyway, a default overridden, a rename bypassed.
    withheld: Vec<String>,
    defaults: Vec<(String, Value)>,
    fixed: Vec<(String, Value)>,
}

impl ArgumentPlan {
    /// Puts `arguments` into the source's shape. A fixed value always wins over what the caller
    /// sent: that is what fixing it means.
    pub(crate) fn apply(&self, arguments: &mut Map<String, Value>) {
        for name in &self.withheld {
            arguments.remove(name);
        }
        for (shown, original) in &self.renames {
            if let Some(value) = arguments.remove(shown) {
                arguments.insert(original.clone(), value);
            }
        }
        for (name, value) in &self.defaults {
            if !arguments.contains_key(name) {
                arguments.insert(name.clone(), value.clone());
            }
        }
        for (name, value) in &self.fixed {
            arguments.insert(name.clone(), value.clone());
        }
    }
}

/// `descriptor` as `presentation` shows it, the plan that puts callers' arguments back into
/// the source's shape (when arguments change), and the arguments the override names that the
/// tool does not have.
pub(crate) fn present(
    mut descriptor: ToolDescriptor,
    presentation: &Presentation,
) -> (ToolDescriptor, Option<ArgumentPlan>, Vec<String>) {
    if let Some(name) = &presentation.name {
        descriptor.name = name.clone();
        descriptor.renamed = true;
    }
    if let Some(title) = &presentation.title {
        descriptor.title = Some(title.clone());
    }
    match &presentation.description {
        Some(DescriptionChange::Replace(text)) => descriptor.description = text.clone(),
        Some(DescriptionChange::Append(text)) if descriptor.description.is_empty() => {
            descriptor.description = text.clone();
        }
        Some(DescriptionChange::Append(text)) => {
            descriptor.description = format!("{}\n\n{text}", descriptor.description);
        }
        None => {}
    }
    if let Some(hints) = &presentation.annotations {
        let own = &mut descriptor.annotations;
        own.read_only_hint = hints.read_only_hint.or(own.read_only_hint);
        own.destructive_hint = hints.destructive_hint.or(own.destructive_hint);
        own.idempotent_hint = hints.idempotent_hint.or(own.idempotent_hint);
        own.open_world_hint = hints.open_world_hint.or(own.open_world_hint);
    }
    if presentation.arguments.is_empty() {
        return (descriptor, None, Vec::new());
    }
    let original_schema = Arc::clone(&descriptor.input_schema);
    let mut schema = (*original_schema).clone();
    let mut plan = ArgumentPlan {
        original_schema,
        renames: Vec::new(),
        withheld: Vec::new(),
        defaults: Vec::new(),
        fixed: Vec::new(),
    };
    let mut missing = Vec::new();
    for (name, change) in &presentation.arguments {
        let Some(mut property) = take_property(&mut schema, name) else {
            missing.push(name.clone());
            continue;
        };
        let was_required = unrequire(&mut schema, name);
        if let Some(value) = &change.value {
            plan.fixed.push((name.clone(), value.clone()));
            if let Value::Object(fields) = &mut property {
                fields.insert("const".to_string(), value.clone());
            }
        }
        if let Some(value) = &change.default {
            plan.defaults.push((name.clone(), value.clone()));
            if let Value::Object(fields) = &mut property {
                fields.insert("default".to_string(), value.clone());
            }
        }
        if change.hidden {
            plan.withheld.push(name.clone());
            continue;
        }
        let shown = change.rename.clone().unwrap_or_else(|| name.clone());
        if shown != *name {
            plan.withheld.push(name.clone());
            plan.renames.push((shown.clone(), name.clone()));
        }
        // A fixed value or a default means the caller need not send it.
        if was_required && change.value.is_none() && change.default.is_none() {
            require(&mut schema, &shown);
        }
        insert_property(&mut schema, shown, property);
    }
    descriptor.input_schema = Arc::new(schema);
    (descriptor, Some(plan), missing)
}

fn take_property(schema: &mut Value, name: &str) -> Option<Value> {
    schema
        .get_mut("properties")
        .and_then(Value::as_object_mut)
        .and_then(|properties| properties.remove(name))
}

fn insert_property(schema: &mut Value, name: String, property: Value) {
    if let Some(properties) = schema.get_mut("properties").and_then(Value::as_object_mut) {
        properties.insert(name, property);
    }
}

/// Removes `name` from the schema's `required` list; whether it was there.
fn unrequire(schema: &mut Value, name: &str) -> bool {
    let Some(required) = schema.get_mut("required").and_then(Value::as_array_mut) else {
        return false;
    };
    let before = required.len();
    required.retain(|n| n.as_str() != Some(name));
    required.len() != before
}

fn require(schema: &mut Value, name: &str) {
    if let Some(required) = schema.get_mut("required").and_then(Value::as_array_mut) {
        required.push(Value::String(name.to_string()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn search() -> ToolDescriptor {
        ToolDescriptor::new(
            "tracker",
            "tracker__search",
            "Search issues.",
            json!({
                "type": "object",
                "properties": {
                    "repo": {"type": "string"},
                    "state": {"type": "string"},
                    "q": {"type": "string"}
                },
                "required": ["repo", "q"],
                "additionalProperties": false
            }),
        )
    }

    /// A caller that knows the source's names cannot set a hidden argument (fixed, defaulted or
    /// neither) or send a renamed one under its old name: those keys are dropped before the
    /// plan fills the source's shape, which is what the source's own schema then checks.
    #[test]
    fn the_source_names_of_hidden_and_renamed_arguments_are_not_the_callers_to_send() {
        let hidden = |default: Option<Value>| ArgumentOverride {
            hidden: true,
            default,
            ..ArgumentOverride::default()
        };
        let presentation = Presentation {
            arguments: BTreeMap::from([
                ("repo".to_string(), hidden(None)),
                ("state".to_string(), hidden(Some(json!("open")))),
                (
                    "q".to_string(),
                    ArgumentOverride {
                        rename: Some("query".to_string()),
                        ..ArgumentOverride::default()
                    },
                ),
            ]),
            ..Presentation::default()
        };
        let (_, plan, missing) = present(search(), &presentation);
        assert!(missing.is_empty());
        let plan = plan.expect("arguments change");
        let mut sent = json!({"repo": "org/secret", "state": "closed", "q": "old", "query": "bug"})
            .as_object()
            .cloned()
            .expect("an object");
        plan.apply(&mut sent);
        assert_eq!(Value::Object(sent), json!({"state": "open", "q": "bug"}));
    }

    #[test]
    fn a_hidden_fixed_argument_leaves_the_schema_and_is_injected() {
        let presentation = Presentation {
            arguments: BTreeMap::from([
                (
                    "repo".to_string(),
                    ArgumentOverride {
                        value: Some(json!("org/x")),
                        hidden: true,
                        ..ArgumentOverride::default()
                    },
                ),
                (
                    "q".to_string(),
                    ArgumentOverride {
                        rename: Some("query".to_string()),
                        ..ArgumentOverride::default()
                    },
                ),
                (
                    "state".to_string(),
                    ArgumentOverride {
                        default: Some(json!("open")),
                        ..ArgumentOverride::default()
                    },
                ),
            ]),
            ..Presentation::default()
        };
        let (shown, plan, missing) = present(search(), &presentation);
        assert!(missing.is_empty());
        assert_eq!(
            *shown.input_schema,
            json!({
                "type": "object",
                "properties": {
                    "state": {"type": "string", "default": "open"},
                    "query": {"type": "string"}
                },
                "required": ["query"],
                "additionalProperties": false
            })
        );
        let plan = plan.expect("arguments change");
        let mut arguments = Map::from_iter([
            ("query".to_string(), json!("crash")),
            ("repo".to_string(), json!("someone/else")),
        ]);
        plan.apply(&mut arguments);
        assert_eq!(
            Value::Object(arguments),
            json!({"q": "crash", "state": "open", "repo": "org/x"})
        );
    }

    #[test]
    fn an_argument_the_tool_lacks_is_reported() {
        let presentation = Presentation {
            arguments: BTreeMap::from([("owner".to_string(), ArgumentOverride::default())]),
            ..Presentation::default()
        };
        let (_, _, missing) = present(search(), &presentation);
        assert_eq!(missing, vec!["owner".to_string()]);
    }

    #[test]
    fn description_appends_after_a_blank_line_and_annotations_merge_hint_by_hint() {
        let mut tool = search();
        tool.annotations.open_world_hint = Some(true);
        let presentation = Presentation {
            description: Some(DescriptionChange::Append("Only org/x.".to_string())),
            annotations: Some(ToolAnnotations {
                read_only_hint: Some(true),
                ..ToolAnnotations::default()
            }),
            ..Presentation::default()
        };
        let (shown, plan, _) = present(tool, &presentation);
        assert!(plan.is_none());
        assert_eq!(shown.description, "Search issues.\n\nOnly org/x.");
        assert_eq!(
            shown.annotations,
            ToolAnnotations {
                read_only_hint: Some(true),
                open_world_hint: Some(true),
                ..ToolAnnotations::default()
            }
        );
    }
}
