//! [`file_kind`]: what a file is, in words, for the errors of readers that take only regular
//! files (a FIFO would hold them, a device feed them forever).

/// What a file of type `kind` is: "a regular file", "a FIFO", "a symbolic link" …
pub fn file_kind(kind: std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if kind.is_fifo() {
            return "a FIFO";
        }
        if kind.is_socket() {
            return "a socket";
        }
        if kind.is_char_device() || kind.is_block_device() {
            return "a device";
        }
    }
    if kind.is_file() {
        "a regular file"
    } else if kind.is_dir() {
        "a folder"
    } else if kind.is_symlink() {
        "a symbolic link"
    } else {
        "a special file"
    }
}
