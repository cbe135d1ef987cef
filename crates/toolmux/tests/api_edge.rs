//! The HTTP edge of `toolmux serve` under clients that misbehave: connections left half-sent
//! or idle, and MCP requests that rmcp alone would answer with the wrong status.

mod support;

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use serde_json::Value;
use support::toolmux_project;
use toolmux_testkit::http::Response;
use toolmux_testkit::project::TestProject;
use toolmux_testkit::served::{KEY, Served, config_with_key};

/// An MCP `initialize` request, as a client's first POST.
const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;

fn served_with_key(args: &[&str]) -> (TestProject, Served) {
    let project = toolmux_project();
    project.config(&config_with_key(""));
    let served = Served::start(&project, args);
    (project, served)
}

/// A POST to `/mcp` with the key and the headers MCP asks for.
fn mcp(served: &Served, method: &str, headers: &[(&str, &str)], body: Option<&str>) -> Response {
    let auth = format!("Bearer {KEY}");
    let mut all = vec![
        ("Authorization", auth.as_str()),
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
    ];
    all.extend_from_slice(headers);
    served.request(method, "/mcp", &all, body)
}

/// Issue 12, D10: half-sent requests and idle keep-alive connections stayed open forever, so
/// enough of them exhausted the file descriptors and no client got in. Each is closed after the
/// header timeout now, and a fresh client is served meanwhile.
#[test]
fn d10_half_sent_requests_are_closed_after_the_header_timeout_while_others_are_served() {
    const FLOOD: usize = 300;
    let (_project, served) = served_with_key(&["--header-timeout", "3s"]);
    let opened = Instant::now();
    let mut half_sent: Vec<TcpStream> = (0..FLOOD)
        .map(|_| {
            let mut stream = TcpStream::connect(&served.address).expect("connect");
            let head = format!(
                "GET /api/health HTTP/1.1\r\nHost: {}\r\nX: ",
                served.address
            );
            stream.write_all(head.as_bytes()).expect("send half a head");
            stream
        })
        .collect();
    // An idle keep-alive connection after one whole request is closed the same way.
    let mut idle = TcpStream::connect(&served.address).expect("connect");
    let head = format!(
        "GET /api/health HTTP/1.1\r\nHost: {}\r\n\r\n",
        served.address
    );
    idle.write_all(head.as_bytes())
        .expect("send a whole request");
    let mut status = [0u8; 12];
    idle.read_exact(&mut status).expect("an answer");
    assert_eq!(&status, b"HTTP/1.1 200");

    // Meanwhile the server answers a fresh client.
    let health = served.get("/api/health");
    assert_eq!(health.status, 200, "{}", health.body);
    // ... while the flood is still open (this ran within its header timeout).
    assert!(
        opened.elapsed() < Duration::from_secs(3),
        "the flood took too long to open: {:?}",
        opened.elapsed()
    );

    let deadline = opened + Duration::from_secs(20);
    half_sent.push(idle);
    for (i, stream) in half_sent.iter_mut().enumerate() {
        let left = deadline.saturating_duration_since(Instant::now());
        stream
            .set_read_timeout(Some(left.max(Duration::from_millis(10))))
            .expect("set timeout");
        let mut sink = Vec::new();
        match stream.read_to_end(&mut sink) {
            Ok(_) => {}
            Err(e) if e.kind() == ErrorKind::ConnectionReset => {}
            Err(e) => panic!("connection {i} was not closed by the server: {e}"),
        }
    }
    assert!(
        opened.elapsed() >= Duration::from_millis(2900),
        "closed before the header timeout: {:?}",
        opened.elapsed()
    );
    assert_eq!(served.get("/api/health").status, 200);
    served.stop();
}

/// Issue 12, D17: a truncated JSON body on `/mcp` was answered 415 (rmcp's answer to a body it
/// cannot read), where JSON-RPC asks for a parse error.
#[test]
fn d17_truncated_json_on_mcp_is_a_400_with_a_json_rpc_parse_error() {
    let (_project, served) = served_with_key(&[]);
    let truncated = &INITIALIZE[..40];
    let answer = mcp(&served, "POST", &[], Some(truncated));
    assert_eq!(answer.status, 400, "{}", answer.body);
    let body = answer.json();
    assert_eq!(body["jsonrpc"], "2.0", "{body}");
    assert_eq!(body["id"], Value::Null, "{body}");
    assert_eq!(body["error"]["code"], -32700, "{body}");
    assert_eq!(
        body["error"]["message"], "Parse error: EOF while parsing a string at line 1 column 40",
        "{body}"
    );
    // JSON that is not a JSON-RPC message is not a parse error but an invalid request (issue
    // 28: it was rmcp's bare 415).
    let not_a_message = mcp(&served, "POST", &[], Some("[1, 2]"));
    assert_eq!(not_a_message.status, 400, "{}", not_a_message.body);
    assert_eq!(
        not_a_message.json()["error"]["code"],
        -32600,
        "{}",
        not_a_message.body
    );
    // A whole request still reaches rmcp.
    assert_eq!(mcp(&served, "POST", &[], Some(INITIALIZE)).status, 200);
    served.stop();
}

/// Issue 12, D17: `DELETE /mcp` of a session that does not exist was 202, as if it had ended
/// one; MCP's transport answers 404 for an unknown session.
#[test]
fn d17_delete_of_an_unknown_mcp_session_is_404() {
    let (_project, served) = served_with_key(&[]);
    let initialized = mcp(&served, "POST", &[], Some(INITIALIZE));
    assert_eq!(initialized.status, 200, "{}", initialized.body);
    let session = initialized
        .header("mcp-session-id")
        .expect("a session id")
        .to_string();

    let unknown = mcp(
        &served,
        "DELETE",
        &[("Mcp-Session-Id", "no-such-session")],
        None,
    );
    assert_eq!(unknown.status, 404, "{}", unknown.body);
    assert_eq!(unknown.body, "Not Found: Session not found");
    let ended = mcp(&served, "DELETE", &[("Mcp-Session-Id", &session)], None);
    assert_eq!(ended.status, 202, "{}", ended.body);
    let again = mcp(&served, "DELETE", &[("Mcp-Session-Id", &session)], None);
    assert_eq!(again.status, 404, "{}", again.body);
    assert_eq!(again.body, "Not Found: Session not found");
    served.stop();
}
