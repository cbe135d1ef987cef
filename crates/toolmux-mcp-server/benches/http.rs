//! Calls per second over streamable HTTP with 32 concurrent clients, each with its own MCP
//! session, calling the built-in `file_read` (target ≥ 5,000 calls/s, zero errors), with p50 and
//! p99 latency at that load.
//!
//! The bench binary is both sides: run normally it is the load generator, and it starts itself
//! again with `TOOLMUX_BENCH_HTTP_SERVER=<project dir>` as the server (on a free loopback port,
//! which it prints on stdout), so that client and server are separate processes as in real use.
//! Both share this machine's cores. The load is bounded: a fixed number of calls per client.
//!
//! Run: `cargo bench -p toolmux-mcp-server --bench http`

mod common;

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use axum::serve::ListenerExt;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::Request;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use serde_json::{Value, json};
use toolmux_mcp_server::{CancellationToken, ServeOptions, http_router};

const SERVER_ENV: &str = "TOOLMUX_BENCH_HTTP_SERVER";
const CLIENTS: usize = 32;
const WARMUP_CALLS: usize = 50;
const CALLS_PER_CLIENT: usize = 1_500;
const PROTOCOL: &str = "2025-06-18";

fn main() {
    if let Some(root) = std::env::var_os(SERVER_ENV) {
        serve(PathBuf::from(root));
        return;
    }
    let project = tempfile::tempdir().expect("a temporary project");
    common::write_project(project.path());
    let exe = std::env::current_exe().expect("the bench binary's path");
    let mut server = Command::new(exe)
        .env(SERVER_ENV, project.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start the bench server");
    let mut port_line = String::new();
    BufReader::new(server.stdout.take().expect("piped stdout"))
        .read_line(&mut port_line)
        .expect("read the server's port");
    let url = format!("http://127.0.0.1:{}/mcp", port_line.trim());

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(load(url));
    drop(server.stdin.take()); // ends the server
    let status = server.wait().expect("wait for the server");
    assert!(status.success(), "the bench server failed: {status}");
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
        let router = http_router(hub, ServeOptions::default(), shutdown.clone());
        let stop = shutdown.clone();
        tokio::spawn(async move {
            // Stdin closing is the signal to stop.
            let mut sink = Vec::new();
            let _ = tokio::io::AsyncReadExt::read_to_end(&mut tokio::io::stdin(), &mut sink).await;
            stop.cancel();
        });
        axum::serve(listener, router)
            .with_graceful_shutdown(async move { shutdown.cancelled().await })
            .await
            .expect("serve");
    });
}

type HttpClient = Client<HttpConnector, Full<Bytes>>;

async fn load(url: String) {
    let mut connector = HttpConnector::new();
    connector.set_nodelay(true);
    let http: HttpClient = Client::builder(TokioExecutor::new())
        .pool_max_idle_per_host(CLIENTS * 2)
        .build(connector);

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

/// One MCP session over HTTP.
struct Session {
    http: HttpClient,
    url: String,
    id: String,
    next: u64,
}

impl Session {
    async fn open(http: HttpClient, url: String) -> Self {
        let mut session = Self {
            http,
            url,
            id: String::new(),
            next: 0,
        };
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": PROTOCOL, "capabilities": {},
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
        let request = json!({"jsonrpc": "2.0", "id": self.next, "method": "tools/call", "params": {
            "name": "file_read", "arguments": {"path": common::READ_FILE, "limit": 10}}});
        let (_, body) = self.post(&request).await?;
        let message = body
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
            .find(|m| m["id"] == json!(self.next))
            .ok_or_else(|| format!("no response in {body:?}"))?;
        if message["result"]["isError"] == json!(false) {
            Ok(())
        } else {
            Err(message.to_string())
        }
    }

    /// POSTs one message; returns the session id header and the whole body.
    async fn post(&self, message: &Value) -> Result<(Option<String>, String), String> {
        let mut request = Request::post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", PROTOCOL);
        if !self.id.is_empty() {
            request = request.header("mcp-session-id", &self.id);
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
