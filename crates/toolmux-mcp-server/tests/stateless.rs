//! MCP 2026-07-28, the stateless revision, on the same endpoint and stdio connection as the
//! handshake era: raw HTTP requests for the exact status, headers and JSON-RPC errors the
//! revision prescribes; the real Python client (`mcp` 2.3, whose default `mode="auto"` probes
//! `server/discover` and so speaks 2026-07-28 to a server that answers it) over HTTP, with a
//! `subscriptions/listen` stream that hears the catalog change; and stdio through pipes.

#[allow(dead_code)] // each test binary uses a part of the shared helpers
mod common;

use std::sync::Arc;

use common::{
    HttpServer, TestSource, hub, hub_with_ask_rule, message, post, raw_http, request,
    send_stateless,
};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use toolmux_mcp_server::{ServeOptions, serve_on};
use toolmux_testkit::python_client::{PythonClient, result_text, tool_names};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_header_that_contradicts_the_body_is_refused_with_400_and_header_mismatch() {
    let server = HttpServer::start(hub(), ServeOptions::default()).await;
    let list = request(7, "tools/list", json!({}));
    let response = raw_http(
        server.port,
        &post(
            server.port,
            &list,
            "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: prompts/list\r\n",
        ),
    )
    .await;
    assert_eq!(response.status, 400, "{}", response.body);
    assert_eq!(response.header("content-type"), Some("application/json"));
    assert_eq!(
        message(&response),
        json!({
            "jsonrpc": "2.0",
            "id": 7,
            "error": {
                "code": -32020,
                "message": "Mcp-Method header `prompts/list` does not match body method `tools/list`"
            }
        })
    );

    // The version header must match `_meta`'s too.
    let response = raw_http(
        server.port,
        &post(
            server.port,
            &list,
            "MCP-Protocol-Version: 2025-11-25\r\nMcp-Method: tools/list\r\n",
        ),
    )
    .await;
    assert_eq!(response.status, 400, "{}", response.body);
    assert_eq!(
        message(&response),
        json!({
            "jsonrpc": "2.0",
            "id": 7,
            "error": {
                "code": -32020,
                "message": "MCP-Protocol-Version header (2025-11-25) does not match request _meta protocolVersion (2026-07-28)"
            }
        })
    );

    // A call's `Mcp-Name` must name the tool the body calls.
    let call = request(8, "tools/call", json!({"name": "echo", "arguments": {}}));
    let response = raw_http(
        server.port,
        &post(
            server.port,
            &call,
            "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: fail\r\n",
        ),
    )
    .await;
    assert_eq!(response.status, 400, "{}", response.body);
    assert_eq!(message(&response)["error"]["code"], -32020);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stateless_request_is_answered_without_a_session_with_result_type_and_caching_hints() {
    let server = HttpServer::start(hub(), ServeOptions::default()).await;
    let send = |body: Value, method: &'static str, name: Option<&'static str>| {
        let mut headers = format!("MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: {method}\r\n");
        if let Some(name) = name {
            headers.push_str(&format!("Mcp-Name: {name}\r\n"));
        }
        let port = server.port;
        async move { raw_http(port, &post(port, &body, &headers)).await }
    };

    let discovered = send(
        request(1, "server/discover", json!({})),
        "server/discover",
        None,
    )
    .await;
    assert_eq!(discovered.status, 200, "{}", discovered.body);
    assert_eq!(discovered.header("mcp-session-id"), None);
    let discovered = message(&discovered)["result"].clone();
    assert_eq!(
        discovered["supportedVersions"],
        json!([
            "2024-11-05",
            "2025-03-26",
            "2025-06-18",
            "2025-11-25",
            "2026-07-28"
        ])
    );
    assert_eq!(discovered["capabilities"]["tools"]["listChanged"], true);
    assert_eq!(
        discovered["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "toolmux"
    );
    assert_eq!(discovered["resultType"], "complete");

    let listed = send(request(2, "tools/list", json!({})), "tools/list", None).await;
    assert_eq!(listed.status, 200, "{}", listed.body);
    assert_eq!(listed.header("mcp-session-id"), None);
    let listed = message(&listed)["result"].clone();
    // The same list for every caller of this server, stale at once: a reload may change it.
    assert_eq!(listed["ttlMs"], 0);
    assert_eq!(listed["cacheScope"], "public");
    assert_eq!(listed["resultType"], "complete");
    assert_eq!(
        tool_names(&listed),
        ["danger", "echo", "fail"],
        "internal tools stay hidden in every era"
    );

    let called = send(
        request(
            3,
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "hi"}}),
        ),
        "tools/call",
        Some("echo"),
    )
    .await;
    assert_eq!(called.status, 200, "{}", called.body);
    let called = message(&called);
    assert_eq!(called["id"], 3);
    assert_eq!(called["result"]["structuredContent"], json!({"text": "hi"}));
    assert_eq!(called["result"]["resultType"], "complete");

    // Methods the revision removed are not found, at the HTTP level too.
    let pinged = send(request(4, "ping", json!({})), "ping", None).await;
    assert_eq!(pinged.status, 404, "{}", pinged.body);
    assert_eq!(message(&pinged)["error"]["code"], -32601);

    // A version toolmux does not speak names the ones it does.
    let mut unknown = request(5, "tools/list", json!({}));
    unknown["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("2099-01-01");
    let port = server.port;
    let refused = raw_http(
        port,
        &post(
            port,
            &unknown,
            "MCP-Protocol-Version: 2099-01-01\r\nMcp-Method: tools/list\r\n",
        ),
    )
    .await;
    assert_eq!(refused.status, 400, "{}", refused.body);
    let refused = message(&refused);
    assert_eq!(refused["error"]["code"], -32022);
    assert_eq!(refused["error"]["data"]["requested"], "2099-01-01");
    assert_eq!(
        refused["error"]["data"]["supported"],
        json!([
            "2024-11-05",
            "2025-03-26",
            "2025-06-18",
            "2025-11-25",
            "2026-07-28"
        ])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stateless_client_that_cannot_show_forms_has_its_approvals_refused_as_before() {
    // A 2026-07-28 client that declares no elicitation is sent no form (the revision forbids
    // input requests a client did not declare); where there is no queue (here), its `ask`
    // call is refused with the hub's own words. One that declares it: `input_required.rs`.
    let server = HttpServer::start(hub_with_ask_rule("echo"), ServeOptions::default()).await;
    let call = request(
        1,
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "hi"}}),
    );
    let response = send_stateless(server.port, &call).await;
    assert_eq!(response.status, 200, "{}", response.body);
    let answer = message(&response);
    assert_eq!(answer["result"]["resultType"], "complete", "{answer}");
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    assert_eq!(
        answer["result"]["content"][0]["text"],
        "tool `echo` was denied: its policy is `ask` (rule for `echo`) and there is no one to ask \
         on the mcp channel; to run it without asking, set \"policies\": {\"tools\": {\"echo\": \
         \"allow\"}} in .toolmux/config.json"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_client_speaks_2026_statelessly_and_hears_the_catalog_change_on_listen() {
    let hub = hub();
    let server = HttpServer::start(hub.clone(), ServeOptions::default()).await;
    let mut client = PythonClient::start(json!({
        "transport": "http",
        "url": server.url,
        "mode": "auto",
        "steps": [
            {"op": "list"},
            {"op": "call", "name": "echo", "arguments": {"text": "hi"}},
            {"op": "call", "name": "fail", "arguments": {}},
            {"op": "call", "name": "ehco", "arguments": {}},
            {"op": "listen", "timeout": 10},
            {"op": "list"}
        ]
    }));
    let connected = client.next().await;
    assert_eq!(connected["connected"]["protocolVersion"], "2026-07-28");
    assert_eq!(connected["connected"]["serverInfo"]["name"], "toolmux");
    assert_eq!(tool_names(&client.next().await), ["danger", "echo", "fail"]);
    let echoed = client.next().await;
    assert_eq!(echoed["result"]["structuredContent"], json!({"text": "hi"}));
    let failed = client.next().await;
    assert_eq!(failed["result"]["isError"], true);
    assert_eq!(
        result_text(&failed),
        "tool `fail` failed: the fixture fails on purpose"
    );
    assert_eq!(
        client.next().await,
        json!({"error": {"code": -32602, "message": "unknown tool `ehco`; did you mean `echo`?"}})
    );
    assert_eq!(
        client.next().await,
        json!({"listening": {"toolsListChanged": true}})
    );
    hub.add_source(Arc::new(TestSource::namespaced("github", "create_issue")));
    assert_eq!(client.next().await, json!({"event": "ToolsListChanged"}));
    assert_eq!(
        tool_names(&client.next().await),
        ["danger", "echo", "fail", "github__create_issue"]
    );
    client.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdio_serves_a_2026_client_without_a_handshake() {
    let (client_end, server_end) = tokio::io::duplex(64 * 1024);
    let (server_read, server_write) = tokio::io::split(server_end);
    let serving = tokio::spawn(serve_on(
        hub(),
        ServeOptions::default(),
        server_read,
        server_write,
    ));
    let (client_read, mut client_write) = tokio::io::split(client_end);
    let mut lines = BufReader::new(client_read).lines();
    let mut ask = async |body: Value| {
        client_write
            .write_all(format!("{body}\n").as_bytes())
            .await
            .expect("write a request");
        let line = lines
            .next_line()
            .await
            .expect("read an answer")
            .expect("the server answers");
        serde_json::from_str::<Value>(&line).expect("one JSON-RPC message")
    };

    let discovered = ask(request(1, "server/discover", json!({}))).await;
    assert_eq!(
        discovered["result"]["supportedVersions"][4], "2026-07-28",
        "{discovered}"
    );
    let listed = ask(request(2, "tools/list", json!({}))).await;
    assert_eq!(listed["result"]["cacheScope"], "public", "{listed}");
    assert_eq!(tool_names(&listed["result"]), ["danger", "echo", "fail"]);
    let called = ask(request(
        3,
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "hi"}}),
    ))
    .await;
    assert_eq!(called["result"]["structuredContent"], json!({"text": "hi"}));
    // Without `_meta`, a request of this connection is refused, never served as another era.
    let bare = ask(json!({"jsonrpc": "2.0", "id": 4, "method": "tools/list", "params": {}})).await;
    assert_eq!(bare["error"]["code"], -32602, "{bare}");

    drop(client_write);
    drop(lines);
    serving
        .await
        .expect("the server task")
        .expect("stdio serving ends cleanly when the client closes");
}

/// A tool in a code-mode endpoint's scope but not listed there is refused with words naming
/// the endpoint the client connected to, not `--code-mode` (a flag it never saw).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_code_mode_endpoint_refuses_a_direct_call_naming_the_endpoint() {
    let hub = hub();
    let mut settings = (*hub.settings()).clone();
    let filter = toolmux_core::EndpointFilter {
        code_mode: true,
        ..toolmux_core::EndpointFilter::default()
    };
    let endpoint = toolmux_core::Endpoint::new("scripts", filter, None);
    settings.endpoints = Arc::new([("scripts".to_string(), Arc::new(endpoint))].into());
    hub.configure(settings);
    let server = HttpServer::start(hub, ServeOptions::default()).await;
    let call = request(
        1,
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "hi"}}),
    );
    let at_endpoint = common::post(
        server.port,
        &call,
        "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: echo\r\n",
    )
    .replacen("POST /mcp ", "POST /mcp/scripts ", 1);
    let answer = message(&common::raw_http(server.port, &at_endpoint).await);
    assert_eq!(
        answer["error"],
        json!({
            "code": -32602,
            "message": "tool `echo` is not served by the endpoint `scripts` as a tool of its own \
                        (its code mode serves run_code and search_tools; call it from a script)",
            "data": {"tool": "echo"}
        }),
        "{answer}"
    );
}
