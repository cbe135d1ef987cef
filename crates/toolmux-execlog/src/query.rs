//! Reading the log back: filters, the query over day files, and `--since` text.

use std::io::{BufRead, BufReader};
use std::path::Path;

use chrono::{DateTime, NaiveDate, Utc};
use toolmux_core::{NamePattern, Outcome, parse_duration};

use crate::entry::LogEntry;
use crate::{LogError, day_file};

/// Which entries to read. Every filter is optional; set ones must all match.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LogQuery {
    /// A tool name, or a glob over tool names (`github__*`, `file_?ead`).
    pub tool: Option<String>,
    /// Only calls that ended this way.
    pub outcome: Option<Outcome>,
    /// Only calls that started at or after this instant.
    pub since: Option<DateTime<Utc>>,
    /// Only calls that started before this instant (exclusive, so that consecutive windows
    /// never count a call twice).
    pub until: Option<DateTime<Utc>>,
    /// Keep only the newest this many entries. [`follow`](crate::follow) ignores it.
    pub limit: Option<usize>,
    /// Only calls of this session or conversation.
    pub session: Option<String>,
}

/// A query with its tool pattern compiled.
#[derive(Clone, Debug)]
pub(crate) struct Filter {
    tool: Option<NamePattern>,
    outcome: Option<Outcome>,
    since: Option<DateTime<Utc>>,
    until: Option<DateTime<Utc>>,
    session: Option<String>,
}

impl Filter {
    pub(crate) fn new(query: &LogQuery) -> Result<Self, toolmux_core::PatternError> {
        Ok(Self {
            tool: query.tool.as_deref().map(NamePattern::new).transpose()?,
            outcome: query.outcome,
            since: query.since,
            until: query.until,
            session: query.session.clone(),
        })
    }

    pub(crate) fn matches(&self, entry: &LogEntry) -> bool {
        self.tool.as_ref().is_none_or(|p| p.matches(&entry.tool))
            && self.outcome.is_none_or(|o| o == entry.outcome)
            && self.since.is_none_or(|s| entry.timestamp >= s)
            && self.until.is_none_or(|u| entry.timestamp < u)
            && (self.session.is_none() || self.session == entry.session)
    }
}

/// The entries of the log in `dir` that match `query`, oldest first (newest last). With a
/// `limit`, the newest `limit` entries. Only the day files that `since` and `until` reach are
/// read, newest first, stopping once `limit` is met. A corrupt line is skipped with a warning
/// naming its file and line; a missing folder is an empty log.
pub fn query(dir: &Path, query: &LogQuery) -> Result<Vec<LogEntry>, LogError> {
    let filter = Filter::new(query)?;
    let days = day_file::in_range(
        dir,
        query.since.map(|s| s.date_naive()),
        query.until.map(|u| u.date_naive()),
    )?;
    // Every entry of a day file has that day's date, so files in date order are entries in
    // time order; only the order inside a file (arrival, not start) needs sorting.
    let mut newest_first: Vec<Vec<LogEntry>> = Vec::new();
    let mut found = 0;
    for (_, path) in days.iter().rev() {
        if query.limit.is_some_and(|limit| found >= limit) {
            break;
        }
        let mut entries = read_day_file(path, &filter)?;
        entries.sort_by_key(|e| e.timestamp);
        found += entries.len();
        newest_first.push(entries);
    }
    let mut entries: Vec<LogEntry> = newest_first.into_iter().rev().flatten().collect();
    if let Some(limit) = query.limit {
        entries.drain(..entries.len().saturating_sub(limit));
    }
    Ok(entries)
}

/// The matching entries of one day file, in file order. A file that vanished meanwhile (to
/// retention, say) has none.
fn read_day_file(path: &Path, filter: &Filter) -> Result<Vec<LogEntry>, LogError> {
    let read_error = |source| LogError::Read {
        path: path.to_path_buf(),
        source,
    };
    let file = match std::fs::File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(read_error(e)),
    };
    let mut reader = BufReader::new(file);
    let mut entries = Vec::new();
    let mut line = Vec::new();
    let mut number = 0;
    loop {
        line.clear();
        if reader.read_until(b'\n', &mut line).map_err(read_error)? == 0 {
            break;
        }
        number += 1;
        if line.last() != Some(&b'\n') {
            // The last line is still being written (or its writer died mid-line). Take it if
            // it is already whole; otherwise it is not corrupt yet, so say nothing.
            if let Ok(entry) = serde_json::from_slice::<LogEntry>(&line) {
                entries.extend(filter.matches(&entry).then_some(entry));
            }
            break;
        }
        if let Some(entry) = parse_line(&line, path, number) {
            entries.extend(filter.matches(&entry).then_some(entry));
        }
    }
    Ok(entries)
}

/// One complete line as an entry; a blank line is nothing, a corrupt one a warning.
pub(crate) fn parse_line(line: &[u8], path: &Path, number: u64) -> Option<LogEntry> {
    if line.iter().all(u8::is_ascii_whitespace) {
        return None;
    }
    match serde_json::from_slice(line) {
        Ok(entry) => Some(entry),
        Err(error) => {
            tracing::warn!(
                file = %path.display(), line = number, %error,
                "skipping a corrupt execution log line"
            );
            None
        }
    }
}

/// Reads a `--since` (or `--until`) value: an RFC 3339 instant (`2026-11-22T10:00:00Z`), a UTC
/// date meaning its midnight (`2026-11-22`), or a duration before `now` (`15m`, `2h`, `7d`;
/// see [`toolmux_core::parse_duration`]).
pub fn parse_since(text: &str, now: DateTime<Utc>) -> Result<DateTime<Utc>, String> {
    let text = text.trim();
    if let Ok(instant) = DateTime::parse_from_rfc3339(text) {
        return Ok(instant.with_timezone(&Utc));
    }
    if let Ok(date) = NaiveDate::parse_from_str(text, "%Y-%m-%d") {
        return Ok(date.and_time(chrono::NaiveTime::MIN).and_utc());
    }
    if let Ok(duration) = parse_duration(text) {
        return chrono::Duration::from_std(duration)
            .ok()
            .and_then(|d| now.checked_sub_signed(d))
            .ok_or_else(|| format!("`{text}` reaches back before the calendar starts"));
    }
    Err(format!(
        "cannot read `{text}` as a time: expected an RFC 3339 instant \
         (2026-11-22T10:00:00Z), a date (2026-11-22) or a duration ago (15m, 2h, 7d)"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> DateTime<Utc> {
        text.parse().unwrap()
    }

    #[test]
    fn parse_since_reads_instants_dates_and_durations_ago() {
        let now = at("2026-11-22T12:00:00Z");
        assert_eq!(
            parse_since("2026-11-20T08:30:00+02:00", now),
            Ok(at("2026-11-20T06:30:00Z"))
        );
        assert_eq!(
            parse_since("2026-11-21", now),
            Ok(at("2026-11-21T00:00:00Z"))
        );
        assert_eq!(parse_since("15m", now), Ok(at("2026-11-22T11:45:00Z")));
        assert_eq!(parse_since(" 2h ", now), Ok(at("2026-11-22T10:00:00Z")));
        assert_eq!(parse_since("7d", now), Ok(at("2026-11-15T12:00:00Z")));
    }

    #[test]
    fn parse_since_rejects_other_text_with_the_accepted_forms() {
        for bad in ["", "yesterday", "2026-13-01", "-5m", "5 minutes"] {
            let error = parse_since(bad, Utc::now()).expect_err(bad);
            assert!(error.contains("RFC 3339"), "{bad}: {error}");
        }
        assert!(parse_since("99999999999d", Utc::now()).is_err());
    }
}
