//! The MCP server over streamable HTTP, as an axum router mounting `/mcp` and the named
//! endpoints at `/mcp/<name>`: sessions
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
use rmcp::model::ProtocolVersion;
use rmcp::transport::common::http_header::{
    EVENT_STREAM_MIME_TYPE, HEADER_MCP_PROTOCOL_VERSION, HEADER_SESSION_ID,
};
use rmcp::transport::streamable_http_server::{
    SessionId, SessionManager, StreamableHttpServerConfig, StreamableHttpService,
};
use serde_json::json;
use tokio_util::sync::CancellationToken;
use toolmux_core::Hub;

use crate::input_required::Rounds;
use crate::options::ServeOptions;
use crate::server::{McpServer, Shared};
use crate::sessions::{DEFAULT_SESSION_IDLE_TIMEOUT, SessionTable};

/// The path the MCP endpoint serving the serve-time filters' view is mounted at.
pub const MCP_PATH: &str = "/mcp";

/// A router serving `hub` as an MCP server at [`MCP_PATH`], and each named endpoint of its
/// catalog at `/mcp/<name>` ([`ENDPOINT_PATH`]). Cancelling `shutdown` ends every
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
    let own_guard = (!options.guarded_in_front).then(|| {
        toolmux_http::LiveOptions::new(toolmux_http::ApiOptions {
            api_keys: options.api_keys.clone(),
            require_key_for_reads: false,
            allowed_hosts: options.effective_allowed_hosts(),
            allowed_origins: options.effective_allowed_origins(),
            token_issuer: None,
            admin_scopes: Vec::new(),
            ..toolmux_http::ApiOptions::default()
        })
    });
    // One set of parked calls (and one key) for every door, so that the caps on parked calls
    // are this server's, not multiplied by the number of endpoints.
    let rounds = Rounds::new().map(Arc::new);
    let doors = Arc::new(EndpointDoors {
        hub: hub.clone(),
        options: options.clone(),
        shutdown: shutdown.clone(),
        rounds: rounds.clone(),
        opened: std::sync::Mutex::default(),
    });
    close_doors_of_removed_endpoints(&doors);
    let router = door(hub, options, shutdown, rounds, MCP_PATH).route(
        ENDPOINT_PATH,
        axum::routing::any(endpoint_door).with_state(doors),
    );
    match own_guard {
        Some(options) => toolmux_http::mcp_guarded(options, router),
        None => router,
    }
}

/// Where the named endpoints are mounted: `/mcp/<name>`, each behind the same guard as
/// [`MCP_PATH`]. The whole rest of the path is the name, so that `/mcp/a/b` is answered as the
/// unknown endpoint `a/b` rather than by another route.
pub const ENDPOINT_PATH: &str = "/mcp/{*endpoint}";

/// One MCP door at `path`: the streamable HTTP service over `options`' view, with its own
/// sessions.
fn door(
    hub: Hub,
    options: ServeOptions,
    shutdown: CancellationToken,
    rounds: Option<Arc<Rounds>>,
    path: &str,
) -> Router {
    let idle = options
        .session_idle_timeout
        .unwrap_or(DEFAULT_SESSION_IDLE_TIMEOUT);
    let sessions = SessionTable::new(idle, shutdown.clone(), options.upstreams.clone());
    let config = StreamableHttpServerConfig::default()
        .with_cancellation_token(shutdown)
        .with_max_request_body_bytes(MAX_BODY_BYTES)
        .disable_allowed_hosts()
        .disable_allowed_origins();
    let shared = Shared::new(hub, options, rounds);
    let answers = Answers {
        sessions: Arc::clone(&sessions),
    };
    let service = StreamableHttpService::new(
        move || Ok(McpServer::for_session(Arc::clone(&shared))),
        sessions,
        config,
    );
    Router::new()
        .route_service(path, service)
        .layer(middleware::from_fn_with_state(
            answers.clone(),
            answer_as_json_rpc,
        ))
        .layer(middleware::from_fn_with_state(answers, prime_by_version))
}

/// The named endpoints' doors, each opened on its first request and kept while its endpoint is
/// configured: one server (and session table) per endpoint, all over the one hub, so every
/// endpoint shares the one registry and the one set of upstream servers.
struct EndpointDoors {
    hub: Hub,
    /// The server's options; a door serves its endpoint's view in place of their filters.
    options: ServeOptions,
    shutdown: CancellationToken,
    rounds: Option<Arc<Rounds>>,
    opened: std::sync::Mutex<std::collections::HashMap<String, OpenDoor>>,
}

/// An endpoint's door and what closes it.
struct OpenDoor {
    router: Router,
    /// Cancelled when the endpoint leaves the configuration: ends the door's sessions, their
    /// streams and its session table's sweeper (a child of the server's shutdown).
    closed: CancellationToken,
}

impl EndpointDoors {
    fn opened(&self) -> std::sync::MutexGuard<'_, std::collections::HashMap<String, OpenDoor>> {
        self.opened
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Closes and forgets the doors of endpoints `configured` no longer holds: a door kept
    /// would keep its sessions (and what they hold) for an endpoint nobody can reach.
    fn close_removed(&self, configured: &toolmux_core::Endpoints) {
        self.opened().retain(|name, door| {
            let kept = configured.contains_key(name);
            if !kept {
                door.closed.cancel();
            }
            kept
        });
    }

    /// The door of the endpoint `name`, opened now if this is its first request.
    fn door(&self, name: &str) -> Router {
        let mut opened = self.opened();
        let door = opened.entry(name.to_string()).or_insert_with(|| {
            let options = ServeOptions {
                include: Vec::new(),
                exclude: Vec::new(),
                pass_through: None,
                entry_points: Vec::new(),
                endpoint: Some(name.to_string()),
                ..self.options.clone()
            };
            let closed = self.shutdown.child_token();
            let router = door(
                self.hub.clone(),
                options,
                closed.clone(),
                self.rounds.clone(),
                ENDPOINT_PATH,
            );
            OpenDoor { router, closed }
        });
        door.router.clone()
    }
}

/// How long a removed endpoint's door stays open after the change: its sessions are told
/// first that their list changed (each session's own catalog watcher sends that), so that a
/// client re-lists or calls and hears the refusal, rather than finding its stream cut with no
/// word. A request in that time is refused (404) and closes the door at once.
const CLOSE_GRACE: std::time::Duration = std::time::Duration::from_secs(5);

/// Closes the doors of endpoints taken out of the configuration, [`CLOSE_GRACE`] after the
/// catalog without them is in force, from a task that ends with the server (or with the
/// doors). Out of a runtime (a router built but never served) there is nothing to close yet,
/// and a request for a removed endpoint still closes its door ([`endpoint_door`]).
fn close_doors_of_removed_endpoints(doors: &Arc<EndpointDoors>) {
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return;
    };
    let mut catalogs = doors.hub.subscribe();
    let shutdown = doors.shutdown.clone();
    let doors = Arc::downgrade(doors);
    runtime.spawn(async move {
        loop {
            tokio::select! {
                () = shutdown.cancelled() => return,
                changed = catalogs.changed() => if changed.is_err() { return },
            }
            tokio::select! {
                () = shutdown.cancelled() => return,
                () = tokio::time::sleep(CLOSE_GRACE) => {}
            }
            // The configuration as it is now: an endpoint put back meanwhile keeps its door.
            let catalog = Arc::clone(&catalogs.borrow_and_update());
            let Some(doors) = doors.upgrade() else { return };
            doors.close_removed(catalog.endpoints());
        }
    });
}

/// `/mcp/<name>`: the endpoint's door, or `404` with a JSON-RPC error naming the configured
/// endpoints when the current configuration has none of that name.
async fn endpoint_door(
    State(doors): State<Arc<EndpointDoors>>,
    axum::extract::Path(name): axum::extract::Path<String>,
    request: Request,
) -> Response {
    let catalog = doors.hub.catalog();
    if let Err(unknown) = catalog.endpoint(&name) {
        doors.close_removed(catalog.endpoints());
        return toolmux_http::mcp_refusal(toolmux_http::ApiError::new(
            StatusCode::NOT_FOUND,
            "unknown_endpoint",
            unknown,
        ));
    }
    match tower::ServiceExt::oneshot(doors.door(&name), request).await {
        Ok(response) => response,
        Err(never) => match never {},
    }
}

/// What [`answer_as_json_rpc`] needs from the service it stands in front of.
#[derive(Clone)]
struct Answers {
    sessions: Arc<SessionTable>,
}

/// Gives the answers JSON-RPC and MCP's transport specify where rmcp 3.9 does not (and cannot
/// be configured to): a body rmcp cannot read is `400` with a JSON-RPC error where rmcp answers
/// `415` ("fail to deserialize request body …") — a parse error (-32700) for one that is not
/// JSON, nested too deep included, and an invalid request (-32600) for JSON that is not a
/// JSON-RPC message; a body over rmcp's size cap keeps its `413` but says so as a JSON-RPC
/// error too; and a `DELETE` of a session that does not exist is `404`, as every other request
/// naming an unknown session is, not `202`. Everything else is rmcp's.
///
/// A JSON body goes to rmcp as it comes, parsed once, by rmcp; its chunks are kept on the side
/// (shared, not copied) only so that rmcp's `415` for a body it could not read can be told
/// apart. Only that failing request parses its body a second time, allocating nothing.
async fn answer_as_json_rpc(
    State(answers): State<Answers>,
    request: Request,
    next: Next,
) -> Response {
    if request.method() == Method::DELETE {
        if let Some(session) = session_named(request.headers())
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
    match answer.status() {
        StatusCode::UNSUPPORTED_MEDIA_TYPE => {}
        StatusCode::PAYLOAD_TOO_LARGE => {
            return json_rpc_error(
                StatusCode::PAYLOAD_TOO_LARGE,
                INVALID_REQUEST,
                format!("Invalid Request: the body is larger than {MAX_BODY_BYTES} bytes"),
            );
        }
        _ => return answer,
    }
    let chunks = std::mem::take(
        &mut *kept
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner),
    );
    let bytes = chunks.concat();
    match serde_json::from_slice::<AnyJson>(&bytes) {
        Err(e) if !e.is_data() => parse_error(&e),
        // A JSON value that rmcp could not read as a message: its error is about the shape.
        Ok(AnyJson) => json_rpc_error(
            StatusCode::BAD_REQUEST,
            INVALID_REQUEST,
            "Invalid Request: the body is JSON but not a JSON-RPC request, notification or \
             response (or a batch of them)"
                .to_string(),
        ),
        // `AnyJson` accepts every kind of value, so serde_json has no data error to give.
        Err(_) => answer,
    }
}

/// The first protocol version whose event streams start with a priming event (SEP-1699).
const FIRST_PRIMED_VERSION: ProtocolVersion = ProtocolVersion::V_2025_11_25;

/// rmcp 3.9 starts every event stream with an empty-data priming event (`id: 0`,
/// `retry: 3000`), whatever the client's version: its `sse_retry` settings are one per service,
/// with no per-session rule. Clients of versions before 2025-11-25 read the empty data as a JSON
/// message and fail (Gemini CLI: "Unexpected end of JSON input"), so for them the event is taken
/// off here, as the official SDKs never send it to them.
///
/// The version is the one the session's `initialize` agreed on (for the `initialize` answer
/// itself, the session it created), never the request's `MCP-Protocol-Version` header: a
/// client of 2025-11-25 may send an older header on a raw request (the conformance suite's
/// `server-sse-polling` does) and still needs the event to resume with `Last-Event-ID`. A
/// request outside any session is a stateless one of 2026-07-28 or later, whose version is its
/// `_meta` protocol version; rmcp answers it only when its `MCP-Protocol-Version` header names
/// that same version, so the header read then is the `_meta` version. (rmcp sends such a
/// request no priming event anyway, having no event store to resume it from.)
async fn prime_by_version(
    State(answers): State<Answers>,
    request: Request,
    next: Next,
) -> Response {
    let session = session_named(request.headers());
    let stated = request
        .headers()
        .get(HEADER_MCP_PROTOCOL_VERSION)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let response = next.run(request).await;
    let event_stream = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with(EVENT_STREAM_MIME_TYPE));
    if !event_stream {
        return response;
    }
    let primed = |version: &str| version >= FIRST_PRIMED_VERSION.as_str();
    let primes = match session.or_else(|| session_named(response.headers())) {
        Some(session) => answers
            .sessions
            .negotiated_version(&session)
            .map(|v| primed(v.as_str())),
        None => stated.as_deref().map(primed),
    };
    // Versions are dates, so they compare as strings. Without a known version, rmcp's answer
    // stands.
    if primes == Some(false) {
        without_priming(response)
    } else {
        response
    }
}

/// The session a request (or the `initialize` answer) names in `Mcp-Session-Id`.
fn session_named(headers: &axum::http::HeaderMap) -> Option<SessionId> {
    headers
        .get(HEADER_SESSION_ID)
        .and_then(|v| v.to_str().ok())
        .map(Arc::from)
}

/// `response`'s event stream without its first event when that is a priming event; rmcp sends
/// one only first. The bytes before the end of the first event are held until that event is
/// whole; after it, chunks pass as they come.
fn without_priming(response: Response) -> Response {
    /// The most a stream's start is held while looking for the end of its first event.
    const MAX_PRIMING_BYTES: usize = 4096;
    let (parts, body) = response.into_parts();
    let events = body.into_data_stream().fuse();
    let stream = futures::stream::unfold(
        (events, Some(Vec::new())),
        |(mut events, head)| async move {
            let Some(mut head) = head else {
                return events.next().await.map(|chunk| (chunk, (events, None)));
            };
            loop {
                match events.next().await {
                    Some(Ok(chunk)) => {
                        // Only the new bytes (and the one before them) can complete the blank
                        // line: the search never goes over what it has seen.
                        let from = head.len().saturating_sub(1);
                        head.extend_from_slice(&chunk);
                        // A priming event is a few bytes: a first event this long is not one,
                        // and is passed on as it is rather than held whole.
                        if head.len() > MAX_PRIMING_BYTES {
                            return Some((Ok(Bytes::from(head)), (events, None)));
                        }
                        if let Some(end) = head[from..]
                            .windows(2)
                            .position(|w| w == b"\n\n")
                            .map(|at| from + at)
                        {
                            let rest = if is_priming(&head[..end]) {
                                head.split_off(end + 2)
                            } else {
                                head
                            };
                            return Some((Ok(Bytes::from(rest)), (events, None)));
                        }
                    }
                    Some(Err(e)) => return Some((Err(e), (events, None))),
                    None => {
                        return (!head.is_empty()).then(|| (Ok(Bytes::from(head)), (events, None)));
                    }
                }
            }
        },
    );
    Response::from_parts(parts, Body::from_stream(stream))
}

/// Whether an event (its lines, without the blank line ending it) carries no data: only an id,
/// a retry interval and empty `data` lines.
fn is_priming(event: &[u8]) -> bool {
    event.split(|b| *b == b'\n').all(|line| {
        line.starts_with(b"id:")
            || line.starts_with(b"retry:")
            || line
                .strip_prefix(b"data:")
                .is_some_and(|d| d.trim_ascii().is_empty())
    })
}

/// The largest body rmcp reads (its own default, set here so that the answer to a larger one
/// names the true figure).
const MAX_BODY_BYTES: usize = 4 * 1024 * 1024;

/// JSON-RPC's code for JSON that is not a valid request object.
const INVALID_REQUEST: i64 = -32600;

/// Any JSON value, read and kept nowhere, as `serde::de::IgnoredAny` does, but through
/// `deserialize_any`, so that serde_json's nesting limit (127 levels) applies: `IgnoredAny` skips
/// values with a loop of serde_json's own that has none, and took a body nested too deep for
/// rmcp for well-formed JSON.
struct AnyJson;

impl<'de> serde::Deserialize<'de> for AnyJson {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(AnyJsonVisitor)
    }
}

struct AnyJsonVisitor;

impl<'de> serde::de::Visitor<'de> for AnyJsonVisitor {
    type Value = AnyJson;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<AnyJson, E> {
        Ok(AnyJson)
    }
    fn visit_i64<E>(self, _: i64) -> Result<AnyJson, E> {
        Ok(AnyJson)
    }
    fn visit_u64<E>(self, _: u64) -> Result<AnyJson, E> {
        Ok(AnyJson)
    }
    fn visit_f64<E>(self, _: f64) -> Result<AnyJson, E> {
        Ok(AnyJson)
    }
    fn visit_str<E>(self, _: &str) -> Result<AnyJson, E> {
        Ok(AnyJson)
    }
    fn visit_unit<E>(self) -> Result<AnyJson, E> {
        Ok(AnyJson)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<AnyJson, A::Error> {
        while seq.next_element::<AnyJson>()?.is_some() {}
        Ok(AnyJson)
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<AnyJson, A::Error> {
        while map
            .next_entry::<serde::de::IgnoredAny, AnyJson>()?
            .is_some()
        {}
        Ok(AnyJson)
    }
}

/// What `/mcp` answers a request naming (or deleting) a session it does not have: rmcp's words.
const SESSION_NOT_FOUND: &str = "Not Found: Session not found";

/// JSON-RPC's answer to a body that is not JSON: `400`, code -32700, no id. Nesting past
/// serde_json's limit is said in words: "recursion limit exceeded" names the parser's guard,
/// not what the client did.
fn parse_error(e: &serde_json::Error) -> Response {
    let reason = e.to_string();
    let message = match reason.strip_prefix("recursion limit exceeded") {
        Some(at) => format!("Parse error: the JSON is nested deeper than 127 levels{at}"),
        None => format!("Parse error: {reason}"),
    };
    json_rpc_error(StatusCode::BAD_REQUEST, -32700, message)
}

/// A JSON-RPC error answer without an id (the request's could not be read).
fn json_rpc_error(status: StatusCode, code: i64, message: String) -> Response {
    let body = json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": {"code": code, "message": message},
    });
    (status, axum::Json(body)).into_response()
}
