//! Named pipes, for tests that hand a tool something that is not a regular file.

use std::path::Path;

/// Makes a FIFO at `path`, readable and writable by its owner.
pub fn mkfifo(path: &Path) {
    rustix::fs::mknodat(
        rustix::fs::CWD,
        path,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::RUSR | rustix::fs::Mode::WUSR,
        0,
    )
    .unwrap_or_else(|e| panic!("mkfifo {}: {e}", path.display()));
}

/// Runs `read` — a reader under test that must refuse the FIFO at `path` — with a writer
/// waiting on the FIFO's other end, which writes `text` and closes. A reader that opens it and
/// waits then gets `text` and returns instead of hanging, so the test fails on it rather than
/// never ending. The writer is released afterwards whatever the reader did.
pub fn read_with_a_writer<T>(path: &Path, text: &'static [u8], read: impl FnOnce() -> T) -> T {
    use std::io::Write as _;
    let writer = {
        let path = path.to_path_buf();
        std::thread::spawn(move || {
            // Waits until a reader opens the FIFO; a write after that reader closed it fails
            // (EPIPE), which is nothing to this test.
            if let Ok(mut fifo) = std::fs::OpenOptions::new().write(true).open(&path) {
                let _ = fifo.write_all(text);
            }
        })
    };
    let read = read();
    // A reader of our own, without waiting, lets a writer still waiting for one go on.
    let release = {
        use std::os::unix::fs::OpenOptionsExt as _;
        std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
            .open(path)
    };
    writer.join().expect("the FIFO's writer");
    drop(release);
    read
}
