//! The OpenAPI document is the truth about the API: schemathesis (PyPI, in
//! `tests/peers/api/requirements.txt`) generates requests from `/api/openapi.json` for every
//! operation and checks that none gets a 5xx, and that every status and body is one the document
//! declares.

mod support;

use std::process::Command;
use support::toolmux_project;
use toolmux_testkit::peers::python;
use toolmux_testkit::served::{KEY, Served, config_with_key};

#[test]
fn schemathesis_finds_no_server_error_and_no_undocumented_response() {
    let python = python();
    let project = toolmux_project();
    // The spec writes run without asking: with their default policy `ask`, each generated
    // write would wait for an answer nobody gives. Starting a coding session is refused
    // outright for the same reason (and so that no generated request starts an agent).
    project.config(&config_with_key(
        // A generated request may delete these policies through the API before it calls the
        // tool, which then asks; an approval that nobody answers ends (403, documented) well
        // within schemathesis' 10 s read timeout instead of after the default minutes.
        r#""policies": {"tools": {"spec_create": "allow", "spec_update": "allow", "spec_relationships": "allow", "run_session": "deny"}}, "defaults": {"approvalTimeoutMs": 2000}"#,
    ));
    project.write("notes/todo.md", "# Todo\nbuy milk\n");
    // A specs directory, so that the spec pack is served and `/api/specs` is exercised on
    // real specs (a parent, a dependency, a checklist), not only as the no-specs 404.
    project.write(
        "specs/001-first/README.md",
        "---\nstatus: planned\ncreated: 2025-01-01\npriority: high\ntags: [api]\n---\n\n\
         # First\n\n## Plan\n\n- [ ] do it\n",
    );
    project.write(
        "specs/002-second/README.md",
        "---\nstatus: in-progress\ncreated: 2025-02-01\nparent: 001-first\n\
         depends_on: [001-first]\n---\n\n# Second\n\nMore.\n",
    );
    let served = Served::start(&project, &[]);
    let base = format!("http://{}", served.address);
    // The chat's routes are in the one document, so schemathesis exercises them too, and so
    // are the spec pack's.
    let document = served.get("/api/openapi.json").json();
    for (path, method) in [
        ("/api/chat", "post"),
        ("/api/chat/{conversation}/input", "post"),
        ("/api/chat/{conversation}/cancel", "post"),
        ("/api/conversations", "get"),
        ("/api/conversations/{id}", "get"),
        ("/api/conversations/{id}", "patch"),
        ("/api/conversations/{id}", "delete"),
        ("/api/models", "get"),
        ("/api/specs", "get"),
        ("/api/specs", "post"),
        ("/api/specs/{spec}", "patch"),
        ("/api/specs/{spec}/relationships", "delete"),
    ] {
        assert!(
            document["paths"][path][method].is_object(),
            "`{method} {path}` is missing from the OpenAPI document"
        );
    }
    let out = Command::new(python)
        .args(["-m", "schemathesis.cli", "run"])
        .arg(format!("{base}/api/openapi.json"))
        .args(["--url", &base])
        .args(["-H", &format!("Authorization: Bearer {KEY}")])
        // Event streams that stay open while the server runs: a generated request would wait
        // on them forever (`tests/human_input.rs` and `tests/api_web_views.rs` drive them).
        .args(["--exclude-path", "/api/approvals/stream"])
        .args(["--exclude-path", "/api/logs/stream"])
        // The stateful phase follows links schemathesis infers from the `Location` of 201
        // answers; with two resources answering 201 (specs, tasks) it pairs them across
        // resources (`POST /api/specs` → `GET /api/tasks/{id}`) and refuses to run at all. The
        // other phases exercise every operation.
        .args(["--phases", "examples,coverage,fuzzing"])
        .args([
            "--checks",
            "not_a_server_error,response_schema_conformance,status_code_conformance",
            "--max-examples",
            "25",
            "--seed",
            "1",
            "--no-color",
        ])
        .current_dir(project.path())
        .output()
        .expect("run schemathesis");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "schemathesis found problems:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    served.stop();
}
