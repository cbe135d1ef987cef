//! One live connection to an upstream server: how it is opened for each transport, the calls
//! toolmux makes on it, and how it is closed. A stdio server runs in its own process group, so
//! that stopping it stops everything it started (an `npx` wrapper and the server under it;
//! see [`crate::stdio`]).
//!
//! A connection can also be given up on by toolmux while the server still runs (a [`Fault`]):
//! when the server sends a message too large to read, or stops answering — [`HUNG_AFTER`]
//! calls in a row abandoned by their callers (timed out or cancelled) with no answer from the
//! server meanwhile. The calls in flight fail at once, the process is killed, and the next
//! call starts the server again (with the usual backoff).

// rmcp marks sampling and MCP logging deprecated (SEP-2577, protocol 2026-07-28); the
// handshake-era revisions toolmux speaks to upstream servers still define both, and it relays them.
#![allow(deprecated)]

use std::collections::{BTreeMap, HashSet};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use rmcp::ErrorData as McpError;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, CancelledNotificationParam,
    ClientCapabilities, ClientConfig, ClientRequest, CompleteRequestParams, CompleteResult,
    CreateMessageRequestParams, CreateMessageResult, DEFAULT_MRTR_MAX_ROUNDS, ElicitRequestParams,
    ElicitResult, ElicitationCapability, ErrorCode, GetPromptRequestParams, GetPromptResult,
    Implementation, InputRequest, InputRequests, InputResponses, JsonObject,
    PaginatedRequestParams, Prompt, ProtocolVersion, ReadResourceRequestParams, ReadResourceResult,
    RequestId, Resource, ResourceTemplate, ResourceUpdatedNotificationParam, ServerCapabilities,
    ServerResult, SetLevelRequestParams, SubscribeRequestParams, Tool, UnsubscribeRequestParams,
};
use rmcp::service::{
    ClientLifecycleMode, InboundStreamOrigin, NotificationContext, PeerRequestOptions,
    RequestContext, RunningService, ServiceError, serve_client, serve_client_with_lifecycle,
};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, Peer, RoleClient};
use tokio::io::AsyncWriteExt;
use tokio_util::sync::CancellationToken;
use toolmux_config::UpstreamTransport;
use toolmux_core::{Backchannel, BackchannelError};

use crate::cache::ServerIdentity;
use crate::callers::{Callers, InOrder, Unattributable};
use crate::error::UpstreamError;
use crate::sse::{SseTransport, header_map};
use crate::stdio::{Launch, SHUTDOWN_GRACE, StdioProcess};

/// How a session with a server begins. Over streamable HTTP: `server/discover` first, and when
/// the server speaks 2026-07-28 that is all (no session: rmcp then puts the protocol version,
/// client info and capabilities in every request's `_meta` and sends the
/// `MCP-Protocol-Version` / `Mcp-Method` / `Mcp-Name` headers); a server of the handshake era
/// answers the probe with an error (HTTP 400 without a session, or method not found), and the
/// `initialize` handshake follows. rmcp gives a server that does not answer the probe at all
/// 10 seconds before falling back.
///
/// Over stdio, and the legacy SSE transport (which predates `server/discover`), the session
/// begins with `initialize`: rmcp could probe there too, but toolmux relays what a stdio
/// server sends outside a call (resource updates, log messages, list changes) through the
/// session the handshake opens, and 2026-07-28 moves those to `subscriptions/listen`, which
/// toolmux does not speak as a client yet.
fn negotiation(transport: &UpstreamTransport) -> ClientLifecycleMode {
    match transport {
        UpstreamTransport::Http { .. } => ClientLifecycleMode::Auto {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            legacy_version: None,
        },
        _ => ClientLifecycleMode::Initialize,
    }
}

/// A server's whole list, and what it said about caching it.
pub(crate) struct Listed<T> {
    pub items: Vec<T>,
    pub hint: CacheHint,
}

/// What a server said about caching a list (2026-07-28, SEP-2549: `ttlMs`, `cacheScope`):
/// how long it stays fresh, and whether it is for this client alone. A server of an earlier
/// revision says nothing: no limit, public.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct CacheHint {
    pub ttl_ms: Option<u64>,
    pub private: bool,
}

impl CacheHint {
    pub(crate) fn of(ttl_ms: Option<u64>, scope: Option<rmcp::model::CacheScope>) -> Self {
        Self {
            ttl_ms,
            private: scope == Some(rmcp::model::CacheScope::Private),
        }
    }

    /// Two lists' hints together: the shorter freshness, and private when either is.
    pub(crate) fn and(self, other: Self) -> Self {
        let ttl_ms = match (self.ttl_ms, other.ttl_ms) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        Self {
            ttl_ms,
            private: self.private || other.private,
        }
    }
}

/// Why [`Connection::open_as`] opened no connection.
enum NotOpened {
    Failed(UpstreamError),
    /// The `server/discover` probe was answered with another result (shown here).
    ProbeMisread(String),
}

impl From<UpstreamError> for NotOpened {
    fn from(error: UpstreamError) -> Self {
        NotOpened::Failed(error)
    }
}

/// `Err` when `error` is a discovery probe answered with a result that is not discovery's.
fn misread_probe(error: &rmcp::service::ClientInitializeError) -> Result<(), NotOpened> {
    match error {
        rmcp::service::ClientInitializeError::ExpectedInitResult(Some(answer)) => {
            let answer = serde_json::to_string(answer).unwrap_or_else(|e| e.to_string());
            Err(NotOpened::ProbeMisread(crate::error::server_text(&answer)))
        }
        _ => Ok(()),
    }
}

/// Calls in a row abandoned by their callers, with no answer from the server meanwhile, after
/// which the server counts as hung and its connection is given up on.
pub(crate) const HUNG_AFTER: u32 = 3;
/// The most pages of `tools/list` read in one discovery; a server that pages on and on (a
/// cursor bug) fails discovery instead of hanging it.
pub const MAX_TOOL_PAGES: usize = 100;
/// The most bytes of a server's log kept before it is rotated to `<name>.log.1`.
const MAX_LOG_BYTES: u64 = 1024 * 1024;

/// What is needed to open a connection.
#[derive(Clone, Debug)]
pub(crate) struct Endpoint {
    /// The server's name, for messages.
    pub server: String,
    /// How to reach it.
    pub transport: UpstreamTransport,
    /// The project directory, which a relative `cwd` is resolved against.
    pub project_dir: PathBuf,
    /// Where its stderr goes.
    pub log: PathBuf,
    /// How long start-up may take.
    pub startup_timeout: Duration,
    /// How toolmux signs in to an HTTP server (`toolmux_oauth`), when configured.
    pub oauth: Option<toolmux_config::OAuthSettings>,
}

/// Why toolmux gave up on a connection whose server may still run: raised once, by the first
/// reason; it fails the calls in flight at once and kills a stdio server's process group.
#[derive(Default)]
pub(crate) struct Fault {
    reason: OnceLock<String>,
    raised: CancellationToken,
    /// A stdio server's process group.
    group: OnceLock<u32>,
    /// Calls abandoned in a row with no answer meanwhile (see [`HUNG_AFTER`]).
    unanswered: AtomicU32,
}

impl Fault {
    pub(crate) fn set_group(&self, pgid: u32) {
        let _ = self.group.set(pgid);
    }

    /// Gives up on the connection for `reason` (the first reason given stays).
    pub(crate) fn raise(&self, reason: String) {
        if self.reason.set(reason).is_ok() {
            if let Some(&pgid) = self.group.get() {
                toolmux_scripts::child::signal_group(pgid, toolmux_scripts::child::Signal::Kill);
            }
            self.raised.cancel();
        }
    }

    /// Why the connection was given up on, if it was.
    pub(crate) fn reason(&self) -> Option<&str> {
        self.reason.get().map(String::as_str)
    }

    /// The server answered something: it is not hung.
    fn answered(&self) {
        self.unanswered.store(0, Ordering::SeqCst);
    }

    /// A caller stopped waiting for an answer.
    fn abandoned(&self) {
        let row = self.unanswered.fetch_add(1, Ordering::SeqCst) + 1;
        if row >= HUNG_AFTER {
            self.raise(format!(
                "the server stopped answering ({row} calls in a row ended unanswered); its \
                 connection was closed"
            ));
        }
    }
}

/// What a server tells toolmux on its own, and whom toolmux tells in turn.
#[derive(Clone)]
pub(crate) struct ServerHooks {
    /// Its tools, prompts or resources changed: discover them again.
    pub on_list_changed: Arc<dyn Fn() + Send + Sync>,
    /// A subscribed resource changed (its URI).
    pub on_resource_updated: Arc<dyn Fn(String) + Send + Sync>,
}

/// Reacts to what a server sends: notifications about its lists, and the sampling and
/// elicitation requests it sends while calls run, which go to the callers through [`Callers`].
/// (Progress and log messages are taken off the stream earlier, by [`InOrder`].)
#[derive(Clone)]
pub(crate) struct Handler {
    server: String,
    hooks: ServerHooks,
    callers: Arc<Callers>,
}

impl Handler {
    pub(crate) fn new(server: &str, hooks: ServerHooks, callers: Arc<Callers>) -> Self {
        Self {
            server: server.to_string(),
            hooks,
            callers,
        }
    }

    /// The caller a server's request is for, or the error the server gets when there is none
    /// it can safely be given to (invalid params: the request is not associated with one of
    /// toolmux's requests it can answer for).
    fn requester(
        &self,
        what: &str,
        context: &RequestContext<RoleClient>,
    ) -> Result<Arc<dyn Backchannel>, McpError> {
        // Over streamable HTTP, rmcp marks a request that came on the stream of one of ours.
        let came_with = match context.extensions.get::<InboundStreamOrigin>() {
            Some(InboundStreamOrigin::OutboundRequest(id)) => Some(id),
            _ => None,
        };
        self.callers.requester(came_with).map_err(|why| {
            let message = match why {
                Unattributable::NoCaller => return no_caller(what),
                Unattributable::SeveralCallers(n) => format!(
                    "{n} requests from different callers are running on this server, and \
                     nothing says which one this {what} request is for; toolmux does not \
                     guess, so that one client's request never reaches another"
                ),
            };
            McpError::invalid_params(message, None)
        })
    }
}

/// The error a server's `what` request gets when no caller can answer it.
fn no_caller(what: &str) -> McpError {
    McpError::invalid_params(
        format!(
            "no caller that can answer {what} requests is waiting on this server: toolmux \
             relays them to the MCP client or chat whose tool call is running (calls from the \
             command line or the REST API cannot answer them)"
        ),
        None,
    )
}

/// Asks `caller` what a server's elicitation request (its params) asks, and fills in the
/// schema's defaults for fields left empty (see [`crate::elicitation::with_defaults`]).
async fn elicit(
    caller: &dyn Backchannel,
    request: &ElicitRequestParams,
) -> Result<ElicitResult, McpError> {
    let request: serde_json::Value = relay_json(request, "elicitation request")?;
    let schema = request.get("requestedSchema").cloned();
    let answer = caller.elicit(request).await.map_err(refused)?;
    let answer = crate::elicitation::with_defaults(schema.as_ref(), answer);
    relay_json(&answer, "elicitation result")
}

/// Asks `caller` to sample what a server's sampling request (its params) asks.
async fn sample(
    caller: &dyn Backchannel,
    request: &CreateMessageRequestParams,
) -> Result<CreateMessageResult, McpError> {
    let request = relay_json(request, "sampling request")?;
    let answer = caller.sample(request).await.map_err(refused)?;
    relay_json(&answer, "sampling result")
}

/// The answers of an input-required result's requests (2026-07-28, SEP-2322), each asked of
/// the caller of the call it came in, as a request sent on the call's stream would be.
async fn answer_input_requests(
    caller: Option<&dyn Backchannel>,
    requests: InputRequests,
) -> Result<InputResponses, McpError> {
    let mut answers = InputResponses::new();
    for (key, request) in requests {
        let answer = match request {
            InputRequest::Elicitation(request) => {
                let caller = caller.ok_or_else(|| no_caller("elicitation"))?;
                relay_json(
                    &elicit(caller, &request.params).await?,
                    "elicitation result",
                )?
            }
            InputRequest::CreateMessage(request) => {
                let caller = caller.ok_or_else(|| no_caller("sampling"))?;
                relay_json(&sample(caller, &request.params).await?, "sampling result")?
            }
            // toolmux declares no roots (it has none of its own to give), so a server that
            // asks breaks the capability it was told of.
            _ => {
                return Err(McpError::invalid_params(
                    format!(
                        "the input request `{key}` asks for something toolmux does not offer \
                         (it declares sampling and elicitation only)"
                    ),
                    None,
                ));
            }
        };
        answers.insert(key, answer);
    }
    Ok(answers)
}

/// A relayed request's failure, as the JSON-RPC error the upstream server gets.
fn refused(error: BackchannelError) -> McpError {
    match error {
        BackchannelError::Unsupported(_) => {
            McpError::new(ErrorCode::METHOD_NOT_FOUND, error.to_string(), None)
        }
        BackchannelError::Refused { code, message } => {
            McpError::new(ErrorCode(code), message, None)
        }
        BackchannelError::Failed(message) => McpError::internal_error(message, None),
    }
}

/// Moves a value between rmcp's type and the JSON the core relays.
fn relay_json<A: serde::Serialize, B: serde::de::DeserializeOwned>(
    value: &A,
    what: &str,
) -> Result<B, McpError> {
    serde_json::to_value(value)
        .and_then(serde_json::from_value)
        .map_err(|e| McpError::internal_error(format!("cannot relay the {what}: {e}"), None))
}

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        // The version offered in the `initialize` handshake (see [`negotiation`]): the newest
        // that has one. It declares sampling and form elicitation because it relays them to
        // its own callers; a caller that cannot answer makes the request fail, as a client
        // without them would.
        let mut capabilities = ClientCapabilities::default();
        capabilities.sampling = Some(Default::default());
        let mut elicitation = ElicitationCapability::new();
        elicitation.form = Some(Default::default());
        capabilities.elicitation = Some(elicitation);
        ClientConfig::new(
            capabilities,
            Implementation::new("toolmux", env!("CARGO_PKG_VERSION")),
        )
        .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        tracing::info!(server = %self.server, "the server says its tools changed");
        (self.hooks.on_list_changed)();
    }

    async fn on_prompt_list_changed(&self, _context: NotificationContext<RoleClient>) {
        tracing::info!(server = %self.server, "the server says its prompts changed");
        (self.hooks.on_list_changed)();
    }

    async fn on_resource_list_changed(&self, _context: NotificationContext<RoleClient>) {
        tracing::info!(server = %self.server, "the server says its resources changed");
        (self.hooks.on_list_changed)();
    }

    async fn on_resource_updated(
        &self,
        params: ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        (self.hooks.on_resource_updated)(params.uri);
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, McpError> {
        let caller = self.requester("sampling", &context)?;
        sample(caller.as_ref(), &params).await
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, McpError> {
        let caller = self.requester("elicitation", &context)?;
        elicit(caller.as_ref(), &request).await
    }
}

/// Why a tool call got no result, split by whether the request left toolmux: one that never
/// did cannot have run, so it may always be made again.
#[derive(Debug)]
pub(crate) enum CallFailure {
    /// The request was never sent: the connection was gone (or could not take it) first.
    NotSent(ServiceError),
    /// It was sent; the error is the server's answer or the connection ending before one.
    Sent(ServiceError),
}

/// Sends `notifications/cancelled` for a request whose caller stopped waiting (a timeout, a
/// cancelled call), unless disarmed by clearing `id` once the answer came.
struct CancelIfAbandoned {
    peer: Peer<RoleClient>,
    id: Option<RequestId>,
    fault: Arc<Fault>,
}

impl Drop for CancelIfAbandoned {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else { return };
        self.fault.abandoned();
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return; // no runtime left: the connection is going away with it
        };
        let peer = self.peer.clone();
        runtime.spawn(async move {
            let cancelled = CancelledNotificationParam::new(
                Some(id),
                Some("the caller stopped waiting".into()),
            );
            if let Err(e) = peer.notify_cancelled(cancelled).await {
                tracing::debug!(error = %e, "could not send notifications/cancelled");
            }
        });
    }
}

/// A live connection.
pub(crate) struct Connection {
    server: String,
    peer: Peer<RoleClient>,
    service: Mutex<Option<RunningService<RoleClient, Handler>>>,
    /// The process group of a stdio server (its leader's pid).
    pgid: Option<u32>,
    identity: ServerIdentity,
    /// What the server said it offers in its handshake.
    capabilities: ServerCapabilities,
    callers: Arc<Callers>,
    in_flight: AtomicUsize,
    /// Whether `tools/list` has been answered on it: over streamable HTTP at 2026-07-28, rmcp
    /// mirrors a call's `x-mcp-header` arguments into `Mcp-Param-*` headers from the schemas
    /// its transport saw listed (SEP-2243), so a call on a connection that never listed them
    /// lists them first.
    tools_listed: AtomicBool,
    /// Whether it is streamable HTTP at 2026-07-28 or later: no session, every request a POST
    /// that carries its own answer (and its `Mcp-*` headers).
    stateless: bool,
    /// When a request last began or ended on it, for a per-client connection's idle stop.
    last_active: Mutex<Instant>,
    closed: AtomicBool,
    fault: Arc<Fault>,
    /// The configured header that sends a credential of its own (`Authorization`, `X-API-Key`),
    /// when one does: a refusal is of that credential, not a want of sign-in.
    configured_credential: Option<String>,
}

/// A connection with one request counted as in flight while this lives, so that the idle
/// watcher never closes it under a request. Taken while the server's slot is locked (see
/// `Inner::connection`), the count cannot be read as zero between finding a connection and
/// using it.
pub(crate) struct InFlight(Arc<Connection>);

impl std::ops::Deref for InFlight {
    type Target = Arc<Connection>;

    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
        self.0.mark_active();
    }
}

impl Connection {
    /// Opens a connection within the start-up limit, beginning as [`negotiation`] says. An
    /// HTTP server that answers the `server/discover` probe with a result other than
    /// discovery's (a handshake-era server that answers any method it does not know with `{}`,
    /// as the conformance suite's test servers do) is opened again, afresh, with the
    /// handshake: rmcp's own fallback only follows an error.
    pub(crate) async fn open(endpoint: &Endpoint, handler: Handler) -> Result<Self, UpstreamError> {
        match Self::open_as(endpoint, handler.clone(), negotiation(&endpoint.transport)).await {
            Ok(connection) => Ok(connection),
            Err(NotOpened::Failed(error)) => Err(error),
            Err(NotOpened::ProbeMisread(answer)) => {
                tracing::info!(
                    server = %endpoint.server,
                    answer = %answer,
                    "the server answered server/discover with something else; opening it with \
                     the initialize handshake"
                );
                Self::open_as(endpoint, handler, ClientLifecycleMode::Initialize)
                    .await
                    .map_err(|e| match e {
                        NotOpened::Failed(error) => error,
                        // Only a discovery probe can be misread.
                        NotOpened::ProbeMisread(answer) => UpstreamError::start(
                            &endpoint.server,
                            &format!("the MCP handshake failed: unexpected answer {answer}"),
                        ),
                    })
            }
        }
    }

    /// Opens a connection with `lifecycle` within the start-up limit.
    async fn open_as(
        endpoint: &Endpoint,
        handler: Handler,
        lifecycle: ClientLifecycleMode,
    ) -> Result<Self, NotOpened> {
        let server = endpoint.server.clone();
        let callers = Arc::clone(&handler.callers);
        let start_error = |message: String| UpstreamError::start(&server, &message);
        let timeout = endpoint.startup_timeout;
        let timed_out = || UpstreamError::Timeout {
            server: server.clone(),
            what: "start-up (connection and MCP handshake)",
            after: timeout,
        };
        let fault = Arc::new(Fault::default());
        let mut configured_credential = None;
        let (service, pgid) = match &endpoint.transport {
            UpstreamTransport::Stdio {
                command,
                args,
                env,
                cwd,
                inherit_env,
            } => {
                let dir = match cwd {
                    Some(cwd) => endpoint.project_dir.join(cwd),
                    None => endpoint.project_dir.clone(),
                };
                let launch = Launch {
                    command,
                    args,
                    env,
                    inherit_env: *inherit_env,
                    dir: &dir,
                };
                let process = spawn(&launch, &endpoint.log, Arc::clone(&fault))
                    .await
                    .map_err(|e| start_error(format!("cannot run `{command}`: {e}")))?;
                let pgid = process.id();
                let transport = InOrder::new(process, Arc::clone(&callers), &server);
                let opened = serve_client_with_lifecycle(handler, transport, lifecycle);
                match tokio::time::timeout(timeout, opened).await {
                    Ok(Ok(service)) => (service, pgid),
                    Ok(Err(e)) => {
                        misread_probe(&e)?;
                        let tail = log_tail(&endpoint.log).await;
                        return Err(NotOpened::Failed(start_error(format!(
                            "the MCP handshake failed: {e}{tail}"
                        ))));
                    }
                    Err(_) => return Err(timed_out().into()),
                }
            }
            UpstreamTransport::Http { url, headers } => {
                configured_credential = credential_header(headers);
                let headers = http_headers(headers).map_err(start_error)?;
                let config = StreamableHttpClientTransportConfig::with_uri(url.as_str())
                    .custom_headers(headers.clone());
                let client = crate::streamable::client_for(endpoint, url, &headers)
                    .await
                    .map_err(start_error)?;
                let transport = InOrder::new(
                    StreamableHttpClientTransport::with_client(client, config),
                    Arc::clone(&callers),
                    &server,
                );
                let opened = serve_client_with_lifecycle(handler, transport, lifecycle);
                match tokio::time::timeout(timeout, opened).await {
                    Ok(Ok(service)) => (service, None),
                    Ok(Err(e)) => {
                        misread_probe(&e)?;
                        // When the handshake after a refused probe fails too, its failure is
                        // the one that says why (the probe's is the refusal that led to it).
                        let e = match e {
                            rmcp::service::ClientInitializeError::LegacyFallbackFailed {
                                fallback,
                                ..
                            } => *fallback,
                            e => e,
                        };
                        if let Some(status) = crate::streamable::refused(&e) {
                            return Err(NotOpened::Failed(refusal(
                                &server,
                                configured_credential.as_deref(),
                                status,
                            )));
                        }
                        return Err(start_error(format!(
                            "cannot connect to {url}: {}",
                            match &e {
                                rmcp::service::ClientInitializeError::TransportError {
                                    error,
                                    ..
                                } => root_cause(error.error.as_ref()),
                                other => other.to_string(),
                            }
                        ))
                        .into());
                    }
                    Err(_) => return Err(timed_out().into()),
                }
            }
            UpstreamTransport::Sse { url, headers } => {
                let opened = tokio::time::timeout(timeout, async {
                    let sign_in = toolmux_oauth::Target::new(
                        &endpoint.project_dir,
                        &server,
                        url,
                        endpoint.oauth.as_ref(),
                    );
                    let transport = SseTransport::connect_signed(url, headers, Some(sign_in))
                        .await
                        .map_err(|e| match e {
                            crate::sse::SseError::NeedsSignIn => UpstreamError::NeedsSignIn {
                                server: server.clone(),
                            },
                            e => start_error(format!("cannot open the event stream at {url}: {e}")),
                        })?;
                    serve_client(
                        handler,
                        InOrder::new(transport, Arc::clone(&callers), &server),
                    )
                    .await
                    .map_err(|e| {
                        start_error(format!("the MCP handshake over SSE at {url} failed: {e}"))
                    })
                })
                .await;
                match opened {
                    Ok(Ok(service)) => (service, None),
                    Ok(Err(e)) => return Err(e.into()),
                    Err(_) => return Err(timed_out().into()),
                }
            }
        };
        let peer = service.peer().clone();
        let stateless = matches!(endpoint.transport, UpstreamTransport::Http { .. })
            && peer
                .peer_info()
                .is_some_and(|info| info.protocol_version >= ProtocolVersion::STANDARD_HEADERS);
        // toolmux keeps its own discovery cache; rmcp's response cache would hide a changed list.
        peer.set_response_cache_config(rmcp::service::ClientCacheConfig::disabled())
            .await;
        let identity = peer
            .peer_info()
            .map(|info| ServerIdentity {
                name: info
                    .server_info
                    .as_ref()
                    .map(|i| i.name.clone())
                    .unwrap_or_default(),
                version: info
                    .server_info
                    .as_ref()
                    .map(|i| i.version.clone())
                    .unwrap_or_default(),
                protocol_version: info.protocol_version.to_string(),
                description: ServerIdentity::description_of(&info),
            })
            .unwrap_or_default();
        let capabilities = peer
            .peer_info()
            .map(|info| info.capabilities.clone())
            .unwrap_or_default();
        Ok(Self {
            server: endpoint.server.clone(),
            peer,
            service: Mutex::new(Some(service)),
            pgid,
            identity,
            capabilities,
            callers,
            in_flight: AtomicUsize::new(0),
            tools_listed: AtomicBool::new(false),
            stateless,
            last_active: Mutex::new(Instant::now()),
            closed: AtomicBool::new(false),
            fault,
            configured_credential,
        })
    }

    /// What a refusal (`status`) of a request on this connection means for its server.
    pub(crate) fn refusal(&self, status: u16) -> UpstreamError {
        refusal(&self.server, self.configured_credential.as_deref(), status)
    }

    /// What the server said about itself.
    pub(crate) fn identity(&self) -> &ServerIdentity {
        &self.identity
    }

    /// Whether it is spoken to without a session (streamable HTTP at 2026-07-28).
    pub(crate) fn is_stateless(&self) -> bool {
        self.stateless
    }

    /// The process group of a stdio server.
    pub(crate) fn pgid(&self) -> Option<u32> {
        self.pgid
    }

    /// Whether the connection still works (the process runs, the stream is open).
    pub(crate) fn is_alive(&self) -> bool {
        !self.closed.load(Ordering::SeqCst)
            && self.fault.reason().is_none()
            && !self.peer.is_transport_closed()
    }

    /// Why toolmux gave up on the connection, when it did (see [`Fault`]).
    pub(crate) fn fault(&self) -> Option<&str> {
        self.fault.reason()
    }

    /// Calls in flight now.
    pub(crate) fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::SeqCst)
    }

    /// Marks a request in flight until the guard is dropped.
    pub(crate) fn begin(self: &Arc<Self>) -> InFlight {
        self.in_flight.fetch_add(1, Ordering::SeqCst);
        self.mark_active();
        InFlight(Arc::clone(self))
    }

    fn mark_active(&self) {
        *self
            .last_active
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Instant::now();
    }

    /// How long since a request last began or ended on it.
    pub(crate) fn idle_for(&self) -> Duration {
        self.last_active
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .elapsed()
    }

    /// What the server offers besides tools.
    pub(crate) fn capabilities(&self) -> &ServerCapabilities {
        &self.capabilities
    }

    /// Every tool the server lists, page by page, at most [`MAX_TOOL_PAGES`] pages.
    pub(crate) async fn list_tools(&self) -> Result<Listed<Tool>, UpstreamError> {
        let tools = self
            .all_pages("tools/list", |params| async move {
                let page = self.peer.list_tools(Some(params)).await?;
                let hint = CacheHint::of(page.ttl_ms, page.cache_scope);
                Ok((page.tools, page.next_cursor, hint))
            })
            .await?;
        self.tools_listed.store(true, Ordering::SeqCst);
        Ok(tools)
    }

    /// Every prompt the server lists.
    pub(crate) async fn list_prompts(&self) -> Result<Listed<Prompt>, UpstreamError> {
        self.all_pages("prompts/list", |params| async move {
            let page = self.peer.list_prompts(Some(params)).await?;
            let hint = CacheHint::of(page.ttl_ms, page.cache_scope);
            Ok((page.prompts, page.next_cursor, hint))
        })
        .await
    }

    /// Every resource the server lists.
    pub(crate) async fn list_resources(&self) -> Result<Listed<Resource>, UpstreamError> {
        self.all_pages("resources/list", |params| async move {
            let page = self.peer.list_resources(Some(params)).await?;
            let hint = CacheHint::of(page.ttl_ms, page.cache_scope);
            Ok((page.resources, page.next_cursor, hint))
        })
        .await
    }

    /// Every resource template the server lists.
    pub(crate) async fn list_resource_templates(
        &self,
    ) -> Result<Listed<ResourceTemplate>, UpstreamError> {
        self.all_pages("resources/templates/list", |params| async move {
            let page = self.peer.list_resource_templates(Some(params)).await?;
            let hint = CacheHint::of(page.ttl_ms, page.cache_scope);
            Ok((page.resource_templates, page.next_cursor, hint))
        })
        .await
    }

    /// Reads a listing page by page, at most [`MAX_TOOL_PAGES`] pages, with what its pages
    /// said about caching them together. rmcp's own helpers page on for as long as the server
    /// hands out cursors; a buggy server would hang them.
    async fn all_pages<T, F, Fut>(&self, method: &str, page: F) -> Result<Listed<T>, UpstreamError>
    where
        F: Fn(PaginatedRequestParams) -> Fut,
        Fut: Future<Output = Result<(Vec<T>, Option<String>, CacheHint), ServiceError>>,
    {
        // Not registered: a listing is toolmux's own request (discovery, a refresh), and
        // counting it as a caller would make a call's elicitation or sampling request
        // ambiguous whenever a refresh happens to run beside it. No server asks its client
        // anything while it lists.
        let mut items = Vec::new();
        let mut hint = CacheHint::default();
        let mut cursor: Option<String> = None;
        let mut seen = HashSet::new();
        for _ in 0..MAX_TOOL_PAGES {
            let params = PaginatedRequestParams::default().with_cursor(cursor.take());
            let (listed, next, page_hint) = page(params).await.map_err(|e| {
                if let Some(status) = crate::streamable::refused_request(&e) {
                    self.refusal(status)
                } else {
                    self.protocol(format!("{method} failed: {}", describe(&e)))
                }
            })?;
            items.extend(listed);
            hint = hint.and(page_hint);
            match next {
                None => return Ok(Listed { items, hint }),
                Some(next) if !seen.insert(next.clone()) => {
                    return Err(self.protocol(format!(
                        "{method} returned the cursor `{next}` twice; stopping"
                    )));
                }
                Some(next) => cursor = Some(next),
            }
        }
        Err(self.protocol(format!(
            "{method} returned more than {MAX_TOOL_PAGES} pages; stopping"
        )))
    }

    /// Calls one tool. Progress, log messages and requests the server sends meanwhile go to
    /// the `caller`'s backchannel (see [`Callers`] for whose session may see what). Dropping the future before it finishes sends `notifications/cancelled`
    /// for the request, so the server stops working on a result nobody reads.
    pub(crate) async fn call(
        &self,
        tool: &str,
        arguments: JsonObject,
        caller: Option<(Option<String>, Arc<dyn Backchannel>)>,
    ) -> Result<CallToolResult, CallFailure> {
        if self.stateless && !self.tools_listed.load(Ordering::SeqCst) {
            // Without the schema the call still works, only without its `Mcp-Param-*`
            // headers; a listing that fails is the call's to report, so it goes on.
            if let Err(e) = self.list_tools().await {
                tracing::warn!(server = %self.server, error = %e, "cannot list the tools before a call");
            }
        }
        let backchannel = caller.as_ref().map(|(_, b)| Arc::clone(b));
        let mut params = CallToolRequestParams::new(tool.to_string()).with_arguments(arguments);
        // A server of 2026-07-28 may answer "input required" (SEP-2322): its requests are
        // asked of the caller, and the call is sent again with the answers and the server's
        // state, as a new request, a bounded number of times.
        for round in 0..DEFAULT_MRTR_MAX_ROUNDS {
            let answered = self.call_round(params.clone(), caller.clone()).await;
            let answered = match answered {
                // A later round's request was not sent, but the call was: the server saw it.
                Err(CallFailure::NotSent(e)) if round > 0 => return Err(CallFailure::Sent(e)),
                other => other?,
            };
            let input = match answered {
                ServerResult::CallToolResult(result) => return Ok(result),
                ServerResult::InputRequiredResult(input) => input,
                _ => return Err(CallFailure::Sent(ServiceError::UnexpectedResponse)),
            };
            let requests = input.input_requests.unwrap_or_default();
            if requests.is_empty() && input.request_state.is_none() {
                return Err(CallFailure::Sent(ServiceError::UnexpectedResponse));
            }
            let answers = answer_input_requests(backchannel.as_deref(), requests)
                .await
                .map_err(|e| CallFailure::Sent(ServiceError::McpError(e)))?;
            params.input_responses = (!answers.is_empty()).then_some(answers);
            params.request_state = input.request_state;
        }
        Err(CallFailure::Sent(
            ServiceError::InputRequiredRoundsExceeded {
                max_rounds: DEFAULT_MRTR_MAX_ROUNDS,
            },
        ))
    }

    /// Sends one `tools/call` request and waits for its answer.
    async fn call_round(
        &self,
        params: CallToolRequestParams,
        caller: Option<(Option<String>, Arc<dyn Backchannel>)>,
    ) -> Result<ServerResult, CallFailure> {
        // Registered before it is sent, so that whatever the server sends about it finds it.
        let registered = self.callers.register(caller);
        // Sent by hand rather than with `call_tool_once`, which hides the progress token and
        // request id rmcp puts on the request: the server's progress names that token.
        let handle = self
            .peer
            .send_request_with_option(
                ClientRequest::CallToolRequest(CallToolRequest::new(params)),
                PeerRequestOptions::no_options(),
            )
            .await
            .map_err(CallFailure::NotSent)?;
        registered.sent(handle.progress_token.clone(), handle.id.clone());
        let mut abandoned = CancelIfAbandoned {
            peer: self.peer.clone(),
            id: Some(handle.id.clone()),
            fault: Arc::clone(&self.fault),
        };
        let answered = tokio::select! {
            answered = handle.await_response() => answered,
            // The connection was given up on: this call fails now, not at its time limit.
            () = self.fault.raised.cancelled() => Err(ServiceError::TransportClosed),
        };
        abandoned.id = None;
        if matches!(answered, Ok(_) | Err(ServiceError::McpError(_))) {
            self.fault.answered();
        }
        answered.map_err(CallFailure::Sent)
    }

    /// Gets one prompt, filled with `arguments`.
    pub(crate) async fn get_prompt(
        &self,
        params: GetPromptRequestParams,
    ) -> Result<GetPromptResult, ServiceError> {
        let _registered = self.callers.register(None);
        self.peer.get_prompt(params).await
    }

    /// Reads one resource.
    pub(crate) async fn read_resource(
        &self,
        params: ReadResourceRequestParams,
    ) -> Result<ReadResourceResult, ServiceError> {
        let _registered = self.callers.register(None);
        match self.peer.read_resource_once(params).await? {
            rmcp::model::ReadResourceResponse::Complete(result) => Ok(result),
            _ => Err(ServiceError::UnexpectedResponse),
        }
    }

    /// Asks the server to tell toolmux when a resource changes.
    ///
    /// Not registered as a caller: a subscription is toolmux's own (asked once per URI for
    /// every session that subscribes, and renewed by toolmux after a restart), like a listing,
    /// so counting it would make a running call's elicitation or sampling ambiguous.
    pub(crate) async fn subscribe(&self, uri: &str) -> Result<(), ServiceError> {
        self.peer
            .subscribe(SubscribeRequestParams::new(uri.to_string()))
            .await
    }

    /// Undoes [`Connection::subscribe`]; toolmux's own request too (see there).
    pub(crate) async fn unsubscribe(&self, uri: &str) -> Result<(), ServiceError> {
        self.peer
            .unsubscribe(UnsubscribeRequestParams::new(uri.to_string()))
            .await
    }

    /// Asks the server for log messages at `level` and above (`logging/setLevel`), when it
    /// offers logging. toolmux's own request, like a subscription: it speaks for the session
    /// (or, on a shared connection, for every session) and is renewed on a new connection.
    pub(crate) async fn set_level(
        &self,
        level: toolmux_core::LogLevel,
    ) -> Result<(), ServiceError> {
        if self.capabilities.logging.is_none() {
            return Ok(()); // nothing to set: the server sends no log messages
        }
        let level = crate::wire::log_level_to_wire(level);
        self.peer.set_level(SetLevelRequestParams::new(level)).await
    }

    /// Asks for completions of a prompt or resource-template argument.
    pub(crate) async fn complete(
        &self,
        params: CompleteRequestParams,
    ) -> Result<CompleteResult, ServiceError> {
        let _registered = self.callers.register(None);
        self.peer.complete(params).await
    }

    fn protocol(&self, message: String) -> UpstreamError {
        UpstreamError::protocol(&self.server, &message)
    }

    /// Closes the connection cleanly: for a stdio server, stdin is closed, then SIGTERM is sent
    /// to its process group, then SIGKILL, each after a grace period; for HTTP, the session is
    /// ended. Safe to call twice.
    pub(crate) async fn close(&self) {
        let service = self
            .service
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        let Some(service) = service else { return };
        let limit = SHUTDOWN_GRACE * 3;
        if tokio::time::timeout(limit, service.cancel()).await.is_err() {
            tracing::warn!(server = %self.server, "the server did not stop in time; killing it");
            self.kill();
        }
        self.closed.store(true, Ordering::SeqCst);
    }

    /// Kills a stdio server's whole process group at once, without waiting.
    fn kill(&self) {
        if let Some(pgid) = self.pgid {
            toolmux_scripts::child::signal_group(pgid, toolmux_scripts::child::Signal::Kill);
        }
    }
}

impl Drop for Connection {
    /// A connection dropped without [`Connection::close`] (toolmux is exiting without a clean
    /// shutdown) must still leave no process behind. While the service loop runs, the group's
    /// leader has not been reaped, so its id cannot have been reused by another group.
    fn drop(&mut self) {
        let running = self
            .service
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
            .is_some();
        if running && !self.peer.is_transport_closed() {
            self.kill();
        }
    }
}

/// Starts a stdio server in its own process group ([`StdioProcess`]), with stderr appended
/// to its log.
async fn spawn(launch: &Launch<'_>, log: &Path, fault: Arc<Fault>) -> io::Result<StdioProcess> {
    if !launch.dir.is_dir() {
        return Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!(
                "the working directory `{}` does not exist",
                launch.dir.display()
            ),
        ));
    }
    let (process, stderr) = StdioProcess::spawn(launch, fault)?;
    let mut file = open_log(log).await?;
    let header = format!(
        "--- {} started pid {}: {} {}\n",
        chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        process.id().unwrap_or_default(),
        launch.command,
        launch.args.join(" ")
    );
    file.write_all(header.as_bytes()).await?;
    if let Some(stderr) = stderr {
        let log = log.to_path_buf();
        tokio::spawn(async move {
            if let Err(e) = copy_to_log(stderr, file, &log).await {
                tracing::warn!(log = %log.display(), error = %e, "stopped copying a server's stderr to its log");
            }
        });
    }
    Ok(process)
}

/// Appends a server's stderr to its log until the server closes it, rotating the log whenever
/// it outgrows [`MAX_LOG_BYTES`], so that a chatty server that runs for days cannot fill the
/// disk.
async fn copy_to_log(
    mut stderr: impl tokio::io::AsyncRead + Unpin,
    mut file: tokio::fs::File,
    log: &Path,
) -> io::Result<()> {
    use tokio::io::AsyncReadExt;
    let mut written = file.metadata().await?.len();
    let mut buffer = vec![0u8; 8192];
    loop {
        let read = stderr.read(&mut buffer).await?;
        if read == 0 {
            return file.flush().await;
        }
        if written > MAX_LOG_BYTES {
            file.flush().await?;
            file = open_log(log).await?;
            written = file.metadata().await?.len();
        }
        file.write_all(&buffer[..read]).await?;
        written += read as u64;
    }
}

/// Opens a server's log for appending, rotating it first when it has grown too big.
async fn open_log(path: &Path) -> io::Result<tokio::fs::File> {
    if let Some(dir) = path.parent() {
        tokio::fs::create_dir_all(dir).await?;
    }
    if let Ok(meta) = tokio::fs::metadata(path).await
        && meta.len() > MAX_LOG_BYTES
    {
        let rotated = path.with_extension("log.1");
        if let Err(e) = tokio::fs::rename(path, &rotated).await {
            // Appending on is better than losing the server's output: say so and go on.
            tracing::warn!(log = %path.display(), error = %e, "cannot rotate a server's log");
        }
    }
    tokio::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .await
}

/// The last lines of a server's log, for an error message about a failed start.
async fn log_tail(path: &Path) -> String {
    // The stderr copier may still be writing the last lines of a process that just died.
    tokio::time::sleep(Duration::from_millis(50)).await;
    let Ok(text) = tokio::fs::read_to_string(path).await else {
        return String::new();
    };
    let start = text.rfind("\n--- ").map_or(0, |i| i + 1);
    let lines: Vec<&str> = text[start..]
        .lines()
        .skip(1)
        .filter(|l| !l.trim().is_empty())
        .collect();
    if lines.is_empty() {
        return String::new();
    }
    let tail = lines[lines.len().saturating_sub(3)..].join(" | ");
    format!("; its stderr ends with: {tail}")
}

/// A refusal of `server` with `status`: of the credential its configuration sends in the header
/// `configured_credential`, or else for want of sign-in.
fn refusal(server: &str, configured_credential: Option<&str>, status: u16) -> UpstreamError {
    let server = server.to_string();
    match configured_credential {
        Some(header) => UpstreamError::CredentialRejected {
            server,
            status,
            header: header.to_string(),
        },
        None => UpstreamError::NeedsSignIn { server },
    }
}

/// The first configured header that holds a credential: `Authorization`, or any other whose
/// name or value says it holds a secret (`X-API-Key: ${KEY}`, `Private-Token`, a value with a
/// well-known key's prefix), by the one rule of what is secret ([`toolmux_core::is_secret`]).
/// A server that refuses a request carrying one refuses that credential: signing in would not
/// help.
fn credential_header(headers: &BTreeMap<String, String>) -> Option<String> {
    headers
        .iter()
        .find(|(name, value)| {
            name.eq_ignore_ascii_case(http::header::AUTHORIZATION.as_str())
                || toolmux_core::is_secret(name, std::ffi::OsStr::new(value.as_str()))
        })
        .map(|(name, _)| name.clone())
}

/// Configured headers in the form rmcp takes.
fn http_headers(
    headers: &BTreeMap<String, String>,
) -> Result<std::collections::HashMap<http::HeaderName, http::HeaderValue>, String> {
    let map = header_map(headers).map_err(|e| e.to_string())?;
    Ok(map.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
}

/// The innermost causes of an error, which say what actually happened ("tcp connect error:
/// Connection refused") where the outer layers only name rmcp's types.
fn root_cause(error: &(dyn std::error::Error + Send + Sync + 'static)) -> String {
    let mut chain = vec![error.to_string()];
    // rmcp wraps the HTTP client's error without naming it as the source; unwrap it by hand.
    let mut source: Option<&(dyn std::error::Error + 'static)> = match error
        .downcast_ref::<rmcp::transport::streamable_http_client::StreamableHttpError<reqwest::Error>>()
    {
        Some(rmcp::transport::streamable_http_client::StreamableHttpError::Client(inner)) => {
            Some(inner)
        }
        _ => error.source(),
    };
    while let Some(e) = source {
        let text = e.to_string();
        if !chain.contains(&text) {
            chain.push(text);
        }
        source = e.source();
    }
    let keep = chain.len().min(2);
    chain[chain.len() - keep..].join(": ")
}

/// A service error in words a person can act on (what the server said in it through
/// [`crate::error::server_text`]: a log line takes it as it is).
pub(crate) fn describe(error: &ServiceError) -> String {
    let words = match error {
        ServiceError::TransportClosed => "the connection closed (the server exited)".to_string(),
        ServiceError::UnexpectedResponse => {
            "the server answered with something other than a result (toolmux does not support \
             tasks from upstream servers yet)"
                .to_string()
        }
        ServiceError::McpError(e) => {
            format!("the server answered with error {}: {}", e.code.0, e.message)
        }
        other => other.to_string(),
    };
    crate::error::server_text(&words)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_long_stderr_is_rotated_and_never_grows_past_the_limit() {
        let dir = tempfile::tempdir().expect("tempdir");
        let log = dir.path().join("servers/chatty.log");
        let file = open_log(&log).await.expect("open");
        let output = vec![b'x'; (MAX_LOG_BYTES as usize) * 5 / 2];
        copy_to_log(output.as_slice(), file, &log)
            .await
            .expect("copied");
        let current = std::fs::metadata(&log).expect("log").len();
        let rotated = std::fs::metadata(log.with_extension("log.1"))
            .expect("rotated log")
            .len();
        assert!(current > 0 && current <= MAX_LOG_BYTES + 8192, "{current}");
        assert!(rotated > MAX_LOG_BYTES, "{rotated}");
    }
}
