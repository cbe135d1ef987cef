//! `/api/specs` of `toolmux serve`, driven over real HTTP against the real binary on a scratch
//! project with a few LeanSpec specs: every route is a call of its `spec_*` tool through the
//! pipeline, a tool's refusal maps to 404, 409 or 422 by its kind, writes wait for approval like
//! any `ask` call, and a project without specs says so.

mod support;

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::toolmux_project;
use toolmux_testkit::http::{Response, request};
use toolmux_testkit::project::TestProject;
use toolmux_testkit::served::{KEY, Served, config_with_key};

/// The writes run without asking, for the tests about what they do (the approval flow has its
/// own test, with the default policies).
const WRITES_ALLOWED: &str = r#""policies": {"tools": {"spec_create": "allow", "spec_update": "allow", "spec_relationships": "allow"}}"#;

/// Five specs: two planned (one a child of a complete one), one in progress that depends on the
/// first, and one whose `created` date breaks LeanSpec's format.
fn project(extra_config: &str) -> TestProject {
    let project = toolmux_project();
    project.config(&config_with_key(extra_config));
    project.write(
        "specs/001-auth-login/README.md",
        "---\nstatus: planned\ncreated: 2025-01-10\npriority: high\ntags: [api, auth]\n---\n\n\
         # Auth Login\n\n## Plan\n\n- [ ] write the login form\n",
    );
    project.write(
        "specs/002-search-index/README.md",
        "---\nstatus: in-progress\ncreated: 2025-02-01\npriority: medium\ntags: [search]\n\
         depends_on:\n  - 001-auth-login\n---\n\n# Search Index\n\nAn index of every document.\n",
    );
    project.write(
        "specs/003-billing/README.md",
        "---\nstatus: complete\ncreated: 2025-03-01\npriority: low\ntags: [api]\n---\n\n\
         # Billing\n\nInvoices and payments.\n",
    );
    project.write(
        "specs/004-billing-invoices/README.md",
        "---\nstatus: planned\ncreated: 2025-03-02\npriority: medium\ntags: [api, billing]\n\
         assignee: ana\nparent: 003-billing\n---\n\n# Billing Invoices\n\nMonthly invoices.\n",
    );
    project.write(
        "specs/005-bad-date/README.md",
        "---\nstatus: draft\ncreated: 2025/01/02\n---\n\n# Bad Date\n\nSome text.\n",
    );
    project.write("notes.md", "hello world");
    project
}

fn ids(specs: &Value) -> Vec<&str> {
    specs
        .as_array()
        .unwrap_or_else(|| panic!("not a list of specs: {specs}"))
        .iter()
        .map(|s| s["id"].as_str().expect("id"))
        .collect()
}

/// `GET path` with the key, expecting 200; the body.
fn read(served: &Served, path: &str) -> Value {
    let response = served.get_with_key(path);
    assert_eq!(response.status, 200, "GET {path}: {}", response.body);
    response.json()
}

/// The first call waiting for approval, once there is one.
fn next_approval(served: &Served) -> Value {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let list = read(served, "/api/approvals");
        if let Some(first) = list["approvals"].as_array().and_then(|a| a.first()) {
            return first.clone();
        }
        assert!(Instant::now() < deadline, "no approval appeared");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Sends a request with the key on a thread of its own, for a call that waits for approval.
fn in_background(
    served: &Served,
    method: &'static str,
    path: &'static str,
    body: &'static str,
) -> std::thread::JoinHandle<Response> {
    let address = served.address.clone();
    std::thread::spawn(move || {
        let auth = format!("Bearer {KEY}");
        request(
            &address,
            method,
            path,
            &[
                ("Authorization", &auth),
                ("Content-Type", "application/json"),
            ],
            Some(body),
        )
    })
}

#[test]
fn the_read_routes_answer_with_their_tools_results() {
    let project = project("");
    let served = Served::start(&project, &[]);

    let all = read(&served, "/api/specs");
    assert_eq!(all["count"], 5, "{all}");
    assert_eq!(all["errors"], json!([]));
    for (query, expected) in [
        (
            "status=planned",
            vec!["001-auth-login", "004-billing-invoices"],
        ),
        ("tags=api,billing", vec!["004-billing-invoices"]),
        (
            "tags=auth,%20billing&tagMatch=any",
            vec!["001-auth-login", "004-billing-invoices"],
        ),
        ("priority=low", vec!["003-billing"]),
        ("assignee=ana", vec!["004-billing-invoices"]),
        ("parent=3", vec!["004-billing-invoices"]),
    ] {
        let listed = read(&served, &format!("/api/specs?{query}"));
        assert_eq!(ids(&listed["specs"]), expected, "{query}: {listed}");
        assert_eq!(listed["count"], expected.len(), "{query}");
    }

    // By number, zero-padded or not, with the links the issue asks for.
    let search_index = read(&served, "/api/specs/2");
    assert_eq!(search_index["id"], "002-search-index");
    assert_eq!(search_index["title"], "Search Index");
    assert_eq!(search_index["status"], "in-progress");
    assert_eq!(search_index["dependsOn"], json!(["001-auth-login"]));
    assert!(
        search_index["contentHash"]
            .as_str()
            .is_some_and(|h| !h.is_empty()),
        "{search_index}"
    );
    let auth = read(&served, "/api/specs/001");
    assert_eq!(auth["requiredBy"], json!(["002-search-index"]));
    let billing = read(&served, "/api/specs/003-billing");
    assert_eq!(billing["children"], json!(["004-billing-invoices"]));

    let found = read(&served, "/api/specs/search?query=tag:api%20monthly");
    assert_eq!(ids(&found["results"]), ["004-billing-invoices"], "{found}");
    let found = read(&served, "/api/specs/search?query=billing&limit=1");
    assert_eq!(found["count"], 1, "{found}");

    let board = read(&served, "/api/specs/board");
    assert_eq!(board["groupBy"], "status");
    let groups: Vec<(&str, Vec<&str>)> = board["groups"]
        .as_array()
        .expect("groups")
        .iter()
        .map(|g| (g["name"].as_str().expect("name"), ids(&g["specs"])))
        .collect();
    assert_eq!(
        groups,
        [
            ("draft", vec!["005-bad-date"]),
            ("planned", vec!["001-auth-login", "004-billing-invoices"]),
            ("in-progress", vec!["002-search-index"]),
            ("complete", vec!["003-billing"]),
        ]
    );
    let by_priority = read(&served, "/api/specs/board?groupBy=priority&tags=api");
    let names: Vec<&str> = by_priority["groups"]
        .as_array()
        .expect("groups")
        .iter()
        .map(|g| g["name"].as_str().expect("name"))
        .collect();
    assert_eq!(names, ["low", "medium", "high"], "{by_priority}");

    let stats = read(&served, "/api/specs/stats");
    assert_eq!(stats["total"], 5);
    assert_eq!(
        stats["byStatus"],
        json!({"draft": 1, "planned": 2, "in-progress": 1, "complete": 1})
    );
    assert_eq!(stats["withDependencies"], 1);
    assert_eq!(stats["withParent"], 1);

    let validation = read(&served, "/api/specs/validation");
    assert_eq!(validation["valid"], false, "{validation}");
    let invalid: Vec<&Value> = validation["specs"]
        .as_array()
        .expect("specs")
        .iter()
        .filter(|s| s["valid"] == false)
        .collect();
    assert_eq!(invalid.len(), 1, "{validation}");
    assert_eq!(invalid[0]["id"], "005-bad-date");
    assert_eq!(invalid[0]["issues"][0]["rule"], "created-format");
    assert_eq!(invalid[0]["issues"][0]["line"], 3);
    let one = read(&served, "/api/specs/validation?spec=1");
    assert_eq!(one["specs"].as_array().map(Vec::len), Some(1), "{one}");
    assert_eq!(one["specs"][0]["id"], "001-auth-login");
    assert_eq!(one["errors"], 0);

    let tokens = read(&served, "/api/specs/tokens?spec=1");
    assert_eq!(tokens["encoding"], "cl100k_base");
    assert_eq!(tokens["items"][0]["id"], "001-auth-login");
    assert!(tokens["total"].as_u64().is_some_and(|n| n > 10), "{tokens}");
    let file = read(&served, "/api/specs/tokens?file=notes.md");
    assert_eq!(file["total"], 2, "{file}");
    let every = read(&served, "/api/specs/tokens");
    assert_eq!(every["items"].as_array().map(Vec::len), Some(5));
    served.stop();
}

#[test]
fn a_created_spec_can_be_read_and_updated_under_its_content_hash() {
    let project = project(WRITES_ALLOWED);
    let served = Served::start(&project, &[]);

    let new_spec = json!({
        "name": "rate-limits", "priority": "high", "tags": ["api"],
        "content": "## Plan\n\n- [ ] write the limits\n",
    });
    let created = served.post("/api/specs", &new_spec.to_string());
    assert_eq!(created.status, 201, "{}", created.body);
    assert_eq!(
        created.header("location"),
        Some("/api/specs/006-rate-limits")
    );
    let created = created.json();
    assert_eq!(created["id"], "006-rate-limits");
    assert_eq!(created["number"], 6);
    assert!(
        project
            .path()
            .join("specs/006-rate-limits/README.md")
            .is_file()
    );

    let viewed = read(&served, "/api/specs/6");
    assert_eq!(viewed["title"], "Rate Limits");
    assert_eq!(viewed["priority"], "high");
    assert_eq!(viewed["tags"], json!(["api"]));
    let read_hash = viewed["contentHash"].as_str().expect("hash").to_string();
    assert_eq!(created["contentHash"], read_hash.as_str());

    let changes = json!({
        "status": "in-progress",
        "checklistToggles": [{"itemText": "write the limits", "checked": true}],
        "expectedContentHash": read_hash,
    });
    let updated = served.send(
        "PATCH",
        "/api/specs/006-rate-limits",
        Some(&changes.to_string()),
    );
    assert_eq!(updated.status, 200, "{}", updated.body);
    let updated = updated.json();
    assert_eq!(updated["previousContentHash"], read_hash.as_str());
    assert_ne!(updated["contentHash"], read_hash.as_str());
    let viewed = read(&served, "/api/specs/6");
    assert_eq!(viewed["status"], "in-progress");
    assert!(
        viewed["content"]
            .as_str()
            .is_some_and(|c| c.contains("- [x] write the limits")),
        "{viewed}"
    );

    // A second writer still holding the old hash is refused, and the file is left alone.
    let on_disk = std::fs::read_to_string(project.path().join("specs/006-rate-limits/README.md"))
        .expect("read the spec");
    let stale = json!({"priority": "low", "expectedContentHash": read_hash});
    let e = served
        .send("PATCH", "/api/specs/6", Some(&stale.to_string()))
        .error(409, "conflict");
    assert_eq!(
        e["message"],
        format!(
            "content hash mismatch for 006-rate-limits: expected {read_hash}, current {}; the \
             spec was modified since you read it, view it again and redo the change",
            updated["contentHash"].as_str().expect("hash")
        )
    );
    assert_eq!(
        std::fs::read_to_string(project.path().join("specs/006-rate-limits/README.md"))
            .expect("read the spec"),
        on_disk
    );
    served.stop();
}

#[test]
fn refusals_map_to_404_409_and_422_in_the_apis_error_shape() {
    let project = project(WRITES_ALLOWED);
    let served = Served::start(&project, &[]);

    let e = served
        .get_with_key("/api/specs/999")
        .error(404, "not_found");
    assert_eq!(e["message"], "spec not found: `999`");
    served
        .send("PATCH", "/api/specs/999", Some(r#"{"priority": "low"}"#))
        .error(404, "not_found");

    // A fragment two specs share names neither: read again with a precise one.
    let e = served
        .get_with_key("/api/specs/billing")
        .error(409, "conflict");
    assert!(
        e["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("`billing` is ambiguous")),
        "{e}"
    );

    // A value outside the tool's input schema is the pipeline's 422, with the violation.
    let e = served
        .get_with_key("/api/specs?status=finished")
        .error(422, "invalid_arguments");
    assert_eq!(e["details"]["violations"][0]["pointer"], "/status", "{e}");
    let e = served
        .send("PATCH", "/api/specs/1", Some(r#"{"status": "finished"}"#))
        .error(422, "invalid_arguments");
    assert_eq!(e["details"]["violations"][0]["pointer"], "/status", "{e}");
    // A request the tool itself refuses is a 422 too, with the tool's reason.
    let e = served
        .send("PATCH", "/api/specs/1", Some("{}"))
        .error(422, "invalid");
    assert_eq!(e["message"], "no updates specified");

    // 002 depends on 001, so 001 may not depend on 002.
    let e = served
        .post(
            "/api/specs/1/relationships",
            r#"{"type": "depends_on", "target": "2"}"#,
        )
        .error(422, "invalid");
    assert_eq!(
        e["message"],
        "001-auth-login depending on 002-search-index would create a cycle: 001-auth-login → \
         002-search-index → 001-auth-login"
    );
    let linked = served.post(
        "/api/specs/4/relationships",
        r#"{"type": "depends_on", "target": "1"}"#,
    );
    assert_eq!(linked.status, 200, "{}", linked.body);
    assert_eq!(linked.json()["edited"], "004-billing-invoices");
    assert_eq!(
        read(&served, "/api/specs/1")["requiredBy"],
        json!(["002-search-index", "004-billing-invoices"])
    );
    let unlinked = served.send(
        "DELETE",
        "/api/specs/4/relationships?type=depends_on&target=1",
        None,
    );
    assert_eq!(unlinked.status, 200, "{}", unlinked.body);
    assert_eq!(
        read(&served, "/api/specs/1")["requiredBy"],
        json!(["002-search-index"])
    );
    served
        .send(
            "DELETE",
            "/api/specs/4/relationships?type=depends_on&target=1",
            None,
        )
        .error(422, "invalid");
    served.stop();
}

#[test]
fn without_a_specs_directory_every_spec_route_says_so() {
    let project = toolmux_project();
    project.config(&config_with_key(WRITES_ALLOWED));
    project.write("notes.md", "no specs here\n");
    let served = Served::start(&project, &[]);

    for (method, path, body) in [
        ("GET", "/api/specs", None),
        ("GET", "/api/specs/1", None),
        ("GET", "/api/specs/search?query=x", None),
        ("GET", "/api/specs/stats", None),
        ("POST", "/api/specs", Some(r#"{"name": "first"}"#)),
        ("PATCH", "/api/specs/1", Some(r#"{"priority": "low"}"#)),
    ] {
        let e = served
            .send(method, path, body)
            .error(404, "no_specs_directory");
        assert!(
            e["message"]
                .as_str()
                .is_some_and(|m| m.starts_with("this project has no specs directory")),
            "{method} {path}: {e}"
        );
        assert_eq!(e["details"]["source"], "specs");
    }
    assert!(!project.path().join("specs").exists());
    served.stop();
}

/// Writes are annotated destructive, so their default policy is `ask`: a REST write waits in
/// `GET /api/approvals` exactly as `POST /api/tools/{name}/call` does, runs when a person
/// allows it, and is refused (403) when they deny it or nobody answers in time.
#[test]
fn writes_wait_for_a_persons_answer_like_any_ask_call() {
    let project = project(r#""defaults": {"approvalTimeoutMs": 3000}"#);
    let served = Served::start(&project, &[]);
    let readme = project.path().join("specs/001-auth-login/README.md");

    // Reads are allowed without asking.
    assert_eq!(read(&served, "/api/specs")["count"], 5);

    let waiting = in_background(&served, "PATCH", "/api/specs/1", r#"{"assignee": "bo"}"#);
    let pending = next_approval(&served);
    assert_eq!(pending["request"]["tool"], "spec_update");
    assert_eq!(pending["request"]["channel"], "rest");
    assert_eq!(
        pending["request"]["arguments"],
        json!({"spec": "1", "assignee": "bo"})
    );
    let id = pending["id"].as_str().expect("id");
    let answered = served.post(&format!("/api/approvals/{id}"), r#"{"decision": "allow"}"#);
    assert_eq!(answered.status, 204, "{}", answered.body);
    let allowed = waiting.join().expect("request thread");
    assert_eq!(allowed.status, 200, "{}", allowed.body);
    assert_eq!(allowed.json()["id"], "001-auth-login");
    let after = std::fs::read_to_string(&readme).expect("read the spec");
    assert!(after.contains("\nassignee: bo\n"), "{after}");

    let waiting = in_background(&served, "POST", "/api/specs", r#"{"name": "refused"}"#);
    let pending = next_approval(&served);
    assert_eq!(pending["request"]["tool"], "spec_create");
    let id = pending["id"].as_str().expect("id");
    served.post(
        &format!("/api/approvals/{id}"),
        r#"{"decision": "deny", "reason": "not now"}"#,
    );
    let e = waiting.join().expect("request thread").error(403, "denied");
    assert_eq!(e["message"], "tool `spec_create` was denied: not now");
    assert!(!project.path().join("specs/006-refused").exists());

    // Nobody answers: the route and a plain call of the same tool are refused alike.
    let route = in_background(
        &served,
        "POST",
        "/api/specs/4/relationships",
        r#"{"type": "depends_on", "target": "1"}"#,
    );
    let call = in_background(
        &served,
        "POST",
        "/api/tools/spec_relationships/call",
        r#"{"spec": "4", "action": "add", "type": "depends_on", "target": "1"}"#,
    );
    let route = route.join().expect("request thread");
    let call = call.join().expect("request thread");
    for refused in [&route, &call] {
        let e = refused.error(403, "denied");
        assert_eq!(
            e["message"],
            "tool `spec_relationships` was denied: nobody answered the approval request within 3s"
        );
    }
    assert_eq!(
        read(&served, "/api/specs/1")["requiredBy"],
        json!(["002-search-index"])
    );
    assert_eq!(read(&served, "/api/approvals")["approvals"], json!([]));
    served.stop();
}
