//! What each session has read: the guard behind `file_write`'s rule that a file is replaced
//! only by a caller who has seen it (or says `overwrite: true`), as coding agents guard
//! against blind overwrites.
//!
//! A session is the `CallContext::session` of the call: the MCP session, the chat
//! conversation (a code-mode script inherits its caller's). A caller without one (the command
//! line, a REST request) has nothing recorded, so it must say `overwrite: true` to replace a
//! file: one anonymous caller's read cannot vouch for another's write.
//!
//! What is kept per file is its content hash when `file_read` read the file to its end (it
//! does, to count lines, for all but huge files), and its `fstat` (size, inode, modification
//! and change times) always. A write compares the hash when there is one, so a file touched
//! but unchanged still counts as read, and the `fstat` otherwise. The record is bounded: the
//! least recently used session, and a session's least recently read file, are forgotten first.

use std::collections::HashMap;
use std::fs::Metadata;
use std::io::{self, Read};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use sha2::{Digest, Sha256};

/// How many sessions are remembered at most.
const MAX_SESSIONS: usize = 256;
/// How many files of one session are remembered at most.
const MAX_FILES: usize = 4096;

/// What a file was when it was read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Stamp {
    /// SHA-256 of the whole content, when the whole file was read.
    pub(crate) hash: Option<[u8; 32]>,
    meta: MetaStamp,
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct MetaStamp {
    len: u64,
    ino: u64,
    dev: u64,
    modified: (i64, i64),
    changed: (i64, i64),
}

impl Stamp {
    /// The stamp of a file with `meta`, whose content hashes to `hash` when known.
    pub(crate) fn new(meta: &Metadata, hash: Option<[u8; 32]>) -> Self {
        Self {
            hash,
            meta: MetaStamp {
                len: meta.len(),
                ino: meta.ino(),
                dev: meta.dev(),
                modified: (meta.mtime(), meta.mtime_nsec()),
                changed: (meta.ctime(), meta.ctime_nsec()),
            },
        }
    }

    /// Whether the file as it is now (`now`, with its content hash) is still what was read.
    pub(crate) fn still_matches(&self, now: &Stamp) -> bool {
        match (self.hash, now.hash) {
            (Some(then), Some(now)) => then == now,
            _ => self.meta == now.meta,
        }
    }
}

/// SHA-256 of `bytes`.
pub(crate) fn hash(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

/// A reader that hashes what passes through it, so that `file_read` learns the hash of a file
/// it reads to the end without a second pass.
pub(crate) struct Hashing<R> {
    inner: R,
    hasher: Sha256,
}

impl<R> Hashing<R> {
    pub(crate) fn new(inner: R) -> Self {
        Self {
            inner,
            hasher: Sha256::new(),
        }
    }

    /// The hash of everything read so far.
    pub(crate) fn finish(self) -> [u8; 32] {
        self.hasher.finalize().into()
    }
}

impl<R: Read> Read for Hashing<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hasher.update(&buf[..n]);
        Ok(n)
    }
}

/// The files each session has read, bounded. Shared by the pack's tools.
#[derive(Debug, Default)]
pub(crate) struct Reads {
    ledger: Mutex<Ledger>,
}

#[derive(Debug, Default)]
struct Ledger {
    /// A clock for least-recently-used eviction.
    tick: u64,
    sessions: HashMap<String, Session>,
}

#[derive(Debug, Default)]
struct Session {
    used: u64,
    files: HashMap<PathBuf, (Stamp, u64)>,
}

impl Reads {
    fn lock(&self) -> std::sync::MutexGuard<'_, Ledger> {
        self.ledger.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Records that `session` has seen the file at `path` as `stamp` (it read it, or wrote it).
    pub(crate) fn record(&self, session: &str, path: &Path, stamp: Stamp) {
        let mut ledger = self.lock();
        ledger.tick += 1;
        let tick = ledger.tick;
        if !ledger.sessions.contains_key(session) && ledger.sessions.len() >= MAX_SESSIONS {
            let oldest = ledger
                .sessions
                .iter()
                .min_by_key(|(_, s)| s.used)
                .map(|(k, _)| k.clone());
            if let Some(oldest) = oldest {
                ledger.sessions.remove(&oldest);
            }
        }
        let entry = ledger.sessions.entry(session.to_string()).or_default();
        entry.used = tick;
        if !entry.files.contains_key(path) && entry.files.len() >= MAX_FILES {
            let oldest = entry
                .files
                .iter()
                .min_by_key(|(_, (_, t))| *t)
                .map(|(k, _)| k.clone());
            if let Some(oldest) = oldest {
                entry.files.remove(&oldest);
            }
        }
        entry.files.insert(path.to_path_buf(), (stamp, tick));
    }

    /// What `session` saw of the file at `path`, if it has seen it.
    pub(crate) fn seen(&self, session: &str, path: &Path) -> Option<Stamp> {
        self.lock()
            .sessions
            .get(session)
            .and_then(|s| s.files.get(path))
            .map(|(stamp, _)| stamp.clone())
    }

    /// Forgets the file at `path` for `session` (it deleted or moved it).
    pub(crate) fn forget(&self, session: &str, path: &Path) {
        if let Some(s) = self.lock().sessions.get_mut(session) {
            s.files.remove(path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_record_is_bounded_and_forgets_the_least_recently_used_first() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("f"), "x").unwrap();
        let meta = std::fs::metadata(dir.path().join("f")).unwrap();
        let reads = Reads::default();
        for i in 0..MAX_SESSIONS {
            reads.record(&format!("s{i}"), Path::new("/f"), Stamp::new(&meta, None));
        }
        // `s0` is used again, so `s1` is the oldest when one more session comes.
        reads.record("s0", Path::new("/g"), Stamp::new(&meta, None));
        reads.record("new", Path::new("/f"), Stamp::new(&meta, None));
        assert!(reads.seen("s0", Path::new("/f")).is_some());
        assert!(reads.seen("s1", Path::new("/f")).is_none());
        assert!(reads.seen("new", Path::new("/f")).is_some());
        assert_eq!(reads.lock().sessions.len(), MAX_SESSIONS);
        for i in 0..=MAX_FILES {
            reads.record(
                "big",
                &PathBuf::from(format!("/f{i}")),
                Stamp::new(&meta, None),
            );
        }
        assert!(reads.seen("big", Path::new("/f0")).is_none());
        assert!(reads.seen("big", Path::new("/f1")).is_some());
    }

    #[test]
    fn a_hash_decides_when_both_sides_have_one() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("f"), "x").unwrap();
        let meta = std::fs::metadata(dir.path().join("f")).unwrap();
        std::fs::write(dir.path().join("g"), "x").unwrap();
        let other = std::fs::metadata(dir.path().join("g")).unwrap();
        let same = Stamp::new(&meta, Some(hash(b"x")));
        // Another inode, same content: still what was read.
        assert!(same.still_matches(&Stamp::new(&other, Some(hash(b"x")))));
        assert!(!same.still_matches(&Stamp::new(&meta, Some(hash(b"y")))));
        // Without a hash, the metadata decides.
        assert!(Stamp::new(&meta, None).still_matches(&Stamp::new(&meta, Some(hash(b"y")))));
        assert!(!Stamp::new(&meta, None).still_matches(&Stamp::new(&other, None)));
    }
}
