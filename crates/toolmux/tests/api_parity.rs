//! MCP and REST serve one registry: every tool listed over MCP is listed and callable over REST
//! with an equal result, and the reverse. The MCP side is a real client (the Python SDK in
//! `tests/peers/mcp/client.py`) talking to the same `toolmux serve` process.

mod support;

use std::collections::BTreeMap;

use serde_json::{Value, json};
use support::toolmux_project;
use toolmux_testkit::python_client::run_mcp_steps;
use toolmux_testkit::served::{KEY, Served, config_with_key};

/// Arguments that make each tool do real work. A new tool in the catalog fails the test until
/// it is added here, so that parity is checked for every tool, not a sample.
fn arguments_for(tool: &str) -> Value {
    match tool {
        "directory_list" => json!({"path": "notes"}),
        "file_read" => json!({"path": "notes/todo.md"}),
        "file_search" => json!({"pattern": "**/*.md"}),
        "grep" => json!({"pattern": "milk"}),
        "run_code" => json!({"code": "1 + 1"}),
        "search_tools" => json!({"query": "read a file"}),
        "apply_patch" => json!({
            "patch": "*** Begin Patch\n*** Add File: notes/added.md\n+added\n*** End Patch\n"
        }),
        "file_edit" => json!({"path": "notes/todo.md", "oldString": "milk", "newString": "bread"}),
        "file_write" => json!({"path": "notes/new.md", "content": "new\n"}),
        "skill_list" => json!({}),
        "skill_load" => json!({"name": "shopping"}),
        // Refused by the address guard and unconfigured: the same refusal on both channels.
        "url_fetch" => json!({"url": "http://127.0.0.1:9/"}),
        "web_search" => json!({"query": "milk"}),
        // A person answers on each channel: the MCP client's form, a REST pending input.
        "request_human_input" => json!({"question": "Which list?"}),
        "shell" => json!({"command": "cat notes/todo.md"}),
        "code_execution" => json!({"language": "python", "code": "print(6 * 7)"}),
        // The task list starts empty: refusals and an empty list are the same on both
        // channels, where a created task's time stamps would differ (`tasks_parity.rs` checks
        // the state the channels share).
        "task_add_note" => json!({"id": 999, "text": "x"}),
        "task_complete" | "task_delete" | "task_view" => json!({"id": 999}),
        "task_create" => json!({"title": "x", "parent": 999}),
        "task_list" => json!({}),
        "task_update" => json!({"id": 999, "status": "completed"}),
        // No session exists and no runner of that name: the same refusals on both channels,
        // and listings that are empty (or the same machine's runners) on both.
        "cancel_session" | "session_status" | "session_logs" => json!({"id": "no-such-session"}),
        "list_sessions" | "list_runners" | "detect_runners" => json!({}),
        "run_session" | "run_subagent" => json!({"runner": "no-such-runner", "prompt": "x"}),
        // No server offers resources: the same empty list, and the same refusal of an unknown
        // URI, on both.
        "list_resources" => json!({}),
        "read_resource" => json!({"uri": "file:///no-such-resource"}),
        // No chat provider is configured: the same refusal, naming `providers`, on both.
        "delegate" => json!({"task": "x", "tools": ["file_*"]}),
        // No result was kept: the same refusal on both.
        "result_read" => json!({"id": "0123456789abcdef0123456789abcdef"}),
        other => panic!("the parity test has no arguments for `{other}`; add them"),
    }
}

/// The files the calls work on. Written again before the REST calls, so that each REST call
/// meets the project as its MCP twin did (the write tools change it, in the same order on both
/// channels).
fn write_fixtures(project: &toolmux_testkit::project::TestProject) {
    for dir in ["notes", "src"] {
        let _ = std::fs::remove_dir_all(project.path().join(dir));
    }
    project.write("notes/todo.md", "# Todo\nbuy milk\n");
    project.write("src/main.rs", "fn main() { println!(\"milk\"); }\n");
}

#[test]
fn every_tool_is_listed_and_callable_with_an_equal_result_over_mcp_and_rest() {
    let project = toolmux_project();
    // The write tools ask by default, and nobody answers in this test.
    project.config(&config_with_key(
        r#""policies": {"tools": {"file_write": "allow", "file_edit": "allow", "apply_patch": "allow", "shell": "allow", "code_execution": "allow", "run_session": "allow", "run_subagent": "allow", "delegate": "allow"}}"#,
    ));
    project.write(
        ".toolmux/skills/shopping/SKILL.md",
        "---\nname: shopping\ndescription: Keep the shopping list.\n---\n\nAdd to notes/todo.md.\n",
    );
    write_fixtures(&project);
    let served = Served::start(&project, &[]);

    // REST's listing.
    let rest_list = served.get("/api/tools").json();
    let rest_tools: BTreeMap<String, Value> = rest_list["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| (t["name"].as_str().expect("name").to_string(), t.clone()))
        .collect();

    // MCP's listing, then a call of each tool REST lists (the reverse direction: a tool only
    // REST listed would fail here as an unknown tool).
    let mut steps = vec![json!({"op": "list"})];
    for name in rest_tools.keys() {
        steps.push(json!({"op": "call", "name": name, "arguments": arguments_for(name)}));
    }
    let outcomes = run_mcp_steps(&json!({
        "transport": "http",
        "url": served.mcp_url(),
        "headers": {"Authorization": format!("Bearer {KEY}")},
        "elicitation": [{"answer": "shopping"}],
        "steps": steps,
    }));
    let mcp_tools: BTreeMap<String, Value> = outcomes[0]["tools"]
        .as_array()
        .expect("MCP tools")
        .iter()
        .map(|t| (t["name"].as_str().expect("name").to_string(), t.clone()))
        .collect();

    assert_eq!(
        mcp_tools.keys().collect::<Vec<_>>(),
        rest_tools.keys().collect::<Vec<_>>(),
        "MCP and REST list different tools"
    );
    for (name, mcp) in &mcp_tools {
        let rest = &rest_tools[name];
        assert_eq!(mcp["description"], rest["description"], "{name}");
        assert_eq!(mcp["inputSchema"], rest["inputSchema"], "{name}");
        assert_eq!(
            mcp.get("outputSchema"),
            rest.get("outputSchema"),
            "{name}: output schemas differ"
        );
    }

    write_fixtures(&project);
    for (i, name) in rest_tools.keys().enumerate() {
        let mcp = &outcomes[i + 1]["result"];
        assert!(
            mcp.is_object(),
            "MCP call of {name} failed: {}",
            outcomes[i + 1]
        );
        let rest = std::thread::scope(|scope| {
            if name == "request_human_input" {
                scope.spawn(|| answer_the_question(&served, json!({"answer": "shopping"})));
            }
            served.post(
                &format!("/api/tools/{name}/call"),
                &arguments_for(name).to_string(),
            )
        });
        assert_eq!(rest.status, 200, "{name}: {}", rest.body);
        let rest = without_times(rest.json());
        let mcp = &without_times(mcp.clone());
        let mcp_error = mcp.get("isError").and_then(Value::as_bool).unwrap_or(false);
        assert_eq!(rest["status"] == "error", mcp_error, "{name}");
        assert_eq!(rest["content"], mcp["content"], "{name}: content differs");
        assert_eq!(
            rest.get("structuredContent").filter(|v| !v.is_null()),
            mcp.get("structuredContent"),
            "{name}: structured content differs"
        );
    }
    served.stop();
}

/// A result with the moment a check was made (`detect_runners`' `checkedAt`) blanked, in its
/// structured content and in the JSON of its text: the one thing two equal calls made a second
/// apart may not share.
fn without_times(mut result: Value) -> Value {
    fn blank(value: &mut Value) {
        match value {
            Value::Object(map) => {
                if let Some(at) = map.get_mut("checkedAt") {
                    *at = json!("<time>");
                }
                map.values_mut().for_each(blank);
            }
            Value::Array(items) => items.iter_mut().for_each(blank),
            _ => {}
        }
    }
    blank(&mut result);
    if let Some(Value::Array(content)) = result.get_mut("content") {
        for block in content {
            if let Some(text) = block.get("text").and_then(Value::as_str)
                && let Ok(mut parsed) = serde_json::from_str::<Value>(text)
            {
                blank(&mut parsed);
                block["text"] = json!(serde_json::to_string_pretty(&parsed).expect("JSON"));
            }
        }
    }
    result
}

/// Answers the question that a REST call of `request_human_input` leaves waiting.
fn answer_the_question(served: &Served, content: Value) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let id = loop {
        let inputs = served.get_with_key("/api/inputs").json();
        if let Some(id) = inputs["inputs"][0]["id"].as_str() {
            break id.to_string();
        }
        assert!(std::time::Instant::now() < deadline, "no question appeared");
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let body = json!({"action": "accept", "content": content}).to_string();
    let answered = served.post(&format!("/api/inputs/{id}"), &body);
    assert_eq!(answered.status, 204, "{}", answered.body);
}
