//! The MCP conformance suite's whole server suite (`--suite all`) through `toolmux serve
//! --pass-through`, in front of the suite's own TypeScript reference server
//! (`tests/peers/reference`, kept unmodified: see its `SOURCE.md`). A pass-through stands in for
//! one server, so what the reference server passes, toolmux must pass too: the expected-failures
//! file `tests/peers/reference/conformance-baseline.yml` must stay empty, and this test says so.
//!
//! Two scenarios guard issue 13 in particular: `server-sse-polling`, whose tool closes the
//! upstream response stream mid-call (SEP-1699), so toolmux's upstream call must wait the
//! server's `retry` delay and resume with `Last-Event-ID`; and `elicitation-sep1330-enums`, which
//! runs right after it and is refused as ambiguous if that call is still waiting.

mod support;

use serde_json::json;
use support::toolmux_project;
use toolmux_testkit::conformance::assert_server_suite_passes;
use toolmux_testkit::peers::{peer_file, start_reference_server};
use toolmux_testkit::processes::free_port;
use toolmux_testkit::served::Served;

#[test]
fn the_reference_servers_suite_passes_through_toolmux() {
    let port = free_port();
    let mut reference = start_reference_server(port);

    let project = toolmux_project();
    project.config(
        &json!({"mcpServers": {"ref": {"url": format!("http://localhost:{port}/mcp")}}})
            .to_string(),
    );
    project.run(&["mcp", "refresh"]).ok();
    let served = Served::start(&project, &["--pass-through", "ref"]);

    let baseline = peer_file("reference/conformance-baseline.yml");
    assert_baseline_is_empty(&baseline);
    let stdout = assert_server_suite_passes(
        &served.mcp_url(),
        Some(&served.authorization()),
        &baseline,
        &["--suite", "all"],
    );
    let passed = |scenario: &str| {
        stdout
            .lines()
            .any(|l| l.starts_with(&format!("✓ {scenario}: ")) && l.ends_with(" 0 failed"))
    };
    // The schema the reference server declares reaches the client as it was written (SEP-1613:
    // `$schema`, `$defs`, `additionalProperties`); the call whose stream the server closed is
    // answered; the elicitation after it reaches the one client whose call asks.
    for scenario in [
        "json-schema-2020-12",
        "server-sse-polling",
        "elicitation-sep1330-enums",
    ] {
        assert!(passed(scenario), "{scenario} did not pass:\n{stdout}");
    }
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("Total: ") && l.ends_with(" passed, 0 failed")),
        "{stdout}"
    );
    served.stop();
    reference.stop();
}

/// The expected-failures file lists nothing: every line is a comment but `server: []`.
fn assert_baseline_is_empty(baseline: &std::path::Path) {
    let text = std::fs::read_to_string(baseline).expect("read the baseline");
    let entries: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    assert_eq!(
        entries,
        ["server: []"],
        "{} must stay empty: fix the scenario instead of listing it",
        baseline.display()
    );
}
