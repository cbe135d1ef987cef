//! The workspace pack's write tools through the real binary: listed as `ask`, refused where
//! nobody can be asked, and each one run once by `toolmux tools call` where policy allows it.

mod support;

use serde_json::json;
use support::toolmux_project;

const WRITERS: [&str; 3] = ["file_write", "file_edit", "apply_patch"];

#[test]
fn the_write_tools_are_listed_with_the_ask_policy_and_refused_without_a_terminal() {
    let project = toolmux_project();
    let listed = project.run(&["tools", "list", "--json"]).json();
    for name in WRITERS {
        let tool = listed
            .as_array()
            .expect("array")
            .iter()
            .find(|t| t["name"] == name)
            .unwrap_or_else(|| panic!("{name} is not listed: {listed}"));
        assert_eq!(tool["policy"], "ask", "{name}");
        assert_eq!(tool["policyOrigin"], "tool annotations", "{name}");
        assert_eq!(tool["annotations"]["destructiveHint"], true, "{name}");
    }
    // No terminal to ask on (the test's stdin is not one): refused, nothing written.
    let refused = project.run(&[
        "tools",
        "call",
        "file_write",
        "--args",
        r#"{"path": "x.txt", "content": "x"}"#,
    ]);
    assert_ne!(refused.code(), 0);
    assert!(
        refused.stderr().contains("its policy is `ask`"),
        "{}",
        refused.stderr()
    );
    assert!(!project.path().join("x.txt").exists());
}

#[test]
fn each_write_tool_runs_through_tools_call_when_policy_allows_it() {
    let project = toolmux_project();
    project.config(
        r#"{"policies": {"tools": {"file_write": "allow", "file_edit": "allow", "apply_patch": "allow"}}}"#,
    );
    let written = project
        .run(&[
            "tools",
            "call",
            "file_write",
            "--args",
            r#"{"path": "notes/todo.txt", "content": "alpha\nbeta\n"}"#,
            "--json",
        ])
        .json();
    assert_eq!(written["isError"], false, "{written}");
    assert_eq!(
        written["structuredContent"],
        json!({
            "files": [{
                "path": "notes/todo.txt", "operation": "create", "added": 2, "removed": 0,
                "diff": "--- /dev/null\n+++ b/notes/todo.txt\n@@ -0,0 +1,2 @@\n+alpha\n+beta\n"
            }],
            "added": 2, "removed": 0, "diffTruncated": false
        })
    );

    let edited = project
        .run(&[
            "tools",
            "call",
            "file_edit",
            "--args",
            r#"{"path": "notes/todo.txt", "oldString": "beta", "newString": "gamma"}"#,
        ])
        .ok();
    assert_eq!(
        edited,
        "update `notes/todo.txt` (+1 -1)\n--- a/notes/todo.txt\n+++ b/notes/todo.txt\n@@ -1,2 +1,2 @@\n alpha\n-beta\n+gamma\n\n"
    );

    let patch = "*** Begin Patch\n*** Update File: notes/todo.txt\n*** Move to: notes/done.txt\n@@\n alpha\n-gamma\n+delta\n*** End Patch\n";
    let patched = project
        .run(&[
            "tools",
            "call",
            "apply_patch",
            "--args",
            &json!({ "patch": patch }).to_string(),
            "--json",
        ])
        .json();
    assert_eq!(
        patched["structuredContent"]["files"][0]["operation"],
        "move"
    );
    assert_eq!(
        std::fs::read_to_string(project.path().join("notes/done.txt")).expect("moved"),
        "alpha\ndelta\n"
    );
    assert!(!project.path().join("notes/todo.txt").exists());

    // The command line has no session, so replacing an existing file needs `overwrite`.
    let refused = project.run(&[
        "tools",
        "call",
        "file_write",
        "--args",
        r#"{"path": "notes/done.txt", "content": "x"}"#,
    ]);
    assert_eq!(refused.code(), 4, "{}", refused.stderr());
    assert!(
        refused
            .stderr()
            .contains("this caller has no session in which it could have read it"),
        "{}",
        refused.stderr()
    );
    // And `.git` is never written, whatever the policy.
    let git = project.run(&[
        "tools",
        "call",
        "file_write",
        "--args",
        r#"{"path": ".git/hooks/pre-commit", "content": "rm -rf ~"}"#,
    ]);
    assert_eq!(git.code(), 1);
    assert!(
        git.stderr().contains(
            "`.git/hooks/pre-commit` is inside `.git`, which the workspace tools never write"
        ),
        "{}",
        git.stderr()
    );
    assert!(!project.path().join(".git").exists());
}
