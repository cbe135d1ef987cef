//! Reading a configuration-like file with a size cap. The project's own config, its seed
//! registries and the other clients' server lists toolmux imports are chosen by whoever made
//! the project (a cloned repository, say), so none is read whole before its size is known to
//! be sane (THREATS.md, rule 1).

use std::io;
use std::path::Path;

/// The most of one configuration, registry or imported file toolmux reads: far above any real
/// one (a script tool's long description included; the tests write 8 MiB ones), far below what
/// could hurt.
pub const MAX_CONFIG_FILE_BYTES: u64 = 64 * 1024 * 1024;

/// The text of `path`, refused with `InvalidData` when it is not a regular file (a FIFO or a
/// device: opened without waiting for a writer, never read), longer than
/// [`MAX_CONFIG_FILE_BYTES`] (read no further than one byte past the cap) or not UTF-8.
pub fn read_config_text(path: &Path) -> io::Result<String> {
    use toolmux_files::ReadTextError;
    toolmux_files::read_text(path, MAX_CONFIG_FILE_BYTES, toolmux_files::Links::Follow).map_err(
        |e| match e {
            ReadTextError::Io(e) => e,
            ReadTextError::TooLarge { .. } => io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "the file is larger than {} MiB, more than any configuration needs",
                    MAX_CONFIG_FILE_BYTES / (1024 * 1024)
                ),
            ),
            refused => io::Error::new(io::ErrorKind::InvalidData, refused),
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 28 (rule 1), found in review: a registry or an imported file of any size was read
    /// whole. One past the cap is refused without reading further; the cap itself is read.
    #[test]
    fn a_file_past_the_cap_is_refused_and_one_at_the_cap_is_read() {
        let dir = tempfile::tempdir().expect("temp dir");
        let big = dir.path().join("big.json");
        let file = std::fs::File::create(&big).expect("create");
        // Sparse: a gigabyte that takes no disk.
        file.set_len(1 << 30).expect("set_len");
        let refused = read_config_text(&big).expect_err("refused");
        assert_eq!(refused.kind(), io::ErrorKind::InvalidData);
        assert!(
            refused.to_string().contains(&format!(
                "larger than {} MiB",
                MAX_CONFIG_FILE_BYTES / (1024 * 1024)
            )),
            "{refused}"
        );
        let fits = dir.path().join("fits.json");
        std::fs::File::create(&fits)
            .and_then(|file| file.set_len(MAX_CONFIG_FILE_BYTES))
            .expect("a file at the cap");
        assert_eq!(
            read_config_text(&fits).expect("read").len() as u64,
            MAX_CONFIG_FILE_BYTES
        );
    }

    /// Issue 28 (rule 1): a registry or configuration file that is a FIFO (nobody ever writes
    /// to it) or a link to `/dev/zero` held toolmux at start, before anything else ran.
    #[cfg(unix)]
    #[test]
    fn a_fifo_or_a_device_is_refused_without_waiting_or_reading() {
        let dir = tempfile::tempdir().expect("temp dir");
        let fifo = dir.path().join("mcp.json");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .expect("mkfifo");
        assert!(made.success());
        let refused = read_config_text(&fifo).expect_err("a FIFO");
        assert_eq!(refused.kind(), io::ErrorKind::InvalidData);
        assert_eq!(refused.to_string(), "a FIFO, not a regular file");
        let zero = dir.path().join("config.json");
        std::os::unix::fs::symlink("/dev/zero", &zero).expect("link");
        assert_eq!(
            read_config_text(&zero).expect_err("a device").to_string(),
            "a device, not a regular file"
        );
    }
}
