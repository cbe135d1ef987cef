//! The table of MCP sessions over streamable HTTP, and when a session counts as abandoned.
//!
//! rmcp's `LocalSessionManager` keeps sessions; its own idle limit (`SessionConfig::keep_alive`)
//! counts what its session worker sees, which is the wrong clock both ways: toolmux's own
//! notifications (`list_changed`, `resources/updated`) reset it, so a session nobody will ever
//! read again lives for as long as the catalog keeps changing, and a client that keeps its
//! `GET` stream open but asks nothing for a while is cut off, which clients that do not
//! re-initialise on `404` (the Python SDK) take as the end of the session. So rmcp's limit is
//! off and [`SessionTable`] keeps the clock: a session is idle while none of its streams is
//! open (no request in flight, no `GET` stream) and its client has sent nothing; once idle for
//! the configured time it is closed as a `DELETE` would close it, and every later request
//! naming it gets `404`, on which the client starts a new session (MCP's transport spec).
//!
//! A session that ends — deleted by its client or closed as idle — also ends what the upstream
//! servers served per client keep for it ([`Upstreams::end_session`]): its upstream session or
//! process lives exactly as long as the client's.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError, Weak};
use std::time::{Duration, Instant};

use futures::{Stream, StreamExt};
use rmcp::model::{ClientJsonRpcMessage, ProtocolVersion, ServerJsonRpcMessage, ServerResult};
use rmcp::transport::streamable_http_server::session::local::{LocalSessionManager, SessionConfig};
use rmcp::transport::streamable_http_server::session::{
    EventStore, RestoreOutcome, ServerSseMessage,
};
use rmcp::transport::streamable_http_server::{SessionId, SessionManager};
use tokio_util::sync::CancellationToken;
use toolmux_upstream::Upstreams;

/// How long an MCP session over HTTP may sit idle before it is closed, when nothing else is
/// configured (`server.sessionIdleTimeoutMs`).
pub const DEFAULT_SESSION_IDLE_TIMEOUT: Duration = Duration::from_secs(30 * 60);

/// The number of MCP sessions whose server is alive: counted from a session's server value to
/// its drop, which also stops the session's catalog watcher and subscriptions. rmcp also builds
/// a server value for a moment to answer some requests (every request of a 2026-07-28
/// client, a tool's schema for its header checks); those count while they exist. Clones share the count.
#[derive(Clone, Debug, Default)]
pub struct LiveSessions(Arc<AtomicUsize>);

impl LiveSessions {
    /// How many sessions are alive now.
    pub fn count(&self) -> usize {
        self.0.load(Ordering::Relaxed)
    }

    /// Counts one session until the returned value is dropped.
    pub(crate) fn enter(&self) -> LiveSession {
        self.0.fetch_add(1, Ordering::Relaxed);
        LiveSession(Arc::clone(&self.0))
    }
}

/// One session counted in [`LiveSessions`], until dropped.
pub(crate) struct LiveSession(Arc<AtomicUsize>);

impl Drop for LiveSession {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// What the table knows of one session's client.
#[derive(Default)]
struct Activity {
    /// Streams open to the client: requests in flight and `GET` streams.
    open: AtomicUsize,
    /// When the client was last heard from or its last stream closed, in milliseconds since
    /// the table's epoch.
    last: AtomicU64,
    /// The protocol version the session's `initialize` agreed on.
    version: OnceLock<ProtocolVersion>,
}

/// rmcp's session table with idle sessions closed (see the module's documentation). Generic
/// only so that rmcp's calls go through its trait, whose streams are `Sync`.
pub(crate) struct SessionTable<M = LocalSessionManager> {
    sessions: M,
    idle: Duration,
    epoch: Instant,
    activity: Mutex<HashMap<SessionId, Arc<Activity>>>,
    /// Ends the sweeper with the service.
    shutdown: CancellationToken,
    me: Weak<Self>,
    sweeper: OnceLock<()>,
    /// Told when a session ends, so per-client upstream connections end with it.
    upstreams: Option<Arc<Upstreams>>,
}

impl SessionTable {
    /// An empty table whose sessions close after `idle` without their client; its sweeper ends
    /// with `shutdown` or with the table. `upstreams` are told of every session that ends.
    pub(crate) fn new(
        idle: Duration,
        shutdown: CancellationToken,
        upstreams: Option<Arc<Upstreams>>,
    ) -> Arc<Self> {
        let mut sessions = LocalSessionManager::default();
        let mut config = SessionConfig::default();
        // The table keeps the idle clock; rmcp's would cut off clients that only listen.
        config.keep_alive = None;
        sessions.session_config = config;
        Arc::new_cyclic(|me| Self {
            sessions,
            idle,
            epoch: Instant::now(),
            activity: Mutex::default(),
            shutdown,
            me: me.clone(),
            sweeper: OnceLock::new(),
            upstreams,
        })
    }
}

impl<M: SessionManager> SessionTable<M> {
    fn now(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    fn table(&self) -> std::sync::MutexGuard<'_, HashMap<SessionId, Arc<Activity>>> {
        self.activity.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The session's activity record, marked as heard from now; `None` once it has expired.
    fn touch(&self, id: &SessionId) -> Option<Arc<Activity>> {
        let activity = self.table().get(id).cloned()?;
        activity.last.store(self.now(), Ordering::Relaxed);
        Some(activity)
    }

    /// `stream`, counted as open on `id` until it ends or is dropped.
    fn watched<S>(
        &self,
        id: &SessionId,
        stream: S,
    ) -> impl Stream<Item = ServerSseMessage> + Send + Sync + 'static
    where
        S: Stream<Item = ServerSseMessage> + Send + Sync + 'static,
    {
        let open = self.touch(id).map(|activity| {
            activity.open.fetch_add(1, Ordering::Relaxed);
            OpenStream {
                activity,
                table: self.me.clone(),
            }
        });
        // The closure owns the guard, so it lives exactly as long as the stream.
        stream.map(move |message| {
            let _open = &open;
            message
        })
    }

    /// Tells the upstream servers that a session ended, without waiting for them: closing a
    /// stdio server takes a grace period, which a `DELETE` should not wait out.
    fn ended(&self, id: &SessionId) {
        let Some(upstreams) = self.upstreams.clone() else {
            return;
        };
        let id = id.to_string();
        tokio::spawn(async move { upstreams.end_session(&id).await });
    }

    fn register(&self, id: &SessionId) {
        let activity = Activity::default();
        activity.last.store(self.now(), Ordering::Relaxed);
        self.table().insert(id.clone(), Arc::new(activity));
        if self.sweeper.set(()).is_ok() {
            // Started with the first session, from within the runtime that serves it.
            tokio::spawn(sweep(self.me.clone(), self.shutdown.clone(), self.idle));
        }
    }

    /// The protocol version `id`'s `initialize` agreed on; `None` for a session not (yet)
    /// initialised, or gone.
    pub(crate) fn negotiated_version(&self, id: &SessionId) -> Option<ProtocolVersion> {
        self.table().get(id)?.version.get().cloned()
    }

    /// Takes the sessions idle for longer than the limit out of the table; returns them and
    /// the earliest time another could expire, if any is idle.
    fn take_expired(&self) -> (Vec<SessionId>, Option<Instant>) {
        let now = self.now();
        let idle = u64::try_from(self.idle.as_millis()).unwrap_or(u64::MAX);
        let mut next: Option<u64> = None;
        let mut expired = Vec::new();
        self.table().retain(|id, activity| {
            if activity.open.load(Ordering::Relaxed) > 0 {
                return true;
            }
            let deadline = activity.last.load(Ordering::Relaxed).saturating_add(idle);
            if deadline <= now {
                expired.push(id.clone());
                return false;
            }
            next = Some(next.map_or(deadline, |n| n.min(deadline)));
            true
        });
        let next = next.map(|ms| self.epoch + Duration::from_millis(ms));
        (expired, next)
    }
}

/// A stream counted as open on its session; when it goes, the idle clock starts.
struct OpenStream<M: SessionManager> {
    activity: Arc<Activity>,
    table: Weak<SessionTable<M>>,
}

impl<M: SessionManager> Drop for OpenStream<M> {
    fn drop(&mut self) {
        if let Some(table) = self.table.upgrade() {
            self.activity.last.store(table.now(), Ordering::Relaxed);
        }
        self.activity.open.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Closes idle sessions, waking when the first one can expire. A session that becomes idle
/// later expires later than the wake-up computed before it, since it has a full idle time
/// ahead, so sleeping until the earliest known deadline (or a whole idle time) misses none.
async fn sweep<M: SessionManager>(
    table: Weak<SessionTable<M>>,
    shutdown: CancellationToken,
    idle: Duration,
) {
    let mut wake = Instant::now() + idle;
    loop {
        tokio::select! {
            () = shutdown.cancelled() => return,
            () = tokio::time::sleep_until(wake.into()) => {}
        }
        let Some(table) = table.upgrade() else {
            return;
        };
        let (expired, next) = table.take_expired();
        for id in expired {
            tracing::debug!(session = %id, ?idle, "closing an idle MCP session");
            if let Err(e) = table.sessions.close_session(&id).await {
                tracing::warn!(session = %id, error = %e, "closing an idle MCP session failed");
            }
            table.ended(&id);
        }
        wake = next.unwrap_or_else(|| Instant::now() + idle);
    }
}

impl<M: SessionManager> SessionManager for SessionTable<M> {
    type Error = M::Error;
    type Transport = M::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        let (id, transport) = self.sessions.create_session().await?;
        self.register(&id);
        Ok((id, transport))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        let activity = self.touch(id);
        let answer = self.sessions.initialize_session(id, message).await?;
        if let (Some(activity), ServerJsonRpcMessage::Response(response)) = (activity, &answer)
            && let ServerResult::InitializeResult(result) = &response.result
        {
            // Set once: a session has one `initialize`.
            let _ = activity.version.set(result.protocol_version.clone());
        }
        Ok(answer)
    }

    /// A session that expired is gone at once, even while rmcp's worker winds down.
    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        if self.touch(id).is_none() {
            return Ok(false);
        }
        self.sessions.has_session(id).await
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        self.table().remove(id);
        let closed = self.sessions.close_session(id).await;
        self.ended(id);
        closed
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let stream = self.sessions.create_stream(id, message).await?;
        Ok(self.watched(id, stream))
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        self.touch(id);
        self.sessions.accept_message(id, message).await
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let stream = self.sessions.create_standalone_stream(id).await?;
        Ok(self.watched(id, stream))
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let stream = self.sessions.resume(id, last_event_id).await?;
        Ok(self.watched(id, stream))
    }

    async fn restore_session(
        &self,
        id: SessionId,
    ) -> Result<RestoreOutcome<Self::Transport>, Self::Error> {
        let outcome = self.sessions.restore_session(id.clone()).await?;
        if matches!(outcome, RestoreOutcome::Restored(_)) {
            self.register(&id);
        }
        Ok(outcome)
    }

    fn event_store(&self) -> Option<Arc<dyn EventStore>> {
        self.sessions.event_store()
    }
}
