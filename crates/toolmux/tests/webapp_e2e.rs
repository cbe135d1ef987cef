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
use toolmux_testkit::oauth_peers::OAuthPeers;
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
        {"match": {"userMessage": "Read the plan first", "hasToolResult": false},
         "response": {"toolCalls": [call("call_first", "file_read", json!({"path": "plan.txt"}))]}},
        {"match": {"toolCallId": "call_first", "toolResultContains": "secret"},
         "response": {"content": "First read."}},
        {"match": {"userMessage": "Read the plan after a reload", "hasToolResult": false},
         "response": {"toolCalls": [call("call_reload", "file_read", json!({"path": "plan.txt"}))]}},
        // Slow (about 3 s): a page that read the turn on a clock while it runs would read it
        // several times before its end.
        {"match": {"toolCallId": "call_reload", "toolResultContains": "secret"},
         "response": {"content": "The plan says secret."}, "chunkSize": 1, "latency": 150},
        {"match": {"userMessage": "Read the plan from elsewhere", "hasToolResult": false},
         "response": {"toolCalls": [call("call_elsewhere", "file_read", json!({"path": "plan.txt"}))]}},
        {"match": {"toolCallId": "call_elsewhere", "toolResultContains": "secret"},
         "response": {"content": "Read it once."}},
        {"match": {"userMessage": "Pick a colour for me", "hasToolResult": false},
         "response": {"toolCalls": [call("call_ask", "request_human_input", json!({"question": "Which colour do you like?"}))]}},
        {"match": {"toolCallId": "call_ask", "toolResultContains": "teal"},
         "response": {"content": "Teal it is."}},
        {"match": {"userMessage": "Stream a long answer", "hasToolResult": false},
         "response": {"toolCalls": many}},
        {"match": {"toolCallId": "call_many_50"},
         "response": {"content": long_answer()}, "chunkSize": 64, "latency": 1},
        {"match": {"userMessage": "Say hello"}, "response": {"content": "Hello there."}},
        {"match": {"userMessage": "Say goodbye"}, "response": {"content": "Goodbye now."}},
        {"match": {"userMessage": "Are you rate limited"},
         "response": {"error": {"message": "Rate limit exceeded.", "type": "rate_limit_error",
                                "code": "rate_limit_exceeded"}, "status": 429}},
        {"match": {"userMessage": "Show me some code"},
         "response": {"content": "Here it is:\n\n```rust\nfn main() {}\n```\n"}},
        // Slow (about 40 s), so that it is stopped while it streams.
        {"match": {"userMessage": "Tell a slow story"},
         "response": {"content": format!("Once upon a time. {} THE END", "And then. ".repeat(40))},
         "chunkSize": 4, "latency": 400},
        {"match": {"userMessage": "Repeat the long word"},
         "response": {"content": format!("Here it is: {}", "W".repeat(300))}},
        {"match": {"userMessage": "Run the long operation", "hasToolResult": false},
         "response": {"toolCalls": [call("call_long", "everything__trigger-long-running-operation",
                                         json!({"duration": 4, "steps": 4}))]}},
        {"match": {"toolCallId": "call_long", "toolResultContains": "completed"},
         "response": {"content": "The long operation is done."}},
        {"match": {"userMessage": "Show the tiny image", "hasToolResult": false},
         "response": {"toolCalls": [call("call_tiny", "everything__get-tiny-image", json!({}))]}},
        {"match": {"toolCallId": "call_tiny"},
         "response": {"content": "That is the MCP logo."}},
    ]});
    let path = dir.join("webapp-fixtures.json");
    std::fs::write(&path, fixtures.to_string()).expect("write the fixtures");
    path
}

/// Four LeanSpec specs: two planned (one the child of a complete one), one in progress that
/// depends on the first, with a body of headings, emphasis and a checklist.
const SPECS: [(&str, &str); 4] = [
    (
        "specs/001-auth-login/README.md",
        "---\nstatus: planned\ncreated: 2025-01-10\npriority: high\ntags: [api, auth]\n---\n\n\
         # Auth Login\n\n## Plan\n\n- [ ] write the login form\n",
    ),
    (
        "specs/002-search-index/README.md",
        "---\nstatus: in-progress\ncreated: 2025-02-01\npriority: medium\ntags: [search]\n\
         depends_on:\n  - 001-auth-login\n---\n\n# Search Index\n\nAn index of **every** document.\n\n\
         ## Design\n\n- one shard a folder\n- rebuilt nightly\n",
    ),
    (
        "specs/003-billing/README.md",
        "---\nstatus: complete\ncreated: 2025-03-01\npriority: low\ntags: [api]\n---\n\n\
         # Billing\n\nInvoices and payments.\n",
    ),
    (
        "specs/004-billing-invoices/README.md",
        "---\nstatus: planned\ncreated: 2025-03-02\npriority: medium\ntags: [api, billing]\n\
         assignee: ana\nparent: 003-billing\n---\n\n# Billing Invoices\n\nMonthly invoices.\n",
    ),
];

/// A project with release notes, a secret plan, the specs above unless `specs` is false, and
/// aimock as its model; no API key, so `serve` makes the local token the page signs in with.
/// `extra` adds configuration keys.
fn project(aimock: &Aimock, extra: &str, specs: bool) -> TestProject {
    let project = toolmux_project();
    project.write("notes/release.md", "# Release\nThe codename is Bluefin.\n");
    project.write("plan.txt", "secret\nplan\n");
    if specs {
        for (path, text) in SPECS {
            project.write(path, text);
        }
    }
    let extra = extra.trim();
    let sep = if extra.is_empty() { "" } else { ", " };
    project.config(&format!(
        r#"{{"providers": {{"mock": {{"kind": "openai", "baseUrl": "{}/v1",
             "apiKey": "not-a-secret", "defaultModel": "gpt-4o"}}}}{sep}{extra}}}"#,
        aimock.url
    ));
    project
}

/// The screen a flow runs on.
#[derive(Clone, Copy)]
enum Screen {
    /// 1280 × 800.
    Desktop,
    /// 390 × 844.
    Phone,
}

impl Screen {
    /// The flow's scratch folder: each screen its own, since the tests run side by side.
    fn folder(self, flow: &str) -> String {
        match self {
            Screen::Desktop => flow.to_string(),
            Screen::Phone => format!("{flow}-phone"),
        }
    }

    /// What tells the script the viewport (it opens a desktop's without it).
    fn env(self) -> Option<(&'static str, &'static str)> {
        match self {
            Screen::Desktop => None,
            Screen::Phone => Some(("E2E_WIDTH", "390")),
        }
    }
}

/// A flow's two tests: on a desktop's screen, and on a phone's.
macro_rules! on_both_screens {
    ($flow:ident: $desktop:ident, $phone:ident) => {
        #[test]
        fn $desktop() {
            $flow(Screen::Desktop);
        }

        #[test]
        fn $phone() {
            $flow(Screen::Phone);
        }
    };
}

struct Flow {
    _aimock: Aimock,
    project: TestProject,
    served: Served,
    scratch: PathBuf,
    screen: Screen,
    _fixtures: tempfile::TempDir,
}

/// A server for the flow `name` on `screen`, with `extra` configuration keys, on a project
/// with specs.
fn start(name: &str, screen: Screen, extra: &str) -> Flow {
    start_project(name, screen, extra, true)
}

/// A server for the flow `name` on `screen`, on a project with specs or not.
fn start_project(name: &str, screen: Screen, extra: &str, specs: bool) -> Flow {
    let fixtures_dir = tempfile::tempdir().expect("a folder for the fixtures");
    let fixtures = fixtures(fixtures_dir.path());
    let aimock = Aimock::start(fixtures.to_str().expect("a UTF-8 path"));
    let project = project(&aimock, extra, specs);
    let served = Served::start(&project, &[]);
    assert!(
        served.token.is_some(),
        "serve printed no local token: {}",
        served.web_url
    );
    Flow {
        _aimock: aimock,
        project,
        served,
        scratch: scratch(&screen.folder(name)),
        screen,
        _fixtures: fixtures_dir,
    }
}

/// An empty scratch folder for a flow's browser profile and screenshots.
fn scratch(folder: &str) -> PathBuf {
    let scratch = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("webapp-e2e")
        .join(folder);
    let _ = std::fs::remove_dir_all(&scratch);
    std::fs::create_dir_all(&scratch).expect("create the scratch folder");
    eprintln!(
        "webapp e2e `{folder}`: screenshots in {}",
        scratch.display()
    );
    scratch
}

/// Runs one flow of the browser script against `served`, on the flow's screen; its findings as
/// JSON.
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
        .envs(env.iter().copied().chain(flow.screen.env()))
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

/// A question whose answer needs grep then file_read: two badged cards with their result views,
/// then the answer. Reopened from its address, the conversation shows the same cards (issue 30:
/// the stored messages keep each call's source, duration and structured result).
fn chat_flow(screen: Screen) {
    let flow = start("chat", screen, "");
    let found = browse(&flow, "chat", &[]);
    assert_eq!(
        found["badges"],
        json!(["built-in · workspace", "built-in · workspace"])
    );
    let live = found["live"].as_array().expect("the live cards");
    assert_eq!(live.len(), 2, "{found}");
    for card in live {
        assert!(
            card["duration"]
                .as_str()
                .and_then(|d| d.strip_suffix(" ms"))
                .is_some_and(|ms| ms.parse::<u64>().is_ok()),
            "a card without its duration: {found}"
        );
    }
    assert_eq!(
        live[0]["groups"],
        json!(["notes/release.md (1)"]),
        "{found}"
    );
    assert!(live[1]["lines"].as_u64().is_some_and(|n| n >= 2), "{found}");
    assert_eq!(found["reopened"], found["live"], "{found}");
    let kept = conversation_at(&flow, &found["address"]);
    assert_eq!(kept["conversation"]["title"], "Codename hunt", "{kept}");
}

on_both_screens!(
    chat_flow:
    a_question_shows_grep_and_file_read_as_badged_cards_and_then_the_answer,
    a_question_shows_its_badged_cards_and_the_answer_on_a_phone
);

/// Issue 30: "New conversation" empties the thread and the next message starts a new
/// conversation (the page's address goes through its router); a conversation sent in, left for
/// another and opened again shows its own messages, not the other's.
fn conversations_flow(screen: Screen) {
    let flow = start("conversations", screen, "");
    let found = browse(&flow, "conversations", &[]);
    assert_eq!(found["afterNew"], "/chat", "{found}");
    assert_ne!(found["first"], found["second"], "{found}");
    assert_eq!(found["secondShowsFirst"], false, "{found}");
    assert_eq!(found["backShowsFirst"], true, "{found}");
    assert_eq!(found["backShowsSecond"], false, "{found}");
    // The server agrees: each conversation holds its own turns.
    let user_texts = |address: &Value| -> Vec<String> {
        conversation_at(&flow, address)["messages"]
            .as_array()
            .expect("messages")
            .iter()
            .filter(|m| m["role"] == "user")
            .map(|m| m["text"].as_str().unwrap_or_default().to_string())
            .collect()
    };
    assert_eq!(
        user_texts(&found["first"]),
        ["Where is the release codename defined?", "Say goodbye"]
    );
    assert_eq!(user_texts(&found["second"]), ["Say hello"]);
}

on_both_screens!(
    conversations_flow:
    a_new_conversation_starts_empty_and_switching_back_shows_the_same_conversation,
    a_new_conversation_and_switching_back_work_from_the_drawer_on_a_phone
);

/// Issue 30: every page on `screen`, with a 300-character word in the conversation: no page
/// scrolls sideways and Send stays on screen.
///
/// With `TOOLMUX_UPDATE_SCREENSHOTS=1` the flow also writes a screenshot of each page to
/// `web/screenshots/` (`chat-desktop.png`, `chat-phone.png`, ...), the set committed for
/// reviewers; without it the tree stays as it is.
fn layout_flow(screen: Screen) -> Value {
    let flow = start("layout", screen, "");
    let screenshots = concat!(env!("CARGO_MANIFEST_DIR"), "/../../web/screenshots");
    let update = std::env::var("TOOLMUX_UPDATE_SCREENSHOTS").is_ok_and(|v| v == "1");
    if update {
        std::fs::create_dir_all(screenshots).expect("create web/screenshots");
    }
    let env: &[(&str, &str)] = if update {
        &[("SCREENSHOTS", screenshots)]
    } else {
        &[]
    };
    let started = std::time::SystemTime::now();
    let found = browse(&flow, "layout", env);
    assert_eq!(found["pages"], 10, "{found}");
    if update {
        let suffix = match screen {
            Screen::Desktop => "desktop",
            Screen::Phone => "phone",
        };
        for page in [
            "chat",
            "chat-new",
            "tools",
            "tool",
            "servers",
            "activity",
            "approvals",
            "sessions",
            "specs",
            "spec",
        ] {
            let path = format!("{screenshots}/{page}-{suffix}.png");
            let written = std::fs::metadata(&path).and_then(|m| m.modified());
            assert!(
                written.is_ok_and(|at| at >= started),
                "{path} was not written by this run"
            );
        }
    }
    assert_eq!(found["overflowing"], json!([]), "{found}");
    assert_eq!(found["hiddenSend"], json!([]), "{found}");
    found
}

#[test]
fn no_page_scrolls_sideways_on_a_phone_and_its_lists_fold() {
    let found = layout_flow(Screen::Phone);
    assert_eq!(
        found["folded"],
        json!({"listFolded": true, "drawerClosed": true, "drawerClosedAgain": true})
    );
}

#[test]
fn a_long_word_does_not_widen_any_page_on_a_desktop() {
    let found = layout_flow(Screen::Desktop);
    assert_eq!(found["folded"], Value::Null);
}

/// The file of spec 002 says it is complete.
fn assert_search_index_complete_on_disk(flow: &Flow) {
    let on_disk =
        std::fs::read_to_string(flow.project.path().join("specs/002-search-index/README.md"))
            .expect("the spec's file");
    assert!(on_disk.contains("status: complete"), "{on_disk}");
}

/// Issue 30: `/specs` shows the board of a project with specs (it was a blank page): a column a
/// status with each spec's number, title, priority and tags; a spec opened shows its body as
/// rendered Markdown and its relationships as links; a status change (allowed by policy here)
/// moves its card to the new column, and the file on disk says the new status.
fn specs_flow(screen: Screen) {
    let flow = start(
        "specs",
        screen,
        r#""policies": {"tools": {"spec_update": "allow"}}"#,
    );
    let found = browse(&flow, "specs", &[]);
    let card = |title: &str, badges: &[&str]| json!({"title": title, "badges": badges});
    let search_index = card("#002 Search Index", &["medium", "search"]);
    let billing = card("#003 Billing", &["low", "api"]);
    // The board's columns, with what is in progress and what is complete as given.
    let board = |in_progress: Value, complete: Value| {
        json!([
            {"name": "draft", "cards": []},
            {"name": "planned", "cards": [
                card("#001 Auth Login", &["high", "api", "auth"]),
                card("#004 Billing Invoices", &["medium", "api", "billing"]),
            ]},
            {"name": "in-progress", "cards": in_progress},
            {"name": "complete", "cards": complete},
        ])
    };
    assert_eq!(
        found["board"],
        board(json!([search_index]), json!([billing])),
        "{found}"
    );
    assert_eq!(
        found["rendered"],
        json!({"headings": ["Design"], "strong": ["every"],
               "items": ["one shard a folder", "rebuilt nightly"]}),
        "{found}"
    );
    assert_eq!(
        found["relationships"],
        json!([
            ["Parent", []],
            ["Children", []],
            ["Depends on", ["/specs/001-auth-login"]],
            ["Required by", []]
        ]),
        "{found}"
    );
    assert_eq!(found["status"], "complete", "{found}");
    assert_eq!(found["requiredBy"], json!(["002-search-index"]), "{found}");
    assert_eq!(
        found["moved"],
        board(json!([]), json!([search_index, billing])),
        "{found}"
    );
    assert_search_index_complete_on_disk(&flow);
}

on_both_screens!(
    specs_flow:
    the_specs_board_shows_columns_opens_a_spec_and_moves_it_on_a_status_change,
    the_specs_board_works_on_a_phone
);

/// A status change under the default policy waits in the approvals queue: the spec's page says
/// so (and the navigation counts it), offers the approval's buttons, and shows the new status
/// once it is allowed there; the change then runs once.
#[test]
fn a_status_change_waits_for_approval_on_the_spec_page() {
    let flow = start("specwait", Screen::Desktop, "");
    let found = browse(&flow, "specwait", &[]);
    assert_eq!(
        found["said"],
        "Waiting for approval: the change to spec_update waits in the approvals queue. Allow Deny",
        "{found}"
    );
    assert_eq!(found["counted"], "1", "{found}");
    assert_eq!(found["gone"], true, "{found}");
    let log = flow.served.get("/api/logs?tool=spec_update");
    let entries = log.json()["entries"].clone();
    assert_eq!(entries.as_array().map(Vec::len), Some(1), "{}", log.body);
    assert_eq!(entries[0]["outcome"], "ok", "{}", log.body);
    assert_search_index_complete_on_disk(&flow);
}

/// Issue 30: a project without a specs directory gets the API's sentence, not a blank page.
#[test]
fn a_project_without_specs_says_so_on_the_specs_page() {
    let flow = start_project("nospecs", Screen::Desktop, "", false);
    let found = browse(&flow, "nospecs", &[]);
    assert_eq!(found["heading"], "Specs", "{found}");
    assert_eq!(
        found["said"],
        "this project has no specs directory, so there are no specs to serve: create `specs/` in \
         the project (or name another directory as `specsDir` in `.lean-spec/config.json`) and \
         restart `toolmux serve`",
        "{found}"
    );
}

/// The policy that makes every `file_read` wait for a person.
const FILE_READ_ASKS: &str = r#""policies": {"tools": {"file_read": "ask"}}"#;

/// An `ask` tool in the chat: denied with a reason, allowed for the conversation, and the
/// model's question answered, all inline.
fn approvals_flow(screen: Screen) {
    let flow = start("approvals", screen, FILE_READ_ASKS);
    let found = browse(&flow, "approvals", &[]);
    assert_eq!(found["badge"], "built-in · workspace");
    // Issue 30: the waiting call and its approval are one card, which says it waits.
    assert_eq!(found["cardsWhileWaiting"], 1, "{found}");
    assert_eq!(found["waitingOutcome"], "waiting for you", "{found}");
    assert_eq!(found["approvals"], 1);
    // Allowed by the person for the conversation: toolmux ran the second call without asking
    // and says which approval allowed it; the denied one did not run.
    let log = flow.served.get("/api/logs?tool=file_read");
    let entries = log.json()["entries"].clone();
    let outcomes: Vec<String> = entries
        .as_array()
        .expect("entries")
        .iter()
        .map(|e| e["outcome"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(outcomes, ["denied", "ok", "ok"], "{}", log.body);
    assert!(entries[1].get("approvedBy").is_none(), "{}", log.body);
    assert!(entries[2]["approvedBy"].is_string(), "{}", log.body);
}

on_both_screens!(
    approvals_flow:
    an_ask_tool_is_denied_or_allowed_for_the_conversation_inline,
    an_ask_tool_is_answered_inline_on_a_phone
);

/// The outcomes of the execution log's `file_read` calls, oldest first.
fn file_read_outcomes(flow: &Flow) -> Vec<String> {
    let log = flow.served.get("/api/logs?tool=file_read");
    assert_eq!(log.status, 200, "{}", log.body);
    log.json()["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .map(|e| e["outcome"].as_str().unwrap_or_default().to_string())
        .collect()
}

/// The conversation at a page's `address` (`/chat/ID`), as the server keeps it.
fn conversation_at(flow: &Flow, address: &Value) -> Value {
    let id = address
        .as_str()
        .and_then(|a| a.strip_prefix("/chat/"))
        .expect("a conversation address");
    let shown = flow.served.get(&format!("/api/conversations/{id}"));
    assert_eq!(shown.status, 200, "{}", shown.body);
    shown.json()
}

/// The texts of the conversation at `address` (its person's and its model's, not its tools'),
/// once the server says its turn has ended.
fn ended_turn_texts(flow: &Flow, address: &Value) -> Vec<String> {
    let kept = conversation_at(flow, address);
    assert_eq!(kept["running"], false, "{kept}");
    kept["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter_map(|m| m["text"].as_str())
        .filter(|t| !t.is_empty())
        .map(str::to_string)
        .collect()
}

/// Issue 30: a page reloaded while its turn waits on an approval does not cancel the turn; the
/// reloaded page shows the approval (from the queue) with live buttons in the waiting call's
/// card — not in the earlier turn's card of the same call, already done — and, once it is
/// answered, the turn's answer. The answered approval stays in its call's card (not moved to the
/// thread's end), and the page reads the conversation when something happens in the turn and
/// once when the server says it ended (`turn-ended`), not on a clock while the answer streams.
fn reload_flow(screen: Screen) {
    let flow = start("reload", screen, FILE_READ_ASKS);
    let found = browse(&flow, "reload", &[]);
    assert_eq!(
        found["buttons"],
        json!(["Allow once", "Allow for this conversation", "Deny"]),
        "{found}"
    );
    let outcomes = |cards: &Value| -> Vec<Value> {
        cards
            .as_array()
            .map(|cards| cards.iter().map(|c| c["outcome"].clone()).collect())
            .unwrap_or_default()
    };
    assert_eq!(
        outcomes(&found["waitingCards"]),
        [json!("done"), json!("waiting for you")],
        "{found}"
    );
    assert_eq!(
        found["waitingCards"][1]["badge"], "built-in · workspace",
        "{found}"
    );
    assert_eq!(
        outcomes(&found["cards"]),
        [json!("done"), json!("done")],
        "{found}"
    );
    assert_eq!(
        found["cards"][1]["badge"], "built-in · workspace",
        "{found}"
    );
    assert_eq!(
        found["answeredPlace"],
        json!(["in its call's card"]),
        "{found}"
    );
    // While the answer streams (some 3 s) nothing happens in the turn until it ends: one read
    // on its end (two when an event's read was still under way; none when the card showed its
    // result only with the ended turn), where a read on a clock made three or more.
    assert!(
        found["readsWhileAnswering"]
            .as_u64()
            .is_some_and(|n| n <= 2),
        "the page read the conversation on a clock while its turn ran: {found}"
    );
    assert_eq!(file_read_outcomes(&flow), ["ok", "ok"]);
    assert_eq!(
        ended_turn_texts(&flow, &found["address"]),
        [
            "Read the plan first",
            "First read.",
            "Read the plan after a reload",
            "The plan says secret."
        ]
    );
}

on_both_screens!(
    reload_flow:
    a_turn_waiting_on_an_approval_survives_a_reload,
    a_turn_waiting_on_an_approval_survives_a_reload_on_a_phone
);

/// Issue 30: an approval answered on the Approvals page of another tab updates the chat's card:
/// it says so and offers no button (today's buttons failed with `not_found`).
fn elsewhere_flow(screen: Screen) {
    let flow = start("elsewhere", screen, FILE_READ_ASKS);
    let found = browse(&flow, "elsewhere", &[]);
    assert_eq!(found["said"], "Allowed elsewhere", "{found}");
    assert_eq!(found["buttons"], 0, "{found}");
    assert_eq!(file_read_outcomes(&flow), ["ok"]);
}

on_both_screens!(
    elsewhere_flow:
    an_approval_answered_in_another_tab_updates_the_chats_card,
    an_approval_answered_in_another_tab_updates_the_chats_card_on_a_phone
);

/// Issue 30: a turn waiting on the model's question survives a reload, and the reloaded page
/// shows the question's form (from the queue) whose answer reaches the model; it reads the
/// conversation when something happens in it, not every second while the question waits. A
/// question answered on the Approvals page of another tab loses its form in the chat and says
/// so.
fn questions_flow(screen: Screen) {
    let flow = start("questions", screen, "");
    let found = browse(&flow, "questions", &[]);
    assert_eq!(found["answeredHere"], "Answered: teal", "{found}");
    assert!(
        found["readsWhileWaiting"].as_u64().is_some_and(|n| n <= 1),
        "the page read the conversation on a clock while its question waited: {found}"
    );
    assert_eq!(found["said"], "Answered elsewhere", "{found}");
    assert_eq!(found["controls"], 0, "{found}");
    assert_eq!(
        ended_turn_texts(&flow, &found["address"]),
        ["Pick a colour for me", "Teal it is."]
    );
}

on_both_screens!(
    questions_flow:
    a_question_waiting_in_a_turn_survives_a_reload_and_one_answered_elsewhere_says_so,
    a_question_waiting_in_a_turn_survives_a_reload_and_one_answered_elsewhere_says_so_on_a_phone
);

fn tools_flow(screen: Screen) {
    let flow = start(
        "tools",
        screen,
        r#""toolSettings": {"file_search": {"enabled": false}}"#,
    );
    let before = flow.served.get("/api/tools/file_search");
    assert_ne!(
        before.status, 200,
        "file_search is not off: {}",
        before.body
    );
    let found = browse(&flow, "tools", &[]);
    assert_eq!(
        flow.project.saved_config()["policies"]["tools"]["grep"],
        "deny",
        "{found}"
    );
    // The switched-off tool was listed greyed with its kind's badge, and its switch turned it
    // on again in the configuration and the running catalog.
    assert_eq!(found["offBadge"], "off", "{found}");
    assert_eq!(found["offKind"], "built-in · workspace", "{found}");
    assert_ne!(
        flow.project.saved_config()["toolSettings"]["file_search"]["enabled"],
        false,
        "{found}"
    );
    let after = flow.served.get("/api/tools/file_search");
    assert_eq!(after.status, 200, "{}", after.body);
    assert_ne!(after.json()["enabled"], false, "{}", after.body);
    let Flow {
        served, project, ..
    } = flow;
    served.stop();
    let again = Served::start(&project, &[]);
    let grep = again.get("/api/tools/grep");
    assert_eq!(grep.status, 200, "{}", grep.body);
    assert_eq!(grep.json()["policy"], "deny");
}

on_both_screens!(
    tools_flow:
    a_policy_changed_in_the_catalog_is_written_to_the_config_and_survives_a_restart,
    a_policy_changed_in_the_catalog_on_a_phone_is_written_to_the_config
);

fn servers_flow(screen: Screen) {
    let flow = start("servers", screen, "");
    let everything = node_peer("upstream", "mcp-server-everything");
    let block = json!({"mcpServers": {"everything": {"command": everything}}}).to_string();
    // Claude Code's file, for the Import button.
    let memory = node_peer("upstream", "mcp-server-memory");
    flow.project.write(
        ".mcp.json",
        &json!({"mcpServers": {"memory": {"command": memory}}}).to_string(),
    );
    let found = browse(&flow, "servers", &[("PASTE", &block)]);
    // Its transport, on/off state and stderr log are shown.
    assert_eq!(found["transport"], "stdio", "{found}");
    assert_eq!(found["enabled"], "enabled", "{found}");
    assert!(
        found["stderr"]
            .as_str()
            .is_some_and(|t| t.contains(" started pid ")),
        "no stderr tail: {found}"
    );
    // Import found the memory server, wrote it and discovered its tools.
    assert!(
        found["imported"]
            .as_str()
            .is_some_and(|t| t.contains("added 1 server")),
        "{found}"
    );
    assert!(flow.project.saved_config()["mcpServers"]["memory"].is_object());
    assert_eq!(found["importedDiscovery"], "success", "{found}");
    assert!(!flow.served.tool_names("memory").is_empty());
    let tools = flow.served.tool_names("everything");
    assert!(tools.len() > 3, "{tools:?} {found}");
    assert_eq!(
        found["count"].as_str(),
        Some(format!("{} tools", tools.len()).as_str())
    );
    assert_eq!(found["discovery"], "success");
    assert_eq!(found["prompt"], true, "its prompts are not shown: {found}");
    assert!(flow.project.saved_config()["mcpServers"]["everything"].is_object());
    // A server whose discovery fails: said so, with its stderr, and not announced as added.
    let said = found["brokenSaid"].as_str().expect("the failure said");
    assert!(
        said.starts_with("Added broken, but its tools could not be listed: "),
        "{found}"
    );
    assert!(
        found["brokenLog"]
            .as_str()
            .is_some_and(|log| log.lines().any(|l| l == "it broke")),
        "{found}"
    );
    assert_eq!(found["brokenAnnounced"], 0, "{found}");
}

on_both_screens!(
    servers_flow:
    a_pasted_mcp_servers_block_adds_the_server_and_discovers_its_tools,
    a_pasted_mcp_servers_block_adds_the_server_on_a_phone
);

fn activity_flow(screen: Screen) {
    let flow = start("activity", screen, "");
    flow.project
        .run(&["tools", "call", "file_search", "-a", "pattern=**/*.md"])
        .ok();
    // Once the page's live tail is connected (the script leaves a mark), a second call from
    // the command line must reach the open page through the event stream.
    let mark = flow.scratch.join("tail-live");
    let found = std::thread::scope(|scope| {
        let cli = scope.spawn(|| {
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(90);
            while !mark.exists() {
                assert!(
                    std::time::Instant::now() < deadline,
                    "the page never said its tail was live"
                );
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
            let run =
                flow.project
                    .run(&["tools", "call", "file_read", "-a", "path=notes/release.md"]);
            assert_eq!(run.code(), 0, "{}", run.stderr());
        });
        let found = browse(&flow, "activity", &[]);
        cli.join().expect("the CLI call");
        found
    });
    assert_eq!(found["liveRow"], true, "{found}");
    assert_eq!(
        found["listReadsAfterLive"], 0,
        "the page read the list again instead of following the stream: {found}"
    );
    assert_eq!(
        found["streamOpens"], 1,
        "typing a tool filter opens the stream once, after the typing: {found}"
    );
    // On a phone the log folds into a list, a row's cells one under another.
    assert_eq!(found["folded"], matches!(screen, Screen::Phone), "{found}");
}

on_both_screens!(
    activity_flow:
    the_activity_page_shows_a_call_made_from_the_command_line,
    the_activity_page_shows_a_call_made_from_the_command_line_on_a_phone
);

/// The sessions flow on `screen`: a session started from the page, its log followed live
/// through the event stream (which carries the session key the page keeps and sends on every
/// request and stream: issue 28, D26), one cancelled.
fn sessions_flow(screen: Screen) {
    let fake = |name: &str| {
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../toolmux-sessions/tests/fixtures/bin")
            .join(name)
    };
    let extra = format!(
        r#""runners": {{"claude": {{"command": {}}}}},
            "policies": {{"tools": {{"run_session": "allow"}}}}"#,
        Value::from(fake("claude").display().to_string())
    );
    let flow = start("sessions", screen, &extra);
    let found = browse(&flow, "sessions", &[]);
    assert_eq!(found["finished"], "completed", "{found}");
    assert_eq!(found["cancelled"], "cancelled", "{found}");
    // Both sessions are the server's, as every channel sees them.
    let list = flow.served.get("/api/sessions");
    assert_eq!(list.status, 200, "{}", list.body);
    let statuses: Vec<String> = list.json()["sessions"]
        .as_array()
        .expect("sessions")
        .iter()
        .map(|s| s["status"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(statuses.len(), 2, "{}", list.body);
    assert!(statuses.contains(&"cancelled".to_string()), "{statuses:?}");
    assert!(statuses.contains(&"completed".to_string()), "{statuses:?}");
    assert_eq!(found["rows"], 2, "{found}");
    // On a phone the table folds into a list, a row's cells one under another.
    assert_eq!(found["folded"], matches!(screen, Screen::Phone), "{found}");
}

on_both_screens!(
    sessions_flow:
    a_session_is_started_followed_live_and_cancelled_from_the_sessions_page,
    a_session_is_followed_live_on_a_phone_sized_screen
);

/// A call of an MCP server's long-running tool, on `screen`: its progress shown live on its card.
/// Then the server's image tool: its image shown in the card (issue 30: it said "[image/png
/// content, not shown]"), and again when the conversation is reopened.
fn progress_flow(screen: Screen) {
    let everything = node_peer("upstream", "mcp-server-everything");
    let extra = format!(
        r#""mcpServers": {{"everything": {{"command": {}}}}}"#,
        Value::from(everything.display().to_string())
    );
    let flow = start("progress", screen, &extra);
    // The model may only call what the catalog has: discover the server first.
    let refreshed = flow.served.post("/api/mcp-servers/everything/refresh", "");
    assert_eq!(refreshed.status, 200, "{}", refreshed.body);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !flow
        .served
        .tool_names("everything")
        .iter()
        .any(|t| t == "everything__trigger-long-running-operation")
    {
        assert!(
            std::time::Instant::now() < deadline,
            "everything's tools were never discovered: {}",
            flow.served.stderr()
        );
        std::thread::sleep(std::time::Duration::from_millis(500));
    }
    let found = browse(&flow, "progress", &[]);
    assert_eq!(found["badge"], "via everything", "{found}");
    let seen: Vec<f64> = found["progress"]
        .as_array()
        .expect("progress values")
        .iter()
        .filter_map(Value::as_f64)
        .collect();
    // At least one step between the start and the end was shown live, with its total.
    assert!(
        seen.iter().any(|p| *p >= 1.0 && *p < 4.0),
        "no live progress: {found}"
    );
    assert_eq!(found["max"], "4", "{found}");
    assert_eq!(
        found["image"],
        json!({"width": 20, "standIn": false}),
        "{found}"
    );
    assert_eq!(found["imageReopened"], found["image"], "{found}");
}

on_both_screens!(
    progress_flow:
    a_long_running_mcp_tool_shows_its_progress_on_its_card,
    a_long_running_mcp_tool_shows_its_progress_on_a_phone
);

fn signin_flow(screen: Screen) {
    let peers = OAuthPeers::start();
    let mcp_url = peers.mcp_url.clone();
    let fixtures_dir = tempfile::tempdir().expect("a folder for the fixtures");
    let aimock = Aimock::start(
        fixtures(fixtures_dir.path())
            .to_str()
            .expect("a UTF-8 path"),
    );
    let extra = format!(
        r#""mcpServers": {{"oauthy": {{"url": {}, "oauth": {{"clientId": "toolmux-test"}}}}}}"#,
        Value::from(mcp_url)
    );
    let project = project(&aimock, &extra, true);
    // The tokens go to the encrypted-file store: the machine has no keyring.
    let served = Served::start_with_env(&project, &[], &[("TOOLMUX_SECRET_BACKEND", "file")]);
    let scratch = scratch(&screen.folder("signin"));
    // Discovery is refused until someone signs in: the server reads `needs-sign-in`.
    let _ = served.post("/api/mcp-servers/oauthy/refresh", "");
    let view = served.get("/api/mcp-servers/oauthy").json();
    assert_eq!(
        view["discovery"]["discoveryStatus"], "needs-sign-in",
        "{view}"
    );
    let flow = Flow {
        _aimock: aimock,
        project,
        served,
        scratch,
        screen,
        _fixtures: fixtures_dir,
    };
    let found = browse(&flow, "signin", &[]);
    assert_eq!(found["before"], "needs-sign-in", "{found}");
    assert_eq!(found["after"], "success", "{found}");
    assert_eq!(flow.served.tool_names("oauthy").len(), 1, "{found}");
}

on_both_screens!(
    signin_flow:
    a_server_that_needs_sign_in_is_signed_in_from_its_button,
    a_server_that_needs_sign_in_is_signed_in_from_its_button_on_a_phone
);

/// Issue 30's chat basics: copy a message and a code block; edit the first message and send it
/// again (the server drops that turn and what followed it); regenerate the answer (the server
/// keeps one copy); Ctrl+Shift+O starts a new conversation; Esc stops a streaming answer (the
/// server's turn ends); the conversation list filters by title. axe finds nothing serious.
fn basics_flow(screen: Screen) {
    let flow = start("basics", screen, "");
    let found = browse(&flow, "basics", &[]);
    assert_eq!(
        found["modelKept"], "gpt-4o · mock (this conversation's)",
        "{found}"
    );
    assert_eq!(found["copiedMessage"], "Hello there.", "{found}");
    assert_eq!(found["copiedCode"], "fn main() {}", "{found}");
    assert_eq!(
        found["afterEdit"],
        json!(["Say goodbye", "Goodbye now."]),
        "{found}"
    );
    assert_eq!(
        found["afterRegenerate"],
        json!(["Say goodbye", "Goodbye now."]),
        "{found}"
    );
    assert_eq!(found["editedTurn"], 0, "{found}");
    assert_eq!(found["regeneratedTurn"], 0, "{found}");
    assert_eq!(
        ended_turn_texts(&flow, &found["address"]),
        ["Say goodbye", "Goodbye now."]
    );
    assert_eq!(found["afterShortcut"], "/chat", "{found}");
    assert_eq!(found["stoppedShowsSend"], true, "{found}");
    let story = ended_turn_texts(&flow, &found["storyAddress"]);
    assert_eq!(story[0], "Tell a slow story", "{story:?}");
    assert!(
        !story.iter().any(|t| t.contains("THE END")),
        "the stopped answer ran to its end: {story:?}"
    );
    assert_eq!(
        found["searched"],
        json!(["New conversation", "Tell a slow story"]),
        "{found}"
    );
    assert_eq!(found["serious"], json!([]), "{found}");
    // A failed turn says why in words, and Retry takes the same turn again: the server keeps
    // one copy of the message, not one per try.
    let failed = found["failedSaid"].as_str().expect("the error shown");
    assert!(
        failed.starts_with("mock answered HTTP 429") && failed.ends_with("Rate limit exceeded."),
        "{found}"
    );
    assert_eq!(found["retriedTurn"], 0, "{found}");
    assert_eq!(
        ended_turn_texts(&flow, &found["retryAddress"]),
        ["Are you rate limited?"]
    );
}

/// Issue 30: with no model provider configured, a new conversation says what to configure,
/// and a message sent anyway gets the server's reason in words, not its JSON body.
fn first_run_flow(screen: Screen) {
    let fixtures_dir = tempfile::tempdir().expect("a folder for the fixtures");
    let aimock = Aimock::start(
        fixtures(fixtures_dir.path())
            .to_str()
            .expect("a UTF-8 path"),
    );
    let project = project(&aimock, "", false);
    // What a first run has: no provider.
    project.config("{}");
    let served = Served::start(&project, &[]);
    let flow = Flow {
        _aimock: aimock,
        project,
        served,
        scratch: scratch(&screen.folder("firstrun")),
        screen,
        _fixtures: fixtures_dir,
    };
    let found = browse(&flow, "firstrun", &[]);
    assert_eq!(
        found["card"], "Connect a model to start chatting",
        "{found}"
    );
    assert_eq!(
        found["error"],
        "no chat provider is configured; add one under `providers` in .toolmux/config.json \
         (kind, baseUrl, apiKey, defaultModel)",
        "{found}"
    );
    assert_eq!(found["serious"], json!([]), "{found}");
}

on_both_screens!(
    first_run_flow:
    with_no_provider_the_chat_says_what_to_configure,
    with_no_provider_the_chat_says_what_to_configure_on_a_phone
);

on_both_screens!(
    basics_flow:
    the_chat_copies_edits_regenerates_stops_on_esc_and_searches,
    the_chat_copies_edits_regenerates_stops_on_esc_and_searches_on_a_phone
);

fn a11y_flow(screen: Screen) {
    let flow = start("a11y", screen, "");
    let found = browse(&flow, "a11y", &[]);
    assert_eq!(found["serious"], json!([]), "{}", found["findings"]);
    assert_eq!(found["first"], "Skip to content");
    assert_eq!(found["screenshots"].as_array().map(Vec::len), Some(9));
}

on_both_screens!(
    a11y_flow:
    every_page_has_no_serious_accessibility_violation_in_light_or_dark,
    every_page_has_no_serious_accessibility_violation_on_a_phone
);

/// The sizes the issue budgets, asserted: ≤ 300 KB of compressed JavaScript on the first load,
/// a catalog of 1,000 tools that renders only what is in view, 50 cards and a 20,000-token
/// answer all shown and followed. Times (catalog render, long tasks while streaming) are
/// printed for the closing note, never asserted: this is a test, not a benchmark.
fn perf_flow(screen: Screen) {
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
    let flow = start("perf", screen, &extra);
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

on_both_screens!(
    perf_flow:
    the_first_load_fits_its_budget_and_long_pages_stay_virtualised,
    the_first_load_fits_its_budget_and_long_pages_stay_virtualised_on_a_phone
);
