//! Following a session's log as it is written — for the terminal (`toolmux sessions run` and
//! `logs --follow`) and the REST stream — from the store's files, so that a follower in one
//! toolmux process sees a session another one runs. It remembers a byte offset and reads only
//! what was appended since; when the record says the session ended and nothing is left, the
//! last event is the final status.

use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;

use crate::error::SessionError;
use crate::record::{LogEntry, SessionRecord, Status};
use crate::store::SessionStore;

/// How often a follower looks for new lines when there were none.
const PAUSE: Duration = Duration::from_millis(50);

/// What a follower reports.
#[derive(Clone, Debug)]
pub enum FollowEvent {
    /// One log entry.
    Entry(LogEntry),
    /// The session ended: the last event.
    Ended(Final),
}

/// How a session ended: the final event of a stream.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Final {
    /// The session's id.
    pub id: String,
    /// Its final status.
    pub status: Status,
    /// The runner's exit code, when it exited on its own.
    pub exit_code: Option<i32>,
    /// How long it ran.
    pub duration_ms: Option<u64>,
    /// Why it failed, was cancelled or was lost.
    pub error: Option<String>,
}

impl From<&SessionRecord> for Final {
    fn from(r: &SessionRecord) -> Self {
        Self {
            id: r.id.clone(),
            status: r.status,
            exit_code: r.exit_code,
            duration_ms: r.duration_ms,
            error: r.error.clone(),
        }
    }
}

/// Follows one session's log from its start.
pub struct Follower {
    store: Arc<dyn SessionStore>,
    id: String,
    position: u64,
    pending: std::collections::VecDeque<LogEntry>,
    done: bool,
}

impl Follower {
    /// A follower of session `id`; fails when there is no such session.
    pub fn new(store: Arc<dyn SessionStore>, id: &str) -> Result<Self, SessionError> {
        if store.load(id)?.is_none() {
            return Err(SessionError::UnknownSession(id.to_string()));
        }
        Ok(Self {
            store,
            id: id.to_string(),
            position: 0,
            pending: Default::default(),
            done: false,
        })
    }

    /// The next event; `None` after the final one.
    pub async fn next(&mut self) -> Option<FollowEvent> {
        loop {
            if let Some(entry) = self.pending.pop_front() {
                return Some(FollowEvent::Entry(entry));
            }
            if self.done {
                return None;
            }
            // The record is read before the log: a session that ended after this read still
            // has its last lines read below, and the final event waits for the next turn.
            let record = match self.store.load(&self.id) {
                Ok(Some(record)) => record,
                _ => {
                    self.done = true;
                    return None;
                }
            };
            match self.store.tail(&self.id, self.position) {
                Ok((entries, position)) if !entries.is_empty() => {
                    self.position = position;
                    self.pending.extend(entries);
                    continue;
                }
                Ok((_, position)) => self.position = position,
                Err(_) => {}
            }
            if record.status.is_final() {
                self.done = true;
                return Some(FollowEvent::Ended(Final::from(&record)));
            }
            tokio::time::sleep(PAUSE).await;
        }
    }
}
