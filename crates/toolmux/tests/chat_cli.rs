//! The chat through the real binary: `toolmux chat` in a terminal-less process, and
//! `toolmux serve`'s `/api/chat` read by the AI SDK's own client. The model is aimock, which
//! replays `tests/peers/chat/fixtures/chat.json` in OpenAI's exact streaming format.

mod chat_support;
mod support;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;

use chat_support::chat_typing;
use serde_json::{Value, json};
use support::toolmux_project;
use toolmux_testkit::aimock::Aimock;
use toolmux_testkit::http::request;
use toolmux_testkit::project::TestProject;
use toolmux_testkit::served::{KEY, Served};

/// A project with the release notes, a provider pointing at aimock, and the API key the chat
/// routes require (they sit behind the REST API's guard); `extra` adds keys.
fn project(aimock: &Aimock, extra: &str) -> TestProject {
    let project = toolmux_project();
    project.write("notes/release.md", "# Release\nThe codename is Bluefin.\n");
    project.write("plan.txt", "secret");
    let extra = extra.trim();
    let sep = if extra.is_empty() { "" } else { ", " };
    project.config(&format!(
        r#"{{"providers": {{"mock": {{"kind": "openai", "baseUrl": "{}/v1",
             "apiKey": "${{TOOLMUX_TEST_LLM_KEY:-not-a-secret}}", "defaultModel": "gpt-4o"}}}},
             "server": {{"apiKeys": ["${{TOOLMUX_TEST_KEY:-only-set-when-served}}"]}}{sep}{extra}}}"#,
        aimock.url
    ));
    project
}

fn conversations(project: &TestProject) -> Vec<Value> {
    let listed: Value =
        serde_json::from_str(&project.run(&["chat", "list", "--json"]).ok()).expect("JSON list");
    listed.as_array().expect("a list").clone()
}

#[test]
fn terminal_chat_quotes_the_file_and_resumes_the_conversation_in_a_new_process() {
    let aimock = Aimock::start("chat.json");
    let project = project(&aimock, "");
    let run = project.run(&["chat", "Where is the release codename defined?"]);
    let out = run.ok();
    assert!(out.contains("\"The codename is Bluefin.\""), "{out}");
    let err = run.stderr();
    assert!(err.contains("⚙ grep (workspace)"), "{err}");
    assert!(err.contains("↳ file_read ok"), "{err}");

    let list = conversations(&project);
    assert_eq!(list.len(), 1);
    let id = list[0]["id"].as_str().expect("id").to_string();
    assert_eq!(list[0]["title"], "Where is the release codename defined?");

    let out = project
        .run(&["chat", "--resume", &id, "Who chose the codename?"])
        .ok();
    assert_eq!(out.trim(), "The notes do not say who chose Bluefin.");
    let shown: Value =
        serde_json::from_str(&project.run(&["chat", "show", &id]).ok()).expect("JSON");
    assert_eq!(shown["messages"].as_array().expect("messages").len(), 8);

    project.run(&["chat", "rename", &id, "Codename"]).ok();
    assert_eq!(conversations(&project)[0]["title"], "Codename");
    project.run(&["chat", "delete", &id]).ok();
    assert!(conversations(&project).is_empty());
    let missing = project.run(&["chat", "delete", &id]);
    assert_eq!(missing.code(), 2, "{}", missing.stderr());
}

#[test]
fn terminal_chat_asks_for_approval_inline_and_a_no_reaches_the_model() {
    let aimock = Aimock::start("chat.json");
    let project = project(&aimock, r#""policies": {"tools": {"file_read": "ask"}}"#);
    let mut chat = project.cmd();
    chat.args(["chat", "Read the secret plan"]);
    let (out, err) = chat_typing(chat, "n\n");
    assert!(err.contains("allow? [y/N]"), "{err}");
    assert!(err.contains("denied"), "{err}");
    assert_eq!(out.trim(), "I was not allowed to read plan.txt.");
}

#[test]
fn a_missing_provider_is_a_usage_error_that_says_what_to_configure() {
    let project = toolmux_project();
    let run = project.run(&["chat", "hello"]);
    assert_eq!(run.code(), 2);
    assert!(
        run.stderr().contains("add one under `providers`"),
        "{}",
        run.stderr()
    );
}

fn ui_client(served: &Served, chat_id: &str, text: &str) -> Value {
    chat_support::ui_client(&served.address, KEY, chat_id, text)
}

#[test]
fn the_ai_sdk_client_reads_the_chat_stream_into_a_message_with_tool_parts() {
    let aimock = Aimock::start("chat.json");
    let project = project(&aimock, "");
    let served = Served::start(&project, &[]);
    let result = ui_client(&served, "chat-1", "Where is the release codename defined?");
    let types: Vec<&str> = result["chunks"]
        .as_array()
        .expect("chunks")
        .iter()
        .filter_map(|c| c["type"].as_str())
        .collect();
    assert_eq!(types.first(), Some(&"start"));
    assert_eq!(types.last(), Some(&"finish"));
    for expected in [
        "start-step",
        "tool-input-start",
        "tool-input-available",
        "tool-output-available",
        "finish-step",
        "text-start",
        "text-delta",
        "text-end",
    ] {
        assert!(
            types.contains(&expected),
            "{expected} missing from {types:?}"
        );
    }
    let parts = result["message"]["parts"].as_array().expect("parts");
    let tools: Vec<(&str, &str)> = parts
        .iter()
        .filter(|p| p["type"] == "dynamic-tool")
        .map(|p| {
            (
                p["toolName"].as_str().unwrap_or(""),
                p["state"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        tools,
        [
            ("grep", "output-available"),
            ("file_read", "output-available")
        ]
    );
    // The source reaches the AI SDK's part (as its `callProviderMetadata`), so a front end can
    // badge the call without guessing from the name.
    let sources: Vec<&Value> = parts
        .iter()
        .filter(|p| p["type"] == "dynamic-tool")
        .map(|p| &p["callProviderMetadata"]["toolmux"]["source"])
        .collect();
    assert_eq!(sources, [&json!("workspace"), &json!("workspace")]);
    let text: String = parts
        .iter()
        .filter(|p| p["type"] == "text")
        .filter_map(|p| p["text"].as_str())
        .collect();
    assert!(text.contains("\"The codename is Bluefin.\""), "{text}");
    assert_eq!(result["message"]["metadata"]["finishReason"], "stop");

    let shown = served.get_with_key("/api/conversations/chat-1");
    assert_eq!(shown.status, 200, "{}", shown.body);
    assert_eq!(
        shown.json()["messages"].as_array().expect("messages").len(),
        6
    );
    let listed = served.get_with_key("/api/conversations").json();
    assert_eq!(listed["conversations"][0]["id"], "chat-1");

    let models = served.get_with_key("/api/models").json();
    assert_eq!(models["providers"][0]["provider"], "mock", "{models}");
    assert_eq!(models["providers"][0]["defaultModel"], "gpt-4o", "{models}");
    assert!(
        models["providers"][0]["models"]
            .as_array()
            .is_some_and(|m| !m.is_empty()),
        "{models}"
    );
}

#[test]
fn a_rate_limited_provider_reaches_the_ai_sdk_client_as_an_error_chunk() {
    let aimock = Aimock::start("chat.json");
    let project = project(&aimock, "");
    let served = Served::start(&project, &[]);
    let result = ui_client(&served, "chat-429", "Are you rate limited?");
    let chunks = result["chunks"].as_array().expect("chunks");
    let last = chunks.last().expect("chunks");
    assert_eq!(last["type"], "error", "{chunks:?}");
    let text = last["errorText"].as_str().expect("errorText");
    assert!(text.contains("HTTP 429"), "{text}");
    assert!(text.contains("Rate limit exceeded"), "{text}");
}

fn stream_chat(address: &str, body: &Value, on_event: impl FnMut(&Value)) -> Vec<Value> {
    chat_support::stream_chat(address, KEY, body, on_event)
}

#[test]
fn approvals_and_questions_in_the_http_stream_are_answered_through_the_api() {
    let aimock = Aimock::start("chat.json");
    let project = project(&aimock, r#""policies": {"tools": {"file_read": "ask"}}"#);
    let served = Served::start(&project, &[]);
    let auth = format!("Bearer {KEY}");
    let headers = [
        ("Authorization", auth.as_str()),
        ("Content-Type", "application/json"),
    ];

    let events = stream_chat(
        &served.address,
        &json!({"conversation": "c-approve", "text": "Read the secret plan"}),
        |event| {
            if event["type"] == "data-approval" {
                let path = event["data"]["answer"].as_str().expect("answer path");
                let answered = request(
                    &served.address,
                    "POST",
                    path,
                    &headers,
                    Some(r#"{"decision": "deny", "reason": "not today"}"#),
                );
                assert!(answered.status < 300, "{}", answered.body);
            }
        },
    );
    let error = events
        .iter()
        .find(|e| e["type"] == "tool-output-error")
        .expect("a tool-output-error");
    assert!(
        error["errorText"]
            .as_str()
            .expect("text")
            .contains("not today")
    );
    assert!(events.iter().any(|e| {
        e["type"] == "text-delta"
            && e["delta"]
                .as_str()
                .is_some_and(|d| d.contains("not allowed"))
    }));

    let events = stream_chat(
        &served.address,
        &json!({"conversation": "c-ask", "text": "Pick a colour for me"}),
        |event| {
            if event["type"] == "data-input-request" {
                assert_eq!(event["data"]["question"], "Which colour do you like?");
                let path = event["data"]["answer"].as_str().expect("answer path");
                let body = json!({"answer": "teal", "id": event["data"]["requestId"]}).to_string();
                let answered = request(&served.address, "POST", path, &headers, Some(&body));
                assert_eq!(answered.status, 204, "{}", answered.body);
            }
        },
    );
    assert!(events.iter().any(|e| e["type"] == "data-input-request"));
    assert!(
        events
            .iter()
            .any(|e| e["type"] == "text-delta" && e["delta"] == "Teal it is.")
    );
}

#[test]
fn a_turn_is_cancelled_through_the_api_and_outlives_a_client_that_disconnects() {
    let aimock = Aimock::start("chat.json");
    let project = project(&aimock, "");
    let served = Served::start(&project, &[]);

    let events = stream_chat(
        &served.address,
        &json!({"conversation": "c-cancel", "text": "Tell me a long story"}),
        |event| {
            if event["type"] == "text-start" {
                let cancelled = served.request(
                    "POST",
                    "/api/chat/c-cancel/cancel",
                    &[("Authorization", &format!("Bearer {KEY}"))],
                    None,
                );
                assert_eq!(cancelled.status, 204, "{}", cancelled.body);
            }
        },
    );
    let last = events.last().expect("events");
    assert_eq!(last["type"], "finish", "{events:?}");
    assert_eq!(last["messageMetadata"]["finishReason"], "cancelled");

    // A client that goes away mid-answer (a page reloaded): the turn goes on to its end and is
    // saved, so the page that comes back finds it (issue 30).
    let mut stream = TcpStream::connect(&served.address).expect("connect");
    let body = json!({"conversation": "c-gone", "text": "Tell me a long story"}).to_string();
    write!(
        stream,
        "POST /api/chat HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {KEY}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        served.address,
        body.len()
    )
    .expect("send");
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    while !line.contains("text-delta") {
        line.clear();
        reader.read_line(&mut line).expect("read");
    }
    drop(reader);
    let shown = served.get("/api/conversations/c-gone");
    assert_eq!(shown.status, 200, "{}", shown.body);
    assert_eq!(shown.json()["running"], true, "{}", shown.body);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let ended = loop {
        let shown = served.get("/api/conversations/c-gone");
        assert_eq!(shown.status, 200, "{}", shown.body);
        if shown.json()["running"] == false {
            break shown.json();
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the abandoned turn never ended: {}",
            shown.body
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    let last = ended["messages"]
        .as_array()
        .and_then(|m| m.last())
        .cloned()
        .expect("messages");
    assert_eq!(last["role"], "assistant", "{ended}");
    assert_eq!(
        last["text"],
        "Once upon a time there was a registry of tools that served every agent in the land, \
         and it was very patient with slow readers.",
        "{ended}"
    );
}

#[test]
fn the_chat_routes_sit_behind_the_api_guard() {
    let aimock = Aimock::start("chat.json");
    let project = project(&aimock, "");
    let served = Served::start(&project, &[]);
    let body = r#"{"conversation": "c-guard", "text": "Say hello"}"#;
    let auth = format!("Bearer {KEY}");

    // A page on another site cannot make the browser start a turn (CSRF, DNS rebinding).
    let foreign = served.request(
        "POST",
        "/api/chat",
        &[
            ("Content-Type", "application/json"),
            ("Authorization", &auth),
            ("Origin", "https://evil.example"),
        ],
        Some(body),
    );
    assert_eq!(foreign.status, 403, "{}", foreign.body);
    let error: Value = serde_json::from_str(&foreign.body).expect("json error");
    assert_eq!(error["error"]["code"], "forbidden", "{error}");

    // Starting a turn changes state, so it needs the key, like every other such request.
    let anonymous = served.request(
        "POST",
        "/api/chat",
        &[("Content-Type", "application/json")],
        Some(body),
    );
    assert_eq!(anonymous.status, 401, "{}", anonymous.body);
    assert!(
        anonymous.body.contains("needs a credential"),
        "{}",
        anonymous.body
    );

    // Issue 12, D8: once a key is configured, reading the conversations needs it too, on
    // loopback as well (another user of the host is not the person who chatted).
    let conversations = served.request("GET", "/api/conversations", &[], None);
    assert_eq!(conversations.status, 401, "{}", conversations.body);
    let conversations = served.get_with_key("/api/conversations");
    assert_eq!(conversations.status, 200, "{}", conversations.body);
}
