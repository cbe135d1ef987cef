//! Principals and roles (`principals.<name>`, `roles.<name>`): three principals with keys made
//! by `toolmux keys create`, each listing and calling only what its roles grant over MCP (the
//! real Python client with the key as its bearer) and REST; a denied call refused and logged
//! with its caller; an `ask` rule showing the caller in the approval; a 2026-07-28 list marked
//! private; a revoked key refused by the running server.

mod support;

use serde_json::{Value, json};
use support::toolmux_project;
use toolmux_testkit::eventually::wait_until;
use toolmux_testkit::http::request;
use toolmux_testkit::project::TestProject;
use toolmux_testkit::python_client::{run_mcp_steps, tool_names};
use toolmux_testkit::served::{KEY, Served, config_with_key};

/// `alice` reads, `ci-bot` works on files (and is asked about reads), `guest` gets nothing.
fn config() -> String {
    config_with_key(
        r#""roles": {
            "reader": {"endpoints": ["default"],
                "tools": {"file_read": "allow", "grep": "allow", "search_tools": "allow"}},
            "writer": {"endpoints": ["*"], "tools": {"file_*": "allow", "file_read": "ask"}},
            "closed": {"endpoints": ["default"], "tools": {"*": "deny"}}
        },
        "principals": {
            "alice": {"roles": ["reader"]},
            "ci-bot": {"roles": ["writer"]},
            "guest": {"roles": ["closed"]}
        }"#,
    )
}

/// A new key for `principal`, made by `toolmux keys create --json`: the key and its id.
fn create_key(project: &TestProject, principal: &str) -> (String, String) {
    let made = project.run_keyed(&["keys", "create", "--principal", principal, "--json"]);
    assert_eq!(made.code(), 0, "{}", made.stderr());
    let made = made.json();
    assert_eq!(made["principal"], principal);
    let key = made["key"].as_str().expect("key").to_string();
    (key, made["id"].as_str().expect("id").to_string())
}

/// The names `GET /api/tools` lists to the holder of `key`.
fn rest_listing(served: &Served, key: &str) -> Vec<String> {
    let auth = format!("Bearer {key}");
    let listed = served.request("GET", "/api/tools", &[("Authorization", &auth)], None);
    assert_eq!(listed.status, 200, "{}", listed.body);
    listed.json()["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| t["name"].as_str().expect("name").to_string())
        .collect()
}

/// `POST /api/tools/{tool}/call` by the holder of `key`.
fn rest_call(
    address: &str,
    key: &str,
    tool: &str,
    arguments: &str,
) -> toolmux_testkit::http::Response {
    let auth = format!("Bearer {key}");
    request(
        address,
        "POST",
        &format!("/api/tools/{tool}/call"),
        &[
            ("Authorization", &auth),
            ("Content-Type", "application/json"),
        ],
        Some(arguments),
    )
}

/// A plan for the Python client on `/mcp` with `key` as its bearer.
fn plan(served: &Served, key: &str, steps: Value) -> Value {
    json!({
        "transport": "http",
        "url": served.mcp_url(),
        "headers": {"Authorization": format!("Bearer {key}")},
        "steps": steps,
    })
}

/// The `cacheScope` of a 2026-07-28 `tools/list` sent with `key`.
fn cache_scope(served: &Served, key: &str) -> Value {
    let auth = format!("Bearer {key}");
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    }}});
    let answer = served.request(
        "POST",
        "/mcp",
        &[
            ("Authorization", &auth),
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", "tools/list"),
        ],
        Some(&body.to_string()),
    );
    assert_eq!(answer.status, 200, "{}", answer.body);
    let json = answer
        .body
        .lines()
        .find_map(|l| l.strip_prefix("data:"))
        .unwrap_or(&answer.body)
        .trim()
        .to_string();
    let message: Value = serde_json::from_str(&json).expect("one JSON-RPC message");
    message["result"]["cacheScope"].clone()
}

/// The execution log's entries once there are `count` of them.
fn logged(served: &Served, count: usize) -> Vec<Value> {
    let mut entries = Vec::new();
    wait_until("the calls are logged", || {
        entries = served.get_with_key("/api/logs").json()["entries"]
            .as_array()
            .expect("entries")
            .clone();
        entries.len() >= count
    });
    entries
}

#[test]
fn three_principals_list_and_call_what_their_roles_grant_and_a_revoked_key_stops_at_once() {
    let project = toolmux_project();
    project.config(&config());
    project.write("notes/todo.md", "milk\n");
    let (alice, alice_id) = create_key(&project, "alice");
    let (bot, _) = create_key(&project, "ci-bot");
    let (guest, _) = create_key(&project, "guest");
    // Only the hashes are kept.
    let saved = std::fs::read_to_string(project.config_file()).expect("config");
    for key in [&alice, &bot, &guest] {
        assert!(key.starts_with("tmk_") && !saved.contains(key.as_str()));
    }
    assert_eq!(
        project.saved_config()["principals"]["alice"]["keys"][0]["id"],
        alice_id
    );
    let unknown = project.run_keyed(&["keys", "create", "--principal", "mallory"]);
    assert_eq!(unknown.code(), 2);
    assert_eq!(
        unknown.stderr(),
        format!(
            "toolmux: there is no principal `mallory` in {}; the principals there are: alice, \
             ci-bot, guest (add `principals.mallory` first)\n",
            project.config_file().display()
        )
    );

    let served = Served::start(&project, &[]);
    let file_tools = ["file_edit", "file_read", "file_search", "file_write"];

    // Listings differ per caller, over REST and MCP alike; the owner's key sees everything.
    let alice_tools = ["file_read", "grep", "search_tools"];
    assert_eq!(rest_listing(&served, &alice), alice_tools);
    assert_eq!(rest_listing(&served, &bot), file_tools);
    assert_eq!(rest_listing(&served, &guest), Vec::<String>::new());
    assert_eq!(
        rest_listing(&served, KEY).len(),
        toolmux_testkit::served::DEFAULT_TOOLS.len()
    );
    let over_mcp = |key: &str, steps: Value| run_mcp_steps(&plan(&served, key, steps));
    let list = json!([{"op": "list"}]);
    assert_eq!(tool_names(&over_mcp(&alice, list.clone())[0]), alice_tools);
    assert_eq!(tool_names(&over_mcp(&bot, list.clone())[0]), file_tools);
    assert_eq!(tool_names(&over_mcp(&guest, list)[0]), Vec::<String>::new());
    // Code mode's search finds only what the caller may call.
    let searched = over_mcp(
        &alice,
        json!([{"op": "call", "name": "search_tools", "arguments": {"query": "", "limit": 50}}]),
    );
    let found: Vec<&str> = searched[0]["result"]["structuredContent"]["matches"]
        .as_array()
        .unwrap_or_else(|| panic!("no matches in {searched:?}"))
        .iter()
        .map(|m| m["tool"].as_str().expect("tool"))
        .collect();
    assert_eq!(found, ["file_read", "grep"]);
    // A 2026-07-28 client is told the list is its own.
    assert_eq!(cache_scope(&served, &alice), "private");
    assert_eq!(cache_scope(&served, KEY), "public");

    // A denied call is refused on both channels and logged with its caller.
    let refused = "tool `file_search` is not served by the REST API, or not granted to `alice` \
                   by its roles";
    rest_call(
        &served.address,
        &alice,
        "file_search",
        r#"{"pattern": "*.md"}"#,
    )
    .exact_error(403, "not_served", refused);
    let mcp_refusal = over_mcp(
        &alice,
        json!([{"op": "call", "name": "file_search", "arguments": {"pattern": "*.md"}}]),
    );
    assert_eq!(
        mcp_refusal[0],
        json!({"error": {"code": -32602, "message":
            "tool `file_search` is not served by this MCP server (filtered out by --tools, \
             --exclude or --pass-through), or not granted to `alice` by its roles"}})
    );
    let read = rest_call(
        &served.address,
        &alice,
        "file_read",
        r#"{"path": "notes/todo.md"}"#,
    );
    assert_eq!(read.status, 200, "{}", read.body);
    let entries = logged(&served, 3);
    let seen: Vec<(&str, &str, &str)> = entries
        .iter()
        .map(|e| {
            let field = |name: &str| e[name].as_str().unwrap_or_default();
            (field("tool"), field("caller"), field("outcome"))
        })
        .collect();
    for expected in [
        ("file_search", "alice", "invalid"),
        ("file_read", "alice", "ok"),
    ] {
        assert!(seen.contains(&expected), "{expected:?} not in {seen:?}");
    }

    // A role's `ask` asks even where the tool's policy allows, and the approval names the
    // caller.
    let address = served.address.clone();
    let waiting = std::thread::spawn({
        let bot = bot.clone();
        move || rest_call(&address, &bot, "file_read", r#"{"path": "notes/todo.md"}"#)
    });
    let pending = served.next_approval();
    assert_eq!(pending["request"]["caller"], "ci-bot");
    assert_eq!(pending["request"]["tool"], "file_read");
    let message = pending["request"]["message"].as_str().expect("message");
    assert!(
        message.starts_with(
            "ci-bot wants to run `file_read`. Allow `file_read` from `workspace` to run with \
             these arguments?"
        ),
        "{message}"
    );
    let id = pending["id"].as_str().expect("id");
    let answered = served.post(&format!("/api/approvals/{id}"), r#"{"decision": "allow"}"#);
    assert_eq!(answered.status, 204, "{}", answered.body);
    let allowed = waiting.join().expect("call thread");
    assert_eq!(allowed.status, 200, "{}", allowed.body);

    // Over MCP the client's own form names the caller too.
    let mut asked = plan(
        &served,
        &bot,
        json!([{"op": "call", "name": "file_read", "arguments": {"path": "notes/todo.md"}}]),
    );
    asked["elicitation"] = json!(["allow_once"]);
    let lines = toolmux_testkit::python_client::run_mcp_client(&asked);
    assert_eq!(lines[1]["result"]["isError"], false, "{lines:?}");
    let form = lines[2]["done"]["elicitations"][0]["message"]
        .as_str()
        .expect("a form");
    assert!(
        form.starts_with(
            "ci-bot wants to run `file_read`. Allow `file_read` (from `workspace`) to run with \
             these arguments?"
        ),
        "{form}"
    );

    // A revoked key is refused by the running server as soon as the edit is read.
    let listed = project.run_keyed(&["keys", "list", "--json"]);
    assert_eq!(listed.json()["keys"].as_array().map(Vec::len), Some(3));
    let revoked = project.run_keyed(&["keys", "revoke", &alice_id]);
    assert_eq!(
        revoked.stdout(),
        format!("revoked the key {alice_id} of `alice`\n")
    );
    let auth = format!("Bearer {alice}");
    wait_until("the revoked key is refused", || {
        served
            .request("GET", "/api/tools", &[("Authorization", &auth)], None)
            .status
            == 401
    });
    served
        .request("GET", "/api/tools", &[("Authorization", &auth)], None)
        .exact_error(401, "unauthorized", "the API key is not valid");
    assert_eq!(rest_listing(&served, &bot), file_tools);
    served.stop();
}
