//! Another origin — another port of the same host above all — gets nothing from a signed-in
//! `toolmux serve` (issue 28, D26; THREATS.md rule 3): no change, no read, and never a usable
//! credential. In real chromium (playwright-core, `tests/peers/webapp/hostile.mjs`): after the
//! person signs in at `127.0.0.1:PORT`, a page served from another loopback port tries every
//! way a page can send a request through the person's browser — `fetch` in every content type,
//! `no-cors`, with CORS, form posts, `<img>` and `<script>` — and nothing is created, run or
//! read; what the browser gave that page's own server (the cookie: cookies are not bound to a
//! port) is replayed from Rust and refused. Raw HTTP tests check each rule on its own.

mod support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use support::toolmux_project;
use toolmux_testkit::http::Response;
use toolmux_testkit::peers::peer_file;
use toolmux_testkit::project::TestProject;
use toolmux_testkit::served::Served;

/// One request the attacker's server received.
#[derive(Clone, Debug)]
struct Received {
    path: String,
    headers: Vec<(String, String)>,
}

/// The attacker's web server, on a loopback port of its own: it serves the attack page and
/// keeps every request the browser sends it, headers included.
struct Attacker {
    port: u16,
    received: Arc<Mutex<Vec<Received>>>,
}

/// A 1×1 GIF, for the attacker's own image requests.
const PIXEL: &[u8] = b"GIF89a\x01\x00\x01\x00\x80\x00\x00\x00\x00\x00\xff\xff\xff!\xf9\x04\x01\x00\x00\x00\x00,\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02D\x01\x00;";

impl Attacker {
    fn start(page: String) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the attacker's server");
        let port = listener.local_addr().expect("address").port();
        let received = Arc::new(Mutex::new(Vec::new()));
        let kept = Arc::clone(&received);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let page = page.clone();
                let kept = Arc::clone(&kept);
                std::thread::spawn(move || serve_one(stream, &page, &kept));
            }
        });
        Self { port, received }
    }

    fn received(&self) -> Vec<Received> {
        self.received.lock().map(|r| r.clone()).unwrap_or_default()
    }
}

fn serve_one(stream: std::net::TcpStream, page: &str, kept: &Mutex<Vec<Received>>) {
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    if reader.read_line(&mut line).is_err() {
        return;
    }
    let path = line.split_whitespace().nth(1).unwrap_or("/").to_string();
    let mut headers = Vec::new();
    let mut length = 0usize;
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).is_err() || header.trim().is_empty() {
            break;
        }
        if let Some((name, value)) = header.trim_end().split_once(':') {
            if name.eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().unwrap_or(0).min(1 << 20);
            }
            headers.push((name.to_string(), value.trim().to_string()));
        }
    }
    let mut body = vec![0; length];
    let _ = reader.read_exact(&mut body);
    if let Ok(mut all) = kept.lock() {
        all.push(Received {
            path: path.clone(),
            headers,
        });
    }
    let (kind, bytes): (&str, &[u8]) = if path.starts_with("/attack.html") {
        ("text/html; charset=utf-8", page.as_bytes())
    } else {
        ("image/gif", PIXEL)
    };
    let mut stream = reader.into_inner();
    let head = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n",
        bytes.len()
    );
    let _ = stream.write_all(head.as_bytes());
    let _ = stream.write_all(bytes);
}

/// The attack page: every request a page can make the browser send to `target`, one after the
/// other, each outcome noted in `window.results`; its title says when it is done.
const ATTACK_PAGE: &str = r#"<!doctype html>
<html><head><meta charset="utf-8"><title>attacking</title></head><body>
<img src="/probe.gif" alt="">
<script>
const T = "__TARGET__";
window.results = [];
const note = (name, outcome) => window.results.push({ name, ...outcome });
const server = (n) => JSON.stringify({ name: "pwn-" + n, command: "sh", args: ["-c", "touch pwned-server-" + n] });
const tool = (n) => JSON.stringify({ name: "pwn_" + n, description: "x", command: ["sh", "-c", "touch pwned-tool-" + n] });
const setting = () => JSON.stringify({ path: "policies.default", value: "allow" });
const shell = (n) => JSON.stringify({ command: "touch pwned-shell-" + n });
const initialize = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "evil", version: "1" } } });
async function attempt(name, path, init) {
  try {
    const r = await fetch(T + path, { credentials: "include", ...init });
    let body = null;
    try { body = await r.text(); } catch (e) { body = "unreadable: " + e; }
    note(name, { kind: "fetch", type: r.type, status: r.status, body: body === null ? null : body.slice(0, 200) });
  } catch (e) {
    note(name, { kind: "fetch", error: String(e) });
  }
}
function form(name, path, enctype, fields) {
  return new Promise((resolve) => {
    const frame = document.createElement("iframe");
    frame.name = "frame-" + window.results.length;
    document.body.appendChild(frame);
    const f = document.createElement("form");
    f.method = "POST"; f.action = T + path; f.enctype = enctype; f.target = frame.name;
    for (const [k, v] of fields) {
      const input = document.createElement("input");
      input.type = "hidden"; input.name = k; input.value = v; f.appendChild(input);
    }
    document.body.appendChild(f);
    let settled = false;
    const done = (how) => { if (!settled) { settled = true; note(name, { kind: "form", how }); resolve(); } };
    frame.addEventListener("load", () => done("loaded"), { once: true });
    // A frame whose answer is refused may never fire `load`: the test goes on without it.
    setTimeout(() => done("no load event"), 5000);
    f.submit();
  });
}
function tag(kind, path) {
  return new Promise((resolve) => {
    const el = document.createElement(kind);
    el.onload = () => { note(kind + " " + path, { kind: "tag", how: "loaded" }); resolve(); };
    el.onerror = () => { note(kind + " " + path, { kind: "tag", how: "error" }); resolve(); };
    el.src = T + path;
    document.body.appendChild(el);
  });
}
(async () => {
  const simple = [
    ["text-plain", (b) => ({ headers: { "Content-Type": "text/plain" }, body: b })],
    ["form-urlencoded", (b) => ({ body: new URLSearchParams({ [b]: "" }) })],
    ["multipart", (b) => { const d = new FormData(); d.append("x", b); return { body: d }; }],
    ["json-header-in-no-cors", (b) => ({ headers: { "Content-Type": "application/json" }, body: b })],
    ["blob-without-type", (b) => ({ body: new Blob([b]) })],
  ];
  for (const [kind, make] of simple) {
    const n = kind.replace(/-/g, "_");
    for (const [what, path, body] of [
      ["add a server", "/api/mcp-servers", server(n)],
      ["add a script tool", "/api/tools", tool(n)],
      ["call the tool it added", "/api/tools/pwn_" + n + "/call", "{}"],
      ["call the shell", "/api/tools/shell/call", shell(n)],
      ["write the configuration", "/api/tools/config_set/call", setting()],
      ["import servers", "/api/import", "{}"],
      ["MCP initialize", "/mcp", initialize],
    ]) {
      await attempt(`no-cors ${kind}: ${what}`, path, { method: "POST", mode: "no-cors", ...make(body) });
    }
  }
  await attempt("no-cors POST without a body: refresh a server", "/api/mcp-servers/pwn-text_plain/refresh", { method: "POST", mode: "no-cors" });
  // With CORS: JSON, or a guessed session header, need a preflight the server never grants.
  await attempt("cors JSON: add a server", "/api/mcp-servers", { method: "POST", mode: "cors", headers: { "Content-Type": "application/json" }, body: server("cors_json") });
  await attempt("cors guessed session key: add a server", "/api/mcp-servers", { method: "POST", mode: "cors", headers: { "Content-Type": "text/plain", "X-Toolmux-Session": "guess" }, body: server("cors_key") });
  await attempt("cors PUT: replace a tool", "/api/tools/grep", { method: "PUT", mode: "cors", headers: { "Content-Type": "text/plain" }, body: tool("put") });
  // Reads.
  for (const path of ["/api/logs", "/api/tools", "/api/auth/session", "/api/mcp-servers", "/metrics", "/api/files/content?path=secret.txt"]) {
    await attempt("cors read " + path, path, { mode: "cors" });
    await attempt("no-cors read " + path, path, { mode: "no-cors" });
  }
  // Form posts, which navigate a frame: plain text shaped as JSON, a form, multipart.
  await form("form text/plain shaped as JSON: add a server", "/api/mcp-servers", "text/plain",
    [['{"name":"pwn-form","command":"sh","args":["-c","touch pwned-form"],"x":"', '"}']]);
  await form("form text/plain shaped as JSON: add a tool", "/api/tools", "text/plain",
    [['{"name":"pwn_form","description":"x","command":["sh","-c","touch pwned-form-tool"],"x":"', '"}']]);
  await form("form urlencoded: add a server", "/api/mcp-servers", "application/x-www-form-urlencoded",
    [["name", "pwn-form-2"], ["command", "sh"]]);
  await form("form multipart: add a server", "/api/mcp-servers", "multipart/form-data",
    [["name", "pwn-form-3"], ["command", "sh"]]);
  // Tags, which send the cookie with a GET.
  await tag("img", "/api/logs");
  await tag("script", "/api/tools");
  await tag("script", "/api/files/content?path=secret.txt");
  await tag("img", "/api/auth/session");
  // The attacker's own server: the browser sends it the host's cookies too.
  await new Promise((resolve) => { const i = new Image(); i.onload = i.onerror = resolve; i.src = "/probe-after.gif"; });
  document.title = "attacks done";
})();
</script></body></html>
"#;

/// What a request without a credential is told, on `/api` and `/mcp` alike.
const SEND_A_CREDENTIAL: &str = "this request needs a credential: open the web app with the URL \
    `toolmux serve` printed, or send the project's local token (`.toolmux/state/local-token`) or \
    a configured API key as `Authorization: Bearer <key>` or `X-API-Key: <key>`";

/// What a request that changes something gets when a browser would not have preflighted it.
const SEND_JSON: &str = "a request that changes something must send `Content-Type: \
    application/json` or a credential header (`Authorization`, `X-API-Key`, or the web app's \
    `X-Toolmux-Session`): a form or plain-text request could come from any web page";

/// What a request from an origin that is not the server's own (nor configured) gets.
fn foreign_origin(origin: &str) -> String {
    format!(
        "Origin `{origin}` is not allowed: start the server with --allow-origin {origin} or add \
         it to `server.allowedOrigins`"
    )
}

/// Every file in the project whose name starts with `pwned`.
fn pwned(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if entry.file_name().to_string_lossy().starts_with("pwned") {
                found.push(path);
            }
        }
    }
    found
}

/// A project with a file the attacker would like to read, and the shell allowed, so that only
/// the origin and credential rules stand between the attacker and a command.
fn project() -> TestProject {
    let project = toolmux_project();
    project.write("secret.txt", "the secret plan\n");
    project.config(r#"{"policies": {"tools": {"shell": "allow", "config_set": "allow"}}}"#);
    project
}

/// Nothing the attacks aimed at happened: no file, no server or tool added, the configuration as
/// it was, no call in the execution log.
fn assert_nothing_happened(project: &TestProject, served: &Served, config_before: &Value) {
    assert_eq!(
        pwned(project.path()),
        Vec::<PathBuf>::new(),
        "a command ran"
    );
    assert_eq!(
        &project.saved_config(),
        config_before,
        "the configuration changed"
    );
    let servers = served.get("/api/mcp-servers").json();
    assert_eq!(servers["servers"], json!([]), "{servers}");
    let listed = served.get("/api/tools").body;
    assert!(!listed.contains("pwn"), "a tool was added: {listed}");
    let log = served.get("/api/logs").json();
    assert_eq!(log["entries"], json!([]), "a call was made: {log}");
}

/// The `Origin` among replayed headers, if any.
fn origin_of<'a>(headers: &[(&'a str, &'a str)]) -> Option<&'a str> {
    headers
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case("origin"))
        .map(|(_, value)| *value)
}

/// The session a page gets for the token: its cookie (`name=value`) and its key.
fn sign_in(served: &Served) -> (String, String) {
    let body = json!({"token": served.credential()}).to_string();
    let login = served.request(
        "POST",
        "/api/auth/session",
        &[("Content-Type", "application/json")],
        Some(&body),
    );
    assert_eq!(login.status, 200, "{}", login.body);
    let set = login.headers_named("set-cookie");
    assert_eq!(set.len(), 1, "{:?}", login.headers);
    let cookie = set[0].split(';').next().expect("name=value").to_string();
    assert!(
        cookie.starts_with(&format!("toolmux_session_{}=", served.port())),
        "{cookie}"
    );
    let key = login.json()["sessionKey"]
        .as_str()
        .expect("a session key")
        .to_string();
    (cookie, key)
}

#[test]
fn d26_a_page_on_another_loopback_port_can_neither_change_nor_read_anything() {
    assert!(
        Path::new("/usr/bin/chromium").is_file(),
        "chromium is not installed: `apt-get install -y chromium` (tests/peers/webapp/apt.txt)"
    );
    assert!(
        peer_file("webapp/node_modules/playwright-core/package.json").is_file(),
        "run `npm ci` in tests/peers/webapp"
    );
    let project = project();
    let config_before = project.saved_config();
    let served = Served::start(&project, &[]);
    let target = format!("http://127.0.0.1:{}", served.port());
    let attacker = Attacker::start(ATTACK_PAGE.replace("__TARGET__", &target));
    let scratch = tempfile::tempdir().expect("a scratch folder");
    let out = Command::new("node")
        .arg(peer_file("webapp/hostile.mjs"))
        .arg(&served.web_url)
        .arg(format!("http://127.0.0.1:{}/attack.html", attacker.port))
        .arg(scratch.path())
        .output()
        .expect("run node");
    assert!(
        out.status.success(),
        "the browser flow failed:\n{}\nserver:\n{}",
        String::from_utf8_lossy(&out.stderr),
        served.stderr()
    );
    let found: Value = serde_json::from_slice(&out.stdout).expect("the script prints JSON");
    eprintln!("the attacks and what they got: {found:#}");

    // The person was signed in all along, and stays signed in across a reload.
    assert_eq!(found["stillSignedIn"], 200, "{found}");
    assert_eq!(found["signedInAfterReload"], 200, "{found}");
    let cookie_name = format!("toolmux_session_{}", served.port());
    assert_eq!(
        found["cookies"],
        json!([{"name": cookie_name, "httpOnly": true, "sameSite": "Strict"}]),
        "{found}"
    );
    assert_eq!(found["evilSawKey"], Value::Null, "{found}");

    // Nothing the attacker's page received could be read: every fetch failed or was opaque.
    let results = found["results"].as_array().expect("results");
    assert!(results.len() > 40, "{found}");
    for result in results {
        if result["kind"] == "fetch" {
            let opaque =
                result["type"] == "opaque" && result["status"] == 0 && result["body"] == "";
            let failed = result["error"].is_string();
            assert!(opaque || failed, "the attacker read an answer: {result}");
        }
        if result["kind"] == "tag" {
            assert_eq!(result["how"], "error", "{result}");
        }
    }
    assert_nothing_happened(&project, &served, &config_before);

    // The browser did give the attacker's server the cookie (cookies are not bound to a
    // port), and never the session key.
    let key = found["sessionKey"].as_str().expect("the session key");
    let received = attacker.received();
    let with_cookie: Vec<&Received> = received
        .iter()
        .filter(|r| {
            r.headers.iter().any(|(name, value)| {
                name.eq_ignore_ascii_case("cookie") && value.contains(&format!("{cookie_name}="))
            })
        })
        .collect();
    assert!(
        !with_cookie.is_empty(),
        "the browser sent the attacker's server no cookie, so this test proves less than it \
         should: {received:?}"
    );
    for request in &received {
        assert!(!request.path.contains(key), "{request:?}");
        for (name, value) in &request.headers {
            assert!(
                !value.contains(key),
                "the session key reached the attacker in {name}"
            );
        }
    }

    // Whatever it received, replayed from Rust, is refused everywhere.
    for request in with_cookie {
        let replayed: Vec<(&str, &str)> = request
            .headers
            .iter()
            .filter(|(name, _)| {
                !["host", "connection", "content-length", "content-type"]
                    .contains(&name.to_ascii_lowercase().as_str())
            })
            .map(|(n, v)| (n.as_str(), v.as_str()))
            .collect();
        for (method, path, body) in [
            ("GET", "/api/tools", None),
            ("GET", "/api/logs", None),
            ("GET", "/api/auth/session", None),
            ("GET", "/api/files/content?path=secret.txt", None),
            ("POST", "/api/tools/config_get/call", Some("{}")),
            (
                "POST",
                "/api/tools/shell/call",
                Some(r#"{"command": "touch pwned-replay"}"#),
            ),
            (
                "POST",
                "/api/mcp-servers",
                Some(
                    r#"{"name": "pwn-replay", "command": "sh", "args": ["-c", "touch pwned-replay-server"]}"#,
                ),
            ),
        ] {
            let mut headers = replayed.clone();
            headers.push(("Content-Type", "application/json"));
            headers.push(("Accept", "application/json, text/event-stream"));
            let answer = served.request(method, path, &headers, body);
            // A request the page made itself came with its origin; a tag's came without one,
            // and the cookie alone is no credential.
            match origin_of(&replayed) {
                Some(origin) => answer.exact_error(403, "forbidden", &foreign_origin(origin)),
                // The sign-in route is open: it says only that the cookie signs nobody in.
                None if path == "/api/auth/session" => {
                    assert_eq!(answer.status, 401, "{}", answer.body);
                    assert_eq!(answer.json(), json!({"authenticated": false}));
                }
                None => answer.exact_error(401, "unauthorized", SEND_A_CREDENTIAL),
            }
        }
        let mut mcp = replayed.clone();
        mcp.push(("Content-Type", "application/json"));
        mcp.push(("Accept", "application/json, text/event-stream"));
        let initialize = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
        let answer = served.request("POST", "/mcp", &mcp, Some(initialize));
        match origin_of(&replayed) {
            Some(origin) => {
                answer.exact_json_rpc_refusal(403, "forbidden", &foreign_origin(origin));
            }
            None => answer.exact_json_rpc_refusal(401, "unauthorized", SEND_A_CREDENTIAL),
        }
    }
    assert_nothing_happened(&project, &served, &config_before);
    served.stop();
}

/// The finding's reproduction, rule by rule, over raw HTTP: the `text/plain` `no-cors` POST of
/// the attack page, with the cookie, from another port's origin.
#[test]
fn d26_the_cookie_alone_a_simple_request_or_another_ports_origin_changes_nothing() {
    let project = project();
    let config_before = project.saved_config();
    let served = Served::start(&project, &[]);
    let (cookie, key) = sign_in(&served);
    let port = served.port();
    let other = format!("http://127.0.0.1:{}", port.wrapping_add(1).max(1024));
    let own = format!("http://127.0.0.1:{port}");
    let body = r#"{"name": "x", "command": "sh", "args": ["-c", "touch pwned"]}"#;
    let post = |headers: &[(&str, &str)]| -> Response {
        served.request("POST", "/api/mcp-servers", headers, Some(body))
    };

    // Exactly what the browser sent in the finding: refused by the origin check.
    post(&[
        ("Cookie", &cookie),
        ("Origin", &other),
        ("Content-Type", "text/plain;charset=UTF-8"),
    ])
    .exact_error(403, "forbidden", &foreign_origin(&other));
    // Even with the key (which no other origin has) and JSON: the origin is another port's.
    post(&[
        ("Cookie", &cookie),
        ("X-Toolmux-Session", &key),
        ("Origin", &other),
        ("Content-Type", "application/json"),
    ])
    .exact_error(403, "forbidden", &foreign_origin(&other));
    for localhost in [
        format!("http://localhost:{port}"),
        "http://localhost:3000".to_string(),
    ] {
        post(&[
            ("Cookie", &cookie),
            ("X-Toolmux-Session", &key),
            ("Origin", &localhost),
        ])
        .exact_error(403, "forbidden", &foreign_origin(&localhost));
    }
    // The cookie replayed without an Origin (by the server that received it): nothing, in
    // any content type.
    for content_type in [
        "application/json",
        "text/plain",
        "application/x-www-form-urlencoded",
    ] {
        post(&[("Cookie", &cookie), ("Content-Type", content_type)]).exact_error(
            401,
            "unauthorized",
            SEND_A_CREDENTIAL,
        );
        served
            .request("GET", "/api/logs", &[("Cookie", &cookie)], None)
            .exact_error(401, "unauthorized", SEND_A_CREDENTIAL);
    }
    // The page's own request, but as a simple one: refused before the body is read as JSON.
    post(&[
        ("Cookie", &cookie),
        ("X-Toolmux-Session", &key),
        ("Origin", &own),
        ("Content-Type", "text/plain"),
    ])
    .exact_error(
        415,
        "unsupported_media_type",
        "the body must be JSON sent as `Content-Type: application/json`; `Content-Type: \
         text/plain` was sent",
    );
    // A key holder's curl `--data` (a form type) is told to send JSON.
    let auth = served.authorization();
    post(&[
        ("Authorization", &auth),
        ("Content-Type", "application/x-www-form-urlencoded"),
    ])
    .exact_error(
        415,
        "unsupported_media_type",
        "the body must be JSON sent as `Content-Type: application/json`; `Content-Type: \
         application/x-www-form-urlencoded` was sent",
    );
    // Without a credential header, a simple POST is refused even where no credential is
    // needed (signing out here, which a page of another origin must not do either).
    served
        .request(
            "POST",
            "/api/auth/logout",
            &[("Cookie", &cookie), ("Content-Type", "text/plain")],
            None,
        )
        .exact_error(415, "unsupported_media_type", SEND_JSON);
    assert_nothing_happened(&project, &served, &config_before);

    // The page's own way works: its origin, the cookie, the key, JSON.
    let page = [
        ("Cookie", cookie.as_str()),
        ("X-Toolmux-Session", key.as_str()),
        ("Origin", own.as_str()),
    ];
    assert_eq!(served.request("GET", "/api/logs", &page, None).status, 200);
    let mut call = page.to_vec();
    call.push(("Content-Type", "application/json"));
    let read = served.request(
        "POST",
        "/api/tools/file_read/call",
        &call,
        Some(r#"{"path": "secret.txt"}"#),
    );
    assert_eq!(read.status, 200, "{}", read.body);
    // `/mcp` follows the same rules: the cookie alone, or a simple POST, is refused.
    let initialize = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    let accept = ("Accept", "application/json, text/event-stream");
    let mcp = |headers: &[(&str, &str)]| served.request("POST", "/mcp", headers, Some(initialize));
    mcp(&[
        ("Cookie", &cookie),
        ("Content-Type", "application/json"),
        accept,
    ])
    .exact_json_rpc_refusal(401, "unauthorized", SEND_A_CREDENTIAL);
    mcp(&[
        ("Cookie", &cookie),
        ("Origin", &other),
        ("Content-Type", "application/json"),
        accept,
    ])
    .exact_json_rpc_refusal(403, "forbidden", &foreign_origin(&other));
    mcp(&[("Cookie", &cookie), ("Content-Type", "text/plain"), accept]).exact_json_rpc_refusal(
        401,
        "unauthorized",
        SEND_A_CREDENTIAL,
    );
    assert_eq!(
        mcp(&[
            ("Cookie", &cookie),
            ("X-Toolmux-Session", &key),
            ("Content-Type", "application/json"),
            accept
        ])
        .status,
        200
    );
    // Signing out needs both halves too; then the key is worthless.
    let logout = served.request(
        "POST",
        "/api/auth/logout",
        &[("Cookie", &cookie), ("X-Toolmux-Session", &key)],
        None,
    );
    assert_eq!(logout.status, 204);
    served.request("GET", "/api/logs", &page, None).exact_error(
        401,
        "unauthorized",
        SEND_A_CREDENTIAL,
    );
    served.stop();
}

/// Configured origins still count, exactly; the defaults are the server's own origin only.
#[test]
fn d26_configured_origins_still_work_and_no_other_loopback_port_is_a_default() {
    let project = toolmux_project();
    project.config(r#"{"server": {"allowedOrigins": ["http://127.0.0.1:18090"]}}"#);
    let served = Served::start(&project, &["--allow-origin", "https://app.example.com"]);
    let auth = served.authorization();
    let from = |origin: &str| {
        served.request(
            "GET",
            "/api/tools",
            &[("Authorization", &auth), ("Origin", origin)],
            None,
        )
    };
    assert_eq!(
        from(&format!("http://127.0.0.1:{}", served.port())).status,
        200
    );
    assert_eq!(from("http://127.0.0.1:18090").status, 200);
    assert_eq!(from("https://app.example.com").status, 200);
    for foreign in [
        "http://127.0.0.1:18091",
        "http://localhost:18090",
        "https://127.0.0.1:18090",
    ] {
        from(foreign).exact_error(403, "forbidden", &foreign_origin(foreign));
    }
    // The page itself follows the same rule.
    served
        .request("GET", "/", &[("Origin", "http://127.0.0.1:18091")], None)
        .exact_error(403, "forbidden", &foreign_origin("http://127.0.0.1:18091"));
    served.stop();
}
