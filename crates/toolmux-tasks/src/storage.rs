//! Where a pack keeps a document of state: one narrow interface (read it; change it under a
//! lock), so that the file under `.toolmux/state/` can later give way to another store without
//! the packs noticing.

use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};

use toolmux_files::{Links, ReadTextError};

/// The largest document a store keeps: it is read and rewritten whole on every change, so it
/// stays small; a change that would pass it is refused (the tasks pack says so), and a file
/// larger than it is not read.
pub const MAX_DOCUMENT_BYTES: usize = 8 * 1024 * 1024;

/// A failure of the store itself (not of the change).
#[derive(Debug, thiserror::Error)]
#[error("cannot {action} `{}`: {source}", path.display())]
pub struct StorageError {
    /// What was being done.
    pub action: &'static str,
    /// The file.
    pub path: PathBuf,
    /// The system's error.
    #[source]
    pub source: io::Error,
}

/// A change of a document: given its bytes (`None` when it was never written), the bytes to
/// write, or `None` to write nothing.
pub type Change<'a> = dyn FnMut(Option<&[u8]>) -> Option<Vec<u8>> + 'a;

/// One document of state, as bytes.
pub trait StateStore: Send + Sync {
    /// The document as it stands; `None` when it was never written.
    fn read(&self) -> Result<Option<Vec<u8>>, StorageError>;

    /// Reads the document and writes what `change` makes of it, atomically, with every other
    /// writer of the same document (in this process or another) kept out meanwhile. `change`
    /// answers `None` to write nothing.
    fn update(&self, change: &mut Change<'_>) -> Result<(), StorageError>;
}

/// A document kept in one file, replaced whole by `toolmux_files::write_atomic`, writers
/// serialised by an advisory lock on `<file>.lock` (a lock on the file itself would be lost
/// with the inode the rename replaces).
#[derive(Clone, Debug)]
pub struct JsonFile {
    path: PathBuf,
    lock: PathBuf,
}

impl JsonFile {
    /// The document at `path`.
    pub fn new(path: PathBuf) -> Self {
        let mut lock = path.clone().into_os_string();
        lock.push(".lock");
        Self {
            path,
            lock: lock.into(),
        }
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn error(&self, action: &'static str, path: &Path) -> impl FnOnce(io::Error) -> StorageError {
        let path = path.to_path_buf();
        move |source| StorageError {
            action,
            path,
            source,
        }
    }
}

impl StateStore for JsonFile {
    fn read(&self) -> Result<Option<Vec<u8>>, StorageError> {
        // A cloned project chooses what is at the path: never waited on (a FIFO), never read
        // unless it is a regular file, never buffered past the cap. A link is followed, as
        // `write_atomic` keeps it.
        match toolmux_files::read_text(&self.path, MAX_DOCUMENT_BYTES as u64, Links::Follow) {
            Ok(text) => Ok(Some(text.into_bytes())),
            Err(e) if e.is_not_found() => Ok(None),
            Err(ReadTextError::Io(e)) => Err(self.error("read", &self.path)(e)),
            Err(ReadTextError::TooLarge { .. }) => {
                Err(self.error("read", &self.path)(io::Error::other(format!(
                    "it is larger than the {} a state document may be",
                    toolmux_core::human_bytes(MAX_DOCUMENT_BYTES as u64)
                ))))
            }
            Err(refused) => Err(self.error("read", &self.path)(io::Error::other(format!(
                "it is {refused}"
            )))),
        }
    }

    fn update(&self, change: &mut Change<'_>) -> Result<(), StorageError> {
        if let Some(dir) = self.path.parent() {
            fs::create_dir_all(dir).map_err(self.error("create", dir))?;
        }
        let lock = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&self.lock)
            .map_err(self.error("open", &self.lock))?;
        lock.lock().map_err(self.error("lock", &self.lock))?;
        let current = self.read()?;
        if let Some(bytes) = change(current.as_deref()) {
            if bytes.len() > MAX_DOCUMENT_BYTES {
                return Err(self.error("write", &self.path)(io::Error::other(format!(
                    "it would be larger than the {} a state document may be",
                    toolmux_core::human_bytes(MAX_DOCUMENT_BYTES as u64)
                ))));
            }
            toolmux_files::write_atomic(&self.path, &bytes)
                .map_err(self.error("write", &self.path))?;
        }
        Ok(())
    }
}
