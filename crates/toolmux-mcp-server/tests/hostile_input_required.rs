//! Hostile retries of an input-required round: a huge or garbage `requestState`, a huge or
//! malformed `inputResponses` entry, one nested too deep, a state taken to another endpoint;
//! and one caller parking calls without end. Each is a clear JSON-RPC error, the tool does not
//! run, and the server goes on serving.

#[allow(dead_code)] // each test binary uses a part of the shared helpers
mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{HttpServer, error_of, hub, message, request, result_of, send_stateless};
use serde_json::{Value, json};
use toolmux_core::{Endpoint, EndpointFilter, Hub, HubSettings};
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

/// The first call of `danger` by the client that names itself `client` (no token: that name
/// is the caller's identity).
fn first_call_by(client: &str) -> Value {
    let mut first = retry_with(Value::Null, Value::Null);
    let params = first["params"].as_object_mut().expect("params");
    params.remove("requestState");
    params.remove("inputResponses");
    first["params"]["_meta"]["io.modelcontextprotocol/clientInfo"]["name"] = json!(client);
    first
}

/// [`hub`] with its settings changed by `change`.
fn hub_where(change: impl FnOnce(&mut HubSettings)) -> Hub {
    let hub = hub();
    let mut settings = (*hub.settings()).clone();
    change(&mut settings);
    hub.configure(settings);
    hub
}

/// What a caller at its cap of parked calls is told.
const CALLER_BUSY: &str = "64 of this caller's calls already wait for its answers; answer them \
                           (or let them expire) before making more";

/// A fresh state for `danger`, as the first round issues it.
async fn issued_state(port: u16) -> Value {
    let response = send_stateless(port, &first_call_by("raw-test")).await;
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

/// One caller cannot fill the server's pool of parked calls (which would refuse everyone):
/// past 64 of its own waiting, its next call is refused — it only; another caller's call is
/// still asked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_caller_cannot_fill_the_parked_calls_for_everyone() {
    // An hour to answer: no parked call ends during the test.
    let hub = hub_where(|settings| settings.approval_timeout = Duration::from_secs(3600));
    let server = HttpServer::start(hub, ServeOptions::default()).await;
    let port = server.port;
    for _ in 0..64 {
        let parked = result_of(port, &first_call_by("flood")).await;
        assert_eq!(parked["resultType"], "input_required", "{parked}");
    }
    assert_eq!(
        error_of(port, &first_call_by("flood")).await,
        json!({"code": -32602, "message": CALLER_BUSY})
    );
    let other = result_of(port, &first_call_by("someone-else")).await;
    assert_eq!(other["resultType"], "input_required", "{other}");
}

/// A parked call whose retry never comes ends at its time limit and gives its place back: a
/// caller at its cap can park calls again once theirs have run out; its old state is then
/// refused as expired.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parked_call_whose_retry_never_comes_is_released_at_its_time_limit() {
    let hub = hub_where(|settings| settings.approval_timeout = Duration::from_secs(2));
    let server = HttpServer::start(hub, ServeOptions::default()).await;
    let port = server.port;
    let first = result_of(port, &first_call_by("forgetful")).await;
    let state = first["requestState"].clone();
    // Parks until refused (calls parked early may end before the last is sent, so more than
    // 64 may be taken; never more than a few hundred).
    let mut refused = None;
    for _ in 0..1000 {
        let answer = message(&send_stateless(port, &first_call_by("forgetful")).await);
        if let Some(error) = answer.get("error") {
            refused = Some(error.clone());
            break;
        }
    }
    assert_eq!(
        refused,
        Some(json!({"code": -32602, "message": CALLER_BUSY}))
    );
    toolmux_testkit::eventually::eventually(
        Duration::from_secs(30),
        "a call parked again once the parked ones ran out of time",
        async || {
            let answer = message(&send_stateless(port, &first_call_by("forgetful")).await);
            answer["result"]["resultType"] == "input_required"
        },
    )
    .await;
    let accept =
        json!({"toolmux/approval": {"action": "accept", "content": {"decision": "allow_once"}}});
    assert_eq!(
        error_of(port, &retry_with(state, accept)).await,
        json!({"code": -32602, "message": "requestState has expired (it lasts as long as the person had to answer); call the tool again without it"})
    );
}

/// A state issued at `/mcp` is not redeemed at `/mcp/<name>`: the doors share one key and one
/// set of parked calls, and a call parked at one is not another endpoint's (whose view may
/// not even hold the tool) to resume. The call still waits where it was made.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_state_issued_at_mcp_is_refused_at_an_endpoint() {
    let hub = hub_where(|settings| {
        let endpoint = Endpoint::new("e", EndpointFilter::default(), None);
        settings.endpoints = Arc::new([("e".to_string(), Arc::new(endpoint))].into());
    });
    let server = HttpServer::start(hub, ServeOptions::default()).await;
    let port = server.port;
    let state = issued_state(port).await;
    let accept =
        json!({"toolmux/approval": {"action": "accept", "content": {"decision": "allow_once"}}});
    let at_endpoint = common::post(
        port,
        &retry_with(state.clone(), accept.clone()),
        "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: danger\r\n",
    )
    .replacen("POST /mcp ", "POST /mcp/e ", 1);
    let answer = message(&common::raw_http(port, &at_endpoint).await);
    assert_eq!(
        answer["error"],
        json!({"code": -32602, "message": "requestState was issued at another MCP endpoint; retry the call where it was made"}),
        "{answer}"
    );
    let resumed = result_of(port, &retry_with(state, accept)).await;
    assert_eq!(
        resumed["structuredContent"],
        json!({"text": "rm"}),
        "{resumed}"
    );
}
