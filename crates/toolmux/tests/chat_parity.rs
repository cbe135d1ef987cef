//! The chat as one more channel (#17, #18): with aimock as the model, the chat's calls of the
//! issue-17 tools give the results the same calls give over REST (which `api_parity.rs`,
//! `exec_parity.rs` and `tasks_parity.rs` hold equal to MCP's and code mode's), the model's
//! question reaches the person and its answer the model, and an approval answered "allow for
//! this conversation" lets the tool's later calls in that conversation run without asking —
//! decided by the server, logged with that approval's id, never across conversations, never
//! for a denial.
//!
//! Capabilities and where the chat reaches them:
//! - tools: every tool of the catalog the chat is offered (below, and `chat_cli.rs`);
//! - approvals and human input: below, and `chat_backchannel.rs` (a server's forms and
//!   sampling);
//! - toolmux's own resources (`spec://…`) and skills: through their tools (`spec_view`,
//!   `skill_load`), which the chat is offered like any other;
//! - **gap**: the upstream servers' prompts and resources (relayed to MCP and REST by
//!   `toolmux-upstream`'s relay) are not offered to the chat's model; the chat reaches an
//!   upstream server through its tools only.

mod chat_support;
mod support;

use chat_support::{served, stream_chat, tool_output};
use serde_json::{Value, json};
use toolmux_testkit::aimock::Aimock;
use toolmux_testkit::eventually::wait_until;
use toolmux_testkit::served::{KEY, Served};

/// A chain of fixtures: the user's message starts `calls[0]`, each call's result the next, the
/// last one's result the final answer.
fn chain(user: &str, calls: &[(&str, &str, Value)], answer: &str) -> Vec<Value> {
    let mut fixtures = Vec::new();
    for (n, (id, name, arguments)) in calls.iter().enumerate() {
        let call =
            json!({"toolCalls": [{"id": id, "name": name, "arguments": arguments.to_string()}]});
        let matched = match n {
            0 => json!({"userMessage": user, "hasToolResult": false}),
            _ => json!({"toolCallId": calls[n - 1].0}),
        };
        fixtures.push(json!({"match": matched, "response": call}));
    }
    let last = calls.last().map(|c| c.0).unwrap_or_default();
    fixtures.push(json!({"match": {"toolCallId": last}, "response": {"content": answer}}));
    fixtures
}

/// A result with the times two equal calls made apart may differ in left out.
fn without_times(mut value: Value) -> Value {
    fn blank(value: &mut Value) {
        match value {
            Value::Object(map) => {
                for key in ["checkedAt", "createdAt", "updatedAt", "completedAt", "at"] {
                    if let Some(at) = map.get_mut(key) {
                        *at = json!("<time>");
                    }
                }
                map.values_mut().for_each(blank);
            }
            Value::Array(items) => items.iter_mut().for_each(blank),
            _ => {}
        }
    }
    blank(&mut value);
    value
}

/// The chat's result of a call as REST shows one: `{status, structured, text}`.
fn from_chat(event: &Value) -> Value {
    match event["type"].as_str() {
        Some("tool-output-available") => json!({
            "status": "success",
            "structured": without_times(event["output"]["structured"].clone()),
        }),
        _ => json!({"status": "error", "text": event["errorText"]}),
    }
}

/// A REST call's result in the same form: a call refused or broken around the tool is an HTTP
/// error whose message is the text the chat's model reads.
fn from_rest(response: &toolmux_testkit::http::Response) -> Value {
    let response = response.json();
    if let Some(message) = response["error"]["message"].as_str() {
        return json!({"status": "error", "text": message});
    }
    match response["status"].as_str() {
        Some("success") => json!({
            "status": "success",
            "structured": without_times(response["structuredContent"].clone()),
        }),
        _ => json!({"status": "error", "text": response["content"][0]["text"]}),
    }
}

#[test]
fn the_issue_17_tools_called_by_the_chat_give_the_results_rest_gives() {
    // Each call in the order the model makes it; the write tools change the project, so the
    // REST twin runs in a second project that starts the same and sees the same calls in the
    // same order.
    let calls: Vec<(&str, &str, Value)> = vec![
        (
            "c_write",
            "file_write",
            json!({"path": "notes/new.md", "content": "new\n"}),
        ),
        (
            "c_edit",
            "file_edit",
            json!({"path": "notes/todo.md", "oldString": "milk", "newString": "bread"}),
        ),
        (
            "c_patch",
            "apply_patch",
            json!({"patch": "*** Begin Patch\n*** Add File: notes/added.md\n+added\n*** End Patch\n"}),
        ),
        ("c_shell", "shell", json!({"command": "cat notes/todo.md"})),
        (
            "c_code",
            "code_execution",
            json!({"language": "python", "code": "print(6 * 7)"}),
        ),
        ("c_task", "task_create", json!({"title": "Buy bread"})),
        ("c_tasks", "task_list", json!({})),
        ("c_done", "task_complete", json!({"id": 1})),
        // Refused by the address guard, and unconfigured: the same refusals on both channels.
        (
            "c_fetch",
            "url_fetch",
            json!({"url": "http://127.0.0.1:9/"}),
        ),
        ("c_search", "web_search", json!({"query": "milk"})),
    ];
    let aimock = Aimock::serving(json!(chain("Use the tools", &calls, "All done.")));
    let allow = r#", "policies": {"tools": {"file_write": "allow", "file_edit": "allow",
        "apply_patch": "allow", "shell": "allow", "code_execution": "allow"}}"#;
    let (chat_project, chat_served) = served(&aimock, allow);
    let (rest_project, rest_served) = served(&aimock, allow);

    let events = stream_chat(
        &chat_served.address,
        KEY,
        &json!({"conversation": "c-parity", "text": "Use the tools"}),
        |_| {},
    );
    let finish = events
        .iter()
        .find(|e| e["type"] == "finish")
        .unwrap_or_else(|| panic!("the turn did not finish: {events:#?}"));
    assert_eq!(
        finish["messageMetadata"]["finishReason"], "stop",
        "{finish}"
    );

    for (id, name, arguments) in &calls {
        let chat = from_chat(tool_output(&events, id));
        let rest = rest_served.post(&format!("/api/tools/{name}/call"), &arguments.to_string());
        let rest = from_rest(&rest);
        assert_eq!(chat, rest, "`{name}` differs between the chat and REST");
    }
    // And they changed the two projects alike.
    for file in ["notes/new.md", "notes/todo.md", "notes/added.md"] {
        assert_eq!(
            std::fs::read_to_string(chat_project.path().join(file)).expect("chat's file"),
            std::fs::read_to_string(rest_project.path().join(file)).expect("rest's file"),
            "{file}"
        );
    }
    chat_served.stop();
    rest_served.stop();
}

#[test]
fn the_models_question_reaches_the_person_and_the_answer_the_model() {
    let calls = vec![(
        "c_ask",
        "request_human_input",
        json!({"question": "Which list?"}),
    )];
    let aimock = Aimock::serving(json!(chain("Ask me", &calls, "Thanks.")));
    let (_project, served) = served(&aimock, "");
    let mut asked = 0;
    let events = stream_chat(
        &served.address,
        KEY,
        &json!({"conversation": "c-ask", "text": "Ask me"}),
        |event| {
            if event["type"] == "data-input-request" {
                asked += 1;
                let data = &event["data"];
                assert_eq!(data["question"], "Which list?", "{event}");
                let path = data["answer"].as_str().expect("answer path");
                let body = json!({"answer": "shopping", "id": data["requestId"]}).to_string();
                let answered = served.post(path, &body);
                assert_eq!(answered.status, 204, "{}", answered.body);
            }
        },
    );
    assert_eq!(asked, 1);
    let output = tool_output(&events, "c_ask");
    assert_eq!(output["type"], "tool-output-available", "{output}");
    assert_eq!(
        output["output"]["structured"]["answer"], "shopping",
        "{output}"
    );
    served.stop();
}

/// Every `data-approval` of a turn, answered with `answer` (the body of
/// `POST /api/approvals/{id}`); returns the approval ids.
fn chat_answering(
    served: &Served,
    conversation: &str,
    text: &str,
    answer: &str,
) -> (Vec<Value>, Vec<String>) {
    let mut approvals = Vec::new();
    let events = stream_chat(
        &served.address,
        KEY,
        &json!({"conversation": conversation, "text": text}),
        |event| {
            if event["type"] == "data-approval" {
                let path = event["data"]["answer"].as_str().expect("answer path");
                let answered = served.post(path, answer);
                assert_eq!(answered.status, 204, "{}", answered.body);
                approvals.push(
                    event["data"]["approvalId"]
                        .as_str()
                        .expect("id")
                        .to_string(),
                );
            }
        },
    );
    (events, approvals)
}

/// The log entry of a chat call, once written.
fn log_entry_of(served: &Served, events: &[Value], call_id: &str) -> Value {
    let id = tool_output(events, call_id)["output"]["logId"]
        .as_str()
        .unwrap_or_else(|| panic!("no log id for {call_id}"))
        .to_string();
    let mut found = None;
    wait_until(&format!("log entry {id}"), || {
        let list = served.get("/api/logs?limit=1000").json();
        found = list["entries"]
            .as_array()
            .and_then(|e| e.iter().find(|e| e["id"] == id.as_str()).cloned());
        found.is_some()
    });
    found.expect("found")
}

#[test]
fn allow_for_this_conversation_is_remembered_by_the_server_for_that_conversation_only() {
    let two = [
        (
            "c_w1",
            "file_write",
            json!({"path": "a.txt", "content": "A\n"}),
        ),
        (
            "c_w2",
            "file_write",
            json!({"path": "b.txt", "content": "B\n"}),
        ),
    ];
    let mut fixtures = chain("Write two files", &two, "Both written.");
    fixtures.extend(chain(
        "Write a third file",
        &[(
            "c_w3",
            "file_write",
            json!({"path": "c.txt", "content": "C\n"}),
        )],
        "Third done.",
    ));
    let aimock = Aimock::serving(json!(fixtures));
    let (project, served) = served(&aimock, "");

    // One question for two writes: the first answer covers the second.
    let (events, approvals) = chat_answering(
        &served,
        "c-remember",
        "Write two files",
        r#"{"decision": "allow", "scope": "conversation"}"#,
    );
    assert_eq!(approvals.len(), 1, "{events:#?}");
    for file in ["a.txt", "b.txt"] {
        assert!(
            project.path().join(file).is_file(),
            "{file} was not written"
        );
    }
    let first = log_entry_of(&served, &events, "c_w1");
    let second = log_entry_of(&served, &events, "c_w2");
    assert!(first.get("approvedBy").is_none(), "{first}");
    assert_eq!(second["approvedBy"], approvals[0].as_str(), "{second}");
    assert_eq!(second["outcome"], "ok", "{second}");
    assert_eq!(second["session"], "c-remember");

    // Another conversation is asked again; a denial is never remembered (the answer is
    // refused and the approval keeps waiting), and a plain denial refuses the call.
    let mut refused_scope = None;
    let events = stream_chat(
        &served.address,
        KEY,
        &json!({"conversation": "c-other", "text": "Write a third file"}),
        |event| {
            if event["type"] == "data-approval" {
                let path = event["data"]["answer"].as_str().expect("answer path");
                refused_scope = Some(
                    served
                        .post(path, r#"{"decision": "deny", "scope": "conversation"}"#)
                        .error(422, "invalid_scope"),
                );
                let denied = served.post(path, r#"{"decision": "deny"}"#);
                assert_eq!(denied.status, 204, "{}", denied.body);
            }
        },
    );
    let refused = refused_scope.expect("the other conversation was asked");
    assert!(
        refused["message"]
            .as_str()
            .is_some_and(|m| m.contains("never remembered")),
        "{refused}"
    );
    assert_eq!(tool_output(&events, "c_w3")["type"], "tool-output-error");
    assert!(!project.path().join("c.txt").exists());

    // A REST call belongs to no conversation: "for this conversation" is refused, the
    // approval waits on, and "once" lets it run.
    let address = served.address.clone();
    let call = std::thread::spawn(move || {
        toolmux_testkit::http::request(
            &address,
            "POST",
            "/api/tools/file_write/call",
            &[("Authorization", &format!("Bearer {KEY}"))],
            Some(&json!({"path": "d.txt", "content": "D\n"}).to_string()),
        )
    });
    let mut pending = Value::Null;
    wait_until("the REST call's approval", || {
        pending = served.get("/api/approvals").json()["approvals"][0].clone();
        pending["request"]["tool"] == "file_write"
    });
    let path = format!("/api/approvals/{}", pending["id"].as_str().expect("id"));
    served
        .post(&path, r#"{"decision": "allow", "scope": "conversation"}"#)
        .error(422, "invalid_scope");
    let answered = served.post(&path, r#"{"decision": "allow", "scope": "once"}"#);
    assert_eq!(answered.status, 204, "{}", answered.body);
    let done = call.join().expect("joined");
    assert_eq!(done.status, 200, "{}", done.body);
    assert!(project.path().join("d.txt").is_file());
    served.stop();
}
