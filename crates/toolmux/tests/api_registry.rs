//! Script tools registered, replaced and removed through the REST API of a running
//! `toolmux serve`: one writer, checked before writing, live at once; hand edits picked up.

mod support;

use std::time::Duration;

use serde_json::{Value, json};
use support::toolmux_project;
use toolmux_testkit::eventually::wait_until;
use toolmux_testkit::peers::python;
use toolmux_testkit::python_client::run_mcp_client;
use toolmux_testkit::served::{KEY, Served, config_with_key, run_with_key};

const ADD_PY: &str = "import json, sys\nargs = json.load(sys.stdin)\nprint(json.dumps({'sum': args['a'] + args['b']}))\n";

fn add_definition(name: &str) -> Value {
    json!({
        "name": name,
        "description": "Adds two numbers.",
        "inputSchema": {
            "type": "object",
            "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
            "required": ["a", "b"],
            "additionalProperties": false
        },
        "command": [python(), "add.py"],
    })
}

#[test]
fn a_registered_python_tool_gives_one_result_over_rest_mcp_and_the_cli() {
    let project = toolmux_project();
    project.config(&config_with_key(""));
    project.write("add.py", ADD_PY);
    let served = Served::start(&project, &[]);
    let before = served.get("/api/health").json()["catalogVersion"]
        .as_u64()
        .expect("version");

    let created = served.post("/api/tools", &add_definition("add").to_string());
    assert_eq!(created.status, 201, "{}", created.body);
    assert_eq!(created.json()["source"], "scripts");
    let after = served.get("/api/health").json()["catalogVersion"]
        .as_u64()
        .expect("version");
    assert!(
        after > before,
        "the catalog version did not move: {before} → {after}"
    );

    // The file keeps the definition, as a user would write it.
    let saved = project.saved_config();
    assert_eq!(
        saved["tools"]["add"]["command"],
        json!([python(), "add.py"])
    );
    assert_eq!(saved["server"]["apiKeys"], json!(["${TOOLMUX_TEST_KEY}"]));

    let rest = served
        .post("/api/tools/add/call", r#"{"a": 2, "b": 3}"#)
        .json();
    assert_eq!(rest["status"], "success");
    assert_eq!(rest["structuredContent"], json!({"sum": 5}));

    let cli = run_with_key(
        &project,
        &[
            "tools",
            "call",
            "add",
            "--args",
            r#"{"a": 2, "b": 3}"#,
            "--json",
        ],
    )
    .json();
    assert_eq!(cli["structuredContent"], rest["structuredContent"]);
    assert_eq!(cli["content"], rest["content"]);

    let lines = run_mcp_client(&json!({
        "transport": "http",
        "url": served.mcp_url(),
        "headers": {"Authorization": format!("Bearer {KEY}")},
        "steps": [{"op": "call", "name": "add", "arguments": {"a": 2, "b": 3}}],
    }));
    let mcp = &lines[1]["result"];
    assert_eq!(mcp["structuredContent"], rest["structuredContent"]);
    assert_eq!(mcp["content"], rest["content"]);

    // Replace, then remove.
    let mut replaced = add_definition("add");
    replaced["description"] = json!("Adds two numbers, replaced.");
    let put = served.request(
        "PUT",
        "/api/tools/add",
        &[("Authorization", &format!("Bearer {KEY}"))],
        Some(&replaced.to_string()),
    );
    assert_eq!(put.status, 200, "{}", put.body);
    assert_eq!(put.json()["description"], "Adds two numbers, replaced.");
    let deleted = served.request(
        "DELETE",
        "/api/tools/add",
        &[("Authorization", &format!("Bearer {KEY}"))],
        None,
    );
    assert_eq!(deleted.status, 204, "{}", deleted.body);
    assert!(served.tool_names("scripts").is_empty());
    served
        .post("/api/tools/add/call", "{}")
        .error(404, "not_found");
    served.stop();
}

#[test]
fn a_bad_definition_is_refused_with_422_and_the_file_is_untouched() {
    let project = toolmux_project();
    project.config(&config_with_key(""));
    let served = Served::start(&project, &[]);
    let before = std::fs::read(project.config_file()).expect("read");

    let empty = served
        .post(
            "/api/tools",
            r#"{"name": "x", "description": "d", "command": []}"#,
        )
        .error(422, "invalid_definition");
    assert!(
        empty["message"]
            .as_str()
            .expect("message")
            .contains("`command` needs at least the program to run"),
        "{empty}"
    );
    let unknown = served
        .post(
            "/api/tools",
            r#"{"name": "x", "description": "d", "command": ["true"], "timeout": 5}"#,
        )
        .error(422, "invalid_definition");
    assert!(
        unknown["message"]
            .as_str()
            .expect("message")
            .contains("timeout"),
        "{unknown}"
    );
    let bad_name = served
        .post(
            "/api/tools",
            r#"{"name": "no spaces", "description": "d", "command": ["true"]}"#,
        )
        .error(422, "invalid_definition");
    assert!(
        bad_name["message"]
            .as_str()
            .expect("message")
            .starts_with("invalid tool name `no spaces`")
    );
    served
        .post("/api/tools", r#"{"description": "d"}"#)
        .error(422, "invalid_definition");

    // Conflicts and missing names.
    served
        .post(
            "/api/tools",
            r#"{"name": "grep", "description": "d", "command": ["true"]}"#,
        )
        .error(409, "conflict");
    let put = served.request(
        "PUT",
        "/api/tools/nothing",
        &[("Authorization", &format!("Bearer {KEY}"))],
        Some(r#"{"description": "d", "command": ["true"]}"#),
    );
    put.error(404, "not_found");
    let builtin = served.request(
        "DELETE",
        "/api/tools/grep",
        &[("Authorization", &format!("Bearer {KEY}"))],
        None,
    );
    assert_eq!(
        builtin.error(409, "conflict")["message"],
        "`grep` is a tool of source `workspace`; only script tools can be changed through the API"
    );
    // Without a key nothing is written either.
    served
        .request(
            "POST",
            "/api/tools",
            &[],
            Some(r#"{"name": "y", "description": "d", "command": ["true"]}"#),
        )
        .error(401, "unauthorized");

    assert_eq!(std::fs::read(project.config_file()).expect("read"), before);
    served.stop();
}

#[test]
fn a_hundred_concurrent_registrations_and_removals_leave_a_valid_config() {
    let project = toolmux_project();
    // 40 tools to remove, written by hand before the server starts.
    let existing: serde_json::Map<String, Value> = (0..40)
        .map(|i| {
            (
                format!("old{i}"),
                json!({"description": "old", "command": ["true"]}),
            )
        })
        .collect();
    project.config(&config_with_key(&format!(
        r#""tools": {}"#,
        Value::Object(existing)
    )));
    let served = Served::start(&project, &[]);
    assert_eq!(served.tool_names("scripts").len(), 40);

    let statuses: Vec<u16> = std::thread::scope(|writers| {
        let writes: Vec<_> = (0..100)
            .map(|i| {
                let served = &served;
                writers.spawn(move || {
                    if i < 60 {
                        let body = json!({"name": format!("new{i}"), "description": "new", "command": ["true"]});
                        served
                            .send("POST", "/api/tools", Some(&body.to_string()))
                            .status
                    } else {
                        served
                            .send("DELETE", &format!("/api/tools/old{}", i - 60), None)
                            .status
                    }
                })
            })
            .collect();
        writes
            .into_iter()
            .map(|w| w.join().expect("a writer"))
            .collect()
    });
    assert!(statuses[..60].iter().all(|s| *s == 201), "{statuses:?}");
    assert!(statuses[60..].iter().all(|s| *s == 204), "{statuses:?}");

    let mut expected: Vec<String> = (0..60).map(|i| format!("new{i}")).collect();
    expected.sort();
    let mut listed = served.tool_names("scripts");
    listed.sort();
    assert_eq!(listed, expected);
    // The file on disk is valid and holds exactly those tools.
    run_with_key(&project, &["config", "check"]).ok();
    assert_eq!(project.saved_tool_names(), expected);
    served.stop();
}

#[test]
fn a_hand_edit_is_picked_up_and_a_broken_one_keeps_the_last_good_config() {
    let project = toolmux_project();
    project.config(&config_with_key(""));
    let served = Served::start(&project, &[]);
    let wait_for = |expected: &[&str]| {
        wait_until(&format!("the server to list {expected:?}"), || {
            served.tool_names("scripts") == expected
        });
    };

    project.config(&config_with_key(
        r#""tools": {"hello": {"description": "Greets.", "command": ["echo", "hi"]}}"#,
    ));
    wait_for(&["hello"]);
    assert_eq!(
        served.post("/api/tools/hello/call", "{}").json()["content"][0]["text"],
        "hi\n"
    );

    // Broken: the last good configuration stays.
    project.config(r#"{"tools": {"hello": {"description": 5}}"#);
    std::thread::sleep(Duration::from_millis(800));
    assert_eq!(served.tool_names("scripts"), ["hello"]);
    assert_eq!(served.post("/api/tools/hello/call", "{}").status, 200);

    // Fixed again: picked up.
    project.config(&config_with_key(
        r#""tools": {"bye": {"description": "Leaves.", "command": ["echo", "bye"]}}"#,
    ));
    wait_for(&["bye"]);
    served.stop();
}

#[test]
fn patch_switches_any_tool_off_and_on_and_sets_its_policy_live() {
    let project = toolmux_project();
    project.config(&config_with_key(""));
    project.write("notes.txt", "hello\n");
    let served = Served::start(&project, &[]);
    let call = || {
        served.send(
            "POST",
            "/api/tools/file_read/call",
            Some(r#"{"path": "notes.txt"}"#),
        )
    };
    assert_eq!(call().status, 200);

    let off = served.send(
        "PATCH",
        "/api/tools/file_read",
        Some(r#"{"enabled": false}"#),
    );
    assert_eq!(off.status, 200, "{}", off.body);
    assert_eq!(
        off.json(),
        json!({"name": "file_read", "hidden": "switched off in configuration"})
    );
    assert_eq!(
        project.saved_config()["toolSettings"],
        json!({"file_read": {"enabled": false}})
    );
    call().error(403, "disabled");

    let on = served.send(
        "PATCH",
        "/api/tools/file_read",
        Some(r#"{"enabled": true, "policy": "deny"}"#),
    );
    assert_eq!(on.status, 200, "{}", on.body);
    assert_eq!(on.json()["policy"], "deny");
    call().error(403, "denied");

    let cleared = served.send("PATCH", "/api/tools/file_read", Some(r#"{"policy": null}"#));
    assert_eq!(cleared.status, 200, "{}", cleared.body);
    assert_eq!(cleared.json()["policy"], "allow");
    assert_eq!(call().status, 200);
    let saved = project.saved_config();
    assert!(
        saved.get("toolSettings").is_none() && saved.get("policies").is_none(),
        "{saved}"
    );

    served
        .send(
            "PATCH",
            "/api/tools/file_raed",
            Some(r#"{"enabled": false}"#),
        )
        .error(404, "not_found");
    served
        .send("PATCH", "/api/tools/file_read", Some("{}"))
        .error(422, "nothing_to_change");
    served
        .send(
            "PATCH",
            "/api/tools/file_read",
            Some(r#"{"policy": "maybe"}"#),
        )
        .error(400, "malformed");
}
