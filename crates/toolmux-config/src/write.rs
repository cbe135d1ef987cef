//! The one way toolmux writes a file: a temporary file in the same directory, written and
//! flushed to disk, then renamed over the target, then the directory flushed. A reader sees the
//! old file or the new one, never half of one, and a failed write leaves the old file as it was.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Replaces the contents of `path` with `bytes` atomically. An existing file keeps its
/// permissions; a symlink keeps pointing where it did and its target is replaced.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_atomic_with(path, Commit::Replace, |file| file.write_all(bytes))
}

/// [`write_atomic`] for a file that must not exist yet: fails with
/// [`io::ErrorKind::AlreadyExists`], leaving the existing file as it was, when it does — also
/// when another writer creates it between the check and the write (a hard link, unlike a
/// rename, never replaces its target).
pub fn write_new_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_atomic_with(path, Commit::New, |file| file.write_all(bytes))
}

/// How the written temporary file takes the target's place.
#[derive(Clone, Copy)]
enum Commit {
    /// Renamed over it.
    Replace,
    /// Linked to its name, which must be free, then unlinked.
    New,
}

/// [`write_atomic`] with the writing step given, so that a test can make it fail halfway.
fn write_atomic_with(
    path: &Path,
    commit: Commit,
    fill: impl FnOnce(&mut File) -> io::Result<()>,
) -> io::Result<()> {
    let target = resolve_symlink(path)?;
    let name = target.file_name().ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("`{}` does not name a file", path.display()),
        )
    })?;
    let dir = match target.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let (temp_path, mut file) = create_temp(dir, &name.to_string_lossy())?;
    let written = (|| {
        if let Ok(meta) = fs::metadata(&target) {
            file.set_permissions(meta.permissions())?;
        }
        fill(&mut file)?;
        file.sync_all()
    })();
    drop(file);
    let renamed = written.and_then(|()| match commit {
        Commit::Replace => fs::rename(&temp_path, &target),
        Commit::New => {
            fs::hard_link(&temp_path, &target).and_then(|()| fs::remove_file(&temp_path))
        }
    });
    if let Err(e) = renamed {
        // Best effort: the write already failed, and that is the error to report.
        let _ = fs::remove_file(&temp_path);
        return Err(e);
    }
    sync_dir(dir)
}

/// The file a write to `path` should replace: `path` itself, or the file a symlink points to.
fn resolve_symlink(path: &Path) -> io::Result<PathBuf> {
    match fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => fs::canonicalize(path),
        _ => Ok(path.to_path_buf()),
    }
}

/// Creates a new, uniquely named hidden file beside the target.
fn create_temp(dir: &Path, name: &str) -> io::Result<(PathBuf, File)> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let pid = std::process::id();
    loop {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let temp_path = dir.join(format!(".{name}.{pid}.{n}.tmp"));
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temp_path)
        {
            Ok(file) => return Ok((temp_path, file)),
            // Left behind by a process with the same id that died; try the next name.
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && n < u64::from(u16::MAX) => {}
            Err(e) => return Err(e),
        }
    }
}

/// Removes the temporary files [`write_atomic`] made for `path` and never renamed: left by a
/// writer that was killed between its write and its rename. Only safe while no other writer of
/// `path` can be running, which is why only [`crate::ConfigEditor`] calls it, under its lock.
/// Best effort: a file that cannot be removed is harmless, as no reader ever opens one.
pub(crate) fn remove_stale_temps(path: &Path) {
    let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
        return;
    };
    let prefix = format!(".{}.", name.to_string_lossy());
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let file_name = entry.file_name();
        let file_name = file_name.to_string_lossy();
        if file_name.starts_with(&prefix) && file_name.ends_with(".tmp") {
            let _ = fs::remove_file(entry.path());
        }
    }
}

/// Flushes a directory, so that a rename in it survives a crash.
#[cfg(unix)]
fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// Windows cannot open a directory as a file; its renames are flushed with the file system.
#[cfg(not(unix))]
fn sync_dir(_dir: &Path) -> io::Result<()> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(dir)
            .expect("list dir")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn replaces_the_file_and_leaves_nothing_else() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("config.json");
        write_atomic(&path, b"one").expect("first write");
        write_atomic(&path, b"two").expect("second write");
        assert_eq!(fs::read(&path).expect("read"), b"two");
        assert_eq!(entries(dir.path()), ["config.json"]);
    }

    #[test]
    fn a_new_file_is_written_once_and_never_replaces_one_that_exists() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("README.md");
        write_new_atomic(&path, b"first").expect("a new file");
        let err = write_new_atomic(&path, b"second").expect_err("it exists");
        assert_eq!(err.kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(fs::read(&path).expect("read"), b"first");
        assert_eq!(entries(dir.path()), ["README.md"]);
    }

    #[test]
    fn a_failed_write_keeps_the_old_file_and_removes_the_temp_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("config.json");
        fs::write(&path, "old").expect("seed");
        let err = write_atomic_with(&path, Commit::Replace, |file| {
            file.write_all(b"half of the n")?;
            Err(io::Error::other("disk full"))
        })
        .expect_err("the write fails");
        assert_eq!(err.to_string(), "disk full");
        assert_eq!(fs::read_to_string(&path).expect("read"), "old");
        assert_eq!(entries(dir.path()), ["config.json"]);
    }

    #[cfg(unix)]
    #[test]
    fn keeps_permissions_and_writes_through_a_symlink() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("tempdir");
        let real = dir.path().join("real.json");
        fs::write(&real, "old").expect("seed");
        fs::set_permissions(&real, fs::Permissions::from_mode(0o640)).expect("chmod");
        let link = dir.path().join("config.json");
        std::os::unix::fs::symlink(&real, &link).expect("symlink");
        write_atomic(&link, b"new").expect("write");
        assert!(
            fs::symlink_metadata(&link)
                .expect("stat")
                .file_type()
                .is_symlink()
        );
        assert_eq!(fs::read_to_string(&real).expect("read"), "new");
        let mode = fs::metadata(&real).expect("stat").permissions().mode() & 0o777;
        assert_eq!(mode, 0o640);
        assert_eq!(entries(dir.path()), ["config.json", "real.json"]);
    }
}
