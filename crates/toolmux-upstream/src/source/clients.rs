//! Per-client connections: for a server served per client (`sessionMode: "per-client"`, or
//! `serve --pass-through`), each downstream session (an MCP client's session, a chat
//! conversation) gets a connection of its own — its own upstream MCP session, its own stdio
//! process — opened on its first call and closed when the session ends
//! ([`UpstreamSource::end_session`]). Whatever the server sends on that connection (elicitation
//! and sampling requests, log messages, progress) can then only be that session's, so nothing
//! is ever refused as ambiguous or shown to the wrong client.
//!
//! toolmux's own requests (discovery, a refresh, the relayed prompts and resources) and calls
//! without a session (the command line, the REST API) keep using the shared connection, so they
//! are never counted as one client's callers. At most `maxSessions` per-client connections are
//! open at once; a session beyond them is refused with a message that says so, rather than
//! starting processes without bound.

use std::collections::HashMap;

use super::*;

/// One session's connection, filled on its first call; the lock is held while it is opened, so
/// a session's concurrent first calls open one connection, not several.
pub(super) type ClientSlot = Arc<tokio::sync::Mutex<Option<Arc<Connection>>>>;

/// Per-client connections by downstream session id.
#[derive(Default)]
pub(super) struct Clients {
    /// Served per client whatever the configuration says (`serve --pass-through`).
    pub(super) forced: AtomicBool,
    pub(super) slots: Mutex<HashMap<String, ClientSlot>>,
}

impl Inner {
    /// Whether a call from `session` gets a connection of its own.
    pub(super) fn per_client(&self) -> bool {
        self.clients.forced.load(Ordering::Relaxed)
            || self.server().session_mode == toolmux_config::SessionMode::PerClient
    }

    /// The connection of one downstream session, opened (with the usual start retries) on its
    /// first call, with one request counted in flight on it.
    pub(super) async fn client_connection(
        self: &Arc<Self>,
        session: &str,
    ) -> Result<InFlight, UpstreamError> {
        let slot = {
            let mut slots = lock(&self.clients.slots);
            match slots.get(session) {
                Some(slot) => Arc::clone(slot),
                None => {
                    let max = self.server().max_sessions;
                    if slots.len() >= max {
                        return Err(UpstreamError::TooManySessions {
                            server: self.name.clone(),
                            max,
                        });
                    }
                    let slot = ClientSlot::default();
                    slots.insert(session.to_string(), Arc::clone(&slot));
                    slot
                }
            }
        };
        let mut held = slot.lock().await;
        if let Some(conn) = held.as_ref() {
            if conn.is_alive() {
                return Ok(conn.begin());
            }
            tracing::warn!(server = %self.name, session, "a client's server exited; it is restarted on this call");
            if let Some(dead) = held.take() {
                dead.close().await;
            }
        }
        // The session may have ended while this call waited for the slot: open nothing for it.
        let current = lock(&self.clients.slots)
            .get(session)
            .is_some_and(|s| Arc::ptr_eq(s, &slot));
        if !current {
            return Err(UpstreamError::SessionEnded {
                server: self.name.clone(),
            });
        }
        match self.start().await {
            Ok(conn) => {
                tracing::debug!(server = %self.name, session, "opened a connection for a client session");
                let in_flight = conn.begin();
                *held = Some(conn);
                self.touch();
                Ok(in_flight)
            }
            Err(e) => {
                // A session whose server would not start holds no place under the cap.
                let mut slots = lock(&self.clients.slots);
                if slots.get(session).is_some_and(|s| Arc::ptr_eq(s, &slot)) {
                    slots.remove(session);
                }
                Err(e)
            }
        }
    }

    /// Closes a session's connection, when it has one.
    pub(super) async fn end_client(&self, session: &str) {
        let slot = lock(&self.clients.slots).remove(session);
        let Some(slot) = slot else { return };
        let conn = slot.lock().await.take();
        if let Some(conn) = conn {
            tracing::debug!(server = %self.name, session, "closing a client session's connection");
            conn.close().await;
        }
    }

    /// Closes every per-client connection (toolmux stops the server).
    pub(super) async fn end_clients(&self) {
        let slots: Vec<ClientSlot> = lock(&self.clients.slots)
            .drain()
            .map(|(_, slot)| slot)
            .collect();
        for slot in slots {
            let conn = slot.lock().await.take();
            if let Some(conn) = conn {
                conn.close().await;
            }
        }
    }

    /// Takes `dropped` out of service after its connection dropped during a call, so that the
    /// next attempt starts the server again (stdio) or opens a new session (HTTP) rather than
    /// reuse a connection that may look alive (an HTTP transport outlives a lost response).
    pub(super) async fn replace(&self, dropped: &Arc<Connection>, session: Option<&str>) {
        let taken = match session {
            Some(session) => {
                let slot = lock(&self.clients.slots).get(session).cloned();
                match slot {
                    Some(slot) => take_if_same(&mut *slot.lock().await, dropped),
                    None => None,
                }
            }
            None => take_if_same(&mut *self.slot.lock().await, dropped),
        };
        if let Some(conn) = taken {
            conn.close().await;
        }
    }
}

/// Empties `slot` when it holds `conn` (another call may have replaced it already).
fn take_if_same(
    slot: &mut Option<Arc<Connection>>,
    conn: &Arc<Connection>,
) -> Option<Arc<Connection>> {
    if slot.as_ref().is_some_and(|c| Arc::ptr_eq(c, conn)) {
        slot.take()
    } else {
        None
    }
}

impl UpstreamSource {
    /// Serves this server per client from now on, whatever its `sessionMode` says: what
    /// `serve --pass-through` does for the server it stands in for, since a pass-through
    /// client expects the server's requests and log levels to be its own.
    pub fn serve_per_client(&self) {
        self.inner.clients.forced.store(true, Ordering::Relaxed);
    }

    /// Whether calls with a session get connections of their own.
    pub fn is_per_client(&self) -> bool {
        self.inner.per_client()
    }

    /// Closes the connection of a downstream session that ended (an MCP session deleted or
    /// expired), when it has one; its server process (stdio) or upstream session (HTTP) ends.
    pub async fn end_session(&self, session: &str) {
        self.inner.end_client(session).await;
    }

    /// How many per-client connections are open (or opening) now.
    pub fn client_sessions(&self) -> usize {
        lock(&self.inner.clients.slots).len()
    }
}
