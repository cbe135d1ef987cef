//! toolmux as the OAuth client of an upstream server, against real peers: a real authorization
//! server (`oauth2-mock-server`: signed JWTs, PKCE, refresh tokens, revocation and
//! introspection; `tests/peers/upstream/oauth-server.mjs`) in front of a real MCP server that
//! checks every token (the Python SDK's resource-server support;
//! `tests/peers/upstream/oauth_mcp_server.py`). The person's browser is
//! `follow-sign-in.mjs`, which follows the authorization URL and its redirects back to toolmux's
//! loopback listener, as a browser does when the authorization server approves at once.

mod support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;
use support::toolmux_project;
use toolmux_testkit::eventually::wait_until;
use toolmux_testkit::oauth_peers::OAuthPeers;
use toolmux_testkit::peers::peer_file;
use toolmux_testkit::project::{Run, TestProject};
use toolmux_testkit::served::Served;

/// How long the authorization server's access tokens live: shorter than toolmux's refresh
/// margin, so that every use refreshes first, and short enough to outlive in a test.
const TOKEN_TTL_SECS: u64 = 3;

/// Runs toolmux in `project` with the test browser and the encrypted-file secret store, and
/// keeps what it printed for the final scan.
fn toolmux(project: &TestProject, printed: &mut Vec<String>, args: &[&str]) -> Run {
    let browser = format!(
        "node {}",
        peer_file("upstream/follow-sign-in.mjs").display()
    );
    let run = Run(project
        .cmd()
        .args(args)
        .env("TOOLMUX_BROWSER", browser)
        .env("TOOLMUX_SECRET_BACKEND", "file")
        // Everything toolmux logs, so that the scan covers the most it could ever print.
        .env("TOOLMUX_LOG", "debug")
        .output()
        .expect("run toolmux"));
    printed.push(run.stdout());
    printed.push(run.stderr());
    run
}

fn status(project: &TestProject, printed: &mut Vec<String>) -> String {
    let run = toolmux(project, printed, &["mcp", "list", "--json"]);
    let servers: Value = serde_json::from_str(&run.ok()).expect("`mcp list --json` prints JSON");
    servers[0]["status"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// Every file under `dir`, as lossy text.
fn files_under(dir: &Path, into: &mut Vec<(PathBuf, String)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            files_under(&path, into);
        } else if let Ok(bytes) = std::fs::read(&path) {
            into.push((path, String::from_utf8_lossy(&bytes).into_owned()));
        }
    }
}

#[test]
fn a_server_that_asks_for_oauth_is_signed_in_to_refreshed_and_signed_out_by_revocation() {
    let peers = OAuthPeers::with_token_ttl(TOKEN_TTL_SECS);
    let project = toolmux_project();
    let mut printed = Vec::new();

    // Added all the same, reading `needs-sign-in`, never `failed`.
    let added = toolmux(
        &project,
        &mut printed,
        &[
            "mcp",
            "add",
            "oauthy",
            "--url",
            &peers.mcp_url,
            "--client-id",
            "toolmux-test",
        ],
    );
    assert!(
        added
            .stdout()
            .contains("needs sign-in: run `toolmux mcp login oauthy`"),
        "{}\n{}",
        added.stdout(),
        added.stderr()
    );
    assert_eq!(added.code(), 0, "{}", added.stderr());
    assert_eq!(status(&project, &mut printed), "needs-sign-in");

    // Sign in through the browser: authorization code + PKCE, `resource` on the token request.
    let login = toolmux(
        &project,
        &mut printed,
        &["mcp", "login", "oauthy", "--wait", "60"],
    );
    let out = login.ok();
    assert!(
        out.contains("signed in to `oauthy`") && out.contains("oauthy: 1 tools"),
        "{out}"
    );
    assert_eq!(peers.granted("authorization_code"), 1);
    assert!(
        peers
            .events()
            .iter()
            .filter(|e| e["event"] == "token")
            .all(|e| e["resource"] == peers.mcp_url.as_str()),
        "every token request names the resource: {:?}",
        peers.events()
    );
    assert_eq!(status(&project, &mut printed), "success");

    // A new process (a restart) finds the tokens in the secret store.
    let call = toolmux(&project, &mut printed, &["tools", "call", "oauthy__whoami"]);
    assert!(call.ok().contains("signed in"), "{}", call.stderr());

    // Expired: refreshed (before use, as the token is within the refresh margin), not signed
    // in again.
    let refreshed = peers.granted("refresh_token");
    std::thread::sleep(Duration::from_secs(TOKEN_TTL_SECS + 1));
    let call = toolmux(&project, &mut printed, &["tools", "call", "oauthy__whoami"]);
    assert!(call.ok().contains("signed in"), "{}", call.stderr());
    assert!(
        peers.granted("refresh_token") > refreshed,
        "{:?}",
        peers.events()
    );
    assert_eq!(peers.granted("authorization_code"), 1);

    // Revoked: refreshing is refused, so the server needs sign-in again, and a call says how.
    peers.revoke();
    let call = toolmux(&project, &mut printed, &["tools", "call", "oauthy__whoami"]);
    assert_ne!(call.code(), 0);
    assert!(
        call.stderr()
            .contains("needs sign-in: run `toolmux mcp login oauthy`"),
        "{}",
        call.stderr()
    );
    assert_eq!(status(&project, &mut printed), "needs-sign-in");

    // Signing in again works, and signing out forgets the tokens.
    toolmux(
        &project,
        &mut printed,
        &["mcp", "login", "oauthy", "--wait", "60"],
    )
    .ok();
    assert_eq!(status(&project, &mut printed), "success");
    let call = toolmux(&project, &mut printed, &["tools", "call", "oauthy__whoami"]);
    assert!(call.ok().contains("signed in"), "{}", call.stderr());
    let logout = toolmux(&project, &mut printed, &["mcp", "logout", "oauthy"]);
    assert!(logout.ok().contains("signed out of `oauthy`"));
    let call = toolmux(&project, &mut printed, &["tools", "call", "oauthy__whoami"]);
    assert!(
        call.stderr().contains("toolmux mcp login oauthy"),
        "{}",
        call.stderr()
    );

    // No token anywhere a person or a log could read it: what toolmux printed (debug logs
    // included), the config file, the execution log, `mcp list`, and every other file under
    // the project and its home (the secret store is encrypted).
    let tokens = peers.tokens();
    assert!(tokens.len() >= 4, "{:?}", peers.events());
    let mut files = Vec::new();
    files_under(project.path(), &mut files);
    files_under(project.home(), &mut files);
    assert!(
        files
            .iter()
            .any(|(p, _)| p.to_string_lossy().contains("calls-")),
        "the execution log was written"
    );
    for token in &tokens {
        for text in &printed {
            assert!(
                !text.contains(token.as_str()),
                "a token was printed:\n{text}"
            );
        }
        for (path, text) in &files {
            assert!(
                !text.contains(token.as_str()),
                "a token is in {}",
                path.display()
            );
        }
    }
}

/// The web app's *Sign in* contract: `POST /api/mcp-servers/{name}/login` answers with the URL
/// to open; once the browser comes back the server is signed in and its tools discovered,
/// `discovery.discoveryStatus` leaves `needs-sign-in`; `logout` answers 204 and it is back.
#[test]
fn the_rest_api_signs_in_and_out_for_the_web_app() {
    let peers = OAuthPeers::with_token_ttl(TOKEN_TTL_SECS);
    let project = toolmux_project();
    let mut printed = Vec::new();
    toolmux(
        &project,
        &mut printed,
        &[
            "mcp",
            "add",
            "oauthy",
            "--url",
            &peers.mcp_url,
            "--client-id",
            "toolmux-test",
        ],
    )
    .ok();
    let served = Served::start_with_env(&project, &[], &[("TOOLMUX_SECRET_BACKEND", "file")]);
    let status = || {
        let view = served.get("/api/mcp-servers/oauthy");
        assert_eq!(view.status, 200, "{}", view.body);
        view.json()["discovery"]["discoveryStatus"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    assert_eq!(status(), "needs-sign-in");

    let started = served.post("/api/mcp-servers/oauthy/login", "");
    assert_eq!(started.status, 200, "{}", started.body);
    let url = started.json()["authorizationUrl"]
        .as_str()
        .expect("an authorization URL")
        .to_string();
    assert!(url.starts_with(&peers.issuer), "{url}");
    // The person's browser.
    let followed = std::process::Command::new("node")
        .arg(peer_file("upstream/follow-sign-in.mjs"))
        .arg(&url)
        .status()
        .expect("run the browser");
    assert!(followed.success());
    wait_until("the server is signed in and discovered", || {
        status() == "success"
    });
    // The new catalog is published by the discovery that signing in ends with.
    wait_until("the server's tools are in the catalog", || {
        served.get("/api/tools").body.contains("oauthy__whoami")
    });

    let out = served.post("/api/mcp-servers/oauthy/logout", "");
    assert_eq!(out.status, 204, "{}", out.body);
    assert_eq!(status(), "needs-sign-in");
    let missing = served.post("/api/mcp-servers/nobody/login", "");
    assert_eq!(missing.status, 404, "{}", missing.body);
    let stderr = served.stderr();
    for token in peers.tokens() {
        assert!(
            !stderr.contains(token.as_str()),
            "a token is in serve's stderr"
        );
        assert!(!started.body.contains(token.as_str()));
    }
}

#[test]
fn a_server_imported_from_another_client_that_asks_for_oauth_arrives_needing_sign_in() {
    let peers = OAuthPeers::with_token_ttl(TOKEN_TTL_SECS);
    let project = toolmux_project();
    let mut printed = Vec::new();
    std::fs::write(
        project.path().join(".mcp.json"),
        serde_json::json!({"mcpServers": {"hosted": {"type": "http", "url": peers.mcp_url}}})
            .to_string(),
    )
    .expect("write Claude Code's .mcp.json");
    let imported = toolmux(&project, &mut printed, &["import", "--from", "claude"]);
    let out = imported.ok();
    assert!(out.contains("hosted"), "{out}");
    assert!(
        out.contains("needs sign-in") && out.contains("toolmux mcp login hosted"),
        "the import says how to sign in: {out}"
    );
    assert_eq!(status(&project, &mut printed), "needs-sign-in");
}
