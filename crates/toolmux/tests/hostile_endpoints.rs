//! Hostile endpoint names and sections against a running `toolmux serve`: a name that is no
//! URL segment (`..`, `a/b`, percent-encoded slashes, 10,000 characters) at the door is an
//! unknown endpoint, answered `404` with a JSON-RPC error that never echoes it whole; an edit
//! to 10,000 endpoints is refused with the cap, and the endpoints in force stay served.

mod support;

use serde_json::json;
use support::toolmux_project;
use toolmux_testkit::eventually::wait_until;
use toolmux_testkit::project::TestProject;
use toolmux_testkit::served::{Served, config_with_key};

const CONFIGURED: &str = "the configured endpoints are: readers";

/// `toolmux serve` with the one endpoint `readers`.
fn serve_readers() -> (TestProject, Served) {
    let project = toolmux_project();
    project.config(&config_with_key(
        r#""endpoints": {"readers": {"tools": ["grep"]}}"#,
    ));
    let served = Served::start(&project, &[]);
    (project, served)
}

#[test]
fn names_that_are_no_url_segment_are_unknown_endpoints_never_echoed_whole() {
    let (_project, served) = serve_readers();
    for (path, named) in [
        ("/mcp/..", ".."),
        ("/mcp/readers/..", "readers/.."),
        ("/mcp/a/b", "a/b"),
        ("/mcp/a%2Fb", "a/b"),
        ("/mcp/%00", "\\0"),
    ] {
        served.initialize(path).exact_json_rpc_refusal(
            404,
            "unknown_endpoint",
            &format!("there is no endpoint `{named}`; {CONFIGURED}"),
        );
    }
    let huge = "x".repeat(10_000);
    served
        .initialize(&format!("/mcp/{huge}"))
        .exact_json_rpc_refusal(
            404,
            "unknown_endpoint",
            &format!("there is no endpoint `{}…`; {CONFIGURED}", "x".repeat(100)),
        );
    // The REST API's parameter is the same name, refused the same way.
    served
        .get(&format!("/api/tools?endpoint={huge}"))
        .exact_error(
            404,
            "unknown_endpoint",
            &format!("there is no endpoint `{}…`; {CONFIGURED}", "x".repeat(100)),
        );
    // The configured one still opens.
    assert_eq!(served.initialize("/mcp/readers").status, 200);
    served.stop();
}

#[test]
fn an_edit_to_ten_thousand_endpoints_is_refused_and_the_ones_in_force_stay() {
    let (project, served) = serve_readers();
    let endpoints: serde_json::Map<String, serde_json::Value> = (0..10_000)
        .map(|i| (format!("e{i}"), json!({"tools": ["grep"]})))
        .collect();
    project.config(&config_with_key(&format!(
        r#""endpoints": {}"#,
        serde_json::Value::Object(endpoints)
    )));
    wait_until("the edit is refused", || {
        served
            .stderr()
            .contains("10000 endpoints are configured; at most 1000 are allowed")
    });
    let listed = served.get("/api/tools?endpoint=readers").json();
    assert_eq!(listed["tools"][0]["name"], "grep", "{listed}");
    assert_eq!(listed["tools"].as_array().map(Vec::len), Some(1));
    served.initialize("/mcp/e9999").exact_json_rpc_refusal(
        404,
        "unknown_endpoint",
        &format!("there is no endpoint `e9999`; {CONFIGURED}"),
    );
    served.stop();
}
