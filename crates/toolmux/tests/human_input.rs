//! Human input and approvals on every channel (#18): `request_human_input` over MCP (the real
//! Python client answering the elicitation, or refusing for want of the capability), over REST
//! (a pending input answered by a second request), from a code-mode script (`human.ask`,
//! answered over REST); one rule for an answer that does not fit; one event stream of
//! everything waiting on a person; and a tool's configured `approvalMessage` as the question on
//! MCP and REST.

mod support;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::toolmux_project;
use toolmux_testkit::project::TestProject;
use toolmux_testkit::python_client::run_mcp_steps;
use toolmux_testkit::served::{KEY, Served, config_with_key};

fn text(line: &Value) -> &str {
    line["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("not a result with text: {line}"))
}

fn count_schema() -> Value {
    json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]})
}

/// Runs the client to its end; returns the steps' outcomes and what it was asked.
fn run_client(plan: &Value) -> (Vec<Value>, Vec<Value>) {
    let lines = toolmux_testkit::python_client::run_mcp_client(plan);
    let asked = lines
        .last()
        .and_then(|l| l["done"]["elicitations"].as_array())
        .cloned()
        .unwrap_or_else(|| panic!("no summary line: {lines:?}"));
    let steps = lines
        .into_iter()
        .filter(|l| l.get("connected").is_none() && l.get("done").is_none())
        .collect();
    (steps, asked)
}

#[test]
fn an_mcp_client_answers_request_human_input_through_its_elicitation_form() {
    let project = toolmux_project();
    project.config("{}");
    let mut plan = project.stdio_plan(&["mcp"],
        json!([
            {"op": "call", "name": "request_human_input", "arguments": {"question": "Favourite colour?"}},
            {"op": "call", "name": "request_human_input",
             "arguments": {"question": "How many?", "schema": count_schema()}},
            {"op": "call", "name": "request_human_input", "arguments": {"question": "And now?"}},
        ]),
    );
    plan["elicitation"] = json!([{"answer": "blue"}, {"n": 3}, "decline"]);
    let (steps, asked) = run_client(&plan);

    assert_eq!(steps[0]["result"]["isError"], false, "{}", steps[0]);
    assert_eq!(text(&steps[0]), "blue");
    assert_eq!(steps[1]["result"]["structuredContent"], json!({"n": 3}));
    assert_eq!(steps[2]["result"]["isError"], true, "{}", steps[2]);
    assert_eq!(text(&steps[2]), "the person chose not to answer");

    assert_eq!(asked.len(), 3);
    assert_eq!(asked[0]["message"], "Favourite colour?");
    assert_eq!(
        asked[0]["requestedSchema"]["required"],
        json!(["answer"]),
        "a free-text question is a one-field form: {}",
        asked[0]
    );
    assert_eq!(
        asked[1]["requestedSchema"]["properties"]["n"]["type"],
        "integer"
    );
}

/// The one rule over MCP: an answer from the client's form that does not fit the question's
/// schema is refused — the form is shown again, saying which field and why — and the question
/// stays open for an answer that does, as `/api/inputs` and the chat refuse it.
#[test]
fn an_mcp_clients_answer_that_does_not_fit_is_refused_and_the_form_shown_again() {
    let project = toolmux_project();
    project.config("{}");
    let mut plan = project.stdio_plan(
        &["mcp"],
        json!([{"op": "call", "name": "request_human_input",
                "arguments": {"question": "How many?", "schema": count_schema()}}]),
    );
    plan["elicitation"] = json!([{"n": "many"}, {"n": 3}]);
    let (steps, asked) = run_client(&plan);

    assert_eq!(steps[0]["result"]["isError"], false, "{}", steps[0]);
    assert_eq!(steps[0]["result"]["structuredContent"], json!({"n": 3}));
    assert_eq!(asked.len(), 2, "{asked:?}");
    assert_eq!(asked[0]["message"], "How many?");
    let again = asked[1]["message"].as_str().expect("a message");
    assert!(
        again.starts_with(
            "How many?\n\n(Your last answer was not taken — the answer does not fit the \
             question's schema: /n: "
        ),
        "{again}"
    );
    assert_eq!(asked[1]["requestedSchema"], asked[0]["requestedSchema"]);
}

/// Over plain stdio (`toolmux mcp`) nobody else can answer: the question is refused in words
/// the model can act on. Under `serve` it waits in the queue instead (the test after).
#[test]
fn an_mcp_client_without_elicitation_gets_an_error_the_model_can_read() {
    let project = toolmux_project();
    project.config("{}");
    let steps = run_mcp_steps(&project.stdio_plan(
        &["mcp"],
        json!([{"op": "call", "name": "request_human_input", "arguments": {"question": "Why?"}}]),
    ));
    assert_eq!(steps[0]["result"]["isError"], true, "{}", steps[0]);
    let message = text(&steps[0]);
    assert!(
        message.contains("elicitation") && message.contains("ask the person in your reply"),
        "{message}"
    );
}

/// Issue 29: under `serve`, a question from an MCP client that cannot show forms waits in the
/// one queue (web app, REST, terminal) instead of failing, and the answer given there reaches
/// the client.
#[test]
fn under_serve_a_question_from_a_client_without_elicitation_is_answered_over_rest() {
    let (_project, served) = served_project("");
    let plan = json!({
        "transport": "http",
        "url": served.mcp_url(),
        "headers": {"Authorization": format!("Bearer {KEY}")},
        "steps": [{"op": "call", "name": "request_human_input",
                   "arguments": {"question": "Which branch?"}}],
    });
    std::thread::scope(|scope| {
        let client = scope.spawn(|| run_mcp_steps(&plan));
        let input = first_waiting(&served, "/api/inputs", "inputs");
        assert_eq!(input["question"], "Which branch?", "{input}");
        assert_eq!(input["channel"], "mcp", "{input}");
        let id = input["id"].as_str().expect("id");
        let answered = served.post(
            &format!("/api/inputs/{id}"),
            r#"{"action": "accept", "content": {"answer": "main"}}"#,
        );
        assert_eq!(answered.status, 204, "{}", answered.body);
        let steps = client.join().expect("the client");
        assert_eq!(steps[0]["result"]["isError"], false, "{}", steps[0]);
        assert_eq!(text(&steps[0]), "main");
    });
    served.stop();
}

#[test]
fn a_configured_approval_message_is_the_question_an_mcp_client_shows() {
    let project = toolmux_project();
    project.write("notes.txt", "the needle is here\n");
    project.config(
        r#"{"policies": {"tools": {"grep": "ask"}},
            "toolSettings": {"grep": {"approvalMessage": "Search for {{pattern}} in {{where.dir}}?"}}}"#,
    );
    let mut plan = project.stdio_plan(
        &["mcp"],
        json!([{"op": "call", "name": "grep", "arguments": {"pattern": "needle"}}]),
    );
    plan["elicitation"] = json!(["allow_once"]);
    let (steps, asked) = run_client(&plan);
    assert_eq!(steps[0]["result"]["isError"], false, "{}", steps[0]);
    assert_eq!(asked[0]["message"], "Search for needle in {{where.dir}}?");
}

#[test]
fn an_unclosed_placeholder_is_a_configuration_error_at_its_field() {
    let project = toolmux_project();
    project.config(
        r#"{
  "toolSettings": {
    "grep": {"approvalMessage": "Search for {{pattern"}
  }
}"#,
    );
    let run = project.run(&["tools", "list"]);
    assert_ne!(run.code(), 0);
    let stderr = run.stderr();
    assert!(
        stderr.contains("config.json") && stderr.contains(":3:") && stderr.contains("{{"),
        "{stderr}"
    );
}

fn served_project(extra: &str) -> (TestProject, Served) {
    let project = toolmux_project();
    project.config(&config_with_key(extra));
    project.write("notes.txt", "buy milk\n");
    let served = Served::start(&project, &[]);
    (project, served)
}

/// Waits for the first entry of a listing (`/api/inputs` or `/api/approvals`).
fn first_waiting(served: &Served, path: &str, field: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let list = served.get_with_key(path).json();
        if let Some(first) = list[field].as_array().and_then(|a| a.first()) {
            return first.clone();
        }
        assert!(Instant::now() < deadline, "nothing appeared in {path}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_rest_question_waits_as_a_pending_input_until_a_second_request_answers_it() {
    let (_project, served) = served_project(
        r#""policies": {"tools": {"grep": "ask"}},
           "toolSettings": {"grep": {"approvalMessage": "Look for {{pattern}}?"}}"#,
    );
    std::thread::scope(|scope| {
        let asking = scope.spawn(|| {
            served.post(
                "/api/tools/request_human_input/call",
                r#"{"question": "Which branch?"}"#,
            )
        });
        let input = first_waiting(&served, "/api/inputs", "inputs");
        assert_eq!(input["tool"], "request_human_input");
        assert_eq!(input["question"], "Which branch?");
        assert_eq!(input["channel"], "rest");
        assert_eq!(input["schema"]["required"], json!(["answer"]));
        assert!(
            input["created"].is_string() && input["expires"].is_string(),
            "{input}"
        );
        let id = input["id"].as_str().expect("id");

        // An answer that does not fit is refused with why, and the question keeps waiting.
        let misfit = served.post(
            &format!("/api/inputs/{id}"),
            r#"{"action": "accept", "content": {"answer": 5}}"#,
        );
        let e = misfit.error(422, "invalid_answer");
        assert!(
            e["message"].as_str().expect("message").contains("/answer"),
            "{e}"
        );
        let answered = served.post(
            &format!("/api/inputs/{id}"),
            r#"{"action": "accept", "content": {"answer": "main"}}"#,
        );
        assert_eq!(answered.status, 204, "{}", answered.body);

        let result = asking.join().expect("the asking request").json();
        assert_eq!(result["status"], "success", "{result}");
        assert_eq!(result["content"][0]["text"], "main");
        served
            .post(&format!("/api/inputs/{id}"), r#"{"action": "decline"}"#)
            .error(404, "not_found");
    });

    // The configured approval message is the REST approval's `message`.
    std::thread::scope(|scope| {
        let calling = scope.spawn(|| served.post("/api/tools/grep/call", r#"{"pattern": "milk"}"#));
        let approval = first_waiting(&served, "/api/approvals", "approvals");
        assert_eq!(approval["request"]["message"], "Look for milk?");
        let id = approval["id"].as_str().expect("id");
        let denied = served.post(
            &format!("/api/approvals/{id}"),
            r#"{"decision": "deny", "reason": "not now"}"#,
        );
        assert_eq!(denied.status, 204, "{}", denied.body);
        calling.join().expect("the call").error(403, "denied");
    });
    served.stop();
}

#[test]
fn a_code_mode_script_asks_with_human_ask_and_an_answer_over_rest_resumes_it() {
    let (_project, served) = served_project("");
    let script = r#"
        const where = await human.ask("Deploy where?");
        const count = await human.ask<{ n: number }>("How many?", {
            type: "object", properties: { n: { type: "integer" } }, required: ["n"],
        });
        return `${where} x${count.n}`;
    "#;
    let body = json!({"code": script}).to_string();
    std::thread::scope(|scope| {
        let running = scope.spawn(|| served.post("/api/tools/run_code/call", &body));
        for answer in [json!({"answer": "staging"}), json!({"n": 2})] {
            let input = first_waiting(&served, "/api/inputs", "inputs");
            assert_eq!(input["channel"], "code", "{input}");
            let id = input["id"].as_str().expect("id");
            let answered = served.post(
                &format!("/api/inputs/{id}"),
                &json!({"action": "accept", "content": answer}).to_string(),
            );
            assert_eq!(answered.status, 204, "{}", answered.body);
        }
        let done = running.join().expect("the script's request");
        assert_eq!(done.status, 200, "{}", done.body);
        assert!(done.body.contains("staging x2"), "{}", done.body);
    });
    served.stop();
}

/// A reader of `GET /api/approvals/stream`: its events, one at a time.
struct EventStream {
    lines: BufReader<TcpStream>,
}

impl EventStream {
    fn open(served: &Served) -> Self {
        let mut stream = TcpStream::connect(&served.address).expect("connect");
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .expect("timeout");
        write!(
            stream,
            "GET /api/approvals/stream HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {KEY}\r\n\r\n",
            served.address
        )
        .expect("send");
        let mut lines = BufReader::new(stream);
        let mut status = String::new();
        lines.read_line(&mut status).expect("status line");
        assert!(status.contains(" 200 "), "{status}");
        Self { lines }
    }

    /// The next event's name and data, skipping comments and chunk framing.
    fn next(&mut self) -> (String, Value) {
        let mut event = None;
        loop {
            let mut line = String::new();
            let read = self.lines.read_line(&mut line).expect("read the stream");
            assert!(read > 0, "the stream ended");
            let line = line.trim_end();
            if let Some(name) = line.strip_prefix("event: ") {
                event = Some(name.to_string());
            } else if let Some(data) = line.strip_prefix("data: ")
                && let Some(name) = event.take()
            {
                return (name, serde_json::from_str(data).expect("JSON data"));
            }
        }
    }
}

/// Issue 29: headless clients answer every form at once — `claude -p` with `cancel`, `codex exec`
/// with `decline`. A `cancel` is no answer: the approval keeps waiting for a person, and a REST
/// allow runs the call; a `decline` denies it.
#[test]
fn a_clients_cancel_leaves_the_approval_to_rest_and_its_decline_denies() {
    let (_project, served) = served_project(r#""policies": {"tools": {"grep": "ask"}}"#);
    let mut events = EventStream::open(&served);
    let call = json!({"op": "call", "name": "grep", "arguments": {"pattern": "milk"}});
    let plan = json!({
        "transport": "http",
        "url": served.mcp_url(),
        "headers": {"Authorization": format!("Bearer {KEY}")},
        "elicitation": ["cancel", "decline"],
        "steps": [call, call],
    });
    std::thread::scope(|scope| {
        let client = scope.spawn(|| run_client(&plan));
        let (name, pending) = events.next();
        assert_eq!(
            (name.as_str(), &pending["kind"]),
            ("pending", &json!("approval"))
        );
        let id = pending["id"].as_str().expect("id").to_string();
        let answered = served.post(&format!("/api/approvals/{id}"), r#"{"decision": "allow"}"#);
        assert_eq!(answered.status, 204, "{}", answered.body);
        assert_eq!(events.next().1, json!({"id": id, "outcome": "allowed"}));

        // The second call: the client's `decline` wins, and the queue's wait is withdrawn.
        let (name, pending) = events.next();
        assert_eq!(name, "pending");
        assert_eq!(
            events.next().1,
            json!({"id": pending["id"], "outcome": "withdrawn"})
        );

        let (steps, asked) = client.join().expect("the client");
        assert_eq!(asked.len(), 2);
        assert_eq!(steps[0]["result"]["isError"], false, "{}", steps[0]);
        assert!(text(&steps[0]).contains("buy milk"), "{}", steps[0]);
        assert_eq!(
            text(&steps[1]),
            "tool `grep` was denied: the user declined it"
        );
    });
    served.stop();
}

#[test]
fn the_stream_shows_an_mcp_clients_approval_and_a_rest_answer_lets_the_call_run() {
    let (_project, served) = served_project(r#""policies": {"tools": {"grep": "ask"}}"#);
    let mut events = EventStream::open(&served);
    // A client without elicitation: under `serve` its approval waits for a person elsewhere.
    let plan = json!({
        "transport": "http",
        "url": served.mcp_url(),
        "headers": {"Authorization": format!("Bearer {KEY}")},
        "steps": [{"op": "call", "name": "grep", "arguments": {"pattern": "milk"}}],
    });
    std::thread::scope(|scope| {
        let client = scope.spawn(|| run_mcp_steps(&plan));
        let (name, pending) = events.next();
        assert_eq!(name, "pending");
        assert_eq!(pending["kind"], "approval", "{pending}");
        assert_eq!(pending["request"]["tool"], "grep");
        assert_eq!(pending["request"]["channel"], "mcp");
        let id = pending["id"].as_str().expect("id").to_string();
        // The same object `GET /api/approvals` lists, plus `kind`.
        let listed = served.get_with_key("/api/approvals").json()["approvals"][0].clone();
        let mut without_kind = pending.clone();
        without_kind.as_object_mut().expect("object").remove("kind");
        assert_eq!(without_kind, listed);

        let answered = served.post(&format!("/api/approvals/{id}"), r#"{"decision": "allow"}"#);
        assert_eq!(answered.status, 204, "{}", answered.body);
        let (name, resolved) = events.next();
        assert_eq!(name, "resolved");
        assert_eq!(resolved, json!({"id": id, "outcome": "allowed"}));

        let steps = client.join().expect("the client");
        assert_eq!(steps[0]["result"]["isError"], false, "{}", steps[0]);
        assert!(text(&steps[0]).contains("buy milk"), "{}", steps[0]);
    });

    // A stream opened while something waits gets it first.
    std::thread::scope(|scope| {
        let asking = scope.spawn(|| {
            served.post(
                "/api/tools/request_human_input/call",
                r#"{"question": "Still there?"}"#,
            )
        });
        let input = first_waiting(&served, "/api/inputs", "inputs");
        let mut late = EventStream::open(&served);
        let (name, pending) = late.next();
        assert_eq!(
            (name.as_str(), &pending["kind"]),
            ("pending", &json!("input"))
        );
        assert_eq!(pending["id"], input["id"]);
        let id = input["id"].as_str().expect("id");
        let answered = served.post(&format!("/api/inputs/{id}"), r#"{"action": "cancel"}"#);
        assert_eq!(answered.status, 204, "{}", answered.body);
        assert_eq!(late.next().1["outcome"], "cancelled");
        let result = asking.join().expect("the asking request").json();
        assert_eq!(result["status"], "error", "{result}");
    });
    served.stop();
}
