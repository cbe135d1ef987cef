//! `toolmux mcp` and `toolmux serve` driven by a real MCP client (the Python SDK from
//! `tests/peers/mcp/`) on a real temporary project.

mod support;

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::TestProject;

/// The Python interpreter and peers folder from `./scripts/test`. Missing peers fail the test:
/// a test that cannot reach its peer proves nothing.
fn peers() -> (PathBuf, PathBuf) {
    let python = std::env::var_os("TOOLMUX_TEST_PYTHON").map(PathBuf::from);
    let peers = std::env::var_os("TOOLMUX_PEERS").map(PathBuf::from);
    match (python, peers) {
        (Some(python), Some(peers)) if python.exists() && peers.join("mcp/client.py").exists() => {
            (python, peers)
        }
        _ => panic!(
            "the MCP peer tests need the Python MCP client: run ./scripts/test, or set \
             TOOLMUX_TEST_PYTHON to a python with `pip install -r tests/peers/mcp/requirements.txt` \
             and TOOLMUX_PEERS to the repository's tests/peers folder"
        ),
    }
}

/// Runs the Python client with a plan to its end; returns the JSON lines it printed.
fn run_client(plan: Value) -> Vec<Value> {
    let (python, peers) = peers();
    let mut child = Command::new(python)
        .arg(peers.join("mcp/client.py"))
        .arg(plan.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the Python MCP client");
    let status = wait_bounded(&mut child, Duration::from_secs(60));
    let mut stdout = String::new();
    let mut stderr = String::new();
    child
        .stdout
        .take()
        .expect("stdout")
        .read_to_string(&mut stdout)
        .expect("read stdout");
    child
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut stderr)
        .expect("read stderr");
    assert!(
        status.success(),
        "the Python client failed\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
    stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

/// Waits for a child, killing it (and failing) after `limit`.
fn wait_bounded(child: &mut Child, limit: Duration) -> std::process::ExitStatus {
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("poll the child") {
            return status;
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("a child process ran longer than {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A plan for the Python client that starts `toolmux mcp ARGS` in the project over stdio.
fn stdio_plan(project: &TestProject, args: &[&str], steps: Value) -> Value {
    let mut cmd_args = vec!["mcp"];
    cmd_args.extend_from_slice(args);
    json!({
        "transport": "stdio",
        "command": env!("CARGO_BIN_EXE_toolmux"),
        "args": cmd_args,
        "cwd": project.path(),
        "env": {
            "HOME": project.home.path(),
            "XDG_CONFIG_HOME": project.home.path().join(".config"),
        },
        "steps": steps,
    })
}

/// Processes whose working directory is `dir` (Linux: read from /proc): toolmux itself, and
/// the upstream servers it starts there.
fn processes_in(dir: &Path) -> Vec<(u32, String)> {
    let dir = dir.canonicalize().expect("canonical project dir");
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| {
            let proc_dir = PathBuf::from(format!("/proc/{pid}"));
            let cwd = std::fs::read_link(proc_dir.join("cwd")).ok()?;
            let cmdline = std::fs::read(proc_dir.join("cmdline")).ok()?;
            (cwd == dir).then(|| (pid, String::from_utf8_lossy(&cmdline).replace('\0', " ")))
        })
        .collect()
}

/// Fails when a process (toolmux, or a server it started) still runs in the project a moment
/// after its client left.
fn assert_no_server_left(project: &TestProject) {
    let started = Instant::now();
    loop {
        let left = processes_in(project.path());
        if left.is_empty() {
            return;
        }
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "toolmux processes left running: {left:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

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
    let project = TestProject::new();
    project.write("notes.txt", "first line\nthe needle is here\nlast line\n");
    project.write("src/lib.rs", "// no needle in here\nfn main() {}\n");
    project
}

#[test]
fn mcp_over_stdio_serves_the_workspace_tools_to_a_real_client() {
    let project = project_with_files();
    let lines = run_client(stdio_plan(
        &project,
        &[],
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
    // The client probed `server/discover`, was told the versions toolmux speaks, and fell back
    // to the `initialize` handshake.
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
    assert_no_server_left(&project);

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
    let lines = run_client(stdio_plan(
        &project,
        &[],
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
    let mut plan = stdio_plan(&project, &[], json!([call, call, call]));
    plan["elicitation"] = json!(["deny", "allow_session"]);
    let lines = run_client(plan);

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
    assert_no_server_left(&project);
}

#[test]
fn mcp_over_stdio_denies_ask_tools_with_a_hint_when_the_client_cannot_elicit() {
    let project = project_with_files();
    project.config(r#"{"policies": {"tools": {"grep": "ask"}}}"#);
    let lines = run_client(stdio_plan(
        &project,
        &[],
        json!([{"op": "call", "name": "grep", "arguments": {"pattern": "needle"}}]),
    ));
    assert_eq!(lines[1]["result"]["isError"], true);
    let message = text(&lines[1]);
    assert!(
        message.contains(r#""policies": {"tools": {"grep": "allow"}}"#),
        "{message}"
    );
    assert_no_server_left(&project);
}

#[test]
fn mcp_filters_and_pass_through_choose_the_served_tools() {
    let project = project_with_files();
    let lines = run_client(stdio_plan(
        &project,
        &["--tools", "file_*", "--exclude", "file_search"],
        json!([{"op": "list"}, {"op": "call", "name": "grep", "arguments": {"pattern": "x"}}]),
    ));
    assert_eq!(names(&lines[1]), ["file_read"]);
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
    let lines = run_client(stdio_plan(
        &project,
        &["--code-mode"],
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
    // toolmux speaks the handshake revisions only; the probe is answered with the versions it
    // supports, and the connection stays open for `initialize`.
    let discover = &by_id(0)["error"];
    assert_eq!(discover["code"], -32022, "{discover}");
    assert_eq!(
        discover["data"]["supported"],
        json!(["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"])
    );
    assert_eq!(by_id(1)["result"]["protocolVersion"], "2025-11-25");
    assert_eq!(by_id(2)["error"]["code"], -32601);
    assert_eq!(by_id(3)["result"], json!({}));
    assert_eq!(by_id(4)["result"], json!({}));
    assert_eq!(by_id(5)["result"]["isError"], false);
}

/// `toolmux serve` running in the background; killed on drop if a test fails early.
struct Served {
    child: Child,
    url: String,
}

impl Served {
    fn start(project: &TestProject, args: &[&str], env: &[(&str, &str)]) -> Self {
        let mut cmd = project.cmd();
        cmd.arg("serve")
            .args(["--port", "0"])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().expect("start toolmux serve");
        let mut stderr = BufReader::new(child.stderr.take().expect("stderr"));
        let mut line = String::new();
        stderr.read_line(&mut line).expect("read the first line");
        let url = line
            .trim()
            .strip_prefix("toolmux: serving MCP at ")
            .unwrap_or_else(|| panic!("unexpected first line: {line:?}"))
            .to_string();
        // Keep draining stderr so the server never blocks on a full pipe.
        std::thread::spawn(move || {
            let mut rest = String::new();
            let _ = stderr.read_to_string(&mut rest);
        });
        Self { child, url }
    }

    /// Sends SIGTERM and expects a clean exit.
    fn stop(mut self) {
        let pid = self.child.id().to_string();
        let sent = Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .expect("run kill");
        assert!(sent.success());
        let status = wait_bounded(&mut self.child, Duration::from_secs(10));
        assert!(status.success(), "toolmux serve exited with {status}");
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn serve_prints_its_url_and_serves_mcp_over_streamable_http() {
    let project = project_with_files();
    let served = Served::start(&project, &[], &[]);
    assert!(
        served.url.starts_with("http://127.0.0.1:") && served.url.ends_with("/mcp"),
        "{}",
        served.url
    );
    let lines = run_client(json!({
        "transport": "http",
        "url": served.url,
        "steps": [
            {"op": "list"},
            {"op": "call", "name": "file_read", "arguments": {"path": "notes.txt"}}
        ]
    }));
    assert_eq!(lines[0]["connected"]["protocolVersion"], "2025-11-25");
    assert!(names(&lines[1]).contains(&"grep"));
    assert!(text(&lines[2]).contains("the needle is here"));
    served.stop();
    assert_no_server_left(&project);

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
    let served = Served::start(
        &project,
        &["--api-key-env", "MY_TOOLMUX_KEY"],
        &[("MY_TOOLMUX_KEY", "k-123456")],
    );
    let lines = run_client(json!({
        "transport": "http",
        "url": served.url,
        "headers": {"Authorization": "Bearer k-123456"},
        "steps": [{"op": "list"}]
    }));
    assert!(names(&lines[1]).contains(&"file_read"));

    let port: u16 = served
        .url
        .trim_start_matches("http://127.0.0.1:")
        .trim_end_matches("/mcp")
        .parse()
        .expect("a port");
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

/// A command from the npm peers in `tests/peers/mcp/node_modules/.bin`.
fn node_peer(name: &str) -> PathBuf {
    let (_, peers) = peers();
    let bin = peers.join("mcp/node_modules/.bin").join(name);
    assert!(
        bin.exists(),
        "{} is missing: run ./scripts/test, or `npm ci` in tests/peers/mcp",
        bin.display()
    );
    bin
}

/// Runs the MCP Inspector CLI against `toolmux mcp` in the project; returns its JSON output.
fn inspector(project: &TestProject, method_args: &[&str]) -> Value {
    let output = Command::new(node_peer("mcp-inspector"))
        .current_dir(project.path())
        .env("HOME", project.home.path())
        .args(["--cli", "-e"])
        .arg(format!(
            "XDG_CONFIG_HOME={}",
            project.home.path().join(".config").display()
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
    assert_no_server_left(&project);
}

/// A project whose one upstream server is the conformance fixture (tests/peers/mcp), with its
/// tools, prompts and resources discovered.
fn project_with_fixture() -> TestProject {
    let project = project_with_files();
    let (python, peers) = peers();
    project.config(
        &json!({
            "mcpServers": {
                "conformance": {
                    "command": python,
                    "args": [peers.join("mcp/conformance_fixture.py")],
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
    let served = Served::start(&project, &["--pass-through", "conformance"], &[]);
    let (_, peers) = peers();
    let results = tempfile::tempdir().expect("a results folder");
    let mut child = Command::new(node_peer("conformance"))
        .args(["server", "--url", &served.url, "--expected-failures"])
        .arg(peers.join("mcp/conformance-baseline.yml"))
        .arg("-o")
        .arg(results.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run the conformance suite");
    let mut stdout = String::new();
    child
        .stdout
        .take()
        .expect("stdout")
        .read_to_string(&mut stdout)
        .expect("read stdout");
    let status = wait_bounded(&mut child, Duration::from_secs(300));
    let mut stderr = String::new();
    let _ = child
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut stderr);
    assert!(
        status.success(),
        "conformance failures beyond the baseline (or a stale baseline entry)\n{stdout}\n{stderr}"
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
    assert_no_server_left(&project);
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
    let mut plan = stdio_plan(
        &project,
        &[],
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
    let lines = run_client(plan);
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
    assert_no_server_left(&project);
}

#[test]
fn an_upstreams_prompts_resources_and_completions_are_served_namespaced() {
    let project = project_with_fixture();
    let lines = run_client(stdio_plan(
        &project,
        &[],
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
    assert_no_server_left(&project);
}
