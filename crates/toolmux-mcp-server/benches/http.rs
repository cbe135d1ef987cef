//! Calls per second over streamable HTTP with 32 concurrent clients, each with its own MCP
//! session, calling the built-in `file_read` (target ≥ 5,000 calls/s, zero errors), with p50 and
//! p99 latency at that load. Then the session table: the server's resident memory (`VmRSS`)
//! before, with 1,000 idle sessions (initialised, then left without a `DELETE`), and after they
//! expired (a short idle time, given to that server), twice, so that a second round shows
//! whether memory stays flat.
//!
//! The bench binary is both sides: run normally it is the load generator, and it starts itself
//! again with `TOOLMUX_BENCH_HTTP_SERVER=<project dir>` as the server (on a free loopback port,
//! which it prints on stdout), so that client and server are separate processes as in real use.
//! Both share this machine's cores. The load is bounded: a fixed number of calls per client.
//!
//! With the argument `eras`, only the two eras of MCP side by side instead: calls per second of
//! a 2026-07-28 `tools/call` (stateless: no session, `_meta` and the revision's headers on
//! every request) against a 2025-11-25 one in an MCP session, at 1 and 32 concurrent clients
//! (target: stateless no slower).
//!
//! Run: `cargo bench -p toolmux-mcp-server --bench http` (`-- eras` for the eras alone)

mod common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use axum::serve::ListenerExt;
use bytes::Bytes;
use futures::StreamExt;
use http_body_util::{BodyExt, Full};
use hyper::Request;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use serde_json::{Value, json};
use toolmux_mcp_server::{CancellationToken, ServeOptions, http_router};

const SERVER_ENV: &str = "TOOLMUX_BENCH_HTTP_SERVER";
/// The idle time of the session-table server's sessions, in milliseconds.
const IDLE_ENV: &str = "TOOLMUX_BENCH_HTTP_SESSION_IDLE_MS";
/// Long enough to open 1,000 sessions and measure before the first expires.
const SESSION_IDLE: Duration = Duration::from_secs(10);
const IDLE_SESSIONS: usize = 1_000;
const ROUNDS: usize = 3;
const CLIENTS: usize = 32;
const WARMUP_CALLS: usize = 50;
const CALLS_PER_CLIENT: usize = 1_500;
const PROTOCOL: &str = "2025-06-18";
/// The handshake era's newest revision, the one the eras are compared at.
const SESSION_ERA: &str = "2025-11-25";
const STATELESS_ERA: &str = "2026-07-28";
/// Calls in each round of each era at each concurrency, split between the clients.
const ERA_CALLS: usize = 8_000;
const ERA_ROUNDS: usize = 5;

fn main() {
    if let Some(root) = std::env::var_os(SERVER_ENV) {
        serve(PathBuf::from(root));
        return;
    }
    let project = tempfile::tempdir().expect("a temporary project");
    common::write_project(project.path());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a runtime");

    let server = BenchServer::start(project.path(), None);
    if std::env::args().any(|a| a == "eras") {
        runtime.block_on(eras(server.url.clone()));
        server.stop();
        return;
    }
    runtime.block_on(load(server.url.clone()));
    server.stop();

    // A server of its own, so that the load's allocations do not blur the table's.
    let mut server = BenchServer::start(project.path(), Some(SESSION_IDLE));
    runtime.block_on(session_table(&mut server));
    server.stop();
}

/// The bench binary started again as the server, in a process of its own.
struct BenchServer {
    child: Child,
    url: String,
    /// The server's live session count, as it last reported it.
    sessions: Arc<AtomicUsize>,
    /// How many `trim` requests the server has answered.
    trimmed: Arc<AtomicUsize>,
}

impl BenchServer {
    fn start(project: &Path, idle: Option<Duration>) -> Self {
        let exe = std::env::current_exe().expect("the bench binary's path");
        let mut command = Command::new(exe);
        command.env(SERVER_ENV, project);
        if let Some(idle) = idle {
            command.env(IDLE_ENV, idle.as_millis().to_string());
        }
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start the bench server");
        let mut stdout = BufReader::new(child.stdout.take().expect("piped stdout"));
        let mut port_line = String::new();
        stdout
            .read_line(&mut port_line)
            .expect("read the server's port");
        let url = format!("http://127.0.0.1:{}/mcp", port_line.trim());
        // Then the server reports its live sessions, one `sessions N` line per change.
        let sessions = Arc::new(AtomicUsize::new(0));
        let reported = Arc::clone(&sessions);
        let trimmed = Arc::new(AtomicUsize::new(0));
        let trims = Arc::clone(&trimmed);
        std::thread::spawn(move || {
            for line in stdout.lines().map_while(Result::ok) {
                if let Some(n) = line.strip_prefix("sessions ").and_then(|n| n.parse().ok()) {
                    reported.store(n, Ordering::SeqCst);
                } else if line == "trimmed" {
                    trims.fetch_add(1, Ordering::SeqCst);
                }
            }
        });
        Self {
            child,
            url,
            sessions,
            trimmed,
        }
    }

    /// Asks the server to hand its free heap memory back, and waits until it has.
    async fn trim(&mut self) {
        use std::io::Write;
        let before = self.trimmed.load(Ordering::SeqCst);
        let stdin = self.child.stdin.as_mut().expect("the server's stdin");
        writeln!(stdin, "trim").expect("ask the server to trim");
        stdin.flush().expect("flush");
        while self.trimmed.load(Ordering::SeqCst) == before {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// The server's resident memory, from `/proc/<pid>/status`, in KiB.
    fn rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .expect("read the server's /proc status");
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("a VmRSS line")
    }

    fn live(&self) -> usize {
        self.sessions.load(Ordering::SeqCst)
    }

    /// Waits until the server reports `count` live sessions, at most `limit`.
    async fn wait_for_sessions(&self, count: usize, limit: Duration) -> Duration {
        let started = Instant::now();
        while self.live() != count {
            assert!(
                started.elapsed() < limit,
                "the server still has {} sessions, not {count}, after {limit:?}",
                self.live()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        started.elapsed()
    }

    fn stop(mut self) {
        drop(self.child.stdin.take()); // ends the server
        let status = self.child.wait().expect("wait for the server");
        assert!(status.success(), "the bench server failed: {status}");
    }
}

/// The server process: serves until its stdin closes.
fn serve(root: PathBuf) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async move {
        let hub = common::hub(&root, 0);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind a loopback port");
        println!("{}", listener.local_addr().expect("address").port());
        // As `toolmux serve` does: an SSE response goes out in several small writes, which
        // Nagle's algorithm would hold for the peer's delayed ACK (40 ms).
        let listener = listener.tap_io(|tcp| {
            let _ = tcp.set_nodelay(true);
        });
        let shutdown = CancellationToken::new();
        let idle = std::env::var(IDLE_ENV)
            .ok()
            .and_then(|ms| ms.parse().ok())
            .map(Duration::from_millis);
        let options = ServeOptions {
            session_idle_timeout: idle,
            ..ServeOptions::default()
        };
        let live = options.live_sessions.clone();
        tokio::spawn(async move {
            let mut shown = None;
            loop {
                let now = live.count();
                if shown != Some(now) {
                    println!("sessions {now}");
                    shown = Some(now);
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        });
        let router = http_router(hub, options, shutdown.clone());
        let stop = shutdown.clone();
        tokio::spawn(async move {
            // Stdin closing is the signal to stop; a `trim` line before it, to hand freed memory
            // back (see `trim_heap`).
            let mut lines =
                tokio::io::AsyncBufReadExt::lines(tokio::io::BufReader::new(tokio::io::stdin()));
            while let Ok(Some(line)) = lines.next_line().await {
                if line == "trim" {
                    trim_heap();
                    println!("trimmed");
                }
            }
            stop.cancel();
        });
        axum::serve(listener, router)
            .with_graceful_shutdown(async move { shutdown.cancelled().await })
            .await
            .expect("serve");
    });
}

type HttpClient = Client<HttpConnector, Full<Bytes>>;

fn http_client(clients: usize) -> HttpClient {
    let mut connector = HttpConnector::new();
    connector.set_nodelay(true);
    Client::builder(TokioExecutor::new())
        .pool_max_idle_per_host(clients * 2)
        .build(connector)
}

/// Both eras at 1 and [`CLIENTS`] concurrent clients, [`ERA_ROUNDS`] rounds each, alternating,
/// so that a busy moment of a shared machine weighs on both; each era's median round is its
/// figure.
async fn eras(url: String) {
    for clients in [1, CLIENTS] {
        let mut rates = [Vec::new(), Vec::new()];
        for round in 1..=ERA_ROUNDS {
            for (era, rates) in [SESSION_ERA, STATELESS_ERA].into_iter().zip(&mut rates) {
                let (rate, mut latencies) = era_round(&url, era, clients).await;
                println!(
                    "  round {round}, {era} ({}), {clients} concurrent clients: {rate:.0} calls/s; latency {}",
                    if era == STATELESS_ERA {
                        "stateless"
                    } else {
                        "in a session"
                    },
                    common::summary(&mut latencies),
                );
                rates.push(rate);
            }
        }
        let [session, stateless] = rates.map(|mut rates| {
            rates.sort_by(f64::total_cmp);
            rates[rates.len() / 2]
        });
        println!(
            "tools/call file_read over HTTP, {clients} concurrent clients, median of {ERA_ROUNDS} rounds of {ERA_CALLS} calls: {SESSION_ERA} in a session {session:.0} calls/s, {STATELESS_ERA} stateless {stateless:.0} calls/s = {:.2}× — {} (stateless no slower, within 5%)",
            stateless / session,
            common::verdict(stateless >= session * 0.95)
        );
    }
}

/// One round of [`ERA_CALLS`] calls in `era`, split between `clients` concurrent clients, each
/// warmed up before the clock starts: the calls per second and every call's latency.
async fn era_round(url: &str, era: &'static str, clients: usize) -> (f64, Vec<Duration>) {
    let http = http_client(clients);
    let mut sessions = Vec::with_capacity(clients);
    for _ in 0..clients {
        let mut session = Session::open_in(http.clone(), url.to_string(), era).await;
        for _ in 0..WARMUP_CALLS {
            session.call().await.expect("warm-up call");
        }
        sessions.push(session);
    }
    let per_client = ERA_CALLS / clients;
    let started = Instant::now();
    let tasks: Vec<_> = sessions
        .into_iter()
        .map(|mut session| {
            tokio::spawn(async move {
                let mut latencies = Vec::with_capacity(per_client);
                for _ in 0..per_client {
                    let t = Instant::now();
                    session.call().await.expect("a call");
                    latencies.push(t.elapsed());
                }
                latencies
            })
        })
        .collect();
    let mut latencies = Vec::with_capacity(ERA_CALLS);
    for task in tasks {
        latencies.extend(task.await.expect("a client task"));
    }
    let rate = latencies.len() as f64 / started.elapsed().as_secs_f64();
    (rate, latencies)
}

async fn load(url: String) {
    let http = http_client(CLIENTS);

    let mut sessions = Vec::with_capacity(CLIENTS);
    for _ in 0..CLIENTS {
        sessions.push(Session::open(http.clone(), url.clone()).await);
    }
    for session in &mut sessions {
        for _ in 0..WARMUP_CALLS {
            session.call().await.expect("warm-up call");
        }
    }

    let started = Instant::now();
    let tasks: Vec<_> = sessions
        .into_iter()
        .map(|mut session| {
            tokio::spawn(async move {
                let mut latencies = Vec::with_capacity(CALLS_PER_CLIENT);
                let mut errors = Vec::new();
                for _ in 0..CALLS_PER_CLIENT {
                    let t = Instant::now();
                    match session.call().await {
                        Ok(()) => latencies.push(t.elapsed()),
                        Err(e) => errors.push(e),
                    }
                }
                (latencies, errors)
            })
        })
        .collect();
    let mut latencies = Vec::with_capacity(CLIENTS * CALLS_PER_CLIENT);
    let mut errors = Vec::new();
    for task in tasks {
        let (l, e) = task.await.expect("a client task");
        latencies.extend(l);
        errors.extend(e);
    }
    let elapsed = started.elapsed();
    let rate = latencies.len() as f64 / elapsed.as_secs_f64();
    println!(
        "tools/call file_read over streamable HTTP, {CLIENTS} concurrent sessions: {} calls in {:.2?} = {rate:.0} calls/s, {} errors; latency {} — {} (≥ 5,000/s, no errors)",
        latencies.len(),
        elapsed,
        errors.len(),
        common::summary(&mut latencies),
        common::verdict(rate >= 5_000.0 && errors.is_empty())
    );
    if let Some(first) = errors.first() {
        println!("first error: {first}");
    }
}

/// The session table's memory: the server's RSS before, with [`IDLE_SESSIONS`] idle sessions
/// open, and after they expired, for [`ROUNDS`] rounds.
async fn session_table(server: &mut BenchServer) {
    let http: HttpClient = Client::builder(TokioExecutor::new())
        .pool_max_idle_per_host(CLIENTS)
        .build(HttpConnector::new());
    // One session opened, used and closed first, so that what is built once per server (the
    // catalog's MCP view, the sweeper) is not counted as the table's.
    let mut first = Session::open(http.clone(), server.url.clone()).await;
    first.call().await.expect("a first call");
    first.delete().await;
    server.wait_for_sessions(0, Duration::from_secs(10)).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    server.trim().await;
    let before = server.rss_kib();
    println!(
        "session table, {IDLE_SESSIONS} idle MCP sessions over HTTP, abandoned without DELETE \
         (idle time {SESSION_IDLE:?}): server RSS before {} (heap trimmed)",
        mib(before)
    );
    for round in 1..=ROUNDS {
        let started = Instant::now();
        let mut sessions: Vec<Session> = futures::stream::iter(0..IDLE_SESSIONS)
            .map(|_| Session::open(http.clone(), server.url.clone()))
            .buffer_unordered(CLIENTS)
            .collect()
            .await;
        let opened = started.elapsed();
        server
            .wait_for_sessions(IDLE_SESSIONS, Duration::from_secs(5))
            .await;
        let open = server.rss_kib();
        assert!(
            started.elapsed() < SESSION_IDLE,
            "opening took longer than the idle time; the figure would count expired sessions"
        );
        let expired_in = server
            .wait_for_sessions(0, SESSION_IDLE + Duration::from_secs(30))
            .await;
        tokio::time::sleep(Duration::from_millis(500)).await;
        let after = server.rss_kib();
        server.trim().await;
        let trimmed = server.rss_kib();
        // A client that comes back is told its session is gone.
        let gone = sessions[0].call().await;
        assert!(
            gone.as_ref().is_err_and(|e| e.starts_with("HTTP 404")),
            "an expired session answered {gone:?}"
        );
        println!(
            "  round {round}: opened in {opened:.2?}, RSS with them open {} (+{:.1} KiB per \
             session); all expired {expired_in:.1?} later: RSS {}, heap trimmed {} ({:+.1} MiB \
             against before)",
            mib(open),
            (open as f64 - before as f64) / IDLE_SESSIONS as f64,
            mib(after),
            mib(trimmed),
            (trimmed as f64 - before as f64) / 1024.0,
        );
    }
}

/// Hands the memory glibc's allocator keeps free back to the system (`malloc_trim(0)`), so
/// that the resident size shows what the heap still holds: freed memory that is only kept for
/// reuse is not a leak, and RSS alone cannot tell the two apart.
#[allow(unsafe_code)] // a call into the C library, only in this benchmark
fn trim_heap() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        unsafe extern "C" {
            fn malloc_trim(pad: usize) -> std::ffi::c_int;
        }
        // SAFETY: `malloc_trim` only walks glibc's own heap under its own locks.
        unsafe {
            malloc_trim(0);
        }
    }
}

fn mib(kib: u64) -> String {
    format!("{:.1} MiB", kib as f64 / 1024.0)
}

/// One MCP client over HTTP: a session of the handshake era, or a 2026-07-28 client, which
/// has none.
struct Session {
    http: HttpClient,
    url: String,
    /// The session's id; empty for a 2026-07-28 client.
    id: String,
    next: u64,
    protocol: &'static str,
}

impl Session {
    async fn open(http: HttpClient, url: String) -> Self {
        Self::open_in(http, url, PROTOCOL).await
    }

    /// A client of `protocol`: a session opened with `initialize` up to 2025-11-25; nothing to
    /// open for 2026-07-28.
    async fn open_in(http: HttpClient, url: String, protocol: &'static str) -> Self {
        let mut session = Self {
            http,
            url,
            id: String::new(),
            next: 0,
            protocol,
        };
        if protocol == STATELESS_ERA {
            return session;
        }
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": protocol, "capabilities": {},
            "clientInfo": {"name": "bench", "version": "0"}}});
        let (id, body) = session.post(&init).await.expect("initialize");
        session.id = id.expect("a session id");
        assert!(body.contains("\"result\""), "initialize failed: {body}");
        session
            .post(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await
            .expect("initialized");
        session
    }

    async fn call(&mut self) -> Result<(), String> {
        self.next += 1;
        let mut request = json!({"jsonrpc": "2.0", "id": self.next, "method": "tools/call", "params": {
            "name": "file_read", "arguments": {"path": common::READ_FILE, "limit": 10}}});
        if self.protocol == STATELESS_ERA {
            request["params"]["_meta"] = json!({
                "io.modelcontextprotocol/protocolVersion": STATELESS_ERA,
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "0"}
            });
        }
        let (_, body) = self.post(&request).await?;
        // An SSE stream in a session; one JSON body, or one event, statelessly.
        let message = body
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .chain(std::iter::once(body.as_str()))
            .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
            .find(|m| m["id"] == json!(self.next))
            .ok_or_else(|| format!("no response in {body:?}"))?;
        if message["result"]["isError"] == json!(false) {
            Ok(())
        } else {
            Err(message.to_string())
        }
    }

    /// Ends the session as a client should.
    async fn delete(self) {
        let request = Request::delete(&self.url)
            .header("mcp-session-id", &self.id)
            .header("mcp-protocol-version", self.protocol)
            .body(Full::new(Bytes::new()))
            .expect("a DELETE request");
        let response = self
            .http
            .request(request)
            .await
            .expect("DELETE the session");
        assert!(
            response.status().is_success(),
            "DELETE: {}",
            response.status()
        );
    }

    /// POSTs one message; returns the session id header and the whole body.
    async fn post(&self, message: &Value) -> Result<(Option<String>, String), String> {
        let mut request = Request::post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", self.protocol);
        if !self.id.is_empty() {
            request = request.header("mcp-session-id", &self.id);
        }
        if self.protocol == STATELESS_ERA
            && let Some(method) = message["method"].as_str()
        {
            // The revision's headers repeat the body's method and name.
            request = request.header("mcp-method", method);
            if let Some(name) = message["params"]["name"].as_str() {
                request = request.header("mcp-name", name);
            }
        }
        let request = request
            .body(Full::new(Bytes::from(message.to_string())))
            .map_err(|e| e.to_string())?;
        let response = tokio::time::timeout(Duration::from_secs(30), self.http.request(request))
            .await
            .map_err(|_| "timed out".to_string())?
            .map_err(|e| e.to_string())?;
        let status = response.status();
        let id = response
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let body = response
            .into_body()
            .collect()
            .await
            .map_err(|e| e.to_string())?
            .to_bytes();
        let body = String::from_utf8_lossy(&body).to_string();
        if !status.is_success() {
            return Err(format!("HTTP {status}: {body}"));
        }
        Ok((id, body))
    }
}
