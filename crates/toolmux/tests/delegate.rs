//! `delegate` on a real `toolmux serve`, with aimock as the chat's model: a delegated task
//! called over MCP (the Python SDK's client) and REST reads a file and answers; every call it
//! makes is in the execution log under the `delegate` call's id; a tool its patterns leave out
//! is refused to it; its step limit cuts it short; its `ask` calls ask the caller's person; and
//! without a provider it says which setting is missing.

mod chat_support;
mod support;

use chat_support::served;
use serde_json::{Value, json};
use support::toolmux_project;
use toolmux_testkit::aimock::Aimock;
use toolmux_testkit::eventually::wait_until;
use toolmux_testkit::python_client::run_mcp_steps;
use toolmux_testkit::served::{KEY, Served, config_with_key};

/// Every entry of the execution log, oldest first.
fn log_entries(served: &Served) -> Vec<Value> {
    let list = served.get("/api/logs?limit=1000");
    assert_eq!(list.status, 200, "{}", list.body);
    let mut entries = list.json()["entries"].as_array().expect("entries").clone();
    entries.sort_by(|a, b| a["id"].as_str().cmp(&b["id"].as_str()));
    entries
}

/// The log entry with this id, once the writer has written it.
fn log_entry(served: &Served, id: &str) -> Value {
    let mut found = None;
    wait_until(&format!("log entry {id}"), || {
        found = log_entries(served).into_iter().find(|e| e["id"] == id);
        found.is_some()
    });
    found.unwrap_or_else(|| panic!("no log entry {id}"))
}

fn read_fixtures() -> Value {
    json!([
        {"match": {"userMessage": "Summarise notes/todo.md", "hasToolResult": false},
         "response": {"toolCalls": [{"id": "call_read", "name": "file_read",
             "arguments": json!({"path": "notes/todo.md"}).to_string()}]}},
        {"match": {"toolCallId": "call_read", "toolResultContains": "buy milk"},
         "response": {"content": "The note says: buy milk."}},
    ])
}

#[test]
fn a_delegated_task_reads_a_file_over_mcp_and_rest_and_its_calls_name_the_delegate_call() {
    let aimock = Aimock::serving(read_fixtures());
    let (_project, served) = served(&aimock, r#", "policies": {"tools": {"delegate": "allow"}}"#);
    let arguments = json!({"task": "Summarise notes/todo.md", "tools": ["file_*", "delegate"]});

    let over_mcp = run_mcp_steps(&json!({
        "transport": "http",
        "url": served.mcp_url(),
        "headers": {"Authorization": format!("Bearer {KEY}")},
        "steps": [{"op": "call", "name": "delegate", "arguments": arguments}],
    }));
    let mcp = over_mcp[0]["result"]["structuredContent"].clone();
    let rest = served.post("/api/tools/delegate/call", &arguments.to_string());
    assert_eq!(rest.status, 200, "{}", rest.body);
    let rest = rest.json();
    let rest_id = rest["callId"].as_str().expect("call id").to_string();
    let rest = rest["structuredContent"].clone();

    for (channel, result) in [("mcp", &mcp), ("rest", &rest)] {
        assert_eq!(
            result["answer"], "The note says: buy milk.",
            "{channel}: {result}"
        );
        assert_eq!(result["steps"], 2, "{channel}: {result}");
        assert_eq!(result["truncated"], false, "{channel}: {result}");
        assert_eq!(result["model"], "gpt-4o");
        let calls = result["toolCalls"].as_array().expect("toolCalls");
        assert_eq!(calls.len(), 1, "{channel}: {result}");
        assert_eq!(calls[0]["name"], "file_read");
        assert_eq!(calls[0]["isError"], false, "{channel}: {result}");
        // The sub-agent was offered the file tools, never `delegate` itself.
        let tools: Vec<&str> = result["tools"]
            .as_array()
            .expect("tools")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        assert!(tools.contains(&"file_read"), "{channel}: {tools:?}");
        assert!(!tools.contains(&"delegate"), "{channel}: {tools:?}");
        assert!(!tools.contains(&"shell"), "{channel}: {tools:?}");
    }
    // The same result over both channels, but for the log ids.
    let without_ids = |r: &Value| {
        let mut r = r.clone();
        r["toolCalls"][0]["logId"] = Value::Null;
        r["usage"] = Value::Null;
        r
    };
    assert_eq!(without_ids(&mcp), without_ids(&rest));

    // Each sub-call is logged on its caller's channel under its `delegate` call's id.
    let sub = log_entry(&served, rest["toolCalls"][0]["logId"].as_str().expect("id"));
    assert_eq!(sub["tool"], "file_read");
    assert_eq!(sub["parent"], rest_id.as_str(), "{sub}");
    assert_eq!(sub["channel"], "rest");
    let mcp_sub = log_entry(&served, mcp["toolCalls"][0]["logId"].as_str().expect("id"));
    let mcp_parent = mcp_sub["parent"].as_str().expect("a parent").to_string();
    let mcp_delegate = log_entry(&served, &mcp_parent);
    assert_eq!(mcp_delegate["tool"], "delegate", "{mcp_delegate}");
    assert_eq!(mcp_delegate["channel"], "mcp");
    assert_eq!(mcp_sub["channel"], "mcp");
    // And the `delegate` calls themselves have none.
    assert!(mcp_delegate.get("parent").is_none(), "{mcp_delegate}");
    served.stop();
}

#[test]
fn a_tool_the_patterns_leave_out_is_refused_and_the_step_limit_cuts_the_task_short() {
    let aimock = Aimock::serving(json!([
        {"match": {"userMessage": "Run a command", "hasToolResult": false},
         "response": {"toolCalls": [{"id": "call_shell", "name": "shell",
             "arguments": json!({"command": "touch escaped.txt"}).to_string()}]}},
        {"match": {"toolCallId": "call_shell"},
         "response": {"content": "I could not run it."}},
        // A model that never stops reading.
        {"match": {"userMessage": "Keep reading"},
         "response": {"toolCalls": [{"id": "call_again", "name": "file_read",
             "arguments": json!({"path": "notes/todo.md"}).to_string()}]}},
    ]));
    let (project, served) = served(
        &aimock,
        r#", "policies": {"tools": {"delegate": "allow", "shell": "allow"}}"#,
    );

    let refused = served.post(
        "/api/tools/delegate/call",
        &json!({"task": "Run a command", "tools": ["file_*"]}).to_string(),
    );
    assert_eq!(refused.status, 200, "{}", refused.body);
    let refused = refused.json()["structuredContent"].clone();
    assert_eq!(refused["answer"], "I could not run it.", "{refused}");
    let call = &refused["toolCalls"][0];
    assert_eq!(call["name"], "shell", "{refused}");
    assert_eq!(call["isError"], true, "{refused}");
    assert_eq!(call["errorCode"], "not_served", "{refused}");
    assert!(
        !project.path().join("escaped.txt").exists(),
        "the refused command ran"
    );
    let entry = log_entry(&served, call["logId"].as_str().expect("id"));
    assert_eq!(entry["outcome"], "invalid", "{entry}");
    assert!(
        entry["error"]
            .as_str()
            .is_some_and(|e| e.contains("delegated task") && e.contains("file_*")),
        "{entry}"
    );

    let cut = served.post(
        "/api/tools/delegate/call",
        &json!({"task": "Keep reading", "tools": ["file_read"], "maxSteps": 2}).to_string(),
    );
    assert_eq!(cut.status, 200, "{}", cut.body);
    let cut = cut.json();
    assert_eq!(cut["structuredContent"]["truncated"], true, "{cut}");
    assert_eq!(cut["structuredContent"]["steps"], 2, "{cut}");
    assert_eq!(
        cut["structuredContent"]["toolCalls"]
            .as_array()
            .map(Vec::len),
        Some(2),
        "{cut}"
    );
    assert!(
        cut["content"][0]["text"]
            .as_str()
            .is_some_and(|t| t.contains("stopped after 2 steps")),
        "{cut}"
    );
    served.stop();
}

#[test]
fn a_delegated_write_asks_the_callers_person_and_is_logged_under_the_delegate_call() {
    let aimock = Aimock::serving(json!([
        {"match": {"userMessage": "Write the answer", "hasToolResult": false},
         "response": {"toolCalls": [{"id": "call_write", "name": "file_write",
             "arguments": json!({"path": "answer.txt", "content": "42\n"}).to_string()}]}},
        {"match": {"toolCallId": "call_write"},
         "response": {"content": "Written."}},
    ]));
    // `delegate` keeps its default policy, `ask`, as does `file_write`.
    let (project, served) = served(&aimock, "");
    let view = served.get("/api/tools/delegate").json();
    assert_eq!(view["policy"], "ask", "{view}");

    let address = served.address.clone();
    let call = std::thread::spawn(move || {
        toolmux_testkit::http::request(
            &address,
            "POST",
            "/api/tools/delegate/call",
            &[("Authorization", &format!("Bearer {KEY}"))],
            Some(&json!({"task": "Write the answer", "tools": ["file_write"]}).to_string()),
        )
    });
    // Two approvals, one after the other, both in the REST caller's queue: the task, then
    // its write.
    let mut asked = Vec::new();
    for tool in ["delegate", "file_write"] {
        let mut pending = Value::Null;
        wait_until(&format!("the approval of `{tool}`"), || {
            pending = served.get("/api/approvals").json()["approvals"][0].clone();
            pending["request"]["tool"] == tool
        });
        assert_eq!(pending["request"]["channel"], "rest", "{pending}");
        // The person is told which calls the delegated task makes.
        let message = pending["request"]["message"].as_str().unwrap_or_default();
        assert_eq!(
            message.starts_with("A delegated task asks: allow `file_write`"),
            tool == "file_write",
            "{pending}"
        );
        let id = pending["id"].as_str().expect("id").to_string();
        let answered = served.post(&format!("/api/approvals/{id}"), r#"{"decision": "allow"}"#);
        assert_eq!(answered.status, 204, "{}", answered.body);
        asked.push(id);
    }
    let done = call.join().expect("joined");
    assert_eq!(done.status, 200, "{}", done.body);
    let done = done.json();
    assert_eq!(done["structuredContent"]["answer"], "Written.", "{done}");
    assert_eq!(
        std::fs::read_to_string(project.path().join("answer.txt")).expect("written"),
        "42\n"
    );
    let write = log_entry(
        &served,
        done["structuredContent"]["toolCalls"][0]["logId"]
            .as_str()
            .expect("id"),
    );
    assert_eq!(write["parent"], done["callId"], "{write}");
    assert_eq!(write["outcome"], "ok", "{write}");
    served.stop();
}

#[test]
fn without_a_provider_delegate_names_the_setting() {
    let project = toolmux_project();
    project.config(&config_with_key(
        r#""policies": {"tools": {"delegate": "allow"}}"#,
    ));
    let served = Served::start(&project, &[]);
    let called = served.post(
        "/api/tools/delegate/call",
        &json!({"task": "Anything", "tools": ["file_*"]}).to_string(),
    );
    let body = called.json();
    assert_eq!(body["status"], "error", "{body}");
    let text = body["content"][0]["text"].as_str().unwrap_or_default();
    assert!(
        text.contains("no chat provider is configured") && text.contains("`providers`"),
        "{body}"
    );
    served.stop();
}

#[test]
fn the_chat_code_mode_and_the_cli_delegate_too() {
    let mut fixtures = read_fixtures().as_array().expect("fixtures").clone();
    fixtures.extend([
        // The chat's own model hands the task over, then reads the sub-agent's answer.
        json!({"match": {"userMessage": "Delegate the summary", "hasToolResult": false},
         "response": {"toolCalls": [{"id": "call_delegate", "name": "delegate",
             "arguments": json!({"task": "Summarise notes/todo.md", "tools": ["file_read"]}).to_string()}]}}),
        json!({"match": {"toolCallId": "call_delegate", "toolResultContains": "buy milk"},
         "response": {"content": "My helper says: buy milk."}}),
    ]);
    let aimock = Aimock::serving(Value::Array(fixtures));
    let (project, served) = served(&aimock, r#", "policies": {"tools": {"delegate": "allow"}}"#);

    // The chat: the sub-agent's calls are the conversation's (its session) and name the
    // chat's `delegate` call.
    let chat = served.post(
        "/api/chat",
        &json!({"conversation": "c-delegate", "text": "Delegate the summary"}).to_string(),
    );
    assert_eq!(chat.status, 200, "{}", chat.body);
    // The sub-agent's answer is the `delegate` call's output, and the turn ends normally.
    assert!(
        chat.body
            .contains(r#""content":"The note says: buy milk.""#)
            && chat.body.contains(r#""finishReason":"stop""#),
        "{}",
        chat.body
    );
    let delegated = log_entries(&served)
        .into_iter()
        .find(|e| e["tool"] == "delegate" && e["channel"] == "chat")
        .expect("the chat's delegate call is logged");
    assert_eq!(delegated["session"], "c-delegate");
    let sub = log_entries(&served)
        .into_iter()
        .find(|e| e["parent"] == delegated["id"])
        .expect("the sub-agent's call is logged under it");
    assert_eq!(sub["tool"], "file_read");
    assert_eq!(sub["session"], "c-delegate");
    assert_eq!(sub["channel"], "chat");

    // Code mode: a script delegates through the generated API.
    let script = "import { delegate } from '@capabilities/delegate';\n\
        const done = await delegate.delegate({ task: 'Summarise notes/todo.md', tools: ['file_*'] });\n\
        return done.answer;";
    let code = served.post(
        "/api/tools/run_code/call",
        &json!({ "code": script }).to_string(),
    );
    assert_eq!(code.status, 200, "{}", code.body);
    assert_eq!(
        code.json()["structuredContent"]["result"],
        "The note says: buy milk.",
        "{}",
        code.body
    );

    // The command line.
    let run = toolmux_testkit::project::Run(
        project
            .cmd()
            .args([
                "tools",
                "call",
                "delegate",
                "-a",
                "task=Summarise notes/todo.md",
            ])
            .args(["-a", r#"tools=["file_*"]"#, "--json"])
            .env("TOOLMUX_TEST_KEY", KEY)
            .output()
            .expect("run toolmux"),
    );
    assert!(
        run.ok().contains("The note says: buy milk."),
        "{}",
        run.stdout()
    );
    served.stop();
}
