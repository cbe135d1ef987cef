//! Issue 14: `toolmux serve` serves the web app at `/`, and one auth rule covers `/api`, `/mcp`
//! and `/metrics`: a configured key, the project's local token, or the page's session (its
//! cookie and its key, both: issue 28, D26).
//! Every test drives the real binary over real HTTP.

mod support;

use std::io::Read;
use std::time::Duration;

use serde_json::json;
use support::toolmux_project;
use toolmux_testkit::eventually::wait_until;
use toolmux_testkit::http::Response;
use toolmux_testkit::python_client::run_mcp_steps;
use toolmux_testkit::served::{KEY, Served, config_with_key};

/// An MCP `initialize` request, as a client's first POST.
const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;

fn mcp_initialize(served: &Served, headers: &[(&str, &str)]) -> Response {
    let mut all = vec![
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
    ];
    all.extend_from_slice(headers);
    served.request("POST", "/mcp", &all, Some(INITIALIZE))
}

/// The path of the first `/assets/...` file `index.html` names.
fn first_asset(index: &str) -> String {
    let start = index.find("/assets/").expect("index.html names an asset");
    let rest = &index[start..];
    let end = rest.find(['"', '\'']).expect("a quoted asset path");
    rest[..end].to_string()
}

fn assert_page_headers(response: &Response) {
    let csp = response
        .header("content-security-policy")
        .expect("a content security policy");
    assert!(csp.starts_with("default-src 'self'"), "{csp}");
    assert!(csp.contains("connect-src 'self'"), "{csp}");
    assert_eq!(response.header("x-content-type-options"), Some("nosniff"));
    assert_eq!(response.header("referrer-policy"), Some("no-referrer"));
    assert_eq!(response.header("x-frame-options"), Some("DENY"));
}

#[test]
fn the_page_is_served_at_the_root_and_at_every_client_route() {
    let project = toolmux_project();
    let served = Served::start(&project, &[]);
    let index = served.get_anonymous("/");
    assert_eq!(index.status, 200, "{}", index.body);
    assert!(
        index
            .header("content-type")
            .is_some_and(|t| t.starts_with("text/html")),
        "{:?}",
        index.headers
    );
    assert_eq!(index.header("cache-control"), Some("no-cache"));
    assert_page_headers(&index);
    for route in ["/tools", "/chat/0192-abc", "/approvals"] {
        let page = served.get_anonymous(route);
        assert_eq!(page.status, 200, "{route}");
        assert_eq!(page.body, index.body, "{route} is not the app");
    }
    // Paths the API and MCP own never fall through to the app.
    assert_eq!(served.get_anonymous("/api/no-such-route").status, 401);
    assert_eq!(served.get("/api/no-such-route").status, 404);
    assert_eq!(served.get_anonymous("/assets/missing-0000.js").status, 404);

    // The ETag spares the browser a download.
    let etag = index.header("etag").expect("an ETag");
    let again = served.request("GET", "/", &[("If-None-Match", etag)], None);
    assert_eq!(again.status, 304);
    assert!(again.bytes.is_empty());
    served.stop();
}

#[test]
fn assets_are_cached_for_good_and_sent_compressed_as_accepted() {
    let project = toolmux_project();
    let served = Served::start(&project, &[]);
    let asset = first_asset(&served.get_anonymous("/").body);
    let plain = served.get_anonymous(&asset);
    assert_eq!(plain.status, 200, "{asset}");
    assert_eq!(
        plain.header("cache-control"),
        Some("public, max-age=31536000, immutable")
    );
    assert!(
        plain
            .header("content-type")
            .is_some_and(|t| t.contains("javascript") || t.contains("css")),
        "{:?}",
        plain.headers
    );
    assert_eq!(plain.header("content-encoding"), None);

    // The first request that takes brotli starts its copy and gets gzip meanwhile.
    let first = served.request("GET", &asset, &[("Accept-Encoding", "gzip, br")], None);
    assert!(
        first.header("content-encoding").is_some(),
        "{:?}",
        first.headers
    );
    let mut br = first;
    wait_until("the brotli copy is made", || {
        br = served.request("GET", &asset, &[("Accept-Encoding", "gzip, br")], None);
        br.header("content-encoding") == Some("br")
    });
    assert!(br.bytes.len() < plain.bytes.len());
    let mut unpacked = Vec::new();
    brotli::Decompressor::new(&br.bytes[..], 4096)
        .read_to_end(&mut unpacked)
        .expect("valid brotli");
    assert_eq!(unpacked, plain.bytes);

    let gzip = served.request("GET", &asset, &[("Accept-Encoding", "gzip")], None);
    assert_eq!(gzip.header("content-encoding"), Some("gzip"));
    let mut unpacked = Vec::new();
    flate2::read::GzDecoder::new(&gzip.bytes[..])
        .read_to_end(&mut unpacked)
        .expect("valid gzip");
    assert_eq!(unpacked, plain.bytes);
    assert_ne!(gzip.header("etag"), br.header("etag"));
    assert_eq!(gzip.header("vary"), Some("Accept-Encoding"));
    served.stop();
}

#[test]
fn without_a_credential_only_health_the_auth_routes_and_the_page_answer() {
    let project = toolmux_project();
    let served = Served::start(&project, &[]);
    assert!(served.token.is_some(), "{}", served.web_url);
    for path in ["/api/tools", "/metrics", "/api/logs", "/api/openapi.json"] {
        served.get_anonymous(path).error(401, "unauthorized");
    }
    let mcp = mcp_initialize(&served, &[]);
    assert_eq!(mcp.status, 401, "{}", mcp.body);
    assert!(mcp.header("www-authenticate").is_some());
    assert_eq!(served.get_anonymous("/api/health").status, 200);
    assert_eq!(served.get_anonymous("/").status, 200);
    let status = served.get_anonymous("/api/auth/session");
    assert_eq!(status.status, 401);
    assert_eq!(status.json(), json!({"authenticated": false}));

    // The token, as a bearer key, opens all of them.
    for path in ["/api/tools", "/metrics", "/api/openapi.json"] {
        assert_eq!(served.get(path).status, 200, "{path}");
    }
    let auth = served.authorization();
    assert_eq!(
        mcp_initialize(&served, &[("Authorization", &auth)]).status,
        200
    );
    let status = served.get("/api/auth/session").json();
    assert_eq!(status, json!({"authenticated": true, "via": "token"}));
    let wrong = served.request(
        "GET",
        "/api/tools",
        &[("Authorization", "Bearer not-the-token")],
        None,
    );
    wrong.error(401, "unauthorized");
    served.stop();
}

#[cfg(unix)]
#[test]
fn the_token_file_is_private_and_reused_across_restarts() {
    use std::os::unix::fs::PermissionsExt;

    let project = toolmux_project();
    let served = Served::start(&project, &[]);
    let token = served.token.clone().expect("a local token");
    assert_eq!(token.len(), 43, "32 bytes in base64url: {token}");
    assert_eq!(
        served.web_url,
        format!("http://127.0.0.1:{}/#token={token}", served.port())
    );
    let file = project.path().join(".toolmux/state/local-token");
    let mode = std::fs::metadata(&file)
        .expect("the token file")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    assert_eq!(std::fs::read_to_string(&file).expect("read").trim(), token);
    served.stop();

    let again = Served::start(&project, &[]);
    assert_eq!(again.token.as_deref(), Some(token.as_str()));
    again.stop();

    // A token others could read is not used again.
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let replaced = Served::start(&project, &[]);
    assert_ne!(replaced.token.as_deref(), Some(token.as_str()));
    let mode = std::fs::metadata(&file)
        .expect("the token file")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    replaced.stop();
}

/// The cookie a `Set-Cookie` value sets, as a `Cookie` header value (`name=value`).
fn cookie_of(response: &Response) -> String {
    let set = response.headers_named("set-cookie");
    assert_eq!(set.len(), 1, "{:?}", response.headers);
    set[0].split(';').next().expect("name=value").to_string()
}

/// The session key a sign-in answered with.
fn key_of(response: &Response) -> String {
    let body = response.json();
    assert_eq!(body["authenticated"], true, "{body}");
    assert_eq!(body["via"], "cookie", "{body}");
    body["sessionKey"]
        .as_str()
        .expect("a session key")
        .to_string()
}

#[test]
fn the_page_exchanges_the_token_for_a_session_cookie_and_logs_out() {
    let project = toolmux_project();
    let served = Served::start(&project, &[]);
    let json = [("Content-Type", "application/json")];
    let wrong = served.request(
        "POST",
        "/api/auth/session",
        &json,
        Some(r#"{"token": "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}"#),
    );
    wrong.error(401, "unauthorized");
    assert!(wrong.headers_named("set-cookie").is_empty());

    let body = json!({"token": served.credential()}).to_string();
    let login = served.request("POST", "/api/auth/session", &json, Some(&body));
    assert_eq!(login.status, 200, "{}", login.body);
    assert_eq!(login.header("cache-control"), Some("no-store"));
    let set = login.headers_named("set-cookie");
    for attribute in ["HttpOnly", "SameSite=Strict", "Path=/"] {
        assert!(set[0].contains(attribute), "{attribute} in {set:?}");
    }
    let cookie = cookie_of(&login);
    // Named after the port, so two servers on one host keep their own sessions.
    assert!(
        cookie.starts_with(&format!("toolmux_session_{}=", served.port())),
        "{cookie}"
    );
    let key = key_of(&login);
    for half in [&cookie, &key] {
        assert!(
            !half.contains(served.credential()),
            "a half holds the token"
        );
    }

    // The cookie alone is nothing (D26): a browser sends it to every port of the host.
    served
        .request("GET", "/api/tools", &[("Cookie", cookie.as_str())], None)
        .error(401, "unauthorized");
    let with_cookie = [
        ("Cookie", cookie.as_str()),
        ("X-Toolmux-Session", key.as_str()),
    ];
    assert_eq!(
        served
            .request("GET", "/api/tools", &with_cookie, None)
            .status,
        200
    );
    let status = served.request("GET", "/api/auth/session", &with_cookie, None);
    assert_eq!(
        status.json(),
        json!({"authenticated": true, "via": "cookie"})
    );
    let mcp = mcp_initialize(&served, &with_cookie);
    assert_eq!(mcp.status, 200, "{}", mcp.body);

    // A page on another origin gets nothing, cookie or not.
    let evil = served.request(
        "POST",
        "/api/tools/file_read/call",
        &[
            ("Cookie", cookie.as_str()),
            ("Origin", "http://evil.example"),
            ("Content-Type", "application/json"),
        ],
        Some(r#"{"arguments": {"path": "x"}}"#),
    );
    evil.error(403, "forbidden");
    let evil_login = served.request(
        "POST",
        "/api/auth/session",
        &[("Origin", "http://evil.example"), json[0]],
        Some(&body),
    );
    assert_eq!(evil_login.status, 403);

    let logout = served.request("POST", "/api/auth/logout", &with_cookie, None);
    assert_eq!(logout.status, 204);
    let cleared = logout.headers_named("set-cookie");
    assert!(
        cleared.len() == 1 && cleared[0].contains("Max-Age=0"),
        "{cleared:?}"
    );
    served
        .request("GET", "/api/tools", &with_cookie, None)
        .error(401, "unauthorized");
    served.stop();
}

#[test]
fn a_local_mcp_client_sends_the_token_as_a_bearer_key() {
    let project = toolmux_project();
    project.write("notes.txt", "the needle\n");
    let served = Served::start(&project, &[]);
    let steps = run_mcp_steps(&json!({
        "transport": "http",
        "url": served.mcp_url(),
        "headers": {"Authorization": served.authorization()},
        "steps": [{"op": "call", "name": "file_read", "arguments": {"path": "notes.txt"}}],
    }));
    let text = steps[0]["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(text.contains("the needle"), "{steps:?}");
    served.stop();
}

#[test]
fn configured_keys_work_as_before_and_no_token_is_made() {
    let project = toolmux_project();
    project.config(&config_with_key(""));
    let served = Served::start(&project, &[]);
    assert_eq!(served.token, None, "{}", served.web_url);
    assert!(served.web_url.ends_with('/') && !served.web_url.contains('#'));
    assert!(!project.path().join(".toolmux/state/local-token").exists());
    served
        .get_anonymous("/api/tools")
        .error(401, "unauthorized");
    assert_eq!(served.get_with_key("/api/tools").status, 200);
    assert_eq!(mcp_initialize(&served, &[("X-API-Key", KEY)]).status, 200);
    // The page logs in with the key instead.
    let body = json!({"token": KEY}).to_string();
    let login = served.request(
        "POST",
        "/api/auth/session",
        &[("Content-Type", "application/json")],
        Some(&body),
    );
    assert_eq!(login.status, 200, "{}", login.body);
    let cookie = cookie_of(&login);
    let key = key_of(&login);
    let status = served.request(
        "GET",
        "/api/auth/session",
        &[("Cookie", &cookie), ("X-Toolmux-Session", &key)],
        None,
    );
    assert_eq!(
        status.json(),
        json!({"authenticated": true, "via": "cookie"})
    );
    served.stop();
}

#[test]
fn open_hands_the_token_url_to_the_browser() {
    let project = toolmux_project();
    let opened = project.path().join("opened.txt");
    let browser = project.write(
        "browser.sh",
        &format!("#!/bin/sh\nprintf '%s' \"$1\" > '{}'\n", opened.display()),
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&browser, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    let browser = browser.display().to_string();
    let served = Served::start_with_env(&project, &["--open"], &[("TOOLMUX_BROWSER", &browser)]);
    wait_until("the browser opener ran", || {
        std::fs::read_to_string(&opened).is_ok_and(|url| url == served.web_url)
    });
    assert!(served.web_url.contains("#token="));
    served.stop();

    // An opener that cannot start leaves the server serving.
    let served = Served::start_with_env(
        &project,
        &["--open"],
        &[("TOOLMUX_BROWSER", "/nonexistent/browser")],
    );
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(served.get("/api/health").status, 200);
    assert!(
        served.stderr().contains("open the URL above yourself"),
        "{}",
        served.stderr()
    );
    served.stop();
}

/// The web app's API types (`web/src/api-types.ts`) are generated from `web/openapi.json` when
/// it builds (issue 26), without a Rust build inside `npm run build`; so the committed file must
/// be the document the server serves, or the types drift from the API. With
/// `TOOLMUX_UPDATE_OPENAPI=1` the test rewrites the file instead of comparing.
#[test]
fn the_web_apps_openapi_snapshot_is_the_served_document() {
    let project = toolmux_project();
    // With a specs directory, so the spec pack is in the catalog and the routes that stand for
    // its tools document their parameters and bodies (they have none without it).
    std::fs::create_dir(project.path().join("specs")).expect("make specs/");
    let served = Served::start(&project, &[]);
    let response = served.get("/api/openapi.json");
    assert_eq!(response.status, 200, "{}", response.body);
    let mut document = response.json();
    // The served key order of the configuration's schemas varies from run to run: compare (and
    // keep) the keys sorted.
    document.sort_all_objects();
    // Unique operation ids, as OpenAPI wants: the generated types name one type per id.
    let mut ids: Vec<&str> = document["paths"]
        .as_object()
        .expect("paths")
        .values()
        .flat_map(|item| item.as_object().expect("a path item").values())
        .filter_map(|operation| operation["operationId"].as_str())
        .collect();
    let count = ids.len();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), count, "operation ids repeat: {ids:?}");
    let live = serde_json::to_string_pretty(&document).expect("a JSON document") + "\n";
    let snapshot = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../web/openapi.json");
    if std::env::var_os("TOOLMUX_UPDATE_OPENAPI").is_some() {
        std::fs::write(&snapshot, &live).expect("write web/openapi.json");
        return;
    }
    let committed = std::fs::read_to_string(&snapshot).unwrap_or_default();
    // Not `assert_eq!`: the document is some 100 KB; the first differing line says enough.
    let first_difference = committed
        .lines()
        .zip(live.lines())
        .position(|(a, b)| a != b)
        .map_or(committed.lines().count().min(live.lines().count()), |i| i);
    assert!(
        committed == live,
        "web/openapi.json is not the served document (first difference at line {}): run \
         `TOOLMUX_UPDATE_OPENAPI=1 cargo test -p toolmux --test web_app openapi_snapshot`, then \
         `npm run build` in web/",
        first_difference + 1
    );
}
