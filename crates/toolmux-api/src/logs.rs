//! `/api/logs`: the execution log, read back with the same query as `toolmux logs`, and
//! `/api/logs/stream`, followed live as `toolmux logs --follow` follows it.

use std::collections::VecDeque;

use axum::Json;
use axum::extract::State;
use serde::{Deserialize, Serialize};
use toolmux_core::Outcome;
use toolmux_execlog::{Follower, LogEntry, LogQuery, follow, parse_since, query};
use utoipa::{IntoParams, ToSchema};

use crate::ApiState;
use crate::error::{ApiError, ErrorBody};
use crate::sse;
use toolmux_http::ApiQuery;

/// The most entries one request returns.
pub const MAX_LOG_ENTRIES: usize = 10_000;
const DEFAULT_LOG_ENTRIES: usize = 100;

/// Which calls to return; every filter that is set must match.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[into_params(parameter_in = Query, rename_all = "camelCase")]
pub struct LogFilter {
    /// A tool name or a glob over names (`github__*`).
    pub tool: Option<String>,
    /// `ok`, `error`, `denied`, `timeout` or `invalid`.
    pub outcome: Option<String>,
    /// An RFC 3339 instant, or a span back from now (`15m`, `2h`, `1d`).
    pub since: Option<String>,
    /// Only calls of this session.
    pub session: Option<String>,
    /// The newest this many entries (default 100, at most 10000).
    pub limit: Option<usize>,
}

/// Calls from the execution log, oldest first.
#[derive(Serialize, ToSchema)]
pub struct LogList {
    /// One entry per call, in the log's line format.
    #[schema(value_type = Vec<Object>)]
    pub entries: Vec<LogEntry>,
}

/// Reads the execution log.
#[utoipa::path(
    get, path = "/api/logs", tag = "logs", params(LogFilter),
    responses(
        (status = 200, description = "Matching calls, oldest first", body = LogList),
        (status = 400, description = "A bad filter", body = ErrorBody),
    )
)]
pub(crate) async fn list(
    State(state): State<ApiState>,
    ApiQuery(filter): ApiQuery<LogFilter>,
) -> Result<Json<LogList>, ApiError> {
    let outcome = filter
        .outcome
        .as_deref()
        .map(str::parse::<Outcome>)
        .transpose()
        .map_err(ApiError::malformed)?;
    let since = filter
        .since
        .as_deref()
        .map(|s| parse_since(s, chrono::Utc::now()))
        .transpose()
        .map_err(|e| ApiError::malformed(format!("bad `since`: {e}")))?;
    let limit = filter.limit.unwrap_or(DEFAULT_LOG_ENTRIES);
    if limit == 0 || limit > MAX_LOG_ENTRIES {
        return Err(ApiError::malformed(format!(
            "`limit` must be between 1 and {MAX_LOG_ENTRIES}"
        )));
    }
    let log_query = LogQuery {
        tool: filter.tool,
        outcome,
        since,
        until: None,
        limit: Some(limit),
        session: filter.session,
    };
    if let Some(pattern) = &log_query.tool {
        toolmux_core::NamePattern::new(pattern)
            .map_err(|e| ApiError::malformed(format!("bad `tool`: {e}")))?;
    }
    let dir = state.inner.log_dir.clone();
    let entries = tokio::task::spawn_blocking(move || query(&dir, &log_query))
        .await
        .map_err(|e| ApiError::internal(format!("the log reader stopped: {e}")))?
        .map_err(|e| ApiError::internal(format!("cannot read the execution log: {e}")))?;
    Ok(Json(LogList { entries }))
}

/// Which calls to follow; every filter that is set must match.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[into_params(parameter_in = Query, rename_all = "camelCase")]
pub struct StreamFilter {
    /// A tool name or a glob over names (`github__*`).
    pub tool: Option<String>,
    /// `ok`, `error`, `denied`, `timeout` or `invalid`.
    pub outcome: Option<String>,
    /// Only calls of this session.
    pub session: Option<String>,
}

/// How often the stream looks at the log file. The log is a file written by one thread (and by
/// other toolmux processes: a CLI call lands in the same file), so following it is reading it
/// again; a quarter of a second is live for a person and costs one `stat` when nothing came.
const FOLLOW_EVERY: std::time::Duration = std::time::Duration::from_millis(250);
/// How long an idle stream waits before it sends a comment: proxies keep it open, and a client
/// that went away is noticed (the write fails), which ends the stream.
const KEEP_ALIVE: std::time::Duration = std::time::Duration::from_secs(15);

/// Follows the execution log live, as `toolmux logs --follow` does: server-sent events,
/// `event: entry` with each call logged from now on (in the log's line format, redacted as the
/// log is), from every process that writes this project's log, and a `: keep-alive` comment
/// when idle. Read what came before with `GET /api/logs`.
#[utoipa::path(
    get, path = "/api/logs/stream", tag = "logs", params(StreamFilter),
    responses(
        (status = 200, description = "Server-sent events: `entry` per call, with a \
            `: keep-alive` comment when idle", content_type = "text/event-stream", body = String),
        (status = 400, description = "A bad filter", body = ErrorBody),
        (status = 401, description = "No valid API key", body = ErrorBody),
    )
)]
pub(crate) async fn stream(
    State(state): State<ApiState>,
    ApiQuery(filter): ApiQuery<StreamFilter>,
) -> Result<axum::response::Response, ApiError> {
    let outcome = filter
        .outcome
        .as_deref()
        .map(str::parse::<Outcome>)
        .transpose()
        .map_err(ApiError::malformed)?;
    if let Some(pattern) = &filter.tool {
        toolmux_core::NamePattern::new(pattern)
            .map_err(|e| ApiError::malformed(format!("bad `tool`: {e}")))?;
    }
    let log_query = LogQuery {
        tool: filter.tool,
        outcome,
        since: None,
        until: None,
        limit: None,
        session: filter.session,
    };
    let dir = state.inner.log_dir.clone();
    // Started before the response is sent, so every call logged after the request is seen.
    let follower = tokio::task::spawn_blocking(move || follow(&dir, &log_query))
        .await
        .map_err(|e| ApiError::internal(format!("the log reader stopped: {e}")))?;
    let tail = Tail {
        follower: Some(follower),
        backlog: VecDeque::new(),
        stopping: state.inner.approvals.watch(),
    };
    Ok(crate::sse::response(futures::stream::unfold(
        tail,
        |mut tail| async move {
            let frame = tail.next_frame().await?;
            Some((frame, tail))
        },
    )))
}

/// One client's tail of the log: entries read but not yet sent, and the follower (lent to the
/// blocking pool while it reads).
struct Tail {
    follower: Option<Follower>,
    backlog: VecDeque<LogEntry>,
    /// The stream of everything waiting for a person, watched only for its end: `serve` closes
    /// those streams as it stops, and a log stream, which never ends by itself, ends with them
    /// rather than hold the server's graceful stop for its whole grace.
    stopping: toolmux_core::PersonEvents,
}

impl Tail {
    /// The next frame: an entry, or a keep-alive after [`KEEP_ALIVE`] without one. `None` ends
    /// the stream (the log cannot be read).
    async fn next_frame(&mut self) -> Option<String> {
        let started = tokio::time::Instant::now();
        loop {
            if let Some(entry) = self.backlog.pop_front() {
                return Some(sse::frame("entry", &entry));
            }
            if started.elapsed() >= KEEP_ALIVE {
                return Some(": keep-alive\n\n".to_string());
            }
            let pause = tokio::time::sleep(FOLLOW_EVERY);
            tokio::pin!(pause);
            loop {
                tokio::select! {
                    () = &mut pause => break,
                    // Approvals come and go; only the end of their streams matters here.
                    watched = self.stopping.next() => {
                        watched?;
                    }
                }
            }
            let mut follower = self.follower.take()?;
            let (follower, polled) = tokio::task::spawn_blocking(move || {
                let polled = follower.poll();
                (follower, polled)
            })
            .await
            .ok()?;
            self.follower = Some(follower);
            match polled {
                Ok(entries) => self.backlog.extend(entries),
                Err(e) => {
                    tracing::warn!(error = %e, "stopped following the execution log for a client");
                    return None;
                }
            }
        }
    }
}
