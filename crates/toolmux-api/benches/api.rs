//! The REST API over real loopback HTTP: `GET /api/tools` with 1,000 cached tools, and
//! `POST /api/tools/{name}/call` of a built-in tool (`file_read` on a small file) and of a tool
//! that does nothing (the API's and pipeline's own overhead), and both through `?endpoint=`
//! (a named endpoint admitting every tool, target ≤ 5% over the plain request, measured in
//! turns with it), and both by a configured principal whose role allows every tool against the
//! owner's key (the cost of per-caller filtering, same target). One keep-alive connection,
//! sequential requests; prints percentiles. With `wrk` on PATH it also measures calls/s with
//! 32 connections.
//!
//! Run: `cargo bench -p toolmux-api --bench api` (optional: `API_BENCH_REQUESTS=20000`).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use serde_json::json;
use toolmux_core::{Source, SourceCall, SourceError, SourceKind, ToolDescriptor, ToolResult};
use toolmux_workspace::{WorkspaceLimits, WorkspacePack};

#[path = "../tests/support/mod.rs"]
mod support;

const KEY: &str = "bench-key";
/// The key of the configured principal `bench`.
const PRINCIPAL_KEY: &str = "tmk_bench-principal-key";

/// 1,000 tools with realistic schemas (the shape of an upstream server's tools), plus `noop`.
struct Many;

#[async_trait]
impl Source for Many {
    fn id(&self) -> &str {
        "many"
    }
    fn kind(&self) -> SourceKind {
        SourceKind::Builtin
    }
    fn tools(&self) -> Vec<ToolDescriptor> {
        let mut tools: Vec<ToolDescriptor> = (0..1000)
            .map(|i| {
                ToolDescriptor::new(
                    "many",
                    format!("many__tool_{i:04}"),
                    format!(
                        "Tool number {i}: does a thing with a repository, an issue and a label."
                    ),
                    json!({
                        "type": "object",
                        "properties": {
                            "owner": {"type": "string", "description": "Repository owner"},
                            "repo": {"type": "string", "description": "Repository name"},
                            "number": {"type": "integer", "minimum": 1},
                            "labels": {"type": "array", "items": {"type": "string"}}
                        },
                        "required": ["owner", "repo"],
                        "additionalProperties": false
                    }),
                )
            })
            .collect();
        tools.push(ToolDescriptor::new(
            "many",
            "noop",
            "does nothing",
            json!({"type": "object", "properties": {"x": {"type": "integer"}}}),
        ));
        tools
    }
    async fn call(&self, _call: SourceCall<'_>) -> Result<ToolResult, SourceError> {
        Ok(ToolResult::text("ok"))
    }
}

/// A keep-alive HTTP/1.1 client on one connection.
struct Client {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
    address: String,
    key: &'static str,
}

impl Client {
    fn connect(address: &str, key: &'static str) -> Self {
        let stream = TcpStream::connect(address).expect("connect");
        stream.set_nodelay(true).expect("nodelay");
        Self {
            reader: BufReader::new(stream.try_clone().expect("clone")),
            writer: stream,
            address: address.to_string(),
            key,
        }
    }

    /// Sends one request and returns (status, body length).
    fn send(&mut self, method: &str, path: &str, body: &str) -> (u16, usize) {
        let request = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {}\r\n\
             Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            self.address,
            self.key,
            body.len()
        );
        self.writer.write_all(request.as_bytes()).expect("send");
        let mut line = String::new();
        self.reader.read_line(&mut line).expect("status line");
        let status: u16 = line
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .expect("status");
        let mut length = 0;
        loop {
            line.clear();
            self.reader.read_line(&mut line).expect("header");
            let header = line.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((k, v)) = header.split_once(':')
                && k.eq_ignore_ascii_case("content-length")
            {
                length = v.trim().parse().expect("length");
            }
        }
        let mut body = vec![0; length];
        self.reader.read_exact(&mut body).expect("body");
        (status, length)
    }
}

fn report(label: &str, mut samples: Vec<Duration>) {
    samples.sort();
    let at = |q: f64| samples[((samples.len() as f64 - 1.0) * q).round() as usize];
    println!(
        "{label:<44} n={:<6} p50={:>9.1?} p90={:>9.1?} p99={:>9.1?} max={:>9.1?}",
        samples.len(),
        at(0.5),
        at(0.9),
        at(0.99),
        at(1.0)
    );
}

fn measure(client: &mut Client, method: &str, path: &str, body: &str, n: usize) -> Vec<Duration> {
    for _ in 0..n / 10 {
        assert_eq!(client.send(method, path, body).0, 200, "{method} {path}");
    }
    (0..n)
        .map(|_| {
            let started = Instant::now();
            let (status, _) = client.send(method, path, body);
            let elapsed = started.elapsed();
            assert_eq!(status, 200);
            elapsed
        })
        .collect()
}

fn wrk(address: &str, dir: &std::path::Path) {
    if std::process::Command::new("wrk")
        .arg("--version")
        .output()
        .is_err()
    {
        println!(
            "(wrk is not on PATH: `apt-get install wrk` to measure calls/s with 32 connections)"
        );
        return;
    }
    let script = dir.join("call.lua");
    std::fs::write(
        &script,
        format!(
            "wrk.method = \"POST\"\nwrk.body = '{{\"path\": \"small.txt\"}}'\n\
             wrk.headers[\"Content-Type\"] = \"application/json\"\n\
             wrk.headers[\"Authorization\"] = \"Bearer {KEY}\"\n"
        ),
    )
    .expect("write wrk script");
    for (label, path) in [
        ("file_read", "/api/tools/file_read/call"),
        ("noop", "/api/tools/noop/call"),
    ] {
        let out = std::process::Command::new("wrk")
            .args(["-t", "4", "-c", "32", "-d", "5s", "--latency", "-s"])
            .arg(&script)
            .arg(format!("http://{address}{path}"))
            .output()
            .expect("run wrk");
        let text = String::from_utf8_lossy(&out.stdout);
        let rate = text
            .lines()
            .find(|l| l.starts_with("Requests/sec"))
            .unwrap_or("Requests/sec: ?");
        let non2xx = text.lines().find(|l| l.contains("Non-2xx")).unwrap_or("");
        println!("wrk 32 connections, POST {label:<10} {rate} {non2xx}");
    }
}

fn main() {
    let n: usize = std::env::var("API_BENCH_REQUESTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5000);
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join("small.txt"), "one\ntwo\nthree\n").expect("write");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let workspace = WorkspacePack::new(dir.path(), WorkspaceLimits::default()).expect("workspace");
    let options = toolmux_api::ApiOptions {
        principal_keys: vec![(toolmux_config::key_hash(PRINCIPAL_KEY), "bench".to_string())],
        ..support::options(&[KEY])
    };
    let (address, hub) = support::serve(
        &runtime,
        dir.path(),
        vec![Arc::new(Many), Arc::new(workspace)],
        options,
    );

    let mut client = Client::connect(&address, KEY);
    let (_, bytes) = client.send("GET", "/api/tools", "");
    println!("GET /api/tools body: {bytes} bytes for 1,001 + 4 tools");
    report(
        "GET /api/tools (1,000 tools)",
        measure(&mut client, "GET", "/api/tools", "", n / 5),
    );
    report(
        "GET /api/tools?pattern=many__tool_00*",
        measure(
            &mut client,
            "GET",
            "/api/tools?pattern=many__tool_00*",
            "",
            n,
        ),
    );
    report(
        "POST /api/tools/file_read/call",
        measure(
            &mut client,
            "POST",
            "/api/tools/file_read/call",
            r#"{"path": "small.txt"}"#,
            n,
        ),
    );
    report(
        "POST /api/tools/noop/call",
        measure(
            &mut client,
            "POST",
            "/api/tools/noop/call",
            r#"{"x": 1}"#,
            n,
        ),
    );
    endpoint_overhead(&hub, &mut client, n);
    caller_overhead(
        &hub,
        &mut client,
        &mut Client::connect(&address, PRINCIPAL_KEY),
        n,
    );
    wrk(&address, dir.path());
}

/// The same listing and call by the owner (nothing narrows it) and by a configured principal
/// whose role allows every tool (its rights checked on every tool listed and on the call),
/// measured in turns.
fn caller_overhead(hub: &toolmux_core::Hub, owner: &mut Client, caller: &mut Client, n: usize) {
    let everything = toolmux_core::Role {
        endpoints: vec!["*".to_string()],
        tools: vec![(
            toolmux_core::NamePattern::new("*").expect("a pattern"),
            toolmux_core::Policy::Allow,
        )],
    };
    let rights = toolmux_core::Rights::new("bench", vec![Arc::new(everything)]);
    let principals =
        toolmux_core::Principals::new([("bench".to_string(), Arc::new(rights))].into(), true);
    hub.configure(toolmux_core::HubSettings {
        principals: Arc::new(principals),
        ..(*hub.settings()).clone()
    });
    // The principal is shown what the owner is: the same work, narrowed by nothing it lacks.
    assert_eq!(
        caller.send("GET", "/api/tools", ""),
        owner.send("GET", "/api/tools", ""),
        "the principal's listing differs from the owner's"
    );
    compare_in_turns(
        "by a principal",
        &mut |variant, method, path, body, rounds| {
            let client = if variant { &mut *caller } else { &mut *owner };
            measure(client, method, path, body, rounds)
        },
        n,
    );
}

/// The same listing and call, plain and through an endpoint whose filter admits every tool,
/// measured in turns so that load on the machine falls on both alike.
fn endpoint_overhead(hub: &toolmux_core::Hub, client: &mut Client, n: usize) {
    let filter = toolmux_core::EndpointFilter {
        tools: vec![toolmux_core::NamePattern::new("*").expect("a pattern")],
        ..toolmux_core::EndpointFilter::default()
    };
    let endpoint = toolmux_core::Endpoint::new("everything", filter, None);
    hub.configure(toolmux_core::HubSettings {
        endpoints: Arc::new([("everything".to_string(), Arc::new(endpoint))].into()),
        ..(*hub.settings()).clone()
    });
    compare_in_turns(
        "through an endpoint",
        &mut |variant, method, path, body, rounds| {
            let through = format!("{path}?endpoint=everything");
            let path = if variant { &through } else { path };
            measure(client, method, path, body, rounds)
        },
        n,
    );
}

/// Makes `rounds` requests (`method`, `path`, `body`), plainly or (`true`) the variant's way,
/// timing each.
type Measure<'a> = dyn FnMut(bool, &str, &str, &str, usize) -> Vec<Duration> + 'a;

/// The listing of 1,000 tools and a `noop` call made plainly and `how` the variant says, in
/// turns so that load on the machine falls on both alike; prints both and the ratio at p50.
fn compare_in_turns(how: &str, measured: &mut Measure<'_>, n: usize) {
    for (label, method, path, body, rounds) in [
        ("GET /api/tools", "GET", "/api/tools", "", n / 5),
        (
            "POST /api/tools/noop/call",
            "POST",
            "/api/tools/noop/call",
            r#"{"x": 1}"#,
            n,
        ),
    ] {
        let (mut base, mut other) = (Vec::new(), Vec::new());
        for _ in 0..10 {
            base.extend(measured(false, method, path, body, rounds / 10));
            other.extend(measured(true, method, path, body, rounds / 10));
        }
        let p50 = |samples: &mut Vec<Duration>| {
            samples.sort();
            samples[samples.len() / 2]
        };
        let ratio = p50(&mut other).as_secs_f64() / p50(&mut base).as_secs_f64();
        report(&format!("{label} (in turns)"), base);
        report(&format!("{label} {how}"), other);
        println!(
            "{label} {how}: {:+.1}% at p50 — {}",
            (ratio - 1.0) * 100.0,
            if ratio <= 1.05 {
                "target met (≤ +5%)"
            } else {
                "TARGET MISSED (≤ +5%)"
            }
        );
    }
}
