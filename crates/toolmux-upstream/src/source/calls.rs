//! A tool call, and what happens when its connection drops.
//!
//! # Retries
//! A call whose request provably never reached the server (the connection was gone before it
//! was sent) is made again on a new connection. A call whose connection dropped after it was
//! sent may have run: it is made again only when that is safe — the tool is annotated
//! `readOnlyHint` or `idempotentHint`, or the configuration says `retry: "always"` (per server,
//! or per tool in `toolRetry`) — and otherwise fails at once with an error saying it may have
//! run. A retry waits (exponential backoff with jitter, from [`Backoff::first_delay`]), then
//! starts the server again (stdio) or opens a new session (HTTP); after [`CALL_RETRIES`] retries
//! the call fails as unavailable, naming the last error. The hub's time limit bounds it all.
//!
//! A connection toolmux gave up on itself (a message too large, a server that stopped
//! answering) is not retried: the same call would meet the same fault. A crash fails, or
//! retries, only the calls on that connection; other servers never notice.

use backon::BackoffBuilder;
use toolmux_config::RetryMode;

use super::*;
use crate::connection::CallFailure;

/// Attempts after the first when a call's connection drops (seed 004: three reconnections).
pub const CALL_RETRIES: usize = 3;

/// How one attempt of a call ended.
enum Attempt {
    /// With the call's outcome: nothing to try again.
    Done(Result<ToolResult, SourceError>),
    /// The request never left toolmux; it cannot have run.
    NotSent(String),
    /// The connection dropped after the request was sent; it may have run. Says what happened
    /// ("exited during the call").
    Dropped(String),
}

impl Inner {
    /// Runs a call, retrying it on a new connection where that is safe (see the module's
    /// documentation).
    pub(super) async fn call(
        self: &Arc<Self>,
        call: &SourceCall<'_>,
    ) -> Result<ToolResult, SourceError> {
        let tool = &call.tool.original_name;
        let rule = self.server().retry_for(tool);
        let may_repeat = match rule {
            RetryMode::Always => true,
            RetryMode::Never => false,
            RetryMode::Safe => {
                let hints = &call.tool.annotations;
                hints.read_only_hint == Some(true) || hints.idempotent_hint == Some(true)
            }
        };
        let mut pauses = backon::ExponentialBuilder::default()
            .with_min_delay(self.backoff.first_delay)
            .with_jitter()
            .with_max_times(CALL_RETRIES)
            .build();
        let mut attempts = 0usize;
        loop {
            attempts += 1;
            let why = match self.attempt(call, attempts > 1).await {
                Attempt::Done(outcome) => return outcome,
                Attempt::NotSent(why) => why,
                Attempt::Dropped(why) if may_repeat => why,
                Attempt::Dropped(what) => {
                    let why_not = if rule == RetryMode::Never {
                        "its configuration says `retry: \"never\"`"
                    } else {
                        "only calls of tools annotated readOnlyHint or idempotentHint are, or \
                         with `retry: \"always\"`"
                    };
                    return Err(SourceError::Failed(format!(
                        "MCP server `{}` {what}; the call may have run, so it was not made again \
                         ({why_not}); the next call restarts it; its log: `toolmux mcp logs {}`",
                        self.name, self.name
                    )));
                }
            };
            let Some(pause) = pauses.next() else {
                return Err(SourceError::Unavailable(format!(
                    "MCP server `{}` is unavailable (service unavailable): the call was tried \
                     {attempts} times without an answer; last error: {why}",
                    self.name
                )));
            };
            tracing::info!(server = %self.name, tool = %tool, attempt = attempts, error = %why, retry_in_ms = pause.as_millis() as u64, "the connection dropped; the call is made again");
            tokio::time::sleep(pause).await;
        }
    }

    /// One attempt: a connection (the session's own when served per client), the request, and
    /// what its failure means. When `retrying`, a server that cannot be reached yet (an HTTP
    /// server still restarting) is one more attempt that never reached it, not the end.
    async fn attempt(self: &Arc<Self>, call: &SourceCall<'_>, retrying: bool) -> Attempt {
        let session = call
            .context
            .session
            .as_deref()
            .filter(|_| self.per_client());
        let opened = match session {
            Some(session) => self.client_connection(session).await,
            None => self.connection().await,
        };
        let conn = match opened {
            Ok(conn) => conn,
            Err(e @ (UpstreamError::Start { .. } | UpstreamError::Unavailable { .. }))
                if retrying =>
            {
                return Attempt::NotSent(e.to_string());
            }
            Err(e) => {
                return Attempt::Done(Err(match e {
                    UpstreamError::Timeout { after, .. } => SourceError::Timeout(after),
                    other => SourceError::Unavailable(other.to_string()),
                }));
            }
        };
        self.touch();
        let result = conn
            .call(
                &call.tool.original_name,
                call.arguments.clone(),
                call.context
                    .backchannel
                    .clone()
                    .map(|b| (call.context.session.clone(), b)),
            )
            .await;
        self.touch();
        let failure = match result {
            Ok(result) => {
                let alive = conn.is_alive();
                drop(conn);
                if alive && self.outdated() {
                    // The call started a server whose cache is another configuration's (or
                    // none): its tools are listed before the answer, so that even a one-shot
                    // command (`toolmux tools call`) leaves the cache current.
                    Inner::rediscover_live(self, true).await;
                }
                return Attempt::Done(Ok(tool_result(result)));
            }
            Err(failure) => failure,
        };
        if let Some(fault) = conn.fault() {
            return Attempt::Done(Err(SourceError::Failed(format!(
                "MCP server `{}`: {fault}; the next call restarts it",
                self.name
            ))));
        }
        if let CallFailure::Sent(e) | CallFailure::NotSent(e) = &failure
            && let Some(status) = crate::streamable::refused_request(e)
        {
            // Refused for want of sign-in or a rejected configured credential: no retry can
            // change that, a person signing in (or fixing the configuration) can.
            let refused = conn.refusal(status);
            return Attempt::Done(Err(SourceError::Unavailable(refused.to_string())));
        }
        let dropped = match failure {
            CallFailure::Sent(ServiceError::McpError(e)) => {
                return Attempt::Done(Err(SourceError::Failed(format!(
                    "MCP server `{}`: {}",
                    self.name,
                    describe(&ServiceError::McpError(e))
                ))));
            }
            CallFailure::NotSent(e) => Attempt::NotSent(describe(&e)),
            // Over a session a failed send is one the server never read (the answer comes on a
            // stream); without one (2026-07-28), the POST carries the answer too, so only a
            // connection never made proves the call did not reach the server.
            CallFailure::Sent(e @ ServiceError::TransportSend(_))
                if !conn.is_stateless() || crate::streamable::never_reached(&e) =>
            {
                Attempt::NotSent(describe(&e))
            }
            CallFailure::Sent(e @ ServiceError::TransportSend(_)) => {
                Attempt::Dropped(lost(&conn, &e))
            }
            CallFailure::Sent(e @ ServiceError::TransportClosed) => {
                Attempt::Dropped(lost(&conn, &e))
            }
            CallFailure::Sent(e) if !conn.is_alive() => Attempt::Dropped(lost(&conn, &e)),
            CallFailure::Sent(e) => {
                return Attempt::Done(Err(SourceError::Failed(format!(
                    "MCP server `{}`: {}",
                    self.name,
                    describe(&e)
                ))));
            }
        };
        let conn = Arc::clone(&conn);
        self.replace(&conn, session).await;
        dropped
    }
}

/// What happened to a connection that dropped during a call, as the rest of a sentence that
/// starts with the server's name.
fn lost(conn: &Connection, error: &ServiceError) -> String {
    if conn.pgid().is_some() && !conn.is_alive() {
        "exited during the call".to_string()
    } else {
        format!("lost its connection during the call ({})", describe(error))
    }
}
