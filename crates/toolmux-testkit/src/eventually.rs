//! Waiting for what a process or a server does on its own time (a watcher's debounce, a
//! process exiting, a cache written in the background): poll a condition until it holds, and
//! fail with what was awaited once the time limit has passed.

use std::time::{Duration, Instant};

/// How often a blocking wait polls: often enough to stay short, rarely enough to cost nothing.
const BLOCKING_POLL: Duration = Duration::from_millis(50);
/// How often an async wait polls; its checks are cheap reads of in-process state.
const ASYNC_POLL: Duration = Duration::from_millis(25);

/// The end of one wait, and the message it fails with.
struct Deadline<'a> {
    at: Instant,
    what: &'a str,
}

impl<'a> Deadline<'a> {
    fn after(limit: Duration, what: &'a str) -> Self {
        Self {
            at: Instant::now() + limit,
            what,
        }
    }

    fn assert_not_passed(&self) {
        assert!(
            Instant::now() < self.at,
            "timed out waiting for {}",
            self.what
        );
    }
}

/// How long [`wait_until`] waits: long enough for a watcher's debounce and a server's reload on
/// a loaded machine.
pub const WAIT_LIMIT: Duration = Duration::from_secs(10);

/// Polls `check` on this thread until it holds, failing with `what` after [`WAIT_LIMIT`]: for
/// what a running server does on its own time, such as applying an edit of its config file.
pub fn wait_until(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Deadline::after(WAIT_LIMIT, what);
    while !check() {
        deadline.assert_not_passed();
        std::thread::sleep(BLOCKING_POLL);
    }
}

/// Polls `check` until it holds, failing with `what` after `limit`; sleeps between polls
/// without blocking the runtime, so the tasks being waited for keep running.
pub async fn eventually(limit: Duration, what: &str, mut check: impl AsyncFnMut() -> bool) {
    let deadline = Deadline::after(limit, what);
    while !check().await {
        deadline.assert_not_passed();
        tokio::time::sleep(ASYNC_POLL).await;
    }
}
