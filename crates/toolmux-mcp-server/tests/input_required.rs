//! Approvals, questions and upstream servers' own forms for 2026-07-28 clients, as
//! input-required results (SEP-2322): raw HTTP for the exact shape of each round and of every
//! refused `requestState`, the real Python client (`mcp` 2.3, which drives the rounds itself
//! through its elicitation callback) for whole round trips, a real upstream MCP server that
//! elicits, and the real execution log for what was recorded.

#[allow(dead_code)] // each test binary uses a part of the shared helpers
mod common;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use common::{HttpServer, TestSource, error_of, request, result_of};
use serde_json::{Value, json};
use toolmux_core::{HubSettings, HumanInputSource, Outcome};
use toolmux_execlog::{ExecutionLog, LogQuery, LogSettings};
use toolmux_mcp_server::ServeOptions;
use toolmux_testkit::peers::mcp_python;
use toolmux_testkit::project::TestProject;
use toolmux_testkit::python_client::{PythonClient, result_text};
use toolmux_upstream::Upstreams;

/// A hub holding the fixture source (whose `danger` asks) and `request_human_input`, logging
/// to the real execution log in `dir`, with approvals bounded to `approval_timeout`.
fn logged_hub(dir: &Path, approval_timeout: Duration) -> (toolmux_core::Hub, Arc<ExecutionLog>) {
    let log = Arc::new(ExecutionLog::open(LogSettings::new(dir)).expect("open the execution log"));
    let settings = HubSettings {
        approval_timeout,
        ..HubSettings::default()
    };
    let hub = toolmux_core::Hub::new(settings, Arc::clone(&log) as _);
    hub.add_source(Arc::new(TestSource::fixture()));
    hub.add_source(Arc::new(HumanInputSource::new()));
    (hub, log)
}

/// The outcome and error of every logged call of `tool`, oldest first.
fn logged(log: &ExecutionLog, tool: &str) -> Vec<(Outcome, Option<String>)> {
    log.flush();
    let query = LogQuery {
        tool: Some(tool.to_string()),
        ..LogQuery::default()
    };
    let mut entries = toolmux_execlog::query(log.dir(), &query).expect("read the log");
    entries.sort_by_key(|e| e.id);
    entries.into_iter().map(|e| (e.outcome, e.error)).collect()
}

/// A call of `danger` with `arguments` by a client that declares form elicitation.
fn call_danger(id: u64, arguments: Value) -> Value {
    let mut call = request(
        id,
        "tools/call",
        json!({"name": "danger", "arguments": arguments}),
    );
    call["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] =
        json!({"elicitation": {"form": {}}});
    call
}

/// `call` sent again with `answer` to the approval form and `state`.
fn retry(mut call: Value, id: u64, state: &Value, answer: Value) -> Value {
    call["id"] = json!(id);
    call["params"]["requestState"] = state.clone();
    call["params"]["inputResponses"] = json!({ "toolmux/approval": answer });
    call
}

const ACCEPT_ONCE: &str = r#"{"action": "accept", "content": {"decision": "allow_once"}}"#;

fn accept_once() -> Value {
    serde_json::from_str(ACCEPT_ONCE).expect("JSON")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ask_call_is_answered_with_a_form_and_runs_once_the_retry_accepts() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let (hub, log) = logged_hub(dir.path(), Duration::from_secs(60));
    let server = HttpServer::start(hub, ServeOptions::default()).await;
    let call = call_danger(1, json!({"text": "rm"}));

    let asked = result_of(server.port, &call).await;
    assert_eq!(asked["resultType"], "input_required", "{asked}");
    let form = &asked["inputRequests"]["toolmux/approval"];
    assert_eq!(form["method"], "elicitation/create", "{asked}");
    assert_eq!(
        form["params"]["message"],
        "Allow `danger` (from `test`) to run with these arguments?\n{\n  \"text\": \"rm\"\n}"
    );
    // No session to remember "allow for this session" in: it is not offered.
    assert_eq!(
        form["params"]["requestedSchema"]["properties"]["decision"]["oneOf"],
        json!([
            {"const": "allow_once", "title": "Allow once"},
            {"const": "deny", "title": "Deny"}
        ])
    );
    let state = &asked["requestState"];
    assert!(state.is_string(), "{asked}");
    // The call waits for the answer: nothing is recorded until it ends.
    assert_eq!(logged(&log, "danger"), Vec::new());

    let accepted = retry(call.clone(), 2, state, accept_once());
    let ran = result_of(server.port, &accepted).await;
    assert_eq!(ran["resultType"], "complete", "{ran}");
    assert_eq!(ran["structuredContent"], json!({"text": "rm"}), "{ran}");
    assert_eq!(logged(&log, "danger"), [(Outcome::Ok, None)]);

    // The same state again does not run the tool a second time.
    let replayed = error_of(server.port, &retry(call, 3, state, accept_once())).await;
    assert_eq!(
        replayed,
        json!({"code": -32602, "message": "requestState was already used, or its call has ended; call the tool again without it"})
    );
    assert_eq!(logged(&log, "danger").len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_declined_form_refuses_the_call_and_logs_the_denial() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let (hub, log) = logged_hub(dir.path(), Duration::from_secs(60));
    let server = HttpServer::start(hub, ServeOptions::default()).await;
    let call = call_danger(1, json!({"text": "rm"}));
    let asked = result_of(server.port, &call).await;

    let declined = retry(
        call,
        2,
        &asked["requestState"],
        json!({"action": "decline"}),
    );
    let refused = result_of(server.port, &declined).await;
    assert_eq!(refused["resultType"], "complete", "{refused}");
    assert_eq!(refused["isError"], true, "{refused}");
    let denial = "tool `danger` was denied: the user declined it";
    assert_eq!(refused["content"][0]["text"], denial);
    assert_eq!(
        logged(&log, "danger"),
        [(Outcome::Denied, Some(denial.into()))]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forged_state_or_one_for_another_call_or_caller_is_refused_and_runs_nothing() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let (hub, log) = logged_hub(dir.path(), Duration::from_secs(60));
    let server = HttpServer::start(hub, ServeOptions::default()).await;
    let port = server.port;
    let call = call_danger(1, json!({"text": "rm"}));
    let state = result_of(port, &call).await["requestState"].clone();
    let text = state.as_str().expect("a string");
    let middle = text.len() / 2;
    let flipped = if &text[middle..=middle] == "A" {
        "B"
    } else {
        "A"
    };
    let forged = json!(format!(
        "{}{flipped}{}",
        &text[..middle],
        &text[middle + 1..]
    ));
    assert_eq!(
        error_of(port, &retry(call.clone(), 2, &forged, accept_once())).await,
        json!({"code": -32602, "message": "requestState was not issued by this server or was altered; call the tool again without it"})
    );

    let other_arguments = retry(
        call_danger(1, json!({"text": "rm -rf /"})),
        3,
        &state,
        accept_once(),
    );
    assert_eq!(
        error_of(port, &other_arguments).await,
        json!({"code": -32602, "message": "requestState was issued for another call (another tool or other arguments)"})
    );

    let mut other_caller = retry(call.clone(), 4, &state, accept_once());
    other_caller["params"]["_meta"]["io.modelcontextprotocol/clientInfo"]["name"] =
        json!("someone-else");
    assert_eq!(
        error_of(port, &other_caller).await,
        json!({"code": -32602, "message": "requestState was issued to another caller"})
    );

    // None of these ran the tool, or ended the call that waits.
    assert_eq!(logged(&log, "danger"), Vec::new());

    // The state the refusals did not redeem still resumes its call, for its own caller.
    let ran = result_of(port, &retry(call, 5, &state, accept_once())).await;
    assert_eq!(ran["structuredContent"], json!({"text": "rm"}), "{ran}");
    assert_eq!(logged(&log, "danger"), [(Outcome::Ok, None)]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_state_past_the_approval_time_limit_is_refused() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    // The state lasts as long as the person has to answer: a millisecond here.
    let (hub, log) = logged_hub(dir.path(), Duration::from_millis(1));
    let server = HttpServer::start(hub, ServeOptions::default()).await;
    let call = call_danger(1, json!({"text": "rm"}));
    let asked = result_of(server.port, &call).await;
    assert_eq!(asked["resultType"], "input_required", "{asked}");
    tokio::time::sleep(Duration::from_millis(50)).await;
    let late = retry(call, 2, &asked["requestState"], accept_once());
    assert_eq!(
        error_of(server.port, &late).await,
        json!({"code": -32602, "message": "requestState has expired (it lasts as long as the person had to answer); call the tool again without it"})
    );
    // The call ended at its time limit, as a call whose elicitation nobody answers does.
    assert_eq!(
        logged(&log, "danger"),
        [(
            Outcome::Denied,
            Some(
                "tool `danger` was denied: nobody answered the approval request within 1ms".into()
            )
        )]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_without_the_answer_is_asked_the_same_form_again() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let (hub, _log) = logged_hub(dir.path(), Duration::from_secs(60));
    let server = HttpServer::start(hub, ServeOptions::default()).await;
    let call = call_danger(1, json!({"text": "rm"}));
    let asked = result_of(server.port, &call).await;
    let mut unanswered = call.clone();
    unanswered["id"] = json!(2);
    unanswered["params"]["requestState"] = asked["requestState"].clone();
    let again = result_of(server.port, &unanswered).await;
    assert_eq!(again["resultType"], "input_required", "{again}");
    assert_eq!(again["inputRequests"], asked["inputRequests"]);
    assert_ne!(again["requestState"], asked["requestState"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_client_answers_an_approval_and_a_question_in_rounds() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let (hub, log) = logged_hub(dir.path(), Duration::from_secs(60));
    let server = HttpServer::start(hub, ServeOptions::default()).await;
    let mut client = PythonClient::start(json!({
        "transport": "http",
        "url": server.url,
        "mode": "auto",
        "elicitation": [
            "allow_once",
            "deny",
            {"colour": "purple"},
            {"colour": "blue"},
            "decline"
        ],
        "steps": [
            {"op": "call", "name": "danger", "arguments": {"text": "one"}},
            {"op": "call", "name": "danger", "arguments": {"text": "two"}},
            {"op": "call", "name": "request_human_input", "arguments": {
                "question": "Which colour?",
                "schema": {"type": "object", "required": ["colour"], "properties": {
                    "colour": {"type": "string", "enum": ["red", "blue"]}
                }}
            }},
            {"op": "call", "name": "request_human_input", "arguments": {"question": "Why?"}}
        ]
    }));
    let connected = client.next().await;
    assert_eq!(connected["connected"]["protocolVersion"], "2026-07-28");
    let allowed = client.next().await;
    assert_eq!(
        allowed["result"]["structuredContent"],
        json!({"text": "one"}),
        "{allowed}"
    );
    let denied = client.next().await;
    assert_eq!(
        result_text(&denied),
        "tool `danger` was denied: the user chose to deny it"
    );
    // An answer that does not fit the form is refused, and the question asked again, with
    // why, in a further round.
    let answered = client.next().await;
    assert_eq!(
        answered["result"]["structuredContent"],
        json!({"colour": "blue"}),
        "{answered}"
    );
    let declined = client.next().await;
    assert_eq!(result_text(&declined), "the person chose not to answer");
    let lines = client.finish().await;
    let done = lines.last().expect("the client's last line");
    let forms: Vec<&str> = done["done"]["elicitations"]
        .as_array()
        .expect("the forms asked")
        .iter()
        .map(|form| form["message"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(forms.len(), 5, "{forms:?}");
    assert_eq!(forms[2], "Which colour?");
    assert!(
        forms[3].starts_with("Which colour?\n\n(Your last answer was not taken — "),
        "{}",
        forms[3]
    );
    assert_eq!(forms[4], "Why?");
    assert_eq!(
        logged(&log, "danger"),
        [
            (Outcome::Ok, None),
            (
                Outcome::Denied,
                Some("tool `danger` was denied: the user chose to deny it".into())
            )
        ]
    );
    // One call of each question, however many rounds it took.
    assert_eq!(logged(&log, "request_human_input").len(), 2);
}

/// An upstream server (the real Python SDK) that elicits while a 2026-07-28 client's call
/// runs: its form becomes an input-required round, and the retry's answer reaches it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_servers_own_form_is_relayed_as_an_input_required_round() {
    let meet = tempfile::tempdir().expect("a temporary directory");
    // The fixture's `ask` waits for a second caller's file first; this one stands in for it.
    std::fs::write(meet.path().join("another"), "").expect("write a file");
    let project = TestProject::new();
    project.config(
        &json!({"mcpServers": {"sessions": {
            "command": mcp_python(),
            "args": [
                Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/common/sessions.py"),
                "--meet",
                meet.path(),
            ],
        }}})
        .to_string(),
    );
    let loaded = toolmux_config::load(project.path(), None).expect("config loads");
    let upstreams = Arc::new(Upstreams::new(
        &loaded,
        &toolmux_upstream::state_dir(project.path()),
    ));
    upstreams
        .get("sessions")
        .expect("configured")
        .discover()
        .await
        .expect("discovers");
    let dir = tempfile::tempdir().expect("a temporary directory");
    let (hub, log) = logged_hub(dir.path(), Duration::from_secs(60));
    for source in upstreams.sources() {
        hub.add_source(source);
    }
    let server = HttpServer::start(
        hub,
        ServeOptions {
            upstreams: Some(Arc::clone(&upstreams)),
            ..ServeOptions::default()
        },
    )
    .await;

    let mut call = request(
        1,
        "tools/call",
        json!({"name": "sessions__ask", "arguments": {}}),
    );
    call["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] =
        json!({"elicitation": {"form": {}}});
    let asked = result_of(server.port, &call).await;
    assert_eq!(asked["resultType"], "input_required", "{asked}");
    let form = &asked["inputRequests"]["toolmux/relayed"];
    assert_eq!(form["method"], "elicitation/create", "{asked}");
    assert_eq!(form["params"]["message"], "Who are you?", "{asked}");

    let mut answered = call.clone();
    answered["id"] = json!(2);
    answered["params"]["requestState"] = asked["requestState"].clone();
    answered["params"]["inputResponses"] =
        json!({"toolmux/relayed": {"action": "accept", "content": {"name": "Ada"}}});
    let ran = result_of(server.port, &answered).await;
    assert_eq!(ran["resultType"], "complete", "{ran}");
    let text = ran["content"][0]["text"].as_str().expect("a text result");
    assert!(text.ends_with(":Ada"), "{ran}");
    assert_eq!(logged(&log, "sessions__ask"), [(Outcome::Ok, None)]);
    upstreams.shutdown().await;
}
