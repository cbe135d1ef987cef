//! The REST API of `toolmux serve`, driven over real HTTP against the real binary on a real
//! temporary project.

mod support;

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::toolmux_project;
use toolmux_testkit::http::request;
use toolmux_testkit::project::TestProject;
use toolmux_testkit::served::{KEY, Served, config_with_key};

fn project(extra_config: &str) -> TestProject {
    let project = toolmux_project();
    project.config(&config_with_key(extra_config));
    project.write("notes/todo.md", "# Todo\nbuy milk\nwrite tests\n");
    project.write("src/main.rs", "fn main() {\n    println!(\"milk\");\n}\n");
    project
}

fn names(list: &Value) -> Vec<String> {
    list["tools"]
        .as_array()
        .expect("tools array")
        .iter()
        .map(|t| t["name"].as_str().expect("name").to_string())
        .collect()
}

/// The log's entries for `query`, once there are `count` of them (the log is written by a
/// background thread, a moment after the call returns).
fn logged(served: &Served, query: &str, count: usize) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let logs = served.get_with_key(&format!("/api/logs{query}"));
        assert_eq!(logs.status, 200, "{}", logs.body);
        let entries = logs.json()["entries"].as_array().expect("entries").clone();
        if entries.len() >= count || Instant::now() > deadline {
            return entries;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn the_catalog_is_listed_filtered_and_shown() {
    let project = project(r#""policies": {"tools": {"grep": "ask"}}"#);
    let served = Served::start(&project, &[]);

    let all = served.get("/api/tools");
    assert_eq!(all.status, 200, "{}", all.body);
    let all = all.json();
    assert!(all["version"].as_u64().expect("version") >= 1);
    let mut listed = names(&all);
    listed.sort();
    assert_eq!(listed, toolmux_testkit::served::DEFAULT_TOOLS);

    let workspace = served.get("/api/tools?source=workspace").json();
    assert_eq!(names(&workspace).len(), 7);
    assert_eq!(
        names(&served.get("/api/tools?pattern=file_*").json()),
        ["file_edit", "file_read", "file_search", "file_write"]
    );
    assert_eq!(
        names(&served.get("/api/tools?policy=ask").json()),
        [
            "apply_patch",
            "code_execution",
            "delegate",
            "file_edit",
            "file_write",
            "grep",
            "run_session",
            "run_subagent",
            "shell"
        ]
    );

    let grep = served.get("/api/tools/grep");
    assert_eq!(grep.status, 200);
    let grep = grep.json();
    assert_eq!(grep["source"], "workspace");
    assert_eq!(grep["policy"], "ask");
    assert_eq!(grep["inputSchema"]["type"], "object");

    let unknown = served.get("/api/tools/grpe").error(404, "not_found");
    assert_eq!(
        unknown["message"],
        "unknown tool `grpe`; did you mean `grep`?"
    );

    let bad = served
        .get("/api/tools?policy=sometimes")
        .error(400, "malformed");
    assert!(
        bad["message"]
            .as_str()
            .expect("message")
            .starts_with("bad query string")
    );
    served.stop();
}

/// Issue 11: whether a tool may be reached is decided once, by the core's `Catalog::resolve`,
/// whose words REST reports; a lookup answers 404 whatever the reason (a call to a disabled tool
/// is a 403), keeping the core's code so a client can tell why.
#[test]
fn a_tool_lookup_reports_the_cores_refusal_as_a_404() {
    let project = project(r#""filters": {"exclude": ["grep"]}"#);
    let served = Served::start(&project, &[]);

    let disabled = served.get("/api/tools/grep").error(404, "disabled");
    assert_eq!(
        disabled["message"],
        "tool `grep` is disabled: excluded by pattern `grep`"
    );
    served
        .post("/api/tools/grep/call", "{}")
        .error(403, "disabled");

    let unknown = served.get("/api/tools/file_reed").error(404, "not_found");
    assert_eq!(unknown["details"]["suggestion"], "file_read");
    served.stop();
}

#[test]
fn a_call_returns_the_tools_result_and_is_logged_on_the_rest_channel() {
    let project = project("");
    let served = Served::start(&project, &[]);

    let called = served.post("/api/tools/grep/call", r#"{"pattern": "milk"}"#);
    assert_eq!(called.status, 200, "{}", called.body);
    let called = called.json();
    assert_eq!(called["status"], "success");
    assert_eq!(called["error"], Value::Null);
    let matches = called["structuredContent"]["matches"]
        .as_array()
        .expect("matches");
    assert_eq!(matches.len(), 2);
    assert_eq!(called["content"][0]["type"], "text");

    // A tool's own error is a result with status `error`, not an HTTP failure.
    let missing = served.post("/api/tools/file_read/call", r#"{"path": "nope.txt"}"#);
    assert_eq!(missing.status, 200, "{}", missing.body);
    let missing = missing.json();
    assert_eq!(missing["status"], "error");
    assert!(
        missing["error"]
            .as_str()
            .expect("error text")
            .contains("nope.txt")
    );

    let entries = logged(&served, "?tool=grep", 1);
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0]["channel"], "rest");
    assert_eq!(entries[0]["outcome"], "ok");
    assert_eq!(entries[0]["id"], called["callId"]);

    let metrics = served.get_with_key("/metrics");
    assert_eq!(metrics.status, 200);
    assert!(
        metrics
            .header("content-type")
            .expect("type")
            .starts_with("text/plain")
    );
    assert!(
        metrics
            .body
            .contains("toolmux_calls_total{tool=\"grep\",source=\"workspace\",outcome=\"ok\"} 1"),
        "{}",
        metrics.body
    );
    assert!(
        metrics.body.contains(
            "toolmux_source_up{source=\"workspace\",kind=\"builtin\",state=\"success\"} 1"
        )
    );
    served.stop();
}

#[test]
fn every_refusal_has_its_status_and_the_one_error_shape() {
    let project = project(
        r#""policies": {"tools": {"run_code": "deny"}},
           "toolSettings": {"file_search": {"rateLimit": {"requests": 1, "period": "1m"}}}"#,
    );
    let served = Served::start(&project, &[]);

    // 400: not JSON.
    let e = served
        .post("/api/tools/grep/call", "{not json")
        .error(400, "malformed");
    assert!(
        e["message"]
            .as_str()
            .expect("message")
            .starts_with("the body is not valid")
    );
    // 401: no key, a wrong key.
    served
        .request("POST", "/api/tools/grep/call", &[], Some("{}"))
        .error(401, "unauthorized");
    let wrong = served.request(
        "POST",
        "/api/tools/grep/call",
        &[("X-API-Key", "not-the-key")],
        Some("{}"),
    );
    assert_eq!(
        wrong.error(401, "unauthorized")["message"],
        "the API key is not valid"
    );
    assert_eq!(
        wrong.header("www-authenticate"),
        Some("Bearer realm=\"toolmux\"")
    );
    // 403: a foreign Host, a denied tool.
    served
        .request("GET", "/api/health", &[("Host", "rebind.example:80")], None)
        .error(403, "forbidden");
    let denied = served
        .post("/api/tools/run_code/call", r#"{"code": "1"}"#)
        .error(403, "denied");
    assert!(
        denied["message"]
            .as_str()
            .expect("message")
            .starts_with("tool `run_code` was denied")
    );
    // 404: an unknown tool, an unknown route.
    served
        .post("/api/tools/nope/call", "{}")
        .error(404, "not_found");
    let route = served
        .get_with_key("/api/nothing-here")
        .error(404, "not_found");
    assert_eq!(route["message"], "no API route at `/api/nothing-here`");
    // 422: every violation listed.
    let invalid = served
        .post("/api/tools/grep/call", r#"{"patern": "x"}"#)
        .error(422, "invalid_arguments");
    assert_eq!(
        invalid["details"]["violations"],
        json!([
            {"pointer": "", "message": "unexpected argument `patern`: the tool's input schema does not allow it"},
            {"pointer": "", "message": "\"pattern\" is a required property"},
        ])
    );
    // 429, with Retry-After.
    let first = served.post("/api/tools/file_search/call", r#"{"pattern": "**/*.md"}"#);
    assert_eq!(first.status, 200, "{}", first.body);
    let limited = served.post("/api/tools/file_search/call", r#"{"pattern": "**/*.md"}"#);
    limited.error(429, "rate_limited");
    let retry: u64 = limited
        .header("retry-after")
        .expect("Retry-After")
        .parse()
        .expect("seconds");
    assert!((1..=60).contains(&retry), "{retry}");
    served.stop();
}

/// Issue 11: a body that is JSON but not an object was a 400 `malformed` on REST and a 422
/// `invalid_arguments` on every other channel. One answer: the pipeline's, with the violation.
#[test]
fn non_object_call_body_is_422_invalid_arguments_as_on_every_other_channel() {
    let project = project("");
    let served = Served::start(&project, &[]);
    for (body, kind) in [
        ("[\"needle\"]", "an array"),
        ("\"needle\"", "a string"),
        ("42", "a number"),
    ] {
        let e = served
            .post("/api/tools/grep/call", body)
            .error(422, "invalid_arguments");
        let violations = e["details"]["violations"].as_array().expect("violations");
        assert_eq!(violations.len(), 1, "{body}: {e}");
        assert_eq!(violations[0]["pointer"], "", "{body}: {e}");
        let message = violations[0]["message"].as_str().expect("message");
        assert!(
            message.contains("object") && message.contains(kind),
            "{body}: {e}"
        );
    }
    // Still malformed when it is not JSON at all.
    served
        .post("/api/tools/grep/call", "[1,")
        .error(400, "malformed");
    served.stop();
}

#[test]
fn a_call_past_its_time_limit_is_a_504() {
    let project = project(r#""toolSettings": {"run_code": {"timeoutMs": 300}}"#);
    let served = Served::start(&project, &[]);
    let started = Instant::now();
    let e = served
        .post("/api/tools/run_code/call", r#"{"code": "while (true) {}"}"#)
        .error(504, "timeout");
    assert_eq!(e["message"], "tool `run_code` timed out after 300ms");
    assert_eq!(e["details"]["timeoutMs"], 300);
    assert!(started.elapsed() < Duration::from_secs(10));
    served.stop();
}

#[test]
fn an_ask_call_waits_in_approvals_until_a_person_answers() {
    let project = project(r#""policies": {"tools": {"grep": "ask"}}"#);
    let served = Served::start(&project, &[]);
    let address = served.address.clone();

    let answer_next = |decision: &str| {
        let pending = served.next_approval();
        assert_eq!(pending["request"]["tool"], "grep");
        assert_eq!(pending["request"]["channel"], "rest");
        assert_eq!(pending["request"]["arguments"], json!({"pattern": "milk"}));
        let id = pending["id"].as_str().expect("id").to_string();
        let answered = served.post(&format!("/api/approvals/{id}"), decision);
        assert_eq!(answered.status, 204, "{}", answered.body);
        id
    };
    let call = move || {
        let auth = format!("Bearer {KEY}");
        request(
            &address,
            "POST",
            "/api/tools/grep/call",
            &[("Authorization", &auth)],
            Some(r#"{"pattern": "milk"}"#),
        )
    };

    let waiting = std::thread::spawn(call.clone());
    let id = answer_next(r#"{"decision": "allow"}"#);
    let allowed = waiting.join().expect("call thread");
    assert_eq!(allowed.status, 200, "{}", allowed.body);
    assert_eq!(allowed.json()["status"], "success");
    // Answered once: the id is gone.
    served
        .post(&format!("/api/approvals/{id}"), r#"{"decision": "allow"}"#)
        .error(404, "not_found");

    let waiting = std::thread::spawn(call);
    answer_next(r#"{"decision": "deny", "reason": "not today"}"#);
    let denied = waiting.join().expect("call thread");
    let e = denied.error(403, "denied");
    assert_eq!(e["message"], "tool `grep` was denied: not today");

    served
        .post("/api/approvals/not-a-uuid", r#"{"decision": "allow"}"#)
        .error(400, "malformed");
    served.stop();
}

#[test]
fn the_files_routes_call_the_workspace_tools_inside_the_root() {
    let project = project("");
    let served = Served::start(&project, &[]);

    let listing = served.get_with_key("/api/files?path=notes");
    assert_eq!(listing.status, 200, "{}", listing.body);
    assert_eq!(listing.json()["entries"][0]["path"], "notes/todo.md");

    let content = served
        .get_with_key("/api/files/content?path=notes/todo.md&offset=2&limit=1")
        .json();
    assert_eq!(content["content"], "buy milk\n");
    assert_eq!(content["startLine"], 2);

    let found = served
        .get_with_key("/api/files/search?pattern=**/*.rs")
        .json();
    assert_eq!(found["files"], json!(["src/main.rs"]), "{found}");

    let grep = served
        .get_with_key("/api/files/grep?pattern=milk&glob=*.rs")
        .json();
    assert_eq!(grep["matches"][0]["path"], "src/main.rs");

    let outside = served
        .get_with_key("/api/files/content?path=../secret")
        .error(400, "tool_error");
    assert_eq!(
        outside["message"],
        "path `../secret` leaves the project root"
    );
    // The query is the tool's arguments, read and checked by the tool's input schema: a
    // missing or unknown argument is the pipeline's 422 naming it, a value not of its
    // property's type a malformed request naming both.
    let missing = served
        .get_with_key("/api/files/content")
        .error(422, "invalid_arguments");
    assert!(missing.to_string().contains("path"), "{missing}");
    let unknown = served
        .get_with_key("/api/files/content?path=notes/todo.md&colour=teal")
        .error(422, "invalid_arguments");
    assert!(unknown.to_string().contains("colour"), "{unknown}");
    served
        .get_with_key("/api/files/content?path=notes/todo.md&limit=many")
        .exact_error(
            400,
            "malformed",
            "bad query string: `limit` must be a whole number, not `many`",
        );
    served
        .get_with_key("/api/files/content?path=a&path=b")
        .exact_error(
            400,
            "malformed",
            "bad query string: `path` is given more than once",
        );

    // They went through the pipeline: each is in the log, the two the tool's schema refused
    // too (a malformed query string never reaches the tool).
    let entries = logged(&served, "?limit=10", 7);
    let tools: Vec<&str> = entries
        .iter()
        .map(|e| e["tool"].as_str().expect("tool"))
        .collect();
    assert_eq!(
        tools,
        [
            "directory_list",
            "file_read",
            "file_search",
            "grep",
            "file_read",
            "file_read",
            "file_read"
        ]
    );
    served.stop();
}

/// Issue 14: once keys exist, only health (and the auth routes) answer without one; reads of the
/// catalog need the key as much as changes do.
#[test]
fn with_keys_reads_and_changes_need_a_key() {
    let project = project("");
    let served = Served::start(&project, &[]);
    assert_eq!(served.get_anonymous("/api/health").status, 200);
    served
        .get_anonymous("/api/tools")
        .error(401, "unauthorized");
    served
        .get_anonymous("/api/tools?includeInternal=true")
        .error(401, "unauthorized");
    assert_eq!(
        served
            .get_with_key("/api/tools?includeInternal=true")
            .status,
        200
    );
    for (method, path) in [
        ("POST", "/api/tools/grep/call"),
        (
            "POST",
            "/api/approvals/0190b5e4-0000-7000-8000-000000000000",
        ),
    ] {
        let none = served.request(method, path, &[], Some("{}"));
        none.error(401, "unauthorized");
        let wrong = served.request(
            method,
            path,
            &[("Authorization", "Bearer wrong")],
            Some("{}"),
        );
        assert_eq!(
            wrong.error(401, "unauthorized")["message"],
            "the API key is not valid"
        );
    }
    served.stop();
}

/// Issue 12, D8: with keys configured, a keyless request on loopback could call the workspace
/// tools through `GET /api/files*` and read every call's arguments and results in `/api/logs`,
/// while `/mcp` with the same configuration refused it. Since issue 14 only health (and the auth
/// routes) stays open.
#[test]
fn d8_keyless_loopback_get_cannot_read_files_or_logs_when_keys_are_set() {
    let project = project(r#""policies": {"tools": {"grep": "ask"}}"#);
    let served = Served::start(&project, &[]);
    let closed = [
        "/api/files?path=notes",
        "/api/files/content?path=notes/todo.md",
        "/api/files/search?pattern=**/*.rs",
        "/api/files/grep?pattern=milk",
        "/api/logs",
        "/api/approvals",
        "/api/prompts",
        "/api/resources",
        "/api/resources/read?uri=test://x",
        "/api/mcp-servers",
        "/api/conversations",
        "/api/models",
        "/metrics",
        "/api/no-such-route",
        "/api/tools",
        "/api/tools/grep",
        "/api/openapi.json",
    ];
    for path in closed {
        let e = served.get_anonymous(path).error(401, "unauthorized");
        assert!(
            e["message"].as_str().expect("message").contains("API key"),
            "{path}: {e}"
        );
        let head = served.request("HEAD", path, &[], None);
        assert_eq!(head.status, 401, "HEAD {path}");
    }
    // Nothing ran: the refused file reads left no call in the log.
    let logs = served.get_with_key("/api/logs").json();
    assert_eq!(logs["entries"], json!([]), "{logs}");
    for path in [
        "/api/files/content?path=notes/todo.md",
        "/api/logs",
        "/metrics",
    ] {
        let ok = served.get_with_key(path);
        assert_eq!(ok.status, 200, "{path}: {}", ok.body);
    }
    let open = served.get_anonymous("/api/health");
    assert_eq!(open.status, 200, "{}", open.body);
    served.stop();
}

/// Issue 14: without a configured key, loopback needs the project's local token, and the
/// refusal says where it is.
#[test]
fn without_a_configured_key_requests_need_the_local_token() {
    let project = toolmux_project();
    let served = Served::start(&project, &[]);
    let e = served
        .request(
            "POST",
            "/api/tools/grep/call",
            &[],
            Some(r#"{"pattern": "x"}"#),
        )
        .error(401, "unauthorized");
    assert!(
        e["message"]
            .as_str()
            .expect("message")
            .contains(".toolmux/state/local-token"),
        "{e}"
    );
    let called = served.post("/api/tools/grep/call", r#"{"pattern": "x"}"#);
    assert_eq!(called.status, 200, "{}", called.body);
    served.stop();
}

#[test]
fn beyond_loopback_every_route_needs_a_key() {
    let project = project("");
    let served = Served::start(&project, &["--bind", "0.0.0.0"]);
    let port = served.address.rsplit(':').next().expect("port").to_string();
    // The server printed 0.0.0.0; talk to it on loopback.
    let address = format!("127.0.0.1:{port}");
    // Health stays open, for load balancers.
    assert_eq!(
        request(&address, "GET", "/api/health", &[], None).status,
        200
    );
    for path in ["/api/tools", "/metrics", "/api/openapi.json"] {
        let e = request(&address, "GET", path, &[], None).error(401, "unauthorized");
        assert!(
            e["message"]
                .as_str()
                .expect("message")
                .contains("beyond loopback"),
            "{e}"
        );
        let auth = format!("Bearer {KEY}");
        let ok = request(&address, "GET", path, &[("Authorization", &auth)], None);
        assert_eq!(ok.status, 200, "{path}: {}", ok.body);
    }
    served.stop();
}

#[test]
fn the_openapi_document_describes_every_route() {
    let project = project("");
    let served = Served::start(&project, &[]);
    let doc = served.get("/api/openapi.json");
    assert_eq!(doc.status, 200);
    let doc = doc.json();
    assert_eq!(doc["openapi"], "3.1.0");
    let mut paths: Vec<&String> = doc["paths"].as_object().expect("paths").keys().collect();
    paths.sort();
    assert_eq!(
        paths,
        [
            "/api/approvals",
            "/api/approvals/stream",
            "/api/approvals/{id}",
            "/api/auth/logout",
            "/api/auth/session",
            "/api/chat",
            "/api/chat/{conversation}/cancel",
            "/api/chat/{conversation}/input",
            "/api/completions",
            "/api/conversations",
            "/api/conversations/{id}",
            "/api/files",
            "/api/files/content",
            "/api/files/grep",
            "/api/files/search",
            "/api/health",
            "/api/import",
            "/api/inputs",
            "/api/inputs/{id}",
            "/api/logs",
            "/api/logs/stream",
            "/api/mcp-servers",
            "/api/mcp-servers/{name}",
            "/api/mcp-servers/{name}/login",
            "/api/mcp-servers/{name}/logout",
            "/api/mcp-servers/{name}/refresh",
            "/api/mcp-servers/{name}/trust",
            "/api/models",
            "/api/openapi.json",
            "/api/prompts",
            "/api/prompts/{name}",
            "/api/resources",
            "/api/resources/read",
            "/api/results/{id}",
            "/api/runners",
            "/api/runners/detect",
            "/api/sessions",
            "/api/sessions/{id}",
            "/api/sessions/{id}/cancel",
            "/api/sessions/{id}/logs",
            "/api/sessions/{id}/stream",
            "/api/skills",
            "/api/skills/{name}",
            "/api/specs",
            "/api/specs/board",
            "/api/specs/search",
            "/api/specs/stats",
            "/api/specs/tokens",
            "/api/specs/validation",
            "/api/specs/{spec}",
            "/api/specs/{spec}/relationships",
            "/api/tasks",
            "/api/tasks/{id}",
            "/api/tasks/{id}/notes",
            "/api/tools",
            "/api/tools/{name}",
            "/api/tools/{name}/call",
            "/metrics",
        ]
    );
    assert_eq!(
        doc["components"]["securitySchemes"]["bearer"]["scheme"],
        "bearer"
    );
    served.stop();
}

#[cfg(unix)]
#[test]
fn a_unix_socket_is_created_for_its_owner_only_and_removed_on_exit() {
    use std::io::{Read, Write};
    use std::os::unix::fs::PermissionsExt;

    let project = project("");
    let socket = project.path().join("toolmux.sock");
    let mut child = project
        .cmd()
        .args(["serve", "--socket"])
        .arg(&socket)
        .env("TOOLMUX_TEST_KEY", KEY)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start toolmux serve --socket");
    let mut stderr = std::io::BufReader::new(child.stderr.take().expect("stderr"));
    let mut line = String::new();
    std::io::BufRead::read_line(&mut stderr, &mut line).expect("first line");
    assert_eq!(
        line.trim(),
        format!("toolmux: serving MCP at unix:{}:/mcp", socket.display())
    );
    let mode = std::fs::metadata(&socket)
        .expect("socket")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);

    let mut stream = std::os::unix::net::UnixStream::connect(&socket).expect("connect");
    stream
        .write_all(b"GET /api/health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .expect("send");
    let mut response = String::new();
    stream.read_to_string(&mut response).expect("read");
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    assert!(response.contains("\"status\":\"ok\""), "{response}");

    let pid = child.id().to_string();
    let sent = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .expect("kill");
    assert!(sent.success());
    let status = child.wait().expect("wait");
    assert!(status.success(), "{status}");
    assert!(!socket.exists(), "the socket file was left behind");
}

#[test]
fn mcp_servers_are_listed_and_a_failed_refresh_is_a_503_naming_the_cause() {
    let project = project(r#""mcpServers": {"broken": {"command": "toolmux-no-such-server"}}"#);
    let served = Served::start(&project, &[]);
    let list = served.get_with_key("/api/mcp-servers");
    assert_eq!(list.status, 200, "{}", list.body);
    let list = list.json();
    assert_eq!(list["servers"][0]["name"], "broken");
    assert_eq!(list["servers"][0]["tools"], json!([]));
    assert_eq!(
        served.get_with_key("/api/mcp-servers/broken").json()["name"],
        "broken"
    );
    served
        .get_with_key("/api/mcp-servers/nope")
        .error(404, "not_found");
    served
        .request("POST", "/api/mcp-servers/broken/refresh", &[], None)
        .error(401, "unauthorized");
    let failed = served
        .post("/api/mcp-servers/broken/refresh", "")
        .error(503, "unavailable");
    assert!(
        failed["message"]
            .as_str()
            .expect("message")
            .starts_with("discovery of `broken` failed: "),
        "{failed}"
    );
    let after = served.get_with_key("/api/mcp-servers/broken").json();
    assert_eq!(after["discovery"]["discoveryStatus"], "failed", "{after}");
    served.stop();
}
