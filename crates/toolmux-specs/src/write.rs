//! Writing a spec file: atomically (a temporary file in the same folder, fsync, rename, fsync
//! of the folder), so a reader sees the old file or the new one and never half of one; and
//! one writer at a time per spec, so a check of `expectedContentHash` and the write that
//! follows it cannot interleave with another update of the same spec.
//!
//! Two locks: a mutex per spec folder for the calls of this process, and an advisory `flock`
//! on the spec folder itself for other toolmux processes (a CLI next to a server). Locking
//! the folder rather than a lock file leaves nothing behind in the user's specs.

use std::collections::HashMap;
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::error::SpecsError;

/// The per-folder mutexes of one pack.
#[derive(Debug, Default)]
pub(crate) struct Locks {
    folders: Mutex<HashMap<PathBuf, Arc<Mutex<()>>>>,
}

impl Locks {
    /// Runs `f` holding the locks of `folder`.
    pub(crate) fn with<T>(
        &self,
        folder: &Path,
        f: impl FnOnce() -> Result<T, SpecsError>,
    ) -> Result<T, SpecsError> {
        let mutex = {
            let mut map = self
                .folders
                .lock()
                .map_err(|_| SpecsError::Invalid("the spec lock table is poisoned".into()))?;
            Arc::clone(map.entry(folder.to_path_buf()).or_default())
        };
        let _guard = mutex
            .lock()
            .map_err(|_| SpecsError::Invalid("a spec lock is poisoned by a crash".into()))?;
        let dir = File::open(folder).map_err(|e| SpecsError::io(folder, e))?;
        dir.lock().map_err(|e| SpecsError::io(folder, e))?;
        let out = f();
        // Closing the descriptor releases the flock; unlock explicitly to say so.
        dir.unlock().map_err(|e| SpecsError::io(folder, e))?;
        out
    }
}

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// Writes `text` to `path` atomically, keeping the old file's permissions. `create_new`
/// refuses to replace an existing file (for a new spec).
pub(crate) fn write_atomic(path: &Path, text: &str, create_new: bool) -> Result<(), SpecsError> {
    let dir = path
        .parent()
        .ok_or_else(|| SpecsError::Invalid(format!("{} has no folder", path.display())))?;
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("README.md");
    let tmp = dir.join(format!(
        ".{name}.toolmux-{}-{}.tmp",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let result = (|| {
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)
            .map_err(|e| SpecsError::io(&tmp, e))?;
        if let Ok(old) = fs::metadata(path) {
            file.set_permissions(old.permissions())
                .map_err(|e| SpecsError::io(&tmp, e))?;
        }
        file.write_all(text.as_bytes())
            .map_err(|e| SpecsError::io(&tmp, e))?;
        file.sync_all().map_err(|e| SpecsError::io(&tmp, e))?;
        drop(file);
        if create_new {
            // A hard link fails when the target exists, so a spec created concurrently under
            // the same name is never overwritten.
            fs::hard_link(&tmp, path).map_err(|e| SpecsError::io(path, e))?;
            fs::remove_file(&tmp).map_err(|e| SpecsError::io(&tmp, e))?;
        } else {
            fs::rename(&tmp, path).map_err(|e| SpecsError::io(path, e))?;
        }
        File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(|e| SpecsError::io(dir, e))
    })();
    if result.is_err() {
        // Best effort: the temporary file may not exist (the failure was creating it).
        let _ = fs::remove_file(&tmp);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn atomic_write_keeps_permissions_and_leaves_no_temp_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("README.md");
        fs::write(&path, "old").unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).unwrap();
        write_atomic(&path, "new", false).unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "new");
        assert_eq!(
            fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
        let err = write_atomic(&path, "again", true).unwrap_err().to_string();
        assert!(err.contains("File exists"), "{err}");
        assert_eq!(fs::read_to_string(&path).unwrap(), "new");
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
