//! Where a server's pins are kept and what is pinned of a tool (see [`toolmux_trust::pins`]):
//! `<state>/servers/<stem>.pins.json` beside the discovery cache, written atomically. Unlike
//! the cache it is never rebuilt: it is what a person accepted, and it outlives configuration
//! changes (a new version of a server's package presenting other definitions is a change).

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};
use toolmux_trust::pins::{Judgement, Pin, Pins, TrustMode, judge};

use crate::cache::{CachedTool, DiscoveryRecord};
use crate::error::UpstreamError;

/// The largest pins file read; a larger one is read as pinning nothing (every tool held).
const MAX_PINS_BYTES: u64 = 64 * 1024 * 1024;

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

/// Each tool of a record under its own name with its pin as presented now.
pub(crate) fn presented(record: &DiscoveryRecord) -> Vec<(String, Pin)> {
    record
        .tools
        .iter()
        .map(|tool| (tool.name.clone(), Pin::of(definition(tool))))
        .collect()
}

/// The record's tools judged against the pins.
pub(crate) fn judged(
    pinned: Option<&Pins>,
    record: &DiscoveryRecord,
    mode: TrustMode,
) -> Judgement {
    judge(pinned, &presented(record), mode)
}

/// Reads a server's pins: `None` when it was never discovered (no file). A file that cannot be
/// read or parsed pins nothing (every tool is held), so that spoiling it cannot turn the next
/// discovery into a first one.
pub(crate) fn read(server: &str, path: &Path) -> Option<Pins> {
    let text = match toolmux_files::read_text(path, MAX_PINS_BYTES, toolmux_files::Links::Refuse) {
        Ok(text) => text,
        Err(e) if e.is_not_found() => return None,
        Err(e) => {
            tracing::warn!(server, path = %path.display(), error = %e, "cannot read the pinned tools; every tool is held");
            return Some(Pins::default());
        }
    };
    match serde_json::from_str(&text) {
        Ok(pins) => Some(pins),
        Err(e) => {
            tracing::warn!(server, path = %path.display(), error = %e, "malformed pinned tools; every tool is held");
            Some(Pins::default())
        }
    }
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
