//! Per-client connections: for a server served per client (`sessionMode: "per-client"`, or
//! `serve --pass-through`), each downstream session (an MCP client's session, a chat
//! conversation) gets a connection of its own — its own upstream MCP session, its own stdio
//! process — opened on its first request and closed when the session ends
//! ([`UpstreamSource::end_session`]) or after `clientIdleTimeoutMs` unused. Every request of the
//! session goes there: tool calls, `prompts/get`, `resources/read`, `completion/complete`,
//! subscriptions and `logging/setLevel`. Whatever the server sends on that connection
//! (elicitation and sampling requests, log messages, progress, `resources/updated`) can then
//! only be that session's: it goes to the call it names, else to the session's way back (the
//! [`Outlet`] a channel attaches), so nothing is refused as ambiguous or shown to another client.
//!
//! What the session asked of its server — its log level, its subscriptions — is kept here, not
//! on the connection, so that a connection stopped as idle (or one that crashed) is reopened
//! transparently by the next request and told them again. A connection with subscriptions is
//! never stopped as idle: the client is waiting for their updates.
//!
//! toolmux's own requests (discovery, a refresh) and requests without a session (the command
//! line, the REST API) keep using the shared connection, so they are never counted as one
//! client's callers. At most `maxSessions` per-client connections are open at once; a session
//! beyond them is refused with a message that says so, rather than starting processes without
//! bound.
//!
//! A server served to all sessions over one connection (`shared`) keeps each session's log
//! level here too: it is asked for the most verbose level any session wants, and each session's
//! channel filters what it shows by its own.

use std::collections::{BTreeSet, HashMap};

use super::supervisor::renew;
use super::*;

/// A subscribed resource the server says changed, and whose news it is: the downstream session
/// whose per-client connection it came on, or `None` when it came on the shared connection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResourceUpdate {
    /// The session it is for alone, when it came on a per-client connection.
    pub session: Option<String>,
    /// The resource's URI.
    pub uri: String,
}

impl ResourceUpdate {
    /// Whether a subscriber of `uri` in `session` should hear of it: it is that URI, and it
    /// is that session's or everyone's.
    pub fn is_for(&self, session: Option<&str>, uri: &str) -> bool {
        self.uri == uri && (self.session.is_none() || self.session.as_deref() == session)
    }
}

/// One session's connection, filled on its first request; the lock is held while it is
/// opened, so a session's concurrent first requests open one connection, not several.
pub(super) type ClientSlot = Arc<tokio::sync::Mutex<Option<Arc<Connection>>>>;

/// What toolmux keeps of one downstream session for one server, whether a connection is open
/// or not: its way back, its log level and its subscriptions (per-client), or only its level
/// (shared).
#[derive(Default)]
pub(super) struct ClientSession {
    outlet: Arc<Outlet>,
    level: Mutex<Option<LogLevel>>,
    subscriptions: Mutex<BTreeSet<String>>,
}

/// Per-client connections by downstream session id.
#[derive(Default)]
pub(super) struct Clients {
    /// Served per client whatever the configuration says (`serve --pass-through`).
    pub(super) forced: AtomicBool,
    /// Open (or opening) connections: what `maxSessions` counts.
    pub(super) slots: Mutex<HashMap<String, ClientSlot>>,
    /// What each session asked for; outlives an idle connection, ends with the session.
    sessions: Mutex<HashMap<String, Arc<ClientSession>>>,
    /// The level last asked of the shared connection, renewed on a new one.
    pub(super) shared_level: Mutex<Option<LogLevel>>,
}

impl Inner {
    /// Whether a call from `session` gets a connection of its own.
    pub(super) fn per_client(&self) -> bool {
        self.clients.forced.load(Ordering::Relaxed)
            || self.server().session_mode == toolmux_config::SessionMode::PerClient
    }

    /// `session` when it gets a connection of its own here.
    pub(super) fn client_of<'s>(&self, session: Option<&'s str>) -> Option<&'s str> {
        session.filter(|_| self.per_client())
    }

    /// What is kept of `session`, made on first use.
    fn client_session(&self, session: &str) -> Arc<ClientSession> {
        let mut sessions = lock(&self.clients.sessions);
        Arc::clone(sessions.entry(session.to_string()).or_default())
    }

    /// The connection of one downstream session, opened (with the usual start retries) on its
    /// first request or after it was stopped as idle, with one request counted in flight on
    /// it. A new connection is told the session's log level and subscriptions before the
    /// request goes out.
    pub(super) async fn client_connection(
        self: &Arc<Self>,
        session: &str,
    ) -> Result<InFlight, UpstreamError> {
        let state = self.client_session(session);
        loop {
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
                tracing::warn!(server = %self.name, session, "a client's server exited; it is restarted on this request");
                if let Some(dead) = held.take() {
                    dead.close().await;
                }
            }
            let current = lock(&self.clients.slots)
                .get(session)
                .is_some_and(|s| Arc::ptr_eq(s, &slot));
            if !current {
                // The slot was emptied while this request waited for it: stopped as idle
                // (the session goes on: take a new slot), or the session ended (open nothing).
                let alive = lock(&self.clients.sessions)
                    .get(session)
                    .is_some_and(|s| Arc::ptr_eq(s, &state));
                if alive {
                    continue;
                }
                return Err(UpstreamError::SessionEnded {
                    server: self.name.clone(),
                });
            }
            match self.start(Some((session, &state.outlet))).await {
                Ok(conn) => {
                    tracing::debug!(server = %self.name, session, "opened a connection for a client session");
                    let level = *lock(&state.level);
                    let uris: Vec<String> = lock(&state.subscriptions).iter().cloned().collect();
                    // Bounded: a server that never answers must not hold the request forever.
                    let limit = self.server().tool_timeout.unwrap_or(RELAY_TIMEOUT);
                    if tokio::time::timeout(limit, renew(&conn, level, &uris))
                        .await
                        .is_err()
                    {
                        tracing::warn!(server = %self.name, session, "the server did not take the client's level and subscriptions in time");
                    }
                    let in_flight = conn.begin();
                    if self.server().client_idle_timeout.is_some() {
                        tokio::spawn(watch_client_idle(
                            Arc::downgrade(self),
                            Arc::downgrade(&state),
                            Arc::downgrade(&slot),
                            Arc::downgrade(&conn),
                        ));
                    }
                    *held = Some(conn);
                    self.touch();
                    return Ok(in_flight);
                }
                Err(e) => {
                    // A session whose server would not start holds no place under the cap.
                    let mut slots = lock(&self.clients.slots);
                    if slots.get(session).is_some_and(|s| Arc::ptr_eq(s, &slot)) {
                        slots.remove(session);
                    }
                    return Err(e);
                }
            }
        }
    }

    /// The session's connection when one is open now; opens none.
    async fn open_client_connection(&self, session: &str) -> Option<InFlight> {
        let slot = lock(&self.clients.slots).get(session).cloned()?;
        let held = slot.lock().await;
        held.as_ref().filter(|c| c.is_alive()).map(|c| c.begin())
    }

    /// Closes a session's connection, when it has one, and forgets what the session asked for.
    pub(super) async fn end_client(&self, session: &str) {
        let state = lock(&self.clients.sessions).remove(session);
        let slot = lock(&self.clients.slots).remove(session);
        if let Some(slot) = slot {
            let conn = slot.lock().await.take();
            if let Some(conn) = conn {
                tracing::debug!(server = %self.name, session, "closing a client session's connection");
                conn.close().await;
            }
        }
        // A shared server may now be asked for less: the session that wanted the most is gone.
        if state.is_some_and(|s| lock(&s.level).is_some())
            && !self.per_client()
            && let Err(e) = self.ask_shared_level().await
        {
            tracing::debug!(server = %self.name, error = %e, "cannot lower the shared log level");
        }
    }

    /// Closes every per-client connection (toolmux stops the server), all at once: each close
    /// may wait out a process's stop sequence (seconds), and a pass-through server has one
    /// process per client, so closing them one by one held a `serve` with twenty clients for
    /// half a minute.
    pub(super) async fn end_clients(&self) {
        let slots: Vec<ClientSlot> = lock(&self.clients.slots)
            .drain()
            .map(|(_, slot)| slot)
            .collect();
        futures::future::join_all(slots.into_iter().map(|slot| async move {
            let conn = slot.lock().await.take();
            if let Some(conn) = conn {
                conn.close().await;
            }
        }))
        .await;
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

    /// Records the level `session` asked for and asks the server: a per-client session's own
    /// connection when it is open (else it is told when it opens: a level alone starts
    /// nothing); a shared server the most verbose level any session asked for.
    async fn set_level(&self, session: &str, level: LogLevel) -> Result<(), UpstreamError> {
        let state = self.client_session(session);
        *lock(&state.level) = Some(level);
        if !self.per_client() {
            return self.ask_shared_level().await;
        }
        let Some(conn) = self.open_client_connection(session).await else {
            return Ok(());
        };
        self.ask_level(&conn, level).await
    }

    /// Sends `logging/setLevel` on `conn` within the server's request time limit.
    async fn ask_level(&self, conn: &Connection, level: LogLevel) -> Result<(), UpstreamError> {
        let limit = self.server().tool_timeout.unwrap_or(RELAY_TIMEOUT);
        match tokio::time::timeout(limit, conn.set_level(level)).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(self.request_error("logging/setLevel", conn, &e)),
            Err(_) => Err(UpstreamError::Timeout {
                server: self.name.clone(),
                what: "logging/setLevel",
                after: limit,
            }),
        }
    }

    /// Asks the shared connection, when it runs, for the most verbose level the sessions want
    /// now, unless it was asked for that already; a new connection is asked when it starts.
    async fn ask_shared_level(&self) -> Result<(), UpstreamError> {
        let wanted = lock(&self.clients.sessions)
            .values()
            .filter_map(|s| *lock(&s.level))
            .min();
        let Some(wanted) = wanted else {
            return Ok(()); // MCP has no "unset": the last level stays until one is asked for
        };
        {
            let mut asked = lock(&self.clients.shared_level);
            if *asked == Some(wanted) {
                return Ok(());
            }
            *asked = Some(wanted);
        }
        let conn = {
            let slot = self.slot.lock().await;
            slot.as_ref().filter(|c| c.is_alive()).map(|c| c.begin())
        };
        let Some(conn) = conn else { return Ok(()) };
        self.ask_level(&conn, wanted).await
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

/// Closes one session's connection once it has had no request in flight for the server's
/// `clientIdleTimeoutMs` (read afresh each time) and holds no subscription, freeing its place
/// under `maxSessions`; what the session asked for is kept for the next connection.
async fn watch_client_idle(
    source: Weak<Inner>,
    state: Weak<ClientSession>,
    slot: Weak<tokio::sync::Mutex<Option<Arc<Connection>>>>,
    conn: Weak<Connection>,
) {
    let mut wait = Duration::ZERO;
    loop {
        tokio::time::sleep(wait).await;
        let (Some(inner), Some(state), Some(slot), Some(watched)) = (
            source.upgrade(),
            state.upgrade(),
            slot.upgrade(),
            conn.upgrade(),
        ) else {
            return;
        };
        let Some(idle) = inner.server().client_idle_timeout else {
            return; // no longer stopped when idle
        };
        let mut held = slot.lock().await;
        let current = held.as_ref().is_some_and(|c| Arc::ptr_eq(c, &watched));
        if !current || !watched.is_alive() {
            return;
        }
        let quiet = watched.idle_for();
        let subscribed = !lock(&state.subscriptions).is_empty();
        if watched.in_flight() == 0 && !subscribed && quiet >= idle {
            held.take();
            // Out of the table while the slot is still locked: a request waiting on this slot
            // finds it gone and takes a new one (see `client_connection`).
            lock(&inner.clients.slots).retain(|_, s| !Arc::ptr_eq(s, &slot));
            drop(held);
            tracing::info!(server = %inner.name, "stopping a client's connection after {}ms idle", idle.as_millis());
            watched.close().await;
            return;
        }
        wait = idle.saturating_sub(quiet).max(Duration::from_millis(10));
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

    /// Gives a downstream session's way back to a per-client server: what the server sends
    /// on that session's connection outside any call (log lines between calls, a request
    /// while no call runs) goes there. Nothing for a shared server, whose such messages
    /// belong to no one session.
    pub fn attach_session(&self, session: &str, way_back: Arc<dyn toolmux_core::Backchannel>) {
        if self.inner.per_client() {
            self.inner.client_session(session).outlet.set(way_back);
        }
    }

    /// `logging/setLevel` from a downstream session: the session's own upstream session gets
    /// it when served per client; a shared server is asked for the most verbose level any
    /// session asked for (each channel filters what its session is shown by its own level).
    pub async fn set_level(&self, session: &str, level: LogLevel) -> Result<(), UpstreamError> {
        self.inner.set_level(session, level).await
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

    /// Subscribes `session` to `uri` on its own connection (opened when needed); the server's
    /// updates come back on [`UpstreamSource::resource_updates`] marked with the session.
    pub(super) async fn subscribe_client(
        &self,
        session: &str,
        uri: &str,
    ) -> Result<(), UpstreamError> {
        let state = self.inner.client_session(session);
        let asked = self
            .request(Some(session), "resources/subscribe", |conn| {
                let state = Arc::clone(&state);
                async move {
                    // Recorded once the connection is open (a new one renews what is recorded,
                    // and this one would then be asked twice), before the request leaves.
                    if !lock(&state.subscriptions).insert(uri.to_string()) {
                        return Ok(()); // subscribing twice is one subscription
                    }
                    conn.subscribe(uri).await
                }
            })
            .await;
        if asked.is_err() {
            lock(&state.subscriptions).remove(uri);
        }
        asked
    }

    /// Drops `session`'s subscription to `uri`, unsubscribing on its connection if it is
    /// open; a closed one holds no subscription.
    pub(super) async fn unsubscribe_client(
        &self,
        session: &str,
        uri: &str,
    ) -> Result<(), UpstreamError> {
        let state = lock(&self.inner.clients.sessions).get(session).cloned();
        let Some(state) = state else { return Ok(()) };
        if !lock(&state.subscriptions).remove(uri) {
            return Ok(());
        }
        let Some(conn) = self.inner.open_client_connection(session).await else {
            return Ok(());
        };
        conn.unsubscribe(uri)
            .await
            .map_err(|e| self.inner.request_error("resources/unsubscribe", &conn, &e))
    }
}
