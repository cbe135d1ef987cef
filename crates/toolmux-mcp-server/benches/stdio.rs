//! Round trips over stdio, measured by a client in another process, as an agent sees them:
//! `tools/list` of a 1,000-tool catalog (target ≤ 5 ms), the same listing through a named
//! endpoint whose filter admits every tool (target ≤ 5% over the unfiltered one), and a call
//! of the built-in `file_read` (target p50 ≤ 200 µs).
//!
//! The bench binary is both sides: run normally it is the client, and it starts itself again
//! with `TOOLMUX_BENCH_STDIO_SERVER=<project dir>` as the server, whose stdin and stdout are the
//! pipes. The client writes JSON-RPC lines and times each request until its response line.
//!
//! Run: `cargo bench -p toolmux-mcp-server --bench stdio`

mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolmux_core::{Endpoint, EndpointFilter, HubSettings, NamePattern};
use toolmux_mcp_server::{ServeOptions, serve_stdio};

const SERVER_ENV: &str = "TOOLMUX_BENCH_STDIO_SERVER";
/// Set for a server that serves the endpoint [`ENDPOINT`] in place of the whole catalog.
const ENDPOINT_ENV: &str = "TOOLMUX_BENCH_STDIO_ENDPOINT";
const ENDPOINT: &str = "everything";
const EXTRA_TOOLS: usize = 1_000;
const LIST_ROUNDS: usize = 300;
const CALL_ROUNDS: usize = 5_000;

fn main() {
    if let Some(root) = std::env::var_os(SERVER_ENV) {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        let hub = common::hub(&PathBuf::from(root), EXTRA_TOOLS);
        let mut options = ServeOptions::default();
        if std::env::var_os(ENDPOINT_ENV).is_some() {
            // A filter that admits every tool, so both servers list the same tools and the
            // difference is the filter's.
            let filter = EndpointFilter {
                tools: vec![NamePattern::new("*").expect("a pattern")],
                exclude: vec![NamePattern::new("nothing_has_this_name").expect("a pattern")],
                ..EndpointFilter::default()
            };
            let endpoint = Endpoint::new(ENDPOINT, filter, None);
            hub.configure(HubSettings {
                endpoints: Arc::new([(ENDPOINT.to_string(), Arc::new(endpoint))].into()),
                ..HubSettings::default()
            });
            options.endpoint = Some(ENDPOINT.to_string());
        }
        if let Err(e) = runtime.block_on(serve_stdio(hub, options)) {
            eprintln!("bench server: {e}");
            std::process::exit(1);
        }
        return;
    }

    let project = tempfile::tempdir().expect("a temporary project");
    common::write_project(project.path());
    let mut client = Client::start(project.path().to_path_buf(), false);

    // tools/list of the whole catalog.
    let listed = client.request("tools/list", json!({}));
    let count = listed["tools"].as_array().map_or(0, Vec::len);
    assert!(
        count > EXTRA_TOOLS,
        "expected over {EXTRA_TOOLS} tools, got {count}"
    );
    let mut list = client.time("tools/list", json!({}), LIST_ROUNDS / 10, LIST_ROUNDS);
    let list_p50 = common::p50(&mut list);
    println!(
        "tools/list ({count} tools, {} KiB) over stdio: {} — {} (≤ 5 ms)",
        serde_json::to_vec(&listed).map_or(0, |v| v.len()) / 1024,
        common::summary(&mut list),
        common::verdict(list_p50 <= Duration::from_millis(5))
    );

    // The same listing through an endpoint, the two servers measured in turns so that load
    // on the machine falls on both alike.
    let mut through = Client::start(project.path().to_path_buf(), true);
    let listed_through = through.request("tools/list", json!({}));
    assert_eq!(listed_through, listed, "the endpoint lists every tool");
    let (mut plain, mut filtered) = (Vec::new(), Vec::new());
    for _ in 0..10 {
        plain.extend(client.time("tools/list", json!({}), 3, LIST_ROUNDS / 10));
        filtered.extend(through.time("tools/list", json!({}), 3, LIST_ROUNDS / 10));
    }
    let (plain_p50, filtered_p50) = (common::p50(&mut plain), common::p50(&mut filtered));
    let ratio = filtered_p50.as_secs_f64() / plain_p50.as_secs_f64();
    println!(
        "tools/list ({count} tools) through the endpoint `{ENDPOINT}`: {} vs unfiltered {} — \
         {:+.1}% {} (≤ +5%)",
        common::summary(&mut filtered),
        common::summary(&mut plain),
        (ratio - 1.0) * 100.0,
        common::verdict(ratio <= 1.05)
    );
    through.close();

    // A built-in tool.
    let params =
        json!({"name": "file_read", "arguments": {"path": common::READ_FILE, "limit": 10}});
    let first = client.request("tools/call", params.clone());
    assert_eq!(first["isError"], json!(false), "file_read failed: {first}");
    let mut calls = client.time("tools/call", params, CALL_ROUNDS / 10, CALL_ROUNDS);
    let call_p50 = common::p50(&mut calls);
    println!(
        "tools/call file_read over stdio: {} — {} (p50 ≤ 200 µs)",
        common::summary(&mut calls),
        common::verdict(call_p50 <= Duration::from_micros(200))
    );
    client.close();
}

/// The client side: a child process speaking newline-delimited JSON-RPC on its stdin/stdout.
struct Client {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
    line: String,
}

impl Client {
    /// Starts a server (serving [`ENDPOINT`] when `endpoint`) and makes the handshake.
    fn start(root: PathBuf, endpoint: bool) -> Self {
        let exe = std::env::current_exe().expect("the bench binary's path");
        let mut command = Command::new(exe);
        if endpoint {
            command.env(ENDPOINT_ENV, "1");
        }
        let mut child = command
            .env(SERVER_ENV, root)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start the bench server");
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().expect("piped stdout"));
        let mut client = Self {
            child,
            stdin,
            stdout,
            next_id: 0,
            line: String::new(),
        };
        client.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "bench", "version": "0"}}),
        );
        client.notify("notifications/initialized");
        client
    }

    fn send(&mut self, message: &Value) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        let mut bytes = serde_json::to_vec(message).expect("serialize");
        bytes.push(b'\n');
        stdin.write_all(&bytes).expect("write to the server");
        stdin.flush().expect("flush");
    }

    fn notify(&mut self, method: &str) {
        self.send(&json!({"jsonrpc": "2.0", "method": method}));
    }

    /// Sends a request and returns its result, skipping notifications.
    fn request(&mut self, method: &str, params: Value) -> Value {
        self.exchange(method, params);
        let message: Value = serde_json::from_str(&self.line).expect("a JSON line");
        if let Some(error) = message.get("error") {
            panic!("{method} failed: {error}");
        }
        message["result"].clone()
    }

    /// Sends a request and reads lines up to its response, which is left in `self.line`. Only
    /// the id is looked at, so that timing measures the server and the pipes rather than this
    /// client parsing a large answer.
    fn exchange(&mut self, method: &str, params: Value) {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let marker = format!("\"id\":{id},");
        loop {
            self.line.clear();
            let n = self.stdout.read_line(&mut self.line).expect("read a line");
            assert!(n > 0, "the server closed its stdout");
            // rmcp writes `"jsonrpc"` then `"id"` first; a notification has no id.
            if self
                .line
                .get(..40)
                .is_some_and(|head| head.contains(&marker))
            {
                return;
            }
        }
    }

    /// Times `rounds` round trips after `warmup` untimed ones.
    fn time(&mut self, method: &str, params: Value, warmup: usize, rounds: usize) -> Vec<Duration> {
        for _ in 0..warmup {
            self.exchange(method, params.clone());
        }
        (0..rounds)
            .map(|_| {
                let started = Instant::now();
                self.exchange(method, params.clone());
                started.elapsed()
            })
            .collect()
    }

    /// Closes stdin, which ends the server, and waits for it.
    fn close(mut self) {
        drop(self.stdin.take());
        let status = self.child.wait().expect("wait for the server");
        assert!(status.success(), "the bench server failed: {status}");
    }
}
