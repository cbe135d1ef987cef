//! What an MCP server sends back while its tool runs in a chat turn — progress, sampling and
//! elicitation requests — reaching the person and the turn's model. The server is the MCP
//! conformance fixture (`tests/peers/mcp/conformance_fixture.py`); the model is aimock, which
//! replays `tests/peers/chat/fixtures/backchannel.json` (it scripts the model calling the
//! fixture's tools, and answers the sampling request the fixture sends).

mod chat_support;
mod support;

use chat_support::{chat_typing, stream_chat, tool_output, ui_client};
use serde_json::{Value, json};
use support::toolmux_project;
use toolmux_testkit::aimock::Aimock;
use toolmux_testkit::eventually::wait_until;
use toolmux_testkit::http::request;
use toolmux_testkit::peers::{peer_file, python};
use toolmux_testkit::project::TestProject;
use toolmux_testkit::served::{KEY, Served};

/// The prompt the fixture's `test_sampling` tool sends to the caller's model (set by the model's
/// tool call in the aimock fixture).
const SAMPLING_PROMPT: &str = "Name the colour of the deep sea";

/// A served [`project`] whose model is aimock replaying the backchannel fixture. The fields
/// drop in order: the server stops before its project folder and its model go.
struct Fixture {
    served: Served,
    _project: TestProject,
    aimock: Aimock,
}

fn serve() -> Fixture {
    serve_with(None, None)
}

/// [`serve`] with `chat.sampling` and the `conformance` server's own `sampling` set (left out
/// when `None`).
fn serve_with(chat: Option<&str>, server: Option<&str>) -> Fixture {
    let aimock = Aimock::start("backchannel.json");
    let project = project_with(&aimock, chat, server);
    let served = Served::start(&project, &[]);
    Fixture {
        served,
        _project: project,
        aimock,
    }
}

/// A project whose chat model is aimock and which has the conformance fixture as MCP server
/// `conformance`, its tools discovered.
fn project(aimock: &Aimock) -> TestProject {
    project_with(aimock, None, None)
}

/// [`project`] with `chat.sampling` and the `conformance` server's own `sampling` set (left out
/// when `None`).
fn project_with(aimock: &Aimock, chat: Option<&str>, server: Option<&str>) -> TestProject {
    let python = python();
    let fixture = peer_file("mcp/conformance_fixture.py");
    let project = toolmux_project();
    let mut config = json!({
            "providers": {"mock": aimock.openai_provider()},
            "server": {"apiKeys": [KEY]},
            "mcpServers": {"conformance": {
                "command": python,
                "args": [fixture]
            }}
    });
    if let Some(sampling) = chat {
        config["chat"] = json!({"sampling": sampling});
    }
    if let Some(sampling) = server {
        config["mcpServers"]["conformance"]["sampling"] = json!(sampling);
    }
    project.config(&config.to_string());
    project.run(&["mcp", "refresh"]).ok();
    project
}

/// The sampling requests aimock received: the requests whose messages include a user message
/// that is the fixture's sampling prompt (the chat's own requests only carry it inside a tool
/// call's arguments).
fn sampling_requests(aimock: &Aimock) -> Vec<Value> {
    let address = aimock.url.trim_start_matches("http://");
    let journal = request(address, "GET", "/__aimock/journal", &[], None);
    assert_eq!(journal.status, 200, "{}", journal.body);
    let entries: Vec<Value> = serde_json::from_str(&journal.body).expect("the journal is a list");
    entries
        .into_iter()
        .map(|entry| entry["body"].clone())
        .filter(|body| {
            body["messages"].as_array().is_some_and(|messages| {
                messages.iter().any(|m| {
                    m["role"] == "user" && m["content"].to_string().contains(SAMPLING_PROMPT)
                })
            })
        })
        .collect()
}

/// Sends `text` as conversation `chat_id` through the AI SDK's client to a served project whose
/// model replays the backchannel fixture; returns `{chunks, message}` (see
/// [`chat_support::ui_client`]).
fn ui_chat(chat_id: &str, text: &str) -> Value {
    ui_client(&serve().served.address, KEY, chat_id, text)
}

/// Answers the approval a `data-approval` event asks for with `decision` (the body of
/// `POST /api/approvals/{id}`).
fn answer_approval(served: &Served, event: &Value, decision: &str) {
    let path = event["data"]["answer"].as_str().expect("answer path");
    let answered = served.post(path, decision);
    assert!(answered.status < 300, "{}", answered.body);
}

/// Asserts that call `call_id` returned `content` and that the model's answer after it was
/// `answer`.
fn assert_outcome(events: &[Value], call_id: &str, content: &str, answer: &str) {
    let output = tool_output(events, call_id);
    assert_eq!(output["type"], "tool-output-available", "{output}");
    assert_eq!(output["output"]["content"], content, "{output}");
    assert_eq!(text(events), answer);
}

fn text(events: &[Value]) -> String {
    events
        .iter()
        .filter(|e| e["type"] == "text-delta")
        .filter_map(|e| e["delta"].as_str())
        .collect()
}

#[test]
fn a_tools_progress_reaches_the_ai_sdk_client_as_transient_parts_before_its_output() {
    let result = ui_chat("c-progress", "Run the slow job");
    let chunks = result["chunks"].as_array().expect("chunks");
    assert!(
        !chunks.iter().any(|c| c["type"] == "error"),
        "the AI SDK reported an error: {chunks:?}"
    );
    let progress: Vec<(usize, &Value)> = chunks
        .iter()
        .enumerate()
        .filter(|(_, c)| c["type"] == "data-tool-progress")
        .collect();
    let steps: Vec<(f64, f64, &str)> = progress
        .iter()
        .map(|(_, c)| {
            assert_eq!(c["transient"], true, "{c}");
            assert_eq!(c["data"]["toolCallId"], "call_progress", "{c}");
            (
                c["data"]["progress"].as_f64().expect("progress"),
                c["data"]["total"].as_f64().expect("total"),
                c["data"]["message"].as_str().expect("message"),
            )
        })
        .collect();
    assert_eq!(
        steps,
        [
            (0.0, 100.0, "Completed step 1 of 3"),
            (50.0, 100.0, "Completed step 2 of 3"),
            (100.0, 100.0, "Completed step 3 of 3"),
        ]
    );
    let output = chunks
        .iter()
        .position(|c| c["type"] == "tool-output-available" && c["toolCallId"] == "call_progress")
        .expect("the tool's output");
    assert!(
        progress.iter().all(|(at, _)| *at < output),
        "progress after the output: {chunks:?}"
    );
    // Transient parts are for the moment: the assembled message keeps none of them.
    let parts = result["message"]["parts"].as_array().expect("parts");
    assert!(
        !parts.iter().any(|p| p["type"] == "data-tool-progress"),
        "{parts:?}"
    );
    assert!(
        parts
            .iter()
            .any(|p| p["type"] == "text" && p["text"] == "The slow job is done."),
        "{parts:?}"
    );
}

#[test]
fn a_servers_log_messages_reach_the_ai_sdk_client_as_transient_parts() {
    let result = ui_chat("c-logging", "Run the chatty job");
    let chunks = result["chunks"].as_array().expect("chunks");
    let logs: Vec<&Value> = chunks
        .iter()
        .filter(|c| c["type"] == "data-tool-log")
        .collect();
    let expected: Vec<Value> = [
        "Tool execution started",
        "Tool processing data",
        "Tool execution completed",
    ]
    .iter()
    .map(|data| {
        json!({"type": "data-tool-log", "transient": true, "data": {
            "toolCallId": "call_logging", "level": "info",
            "logger": "conformance_fixture", "data": data
        }})
    })
    .collect();
    assert_eq!(logs, expected.iter().collect::<Vec<_>>(), "{chunks:?}");
    assert_eq!(
        result["message"]["metadata"]["finishReason"], "stop",
        "{result}"
    );
}

#[test]
fn the_terminal_chat_shows_a_tools_progress_on_stderr() {
    let aimock = Aimock::start("backchannel.json");
    let project = project(&aimock);
    let run = project.run(&["chat", "Run the slow job"]);
    assert_eq!(run.ok().trim(), "The slow job is done.");
    let err = run.stderr();
    for line in [
        "… conformance__test_tool_with_progress 0/100 Completed step 1 of 3",
        "… conformance__test_tool_with_progress 50/100 Completed step 2 of 3",
        "… conformance__test_tool_with_progress 100/100 Completed step 3 of 3",
    ] {
        assert!(err.contains(line), "{line:?} missing from {err}");
    }
}

#[test]
fn a_servers_sampling_request_reaches_the_model_only_after_approval_and_its_answer_the_tool() {
    let fixture = serve();
    let (served, aimock) = (&fixture.served, &fixture.aimock);
    let mut asked = 0;
    let events = stream_chat(
        &served.address,
        KEY,
        &json!({"conversation": "c-sample", "text": "Ask the server to think"}),
        |event| {
            if event["type"] == "data-approval" {
                asked += 1;
                let message = event["data"]["message"].as_str().expect("message");
                assert!(
                    message.starts_with("server `conformance` asks your model (gpt-4o): ")
                        && message.contains(SAMPLING_PROMPT),
                    "{message}"
                );
                assert!(
                    sampling_requests(aimock).is_empty(),
                    "the model was asked before the person approved"
                );
                answer_approval(served, event, r#"{"decision": "allow"}"#);
            }
        },
    );
    assert_eq!(asked, 1, "{events:?}");
    let sampled = sampling_requests(aimock);
    assert_eq!(sampled.len(), 1, "{sampled:?}");
    // Without tools: the server asked for a completion, not for the chat's tools.
    assert!(sampled[0].get("tools").is_none(), "{}", sampled[0]);
    assert_eq!(sampled[0]["max_tokens"], 100, "{}", sampled[0]);
    assert_outcome(
        &events,
        "call_sample",
        "LLM response: Midnight blue.",
        "The server's model says: midnight blue.",
    );
}

#[test]
fn a_denied_sampling_request_never_reaches_the_model() {
    let fixture = serve();
    let (served, aimock) = (&fixture.served, &fixture.aimock);
    let events = stream_chat(
        &served.address,
        KEY,
        &json!({"conversation": "c-no-sample", "text": "Ask the server to think"}),
        |event| {
            if event["type"] == "data-approval" {
                answer_approval(
                    served,
                    event,
                    r#"{"decision": "deny", "reason": "not my tokens"}"#,
                );
            }
        },
    );
    assert!(sampling_requests(aimock).is_empty());
    let output = tool_output(&events, "call_sample");
    let shown = output.to_string();
    assert!(shown.contains("not my tokens"), "{shown}");
    assert_eq!(text(&events), "The server could not use your model.");
}

/// Runs "Ask the server to think" on `fixture` and returns the stream's events, failing when
/// the person is asked to approve anything: these settings decide without asking.
fn sample_without_asking(fixture: &Fixture, conversation: &str) -> Vec<Value> {
    stream_chat(
        &fixture.served.address,
        KEY,
        &json!({"conversation": conversation, "text": "Ask the server to think"}),
        |event| {
            assert_ne!(
                event["type"], "data-approval",
                "the person was asked although configuration decides: {event}"
            );
        },
    )
}

/// Asserts that the sampling request was refused by configuration naming `setting`, without
/// reaching the model.
fn assert_refused_by(fixture: &Fixture, events: &[Value], setting: &str) {
    assert!(sampling_requests(&fixture.aimock).is_empty());
    let output = tool_output(events, "call_sample").to_string();
    assert!(
        output.contains("sampling is denied by configuration")
            && output.contains(&format!("`{setting}` is `deny`")),
        "{output}"
    );
    assert_eq!(text(events), "The server could not use your model.");
}

/// Asserts that the sampling request reached the model once and its answer the tool.
fn assert_answered_by_the_model(fixture: &Fixture, events: &[Value]) {
    assert_eq!(sampling_requests(&fixture.aimock).len(), 1);
    assert_outcome(
        events,
        "call_sample",
        "LLM response: Midnight blue.",
        "The server's model says: midnight blue.",
    );
}

#[test]
fn allowed_sampling_reaches_the_model_without_asking_the_person() {
    let fixture = serve_with(Some("allow"), None);
    let events = sample_without_asking(&fixture, "c-sample-allowed");
    assert_answered_by_the_model(&fixture, &events);
}

#[test]
fn denied_sampling_is_refused_without_asking_and_never_reaches_the_model() {
    let fixture = serve_with(Some("deny"), None);
    let events = sample_without_asking(&fixture, "c-sample-denied");
    assert_refused_by(&fixture, &events, "chat.sampling");
}

#[test]
fn a_servers_own_sampling_setting_wins_over_the_chats() {
    let allowed = serve_with(Some("deny"), Some("allow"));
    let events = sample_without_asking(&allowed, "c-sample-server-allowed");
    assert_answered_by_the_model(&allowed, &events);
    drop(allowed);
    let denied = serve_with(Some("allow"), Some("deny"));
    let events = sample_without_asking(&denied, "c-sample-server-denied");
    assert_refused_by(&denied, &events, "mcpServers.conformance.sampling");
}

#[test]
fn a_sampling_setting_edited_while_serve_runs_applies_to_the_next_request() {
    let fixture = serve_with(Some("deny"), None);
    let events = sample_without_asking(&fixture, "c-sample-before-edit");
    assert_refused_by(&fixture, &events, "chat.sampling");

    let mut config = fixture._project.saved_config();
    config["chat"]["sampling"] = json!("allow");
    // A script tool added in the same edit shows when the reload has been applied.
    config["tools"] = json!({"hello": {"description": "Greets.", "command": ["echo", "hi"]}});
    fixture._project.config(&config.to_string());
    wait_until("the reloaded configuration", || {
        fixture.served.tool_names("scripts") == ["hello"]
    });
    assert!(
        !fixture.served.stderr().contains("`chat` changed"),
        "a sampling change needs no restart: {}",
        fixture.served.stderr()
    );
    let events = sample_without_asking(&fixture, "c-sample-after-edit");
    assert_answered_by_the_model(&fixture, &events);
}

#[test]
fn the_tokens_of_a_sampling_answer_count_in_the_turns_usage() {
    let fixture = serve_with(Some("allow"), None);
    let events = sample_without_asking(&fixture, "c-sample-usage");
    let finish = events
        .iter()
        .find(|e| e["type"] == "finish")
        .unwrap_or_else(|| panic!("no finish in {events:?}"));
    // The fixture's counts: the tool call (10 in, 1 out), the sampling answer (1000, 100) and
    // the final answer (20, 2).
    assert_eq!(
        finish["messageMetadata"]["usage"],
        json!({"inputTokens": 1030, "outputTokens": 103}),
        "{finish}"
    );
}

/// Runs "Register me with the server" and answers the server's form with each of `answers` in
/// turn (an answer that does not fit leaves the form open for the next); returns the stream's
/// events and the status each answer got.
fn register(served: &Served, conversation: &str, answers: &[Value]) -> (Vec<Value>, Vec<u16>) {
    let mut statuses = Vec::new();
    let events = stream_chat(
        &served.address,
        KEY,
        &json!({"conversation": conversation, "text": "Register me with the server"}),
        |event| {
            if event["type"] == "data-input-request" {
                let data = &event["data"];
                assert_eq!(data["question"], "Who are you?", "{data}");
                assert_eq!(data["asker"], "conformance", "{data}");
                assert_eq!(
                    data["form"]["required"],
                    json!(["username", "email"]),
                    "{data}"
                );
                let path = data["answer"].as_str().expect("answer path");
                for answer in answers {
                    let mut body = answer.clone();
                    body["id"] = data["requestId"].clone();
                    let answered = served.post(path, &body.to_string());
                    statuses.push(answered.status);
                    if answered.status == 204 {
                        break;
                    }
                    assert_eq!(answered.json()["error"]["code"], "invalid_answer");
                    assert!(
                        answered.body.contains("email"),
                        "the reason names the field: {}",
                        answered.body
                    );
                }
            }
        },
    );
    (events, statuses)
}

#[test]
fn a_servers_form_reaches_the_person_and_their_answer_reaches_the_tool() {
    let fixture = serve();
    let served = &fixture.served;

    let (events, statuses) = register(
        served,
        "c-form",
        &[json!({"answer": {"username": "ada", "email": "ada@example.com"}})],
    );
    assert_eq!(statuses, [204]);
    assert_outcome(
        &events,
        "call_elicit",
        r#"User response: action=accept, content={"email": "ada@example.com", "username": "ada"}"#,
        "You are registered.",
    );

    // An answer that does not fit the form is not passed on as if it did: the person hears why
    // and the form stays open (the one rule, as over `/api/inputs` and MCP elicitation); the
    // person then declines, and the server hears a decline.
    let (events, statuses) = register(
        served,
        "c-misfit",
        &[
            json!({"answer": {"username": "ada"}}),
            json!({"action": "decline"}),
        ],
    );
    assert_eq!(statuses, [422, 204]);
    assert_outcome(
        &events,
        "call_elicit",
        "User response: action=decline, content={}",
        "You declined to register.",
    );
}

/// Found in review of issue 28 (THREATS.md rule 1): an answer to a form was checked with no
/// bound on its depth or size, inside the lock every approval and question waits behind. An
/// answer nested too deep or too large, posted to `POST /api/chat/{id}/input`, is refused with
/// why, the form still open; the person then declines, and the server hears a decline.
#[test]
fn an_answer_too_deep_or_too_large_is_refused_and_the_form_stays_open() {
    let fixture = serve();
    let served = &fixture.served;
    let mut deep = json!("ada");
    for _ in 0..40 {
        deep = Value::Array(vec![deep]);
    }
    let hostile = [
        json!({"answer": {"username": deep, "email": "ada@example.com"}}),
        json!({"answer": {"username": "x".repeat(300 * 1024), "email": "ada@example.com"}}),
    ];
    let mut answered = Vec::new();
    let events = stream_chat(
        &served.address,
        KEY,
        &json!({"conversation": "c-hostile", "text": "Register me with the server"}),
        |event| {
            if event["type"] == "data-input-request" {
                let data = &event["data"];
                let path = data["answer"].as_str().expect("answer path");
                for answer in hostile.iter().chain([&json!({"action": "decline"})]) {
                    let mut body = answer.clone();
                    body["id"] = data["requestId"].clone();
                    let response = served.post(path, &body.to_string());
                    let body = (!response.body.is_empty()).then(|| response.json());
                    answered.push((response.status, body));
                }
            }
        },
    );
    let refusal = |why: &str| {
        Some(json!({"error": {
            "code": "invalid_answer",
            "message": format!("the answer does not fit the form, so the question still waits: {why}"),
            "details": {},
        }}))
    };
    assert_eq!(
        answered,
        [
            (422, refusal("the answer nests deeper than 32 levels")),
            (422, refusal("the answer is larger than 256 KiB serialized")),
            (204, None),
        ]
    );
    assert_outcome(
        &events,
        "call_elicit",
        "User response: action=decline, content={}",
        "You declined to register.",
    );
}

#[test]
fn the_terminal_chat_asks_a_servers_form_field_by_field() {
    let aimock = Aimock::start("backchannel.json");
    let project = project(&aimock);
    let mut chat = project.cmd();
    chat.args(["chat", "Register me with the server"]);
    let (out, err) = chat_typing(chat, "ada\nada@example.com\n");
    assert!(err.contains("? conformance asks: Who are you?"), "{err}");
    assert!(err.contains("username (User's response)> "), "{err}");
    assert!(err.contains("email (User's email address)> "), "{err}");
    assert_eq!(out.trim(), "You are registered.");
}

#[test]
fn a_cancelled_turn_withdraws_the_servers_form_instead_of_waiting_forever() {
    let fixture = serve();
    let served = &fixture.served;
    let auth = format!("Bearer {KEY}");
    let mut request_id = None;
    let events = stream_chat(
        &served.address,
        KEY,
        &json!({"conversation": "c-gone", "text": "Register me with the server"}),
        |event| {
            if event["type"] == "data-input-request" {
                request_id = Some(event["data"]["requestId"].clone());
                let cancelled = served.request(
                    "POST",
                    "/api/chat/c-gone/cancel",
                    &[("Authorization", &auth)],
                    None,
                );
                assert_eq!(cancelled.status, 204, "{}", cancelled.body);
            }
        },
    );
    let last = events.last().expect("events");
    assert_eq!(
        last["messageMetadata"]["finishReason"], "cancelled",
        "{events:?}"
    );
    // The form is gone: an answer now finds nothing waiting.
    let body = json!({"answer": {"username": "ada", "email": "ada@example.com"}, "id": request_id})
        .to_string();
    let late = served.post("/api/chat/c-gone/input", &body);
    assert_eq!(late.status, 404, "{}", late.body);
}
