//! A tiny HTTP/1.1 client on a plain TCP stream, with no client library between the test and
//! the bytes on the wire: one request, `Connection: close`, the whole response read.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use serde_json::Value;

/// One HTTP response.
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    /// The body as text (lossy: see `bytes` for a compressed one).
    pub body: String,
    /// The body's bytes, as sent (after de-chunking).
    pub bytes: Vec<u8>,
}

impl Response {
    /// The body as JSON.
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {} {}", self.status, self.body))
    }

    /// Every value of a header, by case-insensitive name (`Set-Cookie` comes once a cookie).
    pub fn headers_named(&self, name: &str) -> Vec<&str> {
        self.headers
            .iter()
            .filter(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
            .collect()
    }

    /// A header's value, by case-insensitive name.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// Asserts the status and the error body's code; returns the error object.
    pub fn error(&self, status: u16, code: &str) -> Value {
        assert_eq!(self.status, status, "{}", self.body);
        let body = self.json();
        assert_eq!(body["error"]["code"], code, "{}", self.body);
        assert!(body["error"]["message"].is_string(), "{}", self.body);
        assert!(body["error"]["details"].is_object(), "{}", self.body);
        body["error"].clone()
    }

    /// Asserts the status and the whole error body: `code`, `message` exactly, no details.
    pub fn exact_error(&self, status: u16, code: &str, message: &str) {
        assert_eq!(self.status, status, "{}", self.body);
        assert_eq!(
            self.json(),
            serde_json::json!({"error": {"code": code, "message": message, "details": {}}}),
        );
    }

    /// Asserts the status and that the body is the JSON-RPC error `/mcp` answers a refused
    /// request with (no id, code -32000, the REST API's stable `code` as its data); returns
    /// its message.
    pub fn json_rpc_refusal(&self, status: u16, code: &str) -> String {
        assert_eq!(self.status, status, "{}", self.body);
        let body = self.json();
        let message = body["error"]["message"]
            .as_str()
            .unwrap_or_else(|| panic!("no message: {body}"))
            .to_string();
        assert_eq!(
            body,
            serde_json::json!({"jsonrpc": "2.0", "id": null,
                "error": {"code": -32000, "message": message, "data": {"code": code}}}),
        );
        message
    }

    /// [`Response::json_rpc_refusal`] with its `message` exactly.
    pub fn exact_json_rpc_refusal(&self, status: u16, code: &str, message: &str) {
        assert_eq!(
            self.json_rpc_refusal(status, code),
            message,
            "{}",
            self.body
        );
    }
}

/// Sends one HTTP/1.1 request to `address` and reads the whole response.
pub fn request(
    address: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&str>,
) -> Response {
    let mut stream = TcpStream::connect(address).expect("connect to toolmux serve");
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .expect("set timeout");
    let has_host = headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host"));
    let mut head = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\n");
    if !has_host {
        head.push_str(&format!("Host: {address}\r\n"));
    }
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    let body = body.unwrap_or("");
    head.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
    stream.write_all(head.as_bytes()).expect("send head");
    stream.write_all(body.as_bytes()).expect("send body");
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).expect("read response");
    parse(&raw)
}

fn parse(raw: &[u8]) -> Response {
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a complete response head");
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let mut lines = head.split("\r\n");
    let status_line = lines.next().expect("status line");
    let status: u16 = status_line
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("bad status line {status_line:?}"));
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect();
    let rest = &raw[split + 4..];
    let chunked = headers
        .iter()
        .any(|(k, v)| k.eq_ignore_ascii_case("transfer-encoding") && v.contains("chunked"));
    let body = if chunked {
        dechunk(rest)
    } else {
        rest.to_vec()
    };
    Response {
        status,
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
        bytes: body,
    }
}

fn dechunk(mut data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let Some(eol) = data.windows(2).position(|w| w == b"\r\n") else {
            return out;
        };
        let size_text = String::from_utf8_lossy(&data[..eol]);
        let size = usize::from_str_radix(size_text.split(';').next().unwrap_or("0").trim(), 16)
            .expect("chunk size");
        if size == 0 {
            return out;
        }
        let start = eol + 2;
        out.extend_from_slice(&data[start..start + size]);
        data = &data[start + size + 2..];
    }
}

/// One request a [`scripted_server`] received.
pub struct Received {
    /// The request's path (`/mcp`).
    pub path: String,
    /// The request line and headers, lower-cased.
    pub head: String,
    /// The body (`Content-Length` bytes of it).
    pub body: Vec<u8>,
}

/// What a [`scripted_server`] answers: status line text, extra header lines (each ending in
/// `\r\n`), content type and body.
pub struct Answer {
    pub status: &'static str,
    pub headers: String,
    pub content_type: &'static str,
    pub body: String,
}

/// A plain HTTP/1.1 server on a loopback port standing for a peer a test scripts (a hostile
/// upstream, a hostile authorization server, a hostile page): each request is read whole and
/// answered with what `answer` says, then the connection is closed. Its address.
pub fn scripted_server(
    answer: impl Fn(&Received) -> Answer + Send + 'static,
) -> std::net::SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let address = listener.local_addr().expect("address");
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") {
                match stream.read(&mut byte) {
                    Ok(1) => head.push(byte[0]),
                    _ => break,
                }
            }
            let head = String::from_utf8_lossy(&head).to_lowercase();
            let length = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|l| l.trim().parse::<usize>().ok())
                .unwrap_or(0);
            let mut body = vec![0u8; length];
            let _ = stream.read_exact(&mut body);
            let path = head.split_whitespace().nth(1).unwrap_or("/").to_string();
            let answer = answer(&Received { path, head, body });
            let response = format!(
                "HTTP/1.1 {}\r\n{}Content-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{}",
                answer.status,
                answer.headers,
                answer.content_type,
                answer.body.len(),
                answer.body
            );
            let _ = stream.write_all(response.as_bytes());
        }
    });
    address
}
