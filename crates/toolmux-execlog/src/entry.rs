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
    /// Who called, when the channel knows (an MCP client's name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caller: Option<String>,
    /// The call this one was made for: a delegated task's calls name their `delegate` call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<Uuid>,
    /// The earlier approval that allowed this call without asking (a person's "allow for this
    /// conversation").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approved_by: Option<Uuid>,
    /// The arguments, with secrets redacted; when `arguments_truncated`, a string holding the
    /// start of their serialization; `null` in an abridged line.
    #[serde(default)]
    pub arguments: Value,
    /// Size in bytes of the full serialized (redacted) arguments, when they were cut or left
    /// out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments_bytes: Option<u64>,
    /// The arguments were larger than the cap and `arguments` holds only their start.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub arguments_truncated: bool,
    /// Where the whole arguments of a cut line are kept, relative to the log folder, when they
    /// were small enough to keep (`results/YYYY-MM-DD/<id>.arguments.json`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments_file: Option<String>,
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
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub result_truncated: bool,
    /// Where the whole result of a truncated one is kept, relative to the log folder
    /// (`results/YYYY-MM-DD/<id>.json`), so a caller that was handed a cut result can find it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_file: Option<String>,
    /// The day's log had passed its size budget when this call was written, so the line holds
    /// only the call's facts and sizes: no arguments, no result.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub abridged: bool,
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
    #[serde(skip_serializing_if = "Option::is_none")]
    caller: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    parent: Option<Uuid>,
    #[serde(skip_serializing_if = "Option::is_none")]
    approved_by: Option<Uuid>,
    arguments: Stored<'a, Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    arguments_bytes: Option<u64>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    arguments_truncated: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    arguments_file: Option<&'a str>,
    outcome: Outcome,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a str>,
    duration_us: u64,
    #[serde(skip_serializing_if = "Stored::is_absent")]
    result: Stored<'a, ToolResult>,
    #[serde(skip_serializing_if = "Option::is_none")]
    result_bytes: Option<u64>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    result_truncated: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    result_file: Option<&'a str>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    abridged: bool,
}

/// Where the whole result of call `id`, started on `date`, is kept when its line holds only the
/// start: relative to the log folder, in a folder per day so retention removes it with its day.
pub(crate) fn result_file(date: chrono::NaiveDate, id: &Uuid) -> String {
    format!("{RESULTS_DIR}/{}/{id}.json", date.format("%Y-%m-%d"))
}

/// Where the whole arguments of call `id` are kept when its line holds only their start.
pub(crate) fn arguments_file(date: chrono::NaiveDate, id: &Uuid) -> String {
    format!(
        "{RESULTS_DIR}/{}/{id}.arguments.json",
        date.format("%Y-%m-%d")
    )
}

/// The folder, inside the log folder, of whole results too large for their line.
pub(crate) const RESULTS_DIR: &str = "results";

/// The most bytes of a tool name, session or caller a line keeps: they come from the caller,
/// and a name is never this long unless someone is filling the disk.
const NAME_CAP_BYTES: usize = 256;

/// The most bytes of an error message a line keeps (2 KiB): more than any message meant to be
/// read, and the error can repeat what the caller sent.
const ERROR_CAP_BYTES: usize = 2 * 1024;

/// A field that is stored whole, as the start of its serialization, or not at all (an abridged
/// line, or a call without a result).
#[derive(Serialize)]
#[serde(untagged)]
enum Stored<'a, T> {
    Whole(&'a T),
    Start(String),
    Absent(()),
}

impl<T> Stored<'_, T> {
    fn is_absent(&self) -> bool {
        matches!(self, Self::Absent(()))
    }
}

/// How much of a record a line may hold.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Caps {
    /// Arguments serialized larger than this are cut to it.
    pub arguments: usize,
    /// Results serialized larger than this are cut to it.
    pub result: usize,
    /// Cut arguments or results at most this large are kept whole in a file of their own.
    pub whole_file: usize,
    /// The day's budget is spent: keep the call's facts and sizes only.
    pub abridged: bool,
}

/// A whole value to keep beside the day file: its path relative to the log folder, and its
/// serialization.
pub(crate) type WholeFile = (String, String);

/// A field after capping: what the line holds, its full size when that is worth saying, and
/// the whole text to keep in a file.
struct Capped<'a, T> {
    stored: Stored<'a, T>,
    size: u64,
    truncated: bool,
    whole: Option<String>,
}

/// Caps one field at `cap` bytes of serialization. Only a value small enough to keep whole is
/// ever serialized whole; a larger one is serialized only up to its cut, so a 100 MB argument
/// costs the writer `cap` bytes, not 100 MB. In an abridged line no field is stored, only its
/// size: this is the one place abridging leaves values out.
fn cap_field<'a, T: Serialize>(value: &'a T, cap: usize, caps: &Caps) -> Capped<'a, T> {
    let size = serialized_size(value);
    if caps.abridged {
        return Capped {
            stored: Stored::Absent(()),
            size: size as u64,
            truncated: false,
            whole: None,
        };
    }
    if size <= cap {
        return Capped {
            stored: Stored::Whole(value),
            size: size as u64,
            truncated: false,
            whole: None,
        };
    }
    let whole = (size <= caps.whole_file).then(|| serde_json::to_string(value).unwrap_or_default());
    let start = match &whole {
        Some(text) => cut(text, cap).to_string(),
        None => serialized_start(value, cap),
    };
    Capped {
        stored: Stored::Start(start),
        size: size as u64,
        truncated: true,
        whole,
    }
}

/// The longest start of `text` within `cap` bytes that ends on a character boundary.
fn cut(text: &str, cap: usize) -> &str {
    let mut end = cap.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// The first `cap` bytes (back to a character boundary) of a value's compact JSON, without
/// serializing the rest: the writer refuses bytes past the cap, which stops serde.
fn serialized_start(value: &impl Serialize, cap: usize) -> String {
    struct Bounded {
        bytes: Vec<u8>,
        cap: usize,
    }
    impl Write for Bounded {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            let room = self.cap - self.bytes.len();
            if room == 0 {
                return Err(std::io::Error::other("full"));
            }
            let n = room.min(buf.len());
            self.bytes.extend_from_slice(&buf[..n]);
            Ok(n)
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut out = Bounded {
        bytes: Vec::with_capacity(cap),
        cap,
    };
    // Stopping at the cap is the point: the error it causes is expected.
    let _ = serde_json::to_writer(&mut out, value);
    match String::from_utf8(out.bytes) {
        Ok(text) => text,
        Err(e) => {
            let valid = e.utf8_error().valid_up_to();
            let mut bytes = e.into_bytes();
            bytes.truncate(valid);
            String::from_utf8(bytes).unwrap_or_default()
        }
    }
}

/// Writes `record` as one line (with its `\n`) into `out`, after clearing it: redacts the
/// arguments and caps them and the result as `caps` says. Returns the whole values to keep in
/// files of their own (the line names them), for the writer to store before the line. Runs on
/// the writer thread, never on the caller's.
pub(crate) fn write_line(
    mut record: ExecutionRecord,
    caps: Caps,
    out: &mut Vec<u8>,
) -> Vec<WholeFile> {
    redact(&mut record.arguments);
    // A structured result is redacted by the same key rule: a tool that returns a secret
    // (the internal pack's `secrets_get`) returns it under a secret-looking key.
    if let Some(structured) = record
        .result
        .as_mut()
        .and_then(|r| r.structured_content.as_mut())
    {
        redact(structured);
    }
    let date = record.timestamp.date_naive();
    let arguments = cap_field(&record.arguments, caps.arguments, &caps);
    let result = record
        .result
        .as_ref()
        .map(|r| cap_field(r, caps.result, &caps));
    let mut files = Vec::new();
    let arguments_path = arguments
        .whole
        .as_ref()
        .map(|_| arguments_file(date, &record.id));
    let result_path = result
        .as_ref()
        .and_then(|r| r.whole.as_ref())
        .map(|_| result_file(date, &record.id));
    let error = record.error.as_deref().map(|e| cut(e, ERROR_CAP_BYTES));
    // Every line with a result says how large it was.
    let (result_stored, result_bytes, result_truncated, result_whole) = match result {
        Some(r) => (r.stored, Some(r.size), r.truncated, r.whole),
        None => (Stored::Absent(()), None, false, None),
    };
    let line = Line {
        id: record.id,
        timestamp: record.timestamp,
        tool: cut(&record.tool, NAME_CAP_BYTES),
        source: record.source.as_deref().map(|s| cut(s, NAME_CAP_BYTES)),
        channel: record.channel,
        session: record.session.as_deref().map(|s| cut(s, NAME_CAP_BYTES)),
        caller: record.caller.as_deref().map(|s| cut(s, NAME_CAP_BYTES)),
        parent: record.parent,
        approved_by: record.approved_by,
        arguments: arguments.stored,
        arguments_bytes: (arguments.truncated || caps.abridged).then_some(arguments.size),
        arguments_truncated: arguments.truncated,
        arguments_file: arguments_path.as_deref(),
        outcome: record.outcome,
        error,
        duration_us: record.duration_us,
        result: result_stored,
        result_bytes,
        result_truncated,
        result_file: result_path.as_deref(),
        abridged: caps.abridged,
    };
    out.clear();
    // Serializing into a Vec fails only for a map with non-string keys, which `Value` and
    // `ToolResult` cannot hold.
    if let Err(error) = serde_json::to_writer(&mut *out, &line) {
        tracing::warn!(%error, tool = %line.tool, "execution record could not be serialized");
        out.clear();
        return files;
    }
    out.push(b'\n');
    if let (Some(path), Some(text)) = (arguments_path, arguments.whole) {
        files.push((path, text));
    }
    if let (Some(path), Some(text)) = (result_path, result_whole) {
        files.push((path, text));
    }
    files
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
            caller: None,
            arguments: json!({"pattern": "x"}),
            outcome: Outcome::Ok,
            error: None,
            duration_us: 42,
            result,
            parent: None,
            approved_by: None,
        }
    }

    fn caps(result: usize) -> Caps {
        Caps {
            arguments: 16 * 1024,
            result,
            whole_file: usize::MAX,
            abridged: false,
        }
    }

    fn line_of(record: ExecutionRecord, cap: usize) -> Value {
        let mut out = Vec::new();
        write_line(record, caps(cap), &mut out);
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
        write_line(rec, caps(16 * 1024), &mut out);
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

    #[test]
    fn d3_large_arguments_are_cut_with_their_size_and_kept_whole_only_up_to_the_file_cap() {
        let mut rec = record(None);
        rec.arguments = json!({"path": "README.md", "junk": "q".repeat(3 << 20)});
        rec.outcome = Outcome::Invalid;
        rec.error = Some(format!("invalid: {}", "e".repeat(1 << 20)));
        let full = serde_json::to_string(&rec.arguments).unwrap();
        let small_files = Caps {
            arguments: 1024,
            result: 1024,
            whole_file: 1 << 20,
            abridged: false,
        };
        let mut out = Vec::new();
        let files = write_line(rec.clone(), small_files, &mut out);
        assert!(out.len() < 4 * 1024, "{} bytes", out.len());
        let line: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(line["argumentsTruncated"], true);
        assert_eq!(line["argumentsBytes"], full.len());
        assert_eq!(line["arguments"].as_str().unwrap(), &full[..1024]);
        // Too large to keep whole: no file, and the line names none.
        assert!(files.is_empty());
        assert!(line.get("argumentsFile").is_none());

        let big_files = Caps {
            whole_file: 8 << 20,
            ..small_files
        };
        let files = write_line(rec, big_files, &mut out);
        let line: Value = serde_json::from_slice(&out).unwrap();
        let path = line["argumentsFile"].as_str().unwrap();
        assert_eq!(files, [(path.to_string(), full)]);
    }

    #[test]
    fn d3_an_abridged_line_keeps_the_facts_and_sizes_only() {
        let mut rec = record(Some(ToolResult::text("x".repeat(100))));
        rec.arguments = json!({"junk": "q".repeat(1000)});
        let caps = Caps {
            abridged: true,
            ..caps(16 * 1024)
        };
        let mut out = Vec::new();
        assert!(write_line(rec, caps, &mut out).is_empty());
        let entry: LogEntry = serde_json::from_slice(&out).unwrap();
        assert!(entry.abridged);
        assert_eq!(entry.arguments, Value::Null);
        assert_eq!(entry.arguments_bytes, Some(1011));
        assert_eq!(entry.result, None);
        assert!(entry.result_bytes.is_some_and(|b| b > 100));
        assert_eq!(entry.tool, "grep");
    }
}
