//! The way back to an MCP client while one of its `tools/call` requests runs: what a tool's
//! source sends (progress, log messages, sampling and elicitation requests) is queued here and
//! delivered by the request's own handler, in order and before its result.
//!
//! Why a queue and not direct sends: rmcp routes a message onto the request's own SSE stream
//! (streamable HTTP) only when it is sent from the request handler's task, and a client drops
//! progress that arrives after the result. Sources send from wherever they run (an upstream
//! server's notifications arrive on its connection's task), so the handler drains the queue
//! while it waits for the call, and empties it before answering.
//!
//! A session has a way back outside its calls too ([`for_session`]): what a server served per
//! client sends on the session's own upstream connection while no call of it runs (a log line
//! between calls, a request beside a relayed read) is the session's alone, so it goes to the
//! session's client on its standalone stream, through the same queue and the same filters.

// rmcp marks sampling and MCP logging deprecated (SEP-2577, protocol 2026-07-28); the
// handshake-era revisions toolmux serves still define both.
#![allow(deprecated)]

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt;
use futures::stream::FuturesUnordered;
use rmcp::model::{
    CreateMessageRequestParams, ElicitRequestParams, LoggingLevel, LoggingMessageNotificationParam,
    ProgressNotificationParam, ProgressToken,
};
use rmcp::service::{ElicitationMode, Peer, RoleServer, ServiceError};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};
use toolmux_core::{Backchannel, BackchannelError, LogMessage, Progress};
use toolmux_upstream::wire::{log_level_from_wire, log_level_to_wire};

use crate::input_required::{Forms, RELAYED_KEY};

/// Notifications queued for one call before the source's further ones are dropped (progress
/// and logs are lossy by nature; a server that floods them must not grow toolmux's memory).
const QUEUE: usize = 1024;

type Answer = oneshot::Sender<Result<Value, BackchannelError>>;

/// What a source sent, waiting for the handler to deliver it.
enum Outgoing {
    Progress(Progress),
    Log(LogMessage),
    Sample(Value, Answer),
    Elicit(Value, Answer),
}

/// The source's end: what goes into [`CallContext::backchannel`](toolmux_core::CallContext).
struct Queue {
    tx: mpsc::Sender<Outgoing>,
}

impl Queue {
    fn push(&self, outgoing: Outgoing) {
        if let Err(e) = self.tx.try_send(outgoing) {
            tracing::debug!(error = %e, "dropped a progress or log message for the MCP client");
        }
    }

    async fn ask(&self, make: impl FnOnce(Answer) -> Outgoing) -> Result<Value, BackchannelError> {
        let (answer, answered) = oneshot::channel();
        self.tx
            .send(make(answer))
            .await
            .map_err(|_| BackchannelError::Failed("the call has ended".into()))?;
        answered
            .await
            .map_err(|_| BackchannelError::Failed("the call has ended".into()))?
    }
}

#[async_trait]
impl Backchannel for Queue {
    fn progress(&self, update: Progress) {
        self.push(Outgoing::Progress(update));
    }

    fn log(&self, message: LogMessage) {
        self.push(Outgoing::Log(message));
    }

    async fn sample(&self, request: Value) -> Result<Value, BackchannelError> {
        self.ask(|answer| Outgoing::Sample(request, answer)).await
    }

    async fn elicit(&self, request: Value) -> Result<Value, BackchannelError> {
        self.ask(|answer| Outgoing::Elicit(request, answer)).await
    }
}

/// The handler's end: delivers what the source queued to the client.
pub(crate) struct Delivery {
    rx: mpsc::Receiver<Outgoing>,
    peer: Peer<RoleServer>,
    progress_token: Option<ProgressToken>,
    log_level: Arc<Mutex<Option<LoggingLevel>>>,
    /// For a 2026-07-28 client that shows forms: where an upstream server's forms go (its
    /// call's round), and how long the person has to answer one.
    forms: Option<(Forms, Duration)>,
}

/// A backchannel for one call and the delivery that empties it.
pub(crate) fn for_call(
    peer: Peer<RoleServer>,
    progress_token: Option<ProgressToken>,
    log_level: Arc<Mutex<Option<LoggingLevel>>>,
) -> (Arc<dyn Backchannel>, Delivery) {
    let (tx, rx) = mpsc::channel(QUEUE);
    (
        Arc::new(Queue { tx }),
        Delivery {
            rx,
            peer,
            progress_token,
            log_level,
            forms: None,
        },
    )
}

/// The session's way back outside any call: a queue delivered by a task of its own until
/// every holder of the queue (the session, the upstream servers it is attached to) lets go.
pub(crate) fn for_session(
    peer: Peer<RoleServer>,
    log_level: Arc<Mutex<Option<LoggingLevel>>>,
) -> Arc<dyn Backchannel> {
    let (back, delivery) = for_call(peer, None, log_level);
    tokio::spawn(delivery.serve());
    back
}

impl Delivery {
    /// Puts the forms an upstream server sends during the call to the client as input-required
    /// rounds of `forms` (2026-07-28 has no server-to-client requests), each with `time_limit`
    /// to answer.
    pub(crate) fn with_forms(mut self, forms: Forms, time_limit: Duration) -> Self {
        self.forms = Some((forms, time_limit));
        self
    }

    /// Delivers what is queued until the queue's senders are gone, asking the client's
    /// requests concurrently (no call waits here, so nothing bounds them but the client).
    async fn serve(mut self) {
        let mut asking: FuturesUnordered<futures::future::BoxFuture<'static, ()>> =
            FuturesUnordered::new();
        loop {
            tokio::select! {
                outgoing = self.rx.recv() => match outgoing {
                    None => break,
                    // Progress names a request; outside one there is no token to send it under.
                    Some(Outgoing::Progress(_)) => {}
                    Some(Outgoing::Log(message)) => self.log(message).await,
                    Some(Outgoing::Sample(request, answer)) => {
                        let peer = self.peer.clone();
                        asking.push(Box::pin(async move {
                            let _ = answer.send(sample(&peer, request).await);
                        }));
                    }
                    Some(Outgoing::Elicit(request, answer)) => {
                        let peer = self.peer.clone();
                        asking.push(Box::pin(async move {
                            let _ = answer.send(elicit(&peer, request).await);
                        }));
                    }
                },
                Some(()) = asking.next(), if !asking.is_empty() => {}
            }
        }
        while asking.next().await.is_some() {}
    }

    /// Runs `call` to its end while delivering what its source sends meanwhile; everything
    /// queued before the call ended is delivered before this returns.
    pub(crate) async fn run<T>(mut self, call: impl Future<Output = T>) -> T {
        let mut call = std::pin::pin!(call);
        let mut asking: FuturesUnordered<futures::future::BoxFuture<'static, ()>> =
            FuturesUnordered::new();
        loop {
            tokio::select! {
                // Deliver what is queued before looking at the call, so that nothing the
                // source sent before finishing trails its result.
                biased;
                Some(outgoing) = self.rx.recv() => match outgoing {
                    Outgoing::Progress(update) => self.progress(update).await,
                    Outgoing::Log(message) => self.log(message).await,
                    // Asked concurrently, so progress keeps flowing while the person answers.
                    Outgoing::Sample(request, answer) => {
                        let peer = self.peer.clone();
                        asking.push(Box::pin(async move {
                            // The source may have given up waiting; nothing to do then.
                            let _ = answer.send(sample(&peer, request).await);
                        }));
                    }
                    Outgoing::Elicit(request, answer) => {
                        let peer = self.peer.clone();
                        let forms = self.forms.clone();
                        asking.push(Box::pin(async move {
                            let answered = match forms {
                                Some((forms, time_limit)) => relay(&forms, request, time_limit).await,
                                None => elicit(&peer, request).await,
                            };
                            let _ = answer.send(answered);
                        }));
                    }
                },
                Some(_) = asking.next(), if !asking.is_empty() => {}
                result = &mut call => {
                    while let Ok(outgoing) = self.rx.try_recv() {
                        match outgoing {
                            Outgoing::Progress(update) => self.progress(update).await,
                            Outgoing::Log(message) => self.log(message).await,
                            // The call is over: nobody waits for these answers any more.
                            Outgoing::Sample(..) | Outgoing::Elicit(..) => {}
                        }
                    }
                    return result;
                }
            }
        }
    }

    /// Progress goes out only when the client asked for it with a progress token, under that
    /// token.
    async fn progress(&self, update: Progress) {
        let Some(token) = self.progress_token.clone() else {
            return;
        };
        let mut notification = ProgressNotificationParam::new(token, update.progress);
        notification.total = update.total;
        notification.message = update.message;
        if let Err(e) = self.peer.notify_progress(notification).await {
            tracing::debug!(error = %e, "could not send progress to the MCP client");
        }
    }

    /// A source's log message, filtered by the level the client set. Before it sets one, the
    /// source's messages pass: the source already chose to send them.
    async fn log(&self, message: LogMessage) {
        let wanted = *self
            .log_level
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if wanted.is_some_and(|wanted| message.level < log_level_from_wire(wanted)) {
            return;
        }
        let level = log_level_to_wire(message.level);
        let mut notification = LoggingMessageNotificationParam::new(level, message.data);
        notification.logger = message.logger;
        if let Err(e) = self.peer.notify_logging_message(notification).await {
            tracing::debug!(error = %e, "could not send a log message to the MCP client");
        }
    }
}

/// Asks the client's model, when the client can sample.
async fn sample(peer: &Peer<RoleServer>, request: Value) -> Result<Value, BackchannelError> {
    let can = peer
        .peer_info()
        .is_some_and(|info| info.capabilities.sampling.is_some());
    if !can {
        return Err(BackchannelError::Unsupported("sampling"));
    }
    let params: CreateMessageRequestParams = from_json(request, "sampling request")?;
    let result = peer.create_message(params).await.map_err(answer_error)?;
    to_json(&result)
}

/// Asks the client's person, when the client can show a form.
async fn elicit(peer: &Peer<RoleServer>, request: Value) -> Result<Value, BackchannelError> {
    if !peer
        .supported_elicitation_modes()
        .contains(&ElicitationMode::Form)
    {
        return Err(BackchannelError::Unsupported("elicitation"));
    }
    let params: ElicitRequestParams = from_json(request, "elicitation request")?;
    let result = peer
        .create_elicitation(params)
        .await
        .map_err(answer_error)?;
    to_json(&result)
}

/// Puts an upstream server's form to a 2026-07-28 client through its call's round: the client
/// is sent it as an input-required result, and the call waits for the retry that answers it.
async fn relay(
    forms: &Forms,
    request: Value,
    time_limit: Duration,
) -> Result<Value, BackchannelError> {
    let params: ElicitRequestParams = from_json(request, "elicitation request")?;
    // The client declared forms, not URL elicitation; the revision forbids sending a kind of
    // request it did not declare.
    if !matches!(params, ElicitRequestParams::FormElicitationParams { .. }) {
        return Err(BackchannelError::Unsupported("URL elicitation"));
    }
    match tokio::time::timeout(time_limit, forms.ask(RELAYED_KEY, params, time_limit)).await {
        Ok(Some(answer)) => to_json(&answer),
        Ok(None) => Err(BackchannelError::Failed(
            "the MCP client's request ended before it answered".into(),
        )),
        Err(_) => Err(BackchannelError::Failed(format!(
            "nobody answered within {}",
            toolmux_core::format_duration(time_limit)
        ))),
    }
}

fn from_json<T: serde::de::DeserializeOwned>(
    value: Value,
    what: &str,
) -> Result<T, BackchannelError> {
    serde_json::from_value(value)
        .map_err(|e| BackchannelError::Failed(format!("a malformed {what}: {e}")))
}

fn to_json<T: serde::Serialize>(value: &T) -> Result<Value, BackchannelError> {
    serde_json::to_value(value).map_err(|e| BackchannelError::Failed(e.to_string()))
}

fn answer_error(error: ServiceError) -> BackchannelError {
    match error {
        ServiceError::McpError(e) => BackchannelError::Refused {
            code: e.code.0,
            message: e.message.to_string(),
        },
        other => BackchannelError::Failed(format!("the MCP client did not answer: {other}")),
    }
}
