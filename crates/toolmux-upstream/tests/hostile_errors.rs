//! Hostile servers against what toolmux keeps and shows of their errors (THREATS.md rules 1
//! and 7): what a server says in a failure — its HTTP answer, its stderr — reaches the
//! server's `last_error`, the logs, the REST API's server list and `mcp list` printable and
//! cut, never whole with its escape sequences and line breaks.

mod support;

use serde_json::{Value, json};
use support::{Project, call};
use toolmux_core::{CallError, Source, SourceState};

/// What the hostile server says: an escape sequence that would retitle and recolour a
/// terminal, a line break that would forge a log line, then 60 KiB (rmcp reads at most 64 KiB
/// of an error answer).
fn hostile_words() -> String {
    format!(
        "\u{1b}]0;owned\u{7}\u{1b}[31mred\nforged line {}",
        "x".repeat(60 * 1024)
    )
}

/// How the hostile endpoint answers.
#[derive(Clone, Copy)]
enum Refuses {
    /// Every request, the handshake's first.
    Everything,
    /// Every request after a genuine handshake: the connection is live when it refuses.
    AfterTheHandshake,
    /// Every request after the handshake and the tool list (one tool, `echo`): a call.
    AfterTheListing,
}

/// A streamable HTTP MCP endpoint on a loopback port that answers what `refuses` says with
/// `400 Bad Request` and `body` as plain text; its URL.
fn refusing_endpoint(refuses: Refuses, body: String) -> String {
    endpoint_refusing_with(refuses, "400 Bad Request", body)
}

/// [`refusing_endpoint`] refusing with `status` (a `401 Unauthorized` with a bearer
/// challenge, as a server that takes keys answers a wrong one).
fn endpoint_refusing_with(refuses: Refuses, status: &'static str, body: String) -> String {
    let address = toolmux_testkit::http::scripted_server(move |received| {
        let request: Value = serde_json::from_slice(&received.body).unwrap_or(Value::Null);
        let method = request["method"].as_str().unwrap_or_default();
        let live = !matches!(refuses, Refuses::Everything);
        let (status, content_type, answer) = match (refuses, method) {
            (_, "initialize") if live => (
                "200 OK",
                "application/json",
                json!({"jsonrpc": "2.0", "id": request["id"], "result": {
                    "protocolVersion": request["params"]["protocolVersion"],
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "hostile", "version": "1.0.0"},
                }})
                .to_string(),
            ),
            // A server of the handshake era, as a live one here is, refuses the 2026-07-28
            // probe as a request without a session; toolmux then opens with `initialize`.
            (_, "server/discover") if live => (
                "400 Bad Request",
                "application/json",
                json!({"jsonrpc": "2.0", "id": null, "error": {
                    "code": -32000, "message": "Bad Request: No valid session ID provided",
                }})
                .to_string(),
            ),
            (_, m) if live && m.starts_with("notifications/") => {
                ("202 Accepted", "text/plain", String::new())
            }
            (Refuses::AfterTheListing, "tools/list") => (
                "200 OK",
                "application/json",
                json!({"jsonrpc": "2.0", "id": request["id"], "result": {"tools": [
                    {"name": "echo", "inputSchema": {"type": "object"}},
                ]}})
                .to_string(),
            ),
            _ => (status, "text/plain", body.clone()),
        };
        let challenge = if status.starts_with("401") {
            "WWW-Authenticate: Bearer realm=\"hostile\"\r\n"
        } else {
            ""
        };
        toolmux_testkit::http::Answer {
            status,
            headers: challenge.to_string(),
            content_type,
            body: answer,
        }
    });
    format!("http://{address}/mcp")
}

/// Found in review of issue 28: an HTTP server's refusal reached the start error whole —
/// 60 KiB with escape sequences and line breaks — and from there `last_error`, the logs, the
/// REST API and `mcp list`. The error keeps rmcp's words and the server's, printable and cut
/// at 1,000 characters.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_servers_huge_escape_laden_refusal_is_kept_printable_and_cut() {
    let url = refusing_endpoint(Refuses::Everything, hostile_words());
    let project = Project::new(&json!({"mcpServers": {"hostile": {"url": url}}}));
    let upstreams = project.upstreams();
    let hostile = upstreams.get("hostile").expect("configured");
    let err = hostile.discover().await.expect_err("refused");
    let said = format!(
        "cannot connect to {url}: unexpected server response: HTTP 400 Bad Request: \
         ]0;owned[31mredforged line {}",
        "x".repeat(60 * 1024)
    );
    let cut: String = said.chars().take(1000).collect();
    assert_eq!(
        err.to_string(),
        format!("MCP server `hostile`: cannot start: {cut}…")
    );
    // Kept so for `last_error`, and for the catalog the REST API and `mcp list` read.
    let status = hostile.status();
    assert_eq!(status.state, SourceState::Failed);
    assert_eq!(status.error, Some(err.to_string()));
    let hub = project.hub(&upstreams);
    let catalog = hub.catalog();
    let listed = catalog
        .sources()
        .iter()
        .find(|s| s.id == "hostile")
        .expect("listed");
    assert_eq!(listed.status.error, Some(err.to_string()));
}

/// The same on a live connection: the handshake went well, then the server (or, for one that
/// asks for OAuth, its authorization server answering rmcp's token refresh) refuses a request
/// with the same words. The request's error, which discovery keeps as the server's error, is
/// printable and cut alike.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusal_on_a_live_connection_is_kept_printable_and_cut() {
    let url = refusing_endpoint(Refuses::AfterTheHandshake, hostile_words());
    let project = Project::new(&json!({"mcpServers": {"hostile": {"url": url}}}));
    let upstreams = project.upstreams();
    let hostile = upstreams.get("hostile").expect("configured");
    let err = hostile.discover().await.expect_err("refused");
    let text = err.to_string();
    let said = format!("tools/list failed: {}", send_error(&text));
    let cut: String = said.chars().take(1000).collect();
    assert_eq!(text, format!("MCP server `hostile`: {cut}…"));
    assert_eq!(hostile.status().error, Some(text));
}

/// rmcp's words for a request the hostile server refused, with the transport's Rust type it
/// names as `text` names it (the rest is exact): what the error says before it is cut.
fn send_error(text: &str) -> String {
    let transport = text
        .split_once("Transport [")
        .and_then(|(_, rest)| rest.split_once("] error: "))
        .map(|(transport, _)| transport)
        .unwrap_or_else(|| panic!("no transport named in {text}"));
    format!(
        "Transport send error: Transport [{transport}] error: unexpected server response: \
         HTTP 400 Bad Request: ]0;owned[31mredforged line {}",
        "x".repeat(60 * 1024)
    )
}

/// The project's only server, `server`, listed, then its `echo` called: the name and the
/// message of the call's refusal as unavailable.
async fn refused_echo(project: &Project, server: &str) -> (String, String) {
    let upstreams = project.upstreams();
    let hub = project.hub(&upstreams);
    upstreams
        .get(server)
        .expect("configured")
        .discover()
        .await
        .expect("listed");
    let called = call(&hub, &format!("{server}__echo"), json!({})).await;
    let Err(CallError::Unavailable { name, message }) = called else {
        panic!("not refused as unavailable: {called:?}");
    };
    (name, message)
}

/// And for a call on a live connection, as its caller sees the failure.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_call_reaches_its_caller_printable_and_cut() {
    let url = refusing_endpoint(Refuses::AfterTheListing, hostile_words());
    let project = Project::new(&json!({"mcpServers": {"hostile": {"url": url}}}));
    let (name, message) = refused_echo(&project, "hostile").await;
    assert_eq!(name, "hostile__echo");
    let cut: String = send_error(&message).chars().take(1000).collect();
    assert_eq!(
        message,
        format!(
            "MCP server `hostile` is unavailable (service unavailable): the call was tried 4 \
             times without an answer; last error: {cut}…"
        )
    );
}

/// Found in review of issue 28: a 401 from a server whose configuration sends its key in another
/// header than `Authorization` (`X-API-Key: ${KEY}`, as many hosted servers take it) was
/// reported as a want of sign-in ("run `toolmux mcp login`"), which cannot help. Any configured
/// header holding a secret makes the refusal the configured credential's, naming that header,
/// at the handshake and on a live connection alike; a header that holds none leaves it a
/// want of sign-in.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_key_in_any_secret_header_is_the_configured_credentials_refusal() {
    let rejected = "MCP server `keyed` rejected the configured credential (HTTP 401): check the \
                    `X-API-Key` header in its `headers` and the secret or variable it reads";
    let keyed = |url: &str, headers: Value| {
        Project::new(&json!({"mcpServers": {"keyed": {"url": url, "headers": headers}}}))
    };

    let url = endpoint_refusing_with(Refuses::Everything, "401 Unauthorized", "no".into());
    let needs_sign_in = "MCP server `keyed` needs sign-in: run `toolmux mcp login keyed` (or use \
                         Sign in on its card in the web app)";
    for (headers, said) in [
        (
            json!({"X-API-Key": "not-the-key", "X-Trace": "on"}),
            rejected,
        ),
        (json!({"X-Trace": "on"}), needs_sign_in),
    ] {
        let project = keyed(&url, headers);
        let upstreams = project.upstreams();
        let err = upstreams
            .get("keyed")
            .expect("configured")
            .discover()
            .await
            .expect_err("refused");
        assert_eq!(err.to_string(), said);
    }

    // A call refused on a live connection.
    let url = endpoint_refusing_with(Refuses::AfterTheListing, "401 Unauthorized", "no".into());
    let project = keyed(&url, json!({"X-API-Key": "revoked-key"}));
    let (name, message) = refused_echo(&project, "keyed").await;
    assert_eq!((name.as_str(), message.as_str()), ("keyed__echo", rejected));
}
