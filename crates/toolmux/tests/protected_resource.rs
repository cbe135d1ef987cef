//! toolmux as an OAuth protected resource (`server.auth`, issue 19): `toolmux serve` against a
//! real authorization server run locally (oauth2-mock-server, `tests/peers/oauth/issuer.mjs`).
//! Its tokens are accepted on `/mcp` and `/api`; a token for another audience, an expired one, one
//! signed by another key pair and one without the required scope are refused with the status and
//! `WWW-Authenticate` challenge MCP's authorization spec asks for; the protected-resource
//! metadata is published; the token's subject is the caller in the execution log, the token
//! never; and the MCP Python SDK's own OAuth client signs in through the whole flow.
//!
//! Also here: SEP-1034's defaults, filled in by toolmux when it answers an upstream server's
//! form for a caller that left the fields out.

mod support;

use std::process::Command;

use serde_json::{Value, json};
use support::toolmux_project;
use toolmux_testkit::eventually::wait_until;
use toolmux_testkit::http::Response;
use toolmux_testkit::issuer::Issuer;
use toolmux_testkit::peers::{mcp_python, peer_file};
use toolmux_testkit::project::TestProject;
use toolmux_testkit::python_client::run_mcp_steps;
use toolmux_testkit::served::Served;

/// The audience the tests configure, and the issuer stamps on the tokens of its sign-in flow.
const AUDIENCE: &str = "https://toolmux.test/mcp";
/// The scope every token must grant.
const SCOPE: &str = "tools";

/// A good token: the right audience and scope, for `alice` through client `ci-bot`.
fn good_token(issuer: &Issuer) -> String {
    Issuer::mint_at(&issuer.url, &fields(&[]))
}

/// The good token's fields with `changes` applied.
fn fields<'a>(changes: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
    let mut fields = vec![
        ("aud", AUDIENCE),
        ("scope", "tools extra"),
        ("sub", "alice"),
        ("client_id", "ci-bot"),
    ];
    for (k, v) in changes {
        fields.retain(|(name, _)| name != k);
        fields.push((k, v));
    }
    fields
}

/// A project whose `server.auth` names `issuer`, requiring [`SCOPE`].
fn project_for(issuer: &Issuer) -> TestProject {
    let project = toolmux_project();
    project.write("notes.txt", "milk\n");
    project.config(
        &json!({"server": {"auth": {
            "issuer": issuer.url,
            "audience": AUDIENCE,
            "requiredScopes": [SCOPE],
        }}})
        .to_string(),
    );
    project
}

fn with_token(
    served: &Served,
    method: &str,
    path: &str,
    token: &str,
    body: Option<&str>,
) -> Response {
    served.request(
        method,
        path,
        &[
            ("Authorization", &format!("Bearer {token}")),
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
        ],
        body,
    )
}

/// An MCP `initialize` request, as a client's first POST.
const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;

/// Every line of the project's execution log.
fn log_text(project: &TestProject) -> String {
    let dir = project.path().join(".toolmux/state/logs");
    let mut text = String::new();
    for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with("calls-") && name.ends_with(".jsonl") {
            text.push_str(&std::fs::read_to_string(entry.path()).expect("read log"));
        }
    }
    text
}

/// The callers the execution log names, in order.
fn logged_callers(project: &TestProject) -> Vec<String> {
    log_text(project)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|r| r["caller"].as_str().map(str::to_string))
        .collect()
}

/// The `WWW-Authenticate` header of a refusal, which must be there.
fn challenge(response: &Response) -> String {
    response
        .header("www-authenticate")
        .unwrap_or_else(|| {
            panic!(
                "no WWW-Authenticate on {} {}",
                response.status, response.body
            )
        })
        .to_string()
}

#[test]
fn tokens_from_the_issuer_are_accepted_on_mcp_and_api_and_the_subject_is_the_caller() {
    let issuer = Issuer::start("RS256", AUDIENCE);
    let project = project_for(&issuer);
    let served = Served::start(&project, &[]);
    let token = good_token(&issuer);

    let listed = with_token(&served, "GET", "/api/tools", &token, None);
    assert_eq!(listed.status, 200, "{}", listed.body);
    let called = with_token(
        &served,
        "POST",
        "/api/tools/grep/call",
        &token,
        Some(r#"{"pattern": "milk"}"#),
    );
    assert_eq!(called.status, 200, "{}", called.body);
    let session = with_token(&served, "GET", "/api/auth/session", &token, None);
    assert_eq!(session.json()["via"], "jwt", "{}", session.body);
    let initialized = with_token(&served, "POST", "/mcp", &token, Some(INITIALIZE));
    assert_eq!(initialized.status, 200, "{}", initialized.body);

    // A real MCP client with the token calls a tool over `/mcp`.
    let steps = run_mcp_steps(&json!({
        "transport": "http",
        "url": served.mcp_url(),
        "headers": {"Authorization": format!("Bearer {token}")},
        "steps": [{"op": "call", "name": "grep", "arguments": {"pattern": "milk"}}],
    }));
    assert_eq!(steps[0]["result"]["isError"], false, "{steps:?}");

    // The local token keeps working beside the issuer's tokens.
    assert_eq!(served.get("/api/tools").status, 200);

    wait_until("both calls are in the execution log", || {
        logged_callers(&project)
            .iter()
            .filter(|c| *c == "alice (client ci-bot)")
            .count()
            == 2
    });
    let log = log_text(&project);
    assert!(!log.contains(&token), "the token is in the execution log");
    served.stop();
}

#[test]
fn bad_tokens_are_refused_with_the_status_and_challenge_the_spec_asks_for() {
    let issuer = Issuer::start("RS256", AUDIENCE);
    let project = project_for(&issuer);
    let served = Served::start(&project, &[]);
    let origin = format!("http://{}", served.address);
    let mcp_metadata = format!("{origin}/.well-known/oauth-protected-resource/mcp");

    // No credential at all: where to sign in, and which scope to ask for.
    let anonymous = served.request(
        "POST",
        "/mcp",
        &[("Content-Type", "application/json")],
        Some(INITIALIZE),
    );
    assert_eq!(anonymous.status, 401, "{}", anonymous.body);
    assert_eq!(
        challenge(&anonymous),
        format!("Bearer resource_metadata=\"{mcp_metadata}\", scope=\"{SCOPE}\"")
    );
    let api_anonymous = served.get_anonymous("/api/tools");
    assert_eq!(api_anonymous.status, 401);
    assert!(
        challenge(&api_anonymous).contains(&format!(
            "resource_metadata=\"{origin}/.well-known/oauth-protected-resource\""
        )),
        "{api_anonymous:?}"
    );

    let refused = |token: &str, why: &str| {
        for (method, path, body) in [
            ("POST", "/mcp", Some(INITIALIZE)),
            ("GET", "/api/tools", None),
        ] {
            let answer = with_token(&served, method, path, token, body);
            assert_eq!(answer.status, 401, "{why} on {path}: {}", answer.body);
            let header = challenge(&answer);
            assert!(
                header.contains("error=\"invalid_token\"") && header.contains("resource_metadata="),
                "{why} on {path}: {header}"
            );
            assert!(!answer.body.contains(token), "{why}: the token is echoed");
        }
    };
    let wrong_audience =
        Issuer::mint_at(&issuer.url, &fields(&[("aud", "https://elsewhere.test")]));
    refused(&wrong_audience, "a token for another audience");
    let expired = Issuer::mint_at(&issuer.url, &fields(&[("expires_in", "-600")]));
    refused(&expired, "an expired token");
    let forged = Issuer::mint_at(&issuer.rogue, &fields(&[]));
    refused(&forged, "a token signed by another key pair");
    let unknown_key = Issuer::mint_at(&issuer.rogue, &fields(&[("kid", "made-up")]));
    refused(
        &unknown_key,
        "a token naming a key the issuer does not have",
    );
    refused("not.a-jwt.at-all", "garbage");

    // Valid, but without the required scope: 403, and the scope to step up to.
    let narrow = Issuer::mint_at(&issuer.url, &fields(&[("scope", "extra")]));
    for (method, path, body) in [
        ("POST", "/mcp", Some(INITIALIZE)),
        ("GET", "/api/tools", None),
    ] {
        let answer = with_token(&served, method, path, &narrow, body);
        assert_eq!(answer.status, 403, "{path}: {}", answer.body);
        let header = challenge(&answer);
        assert!(
            header.contains("error=\"insufficient_scope\"")
                && header.contains(&format!("scope=\"{SCOPE}\"")),
            "{path}: {header}"
        );
    }

    // The metadata those challenges point at (RFC 9728), for `/mcp` and for the origin.
    let metadata = served.get_anonymous("/.well-known/oauth-protected-resource/mcp");
    assert_eq!(metadata.status, 200, "{}", metadata.body);
    assert_eq!(
        metadata.json(),
        json!({
            "resource": format!("{origin}/mcp"),
            "authorization_servers": [issuer.url],
            "bearer_methods_supported": ["header"],
            "resource_name": "toolmux",
            "scopes_supported": [SCOPE],
        })
    );
    let root = served.get_anonymous("/.well-known/oauth-protected-resource");
    assert_eq!(root.json()["resource"], origin);
    assert!(
        logged_callers(&project).is_empty(),
        "a refused request made a call"
    );
    served.stop();
}

#[test]
fn tokens_signed_with_elliptic_curve_and_edwards_keys_are_checked_as_their_key_says() {
    for alg in ["ES256", "EdDSA"] {
        let issuer = Issuer::start(alg, AUDIENCE);
        let project = project_for(&issuer);
        let served = Served::start(&project, &[]);
        let good = with_token(&served, "GET", "/api/tools", &good_token(&issuer), None);
        assert_eq!(good.status, 200, "{alg}: {}", good.body);
        let forged = Issuer::mint_at(&issuer.rogue, &fields(&[]));
        let refused = with_token(&served, "GET", "/api/tools", &forged, None);
        assert_eq!(refused.status, 401, "{alg}: {}", refused.body);
        served.stop();
    }
}

#[test]
fn without_server_auth_there_is_no_metadata_and_adding_it_counts_at_once() {
    let project = toolmux_project();
    let served = Served::start(&project, &[]);
    let metadata = served.get_anonymous("/.well-known/oauth-protected-resource/mcp");
    assert_eq!(metadata.status, 404);
    let anonymous = served.request("POST", "/mcp", &[], Some(INITIALIZE));
    assert_eq!(anonymous.status, 401);
    assert_eq!(
        anonymous.header("www-authenticate"),
        Some("Bearer realm=\"toolmux\"")
    );
    // `server.auth` is live, like the keys: an edit of the file counts without a restart.
    project.config(
        &json!({"server": {"auth": {"issuer": "https://login.example.com", "audience": AUDIENCE}}})
            .to_string(),
    );
    wait_until("the metadata is published", || {
        served
            .get_anonymous("/.well-known/oauth-protected-resource/mcp")
            .status
            == 200
    });
    let anonymous = served.request("POST", "/mcp", &[], Some(INITIALIZE));
    assert!(
        challenge(&anonymous).starts_with("Bearer resource_metadata="),
        "{anonymous:?}"
    );
    served.stop();
}

#[test]
fn the_mcp_python_sdk_signs_in_to_toolmux_serve_through_the_oauth_flow() {
    let issuer = Issuer::start("RS256", AUDIENCE);
    let project = project_for(&issuer);
    let served = Served::start(&project, &[]);
    let plan = json!({
        "url": served.mcp_url(),
        "call": {"name": "grep", "arguments": {"pattern": "milk"}},
    });
    let output = Command::new(mcp_python())
        .arg(peer_file("oauth/sign_in.py"))
        .arg(plan.to_string())
        .output()
        .expect("run the MCP SDK's OAuth client");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "the SDK client failed\nstdout:\n{stdout}\nstderr:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let lines: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    let find = |key: &str| {
        lines
            .iter()
            .find_map(|l| l.get(key).cloned())
            .unwrap_or_else(|| panic!("no {key} in {lines:#?}"))
    };
    // The SDK found the issuer through toolmux's metadata, asked for the required scope, and
    // named toolmux's MCP endpoint as the resource (RFC 8707).
    let authorize = find("authorize");
    let authorize = authorize.as_str().expect("a URL");
    assert!(
        authorize.starts_with(&format!("{}/authorize?", issuer.url)),
        "{authorize}"
    );
    assert!(authorize.contains(&format!("scope={SCOPE}")), "{authorize}");
    let resource = format!(
        "resource=http%3A%2F%2F{}%2Fmcp",
        served.address.replace(':', "%3A")
    );
    assert!(authorize.contains(&resource), "{authorize}");
    let tools = find("tools");
    assert!(
        tools
            .as_array()
            .is_some_and(|t| t.iter().any(|n| n == "grep")),
        "{tools}"
    );
    assert_eq!(find("result")["isError"], false, "{lines:#?}");
    let token = find("token");
    let token = token.as_str().expect("the access token");

    wait_until("the call is in the execution log", || {
        logged_callers(&project)
            .iter()
            .any(|c| c == "johndoe (client toolmux-test-client)")
    });
    assert!(
        !log_text(&project).contains(token),
        "the token is in the log"
    );
    let stderr = served.stderr();
    assert!(!stderr.contains(token), "the token is in the server's log");
    served.stop();
}

/// An upstream server whose one tool asks for a profile whose fields all have defaults, and
/// returns the answer it got.
const ELICITING_SERVER: &str = r#"
import json
from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("elicits")

@server.tool()
async def profile(ctx: Context) -> str:
    """Asks for a profile, and returns the answer as it arrived."""
    result = await ctx.session.elicit_form(
        "Your profile",
        {"type": "object", "properties": {
            "name": {"type": "string", "default": "John Doe"},
            "age": {"type": "integer", "default": 30},
            "verified": {"type": "boolean", "default": True},
            "note": {"type": "string"},
        }},
        related_request_id=ctx.request_id,
    )
    return json.dumps({"action": result.action, "content": result.content})

if __name__ == "__main__":
    server.run()
"#;

#[test]
fn fields_an_answer_leaves_out_reach_the_server_as_the_forms_defaults() {
    let project = toolmux_project();
    let script = project.write("elicits.py", ELICITING_SERVER);
    project.config(
        &json!({"mcpServers": {"elicits": {
            "command": mcp_python(),
            "args": [script],
        }}})
        .to_string(),
    );
    let served = Served::start(&project, &[]);
    // `serve` discovers the server in the background; its tool is called once listed.
    wait_until("the eliciting server's tool is discovered", || {
        served.tool_names("elicits") == ["elicits__profile"]
    });
    // The person fills in the name only.
    let steps = run_mcp_steps(&json!({
        "transport": "http",
        "url": served.mcp_url(),
        "headers": {"Authorization": served.authorization()},
        "elicitation": [{"name": "Ada"}],
        "steps": [{"op": "call", "name": "elicits__profile", "arguments": {}}],
    }));
    let text = steps[0]["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text in {steps:?}"));
    let answer: Value = serde_json::from_str(text).expect("the server's JSON");
    assert_eq!(
        answer,
        json!({"action": "accept", "content": {"name": "Ada", "age": 30, "verified": true}})
    );
    served.stop();
}
