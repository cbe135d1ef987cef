//! Following the log as it grows (`toolmux logs --follow`).

use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use chrono::{NaiveDate, Utc};
use toolmux_core::PatternError;

use crate::LogError;
use crate::day_file::{self, day_file};
use crate::entry::LogEntry;
use crate::query::{Filter, LogQuery, parse_line};

/// Reads the entries appended to the log since the last [`poll`](Follower::poll). It follows
/// one day file at a time and moves to the next day's file once that exists; a call logged late
/// into a day the follower has left (one that started before midnight and ended after) is not
/// seen.
#[derive(Debug)]
pub struct Follower {
    dir: PathBuf,
    filter: Result<Filter, PatternError>,
    /// The day being followed.
    date: NaiveDate,
    /// How far into its file has been read.
    offset: u64,
    /// Bytes read after the last complete line, held until the line is complete.
    pending: Vec<u8>,
    /// The follower started in the middle of a line: drop everything up to the next `\n`.
    skip_to_newline: bool,
    /// Lines of the current file seen so far, for warnings about corrupt ones.
    line_number: u64,
}

/// Starts following the log in `dir` at the end of the newest day file (or today's, if that
/// is newer), so the first poll returns only what is appended after this call. The filters of
/// `query` apply; its `limit` does not. An invalid `tool` pattern is reported by `poll`.
pub fn follow(dir: &Path, query: &LogQuery) -> Follower {
    let today = Utc::now().date_naive();
    let newest = day_file::list(dir)
        .ok()
        .and_then(|days| days.last().map(|(date, _)| *date));
    let date = newest.map_or(today, |newest| newest.max(today));
    let mut follower = Follower {
        dir: dir.to_path_buf(),
        filter: Filter::new(query),
        date,
        offset: 0,
        pending: Vec::new(),
        skip_to_newline: false,
        line_number: 0,
    };
    follower.skip_to_end();
    follower
}

impl Follower {
    /// The entries appended since the last poll (since `follow`, the first time), in the
    /// order they were written. A line still being written is held back until its `\n`
    /// arrives; a corrupt line is skipped with a warning.
    pub fn poll(&mut self) -> Result<Vec<LogEntry>, LogError> {
        let filter = self.filter.clone()?;
        let mut entries = Vec::new();
        loop {
            self.read_new(&filter, &mut entries)?;
            let Some(next) = self.next_day()? else {
                return Ok(entries);
            };
            // Whatever arrived in the old file just before the new one appeared.
            self.read_new(&filter, &mut entries)?;
            if !self.pending.is_empty() {
                tracing::warn!(
                    file = %self.path().display(), line = self.line_number + 1,
                    "skipping an unfinished execution log line at the end of a day file"
                );
            }
            self.date = next;
            self.offset = 0;
            self.pending.clear();
            self.skip_to_newline = false;
            self.line_number = 0;
        }
    }

    fn path(&self) -> PathBuf {
        day_file(&self.dir, self.date)
    }

    /// Moves to the end of the current file, ready to read only what comes next.
    fn skip_to_end(&mut self) {
        let Ok(mut file) = std::fs::File::open(self.path()) else {
            return;
        };
        let Ok(len) = file.seek(SeekFrom::End(0)) else {
            return;
        };
        self.offset = len;
        // If the file ends mid-line, its end is not a line start.
        let mut last = [0u8; 1];
        self.skip_to_newline = len > 0
            && file.seek(SeekFrom::Start(len - 1)).is_ok()
            && file.read_exact(&mut last).is_ok()
            && last[0] != b'\n';
    }

    /// Reads what was appended to the current file and parses its complete lines.
    fn read_new(&mut self, filter: &Filter, entries: &mut Vec<LogEntry>) -> Result<(), LogError> {
        let path = self.path();
        let read_error = |source| LogError::Read {
            path: path.clone(),
            source,
        };
        let mut file = match std::fs::File::open(&path) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(read_error(e)),
        };
        let len = file.metadata().map_err(read_error)?.len();
        if len < self.offset {
            tracing::warn!(file = %path.display(), "execution log file shrank; reading it again from the start");
            self.offset = 0;
            self.pending.clear();
            self.skip_to_newline = false;
            self.line_number = 0;
        }
        if len == self.offset {
            return Ok(());
        }
        file.seek(SeekFrom::Start(self.offset))
            .map_err(read_error)?;
        let start = self.pending.len();
        let read = file
            .take(len - self.offset)
            .read_to_end(&mut self.pending)
            .map_err(read_error)?;
        self.offset += read as u64;
        if self.skip_to_newline {
            match self.pending[start..].iter().position(|&b| b == b'\n') {
                Some(end) => {
                    self.pending.drain(..start + end + 1);
                    self.skip_to_newline = false;
                }
                None => {
                    self.pending.clear();
                    return Ok(());
                }
            }
        }
        let complete = match self.pending.iter().rposition(|&b| b == b'\n') {
            Some(last) => last + 1,
            None => return Ok(()),
        };
        for line in self.pending[..complete].split_inclusive(|&b| b == b'\n') {
            self.line_number += 1;
            if let Some(entry) = parse_line(line, &path, self.line_number) {
                entries.extend(filter.matches(&entry).then_some(entry));
            }
        }
        self.pending.drain(..complete);
        Ok(())
    }

    /// The day to move to, if a file of a later day exists: the next day's if it does, else,
    /// once the clock says the followed day is over, the earliest later one.
    fn next_day(&self) -> Result<Option<NaiveDate>, LogError> {
        if let Some(next) = self.date.succ_opt()
            && day_file(&self.dir, next).is_file()
        {
            return Ok(Some(next));
        }
        if Utc::now().date_naive() <= self.date {
            return Ok(None);
        }
        Ok(day_file::list(&self.dir)?
            .into_iter()
            .map(|(date, _)| date)
            .find(|date| *date > self.date))
    }
}
