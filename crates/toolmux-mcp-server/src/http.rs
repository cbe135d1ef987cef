//! The MCP server over streamable HTTP, as an axum router mounting `/mcp`: sessions
//! (`Mcp-Session-Id`), resumable SSE streams (`Last-Event-ID`), Host and Origin checks against
//! DNS rebinding, and bearer tokens.

use std::sync::Arc;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use rmcp::transport::common::http_header::HEADER_SESSION_ID;
use rmcp::transport::streamable_http_server::{
    SessionId, SessionManager, StreamableHttpServerConfig, StreamableHttpService,
};
use serde_json::json;
use tokio_util::sync::CancellationToken;
use toolmux_core::Hub;

use crate::options::ServeOptions;
use crate::server::{McpServer, Shared};
use crate::sessions::{DEFAULT_SESSION_IDLE_TIMEOUT, SessionTable};

/// The path the MCP endpoint is mounted at.
pub const MCP_PATH: &str = "/mcp";

/// A router serving `hub` as an MCP server at [`MCP_PATH`]. Cancelling `shutdown` ends every
/// session and open SSE stream, so that a graceful HTTP shutdown does not wait on them.
///
/// Serve it with `TCP_NODELAY` on accepted connections (`axum::serve::ListenerExt::tap_io`):
/// responses are SSE streams written in several small pieces, and without it Nagle's algorithm
/// holds each response for the client's delayed ACK, 40 ms on Linux.
///
/// Host, Origin and keys are checked by `toolmux_http`'s guard: the caller's, in front of this
/// router, with [`ServeOptions::guarded_in_front`]; otherwise one this function puts there from
/// the options' fixed lists.
///
/// A session whose client has nothing open and has sent nothing for
/// [`ServeOptions::session_idle_timeout`] is closed, and a request naming it gets `404`.
pub fn http_router(hub: Hub, options: ServeOptions, shutdown: CancellationToken) -> Router {
    // rmcp takes its allowed hosts and origins once, when the service is built, and offers no
    // way to change them on a running service; toolmux's one guard (`toolmux_http`) makes the
    // same checks, with the same outcome (403), from settings that may change while it runs.
    // rmcp's checks are off (an empty host list allows every Host; an empty origin list without
    // enforcement checks no Origin) because the guard always stands in front: the caller's, or
    // the one put here from fixed options. rmcp still refuses a request with no Host at all.
    let idle = options
        .session_idle_timeout
        .unwrap_or(DEFAULT_SESSION_IDLE_TIMEOUT);
    let sessions = SessionTable::new(idle, shutdown.clone(), options.upstreams.clone());
    let config = StreamableHttpServerConfig::default()
        .with_cancellation_token(shutdown)
        .disable_allowed_hosts()
        .disable_allowed_origins();
    let own_guard = (!options.guarded_in_front).then(|| {
        toolmux_http::LiveOptions::new(toolmux_http::ApiOptions {
            api_keys: options.api_keys.clone(),
            require_key_for_reads: false,
            allowed_hosts: options.effective_allowed_hosts(),
            allowed_origins: options.effective_allowed_origins(),
            token_issuer: None,
            admin_scopes: Vec::new(),
        })
    });
    let shared = Shared::new(hub, options);
    let answers = Answers {
        sessions: Arc::clone(&sessions),
    };
    let service = StreamableHttpService::new(
        move || Ok(McpServer::for_session(Arc::clone(&shared))),
        sessions,
        config,
    );
    let router = Router::new()
        .route_service(MCP_PATH, service)
        .layer(middleware::from_fn_with_state(answers, answer_as_json_rpc));
    match own_guard {
        Some(options) => toolmux_http::mcp_guarded(options, router),
        None => router,
    }
}

/// What [`answer_as_json_rpc`] needs from the service it stands in front of.
#[derive(Clone)]
struct Answers {
    sessions: Arc<SessionTable>,
}

/// Gives two answers the way JSON-RPC and MCP's transport specify them, where rmcp 3.9 does
/// not (and cannot be configured to): a body that is not JSON is `400` with a JSON-RPC parse
/// error (-32700), where rmcp answers `415` ("fail to deserialize request body …"), and a
/// `DELETE` of a session that does not exist is `404`, as every other request naming an
/// unknown session is, not `202`. Everything else is rmcp's.
///
/// A JSON body goes to rmcp as it comes, parsed once, by rmcp; its chunks are kept on the side
/// (shared, not copied) only so that rmcp's `415` for a body it could not read can be told
/// apart — a syntax error, which becomes the parse error, from JSON that is not a JSON-RPC
/// message, which keeps rmcp's answer. Only that failing request parses its body a second time.
async fn answer_as_json_rpc(
    State(answers): State<Answers>,
    request: Request,
    next: Next,
) -> Response {
    if request.method() == Method::DELETE {
        let session: Option<SessionId> = request
            .headers()
            .get(HEADER_SESSION_ID)
            .and_then(|v| v.to_str().ok())
            .map(Arc::from);
        if let Some(session) = session
            && !answers.sessions.has_session(&session).await.unwrap_or(true)
        {
            return (StatusCode::NOT_FOUND, SESSION_NOT_FOUND).into_response();
        }
        return next.run(request).await;
    }
    // rmcp answers a wrong Content-Type with 415 itself, reading no body; only a JSON body's
    // 415 is rmcp failing to deserialize it.
    let json_body = request.method() == Method::POST
        && request
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| {
                let essence = v.split_once(';').map_or(v, |(essence, _)| essence);
                essence.trim().eq_ignore_ascii_case("application/json")
            });
    if !json_body {
        return next.run(request).await;
    }
    let kept: Arc<std::sync::Mutex<Vec<Bytes>>> = Arc::default();
    let (parts, body) = request.into_parts();
    let keeping = Arc::clone(&kept);
    let body = Body::from_stream(body.into_data_stream().inspect(move |chunk| {
        if let Ok(chunk) = chunk {
            keeping
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .push(chunk.clone());
        }
    }));
    let answer = next.run(Request::from_parts(parts, body)).await;
    if answer.status() != StatusCode::UNSUPPORTED_MEDIA_TYPE {
        return answer;
    }
    let chunks = std::mem::take(
        &mut *kept
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner),
    );
    let bytes = chunks.concat();
    match serde_json::from_slice::<serde::de::IgnoredAny>(&bytes) {
        Err(e) if !e.is_data() => parse_error(&e),
        _ => answer,
    }
}

/// What `/mcp` answers a request naming (or deleting) a session it does not have: rmcp's words.
const SESSION_NOT_FOUND: &str = "Not Found: Session not found";

/// JSON-RPC's answer to a body that is not JSON: `400`, code -32700, no id.
fn parse_error(e: &serde_json::Error) -> Response {
    let body = json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": {"code": -32700, "message": format!("Parse error: {e}")},
    });
    (StatusCode::BAD_REQUEST, axum::Json(body)).into_response()
}
