//! The `toolmux` command line, driven as a user would drive it.

mod support;

use serde_json::{Value, json};
use support::toolmux_project;

#[test]
fn init_writes_a_starter_config_that_checks_and_refuses_to_overwrite() {
    let project = toolmux_project();
    let out = project.run(&["init"]).ok();
    assert!(out.contains(".toolmux/config.json"), "{out}");
    assert!(project.path().join(".toolmux/.gitignore").exists());
    let check = project.run(&["config", "check"]).ok();
    assert!(check.starts_with("configuration ok: "), "{check}");
    assert!(check.contains("35 tools from 12 sources"), "{check}");

    let again = project.run(&["init"]);
    assert_eq!(again.code(), 2);
    assert!(
        again
            .stderr()
            .contains("already exists; use --force to overwrite it"),
        "{}",
        again.stderr()
    );
    project.run(&["init", "--force"]).ok();
}

#[test]
fn tools_list_shows_the_workspace_pack_as_a_table_and_as_json() {
    let project = toolmux_project();
    let table = project.run(&["tools", "list"]).ok();
    let header = table.lines().next().expect("a header");
    for column in ["NAME", "SOURCE", "POLICY", "DESCRIPTION"] {
        assert!(header.contains(column), "{header}");
    }
    for tool in ["directory_list", "file_read", "file_search", "grep"] {
        assert!(
            table.lines().any(|l| l.trim_start().starts_with(tool)
                && l.contains("workspace")
                && l.contains("allow")),
            "{tool} missing from\n{table}"
        );
    }
    let json = project.run(&["tools", "list", "--json"]).json();
    let names: Vec<&str> = json
        .as_array()
        .expect("array")
        .iter()
        .map(|t| t["name"].as_str().expect("name"))
        .collect();
    assert_eq!(names, toolmux_testkit::served::DEFAULT_TOOLS);
    assert_eq!(json[5]["name"], "directory_list");
    assert_eq!(json[5]["policy"], "allow");
    assert_eq!(json[5]["policyOrigin"], "tool annotations");
    assert!(json[5]["inputSchema"]["properties"]["path"].is_object());
    // The tools that act on the machine, or spend model tokens, ask by default.
    assert_eq!(json[2]["name"], "code_execution");
    assert_eq!(json[2]["policy"], "ask");
    assert_eq!(json[3]["name"], "delegate");
    assert_eq!(json[3]["policy"], "ask");
    assert_eq!(json[18]["name"], "run_session");
    assert_eq!(json[18]["policy"], "ask");
}

#[test]
fn tools_show_explains_policy_and_schema() {
    let project = toolmux_project();
    project.config(r#"{"policies": {"tools": {"file_*": "ask"}}}"#);
    let out = project.run(&["tools", "show", "file_read"]).ok();
    assert!(out.starts_with("file_read  (workspace)"), "{out}");
    assert!(out.contains("policy: ask (pattern `file_*`)"), "{out}");
    assert!(out.contains("input schema:"), "{out}");
    let missing = project.run(&["tools", "show", "file_raed"]);
    assert_eq!(missing.code(), 4);
    assert_eq!(
        missing.stderr().trim(),
        "toolmux: unknown tool `file_raed`; did you mean `file_read`?"
    );
}

#[test]
fn tools_call_runs_a_tool_and_prints_its_text() {
    let project = toolmux_project();
    project.write("notes/todo.txt", "alpha\nbeta needle\ngamma\n");
    let out = project
        .run(&["tools", "call", "file_read", "-a", "path=notes/todo.txt"])
        .ok();
    assert!(out.contains("beta needle"), "{out}");

    let grep = project
        .run(&[
            "tools",
            "call",
            "grep",
            "--args",
            r#"{"pattern": "needle"}"#,
            "--json",
        ])
        .json();
    assert_eq!(grep["isError"], false);
    let matches = &grep["structuredContent"]["matches"];
    assert_eq!(matches[0]["path"], "notes/todo.txt");
    assert_eq!(matches[0]["line"], 2);
}

#[test]
fn a_tool_error_exits_1_with_the_message_on_stderr() {
    let project = toolmux_project();
    let run = project.run(&["tools", "call", "file_read", "-a", "path=missing.txt"]);
    assert_eq!(run.code(), 1);
    assert!(run.stdout().is_empty());
    assert!(
        run.stderr().contains("`missing.txt` does not exist"),
        "{}",
        run.stderr()
    );
}

#[test]
fn invalid_arguments_are_refused_with_every_violation() {
    let project = toolmux_project();
    let run = project.run(&[
        "tools",
        "call",
        "file_read",
        "--args",
        r#"{"offset": "ten", "bogus": 1}"#,
    ]);
    assert_eq!(run.code(), 4);
    let err = run.stderr();
    assert!(
        err.starts_with("toolmux: invalid arguments for `file_read`: "),
        "{err}"
    );
    assert!(
        err.contains("/offset: \"ten\" is not of type \"integer\""),
        "{err}"
    );
    assert!(err.contains("\"path\" is a required property"), "{err}");
    assert!(err.contains("bogus"), "{err}");
}

#[test]
fn an_unknown_tool_is_refused_with_a_suggestion() {
    let project = toolmux_project();
    let run = project.run(&["tools", "call", "gerp"]);
    assert_eq!(run.code(), 4);
    assert_eq!(
        run.stderr().trim(),
        "toolmux: unknown tool `gerp`; did you mean `grep`?"
    );
}

#[test]
fn bad_command_line_arguments_are_usage_errors() {
    let project = toolmux_project();
    let run = project.run(&["tools", "call", "grep", "--args", "{not json"]);
    assert_eq!(run.code(), 2);
    assert!(
        run.stderr()
            .starts_with("toolmux: --args is not valid JSON: "),
        "{}",
        run.stderr()
    );
}

#[test]
fn policies_from_config_deny_and_ask_without_a_terminal() {
    let project = toolmux_project();
    project.config(r#"{"policies": {"tools": {"grep": "deny", "file_read": "ask"}}}"#);
    let run = project.run(&["tools", "call", "grep", "-a", "pattern=x"]);
    assert_eq!(run.code(), 4);
    assert_eq!(
        run.stderr().trim(),
        "toolmux: tool `grep` was denied: its policy is `deny` (rule for `grep`)"
    );
    // Tests run without a terminal, so nobody can be asked.
    let run = project.run(&["tools", "call", "file_read", "-a", "path=x"]);
    assert_eq!(run.code(), 4);
    assert_eq!(
        run.stderr().trim(),
        "toolmux: tool `file_read` was denied: its policy is `ask` (rule for `file_read`) and \
         there is no one to ask on the cli channel; to run it without asking, set \"policies\": \
         {\"tools\": {\"file_read\": \"allow\"}} in .toolmux/config.json"
    );
}

#[test]
fn a_call_past_its_timeout_is_cancelled_and_reported() {
    let project = toolmux_project();
    for i in 0..3000 {
        project.write(&format!("tree/d{}/f{i}.txt", i % 50), "some text\n");
    }
    project.config(r#"{"toolSettings": {"grep": {"timeoutMs": 1}}}"#);
    let run = project.run(&[
        "tools",
        "call",
        "grep",
        "-a",
        "pattern=nothing-matches-this",
    ]);
    assert_eq!(run.code(), 1);
    assert_eq!(
        run.stderr().trim(),
        "toolmux: tool `grep` timed out after 1ms"
    );
}

#[test]
fn filters_hide_tools_from_listing_and_calls() {
    let project = toolmux_project();
    project.config(r#"{"filters": {"exclude": ["file_*"]}}"#);
    let names: Vec<Value> = project
        .run(&["tools", "list", "--json"])
        .json()
        .as_array()
        .expect("array")
        .iter()
        .map(|t| t["name"].clone())
        .collect();
    assert_eq!(
        names,
        [
            json!("apply_patch"),
            json!("cancel_session"),
            json!("code_execution"),
            json!("delegate"),
            json!("detect_runners"),
            json!("directory_list"),
            json!("grep"),
            json!("list_resources"),
            json!("list_runners"),
            json!("list_sessions"),
            json!("read_resource"),
            json!("request_human_input"),
            json!("result_read"),
            json!("run_code"),
            json!("run_session"),
            json!("run_subagent"),
            json!("search_tools"),
            json!("session_logs"),
            json!("session_status"),
            json!("shell"),
            json!("skill_list"),
            json!("skill_load"),
            json!("task_add_note"),
            json!("task_complete"),
            json!("task_create"),
            json!("task_delete"),
            json!("task_list"),
            json!("task_update"),
            json!("task_view"),
            json!("url_fetch"),
            json!("web_search")
        ]
    );
    let run = project.run(&["tools", "call", "file_read", "-a", "path=x"]);
    assert_eq!(run.code(), 4);
    assert_eq!(
        run.stderr().trim(),
        "toolmux: tool `file_read` is disabled: excluded by pattern `file_*`"
    );
}

#[test]
fn a_malformed_config_names_file_line_and_column() {
    let project = toolmux_project();
    // A missing comma (trailing commas and comments are allowed: the file is JSON with comments).
    let path = project.config(
        "{\n  \"defaults\": {\n    \"timeoutMs\": 5000\n    \"approvalTimeoutMs\": 1\n  }\n}\n",
    );
    let run = project.run(&["tools", "list"]);
    assert_eq!(run.code(), 3);
    let err = run.stderr();
    assert!(
        err.starts_with(&format!(
            "toolmux: invalid configuration: {}:4:5",
            path.display()
        )),
        "{err}"
    );
}

#[test]
fn an_unknown_config_key_gets_a_did_you_mean() {
    let project = toolmux_project();
    let path = project.config("{\n  \"defaults\": {\"tiemoutMs\": 5000}\n}\n");
    let run = project.run(&["config", "check"]);
    assert_eq!(run.code(), 3);
    let err = run.stderr();
    assert!(err.contains(&path.display().to_string()), "{err}");
    assert!(
        err.contains("unknown field `tiemoutMs`; did you mean `timeoutMs`?"),
        "{err}"
    );
    assert!(err.contains("defaults"), "{err}");
}

#[test]
fn an_unset_variable_is_named_with_its_field() {
    let project = toolmux_project();
    project.config(r#"{"root": "${TOOLMUX_TEST_NO_SUCH_VAR}"}"#);
    let run = project
        .cmd()
        .args(["config", "check"])
        .env_remove("TOOLMUX_TEST_NO_SUCH_VAR")
        .output()
        .expect("run");
    assert_eq!(run.status.code(), Some(3));
    let err = String::from_utf8_lossy(&run.stderr);
    assert!(err.contains("TOOLMUX_TEST_NO_SUCH_VAR"), "{err}");
    assert!(err.contains("root"), "{err}");
}

#[test]
fn config_schema_is_json_schema_and_config_path_names_both_files() {
    let project = toolmux_project();
    let schema = project.run(&["config", "schema"]).json();
    assert!(schema["properties"]["policies"].is_object(), "{schema}");
    let paths = project.run(&["config", "path"]).ok();
    assert!(paths.contains("project: "), "{paths}");
    assert!(
        paths.contains(".toolmux/config.json (not present)"),
        "{paths}"
    );
    assert!(paths.contains("user:    "), "{paths}");
}

#[test]
fn every_call_is_logged_with_secrets_redacted_and_can_be_filtered() {
    let project = toolmux_project();
    project.write("a.txt", "hello\n");
    project
        .run(&["tools", "call", "file_read", "-a", "path=a.txt"])
        .ok();
    let refused = project.run(&[
        "tools",
        "call",
        "file_read",
        "-a",
        "path=a.txt",
        "-a",
        "api_key=sk-live-123",
    ]);
    assert_eq!(refused.code(), 4);
    project.run(&["tools", "call", "nope"]);

    let all = project.run(&["logs", "--json"]).ok();
    let entries: Vec<Value> = all
        .lines()
        .map(|l| serde_json::from_str(l).expect("json line"))
        .collect();
    assert_eq!(entries.len(), 3, "{all}");
    assert_eq!(entries[0]["outcome"], "ok");
    assert_eq!(entries[0]["channel"], "cli");
    assert_eq!(entries[0]["source"], "workspace");
    assert_eq!(entries[1]["outcome"], "invalid");
    assert_eq!(entries[1]["arguments"]["api_key"], "[redacted]");
    assert!(!all.contains("sk-live-123"));
    assert_eq!(entries[2]["tool"], "nope");

    let invalid = project
        .run(&["logs", "--outcome", "invalid", "--json"])
        .ok();
    assert_eq!(invalid.lines().count(), 2);
    let human = project.run(&["logs", "--tool", "file_*"]).ok();
    assert_eq!(human.lines().count(), 2, "{human}");
    assert!(
        human
            .lines()
            .next()
            .is_some_and(|l| l.contains(" ok ") && l.contains("file_read")),
        "{human}"
    );
    let bad = project.run(&["logs", "--outcome", "great"]);
    assert_eq!(bad.code(), 2);
    assert_eq!(
        bad.stderr().trim(),
        "toolmux: unknown outcome `great` (expected ok, error, denied, timeout or invalid)"
    );
}

#[test]
fn logs_follow_prints_calls_as_they_happen() {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;

    let project = toolmux_project();
    project.write("a.txt", "hello\n");
    let mut follower = project
        .cmd()
        .args(["logs", "--follow", "--json"])
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn follower");
    let stdout = follower.stdout.take().expect("stdout");
    // Give the follower a moment to open the log, then make calls until it reports one.
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut seen = None;
    for _ in 0..50 {
        project
            .run(&["tools", "call", "file_read", "-a", "path=a.txt"])
            .ok();
        if let Ok(line) = rx.recv_timeout(std::time::Duration::from_millis(200)) {
            seen = Some(line);
            break;
        }
    }
    follower.kill().expect("kill follower");
    follower.wait().expect("reap follower");
    let line = seen.expect("the follower printed a call");
    let entry: Value = serde_json::from_str(&line).expect("json");
    assert_eq!(entry["tool"], "file_read");
}

#[test]
fn tools_disable_enable_and_policy_edit_the_config_and_take_effect() {
    let project = toolmux_project();
    project.write("notes.txt", "hello\n");
    let out = project.run(&["tools", "disable", "file_read"]).ok();
    assert!(out.starts_with("disabled `file_read` in "), "{out}");
    assert_eq!(
        project.saved_config(),
        json!({"toolSettings": {"file_read": {"enabled": false}}})
    );
    let listed = project.run(&["tools", "list", "--json"]).json();
    assert!(
        !listed.to_string().contains("\"file_read\""),
        "a disabled tool is not listed: {listed}"
    );
    let refused = project.run(&["tools", "call", "file_read", "-a", "path=notes.txt"]);
    assert_eq!(refused.code(), 4, "{}", refused.stderr());
    assert!(
        refused.stderr().contains("disabled"),
        "{}",
        refused.stderr()
    );

    project.run(&["tools", "enable", "file_read"]).ok();
    assert_eq!(project.saved_config(), json!({}));
    project
        .run(&["tools", "call", "file_read", "-a", "path=notes.txt"])
        .ok();

    let out = project.run(&["tools", "policy", "file_read", "deny"]).ok();
    assert!(
        out.starts_with("set the policy of `file_read` to deny in "),
        "{out}"
    );
    assert_eq!(
        project.saved_config(),
        json!({"policies": {"tools": {"file_read": "deny"}}})
    );
    let denied = project.run(&["tools", "call", "file_read", "-a", "path=notes.txt"]);
    assert_eq!(denied.code(), 4, "{}", denied.stderr());
    assert!(
        denied.stderr().contains("was denied"),
        "{}",
        denied.stderr()
    );
    project
        .run(&["tools", "policy", "file_read", "default"])
        .ok();
    assert_eq!(project.saved_config(), json!({}));

    // A name the catalog does not know is not saved as a setting.
    let typo = project.run(&["tools", "disable", "file_raed"]);
    assert_eq!(typo.code(), 4, "{}", typo.stderr());
    assert!(typo.stderr().contains("file_read"), "{}", typo.stderr());
    assert_eq!(project.saved_config(), json!({}));
}
