//! Who is waiting on a server's calls, so that what the server sends while it works — progress,
//! log messages, sampling and elicitation requests — reaches the caller that can use it.
//!
//! Progress is matched exactly by the progress token rmcp gives every request. rmcp picks the
//! token while sending, so a fast server's first progress can arrive before the call is
//! registered here; such early progress waits briefly in a small buffer. Log messages
//! and requests carry no reference to the call they belong to (MCP sends them on the session,
//! and over stdio there is nothing else), so they go to the calls in flight — but only while
//! those all come from one session (one MCP client): a log message to every one of them, a
//! request to the oldest (the one most likely to be waiting on it). When calls of several
//! sessions are in flight, nothing says whose a message is, and handing one client's prompt or
//! question to another would leak it: log messages then go to toolmux's own log, and requests
//! are refused with a message that says why.

// rmcp marks MCP logging deprecated (SEP-2577, protocol 2026-07-28); the handshake-era
// revisions toolmux speaks to upstream servers still define it, and it relays it.
#![allow(deprecated)]

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::RoleClient;
use rmcp::model::{
    JsonRpcMessage, JsonRpcNotification, LoggingLevel, ProgressToken, ServerNotification,
};
use rmcp::service::RxJsonRpcMessage;
use rmcp::transport::Transport;
use toolmux_core::{Backchannel, LogLevel, LogMessage, Progress};

/// Progress updates kept for calls not registered yet; older ones are dropped.
const EARLY_PROGRESS: usize = 64;

/// The calls in flight on one server that have a way back to their caller.
#[derive(Default)]
pub(crate) struct Callers {
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// In the order the calls started.
    waiting: Vec<Waiting>,
    /// Progress that arrived before its call was registered.
    early: VecDeque<(ProgressToken, Progress)>,
}

struct Waiting {
    token: ProgressToken,
    /// The caller's session: whom the call's messages may be shown to.
    session: Option<String>,
    backchannel: Arc<dyn Backchannel>,
}

/// Why a message without a call reference cannot be handed to a caller.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Unattributable {
    /// No call with a way back is in flight.
    NoCaller,
    /// Calls of this many sessions are in flight.
    SeveralSessions(usize),
}

/// Keeps a call registered while it lives.
pub(crate) struct Registration {
    callers: Arc<Callers>,
    token: ProgressToken,
}

impl Drop for Registration {
    fn drop(&mut self) {
        self.callers
            .lock()
            .waiting
            .retain(|w| w.token != self.token);
    }
}

impl Callers {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Registers the call sent with `token` until the returned guard is dropped, and hands it
    /// the progress that arrived before.
    pub(crate) fn register(
        self: &Arc<Self>,
        token: ProgressToken,
        session: Option<String>,
        backchannel: Arc<dyn Backchannel>,
    ) -> Registration {
        let early: Vec<Progress> = {
            let mut state = self.lock();
            state.waiting.push(Waiting {
                token: token.clone(),
                session,
                backchannel: Arc::clone(&backchannel),
            });
            let (mine, others) = std::mem::take(&mut state.early)
                .into_iter()
                .partition(|(t, _)| *t == token);
            state.early = others;
            mine.into_iter().map(|(_, progress)| progress).collect()
        };
        for update in early {
            backchannel.progress(update);
        }
        Registration {
            callers: Arc::clone(self),
            token,
        }
    }

    /// Passes progress to the call that sent `token`, or keeps it for a moment when that call
    /// is not registered yet.
    pub(crate) fn progress(&self, token: ProgressToken, update: Progress) {
        let caller = {
            let mut state = self.lock();
            let caller = state
                .waiting
                .iter()
                .find(|w| w.token == token)
                .map(|w| Arc::clone(&w.backchannel));
            if caller.is_none() {
                if state.early.len() == EARLY_PROGRESS {
                    state.early.pop_front();
                }
                state.early.push_back((token, update.clone()));
            }
            caller
        };
        if let Some(caller) = caller {
            caller.progress(update);
        }
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
                    level: log_level(n.params.level),
                    logger: n.params.logger.clone(),
                    data: n.params.data.clone(),
                };
                match self.attributable() {
                    Ok(callers) => {
                        for caller in callers {
                            caller.log(message.clone());
                        }
                    }
                    Err(why) => tracing::info!(
                        server,
                        level = ?message.level,
                        data = %message.data,
                        unrelayed = ?why,
                        "log message from the server"
                    ),
                }
                None
            }
            _ => Some(message),
        }
    }

    /// Every caller waiting now, oldest first, when they all belong to one session.
    pub(crate) fn attributable(&self) -> Result<Vec<Arc<dyn Backchannel>>, Unattributable> {
        let state = self.lock();
        let Some(first) = state.waiting.first() else {
            return Err(Unattributable::NoCaller);
        };
        let mut sessions: Vec<&Option<String>> = state.waiting.iter().map(|w| &w.session).collect();
        sessions.sort();
        sessions.dedup();
        if sessions.len() > 1 || first.session.is_none() && state.waiting.len() > 1 {
            return Err(Unattributable::SeveralSessions(sessions.len().max(2)));
        }
        Ok(state
            .waiting
            .iter()
            .map(|w| Arc::clone(&w.backchannel))
            .collect())
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

/// MCP's log level as the core's.
fn log_level(level: LoggingLevel) -> LogLevel {
    match level {
        LoggingLevel::Debug => LogLevel::Debug,
        LoggingLevel::Info => LogLevel::Info,
        LoggingLevel::Notice => LogLevel::Notice,
        LoggingLevel::Warning => LogLevel::Warning,
        LoggingLevel::Error => LogLevel::Error,
        LoggingLevel::Critical => LogLevel::Critical,
        LoggingLevel::Alert => LogLevel::Alert,
        LoggingLevel::Emergency => LogLevel::Emergency,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::NumberOrString;
    use toolmux_core::LogMessage;

    /// Records the progress it gets, under its name.
    struct Named(&'static str, Arc<Mutex<Vec<(&'static str, f64)>>>);

    impl Backchannel for Named {
        fn progress(&self, update: Progress) {
            self.1.lock().expect("list").push((self.0, update.progress));
        }
        fn log(&self, _message: LogMessage) {}
    }

    fn token(n: i64) -> ProgressToken {
        ProgressToken(NumberOrString::Number(n))
    }

    fn at(progress: f64) -> Progress {
        Progress {
            progress,
            total: None,
            message: None,
        }
    }

    #[test]
    fn progress_reaches_its_own_call_even_when_it_came_first() {
        let heard = Arc::new(Mutex::new(Vec::new()));
        let callers = Arc::new(Callers::default());
        // The server was faster than the registration.
        callers.progress(token(2), at(1.0));
        let first = callers.register(token(1), session("a"), named("first", &heard));
        let second = callers.register(token(2), session("b"), named("second", &heard));
        callers.progress(token(1), at(5.0));
        callers.progress(token(2), at(7.0));
        assert_eq!(
            *heard.lock().expect("list"),
            vec![("second", 1.0), ("first", 5.0), ("second", 7.0)]
        );
        drop(first);
        drop(second);
        assert_eq!(callers.lock().waiting.len(), 0);
    }

    fn session(id: &str) -> Option<String> {
        Some(id.to_string())
    }

    fn named(
        name: &'static str,
        heard: &Arc<Mutex<Vec<(&'static str, f64)>>>,
    ) -> Arc<dyn Backchannel> {
        Arc::new(Named(name, Arc::clone(heard)))
    }

    #[test]
    fn messages_without_a_call_go_to_the_calls_of_one_session_only() {
        let heard = Arc::new(Mutex::new(Vec::new()));
        let callers = Arc::new(Callers::default());
        assert_eq!(callers.attributable().err(), Some(Unattributable::NoCaller));
        let first = callers.register(token(1), session("a"), named("first", &heard));
        let _second = callers.register(token(2), session("a"), named("second", &heard));
        let same = callers.attributable().expect("one session");
        assert_eq!(same.len(), 2);
        same[0].progress(at(0.0));
        assert_eq!(
            *heard.lock().expect("list"),
            vec![("first", 0.0)],
            "oldest first"
        );

        let other = callers.register(token(3), session("b"), named("other", &heard));
        assert_eq!(
            callers.attributable().err(),
            Some(Unattributable::SeveralSessions(2))
        );
        drop(other);
        drop(first);
        assert_eq!(callers.attributable().map(|c| c.len()).ok(), Some(1));
    }

    #[test]
    fn calls_without_a_session_are_never_assumed_to_share_one() {
        let heard = Arc::new(Mutex::new(Vec::new()));
        let callers = Arc::new(Callers::default());
        let _one = callers.register(token(1), None, named("one", &heard));
        assert!(
            callers.attributable().is_ok(),
            "a single call is its own audience"
        );
        let _two = callers.register(token(2), None, named("two", &heard));
        assert!(callers.attributable().is_err());
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
