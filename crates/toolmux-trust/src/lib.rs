//! Judging the text upstream MCP servers write into a model's prompt (tool names, titles,
//! descriptions, schema strings), locally: invisible and bidirectional Unicode is removed from
//! what a model sees ([`visible`]) and flagged, Unicode tag characters are decoded (they can
//! carry hidden ASCII) and the decoded text is scanned too, and instruction patterns aimed at
//! the model — overriding its instructions, concealment, urgency, secrets and credential paths,
//! exfiltration through arguments, naming other tools — are flagged with their exact span
//! ([`scan`], [`scan_tool`]). A tool named like a built-in or another server's tool is flagged
//! as shadowing ([`shadowing`]). What a finding does is [`Action`]'s business.
//!
//! [`pins`] keeps what a server first presented and holds what changed since (rug pulls).
//!
//! The crate knows no MCP wire type and no configuration: it takes text and JSON values.

pub mod flows;
mod patterns;
pub mod pins;
mod unicode;

use std::borrow::Cow;
use std::ops::Range;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use unicode::visible;

/// What a finding is in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum ItemKind {
    /// A tool's definition.
    #[default]
    Tool,
    /// A prompt as listed (title, description, arguments).
    Prompt,
    /// A resource as listed.
    Resource,
    /// A resource template as listed.
    ResourceTemplate,
}

impl ItemKind {
    /// Whether it is [`ItemKind::Tool`], which listings leave unsaid.
    pub fn is_tool(&self) -> bool {
        *self == ItemKind::Tool
    }
}

/// What a finding is about.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum FindingKind {
    /// Characters a person does not see but a model reads: Unicode tag characters, zero-width
    /// characters, bidirectional controls. Removed from what models see.
    InvisibleUnicode,
    /// An instruction aimed at the model: overriding its instructions, or telling it what to do
    /// before or instead of the tool's job.
    Instruction,
    /// Telling the model to hide something from the person.
    Concealment,
    /// Pressure words that push a model to comply.
    Urgency,
    /// Naming secrets or credential files (`~/.ssh/id_rsa`, `.env`, API keys).
    Secret,
    /// Moving data out through a call's arguments, or to an address.
    Exfiltration,
    /// Naming other tools or servers, or steering calls of them.
    ToolReference,
    /// The tool's name is a built-in's or another server's tool's.
    Shadowing,
}

/// How serious a finding is.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Worth knowing; common in honest descriptions too.
    Low,
    /// Suspicious: rare in honest descriptions.
    Medium,
    /// An attack pattern: hidden text, instruction overrides, concealment, credential paths,
    /// exfiltration through arguments.
    High,
}

/// What a tool with a high-severity finding gets; medium and low findings only warn.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[schemars(rename = "FindingAction")]
pub enum Action {
    /// Offered as usual; the findings are shown.
    Warn,
    /// Offered, but every call asks a person first (the `ask` policy).
    #[default]
    Ask,
    /// Not offered at all.
    Block,
}

impl Action {
    /// What a tool with these findings gets, under the configured action for high-severity
    /// findings (`None`: [`Action::Ask`]).
    pub fn for_findings(configured: Option<Action>, findings: &[Finding]) -> Action {
        if findings.iter().any(|f| f.severity == Severity::High) {
            configured.unwrap_or_default()
        } else {
            Action::Warn
        }
    }
}

/// toolmux's own tools' names (its built-in packs'), which an upstream tool must not pose as
/// (see [`shadowing`]). The tests check the list against what an empty project serves.
pub const BUILTIN_TOOLS: [&str; 35] = [
    "apply_patch",
    "cancel_session",
    "code_execution",
    "delegate",
    "detect_runners",
    "directory_list",
    "file_edit",
    "file_read",
    "file_search",
    "file_write",
    "grep",
    "list_resources",
    "list_runners",
    "list_sessions",
    "read_resource",
    "request_human_input",
    "result_read",
    "run_code",
    "run_session",
    "run_subagent",
    "search_tools",
    "session_logs",
    "session_status",
    "shell",
    "skill_list",
    "skill_load",
    "task_add_note",
    "task_complete",
    "task_create",
    "task_delete",
    "task_list",
    "task_update",
    "task_view",
    "url_fetch",
    "web_search",
];

/// One tool's findings and what they do to it, as `toolmux mcp list --json` and
/// `GET /api/mcp-servers/{name}` show them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolFindings {
    /// The server's own name for the tool (or the prompt, resource or template).
    pub tool: String,
    /// What it is, when it is not a tool.
    #[serde(default, skip_serializing_if = "ItemKind::is_tool")]
    pub item: ItemKind,
    /// What they do: `warn` (offered), `ask` (every call asks a person), `block` (left out).
    pub action: Action,
    /// The findings, by position.
    pub findings: Vec<Finding>,
}

/// One thing the scanner found.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Finding {
    /// What it is about.
    pub kind: FindingKind,
    /// How serious it is.
    pub severity: Severity,
    /// Where in the tool it is: `name`, `title`, `description`, or a JSON pointer into a schema
    /// (`inputSchema/properties/notes/description`; a property's name ends in `/`); empty from
    /// [`scan`].
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub field: String,
    /// Its bytes in the text as the server sent it (before invisible characters were removed).
    pub span: Span,
    /// The matched text, invisible characters removed; for text hidden in tag characters, the
    /// decoded text.
    pub text: String,
    /// Found in text hidden in Unicode tag characters.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub hidden: bool,
}

/// A byte range, `start..end`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Span {
    /// The first byte.
    pub start: usize,
    /// One past the last byte.
    pub end: usize,
}

impl From<Range<usize>> for Span {
    fn from(range: Range<usize>) -> Self {
        Span {
            start: range.start,
            end: range.end,
        }
    }
}

/// Everything found in one text: invisible characters, and the patterns in the visible text
/// and in any text hidden in tag characters. Sorted by position.
pub fn scan(text: &str) -> Vec<Finding> {
    let mut findings = unicode::invisible_runs(text);
    let clean = unicode::Cleaned::new(text);
    for (kind, severity, range) in patterns::matches(&clean.text) {
        findings.push(Finding {
            kind,
            severity,
            field: String::new(),
            span: clean.origin(range.clone()).into(),
            text: clean.text[range].to_string(),
            hidden: false,
        });
    }
    for hidden in unicode::tag_runs(text) {
        for (kind, severity, range) in patterns::matches(&hidden.decoded) {
            findings.push(Finding {
                kind,
                severity,
                field: String::new(),
                span: hidden.span.clone().into(),
                text: hidden.decoded[range].to_string(),
                hidden: true,
            });
        }
    }
    findings.sort_by_key(|f| (f.span.start, f.span.end, f.kind));
    findings
}

/// Everything found in one tool's definition: its name, title, description and every string
/// of its schemas (property names, descriptions, titles, enum values …), each finding's
/// `field` saying where. Shadowing is [`shadowing`]'s, since it needs the other names.
pub fn scan_tool(
    name: &str,
    title: Option<&str>,
    description: &str,
    input_schema: &Value,
    output_schema: Option<&Value>,
) -> Vec<Finding> {
    let mut texts: Vec<(String, &str)> = vec![("name".to_string(), name)];
    if let Some(title) = title {
        texts.push(("title".to_string(), title));
    }
    texts.push(("description".to_string(), description));
    walk_strings(input_schema, "inputSchema", &mut texts);
    if let Some(output) = output_schema {
        walk_strings(output, "outputSchema", &mut texts);
    }
    scan_texts(&texts)
}

/// Everything found in every string and object key of `value` (a prompt or a resource
/// template as MCP lists it), each finding's `field` its JSON pointer (`/description`,
/// `/arguments/0/description`; an object key's ends in `/`).
pub fn scan_value(value: &Value) -> Vec<Finding> {
    let mut texts = Vec::new();
    walk_strings(value, "", &mut texts);
    scan_texts(&texts)
}

/// Everything found in `texts`, each finding's `field` the text's own.
fn scan_texts(texts: &[(String, &str)]) -> Vec<Finding> {
    // Most tools have nothing to find: one pass of the pattern set over all their text (and a
    // look for invisible characters) settles that, instead of one pass per string.
    let joined: String = texts
        .iter()
        .map(|(_, text)| *text)
        .collect::<Vec<_>>()
        .join("\n");
    if matches!(visible(&joined), Cow::Borrowed(_)) && !patterns::any(&joined) {
        return Vec::new();
    }
    texts
        .iter()
        .flat_map(|(field, text)| {
            scan(text).into_iter().map(|mut f| {
                f.field.clone_from(field);
                f
            })
        })
        .collect()
}

/// Adds the JSON pointer and text of every string and every object key in `value`; an object
/// key's pointer ends in `/`. With a stack of its own, not recursion: the value is a server's.
fn walk_strings<'v>(value: &'v Value, pointer: &str, out: &mut Vec<(String, &'v str)>) {
    /// What is left to walk: a value, or an object key to add as it comes.
    enum Next<'v> {
        Value(String, &'v Value),
        Key(String, &'v str),
    }
    let mut stack = vec![Next::Value(pointer.to_string(), value)];
    while let Some(next) = stack.pop() {
        let (pointer, value) = match next {
            Next::Key(pointer, key) => {
                out.push((pointer, key));
                continue;
            }
            Next::Value(pointer, value) => (pointer, value),
        };
        match value {
            Value::String(text) => out.push((pointer, text)),
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate().rev() {
                    stack.push(Next::Value(format!("{pointer}/{i}"), item));
                }
            }
            // Reversed onto the stack, so each key comes out before what it holds, in the
            // object's order.
            Value::Object(fields) => {
                for (key, item) in fields.iter().rev() {
                    stack.push(Next::Value(format!("{pointer}/{key}"), item));
                    stack.push(Next::Key(format!("{pointer}/{key}/"), key));
                }
            }
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }
}

/// A value with every string and object key passed through [`visible`]; `None` when nothing
/// changed (the common case, so nothing is copied). With a stack of its own, not recursion:
/// the value is a server's.
pub fn visible_value(value: &Value) -> Option<Value> {
    let mut texts = Vec::new();
    walk_strings(value, "", &mut texts);
    if texts
        .iter()
        .all(|(_, text)| matches!(visible(text), Cow::Borrowed(_)))
    {
        return None;
    }
    let mut clean = value.clone();
    let mut stack: Vec<&mut Value> = vec![&mut clean];
    while let Some(value) = stack.pop() {
        match value {
            Value::String(text) => {
                if let Cow::Owned(shown) = visible(text) {
                    *text = shown;
                }
            }
            Value::Array(items) => stack.extend(items.iter_mut()),
            Value::Object(fields) => {
                if fields.keys().any(|k| matches!(visible(k), Cow::Owned(_))) {
                    *fields = std::mem::take(fields)
                        .into_iter()
                        .map(|(key, item)| (visible(&key).into_owned(), item))
                        .collect();
                }
                stack.extend(fields.values_mut());
            }
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }
    Some(clean)
}

/// A finding when `name` (a tool's own name, compared without case and with `-` as `_`) is
/// one of `others` (built-in tools, other servers' tools): a model told to use one may be
/// steered to the other.
pub fn shadowing<'a>(name: &str, others: impl IntoIterator<Item = &'a str>) -> Option<Finding> {
    let canonical = |s: &str| visible(s).to_lowercase().replace('-', "_");
    let own = canonical(name);
    others
        .into_iter()
        .find(|other| canonical(other) == own)
        .map(|other| Finding {
            kind: FindingKind::Shadowing,
            severity: Severity::Medium,
            field: "name".to_string(),
            span: (0..name.len()).into(),
            text: other.to_string(),
            hidden: false,
        })
}
