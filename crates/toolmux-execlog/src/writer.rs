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
use crate::entry::write_line;

/// Days of logs kept unless configured otherwise.
pub const DEFAULT_RETENTION_DAYS: u32 = 30;

/// The largest serialized result stored whole unless configured otherwise (16 KiB).
pub const DEFAULT_RESULT_CAP_BYTES: usize = 16 * 1024;

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
    /// writer thread.
    pub fn open(settings: LogSettings) -> Result<Self, LogError> {
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
    /// The newest day retention has run for; a record of a later day means the date rolled.
    swept_for: NaiveDate,
    /// The open day file and its date.
    file: Option<(NaiveDate, BufWriter<File>)>,
    /// The line being built, reused so that writing does not allocate per call.
    line: Vec<u8>,
    /// The last write failed; warn once per failure streak, not once per call.
    failing: bool,
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
        let whole = write_line(record, self.settings.result_cap_bytes, &mut self.line);
        if self.line.is_empty() {
            return;
        }
        // The whole result goes to its file before the line that names it is written.
        if let Some((text, relative)) = whole {
            let path = self.settings.dir.join(&relative);
            let stored = path
                .parent()
                .map_or(Ok(()), std::fs::create_dir_all)
                .and_then(|()| std::fs::write(&path, text));
            if let Err(error) = stored {
                tracing::warn!(file = %path.display(), %error, "cannot keep a whole result");
            }
        }
        let line = std::mem::take(&mut self.line);
        // One `write_all` of a whole line: the BufWriter either takes all of it or writes out
        // what it holds first, so the OS only ever sees whole lines.
        let result = self.file_for(date).and_then(|file| file.write_all(&line));
        self.line = line;
        self.report(result, date);
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
