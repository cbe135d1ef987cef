//! The execution log end to end, on real temporary folders, through the public API only.

use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Days, NaiveDate, Utc};
use serde_json::{Value, json};
use toolmux_core::{Channel, ExecutionRecord, ExecutionSink, Outcome, ToolResult};
use toolmux_execlog::{
    ExecutionLog, LogBudget, LogEntry, LogError, LogQuery, LogSettings, day_file, follow, query,
};
use uuid::Uuid;

fn at(text: &str) -> DateTime<Utc> {
    text.parse().unwrap()
}

fn date(text: &str) -> NaiveDate {
    NaiveDate::parse_from_str(text, "%Y-%m-%d").unwrap()
}

/// Settings that keep every fixed test date, however long ago.
fn keep_all(dir: &Path) -> LogSettings {
    LogSettings {
        retention_days: u32::MAX,
        ..LogSettings::new(dir)
    }
}

fn record(tool: &str, timestamp: DateTime<Utc>) -> ExecutionRecord {
    ExecutionRecord {
        id: Uuid::now_v7(),
        timestamp,
        tool: tool.to_string(),
        source: Some("workspace".into()),
        channel: Channel::Rest,
        session: None,
        caller: None,
        arguments: json!({"path": "src/lib.rs"}),
        outcome: Outcome::Ok,
        error: None,
        duration_us: 125,
        result: Some(ToolResult::text("done")),
        parent: None,
        approved_by: None,
    }
}

/// Writes `records` through a log of its own and waits for them to be on disk.
fn write_all(dir: &Path, records: impl IntoIterator<Item = ExecutionRecord>) {
    let log = ExecutionLog::open(keep_all(dir)).unwrap();
    for r in records {
        log.record(r);
    }
    log.flush();
}

/// A log directory holding a call to each tool at its time (RFC 3339), in the order given.
fn logged_at(calls: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    write_all(
        dir.path(),
        calls.iter().map(|(tool, time)| record(tool, at(time))),
    );
    dir
}

fn tools(entries: &[LogEntry]) -> Vec<&str> {
    entries.iter().map(|e| e.tool.as_str()).collect()
}

fn lines_of(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Runs `f` with warnings captured, and returns them as text.
fn warnings_during<T>(f: impl FnOnce() -> T) -> (T, String) {
    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);
    impl Write for Captured {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .with_max_level(tracing::Level::WARN)
        .finish();
    let out = tracing::subscriber::with_default(subscriber, f);
    let text = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    (out, text)
}

#[test]
fn open_creates_a_missing_folder() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join(".toolmux/state/logs");
    let log = ExecutionLog::open(LogSettings::new(&dir)).unwrap();
    assert!(dir.is_dir());
    assert_eq!(log.dir(), dir);
}

#[test]
fn records_are_written_as_lines_and_read_back_by_query() {
    let dir = tempfile::tempdir().unwrap();
    let mut call = record("grep", at("2026-11-22T10:15:30.123456789Z"));
    call.session = Some("s-1".into());
    call.channel = Channel::Mcp;
    let denied = ExecutionRecord {
        outcome: Outcome::Denied,
        error: Some("policy says deny".into()),
        result: None,
        source: None,
        ..record("shell", at("2026-11-22T10:16:00Z"))
    };
    write_all(dir.path(), [call.clone(), denied]);

    let lines = lines_of(&day_file(dir.path(), date("2026-11-22")));
    assert_eq!(lines.len(), 2);
    let result = serde_json::to_value(ToolResult::text("done")).unwrap();
    let result_bytes = serde_json::to_string(&ToolResult::text("done"))
        .unwrap()
        .len();
    assert_eq!(
        lines[0],
        json!({
            "id": call.id,
            "timestamp": "2026-11-22T10:15:30.123456Z",
            "tool": "grep",
            "source": "workspace",
            "channel": "mcp",
            "session": "s-1",
            "arguments": {"path": "src/lib.rs"},
            "outcome": "ok",
            "durationUs": 125,
            "result": result,
            "resultBytes": result_bytes
        })
    );
    assert_eq!(lines[1]["outcome"], "denied");
    assert_eq!(lines[1]["error"], "policy says deny");
    assert_eq!(lines[1]["source"], Value::Null);
    assert!(lines[1].get("result").is_none() && lines[1].get("resultBytes").is_none());

    let entries = query(dir.path(), &LogQuery::default()).unwrap();
    assert_eq!(tools(&entries), ["grep", "shell"]);
    assert_eq!(entries[0].id, call.id);
    assert_eq!(entries[0].session.as_deref(), Some("s-1"));
    assert_eq!(entries[0].tool_result(), Some(ToolResult::text("done")));
    assert_eq!(entries[1].error.as_deref(), Some("policy says deny"));
}

#[test]
fn secret_arguments_are_redacted_on_disk() {
    let dir = tempfile::tempdir().unwrap();
    let mut call = record("http_get", at("2026-11-22T10:00:00Z"));
    call.arguments = json!({
        "url": "https://example.com",
        "headers": {"Authorization": "Bearer sk-123", "X-Api-Key": "k"},
        "auth": {"user": "ann", "password": "hunter2"},
        "tokenizer": "cl100k"
    });
    write_all(dir.path(), [call]);
    let text = std::fs::read_to_string(day_file(dir.path(), date("2026-11-22"))).unwrap();
    assert!(
        !text.contains("sk-123") && !text.contains("hunter2"),
        "{text}"
    );
    let entry = &query(dir.path(), &LogQuery::default()).unwrap()[0];
    assert_eq!(
        entry.arguments,
        json!({
            "url": "https://example.com",
            "headers": {"Authorization": "[redacted]", "X-Api-Key": "[redacted]"},
            "auth": "[redacted]",
            "tokenizer": "cl100k"
        })
    );
}

#[test]
fn results_over_the_cap_are_stored_cut_with_their_full_size() {
    let dir = tempfile::tempdir().unwrap();
    let log = ExecutionLog::open(LogSettings {
        result_cap_bytes: 100,
        ..keep_all(dir.path())
    })
    .unwrap();
    let big = ToolResult::text("é".repeat(500));
    let big_text = serde_json::to_string(&big).unwrap();
    let small = ToolResult::text("ok");
    let mut first = record("big", at("2026-11-22T10:00:00Z"));
    first.result = Some(big);
    let mut second = record("small", at("2026-11-22T10:00:01Z"));
    second.result = Some(small.clone());
    log.record(first);
    log.record(second);
    log.flush();

    let entries = query(dir.path(), &LogQuery::default()).unwrap();
    let (big, small_entry) = (&entries[0], &entries[1]);
    assert!(big.result_truncated);
    assert_eq!(big.result_bytes, Some(big_text.len() as u64));
    let start = big.result.as_ref().and_then(Value::as_str).unwrap();
    assert!(start.len() <= 100 && start.len() >= 99, "{}", start.len());
    assert!(big_text.starts_with(start));
    assert_eq!(big.tool_result(), None);
    // The whole result is kept beside the day file, where the line says.
    let kept = big.result_file.as_deref().expect("a result file");
    assert_eq!(kept, format!("results/2026-11-22/{}.json", big.id));
    let whole = std::fs::read_to_string(dir.path().join(kept)).unwrap();
    assert_eq!(whole, big_text);

    assert!(!small_entry.result_truncated);
    assert_eq!(small_entry.result_file, None);
    assert_eq!(small_entry.tool_result(), Some(small));
    let line = &lines_of(&day_file(dir.path(), date("2026-11-22")))[1];
    assert!(line.get("resultTruncated").is_none());
}

#[test]
fn records_go_to_the_file_of_their_own_utc_day() {
    let dir = logged_at(&[
        ("a", "2026-11-21T23:59:59.999999Z"),
        // 00:30 in UTC+02:00 is still the 21st in UTC.
        ("b", "2026-11-22T00:30:00+02:00"),
        ("c", "2026-11-22T00:00:00Z"),
        ("d", "2026-11-24T12:00:00Z"),
    ]);
    let day = |d: &str| -> Vec<String> {
        lines_of(&day_file(dir.path(), date(d)))
            .iter()
            .map(|l| l["tool"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(day("2026-11-21"), ["a", "b"]);
    assert_eq!(day("2026-11-22"), ["c"]);
    assert!(!day_file(dir.path(), date("2026-11-23")).exists());
    assert_eq!(day("2026-11-24"), ["d"]);
}

#[test]
fn query_spans_days_in_time_order_and_reads_only_the_days_in_range() {
    let dir = logged_at(&[
        ("d2-late", "2026-11-02T20:00:00Z"),
        // Logged after the call above, but it started earlier.
        ("d2-early", "2026-11-02T08:00:00Z"),
        ("d1", "2026-11-01T12:00:00Z"),
        ("d3", "2026-11-03T12:00:00Z"),
    ]);
    let all = query(dir.path(), &LogQuery::default()).unwrap();
    assert_eq!(tools(&all), ["d1", "d2-early", "d2-late", "d3"]);

    // A corrupt line in a day outside the range would warn if that file were read.
    let mut day1 = std::fs::OpenOptions::new()
        .append(true)
        .open(day_file(dir.path(), date("2026-11-01")))
        .unwrap();
    writeln!(day1, "not json").unwrap();
    let q = LogQuery {
        since: Some(at("2026-11-02T00:00:00Z")),
        until: Some(at("2026-11-03T00:00:00Z")),
        ..LogQuery::default()
    };
    let (entries, warnings) = warnings_during(|| query(dir.path(), &q).unwrap());
    assert_eq!(tools(&entries), ["d2-early", "d2-late"]);
    assert_eq!(warnings, "");
}

#[test]
fn retention_deletes_only_old_call_files() {
    let dir = tempfile::tempdir().unwrap();
    let today = Utc::now().date_naive();
    let days_ago = |n: u64| day_file(dir.path(), today.checked_sub_days(Days::new(n)).unwrap());
    let kept = [days_ago(0), days_ago(3), days_ago(7)];
    let deleted = [days_ago(8), days_ago(400)];
    let others = [
        dir.path().join("notes.txt"),
        dir.path().join("server.log"),
        dir.path().join("calls-2000-01-01.jsonl.bak"),
        dir.path().join("calls-2000-1-1.jsonl"),
        dir.path().join("other-2000-01-01.jsonl"),
    ];
    for path in kept.iter().chain(&deleted).chain(&others) {
        std::fs::write(path, "").unwrap();
    }
    // A folder with a day file's name is not a file to delete.
    let folder = day_file(dir.path(), date("2000-01-02"));
    std::fs::create_dir(&folder).unwrap();

    let _log = ExecutionLog::open(LogSettings {
        retention_days: 7,
        ..LogSettings::new(dir.path())
    })
    .unwrap();
    for path in kept.iter().chain(&others) {
        assert!(path.exists(), "{} was deleted", path.display());
    }
    for path in &deleted {
        assert!(!path.exists(), "{} was kept", path.display());
    }
    assert!(folder.is_dir());
}

#[test]
fn retention_runs_again_when_the_date_rolls_over() {
    let dir = tempfile::tempdir().unwrap();
    let now = Utc::now();
    let today = now.date_naive();
    let yesterday = day_file(dir.path(), today.pred_opt().unwrap());
    std::fs::write(&yesterday, "").unwrap();
    let log = ExecutionLog::open(LogSettings {
        retention_days: 2,
        ..LogSettings::new(dir.path())
    })
    .unwrap();
    log.record(record("today", now));
    log.flush();
    assert!(yesterday.exists());

    // A call three days from now: that day's retention reaches back to tomorrow.
    let later = now.checked_add_days(Days::new(3)).unwrap();
    log.record(record("later", later));
    log.flush();
    assert!(!yesterday.exists());
    assert!(!day_file(dir.path(), today).exists());
    assert!(day_file(dir.path(), later.date_naive()).exists());
}

#[test]
fn limit_keeps_the_newest_entries() {
    let dir = logged_at(&[
        ("one", "2026-11-01T10:00:00Z"),
        ("two", "2026-11-02T10:00:00Z"),
        ("three", "2026-11-02T11:00:00Z"),
        ("four", "2026-11-03T10:00:00Z"),
    ]);
    let newest = |limit| {
        let q = LogQuery {
            limit: Some(limit),
            ..LogQuery::default()
        };
        query(dir.path(), &q).unwrap()
    };
    assert_eq!(tools(&newest(3)), ["two", "three", "four"]);
    assert_eq!(tools(&newest(1)), ["four"]);
    assert!(newest(0).is_empty());
    assert_eq!(newest(10).len(), 4);
}

#[test]
fn outcome_tool_and_session_filters_keep_only_matching_calls() {
    let dir = tempfile::tempdir().unwrap();
    let t = at("2026-11-22T10:00:00Z");
    let mut failed = record("github__create_issue", t);
    failed.outcome = Outcome::Error;
    failed.error = Some("boom".into());
    let mut in_session = record("github__list_issues", t);
    in_session.session = Some("chat-7".into());
    write_all(
        dir.path(),
        [
            failed,
            in_session,
            record("grep", t),
            record("file_read", t),
        ],
    );
    let run = |q: LogQuery| tools(&query(dir.path(), &q).unwrap()).join(",");
    for (tool, outcome, session, expected) in [
        (None, Some(Outcome::Error), None, "github__create_issue"),
        (
            Some("github__*"),
            None,
            None,
            "github__create_issue,github__list_issues",
        ),
        (Some("grep"), None, None, "grep"),
        (Some("gre"), None, None, ""),
        (None, None, Some("chat-7"), "github__list_issues"),
        (
            Some("github__*"),
            Some(Outcome::Ok),
            None,
            "github__list_issues",
        ),
    ] {
        let q = LogQuery {
            tool: tool.map(Into::into),
            outcome,
            session: session.map(Into::into),
            ..LogQuery::default()
        };
        assert_eq!(
            run(q),
            expected,
            "tool {tool:?}, outcome {outcome:?}, session {session:?}"
        );
    }
}

#[test]
fn since_is_inclusive_and_until_exclusive() {
    let dir = logged_at(&[
        ("before", "2026-11-22T09:59:59.999999Z"),
        ("at-since", "2026-11-22T10:00:00Z"),
        ("inside", "2026-11-22T10:30:00Z"),
        ("at-until", "2026-11-22T11:00:00Z"),
    ]);
    let q = LogQuery {
        since: Some(at("2026-11-22T10:00:00Z")),
        until: Some(at("2026-11-22T11:00:00Z")),
        ..LogQuery::default()
    };
    assert_eq!(
        tools(&query(dir.path(), &q).unwrap()),
        ["at-since", "inside"]
    );
    let since_only = LogQuery {
        since: Some(at("2026-11-22T10:30:00Z")),
        ..LogQuery::default()
    };
    assert_eq!(
        tools(&query(dir.path(), &since_only).unwrap()),
        ["inside", "at-until"]
    );
}

#[test]
fn an_invalid_tool_pattern_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let q = LogQuery {
        tool: Some("github__[".into()),
        ..LogQuery::default()
    };
    assert!(matches!(query(dir.path(), &q), Err(LogError::Pattern(_))));
    assert!(matches!(
        follow(dir.path(), &q).poll(),
        Err(LogError::Pattern(_))
    ));
}

#[test]
fn a_missing_folder_is_an_empty_log() {
    let dir = tempfile::tempdir().unwrap();
    let absent = dir.path().join("absent");
    assert!(query(&absent, &LogQuery::default()).unwrap().is_empty());
    assert!(
        follow(&absent, &LogQuery::default())
            .poll()
            .unwrap()
            .is_empty()
    );
}

#[test]
fn a_corrupt_line_is_skipped_with_a_warning_naming_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    write_all(dir.path(), [record("first", at("2026-11-22T10:00:00Z"))]);
    let path = day_file(dir.path(), date("2026-11-22"));
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    file.write_all(b"{\"id\": truncated\n\n").unwrap();
    file.write_all(&[0xff, 0xfe, b'\n']).unwrap();
    drop(file);
    write_all(dir.path(), [record("second", at("2026-11-22T10:00:01Z"))]);

    let (entries, warnings) = warnings_during(|| query(dir.path(), &LogQuery::default()).unwrap());
    assert_eq!(tools(&entries), ["first", "second"]);
    assert!(warnings.contains("calls-2026-11-22.jsonl"), "{warnings}");
    assert!(warnings.contains("line=2"), "{warnings}");
    assert!(warnings.contains("line=4"), "{warnings}");
    // The blank third line is not worth a warning.
    assert_eq!(warnings.lines().count(), 2, "{warnings}");
}

#[test]
fn flush_makes_everything_sent_so_far_visible() {
    let dir = tempfile::tempdir().unwrap();
    let log = ExecutionLog::open(keep_all(dir.path())).unwrap();
    let t = at("2026-11-22T10:00:00Z");
    for i in 0..2_000 {
        log.record(record(&format!("tool{i}"), t));
    }
    log.flush();
    let entries = query(dir.path(), &LogQuery::default()).unwrap();
    assert_eq!(entries.len(), 2_000);
    assert_eq!(entries[1_999].tool, "tool1999");
}

#[test]
fn drop_writes_out_everything_and_joins_the_writer() {
    let dir = tempfile::tempdir().unwrap();
    let log: Arc<dyn ExecutionSink> = Arc::new(ExecutionLog::open(keep_all(dir.path())).unwrap());
    let t = at("2026-11-22T10:00:00Z");
    let callers: Vec<_> = (0..4)
        .map(|n| {
            let log = Arc::clone(&log);
            std::thread::spawn(move || {
                for i in 0..250 {
                    log.record(record(&format!("t{n}-{i}"), t));
                }
            })
        })
        .collect();
    for caller in callers {
        caller.join().unwrap();
    }
    // The last owner's drop flushes and waits for the writer thread to end.
    drop(log);
    assert_eq!(
        query(dir.path(), &LogQuery::default()).unwrap().len(),
        1_000
    );
}

#[test]
fn two_logs_share_a_day_file_without_breaking_lines() {
    let dir = tempfile::tempdir().unwrap();
    let t = at("2026-11-22T10:00:00Z");
    let big = ToolResult::text("x".repeat(3_000));
    let writers: Vec<_> = (0..2)
        .map(|n| {
            let dir = dir.path().to_path_buf();
            let big = big.clone();
            std::thread::spawn(move || {
                let log = ExecutionLog::open(keep_all(&dir)).unwrap();
                for i in 0..300 {
                    let mut r = record(&format!("p{n}-{i}"), t);
                    r.result = Some(big.clone());
                    log.record(r);
                    if i % 50 == 0 {
                        log.flush();
                    }
                }
            })
        })
        .collect();
    for writer in writers {
        writer.join().unwrap();
    }
    let (entries, warnings) = warnings_during(|| query(dir.path(), &LogQuery::default()).unwrap());
    assert_eq!(entries.len(), 600);
    assert_eq!(warnings, "");
}

#[test]
fn follower_returns_only_lines_appended_after_it_started() {
    let dir = tempfile::tempdir().unwrap();
    let log = ExecutionLog::open(keep_all(dir.path())).unwrap();
    log.record(record("old", Utc::now()));
    log.flush();

    let mut follower = follow(dir.path(), &LogQuery::default());
    assert!(follower.poll().unwrap().is_empty());
    log.record(record("new1", Utc::now()));
    log.record(record("new2", Utc::now()));
    log.flush();
    assert_eq!(tools(&follower.poll().unwrap()), ["new1", "new2"]);
    assert!(follower.poll().unwrap().is_empty());
    log.record(record("new3", Utc::now()));
    log.flush();
    assert_eq!(tools(&follower.poll().unwrap()), ["new3"]);
}

#[test]
fn follower_waits_for_a_file_that_does_not_exist_yet() {
    let dir = tempfile::tempdir().unwrap();
    let mut follower = follow(dir.path(), &LogQuery::default());
    assert!(follower.poll().unwrap().is_empty());
    write_all(dir.path(), [record("first", Utc::now())]);
    assert_eq!(tools(&follower.poll().unwrap()), ["first"]);
}

#[test]
fn follower_rolls_over_to_the_next_days_file() {
    let dir = tempfile::tempdir().unwrap();
    let log = ExecutionLog::open(keep_all(dir.path())).unwrap();
    let now = Utc::now();
    let tomorrow = now.checked_add_days(Days::new(1)).unwrap();
    log.record(record("before", now));
    log.flush();
    let mut follower = follow(dir.path(), &LogQuery::default());

    log.record(record("today", now));
    log.record(record("tomorrow1", tomorrow));
    log.record(record("tomorrow2", tomorrow));
    log.flush();
    assert_eq!(
        tools(&follower.poll().unwrap()),
        ["today", "tomorrow1", "tomorrow2"]
    );
    log.record(record("tomorrow3", tomorrow));
    log.flush();
    assert_eq!(tools(&follower.poll().unwrap()), ["tomorrow3"]);
}

#[test]
fn follower_holds_a_partial_line_until_it_is_complete() {
    let dir = tempfile::tempdir().unwrap();
    let now = Utc::now();
    let path = day_file(dir.path(), now.date_naive());
    // Start with a file that ends mid-line: the follower must not read its tail as a line.
    std::fs::write(&path, "{\"id\":\"cut").unwrap();
    let mut follower = follow(dir.path(), &LogQuery::default());
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    file.write_all(b"-off\"}\n").unwrap();

    let whole = serde_json::to_string(&line_entry("split", now)).unwrap();
    let (head, tail) = whole.split_at(whole.len() / 2);
    file.write_all(head.as_bytes()).unwrap();
    let (entries, warnings) = warnings_during(|| follower.poll().unwrap());
    assert!(entries.is_empty());
    assert_eq!(warnings, "");

    file.write_all(tail.as_bytes()).unwrap();
    assert!(follower.poll().unwrap().is_empty());
    file.write_all(b"\n").unwrap();
    assert_eq!(tools(&follower.poll().unwrap()), ["split"]);
}

#[test]
fn follower_applies_the_query_filters() {
    let dir = tempfile::tempdir().unwrap();
    let log = ExecutionLog::open(keep_all(dir.path())).unwrap();
    let mut follower = follow(
        dir.path(),
        &LogQuery {
            tool: Some("file_*".into()),
            limit: Some(1),
            ..LogQuery::default()
        },
    );
    for tool in ["file_read", "grep", "file_write"] {
        log.record(record(tool, Utc::now()));
    }
    log.flush();
    assert_eq!(
        tools(&follower.poll().unwrap()),
        ["file_read", "file_write"]
    );
}

/// An entry as the writer would produce it, for writing lines by hand.
fn line_entry(tool: &str, timestamp: DateTime<Utc>) -> LogEntry {
    let dir = tempfile::tempdir().unwrap();
    write_all(dir.path(), [record(tool, timestamp)]);
    query(dir.path(), &LogQuery::default()).unwrap().remove(0)
}

#[test]
fn retention_deletes_whole_results_with_their_day() {
    let dir = tempfile::tempdir().unwrap();
    let old = dir.path().join("results/2026-01-01");
    let recent = dir.path().join("results/2026-11-21");
    let stranger = dir.path().join("results/keep-me");
    for folder in [&old, &recent, &stranger] {
        std::fs::create_dir_all(folder).unwrap();
        std::fs::write(folder.join("x.json"), "{}").unwrap();
    }
    let log = ExecutionLog::open(LogSettings {
        retention_days: 30,
        ..LogSettings::new(dir.path())
    })
    .unwrap();
    drop(log);
    assert!(!old.exists(), "a day past retention is deleted");
    assert!(recent.exists(), "a day within retention stays");
    assert!(
        stranger.exists(),
        "a folder not named by a date is never touched"
    );
}

/// Everything under the log folder, in bytes.
fn bytes_under(dir: &Path) -> u64 {
    let mut total = 0;
    let mut folders = vec![dir.to_path_buf()];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(folder).unwrap().flatten() {
            let meta = entry.metadata().unwrap();
            if meta.is_dir() {
                folders.push(entry.path());
            } else {
                total += meta.len();
            }
        }
    }
    total
}

/// The load: 200 calls, each with `size` bytes of junk arguments (3 MiB in the issue),
/// half of them refused by validation.
fn big_argument_records(size: usize, count: usize) -> impl Iterator<Item = ExecutionRecord> {
    let junk = "q".repeat(size);
    (0..count).map(move |i| {
        let mut r = record("file_read", at("2026-11-22T10:00:00Z"));
        r.arguments = json!({"path": "README.md", "junk": junk});
        if i % 2 == 1 {
            r.outcome = Outcome::Invalid;
            r.error = Some("additional property `junk` is not allowed".into());
            r.result = None;
        }
        r
    })
}

#[test]
fn d3_large_arguments_are_capped_and_say_how_big_they_were() {
    let dir = tempfile::tempdir().unwrap();
    let log = ExecutionLog::open(keep_all(dir.path())).unwrap();
    // Fewer calls than the 200 keep the test quick; each is as large.
    for r in big_argument_records(3 << 20, 40) {
        log.record(r);
    }
    log.flush();
    // 120 MiB of arguments take about one: each line keeps 16 KiB, and 3 MiB is too large to
    // keep whole.
    let used = bytes_under(dir.path());
    assert!(used < 2 << 20, "{used} bytes");
    let entries = query(dir.path(), &LogQuery::default()).unwrap();
    assert_eq!(entries.len(), 40);
    let full = serde_json::to_string(&json!({"path": "README.md", "junk": "q".repeat(3 << 20)}))
        .unwrap()
        .len() as u64;
    for entry in &entries {
        assert!(entry.arguments_truncated, "{:?}", entry.outcome);
        assert_eq!(entry.arguments_bytes, Some(full));
        assert_eq!(entry.arguments_file, None);
        let start = entry.arguments.as_str().unwrap();
        assert!(start.starts_with("{\"junk\":\"qqq") || start.starts_with("{\"path\""));
        assert_eq!(start.len(), 16 * 1024);
    }
    assert!(entries.iter().any(|e| e.outcome == Outcome::Invalid));
}

#[test]
fn d3_a_day_past_its_budget_is_abridged() {
    let dir = tempfile::tempdir().unwrap();
    let budget = LogBudget {
        argument_cap_bytes: 16 * 1024,
        whole_file_cap_bytes: 512 * 1024,
        max_day_bytes: 1 << 20,
    };
    let log = ExecutionLog::open_with_budget(keep_all(dir.path()), budget).unwrap();
    for r in big_argument_records(256 * 1024, 200) {
        log.record(r);
    }
    log.flush();
    // 50 MiB of arguments; the day stays within its budget plus the one value that crossed it
    // and the abridged lines after it.
    let used = bytes_under(dir.path());
    assert!(used <= (1 << 20) + (512 << 10), "{used} bytes");
    let entries = query(dir.path(), &LogQuery::default()).unwrap();
    assert_eq!(entries.len(), 200);
    // The first calls are kept whole beside the day file, the rest abridged.
    assert!(entries[0].arguments_file.is_some());
    assert!(!entries[0].abridged);
    let abridged: Vec<&LogEntry> = entries.iter().filter(|e| e.abridged).collect();
    assert!(abridged.len() > 190, "{}", abridged.len());
    for entry in &abridged {
        assert_eq!(entry.arguments, Value::Null);
        assert!(entry.arguments_bytes.is_some_and(|b| b > 256 * 1024));
        assert_eq!(entry.tool, "file_read");
    }
}
