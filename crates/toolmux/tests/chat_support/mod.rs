//! Talking to `toolmux serve`'s `/api/chat` and to `toolmux chat` as the chat tests do: with
//! the AI SDK's own client (`tests/peers/chat/ui-client.mjs`), as a raw event stream, and as a
//! person typing at the terminal.

#![allow(
    dead_code,
    reason = "each test binary uses its own part of these helpers"
)]

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use serde_json::json;
use toolmux_testkit::aimock::Aimock;
use toolmux_testkit::peers::peer_file;
use toolmux_testkit::project::TestProject;
use toolmux_testkit::served::{Served, config_with_key};

use crate::support::toolmux_project;

/// Runs the AI SDK's chat transport (`ui-client.mjs`) against `/api/chat` on `address` with the
/// API key `key` and returns `{chunks, message}`: the chunks as the `ai` package parsed them, and
/// the UI message its `readUIMessageStream` assembled.
pub fn ui_client(address: &str, key: &str, chat_id: &str, text: &str) -> serde_json::Value {
    let url = format!("http://{address}/api/chat");
    let output = Command::new("node")
        .env("TOOLMUX_API_KEY", key)
        .arg(peer_file("chat/ui-client.mjs"))
        .args([url.as_str(), chat_id, text])
        .output()
        .expect("run the AI SDK client");
    assert!(
        output.status.success(),
        "ui-client failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("ui-client prints JSON")
}

/// Posts `body` to `/api/chat` on `address` with the API key `key` and hands each stream event
/// to `on_event` as it arrives (so a test can answer approvals and questions mid-turn); returns
/// every event.
pub fn stream_chat(
    address: &str,
    key: &str,
    body: &serde_json::Value,
    mut on_event: impl FnMut(&serde_json::Value),
) -> Vec<serde_json::Value> {
    use std::io::Write;
    let mut stream = std::net::TcpStream::connect(address).expect("connect");
    let body = body.to_string();
    write!(
        stream,
        "POST /api/chat HTTP/1.1\r\nHost: {address}\r\nAuthorization: Bearer {key}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .expect("send");
    let mut events = Vec::new();
    for line in BufReader::new(stream).lines() {
        let line = line.expect("read");
        let Some(data) = line.strip_prefix("data: ") else {
            continue;
        };
        if data == "[DONE]" {
            break;
        }
        let event: serde_json::Value = serde_json::from_str(data).expect("each event is JSON");
        on_event(&event);
        events.push(event);
    }
    events
}

/// Runs `toolmux chat` as `command` with `typed` on its stdin, as a person at the terminal
/// would answer its prompts, and returns its stdout and stderr once it has exited successfully.
pub fn chat_typing(mut command: Command, typed: &str) -> (String, String) {
    use std::io::Write;
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start toolmux chat");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(typed.as_bytes())
        .expect("answer");
    let output = child.wait_with_output().expect("wait");
    let out = String::from_utf8_lossy(&output.stdout).into_owned();
    let err = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(output.status.success(), "{err}");
    (out, err)
}

/// The event of a turn's stream that ended call `call_id`: its output or its error.
pub fn tool_output<'a>(events: &'a [serde_json::Value], call_id: &str) -> &'a serde_json::Value {
    events
        .iter()
        .find(|e| {
            e["toolCallId"] == call_id
                && matches!(
                    e["type"].as_str(),
                    Some("tool-output-available" | "tool-output-error")
                )
        })
        .unwrap_or_else(|| panic!("no output of {call_id} in {events:#?}"))
}

/// A served project with a key, aimock as its only provider, `extra` config entries and a
/// `notes/todo.md` to read.
pub fn served(aimock: &Aimock, extra: &str) -> (TestProject, Served) {
    let project = toolmux_project();
    let provider = json!({"mock": aimock.openai_provider()});
    project.config(&config_with_key(&format!(
        r#""providers": {provider}{extra}"#
    )));
    project.write("notes/todo.md", "buy milk\n");
    let served = Served::start(&project, &[]);
    (project, served)
}
