//! Hostile questions and answers over REST (THREATS.md rules 1 and 8), found in review of
//! issue 28: a question's schema was compiled while the queue of everything waiting on a person
//! was locked, with no bound on its size or depth, and every answer compiled it again there.
//! Now a `request_human_input` whose schema nests too deep or is too large is refused at once,
//! before it waits anywhere, while an approval waiting meanwhile is untouched; and an answer
//! nested too deep or too large is refused with why, the question still waiting.

mod support;

use serde_json::{Value, json};
use support::toolmux_project;
use toolmux_testkit::eventually::wait_until;
use toolmux_testkit::served::{Served, config_with_key};

/// A form schema whose one field is an object, `levels` times over.
fn nested_schema(levels: usize) -> Value {
    let mut schema = json!({"type": "string"});
    for _ in 0..levels {
        schema = json!({"type": "object", "properties": {"f": schema}});
    }
    schema
}

/// `levels` arrays, one inside the other.
fn nested_value(levels: usize) -> Value {
    let mut value = json!("deep");
    for _ in 0..levels {
        value = Value::Array(vec![value]);
    }
    value
}

/// `toolmux serve` on a project where `grep` asks first.
fn served() -> Served {
    let project = toolmux_project();
    project.config(&config_with_key(
        r#""policies": {"tools": {"grep": "ask"}}"#,
    ));
    project.write("notes.txt", "buy milk\n");
    Served::start(&project, &[])
}

/// The first entry of a listing (`/api/inputs` or `/api/approvals`), once there is one.
fn first_waiting(served: &Served, path: &str, field: &str) -> Value {
    let mut first = Value::Null;
    wait_until(path, || {
        first = served.get_with_key(path).json()[field][0].clone();
        !first.is_null()
    });
    first
}

#[test]
fn a_question_whose_schema_is_too_deep_or_too_large_is_refused_while_an_approval_waits() {
    let served = served();
    std::thread::scope(|scope| {
        let calling = scope.spawn(|| served.post("/api/tools/grep/call", r#"{"pattern": "milk"}"#));
        let approval = first_waiting(&served, "/api/approvals", "approvals");

        let properties: serde_json::Map<String, Value> = (0..2_000)
            .map(|n| (format!("field{n}"), json!({"type": "string"})))
            .collect();
        for (schema, why) in [
            (nested_schema(40), "it nests deeper than 32 levels"),
            (
                json!({"type": "object", "properties": properties}),
                "it is larger than 32 KiB serialized",
            ),
        ] {
            let body = json!({"question": "Which?", "schema": schema}).to_string();
            let refused = served.post("/api/tools/request_human_input/call", &body);
            assert_eq!(refused.status, 200, "{}", refused.body);
            let result = refused.json();
            assert_eq!(result["status"], "error", "{result}");
            assert_eq!(
                result["content"],
                json!([{"type": "text", "text": format!("the answer's schema: {why}")}])
            );
        }
        // Nothing of them waits; the approval does, and is answered.
        assert_eq!(
            served.get_with_key("/api/inputs").json()["inputs"],
            json!([])
        );
        let id = approval["id"].as_str().expect("id");
        let allowed = served.post(&format!("/api/approvals/{id}"), r#"{"decision": "allow"}"#);
        assert_eq!(allowed.status, 204, "{}", allowed.body);
        let called = calling.join().expect("the call").json();
        assert_eq!(called["status"], "success", "{called}");
    });
    served.stop();
}

#[test]
fn an_answer_too_deep_or_too_large_is_refused_and_the_question_keeps_waiting() {
    let served = served();
    let question = json!({"question": "Which branch?"}).to_string();
    std::thread::scope(|scope| {
        let asking = scope.spawn(|| served.post("/api/tools/request_human_input/call", &question));
        let input = first_waiting(&served, "/api/inputs", "inputs");
        let id = input["id"].as_str().expect("id");
        for (answer, why) in [
            (nested_value(40), "the answer nests deeper than 32 levels"),
            (
                json!("x".repeat(300 * 1024)),
                "the answer is larger than 256 KiB serialized",
            ),
        ] {
            let body = json!({"action": "accept", "content": {"answer": answer}}).to_string();
            served
                .post(&format!("/api/inputs/{id}"), &body)
                .exact_error(
                    422,
                    "invalid_answer",
                    &format!("the answer does not fit the question's schema: {why}"),
                );
            let waiting = served.get_with_key("/api/inputs").json();
            assert_eq!(waiting["inputs"][0]["id"], id, "{waiting}");
        }
        let answered = served.post(
            &format!("/api/inputs/{id}"),
            r#"{"action": "accept", "content": {"answer": "main"}}"#,
        );
        assert_eq!(answered.status, 204, "{}", answered.body);
        let result = asking.join().expect("the asking request").json();
        assert_eq!(result["content"][0]["text"], "main", "{result}");
    });
    served.stop();
}
