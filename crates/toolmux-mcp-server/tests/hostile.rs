//! Hostile bodies on `/mcp`: nested too deep, too large, not JSON, JSON but not JSON-RPC. Each
//! gets a JSON-RPC error answer (never rmcp's bare `415`), and the server goes on serving.

#[allow(dead_code)] // each test binary uses a part of the shared helpers
mod common;

use std::time::Duration;

use common::{HttpServer, hub, post, raw_http};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use toolmux_mcp_server::ServeOptions;

/// How long an answer may take before the test calls it a hang; not a measure of anything.
const HANG: Duration = Duration::from_secs(30);

/// The HTTP status and the JSON body of the answer to a POST of `body` to `/mcp`. The body is
/// written by a task of its own: the server may answer (and close) before reading all of it.
async fn send(port: u16, body: Vec<u8>) -> (u16, Value) {
    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .expect("connect");
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nConnection: close\r\n\
         Content-Length: {}\r\n\r\n",
        body.len()
    );
    let (mut reader, mut writer) = stream.split();
    let write = async move {
        // A server that answered early closes the connection: the rest of the body is moot.
        let _ = writer.write_all(head.as_bytes()).await;
        let _ = writer.write_all(&body).await;
    };
    let mut answer = Vec::new();
    let read = async {
        let read = reader.read_to_end(&mut answer).await;
        if let Err(e) = read {
            assert!(!answer.is_empty(), "nothing read before {e}");
        }
    };
    tokio::time::timeout(HANG, futures::future::join(write, read))
        .await
        .expect("an answer, not a hang");
    let text = String::from_utf8_lossy(&answer);
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("not an HTTP response: {text:?}"));
    let (_, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let body = serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body:?}"));
    (status, body)
}

/// The answer is a JSON-RPC error without an id, of one of `codes`; its message.
fn json_rpc_error(answer: &Value, codes: &[i64]) -> String {
    assert_eq!(answer["jsonrpc"], "2.0", "{answer}");
    assert_eq!(answer["id"], Value::Null, "{answer}");
    let code = answer["error"]["code"].as_i64().unwrap_or_default();
    assert!(codes.contains(&code), "{answer}");
    answer["error"]["message"]
        .as_str()
        .expect("a message")
        .to_string()
}

/// The server still initialises a session.
async fn still_serves(port: u16) {
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "hostile-test", "version": "0"}}});
    let answer = raw_http(port, &post(port, &init, "")).await;
    assert_eq!(answer.status, 200, "{}", answer.body);
}

fn nested(open: &str, depth: usize, inner: &str, close: &str) -> Vec<u8> {
    format!("{}{inner}{}", open.repeat(depth), close.repeat(depth)).into_bytes()
}

/// Issue 28: a body nested deeper than the JSON parser's limit was answered `415` (rmcp could
/// not read it, and the check for a parse error skipped it as well-formed). It is a parse error,
/// which says why.
#[tokio::test]
async fn json_nested_too_deep_is_a_parse_error_that_says_so() {
    let server = HttpServer::start(hub(), ServeOptions::default()).await;
    let port = server.port;
    let bodies = [
        nested("[", 200, "", "]"),
        nested("{\"a\":", 200, "1", "}"),
        // A message whose parameters are nested too deep.
        format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{{\"x\":{}}}}}",
            String::from_utf8(nested("[", 300, "", "]")).expect("ASCII")
        )
        .into_bytes(),
    ];
    for body in bodies {
        let (status, answer) = send(port, body).await;
        assert_eq!(status, 400, "{answer}");
        let message = json_rpc_error(&answer, &[-32700]);
        assert!(
            message.starts_with("Parse error: the JSON is nested deeper than 127 levels"),
            "{message}"
        );
    }
    still_serves(port).await;
}

/// A body over the size cap keeps its `413`, with a JSON-RPC error saying the cap.
#[tokio::test]
async fn a_body_over_the_cap_is_refused_as_a_json_rpc_error() {
    let server = HttpServer::start(hub(), ServeOptions::default()).await;
    let port = server.port;
    let huge = format!("\"{}\"", "a".repeat(5 * 1024 * 1024)).into_bytes();
    let (status, answer) = send(port, huge).await;
    assert_eq!(status, 413, "{answer}");
    let message = json_rpc_error(&answer, &[-32600]);
    assert!(message.contains("4194304 bytes"), "{message}");
    still_serves(port).await;
}

/// Found in review of issue 28: a body over the cap sent chunked (`Transfer-Encoding: chunked`,
/// no `Content-Length` to refuse it by) is refused once the cap is passed, with the same
/// answer: the request's end is never sent here, so a server that buffered the whole body
/// before answering would never answer.
#[tokio::test]
async fn a_chunked_body_over_the_cap_is_refused_before_it_ends() {
    let server = HttpServer::start(hub(), ServeOptions::default()).await;
    let port = server.port;
    let stream = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .expect("connect");
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
    );
    let (mut reader, mut writer) = stream.into_split();
    let writing = tokio::spawn(async move {
        // 5 MiB of a JSON string in 64 KiB chunks, and never the last (empty) chunk. A server
        // that answered early stops reading: the writes may then fail, which is moot.
        let chunk = vec![b'a'; 64 * 1024];
        let mut sent = writer.write_all(head.as_bytes()).await;
        sent = match sent {
            Ok(()) => writer.write_all(b"1\r\n\"\r\n").await,
            failed => failed,
        };
        for _ in 0..80 {
            if sent.is_err() {
                break;
            }
            sent = writer
                .write_all(format!("{:x}\r\n", chunk.len()).as_bytes())
                .await;
            if sent.is_ok() {
                sent = writer.write_all(&chunk).await;
            }
            if sent.is_ok() {
                sent = writer.write_all(b"\r\n").await;
            }
        }
        // Held open, unfinished, until the answer has been read.
        std::future::pending::<()>().await;
        drop(writer);
    });
    let read = async {
        let mut answer = Vec::new();
        let mut buf = [0u8; 4096];
        // Until the head and as many body bytes as it announces are in.
        loop {
            let n = reader.read(&mut buf).await.expect("read the answer");
            assert!(
                n > 0,
                "closed without an answer: {:?}",
                String::from_utf8_lossy(&answer)
            );
            answer.extend_from_slice(&buf[..n]);
            let text = String::from_utf8_lossy(&answer).into_owned();
            if let Some((head, body)) = text.split_once("\r\n\r\n") {
                let length = head
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length: "))
                    .and_then(|l| l.trim().parse::<usize>().ok())
                    .unwrap_or_else(|| panic!("no content-length: {head}"));
                if body.len() >= length {
                    return (head.to_string(), body.to_string());
                }
            }
        }
    };
    let (head, body) = tokio::time::timeout(HANG, read)
        .await
        .expect("an answer before the body ended, not a hang");
    writing.abort();
    assert!(head.starts_with("HTTP/1.1 413 Payload Too Large"), "{head}");
    assert_eq!(
        serde_json::from_str::<Value>(&body).expect("JSON"),
        json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32600,
            "message": "Invalid Request: the body is larger than 4194304 bytes"}})
    );
    still_serves(port).await;
}

/// JSON that is not a JSON-RPC message is an invalid request (-32600), not rmcp's `415`; what
/// is not JSON at all is a parse error (-32700).
#[tokio::test]
async fn malformed_bodies_get_json_rpc_errors() {
    let server = HttpServer::start(hub(), ServeOptions::default()).await;
    let port = server.port;
    let not_messages: [&[u8]; 6] = [
        b"[1, 2]",
        b"42",
        b"\"text\"",
        b"null",
        b"{}",
        b"{\"jsonrpc\":\"2.0\",\"id\":{\"nested\":true},\"method\":7}",
    ];
    for body in not_messages {
        let (status, answer) = send(port, body.to_vec()).await;
        assert_eq!(status, 400, "{}: {answer}", String::from_utf8_lossy(body));
        let message = json_rpc_error(&answer, &[-32600]);
        assert!(message.starts_with("Invalid Request"), "{message}");
    }
    let not_json: [&[u8]; 7] = [
        b"",
        b"{",
        b"{\"jsonrpc\":\"2.0\",",
        b"\xff\xfe\x00",
        b"{\"a\":\"\xc3\x28\"}",
        b"\0\0\0\0",
        b"[1,]",
    ];
    for body in not_json {
        let (status, answer) = send(port, body.to_vec()).await;
        assert_eq!(status, 400, "{}: {answer}", String::from_utf8_lossy(body));
        let message = json_rpc_error(&answer, &[-32700]);
        assert!(message.starts_with("Parse error: "), "{message}");
    }
    still_serves(port).await;
}

/// A sweep over generated shapes and sizes: nesting from 1 to 2^20 levels, closed and
/// left open, of arrays, objects and both mixed. Every answer is the JSON-RPC error its shape
/// calls for, nothing aborts, and the server serves afterwards.
#[tokio::test]
async fn no_nesting_of_any_depth_or_shape_crashes_the_endpoint() {
    let server = HttpServer::start(hub(), ServeOptions::default()).await;
    let port = server.port;
    let shapes: [(&str, &str, &str); 3] = [
        ("[", "1", "]"),
        ("{\"k\":", "1", "}"),
        ("[{\"k\":", "1", "}]"),
    ];
    let mut depth = 1;
    while depth <= 1 << 20 {
        for (open, inner, close) in shapes {
            for closed in [true, false] {
                let body = nested(open, depth, inner, if closed { close } else { "" });
                let too_large = body.len() > 4 * 1024 * 1024;
                let levels = depth * open.matches(['[', '{']).count();
                let (status, answer) = send(port, body).await;
                let (expected_status, expected_code) = if too_large {
                    (413, -32600)
                } else if closed && levels < 128 {
                    // Well-formed and shallow enough: JSON, but not a message.
                    (400, -32600)
                } else {
                    (400, -32700)
                };
                let what = format!("{open} x {depth}, closed: {closed}");
                assert_eq!(status, expected_status, "{what}: {answer}");
                json_rpc_error(&answer, &[expected_code]);
            }
        }
        depth *= 4;
    }
    still_serves(port).await;
}
