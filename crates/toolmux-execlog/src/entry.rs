//! One line of the log: how a record is written, and how a line is read back.

use std::io::Write;

use chrono::{DateTime, SecondsFormat, Utc};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value;
use toolmux_core::{Channel, ExecutionRecord, Outcome, ToolResult};
use uuid::Uuid;

use crate::redact::redact;

/// One call as read back from the log: the line format of the [crate documentation](crate),
/// field for field. Serializing it gives the same line again.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LogEntry {
    /// Unique, time-ordered id of the call.
    pub id: Uuid,
    /// When the call started (UTC, microsecond precision).
    #[serde(serialize_with = "micros")]
    pub timestamp: DateTime<Utc>,
    /// The registry name requested.
    pub tool: String,
    /// The tool's source; `None` when the name did not resolve.
    #[serde(default)]
    pub source: Option<String>,
    /// The channel the call came through.
    pub channel: Channel,
    /// The session or conversation, when the channel has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// The arguments, with secrets redacted.
    #[serde(default)]
    pub arguments: Value,
    /// How the call ended.
    pub outcome: Outcome,
    /// The error message, for every outcome but `ok`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Wall time of the whole pipeline, in microseconds.
    pub duration_us: u64,
    /// The `ToolResult` as JSON, or, when `result_truncated`, a string holding the start of
    /// its serialization.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    /// Size in bytes of the full serialized result, whether or not it was truncated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_bytes: Option<u64>,
    /// The result was larger than the cap and `result` holds only its start.
    #[serde(default, skip_serializing_if = "is_false")]
    pub result_truncated: bool,
    /// Where the whole result of a truncated one is kept, relative to the log folder
    /// (`results/YYYY-MM-DD/<id>.json`), so a caller that was handed a cut result can find it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_file: Option<String>,
}

impl LogEntry {
    /// The result as a `ToolResult`, when there is one and it was stored whole.
    pub fn tool_result(&self) -> Option<ToolResult> {
        if self.result_truncated {
            return None;
        }
        serde_json::from_value(self.result.clone()?).ok()
    }
}

fn is_false(value: &bool) -> bool {
    !value
}

/// RFC 3339 in UTC with exactly six fractional digits and a `Z`, so lines sort as text too.
fn micros<S: Serializer>(timestamp: &DateTime<Utc>, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&timestamp.to_rfc3339_opts(SecondsFormat::Micros, true))
}

/// A record in its written form. It borrows the record so that writing needs no copies beyond
/// the redacted arguments, which are redacted in place.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Line<'a> {
    id: Uuid,
    #[serde(serialize_with = "micros")]
    timestamp: DateTime<Utc>,
    tool: &'a str,
    source: Option<&'a str>,
    channel: Channel,
    #[serde(skip_serializing_if = "Option::is_none")]
    session: Option<&'a str>,
    arguments: &'a Value,
    outcome: Outcome,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a str>,
    duration_us: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    result: Option<StoredResult<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    result_bytes: Option<u64>,
    #[serde(skip_serializing_if = "is_false")]
    result_truncated: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    result_file: Option<&'a str>,
}

/// Where the whole result of call `id`, started on `date`, is kept when its line holds only the
/// start: relative to the log folder, in a folder per day so retention removes it with its day.
pub(crate) fn result_file(date: chrono::NaiveDate, id: &Uuid) -> String {
    format!("{RESULTS_DIR}/{}/{id}.json", date.format("%Y-%m-%d"))
}

/// The folder, inside the log folder, of whole results too large for their line.
pub(crate) const RESULTS_DIR: &str = "results";

/// The `result` field: the whole result, or the start of its serialization as a string.
#[derive(Serialize)]
#[serde(untagged)]
enum StoredResult<'a> {
    Whole(&'a ToolResult),
    Start(&'a str),
}

/// Writes `record` as one line (with its `\n`) into `out`, after clearing it: redacts the
/// arguments and caps the result at `cap` bytes. When the result is cut, returns its whole
/// serialization and the path (relative to the log folder) the line names for it, for the
/// writer to store. Runs on the writer thread, never on the caller's.
pub(crate) fn write_line(
    mut record: ExecutionRecord,
    cap: usize,
    out: &mut Vec<u8>,
) -> Option<(String, String)> {
    redact(&mut record.arguments);
    // The size of the serialized result decides: within the cap it is serialized once more
    // straight into the line; over it, its text is kept, the start goes into the line and the
    // whole into a file of its own.
    let size = record.result.as_ref().map(serialized_size);
    let full_text: Option<String> = match (&record.result, size) {
        (Some(result), Some(size)) if size > cap => {
            Some(serde_json::to_string(result).unwrap_or_default())
        }
        _ => None,
    };
    let file = full_text
        .as_ref()
        .map(|_| result_file(record.timestamp.date_naive(), &record.id));
    let result = match (&record.result, &full_text) {
        (None, _) => None,
        (Some(result), None) => Some(StoredResult::Whole(result)),
        (Some(_), Some(text)) => {
            let mut cut = cap.min(text.len());
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            Some(StoredResult::Start(&text[..cut]))
        }
    };
    let line = Line {
        id: record.id,
        timestamp: record.timestamp,
        tool: &record.tool,
        source: record.source.as_deref(),
        channel: record.channel,
        session: record.session.as_deref(),
        arguments: &record.arguments,
        outcome: record.outcome,
        error: record.error.as_deref(),
        duration_us: record.duration_us,
        result,
        result_bytes: size.map(|s| s as u64),
        result_truncated: full_text.is_some(),
        result_file: file.as_deref(),
    };
    out.clear();
    // Serializing into a Vec fails only for a map with non-string keys, which `Value` and
    // `ToolResult` cannot hold.
    if let Err(error) = serde_json::to_writer(&mut *out, &line) {
        tracing::warn!(%error, tool = %record.tool, "execution record could not be serialized");
        out.clear();
        return None;
    }
    out.push(b'\n');
    full_text.zip(file)
}

/// The size of a value's compact JSON, without building it.
fn serialized_size(value: &impl Serialize) -> usize {
    struct Counter(usize);
    impl Write for Counter {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut counter = Counter(0);
    // Counting cannot fail, and neither can serializing a `ToolResult`.
    let _ = serde_json::to_writer(&mut counter, value);
    counter.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn record(result: Option<ToolResult>) -> ExecutionRecord {
        ExecutionRecord {
            id: Uuid::now_v7(),
            timestamp: "2026-11-22T10:15:30.123456789Z".parse().unwrap(),
            tool: "grep".into(),
            source: Some("workspace".into()),
            channel: Channel::Mcp,
            session: None,
            arguments: json!({"pattern": "x"}),
            outcome: Outcome::Ok,
            error: None,
            duration_us: 42,
            result,
        }
    }

    fn line_of(record: ExecutionRecord, cap: usize) -> Value {
        let mut out = Vec::new();
        write_line(record, cap, &mut out);
        assert_eq!(out.last(), Some(&b'\n'));
        assert_eq!(out.iter().filter(|&&b| b == b'\n').count(), 1);
        serde_json::from_slice(&out).unwrap()
    }

    #[test]
    fn line_has_camel_case_keys_micro_timestamps_and_omits_empty_optionals() {
        let mut rec = record(None);
        rec.source = None;
        let line = line_of(rec, 100);
        let keys: Vec<&str> = line
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            keys,
            [
                "id",
                "timestamp",
                "tool",
                "source",
                "channel",
                "arguments",
                "outcome",
                "durationUs"
            ]
        );
        assert_eq!(line["timestamp"], "2026-11-22T10:15:30.123456Z");
        assert_eq!(line["source"], Value::Null);
        assert_eq!(line["channel"], "mcp");
    }

    #[test]
    fn small_result_is_kept_whole_with_its_size() {
        let result = ToolResult::text("hello");
        let size = serde_json::to_string(&result).unwrap().len();
        let line = line_of(record(Some(result.clone())), size);
        assert_eq!(line["result"], serde_json::to_value(&result).unwrap());
        assert_eq!(line["resultBytes"], size);
        assert!(line.get("resultTruncated").is_none());
    }

    #[test]
    fn large_result_is_cut_to_the_cap_with_its_full_size() {
        let result = ToolResult::text("x".repeat(1000));
        let full = serde_json::to_string(&result).unwrap();
        let line = line_of(record(Some(result)), 64);
        assert_eq!(line["resultTruncated"], true);
        assert_eq!(line["resultBytes"], full.len());
        assert_eq!(line["result"].as_str().unwrap(), &full[..64]);
    }

    #[test]
    fn cut_never_splits_a_character() {
        // `{"content":[{"type":"text","text":"` is 36 bytes; then 3-byte characters.
        let result = ToolResult::text("€".repeat(100));
        let full = serde_json::to_string(&result).unwrap();
        let prefix = full.find('€').unwrap();
        let line = line_of(record(Some(result)), prefix + 4);
        let start = line["result"].as_str().unwrap();
        assert_eq!(start.len(), prefix + 3);
        assert!(full.starts_with(start));
    }

    #[test]
    fn written_line_reads_back_as_the_same_entry() {
        let mut rec = record(Some(ToolResult::structured(json!({"n": 1}))));
        rec.session = Some("s-1".into());
        rec.outcome = Outcome::Error;
        rec.error = Some("boom".into());
        let mut out = Vec::new();
        write_line(rec, 16 * 1024, &mut out);
        let entry: LogEntry = serde_json::from_slice(&out).unwrap();
        assert_eq!(entry.session.as_deref(), Some("s-1"));
        assert_eq!(
            entry.tool_result(),
            Some(ToolResult::structured(json!({"n": 1})))
        );
        let mut again = serde_json::to_vec(&entry).unwrap();
        again.push(b'\n');
        assert_eq!(String::from_utf8(again), String::from_utf8(out));
    }
}
