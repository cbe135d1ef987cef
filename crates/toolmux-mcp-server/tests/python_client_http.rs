//! The real Python MCP client against the server mounted over streamable HTTP, in process, so
//! that a test can change the hub while the client is connected.

#[allow(dead_code)] // each test binary uses a part of the shared helpers
mod common;

use std::sync::Arc;

use common::{HttpServer, TestSource, hub, hub_with_ask_rule, post, raw_http};
use serde_json::json;
use toolmux_core::NamePattern;
use toolmux_mcp_server::ServeOptions;
use toolmux_testkit::python_client::{PythonClient, result_text, run_client, tool_names};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_client_lists_the_catalog_without_internal_tools_and_calls_tools() {
    let server = HttpServer::start(hub(), ServeOptions::default()).await;
    let lines = run_client(json!({
        "transport": "http",
        "url": server.url,
        "steps": [
            {"op": "list"},
            {"op": "call", "name": "echo", "arguments": {"text": "hi"}},
            {"op": "call", "name": "fail", "arguments": {}},
            {"op": "call", "name": "echo", "arguments": {"text": 5}},
            {"op": "call", "name": "ehco", "arguments": {}},
            {"op": "call", "name": "secret_config", "arguments": {}},
            {"op": "ping"}
        ]
    }))
    .await;

    let connected = &lines[0]["connected"];
    assert_eq!(connected["serverInfo"]["name"], "toolmux");
    assert_eq!(connected["capabilities"]["tools"]["listChanged"], true);
    // The plan's default mode is the handshake (`mode: "legacy"`); stateless.rs has 2026-07-28.
    assert_eq!(connected["protocolVersion"], "2025-11-25");

    assert_eq!(tool_names(&lines[1]), ["danger", "echo", "fail"]);
    let echo = &lines[1]["tools"][1];
    assert_eq!(echo["title"], "Echo");
    assert_eq!(echo["annotations"]["readOnlyHint"], true);
    assert_eq!(echo["inputSchema"]["properties"]["text"]["type"], "string");
    assert_eq!(echo["outputSchema"], json!({"type": "object"}));

    assert_eq!(
        lines[2]["result"]["structuredContent"],
        json!({"text": "hi"})
    );
    assert_eq!(lines[2]["result"]["isError"], false);

    assert_eq!(lines[3]["result"]["isError"], true);
    assert_eq!(
        result_text(&lines[3]),
        "tool `fail` failed: the fixture fails on purpose"
    );

    // Invalid arguments are a tool error the model can read and correct.
    assert_eq!(lines[4]["result"]["isError"], true);
    assert!(
        result_text(&lines[4]).starts_with("invalid arguments for `echo`: /text:"),
        "{}",
        lines[4]
    );

    // An unknown tool is a protocol error (-32602), with a suggestion.
    assert_eq!(lines[5]["error"]["code"], -32602);
    assert_eq!(
        lines[5]["error"]["message"],
        "unknown tool `ehco`; did you mean `echo`?"
    );
    // Internal tools cannot be called over MCP, and nothing reveals they exist.
    assert_eq!(lines[6]["error"]["code"], -32602);
    assert_eq!(lines[6]["error"]["message"], "unknown tool `secret_config`");

    assert_eq!(lines[7], json!({"ok": true}));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ask_policy_tool_runs_only_when_the_user_allows_it_by_elicitation() {
    let server = HttpServer::start(hub(), ServeOptions::default()).await;
    let call = json!({"op": "call", "name": "danger", "arguments": {"text": "x"}});
    let lines = run_client(json!({
        "transport": "http",
        "url": server.url,
        "elicitation": ["allow_once", "deny", "decline", "allow_session"],
        "steps": [call, call, call, call, call]
    }))
    .await;

    assert_eq!(
        lines[1]["result"]["isError"], false,
        "allowed once: {}",
        lines[1]
    );
    assert_eq!(lines[2]["result"]["isError"], true);
    assert_eq!(
        result_text(&lines[2]),
        "tool `danger` was denied: the user chose to deny it"
    );
    assert_eq!(
        result_text(&lines[3]),
        "tool `danger` was denied: the user declined it"
    );
    assert_eq!(
        lines[4]["result"]["isError"], false,
        "allowed for the session"
    );
    // The fifth call ran without asking: "always for this session" was remembered.
    assert_eq!(lines[5]["result"]["isError"], false);
    let done = &lines[6]["done"];
    let asked = done["elicitations"].as_array().expect("elicitations");
    assert_eq!(asked.len(), 4, "{done}");
    let form = &asked[0];
    assert!(
        form["message"]
            .as_str()
            .expect("a message")
            .starts_with("Allow `danger` (from `test`) to run"),
        "{form}"
    );
    let choices: Vec<&str> = form["requestedSchema"]["properties"]["decision"]["oneOf"]
        .as_array()
        .expect("choices")
        .iter()
        .filter_map(|c| c["const"].as_str())
        .collect();
    assert_eq!(choices, ["allow_once", "allow_session", "deny"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ask_policy_is_denied_with_a_hint_when_the_client_cannot_elicit() {
    let server = HttpServer::start(hub_with_ask_rule("echo"), ServeOptions::default()).await;
    let lines = run_client(json!({
        "transport": "http",
        "url": server.url,
        "steps": [
            {"op": "set_level", "level": "warning"},
            {"op": "call", "name": "echo", "arguments": {}},
            {"op": "wait_logs", "count": 1, "timeout": 5}
        ]
    }))
    .await;
    assert_eq!(lines[2]["result"]["isError"], true);
    let text = result_text(&lines[2]);
    assert!(
        text.contains("no one to ask on the mcp channel")
            && text.contains(r#""policies": {"tools": {"echo": "allow"}}"#),
        "{text}"
    );
    // The client asked for warnings, so the refusal is also logged to it.
    let logs = lines[3]["logs"].as_array().expect("logs");
    assert_eq!(logs.len(), 1, "{logs:?}");
    assert_eq!(logs[0]["level"], "warning");
    assert_eq!(logs[0]["logger"], "toolmux");
    assert_eq!(logs[0]["data"]["code"], "denied");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn adding_a_source_sends_list_changed_to_a_connected_client() {
    let hub = hub();
    let server = HttpServer::start(hub.clone(), ServeOptions::default()).await;
    let mut client = PythonClient::start(json!({
        "transport": "http",
        "url": server.url,
        "steps": [
            {"op": "list"},
            {"op": "signal", "text": "add"},
            {"op": "wait_list_changed", "timeout": 10},
            {"op": "list"}
        ]
    }));
    client.next().await; // connected
    assert_eq!(tool_names(&client.next().await), ["danger", "echo", "fail"]);
    assert_eq!(client.next().await, json!({"signal": "add"}));
    hub.add_source(Arc::new(TestSource::namespaced("github", "create_issue")));
    assert_eq!(client.next().await, json!({"list_changed": true}));
    assert_eq!(
        tool_names(&client.next().await),
        ["danger", "echo", "fail", "github__create_issue"]
    );
    client.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_filters_and_pass_through_shape_the_served_names() {
    let hub = hub();
    hub.add_source(Arc::new(TestSource::namespaced("github", "create_issue")));
    let filtered = HttpServer::start(
        hub.clone(),
        ServeOptions {
            include: vec![
                NamePattern::new("e*").expect("pattern"),
                NamePattern::new("github__*").expect("pattern"),
            ],
            exclude: vec![NamePattern::new("github__*").expect("pattern")],
            ..ServeOptions::default()
        },
    )
    .await;
    let lines = run_client(json!({
        "transport": "http",
        "url": filtered.url,
        "steps": [{"op": "list"}, {"op": "call", "name": "fail", "arguments": {}}]
    }))
    .await;
    assert_eq!(tool_names(&lines[1]), ["echo"]);
    assert_eq!(
        lines[2]["error"]["message"],
        "tool `fail` is not served by this MCP server (filtered out by --tools, --exclude or --pass-through)"
    );

    let pass_through = HttpServer::start(
        hub,
        ServeOptions {
            pass_through: Some("github".into()),
            ..ServeOptions::default()
        },
    )
    .await;
    let lines = run_client(json!({
        "transport": "http",
        "url": pass_through.url,
        "steps": [{"op": "list"}, {"op": "call", "name": "create_issue", "arguments": {"t": 1}}]
    }))
    .await;
    assert_eq!(tool_names(&lines[1]), ["create_issue"]);
    assert_eq!(lines[2]["result"]["structuredContent"], json!({"t": 1}));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_key_is_required_when_configured() {
    let server = HttpServer::start(
        hub(),
        ServeOptions {
            api_keys: vec!["s3cret-key".into()],
            ..ServeOptions::default()
        },
    )
    .await;
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}});
    let refused = raw_http(server.port, &post(server.port, &init, "")).await;
    assert_eq!(refused.status, 401, "{}", refused.body);
    assert!(
        refused.body.contains("Authorization: Bearer"),
        "{}",
        refused.body
    );
    assert_eq!(
        refused.header("www-authenticate"),
        Some("Bearer realm=\"toolmux\"")
    );
    let wrong = raw_http(
        server.port,
        &post(server.port, &init, "Authorization: Bearer wrong-key!\r\n"),
    )
    .await;
    assert_eq!(wrong.status, 401);

    let lines = run_client(json!({
        "transport": "http",
        "url": server.url,
        "headers": {"Authorization": "Bearer s3cret-key"},
        "steps": [{"op": "list"}]
    }))
    .await;
    assert_eq!(tool_names(&lines[1]), ["danger", "echo", "fail"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn foreign_host_and_origin_headers_are_refused() {
    let server = HttpServer::start(
        hub(),
        ServeOptions {
            allowed_hosts: vec!["tools.internal".into()],
            allowed_origins: vec!["https://app.example.com:443".into()],
            ..ServeOptions::default()
        },
    )
    .await;
    let port = server.port;
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}});
    let body = init.to_string();
    let request = |host: &str, origin: &str| {
        format!(
            "POST /mcp HTTP/1.1\r\nHost: {host}\r\n{origin}Content-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nConnection: close\r\n\
             Content-Length: {}\r\n\r\n{body}",
            body.len()
        )
    };
    assert_eq!(
        raw_http(port, &request("evil.example", "")).await.status,
        403,
        "a rebinding host is refused"
    );
    assert_eq!(
        raw_http(
            port,
            &request(
                &format!("localhost:{port}"),
                "Origin: http://evil.example\r\n"
            )
        )
        .await
        .status,
        403,
        "a foreign origin is refused"
    );
    assert_eq!(
        raw_http(
            port,
            &request(
                &format!("localhost:{port}"),
                &format!("Origin: http://localhost:{port}\r\n")
            )
        )
        .await
        .status,
        200,
        "a loopback origin is accepted"
    );
    assert_eq!(
        raw_http(
            port,
            &request("tools.internal", "Origin: https://app.example.com\r\n")
        )
        .await
        .status,
        200,
        "configured host and origin are accepted"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_methods_get_method_not_found_over_http() {
    let server = HttpServer::start(hub(), ServeOptions::default()).await;
    let port = server.port;
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}});
    let initialized_session = raw_http(port, &post(port, &init, "")).await;
    assert_eq!(
        initialized_session.status, 200,
        "{}",
        initialized_session.body
    );
    let session = initialized_session
        .header("mcp-session-id")
        .expect("a session id header")
        .to_string();
    let session_header =
        format!("Mcp-Session-Id: {session}\r\nMcp-Protocol-Version: 2025-06-18\r\n");
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(
        raw_http(port, &post(port, &initialized, &session_header))
            .await
            .status,
        202
    );
    let unknown = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/frobnicate", "params": {}});
    let response = raw_http(port, &post(port, &unknown, &session_header)).await;
    assert_eq!(response.status, 200, "{}", response.body);
    assert!(
        response.body.contains(r#""code":-32601"#),
        "{}",
        response.body
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_form_leaves_the_approval_to_the_queue_and_a_declined_one_denies() {
    // Headless clients answer elicitation at once: `claude -p` with `cancel`, `codex exec` with
    // `decline`. Under `serve` a `cancel` is no answer: the approval keeps waiting in the
    // queue, where a person answers it (what `POST /api/approvals/{id}` calls).
    let queue = Arc::new(toolmux_core::ApprovalQueue::new());
    let options = ServeOptions {
        people: Some(Arc::clone(&queue)),
        ..ServeOptions::default()
    };
    let server = HttpServer::start(hub(), options).await;
    let call = json!({"op": "call", "name": "danger", "arguments": {"text": "x"}});
    let mut client = PythonClient::start(json!({
        "transport": "http",
        "url": server.url,
        "elicitation": ["cancel", "decline"],
        "steps": [call, call]
    }));
    assert_eq!(
        client.next().await["connected"]["serverInfo"]["name"],
        "toolmux"
    );
    let id = loop {
        if let Some(waiting) = queue.pending(None).first() {
            break waiting.id;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    };
    queue
        .answer(id, toolmux_core::Approval::Allow)
        .expect("the approval still waits after the client's `cancel`");
    let ran = client.next().await;
    assert_eq!(ran["result"]["isError"], false, "{ran}");
    let declined = client.next().await;
    assert_eq!(
        result_text(&declined),
        "tool `danger` was denied: the user declined it"
    );
    assert!(queue.pending(None).is_empty());
    let done = client.next().await;
    assert_eq!(
        done["done"]["elicitations"].as_array().map(Vec::len),
        Some(2),
        "{done}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_answered_through_the_queue_withdraws_the_clients_open_form() {
    let queue = Arc::new(toolmux_core::ApprovalQueue::new());
    let options = ServeOptions {
        people: Some(Arc::clone(&queue)),
        ..ServeOptions::default()
    };
    let server = HttpServer::start(hub(), options).await;
    let mut client = PythonClient::start(json!({
        "transport": "http",
        "url": server.url,
        "elicitation": ["wait"],
        "steps": [
            {"op": "call", "name": "danger", "arguments": {"text": "x"}},
            {"op": "ping"}
        ]
    }));
    client.next().await;
    let id = loop {
        if let Some(waiting) = queue.pending(None).first() {
            break waiting.id;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    };
    queue
        .answer(id, toolmux_core::Approval::Allow)
        .expect("the approval waits");
    let ran = client.next().await;
    assert_eq!(ran["result"]["isError"], false, "{ran}");
    assert_eq!(client.next().await, json!({"ok": true}));
    let done = &client.next().await["done"];
    // The form the client still showed was withdrawn by its own request id.
    assert_eq!(
        done["elicitation_ids"].as_array().map(Vec::len),
        Some(1),
        "{done}"
    );
    assert_eq!(done["withdrawn"], done["elicitation_ids"], "{done}");
}

/// The `data` of each SSE event of a raw response body, in order (chunk-size lines skipped).
fn event_data(body: &str) -> Vec<&str> {
    body.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(str::trim)
        .collect()
}

/// Issue 29: every response stream started with an empty-data priming event (`data: `,
/// `id: 0`, `retry: 3000`, SEP-1699), which only 2025-11-25 has; older client libraries (Gemini
/// CLI's) read its empty data as JSON and give up. It goes only to sessions whose `initialize`
/// agreed on a version that has it, whatever version header a later request states: the
/// conformance suite's `server-sse-polling` negotiates 2025-11-25, then posts with a 2025-03-26
/// header, and needs the event to resume. A stateless 2026-07-28 request is judged by its
/// `_meta` version.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_priming_event_goes_only_to_sessions_whose_negotiated_version_has_it() {
    let server = HttpServer::start(hub(), ServeOptions::default()).await;
    let port = server.port;
    // (version asked for in `initialize`, the header later requests state, primed)
    for (version, header, primed) in [
        ("2025-03-26", None, false),
        ("2025-06-18", Some("2025-06-18"), false),
        ("2025-11-25", Some("2025-11-25"), true),
        ("2025-11-25", Some("2025-03-26"), true),
    ] {
        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": version, "capabilities": {},
            "clientInfo": {"name": "priming-test", "version": "0"}}});
        let answer = raw_http(port, &post(port, &init, "")).await;
        assert_eq!(answer.status, 200, "{}", answer.body);
        let session = answer
            .header("mcp-session-id")
            .expect("a session id")
            .to_string();
        let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
        let header = header.map_or(String::new(), |h| format!("MCP-Protocol-Version: {h}\r\n"));
        let listed = raw_http(
            port,
            &post(
                port,
                &list,
                &format!("Mcp-Session-Id: {session}\r\n{header}"),
            ),
        )
        .await;
        assert_eq!(listed.status, 200, "{}", listed.body);
        for (response, id) in [(&answer, 1), (&listed, 2)] {
            let events = event_data(&response.body);
            let first = if primed {
                assert_eq!(events[0], "", "{version}: {}", response.body);
                assert!(
                    response.body.contains("\nretry: 3000\n"),
                    "{version}: {}",
                    response.body
                );
                events[1]
            } else {
                assert!(!response.body.contains("retry:"), "{}", response.body);
                events[0]
            };
            let message: serde_json::Value = serde_json::from_str(first)
                .unwrap_or_else(|e| panic!("{version}: the first event is not JSON ({e})"));
            assert_eq!(message["id"], id, "{message}");
            if id == 1 {
                assert_eq!(message["result"]["protocolVersion"], version, "{message}");
            }
        }
    }
    // A stateless 2026-07-28 request has no session: its `_meta` version (≥ 2025-11-25) decides,
    // and rmcp, with no event store to resume from, sends it no priming event to take off.
    let stateless = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}}}});
    let listed = raw_http(
        port,
        &post(
            port,
            &stateless,
            "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/list\r\n",
        ),
    )
    .await;
    assert_eq!(listed.status, 200, "{}", listed.body);
    // Answered as JSON or as an event stream, whose first event is then the answer.
    let body = event_data(&listed.body)
        .first()
        .copied()
        .unwrap_or(listed.body.trim());
    let first: serde_json::Value = serde_json::from_str(body)
        .unwrap_or_else(|e| panic!("the first event is not JSON ({e}): {}", listed.body));
    assert_eq!(first["id"], 3, "{first}");
}
