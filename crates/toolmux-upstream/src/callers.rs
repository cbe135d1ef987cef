//! Who is waiting on a server's answers, so that what the server sends while it works —
//! progress, log messages, sampling and elicitation requests — reaches the caller it is for,
//! and nobody else. One `Callers` belongs to one connection (rmcp numbers progress tokens and
//! request ids per connection, so they mean nothing across a restart).
//!
//! Every request a caller makes through toolmux is registered before it is sent, also those
//! with no way back to it (a call from the REST API or the command line, a relayed
//! `resources/read`), so that a message is never handed to one caller while it may belong to
//! another. toolmux's own requests — listings (discovery, a refresh) and resource
//! subscriptions (asked once per URI for all sessions, renewed after a restart) — are not
//! callers and are not registered: counted, a refresh beside a client's call would make every
//! elicitation of that call ambiguous. The rules:
//! - progress names its request's progress token: it goes to that call exactly (progress that
//!   arrives before rmcp's token is known waits briefly in a small buffer);
//! - a sampling or elicitation request that came over streamable HTTP on the stream of one of
//!   our requests (rmcp marks it) goes to that call exactly;
//! - anything else carries no reference to a call (MCP sends it on the session, and over stdio
//!   there is nothing else): it goes to the calls in flight only while every one of them has a
//!   way back and they all come from one session (one MCP client, one chat) — a log message to
//!   each, a request to the oldest. Otherwise log messages go to toolmux's own log and requests
//!   are refused with a message saying why: one client's prompt or question must never reach
//!   another.
//!
//! A per-client connection (see `source::clients`) speaks for one downstream session only, so
//! it has an [`Outlet`] as well: the way to that session's client outside any call. What the
//! rules above cannot hand to a call in flight — a log line sent between calls or beside a
//! relayed read, a request sent while no call runs — goes there instead of toolmux's log or a
//! refusal: it can only be that session's.

// rmcp marks MCP logging deprecated (SEP-2577, protocol 2026-07-28); the handshake-era
// revisions toolmux speaks to upstream servers still define it, and it relays it.
#![allow(deprecated)]

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::{Duration, Instant};

use rmcp::RoleClient;
use rmcp::model::{
    JsonRpcMessage, JsonRpcNotification, ProgressToken, RequestId, ServerNotification,
};
use rmcp::service::RxJsonRpcMessage;
use rmcp::transport::Transport;
use toolmux_core::{Backchannel, LogMessage, Progress};

/// Progress updates kept for requests whose token is not known yet; older ones are dropped.
const EARLY_PROGRESS: usize = 64;
/// How long such an update waits for its request before it is dropped.
const EARLY_WINDOW: Duration = Duration::from_secs(1);

/// The requests in flight on one connection.
#[derive(Default)]
pub(crate) struct Callers {
    next: AtomicU64,
    state: Mutex<State>,
    /// The downstream session a per-client connection speaks for; `None` on a shared one.
    outlet: Option<Arc<Outlet>>,
}

/// The way back to one downstream session outside any call, filled when the channel attaches
/// the session (an MCP session's client); shared by every connection opened for that session,
/// so that one attached later still reaches a connection opened before.
#[derive(Default)]
pub(crate) struct Outlet(RwLock<Option<Arc<dyn Backchannel>>>);

impl Outlet {
    pub(crate) fn set(&self, session: Arc<dyn Backchannel>) {
        *self.0.write().unwrap_or_else(PoisonError::into_inner) = Some(session);
    }

    pub(crate) fn get(&self) -> Option<Arc<dyn Backchannel>> {
        self.0
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

#[derive(Default)]
struct State {
    /// In the order the requests were sent.
    waiting: Vec<Waiting>,
    /// Progress that arrived before its request's token was known.
    early: VecDeque<(ProgressToken, Progress, Instant)>,
}

struct Waiting {
    id: u64,
    /// The progress token and request id rmcp sent the request with, once it is sent.
    sent: Option<(ProgressToken, RequestId)>,
    /// The caller's session: whom the request's messages may be shown to.
    session: Option<String>,
    /// The way back to the caller, when there is one.
    backchannel: Option<Arc<dyn Backchannel>>,
}

/// Why a message cannot be handed to a caller.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Unattributable {
    /// No request with a way back to its caller is in flight (or the one it names has none).
    NoCaller,
    /// Requests of this many callers, not all of one session or not all with a way back, are
    /// in flight.
    SeveralCallers(usize),
}

/// Keeps a request registered while it lives.
pub(crate) struct Registration {
    callers: Arc<Callers>,
    id: u64,
}

impl Registration {
    /// Records what rmcp sent the request with, and hands the caller the progress that
    /// arrived before.
    pub(crate) fn sent(&self, token: ProgressToken, request: RequestId) {
        let (backchannel, early) = {
            let mut state = self.callers.lock();
            let Some(waiting) = state.waiting.iter_mut().find(|w| w.id == self.id) else {
                return;
            };
            waiting.sent = Some((token.clone(), request));
            let backchannel = waiting.backchannel.clone();
            let (mine, others): (VecDeque<_>, VecDeque<_>) = std::mem::take(&mut state.early)
                .into_iter()
                .partition(|(t, _, _)| *t == token);
            state.early = others;
            (backchannel, mine)
        };
        if let Some(backchannel) = backchannel {
            for (_, update, _) in early {
                backchannel.progress(update);
            }
        }
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        self.callers.lock().waiting.retain(|w| w.id != self.id);
    }
}

impl Callers {
    /// The callers of a per-client connection, whose other messages go to `outlet`.
    pub(crate) fn for_session(outlet: Arc<Outlet>) -> Self {
        Self {
            outlet: Some(outlet),
            ..Self::default()
        }
    }

    /// The session's own way back, on a per-client connection once attached.
    fn session(&self) -> Option<Arc<dyn Backchannel>> {
        self.outlet.as_ref().and_then(|o| o.get())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Registers a request about to be sent, with its caller's session and way back when it
    /// has one, until the returned guard is dropped.
    pub(crate) fn register(
        self: &Arc<Self>,
        caller: Option<(Option<String>, Arc<dyn Backchannel>)>,
    ) -> Registration {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let (session, backchannel) = match caller {
            Some((session, backchannel)) => (session, Some(backchannel)),
            None => (None, None),
        };
        self.lock().waiting.push(Waiting {
            id,
            sent: None,
            session,
            backchannel,
        });
        Registration {
            callers: Arc::clone(self),
            id,
        }
    }

    /// Passes progress to the request that was sent with `token`, or keeps it for a moment
    /// when that request's token is not known yet.
    pub(crate) fn progress(&self, token: ProgressToken, update: Progress) {
        let caller = {
            let mut state = self.lock();
            match state
                .waiting
                .iter()
                .find(|w| w.sent.as_ref().is_some_and(|(t, _)| *t == token))
            {
                Some(waiting) => waiting.backchannel.clone(),
                None => {
                    let now = Instant::now();
                    state
                        .early
                        .retain(|(_, _, at)| now.duration_since(*at) < EARLY_WINDOW);
                    if state.early.len() == EARLY_PROGRESS {
                        state.early.pop_front();
                    }
                    state.early.push_back((token, update.clone(), now));
                    None
                }
            }
        };
        if let Some(caller) = caller {
            caller.progress(update);
        }
    }

    /// The caller a server's request is for: the one whose request's stream it came on, when
    /// the transport says so, else the oldest of the callers it can be attributed to.
    pub(crate) fn requester(
        &self,
        came_with: Option<&RequestId>,
    ) -> Result<Arc<dyn Backchannel>, Unattributable> {
        if let Some(request) = came_with {
            let state = self.lock();
            let waiting = state
                .waiting
                .iter()
                .find(|w| w.sent.as_ref().is_some_and(|(_, r)| r == request));
            if let Some(caller) = waiting.and_then(|w| w.backchannel.clone()) {
                return Ok(caller);
            }
            return self.session().ok_or(Unattributable::NoCaller);
        }
        match self.attributable() {
            Ok(callers) => callers.into_iter().next().ok_or(Unattributable::NoCaller),
            // On a per-client connection, whatever the calls in flight, it is the session's.
            Err(why) => self.session().ok_or(why),
        }
    }

    /// Every caller waiting now, oldest first, when a message with no call reference can only
    /// be theirs: one request with a way back, or several that all have one and all come from
    /// one session.
    pub(crate) fn attributable(&self) -> Result<Vec<Arc<dyn Backchannel>>, Unattributable> {
        let state = self.lock();
        let callers: Vec<Arc<dyn Backchannel>> = state
            .waiting
            .iter()
            .filter_map(|w| w.backchannel.clone())
            .collect();
        if callers.is_empty() {
            return Err(Unattributable::NoCaller);
        }
        let one_session = state.waiting.len() == 1
            || state.waiting.iter().all(|w| {
                w.backchannel.is_some()
                    && w.session.is_some()
                    && w.session == state.waiting[0].session
            });
        if !one_session {
            return Err(Unattributable::SeveralCallers(state.waiting.len()));
        }
        Ok(callers)
    }

    /// Hands a progress or log notification to its callers and returns `None`; any other
    /// message is returned for rmcp to handle.
    fn intercept(
        &self,
        server: &str,
        message: RxJsonRpcMessage<RoleClient>,
    ) -> Option<RxJsonRpcMessage<RoleClient>> {
        let JsonRpcMessage::Notification(JsonRpcNotification { notification, .. }) = &message
        else {
            return Some(message);
        };
        match notification {
            ServerNotification::ProgressNotification(n) => {
                let update = Progress {
                    progress: n.params.progress,
                    total: n.params.total,
                    message: n.params.message.clone(),
                };
                self.progress(n.params.progress_token.clone(), update);
                None
            }
            ServerNotification::LoggingMessageNotification(n) => {
                let message = LogMessage {
                    level: crate::wire::log_level_from_wire(n.params.level),
                    logger: n.params.logger.clone(),
                    data: n.params.data.clone(),
                };
                match self.attributable() {
                    Ok(callers) => {
                        for caller in callers {
                            caller.log(message.clone());
                        }
                    }
                    Err(why) => match self.session() {
                        Some(session) => session.log(message),
                        None => tracing::info!(
                            server,
                            level = ?message.level,
                            data = %message.data,
                            unrelayed = ?why,
                            "log message from the server"
                        ),
                    },
                }
                None
            }
            _ => Some(message),
        }
    }
}

/// A transport that hands a server's progress and log notifications to the callers as it reads
/// them, and everything else to rmcp.
///
/// Why not rmcp's `ClientHandler::on_progress`: rmcp runs each notification handler in a task
/// of its own, so a call's last progress could be handled after its result, by which time
/// nobody is listening (and two updates could swap). Read here, in the order the server wrote
/// them, they reach the caller's backchannel before the result reaches the call.
pub(crate) struct InOrder<T> {
    inner: T,
    callers: Arc<Callers>,
    server: String,
}

impl<T> InOrder<T> {
    pub(crate) fn new(inner: T, callers: Arc<Callers>, server: &str) -> Self {
        Self {
            inner,
            callers,
            server: server.to_string(),
        }
    }
}

impl<T: Transport<RoleClient> + 'static> Transport<RoleClient> for InOrder<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: rmcp::service::TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        loop {
            let message = self.inner.receive().await?;
            if let Some(message) = self.callers.intercept(&self.server, message) {
                return Some(message);
            }
        }
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::NumberOrString;
    use toolmux_core::LogMessage;

    type Heard = Arc<Mutex<Vec<(&'static str, f64)>>>;

    /// Records the progress it gets, under its name.
    struct Named(&'static str, Heard);

    impl Backchannel for Named {
        fn progress(&self, update: Progress) {
            self.1.lock().expect("list").push((self.0, update.progress));
        }
        fn log(&self, _message: LogMessage) {}
    }

    fn token(n: i64) -> ProgressToken {
        ProgressToken(NumberOrString::Number(n))
    }

    fn request(n: i64) -> RequestId {
        RequestId::Number(n)
    }

    fn at(progress: f64) -> Progress {
        Progress {
            progress,
            total: None,
            message: None,
        }
    }

    fn caller(
        session: &str,
        name: &'static str,
        heard: &Heard,
    ) -> Option<(Option<String>, Arc<dyn Backchannel>)> {
        Some((
            Some(session.to_string()),
            Arc::new(Named(name, Arc::clone(heard))),
        ))
    }

    fn heard(heard: &Heard) -> Vec<(&'static str, f64)> {
        std::mem::take(&mut *heard.lock().expect("list"))
    }

    #[test]
    fn progress_reaches_its_own_request_even_when_it_came_first() {
        let log = Heard::default();
        let callers = Arc::new(Callers::default());
        let first = callers.register(caller("a", "first", &log));
        let second = callers.register(caller("b", "second", &log));
        // The server was faster than rmcp handing back the token.
        callers.progress(token(2), at(1.0));
        first.sent(token(1), request(1));
        second.sent(token(2), request(2));
        callers.progress(token(1), at(5.0));
        callers.progress(token(2), at(7.0));
        assert_eq!(
            heard(&log),
            vec![("second", 1.0), ("first", 5.0), ("second", 7.0)]
        );
        drop(first);
        callers.progress(token(1), at(9.0));
        assert!(heard(&log).is_empty(), "an ended request gets nothing");
    }

    #[test]
    fn messages_without_a_reference_go_to_the_calls_of_one_session_only() {
        let log = Heard::default();
        let callers = Arc::new(Callers::default());
        assert_eq!(callers.attributable().err(), Some(Unattributable::NoCaller));
        let first = callers.register(caller("a", "first", &log));
        let _second = callers.register(caller("a", "second", &log));
        let same = callers.attributable().expect("one session");
        assert_eq!(same.len(), 2);
        callers
            .requester(None)
            .expect("the oldest")
            .progress(at(0.0));
        assert_eq!(heard(&log), vec![("first", 0.0)]);

        let other = callers.register(caller("b", "other", &log));
        assert_eq!(
            callers.attributable().err(),
            Some(Unattributable::SeveralCallers(3))
        );
        drop(other);
        drop(first);
        assert_eq!(callers.attributable().map(|c| c.len()).ok(), Some(1));
    }

    #[test]
    fn a_request_without_a_way_back_blocks_attribution_to_the_others() {
        let log = Heard::default();
        let callers = Arc::new(Callers::default());
        let _mcp = callers.register(caller("a", "mcp", &log));
        // A REST call (or a relayed read, or a discovery) on the same connection: the server's
        // next log line or question may be about it.
        let rest = callers.register(None);
        assert_eq!(
            callers.attributable().err(),
            Some(Unattributable::SeveralCallers(2))
        );
        assert!(callers.requester(None).is_err());
        drop(rest);
        assert!(callers.requester(None).is_ok());
    }

    #[test]
    fn a_request_on_a_calls_own_stream_goes_to_that_call_whoever_else_waits() {
        let log = Heard::default();
        let callers = Arc::new(Callers::default());
        let a = callers.register(caller("a", "a", &log));
        let b = callers.register(caller("b", "b", &log));
        a.sent(token(1), request(10));
        b.sent(token(2), request(11));
        callers
            .requester(Some(&request(11)))
            .expect("b's stream")
            .progress(at(3.0));
        assert_eq!(heard(&log), vec![("b", 3.0)]);
        let anonymous = callers.register(None);
        drop(anonymous);
        assert_eq!(
            callers.requester(Some(&request(99))).err(),
            Some(Unattributable::NoCaller)
        );
    }

    #[test]
    fn calls_without_a_session_are_never_assumed_to_share_one() {
        let log = Heard::default();
        let callers = Arc::new(Callers::default());
        let named = |n| {
            Some((
                None,
                Arc::new(Named(n, Arc::clone(&log))) as Arc<dyn Backchannel>,
            ))
        };
        let _one = callers.register(named("one"));
        assert!(
            callers.attributable().is_ok(),
            "a single call is its own audience"
        );
        let _two = callers.register(named("two"));
        assert!(callers.attributable().is_err());
    }

    #[test]
    fn a_per_client_connection_hands_what_no_call_takes_to_its_session() {
        let log = Heard::default();
        let outlet = Arc::new(Outlet::default());
        let callers = Arc::new(Callers::for_session(Arc::clone(&outlet)));
        assert_eq!(
            callers.requester(None).err(),
            Some(Unattributable::NoCaller),
            "no session attached yet"
        );
        outlet.set(Arc::new(Named("session", Arc::clone(&log))));
        callers
            .requester(None)
            .expect("the session")
            .progress(at(1.0));
        // A relayed read (no way back) beside a call: ambiguous on a shared connection, but
        // everything on this one is the session's.
        let _read = callers.register(None);
        let _call = callers.register(caller("a", "call", &log));
        callers
            .requester(None)
            .expect("the session")
            .progress(at(2.0));
        assert_eq!(heard(&log), vec![("session", 1.0), ("session", 2.0)]);
    }

    #[test]
    fn unclaimed_progress_is_bounded() {
        let callers = Callers::default();
        for n in 0..(EARLY_PROGRESS as i64 + 10) {
            callers.progress(token(n), at(0.0));
        }
        assert_eq!(callers.lock().early.len(), EARLY_PROGRESS);
    }
}
