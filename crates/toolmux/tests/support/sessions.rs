//! The project the coding-session tests share (`sessions.rs`, `hostile_handoff.rs`), included
//! by path by each: its `claude` runner is the fake.

use std::path::PathBuf;

use serde_json::json;
use toolmux_testkit::project::TestProject;

/// A fake coding CLI of the sessions crate's tests (`crates/toolmux-sessions/tests/fixtures/bin`).
pub fn fake(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../toolmux-sessions/tests/fixtures/bin")
        .join(name)
}

/// A project whose `claude` runner is the fake, and whose sessions start without asking.
pub fn project() -> TestProject {
    with_fake_runner(crate::support::toolmux_project())
}

/// `project` (driving some toolmux binary) set up as [`project`] is.
pub fn with_fake_runner(project: TestProject) -> TestProject {
    project.config(
        &json!({
            "runners": {"claude": {"command": fake("claude").display().to_string()}},
            "policies": {"tools": {"run_session": "allow"}},
        })
        .to_string(),
    );
    project
}

/// `tools call run_session --json` of the fake on `prompt`: the session's id and what the
/// command wrote on stderr, once it exited (successfully).
pub fn call_run_session(project: &TestProject, prompt: &str) -> (String, String) {
    let args = json!({"runner": "claude", "prompt": prompt}).to_string();
    let call = project.run(&["tools", "call", "run_session", "--json", "--args", &args]);
    assert!(call.0.status.success(), "{}", call.stderr());
    let answer = call.json();
    let id = answer["structuredContent"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("{answer}"))
        .to_string();
    (id, call.stderr())
}
