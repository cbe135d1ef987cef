//! Coding sessions through the real binary, with fake runners (the scripts under
//! `crates/toolmux-sessions/tests/fixtures/bin`, configured as the built-in `claude`): the live
//! log in the terminal and over server-sent events, parity of the channels (a session started
//! over MCP, REST and the CLI shows in `list_sessions` on each), and a toolmux process killed
//! mid-run, whose session the next start marks `lost`.

#[path = "support/sessions.rs"]
mod sessions_support;
mod support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use sessions_support::{call_run_session, fake, project};
use support::toolmux_project;
use toolmux_testkit::http::Response;
use toolmux_testkit::processes::{processes_with_env, wait_bounded};
use toolmux_testkit::project::TestProject;
use toolmux_testkit::python_client::run_mcp_steps;
use toolmux_testkit::served::Served;

/// The processes whose environment names session `id`.
fn processes_of(id: &str) -> Vec<u32> {
    processes_with_env(&format!("TOOLMUX_SESSION_ID={id}"))
}

fn sessions_json(project: &TestProject) -> Value {
    let run = project.run(&["sessions", "list", "--json"]);
    assert!(run.0.status.success(), "{}", run.stderr());
    serde_json::from_str(&run.stdout()).expect("JSON")
}

#[test]
fn sessions_run_shows_the_log_live_in_the_terminal() {
    let project = project();
    let mut child = project
        .cmd()
        .args(["sessions", "run", "claude", "slow", "--timeout", "3s"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start toolmux sessions run");
    let started = Instant::now();
    let mut out = BufReader::new(child.stdout.take().expect("stdout"));
    let mut first = String::new();
    out.read_line(&mut first).expect("read");
    assert_eq!(first.trim(), "tick 1");
    // Live: the first line arrives while the runner still runs, well before its limit.
    assert!(
        started.elapsed() < Duration::from_millis(2500),
        "{:?}",
        started.elapsed()
    );
    assert!(
        child.try_wait().expect("try_wait").is_none(),
        "still running"
    );
    let mut rest = String::new();
    out.read_to_string(&mut rest).expect("read");
    let status = wait_bounded(&mut child, Duration::from_secs(30));
    let mut err = String::new();
    child
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut err)
        .expect("stderr");
    assert_eq!(
        status.code(),
        Some(1),
        "a session past its limit failed:\n{err}"
    );
    assert!(rest.contains("tick 5"), "{rest}");
    assert!(
        err.contains("failed") && err.contains("time limit"),
        "{err}"
    );
    let list = sessions_json(&project);
    assert_eq!(list["sessions"][0]["status"], "failed");
    assert_eq!(list["sessions"][0]["channel"], "cli");
}

/// Reads server-sent events from `GET path` as they come, calling `each` with every
/// `(event, data)`; returns them all once the stream ends.
fn read_events(
    served: &Served,
    path: &str,
    mut each: impl FnMut(&str, &Value),
) -> Vec<(String, Value)> {
    let mut stream = TcpStream::connect(&served.address).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {}\r\nAuthorization: {}\r\nConnection: close\r\n\r\n",
        served.address,
        served.authorization()
    )
    .expect("send");
    let mut reader = BufReader::new(stream);
    let mut events = Vec::new();
    let mut event = String::new();
    let mut line = String::new();
    let mut head = true;
    loop {
        line.clear();
        if reader.read_line(&mut line).expect("read") == 0 {
            break;
        }
        let l = line.trim_end();
        if head {
            if l.starts_with("HTTP/1.1") {
                assert!(l.contains(" 200 "), "{l}");
            }
            head = !l.is_empty();
            continue;
        }
        // Chunk sizes of the chunked encoding are not `field: value` lines; skipped.
        if let Some(name) = l.strip_prefix("event: ") {
            event = name.to_string();
        } else if let Some(data) = l.strip_prefix("data: ") {
            let data: Value = serde_json::from_str(data).expect("JSON data");
            each(&event, &data);
            events.push((event.clone(), data));
        }
    }
    events
}

#[test]
fn the_rest_stream_sends_each_line_live_then_the_final_status() {
    let project = project();
    let served = Served::start(&project, &[]);
    let (created, id) = start_over_rest(&served, json!({"runner": "claude", "prompt": "slow"}));
    assert_eq!(
        created.header("location"),
        Some(format!("/api/sessions/{id}").as_str())
    );
    let mut cancelled = false;
    let events = read_events(
        &served,
        &format!("/api/sessions/{id}/stream"),
        |event, data| {
            if event == "log" && data["text"] == "tick 2" && !cancelled {
                // Live: the line came while the session runs; cancelling ends the stream.
                let now = served.send("GET", &format!("/api/sessions/{id}"), None);
                assert_eq!(now.json()["status"], "running");
                let answer = served.send("POST", &format!("/api/sessions/{id}/cancel"), None);
                assert_eq!(answer.status, 200, "{}", answer.body);
                cancelled = true;
            }
        },
    );
    assert!(cancelled, "{events:?}");
    let ticks: Vec<&str> = events
        .iter()
        .filter(|(e, d)| e == "log" && d["stream"] == "stdout")
        .filter_map(|(_, d)| d["text"].as_str())
        .collect();
    assert_eq!(&ticks[..2], ["tick 1", "tick 2"]);
    let (last, status) = events.last().expect("events");
    assert_eq!(last, "status");
    assert_eq!(status["status"], "cancelled");
    assert!(status["durationMs"].is_u64(), "{status}");
    assert!(status.get("exitCode").is_some(), "{status}");
    assert!(processes_of(&id).is_empty(), "{:?}", processes_of(&id));
    // The log is also there a page at a time, and an unknown session is a 404.
    let page = served.send("GET", &format!("/api/sessions/{id}/logs?limit=2"), None);
    assert_eq!(page.json()["entries"].as_array().map(Vec::len), Some(2));
    assert_eq!(page.json()["more"], true);
    served
        .send("GET", "/api/sessions/no-such-session/stream", None)
        .error(404, "not_found");
    let runners = served.send("GET", "/api/runners", None);
    assert_eq!(runners.status, 200);
    assert!(
        runners.json()["runners"]
            .as_array()
            .is_some_and(|r| r.iter().any(|r| r["name"] == "codex"))
    );
    served.stop();
}

#[test]
fn a_session_started_on_any_channel_is_listed_on_every_channel() {
    let project = project();
    let served = Served::start(&project, &[]);
    // MCP.
    let mcp = run_mcp_steps(&json!({
        "transport": "http",
        "url": served.mcp_url(),
        "headers": {"Authorization": served.authorization()},
        "steps": [{"op": "call", "name": "run_session", "arguments": {"runner": "claude", "prompt": "from mcp"}}],
    }));
    let mcp_id = mcp[0]["result"]["structuredContent"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("{mcp:?}"))
        .to_string();
    // REST.
    let (_, rest_id) = start_over_rest(&served, json!({"runner": "claude", "prompt": "from rest"}));
    // The CLI (another toolmux process, which runs its session to the end).
    let cli = project.run(&["sessions", "run", "claude", "from cli"]);
    assert!(cli.0.status.success(), "{}", cli.stderr());
    let cli_list = sessions_json(&project);
    let cli_id = cli_list["sessions"]
        .as_array()
        .and_then(|s| s.iter().find(|s| s["channel"] == "cli"))
        .and_then(|s| s["id"].as_str())
        .expect("the CLI's session")
        .to_string();
    let ids = |list: &Value| -> Vec<String> {
        list["sessions"]
            .as_array()
            .map(|s| {
                s.iter()
                    .filter_map(|s| s["id"].as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    };
    let over_rest = served.send("GET", "/api/sessions", None).json();
    let over_mcp = run_mcp_steps(&json!({
        "transport": "http",
        "url": served.mcp_url(),
        "headers": {"Authorization": served.authorization()},
        "steps": [{"op": "call", "name": "list_sessions", "arguments": {}}],
    }));
    let over_mcp = over_mcp[0]["result"]["structuredContent"].clone();
    for id in [&mcp_id, &rest_id, &cli_id] {
        for (channel, list) in [("rest", &over_rest), ("mcp", &over_mcp), ("cli", &cli_list)] {
            let listed = if channel == "cli" {
                ids(&sessions_json(&project))
            } else {
                ids(list)
            };
            assert!(
                listed.contains(id),
                "{id} not listed over {channel}: {listed:?}"
            );
        }
    }
    served.stop();
}

/// Issue 29: a session started by a one-shot process is not killed when that process is done
/// with its answer. `tools call run_session` prints the session, says on stderr that it waits
/// for it, and exits once the session has ended, recorded `completed` (it was `lost`: the
/// process exited under its supervision). The same holds for `toolmux mcp` over stdio whose
/// client closed it, through the same `Assembly::finish_sessions`.
#[test]
fn a_session_started_by_a_one_shot_call_runs_to_its_end() {
    let project = project();
    let (id, stderr) = call_run_session(&project, "pause");
    assert_eq!(
        stderr,
        format!(
            "toolmux: waiting for 1 coding session(s) to finish before exiting ({id}); Ctrl-C \
             cancels them\n"
        )
    );
    let list = sessions_json(&project);
    assert_eq!(list["sessions"][0]["id"], id.as_str(), "{list}");
    assert_eq!(list["sessions"][0]["status"], "completed", "{list}");
    let logs = project.run(&["sessions", "logs", &id]);
    assert!(
        logs.stdout().contains("done after a pause"),
        "{}",
        logs.stdout()
    );
}

/// The `serve` process named in the project's `serve.json`, where a running `serve` publishes
/// itself for hand-offs.
fn serve_pid(project: &TestProject) -> u64 {
    let path = project.path().join(".toolmux/state/serve.json");
    let published: Value =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("serve.json")).expect("JSON");
    published["owner"]["pid"]
        .as_u64()
        .unwrap_or_else(|| panic!("{published}"))
}

/// Waits until session `id` is `completed` (recorded by whichever process runs it) and returns
/// its record.
fn completed(project: &TestProject, id: &str) -> Value {
    let mut record = Value::Null;
    toolmux_testkit::eventually::wait_until("the session to complete", || {
        let list = sessions_json(project);
        record = list["sessions"]
            .as_array()
            .and_then(|all| all.iter().find(|s| s["id"] == id))
            .cloned()
            .unwrap_or(Value::Null);
        record["status"] == "completed"
    });
    record
}

/// Issue 29, the hand-off: with the project's `serve` running, `tools call run_session` hands
/// the session to it. The one-shot process says so, exits without waiting (nothing of its own
/// runs), and the session runs to its end under `serve`, whose process owns its record.
#[test]
fn a_one_shot_call_hands_its_session_to_the_running_serve() {
    let project = project();
    let served = Served::start(&project, &[]);
    let serve = serve_pid(&project);
    let (id, stderr) = call_run_session(&project, "pause");
    assert_eq!(
        stderr,
        format!(
            "toolmux: handing the session to `toolmux serve` (pid {serve}, {address}); if its \
             policy asks about `run_session`, answer in its web app\n\
             toolmux: session {id} handed to `toolmux serve` (pid {serve}, {address}); it runs \
             there after this process exits\n",
            address = served.address
        )
    );
    let record = completed(&project, &id);
    assert_eq!(record["owner"]["pid"], serve, "{record}");
    let logs = project.run(&["sessions", "logs", &id]);
    assert!(
        logs.stdout().contains("done after a pause"),
        "{}",
        logs.stdout()
    );
    served.stop();
    // A clean stop takes the entry away: the next one-shot runs its sessions itself.
    assert!(!project.path().join(".toolmux/state/serve.json").exists());
}

/// The same through `toolmux mcp` over stdio, driven by the Python SDK's client, which closes
/// the server's stdin after its last step and kills it two seconds later: the session it
/// started was `lost` with it; handed to `serve`, it completes after the stdio server is gone.
#[test]
fn a_session_started_over_stdio_outlives_the_stdio_server_in_serve() {
    let project = project();
    let served = Served::start(&project, &[]);
    let serve = serve_pid(&project);
    let steps = run_mcp_steps(&project.stdio_plan(
        &["mcp"],
        json!([{"op": "call", "name": "run_session", "arguments": {"runner": "claude", "prompt": "pause"}}]),
    ));
    let id = steps[0]["result"]["structuredContent"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("{steps:?}"))
        .to_string();
    let record = completed(&project, &id);
    assert_eq!(record["owner"]["pid"], serve, "{record}");
    served.stop();
}

#[test]
fn a_toolmux_killed_mid_run_leaves_a_session_the_next_start_marks_lost() {
    let project = project();
    let mut child = project
        .cmd()
        .args(["sessions", "run", "claude", "slow"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start");
    let mut out = BufReader::new(child.stdout.take().expect("stdout"));
    let mut first = String::new();
    out.read_line(&mut first).expect("read");
    assert_eq!(first.trim(), "tick 1");
    let list = sessions_json(&project);
    let id = list["sessions"][0]["id"].as_str().expect("id").to_string();
    assert_eq!(list["sessions"][0]["status"], "running");
    child.kill().expect("SIGKILL toolmux");
    let _ = child.wait();
    let list = sessions_json(&project);
    assert_eq!(list["sessions"][0]["id"], id.as_str());
    assert_eq!(list["sessions"][0]["status"], "lost", "{list}");
    // What the dead process left running was stopped by the next start.
    let deadline = Instant::now() + Duration::from_secs(5);
    while !processes_of(&id).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(processes_of(&id).is_empty(), "{:?}", processes_of(&id));
}

#[test]
fn run_session_asks_first_and_the_approval_shows_the_command_line() {
    let project = toolmux_project();
    project.config(
        &json!({"runners": {"claude": {"command": fake("claude").display().to_string()}}})
            .to_string(),
    );
    let served = Served::start(&project, &[]);
    let address = served.address.clone();
    let auth = served.authorization();
    let waiting = std::thread::spawn(move || {
        toolmux_testkit::http::request(
            &address,
            "POST",
            "/api/sessions",
            &[
                ("Authorization", &auth),
                ("Content-Type", "application/json"),
            ],
            Some(&json!({"runner": "claude", "prompt": "fix the bug"}).to_string()),
        )
    });
    let mut pending = Value::Null;
    toolmux_testkit::eventually::wait_until("the session's approval", || {
        pending = served.send("GET", "/api/approvals", None).json();
        pending["approvals"]
            .as_array()
            .is_some_and(|a| !a.is_empty())
            || pending.as_array().is_some_and(|a| !a.is_empty())
    });
    let text = pending.to_string();
    assert!(text.contains("fix the bug"), "{text}");
    assert!(text.contains("--output-format stream-json"), "{text}");
    assert!(text.contains("runner:    claude"), "{text}");
    // A denial reaches the caller, and no session was started.
    let id = pending["approvals"][0]["id"]
        .as_str()
        .expect("id")
        .to_string();
    let answered = served.send(
        "POST",
        &format!("/api/approvals/{id}"),
        Some(r#"{"decision": "deny", "reason": "not now"}"#),
    );
    assert!(answered.status < 300, "{}", answered.body);
    let refused = waiting.join().expect("the request's answer");
    assert!(refused.status >= 400, "{}", refused.body);
    assert_eq!(served.send("GET", "/api/sessions", None).json()["count"], 0);
    served.stop();
}

/// The ids in a `list_sessions` result.
/// Starts a session with `POST /api/sessions`; returns the answer, a 201, and the session's id.
fn start_over_rest(served: &Served, request: Value) -> (Response, String) {
    let created = served.send("POST", "/api/sessions", Some(&request.to_string()));
    assert_eq!(created.status, 201, "{}", created.body);
    let id = created.json()["id"].as_str().expect("id").to_string();
    (created, id)
}

fn listed_ids(list: &Value) -> Vec<String> {
    list["sessions"]
        .as_array()
        .map(|s| {
            s.iter()
                .filter_map(|s| s["id"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn a_session_started_from_the_chat_or_code_mode_is_listed_everywhere_and_lists_the_others() {
    // The chat's model (aimock) starts a session, then lists the sessions.
    let aimock = toolmux_testkit::aimock::Aimock::serving(json!([
        {"match": {"userMessage": "Start a coding session", "hasToolResult": false},
         "response": {"toolCalls": [{"id": "call_run", "name": "run_session",
             "arguments": json!({"runner": "claude", "prompt": "from chat"}).to_string()}]}},
        {"match": {"toolCallId": "call_run", "toolResultContains": "claude"},
         "response": {"toolCalls": [{"id": "call_list", "name": "list_sessions", "arguments": "{}"}]}},
        {"match": {"toolCallId": "call_list"},
         "response": {"content": "Started and listed."}},
    ]));
    let project = toolmux_project();
    project.config(
        &json!({
            "runners": {"claude": {"command": fake("claude").display().to_string()}},
            "policies": {"tools": {"run_session": "allow"}},
            "providers": {"mock": aimock.openai_provider()},
        })
        .to_string(),
    );
    let served = Served::start(&project, &[]);
    // One session over REST first, for the others to list.
    let (_, rest_id) = start_over_rest(&served, json!({"runner": "claude", "prompt": "from rest"}));

    // Code mode: a script starts one and lists them all.
    let script = "import { sessions } from '@capabilities/sessions';\n\
        const started = await sessions.runSession({ runner: 'claude', prompt: 'from code' });\n\
        const listed = await sessions.listSessions({});\n\
        return { id: started.id, ids: listed.sessions.map((s) => s.id) };";
    let code = served.post(
        "/api/tools/run_code/call",
        &json!({ "code": script }).to_string(),
    );
    assert_eq!(code.status, 200, "{}", code.body);
    let code = code.json()["structuredContent"]["result"].clone();
    let code_id = code["id"]
        .as_str()
        .unwrap_or_else(|| panic!("{code}"))
        .to_string();
    let code_listed: Vec<&str> = code["ids"]
        .as_array()
        .expect("ids")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(code_listed.contains(&rest_id.as_str()), "{code}");
    assert!(code_listed.contains(&code_id.as_str()), "{code}");

    // The chat, in the terminal: its model starts one and lists them.
    let chat = project.run(&["chat", "Start a coding session, then list the sessions"]);
    assert_eq!(chat.ok().trim(), "Started and listed.");
    let conversations: Value =
        serde_json::from_str(&project.run(&["chat", "list", "--json"]).ok()).expect("JSON");
    let conversation = conversations[0]["id"].as_str().expect("a conversation");
    let shown: Value =
        serde_json::from_str(&project.run(&["chat", "show", conversation]).ok()).expect("JSON");
    let shown = shown.to_string();
    let over_rest = served.send("GET", "/api/sessions", None).json();
    let chat_id = over_rest["sessions"]
        .as_array()
        .and_then(|s| s.iter().find(|s| s["channel"] == "chat"))
        .and_then(|s| s["id"].as_str())
        .unwrap_or_else(|| panic!("no session from the chat in {over_rest}"))
        .to_string();
    // What the chat's list_sessions answered its model names the others.
    for id in [&rest_id, &code_id, &chat_id] {
        assert!(
            shown.contains(id.as_str()),
            "{id} not in the chat's list: {shown}"
        );
    }

    // And every channel lists every session.
    let over_rest = listed_ids(&served.send("GET", "/api/sessions", None).json());
    let over_mcp = run_mcp_steps(&json!({
        "transport": "http",
        "url": served.mcp_url(),
        "headers": {"Authorization": served.authorization()},
        "steps": [{"op": "call", "name": "list_sessions", "arguments": {}}],
    }));
    let over_mcp = listed_ids(&over_mcp[0]["result"]["structuredContent"]);
    let over_cli = listed_ids(&sessions_json(&project));
    for id in [&rest_id, &code_id, &chat_id] {
        for (channel, listed) in [("rest", &over_rest), ("mcp", &over_mcp), ("cli", &over_cli)] {
            assert!(
                listed.contains(id),
                "{id} not listed over {channel}: {listed:?}"
            );
        }
    }
    served.stop();
}

#[test]
fn a_server_that_stops_cancels_its_sessions_and_records_them_so() {
    let project = project();
    let served = Served::start(&project, &[]);
    let (_, id) = start_over_rest(&served, json!({"runner": "claude", "prompt": "slow"}));
    let deadline = Instant::now() + Duration::from_secs(20);
    while processes_of(&id).is_empty() {
        assert!(Instant::now() < deadline, "the runner never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    // SIGTERM: the server stops as a person's Ctrl-C or a service manager would stop it.
    served.stop();
    let list = sessions_json(&project);
    let session = list["sessions"]
        .as_array()
        .and_then(|s| s.iter().find(|s| s["id"] == id.as_str()))
        .unwrap_or_else(|| panic!("{id} not in {list}"));
    assert_eq!(session["status"], "cancelled", "{session}");
    assert!(
        processes_of(&id).is_empty(),
        "the runner outlived the server"
    );
}

#[test]
fn an_acp_agents_permission_request_is_answered_over_rest_and_a_denial_reaches_it() {
    let project = toolmux_project();
    project.config(
        &json!({
            "runners": {"agent": {"command": toolmux_testkit::peers::acp_test_agent().display().to_string(),
                                  "args": [], "protocol": "acp"}},
            "policies": {"tools": {"run_session": "allow"}},
        })
        .to_string(),
    );
    let served = Served::start(&project, &[]);
    let (_, id) = start_over_rest(
        &served,
        json!({"runner": "agent", "prompt": "say hello\nwrite out.txt from the agent"}),
    );
    // The agent's write waits among the approvals, as any call's would.
    let deadline = Instant::now() + Duration::from_secs(30);
    let approval = loop {
        let pending = served.get("/api/approvals").json();
        if let Some(first) = pending["approvals"].as_array().and_then(|a| a.first()) {
            break first.clone();
        }
        assert!(Instant::now() < deadline, "no permission request appeared");
        std::thread::sleep(Duration::from_millis(50));
    };
    let approval_id = approval["id"].as_str().expect("approval id");
    let answered = served.post(
        &format!("/api/approvals/{approval_id}"),
        &json!({"decision": "deny", "reason": "not today"}).to_string(),
    );
    assert!(answered.status < 300, "{}", answered.body);
    // The session ends; the agent said the denial reached it, and wrote nothing.
    let deadline = Instant::now() + Duration::from_secs(30);
    let session = loop {
        let now = served
            .send("GET", &format!("/api/sessions/{id}"), None)
            .json();
        if now["status"] != "running" && now["status"] != "pending" {
            break now;
        }
        assert!(Instant::now() < deadline, "the session never ended: {now}");
        std::thread::sleep(Duration::from_millis(50));
    };
    let logs = served
        .send("GET", &format!("/api/sessions/{id}/logs"), None)
        .json()
        .to_string();
    assert!(
        logs.contains("permission denied: not writing out.txt"),
        "the denial did not reach the agent ({session}): {logs}"
    );
    assert!(logs.contains("not today"), "{logs}");
    assert!(!project.path().join("out.txt").exists());
    served.stop();
}

#[test]
fn a_hostile_session_request_over_rest_cannot_steer_the_runner() {
    let project = toolmux_project();
    project.config(
        &json!({
            "runners": {"codex": {"command": fake("codex").display().to_string()}},
            "policies": {"tools": {"run_session": "allow"}},
        })
        .to_string(),
    );
    std::fs::create_dir_all(project.path().join(".git")).expect(".git");
    let served = Served::start(&project, &[]);
    // D35: the finding's request; the fake codex reads its command line as clap does.
    let prompt = "--dangerously-bypass-approvals-and-sandbox";
    let (_, id) = start_over_rest(&served, json!({"runner": "codex", "prompt": prompt}));
    toolmux_testkit::eventually::wait_until("the session's end", || {
        served
            .send("GET", &format!("/api/sessions/{id}"), None)
            .json()["status"]
            == "completed"
    });
    let logs = served
        .send("GET", &format!("/api/sessions/{id}/logs"), None)
        .json();
    let argv = logs["entries"]
        .as_array()
        .and_then(|e| e.iter().find(|e| e["json"]["type"] == "argv"))
        .map(|e| e["json"].clone())
        .unwrap_or_else(|| panic!("no argv event: {logs}"));
    assert_eq!(argv["prompt"], prompt, "{argv}");
    assert!(
        !argv["options"]
            .as_array()
            .is_some_and(|o| o.iter().any(|o| o == prompt)),
        "{argv}"
    );
    // D36, D37 and the branch: refused before anything runs (or anyone is asked).
    for (request, what) in [
        (
            json!({"runner": "codex", "prompt": "hi", "env": {"LD_PRELOAD": "/tmp/evil.so"}}),
            "env.LD_PRELOAD",
        ),
        (
            json!({"runner": "codex", "prompt": "hi", "env": {"NODE_OPTIONS": "--require x.js"}}),
            "env.NODE_OPTIONS",
        ),
        (
            json!({"runner": "codex", "prompt": "hi", "cwd": ".toolmux/state"}),
            ".toolmux",
        ),
        (
            json!({"runner": "codex", "prompt": "hi", "cwd": ".git"}),
            ".git",
        ),
        (
            json!({"runner": "codex", "prompt": "hi", "worktree": true, "branch": "--force"}),
            "not a branch name",
        ),
    ] {
        let refused = served.send("POST", "/api/sessions", Some(&request.to_string()));
        let error = refused.error(422, "invalid");
        assert!(
            error["message"].as_str().is_some_and(|m| m.contains(what)),
            "{what}: {error}"
        );
    }
    // An allowlist, not a denylist: a variable no list of dangerous names had (`less` runs
    // `LESSOPEN`'s command on every file it shows), refused the same over REST and MCP.
    let lessopen = "`env.LESSOPEN` is refused: runner `codex` accepts only CI FORCE_COLOR \
                    NO_COLOR from a call; a project that needs `LESSOPEN` lists it in \
                    `runners.codex.acceptEnv` (or sets its value in `runners.codex.env`) in \
                    .toolmux/config.json";
    let request = json!({"runner": "codex", "prompt": "hi", "env": {"LESSOPEN": "|/tmp/x %s"}});
    let refused = served.send("POST", "/api/sessions", Some(&request.to_string()));
    assert_eq!(
        refused.json(),
        json!({"error": {"code": "invalid", "message": lessopen, "details": {}}}),
        "{}",
        refused.body
    );
    let over_mcp = run_mcp_steps(&json!({
        "transport": "http",
        "url": served.mcp_url(),
        "headers": {"Authorization": served.authorization()},
        "steps": [{"op": "call", "name": "run_session", "arguments": request}],
    }));
    assert_eq!(over_mcp[0]["result"]["isError"], true, "{over_mcp:?}");
    assert_eq!(
        over_mcp[0]["result"]["content"],
        json!([{"type": "text", "text": lessopen}]),
        "{over_mcp:?}"
    );
    assert_eq!(served.send("GET", "/api/sessions", None).json()["count"], 1);
    served.stop();
}
