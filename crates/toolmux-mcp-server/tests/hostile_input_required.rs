//! Hostile retries of an input-required round: a huge or garbage `requestState`, a huge or
//! malformed `inputResponses` entry, one nested too deep. Each is a clear JSON-RPC error, the
//! tool does not run, and the server goes on serving.

#[allow(dead_code)] // each test binary uses a part of the shared helpers
mod common;

use common::{HttpServer, error_of, hub, message, request, send_stateless};
use serde_json::{Value, json};
use toolmux_mcp_server::ServeOptions;

/// A call of `danger` (policy `ask`) by a client that declares form elicitation, carrying
/// `state` and `responses`.
fn retry_with(state: Value, responses: Value) -> Value {
    let mut call = request(
        1,
        "tools/call",
        json!({"name": "danger", "arguments": {"text": "rm"}}),
    );
    call["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] =
        json!({"elicitation": {"form": {}}});
    call["params"]["requestState"] = state;
    call["params"]["inputResponses"] = responses;
    call
}

/// A fresh state for `danger`, as the first round issues it.
async fn issued_state(port: u16) -> Value {
    let first = retry_with(Value::Null, Value::Null);
    let mut first = first;
    let params = first["params"].as_object_mut().expect("params");
    params.remove("requestState");
    params.remove("inputResponses");
    let response = send_stateless(port, &first).await;
    let answer = message(&response);
    assert_eq!(answer["result"]["resultType"], "input_required", "{answer}");
    answer["result"]["requestState"].clone()
}

/// After everything, the server still asks for, and takes, an approval.
async fn still_serves(port: u16) {
    let state = issued_state(port).await;
    let accept =
        json!({"toolmux/approval": {"action": "accept", "content": {"decision": "allow_once"}}});
    let response = send_stateless(port, &retry_with(state, accept)).await;
    let answer = message(&response);
    assert_eq!(
        answer["result"]["structuredContent"],
        json!({"text": "rm"}),
        "{answer}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_huge_or_garbage_request_state_is_refused() {
    let server = HttpServer::start(hub(), ServeOptions::default()).await;
    let port = server.port;
    let accept =
        json!({"toolmux/approval": {"action": "accept", "content": {"decision": "allow_once"}}});
    assert_eq!(
        error_of(
            port,
            &retry_with(json!("rs1.".repeat(300_000)), accept.clone())
        )
        .await,
        json!({"code": -32602, "message": "requestState is larger than 4096 bytes, so it is not one this server issued"})
    );
    let forged =
        "requestState was not issued by this server or was altered; call the tool again without it";
    for garbage in [
        "",
        "rs1",
        "rs1.!!!.!!!",
        "rs2...",
        "💥",
        "rs1.AAAAAAAAAAA.AAAA",
    ] {
        assert_eq!(
            error_of(port, &retry_with(json!(garbage), accept.clone())).await,
            json!({"code": -32602, "message": forged}),
            "{garbage:?}"
        );
    }
    // Not a string at all: the request does not parse as a `tools/call`, and rmcp answers it as
    // a method it has no handler for (its words, not toolmux's); nothing runs.
    assert_eq!(
        error_of(port, &retry_with(json!({"nested": [1, 2]}), accept)).await,
        json!({"code": -32601, "message": "tools/call"})
    );
    still_serves(port).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_huge_malformed_or_deep_answer_is_refused() {
    let server = HttpServer::start(hub(), ServeOptions::default()).await;
    let port = server.port;

    let state = issued_state(port).await;
    let huge = json!({"toolmux/approval": {"action": "accept", "content": {"decision": "a".repeat(300_000)}}});
    assert_eq!(
        error_of(port, &retry_with(state, huge)).await,
        json!({"code": -32602, "message": "inputResponses[\"toolmux/approval\"] is larger than 263168 bytes"})
    );

    let state = issued_state(port).await;
    let malformed = json!({"toolmux/approval": {"action": 5}});
    let error = error_of(port, &retry_with(state, malformed)).await;
    assert_eq!(error["code"], -32602, "{error}");
    assert_eq!(
        error["message"],
        "inputResponses[\"toolmux/approval\"] is not an elicitation result: invalid type: integer `5`, expected string or map"
    );

    // Nested past the JSON parser's limit: the body does not parse, and says why.
    let state = issued_state(port).await;
    let deep = format!("{}1{}", "{\"a\":".repeat(200), "}".repeat(200));
    let body = retry_with(state, json!({"toolmux/approval": "DEEP"}))
        .to_string()
        .replace("\"DEEP\"", &deep);
    let response = common::raw_http(
        port,
        &common::post_raw(
            port,
            &body,
            "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: danger\r\n",
        ),
    )
    .await;
    assert_eq!(response.status, 400, "{}", response.body);
    let answer = message(&response);
    assert_eq!(answer["error"]["code"], -32700, "{answer}");
    assert!(
        answer["error"]["message"].as_str().is_some_and(
            |m| m.starts_with("Parse error: the JSON is nested deeper than 127 levels")
        ),
        "{answer}"
    );

    // Answers to forms never asked are ignored; the one asked is still missing, so it is asked
    // again.
    let state = issued_state(port).await;
    let strangers =
        json!({"other": {"action": "accept"}, "toolmux/question": {"action": "accept"}});
    let response = send_stateless(port, &retry_with(state, strangers)).await;
    let answer = message(&response);
    assert_eq!(answer["result"]["resultType"], "input_required", "{answer}");
    still_serves(port).await;
}
