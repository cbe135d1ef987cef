//! One live connection to an upstream server: how it is opened for each transport, the calls
//! toolmux makes on it, and how it is closed. A stdio server runs in its own process group, so
//! that stopping it stops everything it started (an `npx` wrapper and the server under it).

use std::collections::{BTreeMap, HashSet};
use std::io;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use process_wrap::tokio::{CommandWrap, KillOnDrop, ProcessGroup};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ClientCapabilities, ClientConfig,
    Implementation, JsonObject, PaginatedRequestParams, ProtocolVersion, Tool,
};
use rmcp::service::{NotificationContext, RunningService, ServiceError, serve_client};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, Peer, RoleClient};
use tokio::io::AsyncWriteExt;
use toolmux_config::McpTransport;

use crate::cache::ServerIdentity;
use crate::error::UpstreamError;
use crate::sse::{SseTransport, header_map};
use crate::streamable::OrderedClient;

/// How long a stdio server gets to exit after its stdin is closed, and again after SIGTERM,
/// before it is killed. (rmcp's own shutdown sequence uses the same three seconds.)
const SHUTDOWN_GRACE: Duration = Duration::from_secs(3);
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
    pub transport: McpTransport,
    /// The project directory, which a relative `cwd` is resolved against.
    pub project_dir: PathBuf,
    /// Where its stderr goes.
    pub log: PathBuf,
    /// How long start-up may take.
    pub startup_timeout: Duration,
}

/// Reacts to what a server tells toolmux on its own.
pub(crate) struct Handler {
    server: String,
    on_tools_changed: Arc<dyn Fn() + Send + Sync>,
}

impl Handler {
    pub(crate) fn new(server: &str, on_tools_changed: Arc<dyn Fn() + Send + Sync>) -> Self {
        Self {
            server: server.to_string(),
            on_tools_changed,
        }
    }
}

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        // toolmux opens every session with the `initialize` handshake, so it offers the newest
        // version that has one (rmcp's default, 2026-07-28, replaced it with `server/discover`).
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("toolmux", env!("CARGO_PKG_VERSION")),
        )
        .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        tracing::info!(server = %self.server, "the server says its tools changed");
        (self.on_tools_changed)();
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
    in_flight: AtomicUsize,
    closed: AtomicBool,
}

/// Counts a call as in flight while it lives.
pub(crate) struct InFlight<'a>(&'a AtomicUsize);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Connection {
    /// Opens a connection and completes the MCP handshake within the start-up limit.
    pub(crate) async fn open(endpoint: &Endpoint, handler: Handler) -> Result<Self, UpstreamError> {
        let server = endpoint.server.clone();
        let start_error = |message: String| UpstreamError::Start {
            server: server.clone(),
            message,
        };
        let timeout = endpoint.startup_timeout;
        let timed_out = || UpstreamError::Timeout {
            server: server.clone(),
            what: "start-up (connection and MCP handshake)",
            after: timeout,
        };
        let (service, pgid) = match &endpoint.transport {
            McpTransport::Stdio {
                command,
                args,
                env,
                cwd,
            } => {
                let dir = match cwd {
                    Some(cwd) => endpoint.project_dir.join(cwd),
                    None => endpoint.project_dir.clone(),
                };
                let process = spawn(command, args, env, &dir, &endpoint.log)
                    .await
                    .map_err(|e| start_error(format!("cannot run `{command}`: {e}")))?;
                let pgid = process.id();
                match tokio::time::timeout(timeout, serve_client(handler, process)).await {
                    Ok(Ok(service)) => (service, pgid),
                    Ok(Err(e)) => {
                        let tail = log_tail(&endpoint.log).await;
                        return Err(start_error(format!("the MCP handshake failed: {e}{tail}")));
                    }
                    Err(_) => return Err(timed_out()),
                }
            }
            McpTransport::Http { url, headers } => {
                let headers = http_headers(headers).map_err(start_error)?;
                let config = StreamableHttpClientTransportConfig::with_uri(url.as_str())
                    .custom_headers(headers);
                let client = OrderedClient::new()
                    .map_err(|e| start_error(format!("cannot set up the HTTP client: {e}")))?;
                let transport = StreamableHttpClientTransport::with_client(client, config);
                match tokio::time::timeout(timeout, serve_client(handler, transport)).await {
                    Ok(Ok(service)) => (service, None),
                    Ok(Err(e)) => {
                        return Err(start_error(format!(
                            "cannot connect to {url}: {}",
                            match &e {
                                rmcp::service::ClientInitializeError::TransportError {
                                    error,
                                    ..
                                } => root_cause(error.error.as_ref()),
                                other => other.to_string(),
                            }
                        )));
                    }
                    Err(_) => return Err(timed_out()),
                }
            }
            McpTransport::Sse { url, headers } => {
                let opened = tokio::time::timeout(timeout, async {
                    let transport = SseTransport::connect(url, headers)
                        .await
                        .map_err(|e| format!("cannot open the event stream at {url}: {e}"))?;
                    serve_client(handler, transport)
                        .await
                        .map_err(|e| format!("the MCP handshake over SSE at {url} failed: {e}"))
                })
                .await;
                match opened {
                    Ok(Ok(service)) => (service, None),
                    Ok(Err(message)) => return Err(start_error(message)),
                    Err(_) => return Err(timed_out()),
                }
            }
        };
        let peer = service.peer().clone();
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
            })
            .unwrap_or_default();
        Ok(Self {
            server: endpoint.server.clone(),
            peer,
            service: Mutex::new(Some(service)),
            pgid,
            identity,
            in_flight: AtomicUsize::new(0),
            closed: AtomicBool::new(false),
        })
    }

    /// What the server said about itself.
    pub(crate) fn identity(&self) -> &ServerIdentity {
        &self.identity
    }

    /// The process group of a stdio server.
    pub(crate) fn pgid(&self) -> Option<u32> {
        self.pgid
    }

    /// Whether the connection still works (the process runs, the stream is open).
    pub(crate) fn is_alive(&self) -> bool {
        !self.closed.load(Ordering::SeqCst) && !self.peer.is_transport_closed()
    }

    /// Calls in flight now.
    pub(crate) fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::SeqCst)
    }

    /// Marks a call in flight until the guard is dropped.
    pub(crate) fn begin(&self) -> InFlight<'_> {
        self.in_flight.fetch_add(1, Ordering::SeqCst);
        InFlight(&self.in_flight)
    }

    /// Every tool the server lists, page by page, at most [`MAX_TOOL_PAGES`] pages.
    pub(crate) async fn list_tools(&self) -> Result<Vec<Tool>, UpstreamError> {
        let mut tools = Vec::new();
        let mut cursor: Option<String> = None;
        let mut seen = HashSet::new();
        for _ in 0..MAX_TOOL_PAGES {
            let params = PaginatedRequestParams::default().with_cursor(cursor.take());
            let page = self
                .peer
                .list_tools(Some(params))
                .await
                .map_err(|e| self.protocol(format!("tools/list failed: {}", describe(&e))))?;
            tools.extend(page.tools);
            match page.next_cursor {
                None => return Ok(tools),
                Some(next) if !seen.insert(next.clone()) => {
                    return Err(self.protocol(format!(
                        "tools/list returned the cursor `{next}` twice; stopping"
                    )));
                }
                Some(next) => cursor = Some(next),
            }
        }
        Err(self.protocol(format!(
            "tools/list returned more than {MAX_TOOL_PAGES} pages; stopping"
        )))
    }

    /// Calls one tool. Dropping the future before it finishes sends
    /// `notifications/cancelled` for the request (rmcp does this for abandoned requests).
    pub(crate) async fn call(
        &self,
        tool: &str,
        arguments: JsonObject,
    ) -> Result<CallToolResult, ServiceError> {
        let params = CallToolRequestParams::new(tool.to_string()).with_arguments(arguments);
        match self.peer.call_tool_once(params).await? {
            CallToolResponse::Complete(result) => Ok(result),
            _ => Err(ServiceError::UnexpectedResponse),
        }
    }

    fn protocol(&self, message: String) -> UpstreamError {
        UpstreamError::Protocol {
            server: self.server.clone(),
            message,
        }
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
        #[cfg(unix)]
        if let Some(pgid) = self.pgid.and_then(|p| i32::try_from(p).ok()) {
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(pgid),
                nix::sys::signal::Signal::SIGKILL,
            );
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

/// Starts a stdio server in its own process group, with stderr appended to its log.
async fn spawn(
    command: &str,
    args: &[String],
    env: &BTreeMap<String, String>,
    dir: &Path,
    log: &Path,
) -> io::Result<TokioChildProcess> {
    if !dir.is_dir() {
        return Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!("the working directory `{}` does not exist", dir.display()),
        ));
    }
    let mut cmd = tokio::process::Command::new(command);
    cmd.args(args).envs(env).current_dir(dir);
    let mut wrapped = CommandWrap::from(cmd);
    wrapped.wrap(ProcessGroup::leader()).wrap(KillOnDrop);
    let (process, stderr) = TokioChildProcess::builder(wrapped)
        .stderr(Stdio::piped())
        .spawn()?;
    let mut file = open_log(log).await?;
    let header = format!(
        "--- {} started pid {}: {command} {}\n",
        chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        process.id().unwrap_or_default(),
        args.join(" ")
    );
    file.write_all(header.as_bytes()).await?;
    if let Some(mut stderr) = stderr {
        tokio::spawn(async move {
            let _ = tokio::io::copy(&mut stderr, &mut file).await;
            let _ = file.flush().await;
        });
    }
    Ok(process)
}

/// Opens a server's log for appending, rotating it first when it has grown too big.
async fn open_log(path: &Path) -> io::Result<tokio::fs::File> {
    if let Some(dir) = path.parent() {
        tokio::fs::create_dir_all(dir).await?;
    }
    if let Ok(meta) = tokio::fs::metadata(path).await
        && meta.len() > MAX_LOG_BYTES
    {
        let _ = tokio::fs::rename(path, path.with_extension("log.1")).await;
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

/// A service error in words a person can act on.
pub(crate) fn describe(error: &ServiceError) -> String {
    match error {
        ServiceError::TransportClosed => "the connection closed (the server exited)".to_string(),
        ServiceError::UnexpectedResponse => {
            "the server answered with something other than a result (toolmux does not support \
             input requests or tasks from upstream servers yet)"
                .to_string()
        }
        ServiceError::McpError(e) => {
            format!("the server answered with error {}: {}", e.code.0, e.message)
        }
        other => other.to_string(),
    }
}
