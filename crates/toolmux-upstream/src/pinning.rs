//! Where a server's pins are kept and what is pinned of a tool, prompt and resource template
//! (see [`toolmux_trust::pins`]):
//! `<state>/servers/<stem>.pins.json` beside the discovery cache, written atomically. Unlike
//! the cache it is never rebuilt: it is what a person accepted, and it outlives configuration
//! changes (a new version of a server's package presenting other definitions is a change).

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::{Map, Value, json};
use toolmux_trust::ItemKind;
use toolmux_trust::pins::{Judgement, Pin, Pins, Presented, Stored, TrustMode, judge};

use crate::cache::{CachedTool, DiscoveryRecord};
use crate::error::UpstreamError;

/// The largest pins file read; a larger one is unreadable (every item held). A pin is a
/// fingerprint and a definition (schemas at most [`crate::MAX_SCHEMA_BYTES`] each), so this
/// fits thousands of tools.
pub const MAX_PINS_BYTES: u64 = 16 * 1024 * 1024;

/// The pins file of the server whose discovery cache is `cache`.
pub fn pins_path(cache: &Path) -> PathBuf {
    cache.with_extension("pins.json")
}

/// What is pinned of a tool: everything a model reads of it (name, title, description, both
/// schemas, annotations), as models see it. Invisible characters are not in it (they are
/// removed and flagged by the scanner); what they hid is flagged on every discovery.
pub(crate) fn definition(tool: &CachedTool) -> Value {
    let mut fields = Map::new();
    fields.insert("name".into(), json!(tool.name));
    if let Some(title) = &tool.title {
        fields.insert("title".into(), json!(title));
    }
    fields.insert("description".into(), json!(tool.description));
    fields.insert("inputSchema".into(), tool.input_schema.clone());
    if let Some(output) = &tool.output_schema {
        fields.insert("outputSchema".into(), output.clone());
    }
    if !tool.annotations.is_empty() {
        fields.insert(
            "annotations".into(),
            serde_json::to_value(&tool.annotations).unwrap_or(Value::Null),
        );
    }
    Value::Object(fields)
}

/// Each pinned item of a record (tools, then prompts, then resource templates) with its pin as
/// presented now. A prompt or template is pinned as the server listed it (every field, hidden
/// characters included: the cache keeps it as sent).
pub(crate) fn presented(record: &DiscoveryRecord) -> Vec<Presented> {
    let tools = record.tools.iter().map(|tool| Presented {
        item: ItemKind::Tool,
        name: tool.name.clone(),
        pin: Pin::of(definition(tool)),
    });
    let prompts = record
        .prompts
        .iter()
        .map(|p| listed(ItemKind::Prompt, &p.name, p));
    let templates = record
        .resource_templates
        .iter()
        .map(|t| listed(ItemKind::ResourceTemplate, &t.name, t));
    tools.chain(prompts).chain(templates).collect()
}

fn listed<T: Serialize>(item: ItemKind, name: &str, listed: &T) -> Presented {
    Presented {
        item,
        name: name.to_string(),
        // A listed MCP type always serialises; were it not to, `null` is pinned and any later
        // definition differs from it (held), which fails safe.
        pin: Pin::of(serde_json::to_value(listed).unwrap_or(Value::Null)),
    }
}

/// The record's items judged against the pins.
pub(crate) fn judged(stored: &Stored, record: &DiscoveryRecord, mode: TrustMode) -> Judgement {
    judge(stored, &presented(record), mode)
}

/// Reads a server's pins. A file that cannot be read (too large, a link, not a file) or parsed
/// (malformed, wrong types, unknown fields) is [`Stored::Unreadable`] with why: everything is
/// held and the file is left as it is.
pub(crate) fn read(server: &str, path: &Path) -> Stored {
    let text = match toolmux_files::read_text(path, MAX_PINS_BYTES, toolmux_files::Links::Refuse) {
        Ok(text) => text,
        Err(e) if e.is_not_found() => return Stored::Never,
        Err(e) => return unreadable(server, path, e.to_string()),
    };
    match serde_json::from_str(&text) {
        Ok(pins) => Stored::Pinned(pins),
        Err(e) => unreadable(server, path, format!("not pins: {e}")),
    }
}

fn unreadable(server: &str, path: &Path, problem: String) -> Stored {
    let problem = format!("{}: {problem}", path.display());
    tracing::warn!(
        server,
        "cannot read the pinned definitions, every item is held: {problem}"
    );
    Stored::Unreadable(problem)
}

/// Writes a server's pins atomically.
pub(crate) fn write(server: &str, path: &Path, pins: &Pins) -> Result<(), UpstreamError> {
    let failed = |message: String| UpstreamError::Pins {
        server: server.to_string(),
        path: path.display().to_string(),
        message,
    };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| failed(e.to_string()))?;
    }
    let mut bytes = serde_json::to_vec_pretty(pins).map_err(|e| failed(e.to_string()))?;
    bytes.push(b'\n');
    toolmux_files::write_atomic(path, &bytes).map_err(|e| failed(e.to_string()))
}
