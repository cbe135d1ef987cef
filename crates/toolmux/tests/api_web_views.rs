//! The REST routes the web app's pages stand on, through the real `toolmux serve`: the
//! execution log followed live (`GET /api/logs/stream`, which sees a CLI call made in another
//! process and ends when the server stops), `toolmux import` over REST (`POST /api/import`),
//! and an upstream server's transport, on/off state and stderr tail.

mod support;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use serde_json::json;
use support::toolmux_project;
use toolmux_testkit::peers::node_peer;
use toolmux_testkit::served::Served;

/// Opens `path` as an event stream and returns the reader once the headers are in.
fn open_stream(served: &Served, path: &str) -> BufReader<TcpStream> {
    let mut socket = TcpStream::connect(&served.address).expect("connect");
    socket
        .set_read_timeout(Some(Duration::from_secs(30)))
        .expect("read timeout");
    write!(
        socket,
        "GET {path} HTTP/1.1\r\nHost: {}\r\nAuthorization: {}\r\nAccept: text/event-stream\r\n\r\n",
        served.address,
        served.authorization()
    )
    .expect("send");
    let mut reader = BufReader::new(socket);
    let mut status = String::new();
    reader.read_line(&mut status).expect("status line");
    assert!(status.contains(" 200 "), "{status}");
    let mut content_type = String::new();
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).expect("header");
        if line.trim().is_empty() {
            break;
        }
        if line.to_ascii_lowercase().starts_with("content-type:") {
            content_type = line;
        }
    }
    assert!(content_type.contains("text/event-stream"), "{content_type}");
    reader
}

#[test]
fn the_log_stream_sends_a_call_from_another_process_and_ends_with_the_server() {
    let project = toolmux_project();
    project.write("notes/release.md", "The codename is Bluefin.\n");
    let served = Served::start(&project, &[]);
    let mut stream = open_stream(&served, "/api/logs/stream?tool=file_read");
    // A call of another tool is filtered out; the CLI's call of file_read arrives.
    let other = project.run(&["tools", "call", "file_search", "-a", "pattern=**/*.md"]);
    assert_eq!(other.code(), 0, "{}", other.stderr());
    let run = project.run(&["tools", "call", "file_read", "-a", "path=notes/release.md"]);
    assert_eq!(run.code(), 0, "{}", run.stderr());
    let mut event = String::new();
    let data = loop {
        let mut line = String::new();
        let read = stream.read_line(&mut line).expect("an event");
        assert!(read > 0, "the stream ended before the call came");
        // Chunked framing lines and comments are not events.
        if line.starts_with("event: ") {
            event = line.trim().to_string();
        } else if let Some(data) = line.strip_prefix("data: ") {
            break data.to_string();
        }
    };
    assert_eq!(event, "event: entry");
    let entry: serde_json::Value = serde_json::from_str(&data).expect("JSON");
    assert_eq!(entry["tool"], "file_read", "{entry}");
    assert_eq!(entry["channel"], "cli", "{entry}");
    assert_eq!(entry["outcome"], "ok", "{entry}");

    // The open stream does not hold the server's stop (which must take well under the
    // connections' grace), and it ends.
    let stopping = Instant::now();
    served.stop();
    assert!(
        stopping.elapsed() < Duration::from_secs(4),
        "the stop took {:?}",
        stopping.elapsed()
    );
    let mut rest = String::new();
    while stream.read_line(&mut rest).is_ok_and(|n| n > 0) {}
}

#[test]
fn a_bad_filter_of_the_log_stream_is_a_400() {
    let project = toolmux_project();
    let served = Served::start(&project, &[]);
    let bad = served.get("/api/logs/stream?outcome=maybe");
    assert_eq!(bad.status, 400, "{}", bad.body);
    assert_eq!(bad.json()["error"]["code"], "malformed");
}

#[test]
fn import_adds_the_servers_of_claude_codes_file_and_keeps_a_name_toolmux_has() {
    let project = toolmux_project();
    let memory = node_peer("upstream", "mcp-server-memory");
    project.config(
        &json!({"mcpServers": {"kept": {"command": memory.display().to_string()}}}).to_string(),
    );
    project.write(
        ".mcp.json",
        &json!({"mcpServers": {
            "memory": {"command": memory.display().to_string()},
            "kept": {"command": "something-else"},
        }})
        .to_string(),
    );
    let served = Served::start(&project, &[]);

    let dry = served.post("/api/import", r#"{"dryRun": true}"#);
    assert_eq!(dry.status, 200, "{}", dry.body);
    assert_eq!(dry.json()["servers"], json!(["memory"]), "{}", dry.body);
    assert!(project.saved_config()["mcpServers"].get("memory").is_none());

    let done = served.post("/api/import", "{}");
    assert_eq!(done.status, 200, "{}", done.body);
    let report = done.json();
    assert_eq!(report["servers"], json!(["memory"]), "{report}");
    assert!(
        report["files"][0]
            .as_str()
            .is_some_and(|f| f.ends_with(".mcp.json")),
        "{report}"
    );
    let skipped = report["skipped"].to_string();
    assert!(skipped.contains("kept"), "{report}");
    let saved = project.saved_config();
    assert!(saved["mcpServers"]["memory"].is_object(), "{saved}");
    assert_ne!(
        saved["mcpServers"]["kept"]["command"], "something-else",
        "{saved}"
    );
    // It is applied at once and discovered in the background.
    let deadline = Instant::now() + Duration::from_secs(60);
    while served.tool_names("memory").is_empty() {
        assert!(Instant::now() < deadline, "memory's tools never came");
        std::thread::sleep(Duration::from_millis(200));
    }

    let from_nowhere = served.post("/api/import", r#"{"from": "cursor"}"#);
    assert_eq!(from_nowhere.status, 404, "{}", from_nowhere.body);
}

#[test]
fn a_stdio_servers_view_shows_its_transport_state_and_stderr_tail() {
    let project = toolmux_project();
    let everything = node_peer("upstream", "mcp-server-everything");
    project.config(
        &json!({"mcpServers": {
            "everything": {"command": everything.display().to_string()},
            "remote": {"url": "http://127.0.0.1:9/mcp", "enabled": false},
        }})
        .to_string(),
    );
    let served = Served::start(&project, &[]);
    let refreshed = served.post("/api/mcp-servers/everything/refresh", "");
    assert_eq!(refreshed.status, 200, "{}", refreshed.body);

    let list = served.get("/api/mcp-servers");
    let servers = list.json()["servers"].clone();
    let remote = servers
        .as_array()
        .and_then(|s| s.iter().find(|s| s["name"] == "remote"))
        .expect("remote is listed");
    assert_eq!(remote["transport"], "http");
    assert_eq!(remote["enabled"], false);

    let view = served.get("/api/mcp-servers/everything");
    assert_eq!(view.status, 200, "{}", view.body);
    let view = view.json();
    assert_eq!(view["transport"], "stdio");
    assert_eq!(view["enabled"], true);
    let tail: Vec<&str> = view["stderrTail"]
        .as_array()
        .expect("stderrTail")
        .iter()
        .filter_map(|l| l.as_str())
        .collect();
    assert!(
        tail.iter()
            .any(|l| l.starts_with("--- ") && l.contains(" started pid ")),
        "{tail:?}"
    );
    let missing = served.get("/api/mcp-servers/nothing");
    assert_eq!(missing.status, 404);
}
