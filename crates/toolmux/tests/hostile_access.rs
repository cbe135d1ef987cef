//! Least privilege by credential kind (issue 28, D27; THREATS.md rule 4), against the real
//! `toolmux serve` and a real authorization server (oauth2-mock-server, `tests/peers/oauth`): an
//! access token from `server.auth`'s issuer lists and calls tools, and nothing more — no internal
//! tool (secrets, configuration), no registry or configuration write, no command added — unless
//! it grants one of `server.adminScopes`. Every route the API serves has a decision in one table
//! (`toolmux_api::route_access`).

mod support;

use axum::http::Method;
use serde_json::{Value, json};
use support::toolmux_project;
use toolmux_testkit::http::Response;
use toolmux_testkit::issuer::Issuer;
use toolmux_testkit::project::TestProject;
use toolmux_testkit::served::Served;

const AUDIENCE: &str = "toolmux-test";
const ADMIN: &str = "toolmux:admin";

/// A project whose `server.auth` names `issuer` (scope `tools` required) and whose admin scope
/// is [`ADMIN`]. `config_set` is allowed by policy, so that only the credential's kind can stop
/// it (as on the attacked server, where it was written without approval).
fn project_for(issuer: &Issuer) -> TestProject {
    let project = toolmux_project();
    project.write("notes.txt", "milk\n");
    project.config(
        &json!({
            "server": {
                "auth": {"issuer": issuer.url, "audience": AUDIENCE, "requiredScopes": ["tools"]},
                "adminScopes": [ADMIN],
            },
            "policies": {"tools": {"config_set": "allow", "config_get": "allow", "workspace_root": "allow"}},
        })
        .to_string(),
    );
    project
}

fn token(issuer: &Issuer, scope: &str) -> String {
    issuer.mint(&[
        ("aud", AUDIENCE),
        ("scope", scope),
        ("sub", "alice"),
        ("client_id", "ci-bot"),
    ])
}

fn with_token(
    served: &Served,
    method: &str,
    path: &str,
    token: &str,
    body: Option<&str>,
) -> Response {
    let auth = format!("Bearer {token}");
    served.request(
        method,
        path,
        &[
            ("Authorization", &auth),
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
        ],
        body,
    )
}

/// D27's reproductions: a token with the required scope but no admin scope is refused every
/// internal tool, `includeInternal`, registry and configuration writes, and the owner's
/// routes; the configuration and the project are untouched. It still lists and calls tools.
#[test]
fn d27_an_access_token_without_an_admin_scope_lists_and_calls_tools_only() {
    let issuer = Issuer::start("RS256", AUDIENCE);
    let project = project_for(&issuer);
    let before = project.saved_config();
    let served = Served::start(&project, &[]);
    let member = token(&issuer, "tools");

    // What it may do: list, and call a tool that is not internal.
    let listed = with_token(&served, "GET", "/api/tools", &member, None);
    assert_eq!(listed.status, 200, "{}", listed.body);
    let tools = listed.json()["tools"].clone();
    let tools = tools.as_array().expect("tools");
    assert!(tools.iter().any(|t| t["name"] == "grep"), "{}", listed.body);
    assert!(
        tools.iter().all(|t| t["internal"] != true),
        "internal tools listed: {}",
        listed.body
    );
    let called = with_token(
        &served,
        "POST",
        "/api/tools/grep/call",
        &member,
        Some(r#"{"pattern": "milk"}"#),
    );
    assert_eq!(called.status, 200, "{}", called.body);

    // Internal tools are unknown to it, as to any caller that is not trusted.
    for (tool, args) in [
        (
            "config_set",
            r#"{"path": "policies.default", "value": "allow"}"#,
        ),
        ("config_get", r#"{"path": "server"}"#),
        ("secrets_list", "{}"),
        ("workspace_root", "{}"),
    ] {
        let refused = with_token(
            &served,
            "POST",
            &format!("/api/tools/{tool}/call"),
            &member,
            Some(args),
        );
        let shown = with_token(&served, "GET", &format!("/api/tools/{tool}"), &member, None);
        // Unknown, with no suggestion that would name an internal tool.
        let unknown = json!({"error": {"code": "not_found", "message": format!("unknown tool `{tool}`"),
            "details": {"suggestion": null}}});
        for answer in [refused, shown] {
            assert_eq!(answer.status, 404, "{tool}: {}", answer.body);
            assert_eq!(answer.json(), unknown, "{tool}");
        }
    }
    with_token(
        &served,
        "GET",
        "/api/tools?includeInternal=true",
        &member,
        None,
    )
    .exact_error(
        403,
        "forbidden",
        "`includeInternal=true` needs the owner's credential or an access token with one of \
         `server.adminScopes`",
    );

    // The registry, the configuration and the owner's routes are closed to it.
    let owned = project.path().join("owned");
    let command =
        json!({"name": "x", "command": "sh", "args": ["-c", format!("id > {}", owned.display())]});
    for (method, path, body) in [
        ("POST", "/api/mcp-servers", Some(command.to_string())),
        ("PUT", "/api/mcp-servers/x", Some(command.to_string())),
        ("GET", "/api/mcp-servers", None),
        // Accepting a held tool's changed definition lets its text reach every model.
        ("POST", "/api/mcp-servers/x/trust", Some("{}".to_string())),
        (
            "POST",
            "/api/tools",
            Some(
                json!({"name": "y", "description": "d", "command": ["sh", "-c", "id > owned"]})
                    .to_string(),
            ),
        ),
        (
            "PUT",
            "/api/tools/grep",
            Some(json!({"description": "d", "command": ["true"]}).to_string()),
        ),
        (
            "PATCH",
            "/api/tools/grep",
            Some(r#"{"policy": "allow"}"#.to_string()),
        ),
        ("DELETE", "/api/tools/grep", None),
        ("POST", "/api/import", Some("{}".to_string())),
        ("GET", "/api/logs", None),
        ("GET", "/api/approvals", None),
        ("GET", "/api/inputs", None),
        ("GET", "/api/sessions", None),
        (
            "POST",
            "/api/sessions",
            Some(r#"{"runner": "claude", "prompt": "id"}"#.to_string()),
        ),
        ("POST", "/api/chat", Some("{}".to_string())),
        ("GET", "/api/conversations", None),
        ("GET", "/metrics", None),
    ] {
        let refused = with_token(&served, method, path, &member, body.as_deref());
        // The route as registered, which the refusal names.
        let route = match path {
            "/api/mcp-servers/x" => "/api/mcp-servers/{name}",
            "/api/mcp-servers/x/trust" => "/api/mcp-servers/{name}/trust",
            "/api/tools/grep" => "/api/tools/{name}",
            other => other,
        };
        refused.exact_error(
            403,
            "forbidden",
            &format!(
                "`{method} {route}` needs the owner's credential (the local token, a configured \
                 API key, or the web app signed in with one) or an access token with one of \
                 `server.adminScopes`; this access token may list and call tools"
            ),
        );
    }

    assert!(!owned.exists(), "a command ran");
    assert_eq!(
        project.saved_config(),
        before,
        "the configuration was written"
    );
    // The owner (the local token) still may.
    assert_eq!(served.get("/api/logs").status, 200);
    served.stop();
}

/// With the admin scope, the same token kind is the owner's equal: internal tools and
/// registry writes.
#[test]
fn d27_an_access_token_with_an_admin_scope_may_do_what_the_owner_does() {
    let issuer = Issuer::start("RS256", AUDIENCE);
    let project = project_for(&issuer);
    let served = Served::start(&project, &[]);
    let admin = token(&issuer, &format!("tools {ADMIN}"));

    let root = with_token(
        &served,
        "POST",
        "/api/tools/workspace_root/call",
        &admin,
        Some("{}"),
    );
    assert_eq!(root.status, 200, "{}", root.body);
    let set = with_token(
        &served,
        "POST",
        "/api/tools/config_set/call",
        &admin,
        Some(r#"{"path": "policies.tools.grep", "value": "ask"}"#),
    );
    assert_eq!(set.status, 200, "{}", set.body);
    assert_eq!(project.saved_config()["policies"]["tools"]["grep"], "ask");
    let secrets = with_token(
        &served,
        "POST",
        "/api/tools/secrets_list/call",
        &admin,
        Some("{}"),
    );
    assert!(
        secrets.status != 404 && secrets.status != 403,
        "{} {}",
        secrets.status,
        secrets.body
    );
    let internal = with_token(
        &served,
        "GET",
        "/api/tools?includeInternal=true",
        &admin,
        None,
    );
    assert_eq!(internal.status, 200, "{}", internal.body);
    let added = with_token(
        &served,
        "POST",
        "/api/tools",
        &admin,
        Some(&json!({"name": "admin_added", "description": "d", "command": ["true"]}).to_string()),
    );
    assert_eq!(added.status, 201, "{}", added.body);
    assert_eq!(
        with_token(&served, "GET", "/api/logs", &admin, None).status,
        200
    );
    served.stop();
}

/// The audit: every operation the running server documents (the REST API's, the chat's and the
/// sign-in routes) has an explicit entry in the one table of who may use it.
#[test]
fn every_served_route_has_a_decision_in_the_one_table() {
    let project = toolmux_project();
    let served = Served::start(&project, &[]);
    let document: Value = served.get("/api/openapi.json").json();
    let paths = document["paths"].as_object().expect("paths");
    let mut count = 0;
    for (path, item) in paths {
        for method in item.as_object().expect("an operation object").keys() {
            let Ok(method) = Method::from_bytes(method.to_uppercase().as_bytes()) else {
                continue;
            };
            count += 1;
            assert!(
                toolmux_api::route_access(&method, path).is_some(),
                "`{method} {path}` has no decision in toolmux_api's access table"
            );
        }
    }
    assert!(count > 60, "only {count} operations in {document}");
    served.stop();
}

/// The challenge a refused access token gets, beside its body: where to sign in, why, and the
/// scope the server requires.
fn assert_challenge(answer: &Response, served: &Served, path: &str, error: &str) {
    let suffix = if path == "/mcp" { "/mcp" } else { "" };
    assert_eq!(
        answer.header("www-authenticate"),
        Some(
            format!(
                "Bearer resource_metadata=\"http://{}/.well-known/oauth-protected-resource{suffix}\", \
                 error=\"{error}\", scope=\"tools\"",
                served.address
            )
            .as_str()
        ),
        "{path}"
    );
}

/// Found in review of issue 28: a token of the right shape, naming the issuer and its key id
/// and granting the admin scope, but signed by a key the issuer never published (the rogue
/// authorization server's), is refused everywhere as not valid: its admin scope is never read.
#[test]
fn a_rogue_signed_token_with_the_admin_scope_is_refused() {
    let issuer = Issuer::start("RS256", AUDIENCE);
    let rogue = Issuer::mint_at(
        &issuer.rogue,
        &[
            ("aud", AUDIENCE),
            ("scope", &format!("tools {ADMIN}")),
            ("sub", "mallory"),
        ],
    );
    let invalid = "the access token is not valid: its signature does not check";
    refused_everywhere(
        &issuer,
        &rogue,
        (401, "unauthorized"),
        invalid,
        "invalid_token",
    );
}

/// The admin scope makes a token the owner's equal, not a token of its own: the scopes the
/// server requires of every token (`server.auth.requiredScopes`) are still required, first.
#[test]
fn an_admin_scope_without_the_required_scope_is_refused() {
    let issuer = Issuer::start("RS256", AUDIENCE);
    let admin_only = token(&issuer, ADMIN);
    let lacking = "the access token lacks the scope this server requires: tools";
    refused_everywhere(
        &issuer,
        &admin_only,
        (403, "insufficient_scope"),
        lacking,
        "insufficient_scope",
    );
}

/// `token` is refused with `status`, `message` and the challenge's `error` on the REST API
/// (reads and an admin write) and on `/mcp`, and the configuration is left as it was.
fn refused_everywhere(
    issuer: &Issuer,
    token: &str,
    (status, code): (u16, &str),
    message: &str,
    error: &str,
) {
    let project = project_for(issuer);
    let before = project.saved_config();
    let served = Served::start(&project, &[]);
    for (method, path, body) in [
        ("GET", "/api/logs", None),
        ("GET", "/api/tools", None),
        (
            "POST",
            "/api/tools/config_set/call",
            Some(r#"{"path": "policies.default", "value": "allow"}"#),
        ),
    ] {
        let refused = with_token(&served, method, path, token, body);
        refused.exact_error(status, code, message);
        assert_challenge(&refused, &served, path, error);
    }
    let initialize = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    let refused = with_token(&served, "POST", "/mcp", token, Some(initialize));
    refused.exact_json_rpc_refusal(status, code, message);
    assert_challenge(&refused, &served, "/mcp", error);
    assert_eq!(project.saved_config(), before);
    served.stop();
}
