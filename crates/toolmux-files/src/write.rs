//! The one way toolmux writes a file: a temporary file in the same directory, written and
//! flushed to disk, then renamed over the target, then the directory flushed. A reader sees the
//! old file or the new one, never half of one, and a failed write leaves the old file as it was.
//!
//! On Unix every step goes through a descriptor of the directory ([`stage_in`]): the temporary
//! file is made with `openat(O_EXCL | O_NOFOLLOW)` and put in place with `renameat`/`linkat`
//! relative to it, so nothing is resolved by name twice. [`write_atomic`] opens the directory
//! by path; the workspace tools open it beneath the project root (no link followed) and call
//! [`stage_in`] themselves, so a directory swapped for a link between their check and their
//! write cannot lead them outside.

use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
#[cfg(unix)]
use std::{
    ffi::{OsStr, OsString},
    sync::Arc,
};

/// Replaces the contents of `path` with `bytes` atomically. An existing file keeps its
/// permissions; a symlink keeps pointing where it did and its target is replaced.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_atomic_with(path, Commit::Replace, |file| file.write_all(bytes))
}

/// [`write_new_atomic`] for a file only its owner may read (mode 0600 from the moment it is
/// created): tokens and keys.
pub fn write_new_private(path: &Path, bytes: &[u8]) -> io::Result<()> {
    #[cfg(unix)]
    {
        let target = resolve_symlink(path)?;
        let (dir, name) = split(&target, path)?;
        let dir = Arc::new(File::open(dir)?);
        stage_in(&dir, name, bytes, Some(0o600), Commit::New)?.commit()?;
        dir.sync_all()
    }
    #[cfg(not(unix))]
    {
        write_new_atomic(path, bytes)
    }
}

/// [`write_atomic`] for a file that must not exist yet: fails with
/// [`io::ErrorKind::AlreadyExists`], leaving the existing file as it was, when it does — also
/// when another writer creates it between the check and the write (a hard link, unlike a
/// rename, never replaces its target).
pub fn write_new_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_atomic_with(path, Commit::New, |file| file.write_all(bytes))
}

/// How a written temporary file takes the target's name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Commit {
    /// Renamed over the file there: the old one is replaced whole.
    Replace,
    /// Linked to the name, which must be free (a link never replaces), then unlinked.
    New,
}

/// [`write_atomic`] with the writing step given, so that a test can make it fail halfway.
fn write_atomic_with(
    path: &Path,
    commit: Commit,
    fill: impl FnOnce(&mut File) -> io::Result<()>,
) -> io::Result<()> {
    let target = resolve_symlink(path)?;
    let (dir, name) = split(&target, path)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = fs::metadata(&target).ok().map(|m| m.permissions().mode());
        let dir = Arc::new(File::open(dir)?);
        stage_with(&dir, name, mode, commit, fill)?.commit()?;
        dir.sync_all()
    }
    #[cfg(not(unix))]
    {
        portable::write(dir, &target, name, commit, fill)
    }
}

/// The directory a write to `target` happens in, and the file's name there (`path` is what
/// the caller named, for the error).
fn split<'a>(target: &'a Path, path: &Path) -> io::Result<(&'a Path, &'a std::ffi::OsStr)> {
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
    Ok((dir, name))
}

/// The file a write to `path` should replace: `path` itself, or the file a symlink points to.
fn resolve_symlink(path: &Path) -> io::Result<PathBuf> {
    match fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => fs::canonicalize(path),
        _ => Ok(path.to_path_buf()),
    }
}

/// Removes the temporary files [`write_atomic`] made for `path` and never renamed: left by a
/// writer that was killed between its write and its rename. Only safe while no other writer of
/// `path` can be running, which is why only the configuration's editor calls it, under its
/// lock. Best effort: a file that cannot be removed is harmless, as no reader ever opens one.
pub fn remove_stale_temps(path: &Path) {
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

/// A temporary file written and flushed beside its target, waiting for [`Staged::commit`].
/// Dropped uncommitted, it is removed.
#[cfg(unix)]
#[derive(Debug)]
pub struct Staged {
    dir: Arc<File>,
    temp: OsString,
    name: OsString,
    how: Commit,
    done: bool,
}

/// The first half of the one way to write a file, through a descriptor of the directory: a
/// hidden temporary file beside `name` in `dir`, holding `bytes`, flushed. `mode` gives it an
/// existing file's permissions; a new file gets `0o666` less the umask. A link put in the
/// file's place meanwhile is replaced by the commit, never followed. Flush `dir` after the
/// commit (once for several files) for the rename to survive a crash.
#[cfg(unix)]
pub fn stage_in(
    dir: &Arc<File>,
    name: &OsStr,
    bytes: &[u8],
    mode: Option<u32>,
    how: Commit,
) -> io::Result<Staged> {
    stage_with(dir, name, mode, how, |file| file.write_all(bytes))
}

#[cfg(unix)]
fn stage_with(
    dir: &Arc<File>,
    name: &OsStr,
    mode: Option<u32>,
    how: Commit,
    fill: impl FnOnce(&mut File) -> io::Result<()>,
) -> io::Result<Staged> {
    use rustix::fs::{Mode, OFlags};
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let pid = std::process::id();
    let (temp, mut file) = loop {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let mut temp = OsString::from(".");
        temp.push(name);
        temp.push(format!(".{pid}.{n}.tmp"));
        match rustix::fs::openat(
            dir.as_ref(),
            temp.as_os_str(),
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            // Created with the mode asked for (the umask can only narrow it), so a private
            // file is never open to others, not even empty for a moment before the chmod.
            Mode::from_raw_mode(mode.map_or(0o666, |m| m & 0o777)),
        ) {
            Ok(fd) => break (temp, File::from(fd)),
            // Left behind by a process with the same id that died; try the next name.
            Err(rustix::io::Errno::EXIST) if n < u64::from(u16::MAX) => {}
            Err(e) => return Err(e.into()),
        }
    };
    // Made before the file is filled, so a failure from here on removes it (on drop).
    let staged = Staged {
        dir: Arc::clone(dir),
        temp,
        name: name.to_os_string(),
        how,
        done: false,
    };
    if let Some(mode) = mode {
        rustix::fs::fchmod(&file, Mode::from_raw_mode(mode & 0o7777))?;
    }
    fill(&mut file)?;
    file.sync_all()?;
    Ok(staged)
}

#[cfg(unix)]
impl Staged {
    /// Puts the file in its place: renamed over the target, or linked to a free name.
    pub fn commit(&mut self) -> io::Result<()> {
        let dir = self.dir.as_ref();
        match self.how {
            Commit::Replace => {
                rustix::fs::renameat(dir, self.temp.as_os_str(), dir, self.name.as_os_str())?;
            }
            Commit::New => {
                rustix::fs::linkat(
                    dir,
                    self.temp.as_os_str(),
                    dir,
                    self.name.as_os_str(),
                    rustix::fs::AtFlags::empty(),
                )?;
                // The file has its name; the temporary one is only a second link now, and a
                // leftover is removed by `remove_stale_temps` or never read.
                let _ =
                    rustix::fs::unlinkat(dir, self.temp.as_os_str(), rustix::fs::AtFlags::empty());
            }
        }
        self.done = true;
        Ok(())
    }
}

#[cfg(unix)]
impl Drop for Staged {
    fn drop(&mut self) {
        if !self.done {
            // Best effort: nothing ever reads a temporary file.
            let _ = rustix::fs::unlinkat(
                self.dir.as_ref(),
                self.temp.as_os_str(),
                rustix::fs::AtFlags::empty(),
            );
        }
    }
}

/// Where there are no directory descriptors (Windows), the same steps by path.
#[cfg(not(unix))]
mod portable {
    use std::ffi::OsStr;
    use std::fs::{self, File, OpenOptions};
    use std::io;
    use std::path::Path;
    use std::sync::atomic::{AtomicU64, Ordering};

    use super::Commit;

    pub(super) fn write(
        dir: &Path,
        target: &Path,
        name: &OsStr,
        commit: Commit,
        fill: impl FnOnce(&mut File) -> io::Result<()>,
    ) -> io::Result<()> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let pid = std::process::id();
        let (temp_path, mut file) = loop {
            let n = COUNTER.fetch_add(1, Ordering::Relaxed);
            let temp_path = dir.join(format!(".{}.{pid}.{n}.tmp", name.to_string_lossy()));
            match OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&temp_path)
            {
                Ok(file) => break (temp_path, file),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists && n < u64::from(u16::MAX) => {}
                Err(e) => return Err(e),
            }
        };
        let written = (|| {
            if let Ok(meta) = fs::metadata(target) {
                file.set_permissions(meta.permissions())?;
            }
            fill(&mut file)?;
            file.sync_all()
        })();
        drop(file);
        let renamed = written.and_then(|()| match commit {
            Commit::Replace => fs::rename(&temp_path, target),
            Commit::New => {
                fs::hard_link(&temp_path, target).and_then(|()| fs::remove_file(&temp_path))
            }
        });
        if let Err(e) = renamed {
            // Best effort: the write already failed, and that is the error to report.
            let _ = fs::remove_file(&temp_path);
            return Err(e);
        }
        Ok(())
    }
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
    fn a_private_file_is_owner_only_and_never_replaces_one() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("token");
        write_new_private(&path, b"secret").expect("written");
        let mode = fs::metadata(&path).expect("stat").permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let err = write_new_private(&path, b"other").expect_err("exists");
        assert_eq!(err.kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(fs::read(&path).expect("read"), b"secret");
        assert_eq!(entries(dir.path()), ["token"]);
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
