//! Where sessions are kept: the [`SessionStore`] trait and its one implementation,
//! [`DirStore`] — a folder per session under `.toolmux/state/sessions/<id>/`, holding
//! `session.json` (written atomically, whole) and `log.jsonl` (appended, one JSON line per log
//! entry). Files rather than a database: a log is appended at the runner's pace and read by
//! other processes (`toolmux sessions logs` beside a `serve`) without locking anything, and a
//! follower only has to remember a byte offset.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::error::SessionError;
use crate::record::{LogEntry, SessionRecord};

/// One page of a session's log.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LogPage {
    /// The entries, in order.
    pub entries: Vec<LogEntry>,
    /// The position of the first entry.
    pub offset: u64,
    /// The position to ask for next.
    pub next_offset: u64,
    /// Whether more entries were there past this page when it was read.
    pub more: bool,
}

/// Appends entries to one session's log.
pub trait LogSink: Send {
    /// Appends one entry (buffered).
    fn append(&mut self, entry: &LogEntry) -> Result<(), SessionError>;
    /// Makes what was appended visible to readers.
    fn flush(&mut self) -> Result<(), SessionError>;
}

/// Keeps session records and logs.
pub trait SessionStore: Send + Sync + 'static {
    /// Writes a record whole (atomically: a reader sees the old or the new one).
    fn save(&self, record: &SessionRecord) -> Result<(), SessionError>;
    /// One record; `None` when there is no such session.
    fn load(&self, id: &str) -> Result<Option<SessionRecord>, SessionError>;
    /// Every record, newest first.
    fn list(&self) -> Result<Vec<SessionRecord>, SessionError>;
    /// Opens a session's log for appending.
    fn log_sink(&self, id: &str) -> Result<Box<dyn LogSink>, SessionError>;
    /// Entries `offset..offset + limit` of a session's log.
    fn read_log(&self, id: &str, offset: u64, limit: usize) -> Result<LogPage, SessionError>;
    /// The complete lines of the log from byte `from` on, with the byte offset after them:
    /// how a follower reads what was appended since it last looked.
    fn tail(&self, id: &str, from: u64) -> Result<(Vec<LogEntry>, u64), SessionError>;
    /// Asks the process that runs the session to cancel it (another toolmux process may).
    fn request_cancel(&self, id: &str) -> Result<(), SessionError>;
    /// Whether cancelling was asked for.
    fn cancel_requested(&self, id: &str) -> bool;
}

/// The session store in `.toolmux/state/sessions/`.
#[derive(Clone, Debug)]
pub struct DirStore {
    dir: PathBuf,
}

impl DirStore {
    /// The store under `state_dir` (`.toolmux/state`).
    pub fn new(state_dir: &Path) -> Self {
        Self {
            dir: state_dir.join("sessions"),
        }
    }

    /// A session's folder. Ids are checked to be one plain path component.
    fn session_dir(&self, id: &str) -> Result<PathBuf, SessionError> {
        let plain = !id.is_empty()
            && id.len() <= 64
            && id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        if !plain {
            return Err(SessionError::UnknownSession(id.to_string()));
        }
        Ok(self.dir.join(id))
    }

    fn log_path(&self, id: &str) -> Result<PathBuf, SessionError> {
        Ok(self.session_dir(id)?.join("log.jsonl"))
    }
}

struct FileSink {
    path: PathBuf,
    out: BufWriter<File>,
}

impl LogSink for FileSink {
    fn append(&mut self, entry: &LogEntry) -> Result<(), SessionError> {
        serde_json::to_writer(&mut self.out, entry)
            .map_err(|e| SessionError::io(&self.path, e.into()))?;
        self.out
            .write_all(b"\n")
            .map_err(|e| SessionError::io(&self.path, e))
    }

    fn flush(&mut self) -> Result<(), SessionError> {
        self.out
            .flush()
            .map_err(|e| SessionError::io(&self.path, e))
    }
}

impl SessionStore for DirStore {
    fn save(&self, record: &SessionRecord) -> Result<(), SessionError> {
        let dir = self.session_dir(&record.id)?;
        std::fs::create_dir_all(&dir).map_err(|e| SessionError::io(&dir, e))?;
        let path = dir.join("session.json");
        let bytes =
            serde_json::to_vec_pretty(record).map_err(|e| SessionError::Failed(e.to_string()))?;
        toolmux_files::write_atomic(&path, &bytes).map_err(|e| SessionError::io(&path, e))
    }

    fn load(&self, id: &str) -> Result<Option<SessionRecord>, SessionError> {
        let path = self.session_dir(id)?.join("session.json");
        match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map(Some)
                .map_err(|e| SessionError::Failed(format!("{}: {e}", path.display()))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(SessionError::io(path, e)),
        }
    }

    fn list(&self) -> Result<Vec<SessionRecord>, SessionError> {
        let entries = match std::fs::read_dir(&self.dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(SessionError::io(&self.dir, e)),
        };
        let mut records = Vec::new();
        for entry in entries.flatten() {
            let Some(id) = entry.file_name().to_str().map(str::to_string) else {
                continue;
            };
            match self.load(&id) {
                Ok(Some(record)) => records.push(record),
                Ok(None) => {}
                Err(e) => tracing::warn!("a session record cannot be read: {e}"),
            }
        }
        records.sort_by(|a, b| b.created_at.cmp(&a.created_at).then(b.id.cmp(&a.id)));
        Ok(records)
    }

    fn log_sink(&self, id: &str) -> Result<Box<dyn LogSink>, SessionError> {
        let path = self.log_path(id)?;
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(|e| SessionError::io(&path, e))?;
        Ok(Box::new(FileSink {
            path,
            out: BufWriter::with_capacity(64 * 1024, file),
        }))
    }

    fn read_log(&self, id: &str, offset: u64, limit: usize) -> Result<LogPage, SessionError> {
        let path = self.log_path(id)?;
        let file = match File::open(&path) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(LogPage {
                    entries: Vec::new(),
                    offset,
                    next_offset: offset,
                    more: false,
                });
            }
            Err(e) => return Err(SessionError::io(&path, e)),
        };
        let mut entries = Vec::with_capacity(limit.min(1024));
        let mut lines = BufReader::new(file).lines();
        let mut skipped = 0u64;
        let mut more = false;
        for line in lines.by_ref() {
            let line = line.map_err(|e| SessionError::io(&path, e))?;
            if skipped < offset {
                skipped += 1;
                continue;
            }
            if entries.len() == limit {
                more = true;
                break;
            }
            match serde_json::from_str::<LogEntry>(&line) {
                Ok(entry) => entries.push(entry),
                // A line being written when the log was read: the next read gets it.
                Err(_) => break,
            }
        }
        let next_offset = offset + entries.len() as u64;
        Ok(LogPage {
            entries,
            offset,
            next_offset,
            more,
        })
    }

    fn tail(&self, id: &str, from: u64) -> Result<(Vec<LogEntry>, u64), SessionError> {
        let path = self.log_path(id)?;
        let mut file = match File::open(&path) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((Vec::new(), from)),
            Err(e) => return Err(SessionError::io(&path, e)),
        };
        file.seek(SeekFrom::Start(from))
            .map_err(|e| SessionError::io(&path, e))?;
        // At most this much per call, so a follower of a huge log never holds it all.
        let mut reader = BufReader::new(file.take(4 * 1024 * 1024));
        let mut entries = Vec::new();
        let mut position = from;
        let mut line = String::new();
        loop {
            line.clear();
            let n = reader
                .read_line(&mut line)
                .map_err(|e| SessionError::io(&path, e))?;
            // End of what is there, or a line still being written: stop before it.
            if n == 0 || !line.ends_with('\n') {
                break;
            }
            position += n as u64;
            if let Ok(entry) = serde_json::from_str::<LogEntry>(line.trim_end()) {
                entries.push(entry);
            }
        }
        Ok((entries, position))
    }

    fn request_cancel(&self, id: &str) -> Result<(), SessionError> {
        let path = self.session_dir(id)?.join("cancel");
        std::fs::write(&path, b"").map_err(|e| SessionError::io(path, e))
    }

    fn cancel_requested(&self, id: &str) -> bool {
        self.session_dir(id)
            .is_ok_and(|dir| dir.join("cancel").exists())
    }
}
