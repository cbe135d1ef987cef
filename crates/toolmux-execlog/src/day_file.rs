//! Day files: their names, finding them, and deleting the ones past retention.

use std::path::{Path, PathBuf};

use chrono::{Days, NaiveDate};

use crate::LogError;

const PREFIX: &str = "calls-";
const SUFFIX: &str = ".jsonl";
const DATE_FORMAT: &str = "%Y-%m-%d";

/// The path of the log file for one UTC day: `<dir>/calls-YYYY-MM-DD.jsonl`.
pub fn day_file(dir: &Path, date: NaiveDate) -> PathBuf {
    dir.join(format!("{PREFIX}{}{SUFFIX}", date.format(DATE_FORMAT)))
}

/// The date in a day file's name, or `None` when the name is not exactly
/// `calls-YYYY-MM-DD.jsonl` (so `calls-2026-1-2.jsonl` or `calls-2026-01-02.jsonl.bak` are not
/// day files, and retention never touches them).
pub(crate) fn date_of(file_name: &str) -> Option<NaiveDate> {
    let text = file_name.strip_prefix(PREFIX)?.strip_suffix(SUFFIX)?;
    let date = NaiveDate::parse_from_str(text, DATE_FORMAT).ok()?;
    (date.format(DATE_FORMAT).to_string() == text).then_some(date)
}

/// Every day file in `dir`, oldest first. A missing folder has none.
pub(crate) fn list(dir: &Path) -> Result<Vec<(NaiveDate, PathBuf)>, LogError> {
    let read_error = |source| LogError::Read {
        path: dir.to_path_buf(),
        source,
    };
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(read_error(e)),
    };
    let mut days = Vec::new();
    for entry in entries {
        let entry = entry.map_err(read_error)?;
        let Some(date) = entry.file_name().to_str().and_then(date_of) else {
            continue;
        };
        if entry.file_type().is_ok_and(|t| t.is_file()) {
            days.push((date, entry.path()));
        }
    }
    days.sort();
    Ok(days)
}

/// The day files of `dir` whose date lies in `from..=to` (either end open), oldest first.
pub(crate) fn in_range(
    dir: &Path,
    from: Option<NaiveDate>,
    to: Option<NaiveDate>,
) -> Result<Vec<(NaiveDate, PathBuf)>, LogError> {
    let mut days = list(dir)?;
    days.retain(|(date, _)| from.is_none_or(|f| *date >= f) && to.is_none_or(|t| *date <= t));
    Ok(days)
}

/// Deletes the day files dated more than `retention_days` before `today` and returns how many
/// went. Failures are warnings: retention must never stop the log from working.
pub(crate) fn sweep(dir: &Path, today: NaiveDate, retention_days: u32) -> usize {
    // A retention longer than the calendar reaches back keeps everything.
    let Some(oldest_kept) = today.checked_sub_days(Days::new(u64::from(retention_days))) else {
        return 0;
    };
    let days = match list(dir) {
        Ok(days) => days,
        Err(error) => {
            tracing::warn!(%error, "execution log retention skipped");
            return 0;
        }
    };
    let mut deleted = 0;
    for (_, path) in days.iter().filter(|(date, _)| *date < oldest_kept) {
        match std::fs::remove_file(path) {
            Ok(()) => {
                tracing::debug!(file = %path.display(), "deleted execution log past retention");
                deleted += 1;
            }
            // Another toolmux process sharing the folder got there first.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(error) => tracing::warn!(
                file = %path.display(), %error, "cannot delete execution log past retention"
            ),
        }
    }
    deleted + sweep_results(dir, oldest_kept)
}

/// Deletes the folders of whole results (`results/YYYY-MM-DD/`) of days past retention, by the
/// same rule as the day files; never touches anything whose name is not a date.
fn sweep_results(dir: &Path, oldest_kept: NaiveDate) -> usize {
    let Ok(entries) = std::fs::read_dir(dir.join(crate::entry::RESULTS_DIR)) else {
        return 0;
    };
    let mut deleted = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(date) = name
            .to_str()
            .and_then(|n| NaiveDate::parse_from_str(n, DATE_FORMAT).ok())
        else {
            continue;
        };
        if date < oldest_kept {
            match std::fs::remove_dir_all(entry.path()) {
                Ok(()) => deleted += 1,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(error) => tracing::warn!(
                    folder = %entry.path().display(), %error, "cannot delete whole results past retention"
                ),
            }
        }
    }
    deleted
}

#[cfg(test)]
mod tests {
    use super::*;

    fn date(text: &str) -> NaiveDate {
        NaiveDate::parse_from_str(text, DATE_FORMAT).unwrap()
    }

    #[test]
    fn day_file_names_round_trip_and_near_misses_are_not_day_files() {
        let path = day_file(Path::new("logs"), date("2026-11-02"));
        assert_eq!(path, Path::new("logs/calls-2026-11-02.jsonl"));
        assert_eq!(date_of("calls-2026-11-02.jsonl"), Some(date("2026-11-02")));
        for name in [
            "calls-2026-1-2.jsonl",
            "calls-2026-11-02.jsonl.bak",
            "calls-2026-11-02.json",
            "calls-2026-13-01.jsonl",
            "calls-.jsonl",
            "xcalls-2026-11-02.jsonl",
            "server.log",
        ] {
            assert_eq!(date_of(name), None, "{name}");
        }
    }

    #[test]
    fn range_selects_only_the_days_it_needs() {
        let dir = tempfile::tempdir().unwrap();
        for day in ["2026-01-01", "2026-01-02", "2026-01-03", "2026-01-04"] {
            std::fs::write(day_file(dir.path(), date(day)), "").unwrap();
        }
        std::fs::write(dir.path().join("notes.txt"), "").unwrap();
        let picked = |from: Option<&str>, to: Option<&str>| -> Vec<NaiveDate> {
            in_range(dir.path(), from.map(date), to.map(date))
                .unwrap()
                .into_iter()
                .map(|(d, _)| d)
                .collect()
        };
        assert_eq!(
            picked(Some("2026-01-02"), Some("2026-01-03")),
            [date("2026-01-02"), date("2026-01-03")]
        );
        assert_eq!(picked(Some("2026-01-04"), None), [date("2026-01-04")]);
        assert_eq!(picked(None, Some("2026-01-01")), [date("2026-01-01")]);
        assert_eq!(picked(None, None).len(), 4);
    }

    #[test]
    fn a_missing_folder_has_no_day_files() {
        let dir = tempfile::tempdir().unwrap();
        assert!(list(&dir.path().join("absent")).unwrap().is_empty());
    }
}
