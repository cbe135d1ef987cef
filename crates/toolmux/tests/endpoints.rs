//! Named endpoints (`endpoints.<name>`): views of the one registry served at `/mcp/<name>`,
//! through `?endpoint=` on the REST API and by `toolmux mcp --endpoint`. Against a real stdio
//! upstream (the Python fault server of `tests/peers/upstream`) and the real Python MCP client:
//! each endpoint lists and calls only its own tools, one upstream process serves them all, and
//! a configuration edit tells only the clients whose view it changed.

mod support;

use std::path::Path;
use std::time::Instant;

use serde_json::{Value, json};
use support::toolmux_project;
use toolmux_testkit::eventually::wait_until;
use toolmux_testkit::processes::{processes_with, read_pid};
use toolmux_testkit::python_client::{PythonClient, result_text, run_mcp_steps, tool_names};
use toolmux_testkit::served::{Served, config_with_key};
use toolmux_testkit::servers::faults;

/// The configuration: the fault server (writing its pid to `pid_file`) and `endpoints`.
fn config(pid_file: &Path, endpoints: &Value) -> String {
    let pid_file = pid_file.display().to_string();
    let servers = json!({"faults": faults(&["--pid-file", &pid_file])});
    config_with_key(&format!(
        r#""mcpServers": {servers}, "endpoints": {endpoints}"#
    ))
}

/// `review` sees the echo tool, `ops` the pid and fail tools, `docs` the kinds tool.
fn three_endpoints() -> Value {
    json!({
        "review": {"tools": ["faults__echo"], "instructions": "Review the diff; nothing else."},
        "ops": {"servers": ["faults"], "tools": ["faults__pid", "faults__fail"]},
        "docs": {"tools": ["faults__kinds"]},
    })
}

/// `toolmux serve` once the fault server's tools are in the catalog.
fn serve_discovered(project: &toolmux_testkit::project::TestProject) -> Served {
    let served = Served::start(project, &[]);
    wait_until("the fault server's tools are discovered", || {
        served
            .tool_names("faults")
            .contains(&"faults__pid".to_string())
    });
    served
}

/// A plan for the Python client on the endpoint `name`.
fn plan_on(served: &Served, name: &str, steps: Value) -> Value {
    json!({
        "transport": "http",
        "url": format!("{}/{name}", served.mcp_url()),
        "headers": {"Authorization": served.authorization()},
        "steps": steps,
    })
}

/// The names a REST listing shows, in order.
fn listed(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("no tools in {body}"))
        .iter()
        .map(|t| t["name"].as_str().expect("name").to_string())
        .collect()
}

#[test]
fn each_endpoint_lists_and_calls_only_its_own_tools_over_one_upstream_process() {
    let project = toolmux_project();
    let pid_file = project.path().join("faults.pid");
    project.config(&config(&pid_file, &three_endpoints()));
    let served = serve_discovered(&project);

    // Over MCP: each endpoint's own list, its instructions, its calls; a guessed name is
    // refused with the endpoint named.
    let connected_review = {
        let plan = plan_on(
            &served,
            "review",
            json!([
                {"op": "list"},
                {"op": "call", "name": "faults__echo", "arguments": {"text": "through review"}},
                {"op": "call", "name": "faults__pid", "arguments": {}},
            ]),
        );
        toolmux_testkit::python_client::run_mcp_client(&plan)
    };
    assert_eq!(
        connected_review[0]["connected"]["instructions"],
        "Review the diff; nothing else."
    );
    let review = &connected_review[1..];
    assert_eq!(tool_names(&review[0]), ["faults__echo"]);
    assert_eq!(result_text(&review[1]), "through review");
    assert_eq!(
        review[2],
        json!({"error": {"code": -32602,
            "message": "tool `faults__pid` is not served by the endpoint `review`"}})
    );

    let ops = run_mcp_steps(&plan_on(
        &served,
        "ops",
        json!([
            {"op": "list"},
            {"op": "call", "name": "faults__pid", "arguments": {}},
            {"op": "call", "name": "faults__echo", "arguments": {"text": "x"}},
        ]),
    ));
    assert_eq!(tool_names(&ops[0]), ["faults__fail", "faults__pid"]);
    let pid_over_ops = result_text(&ops[1]).to_string();
    assert_eq!(
        ops[2],
        json!({"error": {"code": -32602,
            "message": "tool `faults__echo` is not served by the endpoint `ops`"}})
    );

    // Over REST: the same views and the same refusals.
    let review_listing = served.get("/api/tools?endpoint=review");
    assert_eq!(review_listing.status, 200, "{}", review_listing.body);
    assert_eq!(listed(&review_listing.json()), ["faults__echo"]);
    let ops_listing = served.get("/api/tools?endpoint=ops&source=faults").json();
    assert_eq!(listed(&ops_listing), ["faults__fail", "faults__pid"]);
    let echoed = served
        .post(
            "/api/tools/faults__echo/call?endpoint=review",
            r#"{"text": "over REST"}"#,
        )
        .json();
    assert_eq!(echoed["content"][0]["text"], "over REST", "{echoed}");
    served
        .post("/api/tools/faults__pid/call?endpoint=review", "{}")
        .exact_error(
            403,
            "not_served",
            "tool `faults__pid` is not served by the endpoint `review`",
        );
    let pid_over_rest = served
        .post("/api/tools/faults__pid/call?endpoint=ops", "{}")
        .json();
    assert_eq!(
        pid_over_rest["content"][0]["text"].as_str(),
        Some(pid_over_ops.as_str())
    );
    served.get("/api/tools?endpoint=nope").exact_error(
        404,
        "unknown_endpoint",
        "there is no endpoint `nope`; the configured endpoints are: docs, ops, review",
    );
    served
        .post("/api/tools/faults__pid/call?endpoint=nope", "{}")
        .exact_error(
            404,
            "unknown_endpoint",
            "there is no endpoint `nope`; the configured endpoints are: docs, ops, review",
        );

    // One upstream process served both endpoints and both channels.
    let pid = read_pid(&pid_file);
    assert_eq!(pid.to_string(), pid_over_ops);
    let marker = pid_file.display().to_string();
    assert_eq!(processes_with(&marker), [pid]);

    // An unknown endpoint's door is a JSON-RPC 404 naming the configured ones.
    let answer = served.initialize("/mcp/nope");
    answer.exact_json_rpc_refusal(
        404,
        "unknown_endpoint",
        "there is no endpoint `nope`; the configured endpoints are: docs, ops, review",
    );
    // Behind the same guard as `/mcp`: no credential, no answer about endpoints.
    let anonymous = served.request(
        "POST",
        "/mcp/review",
        &[("Content-Type", "application/json")],
        Some("{}"),
    );
    anonymous.json_rpc_refusal(401, "unauthorized");
    served.stop();
}

#[tokio::test(flavor = "multi_thread")]
async fn an_edit_that_moves_a_tool_tells_only_the_client_whose_view_changed() {
    let project = toolmux_project();
    let pid_file = project.path().join("faults.pid");
    project.config(&config(&pid_file, &three_endpoints()));
    let served = tokio::task::block_in_place(|| serve_discovered(&project));
    let waiting = |name: &str, then: &[Value]| {
        let mut steps = vec![
            json!({"op": "list"}),
            json!({"op": "signal", "text": "ready"}),
            json!({"op": "wait_list_changed", "timeout": 15}),
            json!({"op": "list"}),
        ];
        steps.extend_from_slice(then);
        PythonClient::start(plan_on(&served, name, Value::Array(steps)))
    };
    let mut review = waiting("review", &[]);
    // `docs` then hears of its own endpoint's removal.
    let mut docs = waiting(
        "docs",
        &[
            json!({"op": "signal", "text": "again"}),
            json!({"op": "wait_list_changed", "timeout": 15}),
            json!({"op": "call", "name": "faults__kinds", "arguments": {}}),
        ],
    );
    for client in [&mut review, &mut docs] {
        assert!(client.next().await.get("connected").is_some());
        client.next().await; // the first listing
        assert_eq!(client.next().await, json!({"signal": "ready"}));
    }

    // The echo tool moves from `review` to `ops`; `docs` is untouched.
    let mut moved = three_endpoints();
    moved["review"]["tools"] = json!(["faults__fail"]);
    moved["ops"]["tools"] = json!(["faults__pid", "faults__echo"]);
    project.config(&config(&pid_file, &moved));

    // Both waits started before the edit and are as long; `docs`'s ends after `review` heard
    // of the change, so a notice sent to it would have come within its wait.
    let heard = async {
        let line = review.next().await;
        (line, Instant::now())
    };
    let not_heard = async {
        let line = docs.next().await;
        (line, Instant::now())
    };
    let ((review_line, review_at), (docs_line, docs_at)) = tokio::join!(heard, not_heard);
    assert_eq!(review_line, json!({"list_changed": true}));
    assert_eq!(docs_line, json!({"list_changed": false}));
    assert!(docs_at > review_at);
    assert_eq!(tool_names(&review.next().await), ["faults__fail"]);
    assert_eq!(tool_names(&docs.next().await), ["faults__kinds"]);
    review.finish().await;

    // The endpoint taken out of the configuration: its connected client hears that its list
    // changed, and its door refuses it from then on, as it refuses a new client.
    assert_eq!(docs.next().await, json!({"signal": "again"}));
    moved.as_object_mut().expect("an object").remove("docs");
    project.config(&config(&pid_file, &moved));
    assert_eq!(docs.next().await, json!({"list_changed": true}));
    assert_eq!(
        docs.next().await,
        json!({"error": {"code": -32000,
            "message": "there is no endpoint `docs`; the configured endpoints are: ops, review"}})
    );
    docs.finish().await;
    tokio::task::block_in_place(|| {
        served.initialize("/mcp/docs").exact_json_rpc_refusal(
            404,
            "unknown_endpoint",
            "there is no endpoint `docs`; the configured endpoints are: ops, review",
        );
    });
    tokio::task::block_in_place(|| served.stop());
}

#[test]
fn mcp_endpoint_serves_one_endpoint_over_stdio_and_names_the_configured_ones_for_an_unknown() {
    let project = toolmux_project();
    project.config(
        r#"{"endpoints": {
            "readers": {"tools": ["file_read", "grep"], "instructions": "Read, never write."},
            "agents": {"tools": ["grep"], "codeMode": true}
        }}"#,
    );
    let lines = toolmux_testkit::python_client::run_mcp_client(&project.stdio_plan(
        &["mcp", "--endpoint", "readers"],
        json!([
            {"op": "list"},
            {"op": "call", "name": "file_write", "arguments": {"path": "x", "content": "y"}},
        ]),
    ));
    assert_eq!(lines[0]["connected"]["instructions"], "Read, never write.");
    assert_eq!(tool_names(&lines[1]), ["file_read", "grep"]);
    assert_eq!(
        lines[2],
        json!({"error": {"code": -32602,
            "message": "tool `file_write` is not served by the endpoint `readers`"}})
    );

    // A 2026-07-28 client hears the instructions in `server/discover`.
    let mut discovering = project.stdio_plan(&["mcp", "--endpoint", "readers"], json!([]));
    discovering["mode"] = json!("auto");
    let lines = toolmux_testkit::python_client::run_mcp_client(&discovering);
    assert_eq!(lines[0]["connected"]["protocolVersion"], "2026-07-28");
    assert_eq!(lines[0]["connected"]["instructions"], "Read, never write.");

    // Code mode: the entry points only, and scripts reach only what the endpoint serves.
    let steps = run_mcp_steps(&project.stdio_plan(
        &["mcp", "--endpoint", "agents"],
        json!([
            {"op": "list"},
            {"op": "call", "name": "search_tools", "arguments": {"query": "", "limit": 50}},
        ]),
    ));
    assert_eq!(tool_names(&steps[0]), ["run_code", "search_tools"]);
    let found = result_text(&steps[1]);
    assert!(found.contains("grep"), "{found}");
    assert!(!found.contains("file_read"), "{found}");

    let unknown = project.run(&["mcp", "--endpoint", "nope"]);
    assert_eq!(unknown.code(), 2);
    assert_eq!(
        unknown.stderr(),
        "toolmux: --endpoint: there is no endpoint `nope`; the configured endpoints are: \
         agents, readers\n"
    );
    let both = project.run(&["mcp", "--endpoint", "readers", "--tools", "grep"]);
    assert_eq!(both.code(), 2, "{}", both.stderr());
}
