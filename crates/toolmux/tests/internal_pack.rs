//! The secret store and the internal pack through the real binary: `toolmux secrets`, a
//! `${secret:NAME}` reference in an upstream server's header reaching the server, the values
//! kept out of the execution log and the config file, and the internal tools hidden from the
//! Python MCP client yet callable from the CLI and keyed REST.

mod support;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::process::Stdio;
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{Value, json};
use support::toolmux_project;
use toolmux_testkit::project::TestProject;
use toolmux_testkit::python_client::{run_mcp_steps, tool_names};
use toolmux_testkit::served::{KEY, Served, config_with_key};

const INTERNAL: [&str; 7] = [
    "config_get",
    "config_set",
    "secrets_delete",
    "secrets_get",
    "secrets_list",
    "secrets_set",
    "workspace_root",
];

/// `toolmux secrets set NAME` with the value on stdin.
fn set_secret(project: &TestProject, name: &str, value: &str) {
    let mut child = project
        .cmd()
        .args(["secrets", "set", name])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start toolmux secrets set");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(format!("{value}\n").as_bytes())
        .expect("write the value");
    let out = child.wait_with_output().expect("wait");
    assert!(
        out.status.success(),
        "secrets set failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Every line of the project's execution log.
fn log_text(project: &TestProject) -> String {
    let dir = project.path().join(".toolmux/state/logs");
    let mut text = String::new();
    for entry in std::fs::read_dir(&dir).expect("log dir").flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with("calls-") && name.ends_with(".jsonl") {
            text.push_str(&std::fs::read_to_string(entry.path()).expect("read log"));
        }
    }
    text
}

/// An HTTP listener that answers every request 500 and sends the first request's
/// `Authorization` header to the test.
fn header_catcher() -> (String, mpsc::Receiver<String>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}/mcp", listener.local_addr().expect("address"));
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut reader = BufReader::new(stream.try_clone().expect("clone"));
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                if let Some(value) = line
                    .split_once(':')
                    .filter(|(name, _)| name.eq_ignore_ascii_case("authorization"))
                    .map(|(_, value)| value.trim().to_string())
                {
                    let _ = tx.send(value);
                }
                line.clear();
            }
            let mut stream = stream;
            let _ = stream.write_all(
                b"HTTP/1.1 500 Internal Server Error\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
            );
        }
    });
    (url, rx)
}

#[test]
fn secret_references_resolve_from_the_store_and_never_leak() {
    let project = toolmux_project();
    let (url, headers) = header_catcher();
    project.config(
        &json!({"mcpServers": {"remote": {
            "url": url,
            "headers": {"Authorization": "Bearer ${secret:REMOTE_TOKEN}"}
        }}})
        .to_string(),
    );

    // Unset: that server alone waits (#29 item 12), and says for which secret, field and file.
    let run = project.run(&["tools", "list"]);
    assert_eq!(run.code(), 0, "stderr: {}", run.stderr());
    let list = project.run(&["mcp", "list", "--json"]).json();
    assert_eq!(list[0]["status"], "unavailable", "{list}");
    assert_eq!(
        list[0]["error"],
        format!(
            "secret `REMOTE_TOKEN` is not in the secret store (set it with `toolmux secrets set \
             REMOTE_TOKEN`) (used in `mcpServers.remote.headers.Authorization` of `{}`)",
            project.config_file().display()
        ),
        "{list}"
    );

    set_secret(&project, "REMOTE_TOKEN", "s3cr3t-value-42");
    let stored = project.path().join(".toolmux/state/secrets.enc");
    let mode = std::fs::metadata(&stored)
        .expect("secrets file")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    let key = project.home().join(".config/toolmux/secret.key");
    let mode = std::fs::metadata(&key)
        .expect("key file")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    assert!(!String::from_utf8_lossy(&std::fs::read(&stored).expect("read")).contains("s3cr3t"));

    assert_eq!(
        project.run(&["secrets", "list"]).ok().trim(),
        "REMOTE_TOKEN"
    );
    assert_eq!(
        project.run(&["secrets", "get", "REMOTE_TOKEN"]).ok().trim(),
        "s3cr3t-value-42"
    );

    // The reference reaches the server as the value; the file keeps the reference.
    let _ = project.run(&["mcp", "refresh", "remote"]);
    let sent = headers
        .recv_timeout(Duration::from_secs(30))
        .expect("the upstream server was asked");
    assert_eq!(sent, "Bearer s3cr3t-value-42");
    let config = std::fs::read_to_string(project.config_file()).expect("config");
    assert!(config.contains("${secret:REMOTE_TOKEN}"), "{config}");
    assert!(!config.contains("s3cr3t"), "{config}");

    // The log has the calls, never the value: `secrets_set`'s argument and `secrets_get`'s
    // result are redacted.
    let log = log_text(&project);
    assert!(log.contains("\"secrets_set\""), "{log}");
    assert!(log.contains("\"secrets_get\""), "{log}");
    assert!(log.contains("[redacted]"), "{log}");
    assert!(!log.contains("s3cr3t"), "the value reached the log:\n{log}");

    // Gone: a not-found refusal (exit code 4), and the server waits for it again.
    project.run(&["secrets", "delete", "REMOTE_TOKEN"]).ok();
    assert_eq!(project.run(&["secrets", "get", "REMOTE_TOKEN"]).code(), 4);
    let list = project.run(&["mcp", "list", "--json"]).json();
    assert_eq!(list[0]["status"], "unavailable", "{list}");
}

#[test]
fn internal_tools_are_hidden_from_mcp_and_served_to_trusted_callers() {
    let project = toolmux_project();
    project.config(&config_with_key(""));
    // The CLI is trusted: `tools call` reaches an internal tool by name.
    let root = project
        .run_keyed(&["tools", "call", "workspace_root", "--json"])
        .json();
    let root_dir = root["structuredContent"]["root"].as_str().expect("root");
    assert_eq!(
        std::fs::canonicalize(root_dir).expect("root exists"),
        std::fs::canonicalize(project.path()).expect("project")
    );
    let listed = project.run_keyed(&["tools", "list"]).ok();
    for tool in INTERNAL {
        assert!(
            !listed.contains(tool),
            "`tools list` shows {tool}:\n{listed}"
        );
    }

    let served = Served::start(&project, &[]);
    let outcomes = run_mcp_steps(&json!({
        "transport": "http",
        "url": served.mcp_url(),
        "headers": {"Authorization": format!("Bearer {KEY}")},
        "steps": [
            {"op": "list"},
            {"op": "call", "name": "secrets_list", "arguments": {}},
            {"op": "call", "name": "secrets_set", "arguments": {"name": "X", "secret": "y"}},
        ],
    }));
    let names = tool_names(&outcomes[0]);
    assert!(names.iter().any(|n| n == "task_list"), "{names:?}");
    for tool in INTERNAL {
        assert!(!names.iter().any(|n| n == tool), "MCP lists {tool}");
    }
    for refused in &outcomes[1..] {
        assert_eq!(refused["error"]["code"], -32602, "{refused}");
    }

    // A keyed REST request is trusted.
    let set = served.post(
        "/api/tools/secrets_set/call",
        r#"{"name": "API_TOKEN", "secret": "rest-secret-7"}"#,
    );
    assert_eq!(set.status, 200, "{}", set.body);
    let got = served
        .post("/api/tools/secrets_get/call", r#"{"name": "API_TOKEN"}"#)
        .json();
    assert_eq!(got["structuredContent"]["secret"], "rest-secret-7", "{got}");
    assert!(
        !got["content"].to_string().contains("rest-secret-7"),
        "{got}"
    );

    // config_set through the one editor; config_get reads the references as written.
    let set = served.post(
        "/api/tools/config_set/call",
        r#"{"path": "logs.retentionDays", "value": 3}"#,
    );
    assert_eq!(set.status, 200, "{}", set.body);
    assert_eq!(project.saved_config()["logs"]["retentionDays"], 3);
    let got = served
        .post(
            "/api/tools/config_get/call",
            r#"{"path": "/server/apiKeys/0"}"#,
        )
        .json();
    assert_eq!(
        got["structuredContent"]["value"],
        Value::from("${TOOLMUX_TEST_KEY}")
    );
    let bad = served.post(
        "/api/tools/config_set/call",
        r#"{"path": "logs.retentionDays", "value": "soon"}"#,
    );
    // The tool ran and refused: the whole file is checked before anything is written.
    assert_eq!(bad.json()["status"], "error", "{}", bad.body);
    assert_eq!(project.saved_config()["logs"]["retentionDays"], 3);

    // Without a key the same call is refused, as for an unknown tool.
    let anonymous = served.request(
        "POST",
        "/api/tools/secrets_list/call",
        &[("Content-Type", "application/json")],
        Some("{}"),
    );
    assert_ne!(anonymous.status, 200, "{}", anonymous.body);
    served.stop();

    let log = log_text(&project);
    assert!(
        !log.contains("rest-secret-7"),
        "the value reached the log:\n{log}"
    );
}
