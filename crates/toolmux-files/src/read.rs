//! Reading a file someone else chose. A cloned repository chooses its configuration, registries,
//! specs, state documents and `.git` files, so none is buffered whole before its size is known
//! to be sane (THREATS.md, rule 1): each reader gives its cap, and [`read_capped`] is the one
//! loop that keeps to it. [`read_text`] is the one way to read such a file as text: opened
//! without waiting (a FIFO would hold the reader until someone writes to it), through a link
//! only where the caller allows one, refused unread unless it is a regular file, capped, UTF-8.

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

use crate::file_kind;

/// Everything `source` holds when that is at most `cap` bytes; `Ok(None)` when it holds more,
/// having read no further than one byte past the cap.
pub fn read_capped(source: impl Read, cap: u64) -> io::Result<Option<Vec<u8>>> {
    let mut bytes = Vec::new();
    source.take(cap.saturating_add(1)).read_to_end(&mut bytes)?;
    Ok((bytes.len() as u64 <= cap).then_some(bytes))
}

/// Whether [`read_text`] opens a file through a symbolic link at its path (links on the way
/// to it are the caller's business: `ProjectRoot` resolves those beneath the project).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Links {
    /// Followed: the file is whatever the link names (a user's configuration kept elsewhere).
    Follow,
    /// Refused ([`ReadTextError::Link`]): a file whose meaning is where it is (`.git/commondir`).
    Refuse,
}

/// Why [`read_text`] or [`read_text_from`] gave no text.
#[derive(Debug, thiserror::Error)]
pub enum ReadTextError {
    /// The system refused to open or read it (`NotFound` when there is nothing there).
    #[error("{0}")]
    Io(#[from] io::Error),
    /// A symbolic link where [`Links::Refuse`] said none may be.
    #[error("a symbolic link, which is not followed here")]
    Link,
    /// A FIFO, a device, a folder …: what it is, in [`file_kind`]'s words. Never read.
    #[error("{kind}, not a regular file")]
    NotRegular {
        /// What it is ("a FIFO").
        kind: &'static str,
    },
    /// Longer than the cap: nothing past one byte beyond it was read.
    #[error("larger than the {cap} bytes allowed")]
    TooLarge {
        /// Its size as far as it is known: what the file system says, or the cap and one
        /// byte when it grew past the cap while it was read.
        size: u64,
        /// The cap.
        cap: u64,
    },
    /// Not UTF-8.
    #[error("not valid UTF-8")]
    NotUtf8,
}

impl ReadTextError {
    /// Whether nothing is at the path (for readers to which a missing file means "none").
    pub fn is_not_found(&self) -> bool {
        matches!(self, Self::Io(e) if e.kind() == io::ErrorKind::NotFound)
    }
}

/// The text of the file at `path`, at most `cap` bytes of UTF-8, or why not (see
/// [`ReadTextError`]). It is opened with `O_NONBLOCK`, so a FIFO is refused at once rather
/// than waited on, and with `O_NOFOLLOW` when `links` is [`Links::Refuse`].
pub fn read_text(path: &Path, cap: u64, links: Links) -> Result<String, ReadTextError> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use rustix::fs::OFlags;
        let mut flags = OFlags::NONBLOCK;
        if links == Links::Refuse {
            flags |= OFlags::NOFOLLOW;
        }
        std::os::unix::fs::OpenOptionsExt::custom_flags(&mut options, flags.bits() as i32);
    }
    let file = match options.open(path) {
        Ok(file) => file,
        // `O_NOFOLLOW` on a link: ELOOP. Asked again without following, so that a real loop
        // of links, where following was allowed, keeps its own error.
        Err(_) if links == Links::Refuse && is_link(path) => return Err(ReadTextError::Link),
        Err(e) => return Err(e.into()),
    };
    #[cfg(not(unix))]
    if links == Links::Refuse && is_link(path) {
        return Err(ReadTextError::Link);
    }
    read_text_from(file, cap)
}

/// [`read_text`] of a file the caller opened itself (the workspace's beneath-the-root open,
/// which already refuses links out of the project and does not wait on a FIFO).
pub fn read_text_from(file: File, cap: u64) -> Result<String, ReadTextError> {
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(ReadTextError::NotRegular {
            kind: file_kind(meta.file_type()),
        });
    }
    if meta.len() > cap {
        return Err(ReadTextError::TooLarge {
            size: meta.len(),
            cap,
        });
    }
    // It may have grown since it was looked at: the cap holds for what is read.
    let bytes = read_capped(file, cap)?.ok_or(ReadTextError::TooLarge {
        size: cap.saturating_add(1),
        cap,
    })?;
    String::from_utf8(bytes).map_err(|_| ReadTextError::NotUtf8)
}

fn is_link(path: &Path) -> bool {
    path.symlink_metadata()
        .is_ok_and(|meta| meta.file_type().is_symlink())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_up_to_the_cap_and_refuses_one_byte_more() {
        assert_eq!(
            read_capped(&b"four"[..], 4).expect("read"),
            Some(b"four".to_vec())
        );
        assert_eq!(read_capped(&b"five!"[..], 4).expect("read"), None);
        assert_eq!(read_capped(&b""[..], 0).expect("read"), Some(Vec::new()));
    }

    /// An endless source is refused after `cap + 1` bytes, not read to its end.
    #[test]
    fn an_endless_source_is_read_no_further_than_past_the_cap() {
        let mut endless = io::repeat(b'x');
        assert_eq!(read_capped(&mut endless, 1024).expect("read"), None);
    }
}
