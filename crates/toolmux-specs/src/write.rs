//! Writing a spec file: atomically (a temporary file in the same folder, fsync, rename, fsync
//! of the folder), so a reader sees the old file or the new one and never half of one; and
//! one writer at a time per spec, so a check of `expectedContentHash` and the write that
//! follows it cannot interleave with another update of the same spec.
//!
//! Two locks: a mutex per spec folder for the calls of this process, and an advisory `flock`
//! on the spec folder itself for other toolmux processes (a CLI next to a server). Locking
//! the folder rather than a lock file leaves nothing behind in the user's specs.

use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use toolmux_core::human_bytes;

use crate::error::SpecsError;
use crate::file::MAX_SPEC_FILE_BYTES;

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
        // Closing the descriptor releases the flock. Not an explicit unlock that could fail:
        // the write is done by now, and must not be reported as failed.
        drop(dir);
        out
    }
}

/// Refuses a spec text the pack would then refuse to read (see `file`).
pub(crate) fn check_size(text: &str) -> Result<(), SpecsError> {
    if text.len() as u64 > MAX_SPEC_FILE_BYTES {
        return Err(SpecsError::Invalid(format!(
            "the spec would be {}, more than the {} the spec pack reads; nothing was written (put long parts in sub-spec files)",
            human_bytes(text.len() as u64),
            human_bytes(MAX_SPEC_FILE_BYTES)
        )));
    }
    Ok(())
}

/// Writes `text` to `path` through toolmux's one atomic writer (temp file, fsync, rename, fsync
/// of the folder; the old file's permissions kept). `create_new` refuses to replace an existing
/// file (for a new spec), also one created concurrently under the same name.
pub(crate) fn write_atomic(path: &Path, text: &str, create_new: bool) -> Result<(), SpecsError> {
    check_size(text)?;
    let written = if create_new {
        toolmux_files::write_new_atomic(path, text.as_bytes())
    } else {
        toolmux_files::write_atomic(path, text.as_bytes())
    };
    written.map_err(|e| SpecsError::io(path, e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
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
        assert_eq!(
            err,
            format!("{}: File exists (os error 17)", path.display())
        );
        assert_eq!(fs::read_to_string(&path).unwrap(), "new");
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
