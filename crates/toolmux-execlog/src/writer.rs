//! The sink the pipeline records into, and the background thread that writes the day files.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, Sender};
use std::thread::JoinHandle;

use chrono::{NaiveDate, Utc};
use toolmux_core::{ExecutionRecord, ExecutionSink};

use crate::LogError;
use crate::day_file::{day_file, sweep};
use crate::entry::{Caps, RESULTS_DIR, write_line};

/// Days of logs kept unless configured otherwise.
pub const DEFAULT_RETENTION_DAYS: u32 = 30;

/// The largest serialized result stored whole unless configured otherwise (16 KiB).
pub const DEFAULT_RESULT_CAP_BYTES: usize = 16 * 1024;

/// The largest serialized arguments stored whole in their line unless configured otherwise
/// (16 KiB, like results).
pub const DEFAULT_ARGUMENT_CAP_BYTES: usize = 16 * 1024;

/// The largest cut argument or result kept whole in a file of its own (1 MiB).
pub const DEFAULT_WHOLE_FILE_CAP_BYTES: usize = 1024 * 1024;

/// What one day of log may take on disk before its lines are abridged (256 MiB).
pub const DEFAULT_MAX_DAY_BYTES: u64 = 256 * 1024 * 1024;

/// Room for a burst of ordinary lines before the writer has to go to the OS.
const BUFFER_BYTES: usize = 64 * 1024;

/// Where the log goes and how much of it to keep.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogSettings {
    /// The folder of the day files, normally `.toolmux/state/logs/`; created when missing.
    pub dir: PathBuf,
    /// Day files dated more than this many days before today are deleted (0 keeps only
    /// today's).
    pub retention_days: u32,
    /// A result whose serialization is larger than this is stored cut to this size.
    pub result_cap_bytes: usize,
}

impl LogSettings {
    /// Settings for a folder with the default retention (30 days) and result cap (16 KiB).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self {
            dir: dir.into(),
            retention_days: DEFAULT_RETENTION_DAYS,
            result_cap_bytes: DEFAULT_RESULT_CAP_BYTES,
        }
    }
}

/// How much disk the log may take, so that no caller can fill it: arguments are cut like
/// results, only values up to `whole_file_cap_bytes` are kept whole beside the day file, and
/// once a day's file and whole values pass `max_day_bytes`, that day's further lines are
/// *abridged* — tool, outcome, error, sizes; no arguments, no result — with one warning. Past
/// twice the budget nothing more is written that day (a second warning says so), so a day
/// never takes more than about `2 × max_day_bytes`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LogBudget {
    /// Arguments whose serialization is larger than this are stored cut to this size, with
    /// their full size.
    pub argument_cap_bytes: usize,
    /// A cut argument or result at most this large is kept whole in
    /// `results/YYYY-MM-DD/`; a larger one only by its start.
    pub whole_file_cap_bytes: usize,
    /// A day's file and whole values together past this are abridged.
    pub max_day_bytes: u64,
}

impl Default for LogBudget {
    fn default() -> Self {
        Self {
            argument_cap_bytes: DEFAULT_ARGUMENT_CAP_BYTES,
            whole_file_cap_bytes: DEFAULT_WHOLE_FILE_CAP_BYTES,
            max_day_bytes: DEFAULT_MAX_DAY_BYTES,
        }
    }
}

/// What the sink sends to the writer thread.
// A record moves by value into the channel's preallocated slot: copying ~300 bytes is cheaper
// on the hot path than boxing it (an allocation per call).
#[allow(clippy::large_enum_variant)]
enum Message {
    Record(ExecutionRecord),
    /// Write out everything received so far, then answer.
    Flush(mpsc::SyncSender<()>),
}

/// The execution log: an [`ExecutionSink`] that hands records to one background thread, which
/// appends them as JSON lines to the day files. See the [crate documentation](crate).
pub struct ExecutionLog {
    dir: PathBuf,
    /// `None` only while dropping, so the writer sees the channel close.
    sender: Option<Sender<Message>>,
    writer: Option<JoinHandle<()>>,
}

impl ExecutionLog {
    /// Creates the folder when missing, deletes day files past retention, and starts the
    /// writer thread, with the default [`LogBudget`].
    pub fn open(settings: LogSettings) -> Result<Self, LogError> {
        Self::open_with_budget(settings, LogBudget::default())
    }

    /// [`open`](Self::open) with a disk budget of one's own.
    pub fn open_with_budget(settings: LogSettings, budget: LogBudget) -> Result<Self, LogError> {
        std::fs::create_dir_all(&settings.dir).map_err(|source| LogError::CreateDir {
            path: settings.dir.clone(),
            source,
        })?;
        let today = Utc::now().date_naive();
        sweep(&settings.dir, today, settings.retention_days);
        let (sender, receiver) = mpsc::channel();
        let dir = settings.dir.clone();
        let writer = Writer {
            settings,
            budget,
            day: None,
            swept_for: today,
            file: None,
            line: Vec::new(),
            failing: false,
        };
        let handle = std::thread::Builder::new()
            .name("toolmux-execlog".into())
            .spawn(move || writer.run(receiver))
            .map_err(LogError::Spawn)?;
        Ok(Self {
            dir,
            sender: Some(sender),
            writer: Some(handle),
        })
    }

    /// The folder of the day files.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Blocks until every record sent before this call has been written to its file (handed to
    /// the OS, not fsynced), so that a reader or the next process sees it. The CLI calls this
    /// before it exits.
    pub fn flush(&self) {
        let Some(sender) = &self.sender else { return };
        let (done, wait) = mpsc::sync_channel(1);
        if sender.send(Message::Flush(done)).is_ok() {
            // An error means the writer is gone, and there is nothing left to wait for.
            let _ = wait.recv();
        }
    }
}

impl ExecutionSink for ExecutionLog {
    /// Only moves the record into the channel: this runs on every call's hot path.
    fn record(&self, record: ExecutionRecord) {
        if let Some(sender) = &self.sender {
            // Fails only if the writer thread panicked, which it has already reported.
            let _ = sender.send(Message::Record(record));
        }
    }
}

impl Drop for ExecutionLog {
    /// Closes the channel, which makes the writer write out what it holds and stop, and waits
    /// for it.
    fn drop(&mut self) {
        drop(self.sender.take());
        if let Some(handle) = self.writer.take()
            && handle.join().is_err()
        {
            tracing::error!("the execution log writer thread panicked; some calls were not logged");
        }
    }
}

impl std::fmt::Debug for ExecutionLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExecutionLog")
            .field("dir", &self.dir)
            .finish()
    }
}

/// The state of the writer thread.
struct Writer {
    settings: LogSettings,
    budget: LogBudget,
    /// What the day being written takes on disk (its file and whole values), as found when the
    /// writer first wrote to it plus what it wrote since; and how far it is past its budget.
    day: Option<DayUsage>,
    /// The newest day retention has run for; a record of a later day means the date rolled.
    swept_for: NaiveDate,
    /// The open day file and its date.
    file: Option<(NaiveDate, BufWriter<File>)>,
    /// The line being built, reused so that writing does not allocate per call.
    line: Vec<u8>,
    /// The last write failed; warn once per failure streak, not once per call.
    failing: bool,
}

/// One day's disk use, as far as this writer knows.
struct DayUsage {
    date: NaiveDate,
    bytes: u64,
    /// 0: within budget; 1: abridging (warned); 2: dropping (warned).
    stage: u8,
    /// Records left out since the writer stopped writing this day.
    dropped: u64,
}

/// The bytes already on disk for a day: its file, and its folder of whole values.
fn day_bytes_on_disk(dir: &Path, date: NaiveDate) -> u64 {
    let file = std::fs::metadata(day_file(dir, date)).map_or(0, |m| m.len());
    let folder = dir
        .join(RESULTS_DIR)
        .join(date.format("%Y-%m-%d").to_string());
    let whole: u64 = std::fs::read_dir(folder)
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|e| e.metadata().ok())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0);
    file + whole
}

impl Writer {
    /// Takes messages until every sender is gone; writes out its buffer whenever the channel is
    /// momentarily empty, and before it returns.
    fn run(mut self, receiver: Receiver<Message>) {
        while let Ok(message) = receiver.recv() {
            self.handle(message);
            while let Ok(message) = receiver.try_recv() {
                self.handle(message);
            }
            self.flush();
        }
        self.flush();
    }

    fn handle(&mut self, message: Message) {
        match message {
            Message::Record(record) => self.write(record),
            Message::Flush(done) => {
                self.flush();
                let _ = done.send(());
            }
        }
    }

    fn write(&mut self, record: ExecutionRecord) {
        let date = record.timestamp.date_naive();
        if date > self.swept_for {
            self.swept_for = date;
            sweep(&self.settings.dir, date, self.settings.retention_days);
        }
        let Some(abridged) = self.budget_for(date) else {
            return;
        };
        let caps = Caps {
            arguments: self.budget.argument_cap_bytes,
            result: self.settings.result_cap_bytes,
            whole_file: self.budget.whole_file_cap_bytes,
            abridged,
        };
        let whole = write_line(record, caps, &mut self.line);
        if self.line.is_empty() {
            return;
        }
        // Whole values go to their files before the line that names them is written.
        for (relative, text) in whole {
            let path = self.settings.dir.join(&relative);
            let stored = path
                .parent()
                .map_or(Ok(()), std::fs::create_dir_all)
                .and_then(|()| std::fs::write(&path, &text));
            match stored {
                Ok(()) => self.spent(text.len()),
                Err(error) => {
                    tracing::warn!(file = %path.display(), %error, "cannot keep a whole value");
                }
            }
        }
        self.spent(self.line.len());
        let line = std::mem::take(&mut self.line);
        // One `write_all` of a whole line: the BufWriter either takes all of it or writes out
        // what it holds first, so the OS only ever sees whole lines.
        let result = self.file_for(date).and_then(|file| file.write_all(&line));
        self.line = line;
        self.report(result, date);
    }

    /// Whether a record of `date` is written abridged (`Some(true)`), whole (`Some(false)`), or
    /// not at all (`None`), by how much of the day's budget is spent; warns once per stage.
    fn budget_for(&mut self, date: NaiveDate) -> Option<bool> {
        if self.day.as_ref().is_none_or(|d| d.date != date) {
            if let Some(done) = self.day.as_ref().filter(|d| d.dropped > 0) {
                tracing::warn!(
                    date = %done.date, calls = done.dropped,
                    "calls past twice the execution log's daily budget were not logged"
                );
            }
            self.day = Some(DayUsage {
                date,
                bytes: day_bytes_on_disk(&self.settings.dir, date),
                stage: 0,
                dropped: 0,
            });
        }
        let budget = self.budget.max_day_bytes;
        let file = day_file(&self.settings.dir, date);
        let day = self.day.as_mut()?;
        let stage = if day.bytes >= budget.saturating_mul(2) {
            2
        } else if day.bytes >= budget {
            1
        } else {
            0
        };
        if stage > day.stage {
            day.stage = stage;
            if stage == 1 {
                tracing::warn!(
                    file = %file.display(), budget_bytes = budget,
                    "the execution log passed its daily budget; further calls today are logged \
                     without arguments or results"
                );
            } else {
                tracing::warn!(
                    file = %file.display(), budget_bytes = budget,
                    "the execution log passed twice its daily budget; further calls today are \
                     not logged"
                );
            }
        }
        match day.stage {
            0 => Some(false),
            1 => Some(true),
            _ => {
                day.dropped += 1;
                None
            }
        }
    }

    /// Counts bytes written for the day being written.
    fn spent(&mut self, bytes: usize) {
        if let Some(day) = &mut self.day {
            day.bytes = day.bytes.saturating_add(bytes as u64);
        }
    }

    /// The open file for `date`, switching files when the day differs.
    fn file_for(&mut self, date: NaiveDate) -> std::io::Result<&mut BufWriter<File>> {
        if self.file.as_ref().is_some_and(|(open, _)| *open != date) {
            let (open, file) = self.file.take().expect("checked above");
            let result = file.into_inner().map(drop).map_err(|e| e.into_error());
            self.report(result, open);
        }
        if self.file.is_none() {
            // Recreate the folder in case someone removed it while we ran.
            std::fs::create_dir_all(&self.settings.dir)?;
            let file = OpenOptions::new()
                .create(true)
                .append(true)
                .open(day_file(&self.settings.dir, date))?;
            self.file = Some((date, BufWriter::with_capacity(BUFFER_BYTES, file)));
        }
        Ok(&mut self.file.as_mut().expect("opened above").1)
    }

    fn flush(&mut self) {
        if let Some((date, file)) = &mut self.file {
            let date = *date;
            let result = file.flush();
            self.report(result, date);
        }
    }

    /// Warns on the first failure of a streak, notes the recovery, and drops a file that
    /// failed so that the next record reopens it.
    fn report(&mut self, result: std::io::Result<()>, date: NaiveDate) {
        let path = day_file(&self.settings.dir, date);
        match result {
            Ok(()) if self.failing => {
                self.failing = false;
                tracing::info!(file = %path.display(), "execution log writes again");
            }
            Ok(()) => {}
            Err(error) => {
                if !self.failing {
                    self.failing = true;
                    tracing::warn!(
                        file = %path.display(), %error,
                        "cannot write the execution log; calls are not being logged"
                    );
                }
                self.file = None;
            }
        }
    }
}
