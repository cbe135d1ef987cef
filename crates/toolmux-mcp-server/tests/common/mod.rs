//! Shared by the integration tests: a hub with a small test source, an HTTP server on a free
//! loopback port, and the real Python MCP client from `tests/peers/mcp/`.

#![allow(dead_code)] // each test binary uses a different part of this module

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader, Lines};
use tokio::process::{Child, ChildStdout, Command};
use toolmux_core::{
    Hub, HubSettings, NamePattern, NullSink, Policy, Source, SourceCall, SourceError, SourceKind,
    ToolAnnotations, ToolDescriptor, ToolResult,
};
use toolmux_mcp_server::{CancellationToken, ServeOptions, http_router};

/// A source whose tools echo their arguments, fail, or are internal: enough to see every path
/// of the MCP channel.
pub struct TestSource {
    pub id: String,
    pub tools: Vec<ToolDescriptor>,
}

impl TestSource {
    /// The default fixture: `echo` (read-only, with an output schema and a title), `fail`, `danger`
    /// (destructive, so its policy is `ask`) and `secret_config` (internal).
    pub fn fixture() -> Self {
        let object = json!({"type": "object", "properties": {"text": {"type": "string"}}});
        let mut echo =
            ToolDescriptor::new("test", "echo", "Returns its arguments.", object.clone());
        echo.title = Some("Echo".into());
        echo.annotations = ToolAnnotations::read_only();
        echo.output_schema = Some(Arc::new(json!({"type": "object"})));
        let fail = ToolDescriptor::new("test", "fail", "Always fails.", object.clone());
        let mut danger = ToolDescriptor::new("test", "danger", "Destroys things.", object.clone());
        danger.annotations.destructive_hint = Some(true);
        let mut secret = ToolDescriptor::new("test", "secret_config", "Host only.", object);
        secret.internal = true;
        Self {
            id: "test".into(),
            tools: vec![echo, fail, danger, secret],
        }
    }

    /// A source `id` with one tool registered as `<id>__<tool>`.
    pub fn namespaced(id: &str, tool: &str) -> Self {
        let mut d = ToolDescriptor::new(
            id,
            format!("{id}__{tool}"),
            format!("{tool} from {id}"),
            json!({"type": "object"}),
        );
        d.original_name = tool.to_string();
        Self {
            id: id.into(),
            tools: vec![d],
        }
    }
}

#[async_trait]
impl Source for TestSource {
    fn id(&self) -> &str {
        &self.id
    }
    fn kind(&self) -> SourceKind {
        SourceKind::Builtin
    }
    fn tools(&self) -> Vec<ToolDescriptor> {
        self.tools.clone()
    }
    async fn call(&self, call: SourceCall<'_>) -> Result<ToolResult, SourceError> {
        match call.tool.original_name.as_str() {
            "fail" => Err(SourceError::Failed("the fixture fails on purpose".into())),
            _ => Ok(ToolResult::structured(Value::Object(call.arguments))),
        }
    }
}

/// A hub holding the fixture source, with `danger` asking for approval (from its annotations)
/// and approvals bounded to a few seconds.
pub fn hub() -> Hub {
    let settings = HubSettings {
        approval_timeout: Duration::from_secs(5),
        ..HubSettings::default()
    };
    let hub = Hub::new(settings, Arc::new(NullSink));
    hub.add_source(Arc::new(TestSource::fixture()));
    hub
}

/// A hub like [`hub`] whose `echo` is set to `ask` by a rule.
pub fn hub_with_ask_rule(tool: &str) -> Hub {
    let hub = hub();
    let mut settings = (*hub.settings()).clone();
    settings
        .policies
        .tools
        .push((NamePattern::new(tool).expect("valid pattern"), Policy::Ask));
    hub.configure(settings);
    hub
}

/// An HTTP server on a free loopback port; stopped (sessions and streams ended) on drop.
pub struct HttpServer {
    pub url: String,
    pub port: u16,
    shutdown: CancellationToken,
    task: tokio::task::JoinHandle<()>,
}

impl HttpServer {
    pub async fn start(hub: Hub, options: ServeOptions) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind a loopback port");
        let port = listener.local_addr().expect("local addr").port();
        let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
            let _ = tcp.set_nodelay(true);
        });
        let shutdown = CancellationToken::new();
        let router = http_router(hub, options, shutdown.clone());
        let stop = shutdown.clone();
        let task = tokio::spawn(async move {
            axum::serve(listener, router)
                .with_graceful_shutdown(async move { stop.cancelled().await })
                .await
                .expect("the test server runs");
        });
        Self {
            url: format!("http://127.0.0.1:{port}/mcp"),
            port,
            shutdown,
            task,
        }
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        self.shutdown.cancel();
        self.task.abort();
    }
}

/// The Python interpreter and the peers folder that `./scripts/test` prepares. Missing peers are
/// a failure, not a skip: a test that cannot reach its peer proves nothing.
pub fn peers() -> (PathBuf, PathBuf) {
    let python = std::env::var_os("TOOLMUX_TEST_PYTHON").map(PathBuf::from);
    let peers = std::env::var_os("TOOLMUX_PEERS").map(PathBuf::from);
    match (python, peers) {
        (Some(python), Some(peers)) if python.exists() && peers.join("mcp/client.py").exists() => {
            (python, peers)
        }
        _ => panic!(
            "the MCP peer tests need the Python MCP client: run ./scripts/test, or set \
             TOOLMUX_TEST_PYTHON to a python with `pip install -r tests/peers/mcp/requirements.txt` \
             and TOOLMUX_PEERS to the repository's tests/peers folder"
        ),
    }
}

/// The Python client running one plan; read its JSON lines as they come.
pub struct PythonClient {
    child: Child,
    lines: Lines<BufReader<ChildStdout>>,
    pub seen: Vec<Value>,
}

impl PythonClient {
    pub fn start(plan: Value) -> Self {
        let (python, peers) = peers();
        let mut child = Command::new(python)
            .arg(peers.join("mcp/client.py"))
            .arg(plan.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .expect("start the Python MCP client");
        let stdout = child.stdout.take().expect("piped stdout");
        Self {
            child,
            lines: BufReader::new(stdout).lines(),
            seen: Vec::new(),
        }
    }

    /// The next JSON line, waiting at most 20 s.
    pub async fn next(&mut self) -> Value {
        let line = tokio::time::timeout(Duration::from_secs(20), self.lines.next_line())
            .await
            .unwrap_or_else(|_| {
                panic!(
                    "the Python client said nothing for 20 s; so far: {:#?}",
                    self.seen
                )
            })
            .expect("read the client's stdout");
        let Some(line) = line else {
            panic!(
                "the Python client ended early; it printed: {:#?}",
                self.seen
            )
        };
        let value: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("the client printed a line that is not JSON ({e}): {line}"));
        self.seen.push(value.clone());
        value
    }

    /// Every remaining line, then the exit status, which must be success.
    pub async fn finish(mut self) -> Vec<Value> {
        loop {
            let line = tokio::time::timeout(Duration::from_secs(30), self.lines.next_line())
                .await
                .expect("the Python client finishes within 30 s")
                .expect("read the client's stdout");
            match line {
                Some(line) => self.seen.push(
                    serde_json::from_str(&line)
                        .unwrap_or_else(|e| panic!("not JSON ({e}): {line}")),
                ),
                None => break,
            }
        }
        let status = tokio::time::timeout(Duration::from_secs(10), self.child.wait())
            .await
            .expect("the Python client exits")
            .expect("wait for the Python client");
        assert!(
            status.success(),
            "the Python client failed; it printed {:#?}",
            self.seen
        );
        self.seen
    }
}

/// Runs a plan to the end and returns every line the client printed.
pub async fn run_client(plan: Value) -> Vec<Value> {
    PythonClient::start(plan).finish().await
}

/// The `tools/list` names from a transcript line.
pub fn tool_names(line: &Value) -> Vec<String> {
    line["tools"]
        .as_array()
        .expect("a tools line")
        .iter()
        .map(|t| t["name"].as_str().expect("a name").to_string())
        .collect()
}

/// The text of a call result's first content block.
pub fn result_text(line: &Value) -> &str {
    line["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("not a call result with text: {line}"))
}

/// A raw HTTP response.
pub struct RawResponse {
    pub status: u16,
    /// The status line and headers.
    pub head: String,
    pub body: String,
}

impl RawResponse {
    /// A header's value, by case-insensitive name.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.head.lines().find_map(|l| {
            let (n, v) = l.split_once(':')?;
            n.eq_ignore_ascii_case(name).then(|| v.trim())
        })
    }
}

/// Sends one raw HTTP/1.1 request (which should say `Connection: close`) and reads the whole
/// response. Used where a client library would not send the headers under test (a foreign Host,
/// a hostile Origin, no token).
pub async fn raw_http(port: u16, request: &str) -> RawResponse {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .expect("connect");
    stream
        .write_all(request.as_bytes())
        .await
        .expect("send the request");
    let mut response = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut response)).await;
    let text = String::from_utf8_lossy(&response).to_string();
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("not an HTTP response: {text:?}"));
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((text.as_str(), ""));
    RawResponse {
        status,
        head: head.to_string(),
        body: body.to_string(),
    }
}

/// A JSON-RPC POST to `/mcp` with the given extra header lines, closing the connection after.
pub fn post(port: u16, body: &Value, extra_headers: &str) -> String {
    let body = body.to_string();
    format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nConnection: close\r\n{extra_headers}\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
}
