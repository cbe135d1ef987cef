//! A principal's key at the door (THREATS.md, outside input): odd bytes, a near miss, a huge
//! header, a key beside a wrong one, and a principal's key on the owner's routes. Each is
//! refused with the exact answer any wrong key gets; none reaches a tool.

mod support;

use support::toolmux_project;
use toolmux_testkit::served::{Served, config_with_key};

#[test]
fn odd_near_missing_huge_and_mixed_keys_are_refused_and_a_principal_is_no_owner() {
    let project = toolmux_project();
    project.config(&config_with_key(
        r#""roles": {"all": {"endpoints": ["*"], "tools": {"*": "allow"}}},
           "principals": {"ci-bot": {"roles": ["all"]}}"#,
    ));
    let made = project.run_keyed(&["keys", "create", "--principal", "ci-bot", "--json"]);
    assert_eq!(made.code(), 0, "{}", made.stderr());
    let key = made.json()["key"].as_str().expect("key").to_string();
    let served = Served::start(&project, &[]);
    let get = |headers: &[(&str, &str)]| served.request("GET", "/api/tools", headers, None);
    let not_valid = "the API key is not valid";

    // The key itself, with the whitespace a header may carry around it.
    let padded = format!("Bearer   {key}  ");
    assert_eq!(get(&[("Authorization", &padded)]).status, 200);
    assert_eq!(get(&[("X-API-Key", &key)]).status, 200);

    // One character changed, same length: a near miss is a miss.
    let mut near = key.clone().into_bytes();
    let last = near.len() - 1;
    near[last] = if near[last] == b'A' { b'B' } else { b'A' };
    let near = String::from_utf8(near).expect("ASCII");
    get(&[("Authorization", &format!("Bearer {near}"))]).exact_error(
        401,
        "unauthorized",
        not_valid,
    );

    // Bytes no key has: not text to the guard, so not a key.
    let odd = format!("Bearer {key}é");
    get(&[("Authorization", &odd)]).exact_error(
        401,
        "unauthorized",
        "the Authorization header must be `Bearer <key>` (or send `X-API-Key: <key>`)",
    );
    // A control character is no header value at all: the HTTP layer refuses the request
    // before any key is looked at.
    let control = get(&[("X-API-Key", &format!("{key}\u{7f}"))]);
    assert_eq!((control.status, control.body.as_str()), (400, ""));

    // A huge bearer value is hashed once and refused like any wrong key.
    let huge = format!("Bearer tmk_{}", "x".repeat(64 * 1024));
    get(&[("Authorization", &huge)]).exact_error(401, "unauthorized", not_valid);

    // Every credential sent must be valid: the right key beside a wrong one is refused.
    let bearer = format!("Bearer {key}");
    get(&[("Authorization", &bearer), ("X-API-Key", "wrong")]).exact_error(
        401,
        "unauthorized",
        not_valid,
    );

    // A principal's key may list and call, never use the owner's routes.
    served
        .request("GET", "/api/logs", &[("Authorization", &bearer)], None)
        .exact_error(
            403,
            "forbidden",
            "`GET /api/logs` needs the owner's credential (the local token, a configured API \
             key, or the web app signed in with one) or an access token with one of \
             `server.adminScopes`; a configured principal's key may list and call what its \
             roles grant",
        );
    // Prompts and resources over REST are not narrowed per caller, so a principal is refused
    // them (deny by default).
    for (method, path) in [("GET", "/api/prompts"), ("GET", "/api/resources")] {
        served
            .request(method, path, &[("Authorization", &bearer)], None)
            .exact_error(
                403,
                "forbidden",
                "prompts, resources and completions are served to a configured principal over MCP, \
             where its roles narrow them; the REST API does not narrow them per caller",
            );
    }
    // Nothing ran.
    let entries = served.get_with_key("/api/logs").json();
    assert_eq!(entries["entries"], serde_json::json!([]), "{entries}");
    served.stop();
}
