//! What clients nobody here wrote do to `toolmux serve`, and what toolmux tells them (issue 29):
//! OAuth discovery of a server that is no authorization server, an argument a client adds to
//! every call (Gemini CLI's `wait_for_previous`), and an upstream that refuses the credential
//! its configuration sends.

mod support;

use serde_json::{Value, json};
use support::toolmux_project;
use toolmux_testkit::python_client::run_mcp_steps;
use toolmux_testkit::served::{KEY, Served, config_with_key};

/// The JSON error body of a 404.
fn not_found(message: &str) -> Value {
    json!({"error": {"code": "not_found", "message": message, "details": {}}})
}

#[test]
fn well_known_documents_toolmux_does_not_publish_are_json_404s_and_login_says_why() {
    let project = toolmux_project();
    let served = Served::start(&project, &[]);
    for path in [
        "/.well-known/oauth-authorization-server",
        "/.well-known/openid-configuration",
        "/.well-known/oauth-authorization-server/mcp",
        "/.well-known/security.txt",
    ] {
        let answer = served.get_anonymous(path);
        assert_eq!(answer.status, 404, "{path}: {}", answer.body);
        assert_eq!(
            answer.json(),
            not_found(&format!("toolmux serves no `{path}`"))
        );
    }
    // The metadata toolmux does publish keeps its routes: without `server.auth`, a 404 that
    // says so.
    let metadata = served.get_anonymous("/.well-known/oauth-protected-resource/mcp");
    assert_eq!(metadata.status, 404);
    assert_eq!(
        metadata.json(),
        not_found("no protected-resource metadata here: `server.auth` is not configured")
    );
    // The web app is still the fallback of every other path.
    let page = served.get_anonymous("/approvals");
    assert_eq!(page.status, 200);
    assert!(page.body.contains("<html"), "{}", page.body);

    // toolmux's own OAuth client, pointed at a `serve`, learns that there is nothing to sign
    // in to.
    let client = toolmux_project();
    client.config(&json!({"mcpServers": {"hub": {"url": served.mcp_url()}}}).to_string());
    let login = client
        .cmd()
        .args(["mcp", "login", "hub", "--wait", "5"])
        .env("TOOLMUX_SECRET_BACKEND", "file")
        .env("TOOLMUX_BROWSER", "false")
        .output()
        .expect("run toolmux");
    let stderr = String::from_utf8_lossy(&login.stderr);
    assert_eq!(login.status.code(), Some(1), "{stderr}");
    // Its guess at a registration endpoint (`POST /register`) reaches the web app's files.
    let guessed = "Registration failed: Dynamic registration failed: Registration failed: HTTP \
                   405 Method Not Allowed: {\"error\":{\"code\":\"method_not_allowed\",\
                   \"message\":\"the web app's files are read with GET, not POST\",\"details\":{}}}";
    assert_eq!(
        stderr,
        format!(
            "toolmux: MCP server `hub` offers no OAuth sign-in: {} publishes no \
             protected-resource or authorization-server metadata, and the endpoints guessed \
             from its URL failed ({guessed}); if it takes a key, set it in the server's \
             `headers`\n",
            served.mcp_url()
        )
    );
    served.stop();
}

#[test]
fn an_argument_a_known_client_adds_is_dropped_and_another_extra_one_is_named() {
    let project = toolmux_project();
    project.write("notes.txt", "milk\n");
    project.config(&config_with_key(""));
    let served = Served::start(&project, &[]);
    let with_gemini_extra = json!({"path": "notes.txt", "wait_for_previous": true});
    let with_unknown_extra = json!({"path": "notes.txt", "colour": "red"});
    let outcomes = run_mcp_steps(&json!({
        "transport": "http",
        "url": served.mcp_url(),
        "headers": {"Authorization": format!("Bearer {KEY}")},
        "steps": [
            {"op": "call", "name": "file_read", "arguments": with_gemini_extra},
            {"op": "call", "name": "file_read", "arguments": with_unknown_extra},
        ],
    }));
    assert_eq!(
        outcomes[0]["result"]["isError"],
        json!(false),
        "{}",
        outcomes[0]
    );
    assert!(
        outcomes[0]["result"]["content"][0]["text"]
            .as_str()
            .is_some_and(|t| t.contains("milk")),
        "{}",
        outcomes[0]
    );
    let extra = "invalid arguments for `file_read`: /: unexpected argument `colour`: the tool's \
                 input schema does not allow it";
    assert_eq!(
        outcomes[1]["result"]["isError"],
        json!(true),
        "{}",
        outcomes[1]
    );
    assert_eq!(
        outcomes[1]["result"]["content"],
        json!([{"type": "text", "text": extra}])
    );

    let rest = served.post("/api/tools/file_read/call", &with_gemini_extra.to_string());
    assert_eq!(rest.status, 200, "{}", rest.body);
    let rest = served.post("/api/tools/file_read/call", &with_unknown_extra.to_string());
    assert_eq!(rest.status, 422, "{}", rest.body);
    assert_eq!(
        rest.json(),
        json!({"error": {
            "code": "invalid_arguments",
            "message": extra,
            "details": {"violations": [{
                "pointer": "",
                "message": "unexpected argument `colour`: the tool's input schema does not allow it",
            }]},
        }})
    );
    served.stop();
}

#[test]
fn an_upstream_that_rejects_the_configured_bearer_token_is_reported_as_such() {
    // The upstream: another `serve`, which checks `Authorization: Bearer KEY`.
    let upstream = toolmux_project();
    upstream.config(&config_with_key(""));
    let served = Served::start(&upstream, &[]);

    let project = toolmux_project();
    project.config(
        &json!({"mcpServers": {"hub": {
            "url": served.mcp_url(),
            "headers": {"Authorization": "Bearer ${HUB_TOKEN}"},
        }}})
        .to_string(),
    );
    let refresh = project
        .cmd()
        .args(["mcp", "refresh", "hub"])
        .env("HUB_TOKEN", "not-the-key")
        .output()
        .expect("run toolmux");
    assert_eq!(
        String::from_utf8_lossy(&refresh.stdout),
        "hub: discovery failed: MCP server `hub` rejected the configured credential (HTTP 401): \
         check the `Authorization` header in its `headers` and the secret or variable it reads\n"
    );
    assert_eq!(refresh.status.code(), Some(1));
    // With the right key the same configuration works.
    let refresh = project
        .cmd()
        .args(["mcp", "refresh", "hub"])
        .env("HUB_TOKEN", KEY)
        .output()
        .expect("run toolmux");
    assert!(refresh.status.success(), "{refresh:?}");
    served.stop();
}
