//! Files someone else chose, handed to [`read_text`]: what is not a regular file, what is too
//! large, a link where none may be, bytes that are not text. Each is refused with its own
//! error, unread (a FIFO is never waited on), and the text of a fine file is read.

use std::path::Path;

use toolmux_files::{Links, ReadTextError, read_text};
use toolmux_testkit::fifo::{mkfifo, read_with_a_writer};

fn refused(path: &Path, cap: u64, links: Links) -> ReadTextError {
    read_text(path, cap, links).expect_err("refused")
}

/// Issue 28 (rule 1): a FIFO nobody writes to held the reader for ever. Opened without
/// waiting, it is refused as what it is — also with a writer waiting on its other end, whose
/// text is never read.
#[test]
fn a_fifo_is_refused_without_waiting_or_reading() {
    let dir = tempfile::tempdir().expect("dir");
    let fifo = dir.path().join("commondir");
    mkfifo(&fifo);
    for links in [Links::Follow, Links::Refuse] {
        let error = read_with_a_writer(&fifo, b"planted\n", || refused(&fifo, 64, links));
        assert!(
            matches!(error, ReadTextError::NotRegular { kind: "a FIFO" }),
            "{error:?}"
        );
        assert_eq!(error.to_string(), "a FIFO, not a regular file");
    }
    // A link to a device that never ends is followed only to be refused.
    let zero = dir.path().join("zero");
    std::os::unix::fs::symlink("/dev/zero", &zero).expect("link");
    let error = refused(&zero, 64, Links::Follow);
    assert_eq!(error.to_string(), "a device, not a regular file");
}

/// Issue 28 (rule 1): a file of any size was read whole. One past the cap is refused by its
/// size, unread; the cap itself is read.
#[test]
fn a_file_past_the_cap_is_refused_and_one_at_the_cap_is_read() {
    let dir = tempfile::tempdir().expect("dir");
    let big = dir.path().join("big");
    let file = std::fs::File::create(&big).expect("create");
    // Sparse: a gigabyte that takes no disk.
    file.set_len(1 << 30).expect("set_len");
    let error = refused(&big, 4096, Links::Follow);
    assert!(
        matches!(
            error,
            ReadTextError::TooLarge {
                size: 1_073_741_824,
                cap: 4096
            }
        ),
        "{error:?}"
    );
    assert_eq!(error.to_string(), "larger than the 4096 bytes allowed");
    let fits = dir.path().join("fits");
    std::fs::write(&fits, "x".repeat(4096)).expect("write");
    assert_eq!(
        read_text(&fits, 4096, Links::Refuse).expect("read").len(),
        4096
    );
}

/// Issue 28: `.git/commondir` was read through a link, so a repository could have toolmux
/// read any file as the folder git is sent to. Where links are refused, one at the path is —
/// dangling or not — and where they are followed, the file it names is read.
#[test]
fn a_link_is_refused_where_none_may_be() {
    let dir = tempfile::tempdir().expect("dir");
    let target = dir.path().join("target");
    std::fs::write(&target, ".\n").expect("target");
    let link = dir.path().join("link");
    std::os::unix::fs::symlink(&target, &link).expect("link");
    let dangling = dir.path().join("dangling");
    std::os::unix::fs::symlink(dir.path().join("nothing"), &dangling).expect("dangling");
    for path in [&link, &dangling] {
        let error = refused(path, 64, Links::Refuse);
        assert!(matches!(error, ReadTextError::Link), "{error:?}");
        assert_eq!(
            error.to_string(),
            "a symbolic link, which is not followed here"
        );
    }
    assert_eq!(
        read_text(&link, 64, Links::Follow).expect("followed"),
        ".\n"
    );
    let error = refused(&dangling, 64, Links::Follow);
    assert!(error.is_not_found(), "{error:?}");
    // A missing file is "not found", and nothing else.
    assert!(refused(&dir.path().join("missing"), 64, Links::Refuse).is_not_found());
}

/// Bytes that are not UTF-8 are refused as such, not read with replacement characters.
#[test]
fn bytes_that_are_not_utf8_are_refused() {
    let dir = tempfile::tempdir().expect("dir");
    let binary = dir.path().join("binary");
    std::fs::write(&binary, b"ok \xff\xfe").expect("write");
    let error = refused(&binary, 64, Links::Refuse);
    assert!(matches!(error, ReadTextError::NotUtf8), "{error:?}");
    assert_eq!(error.to_string(), "not valid UTF-8");
}
