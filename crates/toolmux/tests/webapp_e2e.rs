//! The web app end to end: Debian's chromium, driven by playwright-core
//! (`tests/peers/webapp/e2e.mjs`), uses the page that the real `toolmux serve` embeds, with
//! aimock as the model. Each test starts its own server and runs one flow of the script; the
//! test then checks what the flow left behind (the configuration on disk, the server's state
//! after a restart). Screenshots of every page are kept under
//! `$CARGO_TARGET_TMPDIR/webapp-e2e/<flow>/` (each test prints its folder).
//!
//! The flows share one browser binary on a small machine, so they run one at a time.

mod support;

use std::path::PathBuf;
use std::process::Command;
use std::sync::Mutex;

use serde_json::{Value, json};
use support::toolmux_project;
use toolmux_testkit::aimock::Aimock;
use toolmux_testkit::peers::{node_peer, peer_file};
use toolmux_testkit::project::TestProject;
use toolmux_testkit::served::Served;

/// One chromium at a time.
static BROWSER: Mutex<()> = Mutex::new(());

/// The answer of the long-stream benchmark: about 20,000 tokens of Markdown (some 80,000
/// characters), with code blocks, ending with a marker the script waits for.
fn long_answer() -> String {
    let mut text = String::new();
    let mut n = 0;
    while text.len() < 80_000 {
        n += 1;
        text.push_str(&format!(
            "## Part {n}\n\nThe release notes say the codename is **Bluefin**; part {n} walks \
             through `notes/release.md` line by line, with a [link](https://example.com/{n}) \
             and a list:\n\n- first point of part {n}\n- second point\n- third point\n\n\
             ```rust\nfn part_{n}() -> &'static str {{\n    \"Bluefin\"\n}}\n```\n\n"
        ));
    }
    text.push_str("END OF THE LONG ANSWER");
    text
}

/// The model's side of every flow, in aimock's fixture format.
fn fixtures(dir: &std::path::Path) -> PathBuf {
    let call = |id: &str, name: &str, arguments: Value| json!({"id": id, "name": name, "arguments": arguments.to_string()});
    let many: Vec<Value> = (1..=50)
        .map(|i| {
            call(
                &format!("call_many_{i}"),
                "file_read",
                json!({"path": "notes/release.md"}),
            )
        })
        .collect();
    let fixtures = json!({"fixtures": [
        {"match": {"userMessage": "Where is the release codename defined", "hasToolResult": false},
         "response": {"toolCalls": [call("call_grep_1", "grep", json!({"pattern": "codename"}))]}},
        {"match": {"toolCallId": "call_grep_1", "toolResultContains": "notes/release.md"},
         "response": {"toolCalls": [call("call_read_1", "file_read", json!({"path": "notes/release.md"}))]}},
        {"match": {"toolCallId": "call_read_1", "toolResultContains": "The codename is Bluefin."},
         "response": {"content": "It is defined in `notes/release.md`, which says: \"The codename is Bluefin.\""}},
        {"match": {"userMessage": "Read the secret plan", "hasToolResult": false},
         "response": {"toolCalls": [call("call_secret", "file_read", json!({"path": "plan.txt"}))]}},
        {"match": {"toolCallId": "call_secret", "toolResultContains": "not today"},
         "response": {"content": "I was not allowed to read plan.txt."}},
        {"match": {"userMessage": "Read the plan twice", "hasToolResult": false},
         "response": {"toolCalls": [call("call_twice_1", "file_read", json!({"path": "plan.txt"}))]}},
        {"match": {"toolCallId": "call_twice_1", "toolResultContains": "secret"},
         "response": {"toolCalls": [call("call_twice_2", "file_read", json!({"path": "plan.txt"}))]}},
        {"match": {"toolCallId": "call_twice_2", "toolResultContains": "secret"},
         "response": {"content": "Read it twice."}},
        {"match": {"userMessage": "Pick a colour for me", "hasToolResult": false},
         "response": {"toolCalls": [call("call_ask", "request_human_input", json!({"question": "Which colour do you like?"}))]}},
        {"match": {"toolCallId": "call_ask", "toolResultContains": "teal"},
         "response": {"content": "Teal it is."}},
        {"match": {"userMessage": "Stream a long answer", "hasToolResult": false},
         "response": {"toolCalls": many}},
        {"match": {"toolCallId": "call_many_50"},
         "response": {"content": long_answer()}, "chunkSize": 64, "latency": 1},
    ]});
    let path = dir.join("webapp-fixtures.json");
    std::fs::write(&path, fixtures.to_string()).expect("write the fixtures");
    path
}

/// A project with release notes, a secret plan, and aimock as its model; no API key, so
/// `serve` makes the local token the page signs in with. `extra` adds configuration keys.
fn project(aimock: &Aimock, extra: &str) -> TestProject {
    let project = toolmux_project();
    project.write("notes/release.md", "# Release\nThe codename is Bluefin.\n");
    project.write("plan.txt", "secret\nplan\n");
    let extra = extra.trim();
    let sep = if extra.is_empty() { "" } else { ", " };
    project.config(&format!(
        r#"{{"providers": {{"mock": {{"kind": "openai", "baseUrl": "{}/v1",
             "apiKey": "not-a-secret", "defaultModel": "gpt-4o"}}}}{sep}{extra}}}"#,
        aimock.url
    ));
    project
}

struct Flow {
    _aimock: Aimock,
    project: TestProject,
    served: Served,
    scratch: PathBuf,
    _fixtures: tempfile::TempDir,
}

fn start(name: &str, extra: &str) -> Flow {
    let fixtures_dir = tempfile::tempdir().expect("a folder for the fixtures");
    let fixtures = fixtures(fixtures_dir.path());
    let aimock = Aimock::start(fixtures.to_str().expect("a UTF-8 path"));
    let project = project(&aimock, extra);
    let served = Served::start(&project, &[]);
    assert!(
        served.token.is_some(),
        "serve printed no local token: {}",
        served.web_url
    );
    let scratch = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("webapp-e2e")
        .join(name);
    let _ = std::fs::remove_dir_all(&scratch);
    std::fs::create_dir_all(&scratch).expect("create the scratch folder");
    eprintln!("webapp e2e `{name}`: screenshots in {}", scratch.display());
    Flow {
        _aimock: aimock,
        project,
        served,
        scratch,
        _fixtures: fixtures_dir,
    }
}

/// Runs one flow of the browser script against `served`; its findings as JSON.
fn browse(flow: &Flow, phase: &str, env: &[(&str, &str)]) -> Value {
    let _one = BROWSER.lock().unwrap_or_else(|e| e.into_inner());
    let script = peer_file("webapp/e2e.mjs");
    assert!(
        peer_file("webapp/node_modules/playwright-core/package.json").is_file(),
        "run `npm ci` in tests/peers/webapp"
    );
    assert!(
        std::path::Path::new("/usr/bin/chromium").is_file(),
        "chromium is not installed: `apt-get install -y chromium` (tests/peers/webapp/apt.txt)"
    );
    let out = Command::new("node")
        .arg(&script)
        .args([phase, &flow.served.web_url])
        .arg(&flow.scratch)
        .envs(env.iter().copied())
        .output()
        .expect("run node");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "the `{phase}` flow failed:\n{stderr}\nserver:\n{}",
        flow.served.stderr()
    );
    let findings: Value = serde_json::from_slice(&out.stdout).expect("the script prints JSON");
    eprintln!("webapp e2e `{phase}`: {findings}");
    for shot in findings["screenshots"].as_array().expect("screenshots") {
        let path = shot.as_str().expect("a path");
        assert!(
            std::fs::metadata(path).is_ok_and(|m| m.len() > 1000),
            "no screenshot at {path}"
        );
    }
    findings
}

#[test]
fn a_question_shows_grep_and_file_read_as_badged_cards_and_then_the_answer() {
    let flow = start("chat", "");
    let found = browse(&flow, "chat", &[]);
    assert_eq!(
        found["badges"],
        json!(["built-in · workspace", "built-in · workspace"])
    );
    let id = found["address"]
        .as_str()
        .and_then(|a| a.strip_prefix("/chat/"))
        .expect("a conversation address");
    let shown = flow.served.get(&format!("/api/conversations/{id}"));
    assert_eq!(shown.status, 200, "{}", shown.body);
    assert_eq!(shown.json()["conversation"]["title"], "Codename hunt");
}

#[test]
fn an_ask_tool_is_denied_or_allowed_for_the_conversation_inline() {
    let flow = start(
        "approvals",
        r#""policies": {"tools": {"file_read": "ask"}}"#,
    );
    let found = browse(&flow, "approvals", &[]);
    assert_eq!(found["badge"], "built-in · workspace");
    assert_eq!(found["approvals"], 2);
    // Allowed once by the person and once by the page: both calls ran; the denied one did not.
    let log = flow.served.get("/api/logs?tool=file_read");
    let outcomes: Vec<String> = log.json()["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .map(|e| e["outcome"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(outcomes, ["denied", "ok", "ok"], "{}", log.body);
}

#[test]
fn a_policy_changed_in_the_catalog_is_written_to_the_config_and_survives_a_restart() {
    let flow = start("tools", "");
    let found = browse(&flow, "tools", &[]);
    assert_eq!(
        flow.project.saved_config()["policies"]["tools"]["grep"],
        "deny",
        "{found}"
    );
    let Flow {
        served, project, ..
    } = flow;
    served.stop();
    let again = Served::start(&project, &[]);
    let grep = again.get("/api/tools/grep");
    assert_eq!(grep.status, 200, "{}", grep.body);
    assert_eq!(grep.json()["policy"], "deny");
}

#[test]
fn a_pasted_mcp_servers_block_adds_the_server_and_discovers_its_tools() {
    let flow = start("servers", "");
    let everything = node_peer("upstream", "mcp-server-everything");
    let block = json!({"mcpServers": {"everything": {"command": everything}}}).to_string();
    let found = browse(&flow, "servers", &[("PASTE", &block)]);
    let tools = flow.served.tool_names("everything");
    assert!(tools.len() > 3, "{tools:?} {found}");
    assert_eq!(
        found["count"].as_str(),
        Some(format!("{} tools", tools.len()).as_str())
    );
    assert_eq!(found["discovery"], "success");
    assert_eq!(found["prompt"], true, "its prompts are not shown: {found}");
    assert!(flow.project.saved_config()["mcpServers"]["everything"].is_object());
}

#[test]
fn the_activity_page_shows_a_call_made_from_the_command_line() {
    let flow = start("activity", "");
    flow.project
        .run(&["tools", "call", "file_search", "-a", "pattern=**/*.md"])
        .ok();
    browse(&flow, "activity", &[]);
}

#[test]
fn every_page_has_no_serious_accessibility_violation_in_light_or_dark() {
    let flow = start("a11y", "");
    let found = browse(&flow, "a11y", &[]);
    assert_eq!(found["serious"], json!([]), "{}", found["findings"]);
    assert_eq!(found["first"], "Skip to content");
    assert_eq!(found["screenshots"].as_array().map(Vec::len), Some(6));
}

/// The sizes the issue budgets, asserted: ≤ 300 KB of compressed JavaScript on the first load,
/// a catalog of 1,000 tools that renders only what is in view, 50 cards and a 20,000-token
/// answer all shown and followed. Times (catalog render, long tasks while streaming) are
/// printed for the closing note, never asserted: this is a test, not a benchmark.
#[test]
fn the_first_load_fits_its_budget_and_long_pages_stay_virtualised() {
    let tools: serde_json::Map<String, Value> = (0..1000)
        .map(|i| {
            (
                format!("bulk_{i:04}"),
                json!({"description": format!("Bulk tool number {i}, for the catalog benchmark."),
                       "command": ["true"]}),
            )
        })
        .collect();
    let extra = format!(r#""tools": {}"#, Value::Object(tools));
    let flow = start("perf", &extra);
    let found = browse(&flow, "perf", &[]);
    eprintln!(
        "webapp figures: first load {} bytes of JS (compressed) in {} files; catalog of {} in \
         {:.0} ms with {} rows in the DOM; search in {:.0} ms; {} cards and {} characters \
         streamed in {} ms with {} long tasks (longest {:.0} ms, total {:.0} ms)",
        found["firstLoadTransferBytes"],
        found["firstLoad"].as_array().map_or(0, Vec::len),
        found["toolCount"],
        found["catalogMs"].as_f64().unwrap_or(-1.0),
        found["rowsInDom"],
        found["searchMs"].as_f64().unwrap_or(-1.0),
        found["cards"],
        found["answerChars"],
        found["streamMs"],
        found["longTasks"]["count"],
        found["longTasks"]["maxMs"].as_f64().unwrap_or(0.0),
        found["longTasks"]["totalMs"].as_f64().unwrap_or(0.0),
    );
    let first_load = found["firstLoadTransferBytes"].as_u64().expect("bytes");
    assert!(first_load > 0 && first_load <= 300 * 1024, "{found}");
    assert_eq!(found["cards"], 50);
    assert_eq!(
        found["followed"], true,
        "the chat did not follow the answer"
    );
    assert!(
        found["rowsInDom"].as_u64().is_some_and(|n| n < 100),
        "the catalog is not virtualised: {found}"
    );
    assert!(found["catalogMs"].as_f64().is_some_and(|ms| ms > 0.0));
}
