//! What the MCP channel's tests need besides the test kit: a hub with a small test source, the
//! MCP server on a free loopback port, and raw HTTP requests for the headers a client library
//! would not send.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};
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
    post_raw(port, &body.to_string(), extra_headers)
}

/// [`post`] of a body given as text (one a `Value` cannot hold: nested too deep).
pub fn post_raw(port: u16, body: &str, extra_headers: &str) -> String {
    format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nConnection: close\r\n{extra_headers}\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
}

/// What every 2026-07-28 request carries in `_meta` (clientInfo is optional).
pub fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "raw-test", "version": "1"}
    })
}

/// A 2026-07-28 request: `params` with the `_meta` of [`meta`] added.
pub fn request(id: u64, method: &str, mut params: Value) -> Value {
    params["_meta"] = meta();
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// The one JSON-RPC message of a response, whether sent as JSON or as one SSE event.
pub fn message(response: &RawResponse) -> Value {
    let body = response.body.trim();
    let json = body
        .lines()
        .find_map(|l| l.strip_prefix("data:"))
        .unwrap_or(body)
        .trim();
    serde_json::from_str(json)
        .unwrap_or_else(|e| panic!("not one JSON-RPC message ({e}): {}", response.body))
}

/// Sends a 2026-07-28 request with the headers the revision requires beside its body
/// (`MCP-Protocol-Version`, `Mcp-Method`, and `Mcp-Name` for a call).
pub async fn send_stateless(port: u16, body: &Value) -> RawResponse {
    let method = body["method"].as_str().expect("a request has a method");
    let mut headers = format!("MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: {method}\r\n");
    if let Some(name) = body["params"]["name"].as_str() {
        headers.push_str(&format!("Mcp-Name: {name}\r\n"));
    }
    raw_http(port, &post(port, body, &headers)).await
}

/// The result `body` is answered with, sent to `port` as a 2026-07-28 request.
pub async fn result_of(port: u16, body: &Value) -> Value {
    let response = send_stateless(port, body).await;
    assert_eq!(response.status, 200, "{}", response.body);
    let answer = message(&response);
    answer
        .get("result")
        .cloned()
        .unwrap_or_else(|| panic!("not a result: {answer}"))
}

/// The JSON-RPC error `body` is answered with, sent to `port` as a 2026-07-28 request.
pub async fn error_of(port: u16, body: &Value) -> Value {
    let answer = message(&send_stateless(port, body).await);
    answer
        .get("error")
        .cloned()
        .unwrap_or_else(|| panic!("not an error: {answer}"))
}

/// `server` (an `mcpServers` entry) configured as `name` in a scratch project, discovered, and
/// served behind `/mcp`; passed through when `pass_through`, which serves it per client as
/// `toolmux serve --pass-through NAME` does, whatever its `sessionMode`.
pub async fn serve_upstream(
    name: &str,
    server: Value,
    pass_through: bool,
) -> (
    toolmux_testkit::project::TestProject,
    Arc<toolmux_upstream::Upstreams>,
    HttpServer,
) {
    let project = toolmux_testkit::project::TestProject::new();
    project.config(&json!({"mcpServers": {name: server}}).to_string());
    let loaded = toolmux_config::load(project.path(), None).expect("config loads");
    let upstreams = Arc::new(toolmux_upstream::Upstreams::new(
        &loaded,
        &toolmux_upstream::state_dir(project.path()),
    ));
    let source = upstreams.get(name).expect("configured");
    source.discover().await.expect("discovers");
    if pass_through {
        upstreams.serve_per_client(name);
    }
    let hub = Hub::new(HubSettings::default(), Arc::new(NullSink));
    for source in upstreams.sources() {
        hub.add_source(source);
    }
    let http = HttpServer::start(
        hub,
        ServeOptions {
            pass_through: pass_through.then(|| name.into()),
            upstreams: Some(Arc::clone(&upstreams)),
            ..ServeOptions::default()
        },
    )
    .await;
    (project, upstreams, http)
}
