//! `/api/logs`: the execution log, read back with the same query as `toolmux logs`.

use axum::Json;
use axum::extract::State;
use serde::{Deserialize, Serialize};
use toolmux_core::Outcome;
use toolmux_execlog::{LogEntry, LogQuery, parse_since, query};
use utoipa::{IntoParams, ToSchema};

use crate::ApiState;
use crate::error::{ApiError, ErrorBody};
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
