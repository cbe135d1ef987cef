//! `toolmux mcp` and `toolmux serve` driven by a real MCP client (the Python SDK from
//! `tests/peers/mcp/`) on a real temporary project.

mod support;

use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};
use support::toolmux_project;
use toolmux_testkit::conformance::{Release, assert_server_suite_passes, run_server_suite};
use toolmux_testkit::peers::{node_peer, peer_file, python};
use toolmux_testkit::processes::{assert_no_process_left, wait_bounded};
use toolmux_testkit::project::TestProject;
use toolmux_testkit::python_client::{run_mcp_client, run_mcp_steps};
use toolmux_testkit::served::Served;

fn names(line: &Value) -> Vec<&str> {
    line["tools"]
        .as_array()
        .expect("a tools line")
        .iter()
        .map(|t| t["name"].as_str().expect("name"))
        .collect()
}

fn text(line: &Value) -> &str {
    line["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("not a result with text: {line}"))
}

fn project_with_files() -> TestProject {
    let project = toolmux_project();
    project.write("notes.txt", "first line\nthe needle is here\nlast line\n");
    project.write("src/lib.rs", "// no needle in here\nfn main() {}\n");
    project
}

#[test]
fn mcp_over_stdio_serves_the_workspace_tools_to_a_real_client() {
    let project = project_with_files();
    let lines = run_mcp_client(&project.stdio_plan(
        &["mcp"],
        json!([
            {"op": "list"},
            {"op": "call", "name": "file_read", "arguments": {"path": "notes.txt"}},
            {"op": "call", "name": "grep", "arguments": {"pattern": "needle"}},
            {"op": "call", "name": "file_read", "arguments": {"path": "../outside.txt"}},
            {"op": "ping"}
        ]),
    ));
    let connected = &lines[0]["connected"];
    assert_eq!(connected["serverInfo"]["name"], "toolmux");
    // The plan's default mode is the `initialize` handshake; 2026-07-28 clients are
    // a_2026_client_lists_calls_and_reads_over_stdio_without_a_handshake's.
    assert_eq!(connected["protocolVersion"], "2025-11-25");

    let listed = names(&lines[1]);
    for tool in ["directory_list", "file_read", "file_search", "grep"] {
        assert!(listed.contains(&tool), "{tool} missing from {listed:?}");
    }
    let file_read = lines[1]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .find(|t| t["name"] == "file_read")
        .expect("file_read");
    assert_eq!(file_read["title"], "Read file");
    assert_eq!(file_read["annotations"]["readOnlyHint"], true);
    assert_eq!(file_read["inputSchema"]["required"], json!(["path"]));
    assert!(file_read["outputSchema"].is_object());

    assert_eq!(lines[2]["result"]["isError"], false);
    assert!(
        text(&lines[2]).contains("the needle is here"),
        "{}",
        lines[2]
    );
    assert_eq!(lines[2]["result"]["structuredContent"]["totalLines"], 3);

    assert_eq!(lines[3]["result"]["isError"], false);
    let grep = serde_json::to_string(&lines[3]["result"]["structuredContent"]).expect("json");
    assert!(
        grep.contains("notes.txt") && grep.contains("src/lib.rs"),
        "{grep}"
    );

    // A path outside the project is a tool error the model can read, not a protocol failure.
    assert_eq!(lines[4]["result"]["isError"], true, "{}", lines[4]);
    assert_eq!(lines[5], json!({"ok": true}));
    assert_no_process_left(project.path());

    // The calls are in the execution log, on the mcp channel.
    let logged = project.run(&["logs", "--json"]).ok();
    let channels: Vec<Value> = logged
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("a JSON line")["channel"].clone())
        .collect();
    assert_eq!(channels, vec![json!("mcp"); 3], "{logged}");
}

#[test]
fn denied_tools_are_not_offered_and_a_call_to_one_is_refused_with_the_rule() {
    let project = project_with_files();
    project.config(r#"{"policies": {"tools": {"grep": "deny"}}}"#);
    let lines = run_mcp_client(&project.stdio_plan(
        &["mcp"],
        json!([
            {"op": "list"},
            {"op": "call", "name": "grep", "arguments": {"pattern": "needle"}},
            {"op": "call", "name": "run_code", "arguments": {
                "code": "import { workspace } from '@capabilities/workspace';\n\
                         return [typeof (workspace as any).grep, typeof workspace.fileRead];"
            }},
        ]),
    ));
    let names: Vec<&str> = lines[1]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(!names.contains(&"grep"), "{names:?}");
    assert!(names.contains(&"file_read"), "{names:?}");
    // Called anyway, it is refused by the hub, which names the rule, and logged.
    assert_eq!(lines[2]["result"]["isError"], true, "{}", lines[2]);
    let refusal = text(&lines[2]);
    assert!(
        refusal.contains("grep") && refusal.contains("deny"),
        "{refusal}"
    );
    // Code mode's typed API leaves it out too.
    assert_eq!(lines[3]["result"]["isError"], false, "{}", lines[3]);
    assert_eq!(
        lines[3]["result"]["structuredContent"]["result"],
        json!(["undefined", "function"]),
        "{}",
        lines[3]
    );
    let logged = project.run(&["logs", "--tool", "grep", "--json"]).ok();
    assert!(logged.contains("\"denied\""), "{logged}");
}

#[test]
fn mcp_over_stdio_asks_the_client_by_elicitation_for_ask_tools() {
    let project = project_with_files();
    project.config(r#"{"policies": {"tools": {"grep": "ask"}}}"#);
    let call = json!({"op": "call", "name": "grep", "arguments": {"pattern": "needle"}});
    let mut plan = project.stdio_plan(&["mcp"], json!([call, call, call]));
    plan["elicitation"] = json!(["deny", "allow_session"]);
    let lines = run_mcp_client(&plan);

    assert_eq!(
        text(&lines[1]),
        "tool `grep` was denied: the user chose to deny it"
    );
    assert_eq!(lines[2]["result"]["isError"], false, "{}", lines[2]);
    assert_eq!(lines[3]["result"]["isError"], false, "{}", lines[3]);
    let asked = lines[4]["done"]["elicitations"]
        .as_array()
        .expect("elicitations");
    assert_eq!(asked.len(), 2, "the third call was allowed for the session");
    assert!(
        asked[0]["message"]
            .as_str()
            .expect("message")
            .contains(r#""pattern": "needle""#),
        "the person sees the arguments: {}",
        asked[0]
    );
    assert_no_process_left(project.path());
}

#[test]
fn mcp_over_stdio_denies_ask_tools_with_a_hint_when_the_client_cannot_elicit() {
    let project = project_with_files();
    project.config(r#"{"policies": {"tools": {"grep": "ask"}}}"#);
    let lines = run_mcp_client(&project.stdio_plan(
        &["mcp"],
        json!([{"op": "call", "name": "grep", "arguments": {"pattern": "needle"}}]),
    ));
    assert_eq!(lines[1]["result"]["isError"], true);
    let message = text(&lines[1]);
    assert!(
        message.contains(r#""policies": {"tools": {"grep": "allow"}}"#),
        "{message}"
    );
    assert_no_process_left(project.path());
}

#[test]
fn mcp_filters_and_pass_through_choose_the_served_tools() {
    let project = project_with_files();
    let lines = run_mcp_client(&project.stdio_plan(
        &["mcp", "--tools", "file_*", "--exclude", "file_search"],
        json!([{"op": "list"}, {"op": "call", "name": "grep", "arguments": {"pattern": "x"}}]),
    ));
    assert_eq!(names(&lines[1]), ["file_edit", "file_read", "file_write"]);
    assert_eq!(lines[2]["error"]["code"], -32602);

    let run = project.run(&["mcp", "--pass-through", "nosuch"]);
    assert_eq!(run.code(), 2);
    assert!(
        run.stderr()
            .contains("--pass-through: there is no source `nosuch`; the sources are: ")
            && run.stderr().contains("workspace"),
        "{}",
        run.stderr()
    );
}

#[test]
fn mcp_code_mode_offers_two_tools_whose_scripts_reach_every_tool() {
    let project = project_with_files();
    let script = "import { workspace } from '@capabilities/workspace';\n\
                  const found = await workspace.grep({ pattern: 'needle' });\n\
                  return found.matches.map((m) => `${m.path}:${m.line}`);";
    let lines = run_mcp_client(&project.stdio_plan(
        &["mcp", "--code-mode"],
        json!([
            {"op": "list"},
            {"op": "call", "name": "run_code", "arguments": {"code": script}},
            {"op": "call", "name": "grep", "arguments": {"pattern": "needle"}}
        ]),
    ));
    assert_eq!(names(&lines[1]), ["run_code", "search_tools"]);
    let result = &lines[2]["result"];
    assert_eq!(result["isError"], false, "{result}");
    assert_eq!(
        result["structuredContent"]["result"],
        json!(["notes.txt:2", "src/lib.rs:1"])
    );
    // Only the two code-mode tools are offered directly.
    assert_eq!(lines[3]["error"]["code"], -32602);

    let run = project.run(&["mcp", "--code-mode", "--pass-through", "workspace"]);
    assert_eq!(run.code(), 2);
    assert!(
        run.stderr().contains("cannot be used with"),
        "{}",
        run.stderr()
    );
}

#[test]
fn d4_filters_hold_inside_run_code_and_search_tools() {
    let project = project_with_files();
    let call_grep =
        "return await (globalThis as any).__toolmux_call('grep', { pattern: 'needle' });";
    let typed_grep = "import { workspace } from '@capabilities/workspace';\n\
                      return await workspace.grep({ pattern: 'needle' });";
    let file_read = "import { workspace } from '@capabilities/workspace';\n\
                     const read = await workspace.fileRead({ path: 'notes.txt' });\n\
                     return read.content.includes('needle');";
    for args in [
        &["--exclude", "grep"][..],
        &["--code-mode", "--exclude", "grep"][..],
        &[
            "--tools",
            "file_*",
            "--tools",
            "run_code",
            "--tools",
            "search_tools",
        ][..],
    ] {
        let lines = run_mcp_client(&project.stdio_plan(
            &[&["mcp"], args].concat(),
            json!([
                {"op": "call", "name": "run_code", "arguments": {"code": call_grep}},
                {"op": "call", "name": "run_code", "arguments": {"code": typed_grep}},
                {"op": "call", "name": "run_code", "arguments": {"code": file_read}},
                {"op": "call", "name": "search_tools", "arguments": {"query": "grep regex search"}}
            ]),
        ));
        assert_eq!(
            lines[1]["result"]["isError"], true,
            "{args:?}: {}",
            lines[1]
        );
        assert!(
            text(&lines[1]).contains("`grep` is not served by this MCP server"),
            "{args:?}: {}",
            lines[1]
        );
        // Through the typed API the call fails too (refused, or no such function: the types
        // a script gets leave out what the channel does not serve).
        assert_eq!(
            lines[2]["result"]["isError"], true,
            "{args:?}: {}",
            lines[2]
        );
        let typed = text(&lines[2]);
        assert!(
            typed.contains("`grep` is not served") || typed.contains("not a function"),
            "{args:?}: {}",
            lines[2]
        );
        assert_eq!(
            lines[3]["result"]["structuredContent"]["result"], true,
            "{args:?}: what the filters let through is still reachable: {}",
            lines[3]
        );
        let found = lines[4]["result"].to_string();
        assert!(
            !found.contains("\"grep\""),
            "{args:?}: search_tools lists what the channel filters out: {found}"
        );
    }
    assert_no_process_left(project.path());
}

#[test]
fn mcp_stdout_carries_only_protocol_messages_and_unknown_methods_get_errors() {
    let project = project_with_files();
    let mut child = project
        .cmd()
        .args(["mcp", "-vvv"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start toolmux mcp");
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    let messages = [
        json!({"jsonrpc": "2.0", "id": 0, "method": "server/discover", "params": {"_meta": meta}}),
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/frobnicate", "params": {}}),
        json!({"jsonrpc": "2.0", "id": 3, "method": "logging/setLevel", "params": {"level": "debug"}}),
        json!({"jsonrpc": "2.0", "id": 4, "method": "ping"}),
        json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {
            "name": "file_read", "arguments": {"path": "notes.txt"}}}),
    ];
    let mut stdin = child.stdin.take().expect("stdin");
    for message in &messages {
        writeln!(stdin, "{message}").expect("write a message");
    }
    drop(stdin); // the client leaves: the server must end
    let status = wait_bounded(&mut child, Duration::from_secs(20));
    assert!(status.success(), "toolmux mcp failed: {status}");
    let mut stdout = String::new();
    child
        .stdout
        .take()
        .expect("stdout")
        .read_to_string(&mut stdout)
        .expect("read stdout");
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut stderr)
        .expect("read stderr");
    assert!(!stderr.is_empty(), "-vvv logs went to stderr");

    let responses: Vec<Value> = stdout
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l)
                .unwrap_or_else(|e| panic!("stdout carried a non-JSON line ({e}): {l:?}"));
            assert_eq!(v["jsonrpc"], "2.0", "not JSON-RPC: {l}");
            v
        })
        .collect();
    let by_id = |id: i64| {
        responses
            .iter()
            .find(|r| r["id"] == json!(id))
            .unwrap_or_else(|| panic!("no response to {id} in {responses:#?}"))
    };
    // The probe is answered with every revision toolmux speaks, 2026-07-28 included, and it
    // commits the connection to neither era: a client may still go on with `initialize`.
    let discover = &by_id(0)["result"];
    assert_eq!(
        discover["supportedVersions"],
        json!([
            "2024-11-05",
            "2025-03-26",
            "2025-06-18",
            "2025-11-25",
            "2026-07-28"
        ]),
        "{discover}"
    );
    assert_eq!(by_id(1)["result"]["protocolVersion"], "2025-11-25");
    assert_eq!(by_id(2)["error"]["code"], -32601);
    assert_eq!(by_id(3)["result"], json!({}));
    assert_eq!(by_id(4)["result"], json!({}));
    assert_eq!(by_id(5)["result"]["isError"], false);
}

#[test]
fn serve_prints_its_url_and_serves_mcp_over_streamable_http() {
    let project = project_with_files();
    let served = Served::start(&project, &[]);
    let url = served.mcp_url();
    assert!(
        url.starts_with("http://127.0.0.1:") && url.ends_with("/mcp"),
        "{url}"
    );
    let lines = run_mcp_client(&json!({
        "transport": "http",
        "url": served.mcp_url(),
        "headers": {"Authorization": served.authorization()},
        "steps": [
            {"op": "list"},
            {"op": "call", "name": "file_read", "arguments": {"path": "notes.txt"}}
        ]
    }));
    assert_eq!(lines[0]["connected"]["protocolVersion"], "2025-11-25");
    assert!(names(&lines[1]).contains(&"grep"));
    assert!(text(&lines[2]).contains("the needle is here"));
    served.stop();
    assert_no_process_left(project.path());

    // The call is logged under the HTTP session's own id (`Mcp-Session-Id`).
    let logged = project.run(&["logs", "--json"]).ok();
    let entry: Value = serde_json::from_str(logged.trim()).expect("one JSON line");
    assert_eq!(entry["channel"], "mcp");
    let session = entry["session"].as_str().expect("a session id");
    assert!(
        !session.is_empty() && !session.starts_with("mcp-"),
        "expected the Mcp-Session-Id, got {session}"
    );
}

#[test]
fn serve_requires_the_api_key_it_was_given() {
    let project = project_with_files();
    let served = Served::start_with_env(
        &project,
        &["--api-key-env", "MY_TOOLMUX_KEY"],
        &[("MY_TOOLMUX_KEY", "k-123456")],
    );
    let lines = run_mcp_client(&json!({
        "transport": "http",
        "url": served.mcp_url(),
        "headers": {"Authorization": "Bearer k-123456"},
        "steps": [{"op": "list"}]
    }));
    assert!(names(&lines[1]).contains(&"file_read"));

    let port = served.port();
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
    write!(
        stream,
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nConnection: close\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .expect("send");
    let mut response = String::new();
    stream.read_to_string(&mut response).expect("read");
    assert!(response.starts_with("HTTP/1.1 401"), "{response}");
    served.stop();
}

#[test]
fn serve_refuses_to_bind_beyond_loopback_without_an_api_key() {
    let project = project_with_files();
    let run = project.run(&["serve", "--bind", "0.0.0.0", "--port", "0"]);
    assert_eq!(run.code(), 2);
    assert!(
        run.stderr().contains("needs an API key") && run.stderr().contains("--api-key-env"),
        "{}",
        run.stderr()
    );
    let run = project.run(&[
        "serve",
        "--port",
        "0",
        "--api-key-env",
        "TOOLMUX_TEST_UNSET_VAR",
    ]);
    assert_eq!(run.code(), 2);
    assert!(
        run.stderr()
            .contains("the environment variable `TOOLMUX_TEST_UNSET_VAR` is unset or empty"),
        "{}",
        run.stderr()
    );
}

/// Runs the MCP Inspector CLI against `toolmux mcp` in the project; returns its JSON output.
fn inspector(project: &TestProject, method_args: &[&str]) -> Value {
    let output = Command::new(node_peer("mcp", "mcp-inspector"))
        .current_dir(project.path())
        .env("HOME", project.home())
        .args(["--cli", "-e"])
        .arg(format!(
            "XDG_CONFIG_HOME={}",
            project.home().join(".config").display()
        ))
        .arg(env!("CARGO_BIN_EXE_toolmux"))
        .args(["-C"])
        .arg(project.path())
        .arg("mcp")
        .args(method_args)
        .output()
        .expect("run the MCP Inspector CLI");
    assert!(
        output.status.success(),
        "the Inspector failed\nstdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("the Inspector prints JSON")
}

#[test]
fn mcp_inspector_cli_lists_and_calls_tools() {
    let project = project_with_files();
    let listed = inspector(&project, &["--method", "tools/list"]);
    let names: Vec<&str> = listed["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    for tool in ["directory_list", "file_read", "file_search", "grep"] {
        assert!(names.contains(&tool), "{tool} missing from {names:?}");
    }

    let called = inspector(
        &project,
        &[
            "--method",
            "tools/call",
            "--tool-name",
            "file_read",
            "--tool-arg",
            "path=notes.txt",
        ],
    );
    assert_eq!(called["isError"], false, "{called}");
    assert_eq!(called["structuredContent"]["totalLines"], 3);
    assert_no_process_left(project.path());
}

/// A project whose one upstream server is the conformance fixture (tests/peers/mcp), with its
/// tools, prompts and resources discovered.
fn project_with_fixture() -> TestProject {
    let project = project_with_files();
    project.config(
        &json!({
            "mcpServers": {
                "conformance": {
                    "command": python(),
                    "args": [peer_file("mcp/conformance_fixture.py")],
                }
            }
        })
        .to_string(),
    );
    project.run(&["mcp", "refresh"]).ok();
    project
}

#[test]
fn conformance_suite_passes_against_serve_in_pass_through_mode() {
    let project = project_with_fixture();
    let served = Served::start(&project, &["--pass-through", "conformance"]);
    let stdout = assert_server_suite_passes(
        &served.mcp_url(),
        Some(&served.authorization()),
        &peer_file("mcp/conformance-baseline.yml"),
        &[],
    );
    // Every scenario of the active suite, so that one the suite skipped would be noticed.
    let scenarios = [
        "server-initialize",
        "logging-set-level",
        "ping",
        "completion-complete",
        "tools-list",
        "tools-call-simple-text",
        "tools-call-image",
        "tools-call-audio",
        "tools-call-embedded-resource",
        "tools-call-mixed-content",
        "tools-call-with-logging",
        "tools-call-error",
        "tools-call-with-progress",
        "tools-call-sampling",
        "tools-call-elicitation",
        "elicitation-sep1034-defaults",
        "elicitation-sep1330-enums",
        "server-sse-multiple-streams",
        "resources-list",
        "resources-read-text",
        "resources-read-binary",
        "resources-templates-read",
        "resources-subscribe",
        "resources-unsubscribe",
        "prompts-list",
        "prompts-get-simple",
        "prompts-get-with-args",
        "prompts-get-embedded-resource",
        "prompts-get-with-image",
        "dns-rebinding-protection",
    ];
    for scenario in scenarios {
        assert!(
            stdout
                .lines()
                .any(|l| l.starts_with(&format!("✓ {scenario}:")) && l.ends_with(" 0 failed")),
            "{scenario} did not pass:\n{stdout}"
        );
    }
    assert!(
        !stdout.contains('✗'),
        "a scenario failed (the baseline is empty):\n{stdout}"
    );
    served.stop();
    assert_no_process_left(project.path());
}

#[test]
fn the_current_suite_passes_every_2025_11_25_requirement_through_pass_through() {
    // The suite's release that knows both eras, asked for the handshake era's requirements: a
    // client that sends `initialize` gets what it always got, now that 2026-07-28 is served too.
    let project = project_with_fixture();
    let served = Served::start(&project, &["--pass-through", "conformance"]);
    let run = run_server_suite(
        Release::Current,
        &served.mcp_url(),
        Some(&served.authorization()),
        &["--requirements", "2025-11-25"],
    );
    assert!(run.status.success(), "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.stdout
            .lines()
            .any(|l| l == "Total: 80 passed, 0 failed"),
        "{}",
        run.stdout
    );
    served.stop();
    assert_no_process_left(project.path());
}

/// The checks of the 2026-07-28 scenarios that need the suite's own diagnostic tools, which a
/// server that is not the suite's reference cannot list (`test_missing_capability` fails a
/// call whose client declared no sampling with -32021; `test_streaming_elicitation` and
/// `test_logging_tool` are calls whose streams are inspected; `test_trigger_*_change` change the
/// lists): the suite reports them `Not testable`, as failures, or, for the two list changes (a
/// SHOULD), as warnings.
const NEEDS_DIAGNOSTIC_TOOLS: [(&str, &str); 6] = [
    ("sep-2575-server-rejects-undeclared-capability", "FAILURE"),
    ("sep-2575-missing-capability-http-400", "FAILURE"),
    (
        "sep-2575-http-server-no-independent-requests-on-stream",
        "FAILURE",
    ),
    ("sep-2575-server-no-log-without-loglevel", "FAILURE"),
    (
        "sep-2575-server-sends-prompts-list-changed-on-subscription",
        "WARNING",
    ),
    (
        "sep-2575-server-sends-tools-list-changed-on-subscription",
        "WARNING",
    ),
];

/// The checks of one scenario of the current suite at 2026-07-28 against `served`; the
/// suite's output is printed when it ran none.
fn scenario_checks_2026(served: &Served, scenario: &str) -> Vec<Value> {
    let run = run_server_suite(
        Release::Current,
        &served.mcp_url(),
        Some(&served.authorization()),
        &["--scenario", scenario, "--spec-version", "2026-07-28"],
    );
    let checks = run.checks(scenario);
    if checks.is_empty() {
        eprintln!("{}\n{}", run.stdout, run.stderr);
    }
    checks
}

#[test]
fn serve_passes_the_stateless_scenarios_of_2026_07_28() {
    // A spec, so that `resources/read` has something to read and its caching hints are checked.
    let project = toolmux_project();
    project.write(
        "specs/001-search-index/README.md",
        "---\nstatus: planned\ncreated: 2026-07-28\n---\n\n# Search index\n",
    );
    let served = Served::start(&project, &[]);
    for scenario in [
        "server-stateless",
        "http-header-validation",
        "caching",
        "sep-2164-resource-not-found",
        "dns-rebinding-protection",
    ] {
        let checks = scenario_checks_2026(&served, scenario);
        assert!(checks.len() > 1, "{scenario} did not run");
        for check in &checks {
            let id = check["id"].as_str().expect("a check id");
            let status = check["status"].as_str().expect("a status");
            match NEEDS_DIAGNOSTIC_TOOLS
                .iter()
                .find(|(needs, _)| *needs == id)
            {
                Some((_, expected)) => {
                    assert_eq!(status, *expected, "{check}");
                    let message = check["errorMessage"].as_str().unwrap_or_default();
                    assert!(
                        message.starts_with("Not testable: ")
                            || message.starts_with("Mutated the "),
                        "{check}"
                    );
                }
                None => assert_eq!(status, "SUCCESS", "{scenario}: {check}"),
            }
        }
    }
    served.stop();
}

/// The suite's input-required scenarios (SEP-2322) that a relay can be held to: the fixture
/// speaks the handshake era and elicits, and `serve` puts its form to the suite's 2026-07-28
/// client as an input-required result under a key of its own (`toolmux/relayed`). The
/// scenarios that name the fixture's own keys (`user_name`, several inputs in one round,
/// sampling, roots) describe a server that issues input-required results itself, which the
/// fixture, of the handshake era, cannot. A server of its own for each scenario: a call the
/// suite leaves unanswered waits upstream (as the fixture's call waits for its elicitation)
/// until its time limit, and while it does, the next call's elicitation on the same shared
/// connection could be either's, which toolmux refuses to guess.
#[test]
fn serve_passes_the_input_required_scenarios_of_2026_07_28_through_pass_through() {
    let project = project_with_fixture();
    for scenario in [
        "input-required-result-tampered-state",
        "input-required-result-result-type",
        "input-required-result-unsupported-methods",
        "input-required-result-missing-input-response",
    ] {
        let served = Served::start(&project, &["--pass-through", "conformance"]);
        let checks = scenario_checks_2026(&served, scenario);
        assert!(!checks.is_empty(), "{scenario} did not run");
        for check in &checks {
            assert_eq!(check["status"], "SUCCESS", "{scenario}: {check}");
        }
        served.stop();
    }
    assert_no_process_left(project.path());
}

#[test]
fn a_2026_client_lists_calls_and_reads_over_stdio_without_a_handshake() {
    let project = project_with_files();
    project.write(
        "specs/001-search-index/README.md",
        "---\nstatus: planned\ncreated: 2026-07-28\n---\n\n# Search index\n",
    );
    let mut plan = project.stdio_plan(
        &["mcp"],
        json!([
            {"op": "list"},
            {"op": "call", "name": "file_read", "arguments": {"path": "notes.txt"}},
            {"op": "read", "uri": "spec://001-search-index"}
        ]),
    );
    // The Python SDK's own default: `server/discover` first.
    plan["mode"] = json!("auto");
    let lines = run_mcp_client(&plan);
    assert_eq!(lines[0]["connected"]["protocolVersion"], "2026-07-28");
    let steps = outcomes(&lines);
    assert!(names(&steps[0]).contains(&"file_read"), "{}", steps[0]);
    assert_eq!(steps[1]["result"]["isError"], false, "{}", steps[1]);
    assert!(
        text_of(&steps[1]["result"]).contains("the needle is here"),
        "{}",
        steps[1]
    );
    assert_eq!(
        steps[2]["contents"][0]["uri"], "spec://001-search-index",
        "{}",
        steps[2]
    );
    assert_no_process_left(project.path());
}

/// The outcome lines of a client run, after the connection line, by step.
fn outcomes(lines: &[Value]) -> &[Value] {
    assert!(lines[0].get("connected").is_some(), "{lines:?}");
    &lines[1..]
}

fn text_of(result: &Value) -> String {
    result["content"]
        .as_array()
        .expect("content")
        .iter()
        .filter_map(|c| c["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn an_upstreams_progress_logs_sampling_and_elicitation_reach_the_client() {
    let project = project_with_fixture();
    let mut plan = project.stdio_plan(
        &["mcp"],
        json!([
            {"op": "set_level", "level": "debug"},
            {"op": "call", "name": "conformance__test_tool_with_progress", "progress": true},
            {"op": "call", "name": "conformance__test_tool_with_logging"},
            {"op": "wait_logs", "count": 3, "timeout": 5},
            {"op": "call", "name": "conformance__test_sampling",
             "arguments": {"prompt": "What is toolmux?"}},
            {"op": "call", "name": "conformance__test_elicitation",
             "arguments": {"message": "Who are you?"}},
        ]),
    );
    plan["sampling"] = json!("A tool hub.");
    plan["elicitation"] = json!([{"username": "ann", "email": "ann@example.com"}]);
    let lines = run_mcp_client(&plan);
    let steps = outcomes(&lines);
    let connected = &lines[0]["connected"]["capabilities"];
    assert!(connected["prompts"].is_object(), "{connected}");
    assert_eq!(connected["resources"]["subscribe"], true, "{connected}");
    assert!(connected["completions"].is_object(), "{connected}");

    let progress = &steps[1];
    assert_eq!(progress["result"]["isError"], false, "{progress}");
    let updates: Vec<f64> = progress["progress"]
        .as_array()
        .expect("progress updates")
        .iter()
        .map(|p| p["progress"].as_f64().expect("a number"))
        .collect();
    assert_eq!(updates, [0.0, 50.0, 100.0], "{progress}");
    assert_eq!(progress["progress"][2]["total"], 100.0);
    assert_eq!(progress["progress"][0]["message"], "Completed step 1 of 3");

    let logs = steps[3]["logs"].as_array().expect("logs");
    let relayed: Vec<&str> = logs
        .iter()
        .filter(|l| l["logger"] == "conformance_fixture")
        .filter_map(|l| l["data"].as_str())
        .collect();
    assert_eq!(
        relayed,
        [
            "Tool execution started",
            "Tool processing data",
            "Tool execution completed"
        ],
        "{logs:?}"
    );

    let sampled = text_of(&steps[4]["result"]);
    assert!(sampled.contains("A tool hub."), "{sampled}");
    let elicited = text_of(&steps[5]["result"]);
    assert!(
        elicited.contains("action=accept") && elicited.contains("ann@example.com"),
        "{elicited}"
    );

    let done = &lines[lines.len() - 1]["done"];
    assert_eq!(
        done["samplings"][0]["messages"][0]["content"]["text"], "What is toolmux?",
        "{done}"
    );
    assert_eq!(done["elicitations"][0]["message"], "Who are you?", "{done}");
    assert_no_process_left(project.path());
}

#[test]
fn an_upstreams_prompts_resources_and_completions_are_served_namespaced() {
    let project = project_with_fixture();
    let lines = run_mcp_client(&project.stdio_plan(
        &["mcp"],
        json!([
            {"op": "prompts"},
            {"op": "get_prompt", "name": "conformance__test_prompt_with_arguments",
             "arguments": {"arg1": "first", "arg2": "second"}},
            {"op": "get_prompt", "name": "test_simple_prompt"},
            {"op": "resources"},
            {"op": "read", "uri": "test://static-text"},
            {"op": "read", "uri": "test://template/42/data"},
            {"op": "read", "uri": "test://nowhere"},
            {"op": "complete", "ref": {"type": "ref/prompt",
             "name": "conformance__test_prompt_with_arguments"},
             "argument": {"name": "arg1", "value": "te"}},
            {"op": "complete", "ref": {"type": "ref/resource", "uri": "test://template/{id}/data"},
             "argument": {"name": "id", "value": "1"}},
            {"op": "subscribe", "uri": "test://watched-resource"},
            {"op": "call", "name": "conformance__test_update_watched_resource"},
            {"op": "wait_updated", "uri": "test://watched-resource", "timeout": 5},
            {"op": "unsubscribe", "uri": "test://watched-resource"},
            {"op": "call", "name": "conformance__test_update_watched_resource"},
            {"op": "wait_updated", "uri": "test://watched-resource", "timeout": 1},
        ]),
    ));
    let steps = outcomes(&lines);
    let prompts: Vec<&str> = steps[0]["prompts"]
        .as_array()
        .expect("prompts")
        .iter()
        .filter_map(|p| p["name"].as_str())
        .collect();
    for name in [
        "conformance__test_simple_prompt",
        "conformance__test_prompt_with_arguments",
        "conformance__test_prompt_with_embedded_resource",
        "conformance__test_prompt_with_image",
    ] {
        assert!(prompts.contains(&name), "{name} missing from {prompts:?}");
    }
    let filled = steps[1]["prompt"].to_string();
    assert!(
        filled.contains("first") && filled.contains("second"),
        "{filled}"
    );
    // The server's own name is not served when prompts are namespaced.
    assert_eq!(steps[2]["error"]["code"], -32602, "{}", steps[2]);

    let uris: Vec<&str> = steps[3]["resources"]
        .as_array()
        .expect("resources")
        .iter()
        .filter_map(|r| r["uri"].as_str())
        .collect();
    assert!(uris.contains(&"test://static-text"), "{uris:?}");
    assert_eq!(
        steps[3]["templates"][0]["uriTemplate"],
        "test://template/{id}/data"
    );
    // Named like tools, with the server's own name kept as the title.
    let template = &steps[3]["templates"][0];
    let title = template["title"].as_str().expect("a title");
    assert_eq!(
        template["name"],
        format!("conformance__{title}"),
        "{template}"
    );
    assert_eq!(steps[4]["contents"][0]["uri"], "test://static-text");
    assert!(
        steps[4]["contents"][0]["text"]
            .as_str()
            .is_some_and(|t| !t.is_empty())
    );
    assert!(
        steps[5]["contents"][0]["text"]
            .as_str()
            .is_some_and(|t| t.contains("42")),
        "{}",
        steps[5]
    );
    assert_eq!(steps[6]["error"]["code"], -32002, "{}", steps[6]);
    assert!(
        steps[6]["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("test://nowhere"))
    );
    assert!(
        steps[7]["completion"]["values"]
            .as_array()
            .is_some_and(|v| !v.is_empty()),
        "{}",
        steps[7]
    );
    assert!(
        steps[8]["completion"]["values"].as_array().is_some(),
        "{}",
        steps[8]
    );
    assert_eq!(steps[9]["ok"], true, "{}", steps[9]);
    assert_eq!(
        steps[11]["updated"], true,
        "subscribed changes reach the client"
    );
    assert_eq!(steps[12]["ok"], true, "{}", steps[12]);
    assert_eq!(
        steps[14]["updated"], false,
        "no change notice after unsubscribing"
    );
    assert_no_process_left(project.path());
}

#[test]
fn serve_time_filters_and_a_denied_server_narrow_the_relayed_prompts_and_resources() {
    let project = project_with_fixture();
    let names = |listed: &Value, key: &str| -> Vec<String> {
        listed[key]
            .as_array()
            .unwrap_or_else(|| panic!("{key} in {listed}"))
            .iter()
            .filter_map(|p| p["name"].as_str().map(str::to_string))
            .collect()
    };

    // `--exclude` applies to prompts and resources by their registry names, as to tools.
    let steps = run_mcp_steps(&project.stdio_plan(
        &[
            "mcp",
            "--exclude",
            "conformance__test_simple_prompt",
            "--exclude",
            "conformance__template*",
        ],
        json!([
            {"op": "prompts"},
            {"op": "get_prompt", "name": "conformance__test_simple_prompt"},
            {"op": "resources"},
            {"op": "read", "uri": "test://template/42/data"},
            {"op": "read", "uri": "test://static-text"},
        ]),
    ));
    let prompts = names(&steps[0], "prompts");
    assert!(
        !prompts.contains(&"conformance__test_simple_prompt".to_string())
            && prompts.contains(&"conformance__test_prompt_with_arguments".to_string()),
        "{prompts:?}"
    );
    assert_eq!(steps[1]["error"]["code"], -32602, "{}", steps[1]);
    assert!(
        steps[2]["templates"].as_array().is_some_and(Vec::is_empty),
        "{}",
        steps[2]
    );
    assert_eq!(steps[3]["error"]["code"], -32002, "{}", steps[3]);
    assert!(steps[4]["contents"].is_array(), "{}", steps[4]);

    // Code mode offers two tools and nothing else.
    let steps = run_mcp_steps(&project.stdio_plan(
        &["mcp", "--code-mode"],
        json!([{"op": "prompts"}, {"op": "resources"}]),
    ));
    assert!(names(&steps[0], "prompts").is_empty(), "{}", steps[0]);
    assert!(names(&steps[1], "resources").is_empty(), "{}", steps[1]);

    // A server whose configuration denies all its tools relays nothing either.
    project.config(
        &json!({"mcpServers": {"conformance": {
            "command": python(),
            "args": [peer_file("mcp/conformance_fixture.py")],
            "policy": "deny",
        }}})
        .to_string(),
    );
    let steps = run_mcp_steps(&project.stdio_plan(
        &["mcp"],
        json!([{"op": "prompts"}, {"op": "read", "uri": "test://static-text"}]),
    ));
    assert!(names(&steps[0], "prompts").is_empty(), "{}", steps[0]);
    assert_eq!(steps[1]["error"]["code"], -32002, "{}", steps[1]);
    assert_no_process_left(project.path());
}

/// Issue 26 (names): `toolmux mcp` both served MCP and managed servers. `toolmux mcp serve`
/// names the first job, with the same filters as the bare `toolmux mcp` that agents'
/// configurations already hold, which stays; `toolmux mcp list|add|…` keep the second.
#[test]
fn mcp_serve_is_the_bare_mcp_command_by_name() {
    let project = project_with_files();
    let steps = json!([{"op": "list"}]);
    let named = run_mcp_client(&project.stdio_plan(
        &[
            "mcp",
            "serve",
            "--tools",
            "file_*",
            "--exclude",
            "file_search",
        ],
        steps.clone(),
    ));
    let bare = run_mcp_client(&project.stdio_plan(
        &["mcp", "--tools", "file_*", "--exclude", "file_search"],
        steps,
    ));
    assert_eq!(names(&named[1]), names(&bare[1]));
    assert!(names(&named[1]).contains(&"file_read"), "{}", named[1]);
    assert!(!names(&named[1]).contains(&"file_search"), "{}", named[1]);
    let help = project.run(&["mcp", "--help"]).ok();
    for subcommand in ["serve", "list", "add"] {
        assert!(
            help.lines()
                .any(|line| line.trim_start().starts_with(subcommand)),
            "{subcommand} missing from:\n{help}"
        );
    }
}
