//! Hostile requests to `toolmux mcp login`'s loopback redirect listener, against the real peers
//! of `oauth_client.rs`: `oauth2-mock-server` as the authorization server and the Python SDK's
//! resource server as the MCP server. The "browser" (`forge-then-follow-sign-in.mjs`) first
//! sends what any local process or page could send to the listener's port, then comes back as
//! the authorization server sends it.

mod support;

use std::path::Path;

use serde_json::{Value, json};
use support::toolmux_project;
use toolmux_testkit::eventually::wait_until;
use toolmux_testkit::oauth_peers::OAuthPeers;
use toolmux_testkit::project::{Run, TestProject};

/// A project with the peers' server added as `remote`.
fn project_with_remote(peers: &OAuthPeers) -> TestProject {
    let project = toolmux_project();
    let added = project
        .cmd()
        .args([
            "mcp",
            "add",
            "remote",
            "--url",
            &peers.mcp_url,
            "--client-id",
            "toolmux-test",
        ])
        .env("TOOLMUX_SECRET_BACKEND", "file")
        .output()
        .expect("run toolmux");
    assert!(added.status.success(), "{added:?}");
    project
}

/// `toolmux mcp login remote` with the hostile browser (`deny` to decline at the end); what it
/// did, and the browser's report.
fn login(project: &TestProject, browser_args: &str) -> (Run, Value) {
    let report = project.path().join("browser-report.json");
    // From the source tree, not the installed peers: it needs no package, only node.
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/peers/upstream/forge-then-follow-sign-in.mjs");
    assert!(script.is_file(), "{} is missing", script.display());
    let browser = format!("node {} {browser_args}", script.display());
    let run = Run(project
        .cmd()
        .args(["mcp", "login", "remote", "--wait", "60"])
        .env("TOOLMUX_BROWSER", browser)
        .env("TOOLMUX_SECRET_BACKEND", "file")
        .env("BROWSER_REPORT", &report)
        .output()
        .expect("run toolmux"));
    (run, read_report(&report))
}

/// The browser's report, once written: toolmux may end before its browser does.
fn read_report(path: &Path) -> Value {
    wait_until("the browser's report", || path.exists());
    let text = std::fs::read_to_string(path).expect("the browser wrote its report");
    serde_json::from_str(&text).expect("the report is JSON")
}

/// Every forged request was answered as ignored, and none ended the sign-in.
fn assert_forgeries_ignored(report: &Value) {
    let forged = report["forged"].as_array().expect("forged requests");
    assert_eq!(forged.len(), 3, "{report}");
    for answer in forged {
        assert_eq!(answer["status"], 400, "{answer}");
        let page = answer["page"].as_str().unwrap_or_default();
        assert!(
            page.contains("not the sign-in toolmux is waiting for") && !page.contains("Signed in"),
            "{answer}"
        );
    }
}

/// Issue 28, D29: the first request to the redirect listener — a wrong state, a bare
/// `/callback` — ended the sign-in (`Authorization state not found`), the genuine redirect a
/// moment later was lost, and each page said "Signed in". Now forged requests are ignored, the
/// genuine redirect signs in, and only its page says so.
#[test]
fn d29_forged_redirects_are_ignored_and_the_genuine_one_signs_in() {
    let peers = OAuthPeers::start();
    let project = project_with_remote(&peers);
    let (run, report) = login(&project, "");
    assert!(report.get("error").is_none(), "{report}");
    assert_forgeries_ignored(&report);
    let genuine = &report["genuine"];
    assert_eq!(genuine["status"], 200, "{genuine}");
    assert!(
        genuine["page"]
            .as_str()
            .unwrap_or_default()
            .contains("Signed in"),
        "{genuine}"
    );
    let out = run.ok();
    assert!(out.contains("signed in to `remote`"), "{out}");
}

/// Issue 28, D29: a redirect with the right state and `error=access_denied` is how the sign-in
/// ended: the command fails with the authorization server's words, and the page says the same,
/// not "Signed in".
#[test]
fn d29_an_error_redirect_with_the_right_state_ends_the_sign_in_with_that_error() {
    let peers = OAuthPeers::start();
    let project = project_with_remote(&peers);
    let (run, report) = login(&project, "deny");
    assert!(report.get("error").is_none(), "{report}");
    assert_forgeries_ignored(&report);
    let genuine = &report["genuine"];
    assert_eq!(genuine["status"], 400, "{genuine}");
    let page = genuine["page"].as_str().unwrap_or_default();
    assert!(
        page.contains("Sign-in failed")
            && page.contains("access_denied (The person said no)")
            && !page.contains("Signed in"),
        "{page}"
    );
    assert_ne!(run.code(), 0, "{}", run.stdout());
    assert!(
        run.stderr()
            .contains("refused the sign-in: access_denied (The person said no)"),
        "{}",
        run.stderr()
    );
}

/// A hostile authorization server (and the MCP server it guards) on one loopback port: the
/// discovery a client credentials sign-in needs, then a token endpoint that refuses with an
/// `error_description` of `description`.
fn hostile_authorization_server(description: String) -> String {
    let base = std::sync::Arc::new(std::sync::OnceLock::<String>::new());
    let known = std::sync::Arc::clone(&base);
    let address = toolmux_testkit::http::scripted_server(move |received| {
        let origin = known.get().cloned().unwrap_or_default();
        let (status, headers, body) = match received.path.as_str() {
            "/mcp" => (
                "401 Unauthorized",
                format!(
                    "WWW-Authenticate: Bearer resource_metadata=\"{origin}/.well-known/oauth-protected-resource\"\r\n"
                ),
                String::new(),
            ),
            "/.well-known/oauth-protected-resource"
            | "/.well-known/oauth-protected-resource/mcp" => (
                "200 OK",
                String::new(),
                json!({"resource": format!("{origin}/mcp"), "authorization_servers": [origin]})
                    .to_string(),
            ),
            "/.well-known/oauth-authorization-server" => (
                "200 OK",
                String::new(),
                json!({
                    "issuer": origin,
                    "authorization_endpoint": format!("{origin}/authorize"),
                    "token_endpoint": format!("{origin}/token"),
                    "response_types_supported": ["code"],
                    "grant_types_supported": ["authorization_code", "client_credentials"],
                    "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post"],
                    "code_challenge_methods_supported": ["S256"],
                })
                .to_string(),
            ),
            "/token" => (
                "400 Bad Request",
                String::new(),
                json!({"error": "invalid_client", "error_description": description}).to_string(),
            ),
            _ => ("404 Not Found", String::new(), String::new()),
        };
        toolmux_testkit::http::Answer {
            status,
            headers,
            content_type: "application/json",
            body,
        }
    });
    let origin = format!("http://{address}");
    base.set(origin.clone()).expect("set once");
    origin
}

/// Found in review of issue 28 (rules 1 and 7's kind): what an authorization server says in a
/// refusal over HTTP (its token endpoint's `error_description`) reached the terminal and the
/// log whole — half a megabyte, escape sequences and all. It is cut to a bounded, printable length.
#[test]
fn a_huge_error_description_from_the_token_endpoint_is_cut_for_the_terminal() {
    // Half a megabyte (rmcp reads at most 1 MiB of an answer), with an escape sequence that
    // would recolour the terminal and a line break that would forge a log line.
    let description = format!("\u{1b}[31mred\nforged line {}", "x".repeat(512 * 1024));
    let server = hostile_authorization_server(description);
    let project = toolmux_project();
    project.config(
        &json!({"mcpServers": {"remote": {"url": format!("{server}/mcp"), "oauth": {
            "grant": "client_credentials", "clientId": "toolmux-test", "clientSecret": "s3cret"}}}})
        .to_string(),
    );
    let run = Run(project
        .cmd()
        .args(["mcp", "login", "remote"])
        .env("TOOLMUX_SECRET_BACKEND", "file")
        .output()
        .expect("run toolmux"));
    assert_ne!(run.code(), 0, "{}", run.stdout());
    // rmcp's and oauth2's words around the description, without the escape and the line
    // break, cut at 1,000 characters.
    let said = format!(
        "Client credentials error: Token exchange failed: Server returned error response: \
         invalid_client: [31mredforged line {}",
        "x".repeat(512 * 1024)
    );
    let cut: String = said.chars().take(1000).collect();
    assert_eq!(
        run.stderr(),
        format!("toolmux: MCP server `remote`: sign-in failed: {cut}…\n")
    );
}
