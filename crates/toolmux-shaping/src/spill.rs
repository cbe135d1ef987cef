//! Whole results kept aside: a result over its cap is written under
//! `.toolmux/state/results/` and offered as `toolmux://results/<id>`, so a caller can read the
//! rest instead of losing it.
//!
//! The id is the only key: 128 random bits from the system's source, so knowing one means
//! having been given it (every caller that can read results shares the store). Files are
//! written atomically and private (0600); each lives [`SpillSettings::ttl`] and the store holds
//! at most [`SpillSettings::max_total_bytes`], the oldest going first. A read names a file only
//! through an id that is exactly 32 lowercase hex digits, so no id reaches outside the folder.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use chrono::{DateTime, SecondsFormat, Utc};

/// The URI prefix of kept results.
pub const RESULTS_URI_PREFIX: &str = "toolmux://results/";

/// How long kept results live and how much they may take.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SpillSettings {
    /// How long a kept result can be read.
    pub ttl: Duration,
    /// The most bytes all kept results take together; a result larger than this is not kept.
    pub max_total_bytes: u64,
}

impl Default for SpillSettings {
    fn default() -> Self {
        Self {
            ttl: Duration::from_secs(60 * 60),
            max_total_bytes: 256 * 1024 * 1024,
        }
    }
}

/// Why a result could not be kept or read.
#[derive(Debug, thiserror::Error)]
pub enum SpillError {
    /// Not an id this store could have made.
    #[error("`{0}` is not a result id (32 lowercase hex digits)")]
    InvalidId(String),
    /// No such result now: it expired or never existed.
    #[error("no kept result `{0}`: it expired or never existed")]
    NotFound(String),
    /// Larger than the whole store may hold.
    #[error("the result ({size} bytes) is larger than the {max} bytes kept results may take")]
    TooLarge {
        /// Its size.
        size: u64,
        /// The store's limit.
        max: u64,
    },
    /// The file system said no.
    #[error("kept results: {0}")]
    Io(#[from] io::Error),
}

/// A kept result's text and kind.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Spilled {
    /// Its id.
    pub id: String,
    /// The whole text.
    pub text: String,
    /// `application/json` or `text/plain`.
    pub mime_type: &'static str,
    /// When it stops being readable.
    pub expires: DateTime<Utc>,
}

/// Where a result was kept.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Kept {
    /// Its id.
    pub id: String,
    /// When it stops being readable.
    pub expires: DateTime<Utc>,
}

impl Kept {
    /// Its URI.
    pub fn uri(&self) -> String {
        format!("{RESULTS_URI_PREFIX}{}", self.id)
    }
}

/// The folder of kept results.
pub struct SpillStore {
    dir: PathBuf,
    settings: Mutex<SpillSettings>,
    /// Serialises writers of this process, so the total is checked against what is there.
    writing: Mutex<()>,
}

const JSON_EXT: &str = "json";
const TEXT_EXT: &str = "txt";

impl SpillStore {
    /// The store of a project: `.toolmux/state/results/`.
    pub fn for_project(project_dir: &Path, settings: SpillSettings) -> Self {
        Self::new(
            toolmux_files::state_dir(project_dir).join("results"),
            settings,
        )
    }

    /// A store in `dir` (made when the first result is kept).
    pub fn new(dir: PathBuf, settings: SpillSettings) -> Self {
        Self {
            dir,
            settings: Mutex::new(settings),
            writing: Mutex::new(()),
        }
    }

    /// Its settings now.
    pub fn settings(&self) -> SpillSettings {
        *self.settings.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Changes them (a reload); results already kept expire by the new time to live.
    pub fn configure(&self, settings: SpillSettings) {
        *self.settings.lock().unwrap_or_else(PoisonError::into_inner) = settings;
    }

    /// Keeps `text` (JSON when `json`) and says under which id, after removing expired results
    /// and, while the store would be over its size, the oldest.
    pub fn keep(&self, text: &str, json: bool) -> Result<Kept, SpillError> {
        let settings = self.settings();
        let size = text.len() as u64;
        if size > settings.max_total_bytes {
            return Err(SpillError::TooLarge {
                size,
                max: settings.max_total_bytes,
            });
        }
        let _writing = self.writing.lock().unwrap_or_else(PoisonError::into_inner);
        create_private_dir(&self.dir)?;
        self.sweep(settings, size)?;
        let id = new_id()?;
        let ext = if json { JSON_EXT } else { TEXT_EXT };
        toolmux_files::write_new_private(&self.dir.join(format!("{id}.{ext}")), text.as_bytes())?;
        Ok(Kept {
            id,
            expires: expiry(SystemTime::now(), settings.ttl),
        })
    }

    /// Reads a kept result by id; an expired one is removed and not found.
    pub fn read(&self, id: &str) -> Result<Spilled, SpillError> {
        check_id(id)?;
        let settings = self.settings();
        for (ext, mime_type) in [(JSON_EXT, "application/json"), (TEXT_EXT, "text/plain")] {
            let path = self.dir.join(format!("{id}.{ext}"));
            let text = match toolmux_files::read_text(
                &path,
                settings.max_total_bytes,
                toolmux_files::Links::Refuse,
            ) {
                Ok(text) => text,
                Err(e) if e.is_not_found() => continue,
                Err(e) => return Err(SpillError::Io(io::Error::other(e.to_string()))),
            };
            let written = fs::symlink_metadata(&path)?.modified()?;
            if expired(written, settings.ttl) {
                remove(&path);
                return Err(SpillError::NotFound(id.to_string()));
            }
            return Ok(Spilled {
                id: id.to_string(),
                text,
                mime_type,
                expires: expiry(written, settings.ttl),
            });
        }
        Err(SpillError::NotFound(id.to_string()))
    }

    /// Removes expired results, then the oldest while `incoming` more bytes would put the store
    /// over its size.
    fn sweep(&self, settings: SpillSettings, incoming: u64) -> Result<(), SpillError> {
        let mut kept = Vec::new();
        for entry in fs::read_dir(&self.dir)? {
            let entry = entry?;
            let Ok(meta) = entry.metadata() else { continue };
            let Ok(written) = meta.modified() else {
                continue;
            };
            if expired(written, settings.ttl) {
                remove(&entry.path());
            } else {
                kept.push((written, meta.len(), entry.path()));
            }
        }
        kept.sort();
        let mut total: u64 = kept.iter().map(|(_, len, _)| len).sum();
        for (_, len, path) in kept {
            if total + incoming <= settings.max_total_bytes {
                break;
            }
            remove(&path);
            total -= len;
        }
        Ok(())
    }
}

fn create_private_dir(dir: &Path) -> io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

fn remove(path: &Path) {
    if let Err(e) = fs::remove_file(path)
        && e.kind() != io::ErrorKind::NotFound
    {
        tracing::warn!(path = %path.display(), "a kept result could not be removed: {e}");
    }
}

fn expired(written: SystemTime, ttl: Duration) -> bool {
    SystemTime::now()
        .duration_since(written)
        .is_ok_and(|age| age >= ttl)
}

fn expiry(written: SystemTime, ttl: Duration) -> DateTime<Utc> {
    DateTime::<Utc>::from(written + ttl)
}

/// An expiry as the notes write it.
pub(crate) fn format_expiry(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(SecondsFormat::Secs, true)
}

fn new_id() -> Result<String, SpillError> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(|e| SpillError::Io(io::Error::other(e.to_string())))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// An id is exactly what [`new_id`] makes: nothing else names a file.
pub fn check_id(id: &str) -> Result<(), SpillError> {
    if id.len() == 32
        && id
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    {
        Ok(())
    } else {
        Err(SpillError::InvalidId(id.chars().take(80).collect()))
    }
}
