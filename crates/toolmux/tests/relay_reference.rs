//! The MCP conformance suite's whole server suite (`--suite all`) through `toolmux serve
//! --pass-through`, in front of the suite's own TypeScript reference server
//! (`tests/peers/reference`, kept unmodified: see its `SOURCE.md`). A pass-through stands in for
//! one server, so what the reference server passes, toolmux must pass too. Scenarios that do not
//! yet are listed, with the reason, in `tests/peers/reference/conformance-baseline.yml`; the
//! suite fails on a listed scenario that passes, so the list cannot go stale.

mod support;

use serde_json::json;
use support::toolmux_project;
use toolmux_testkit::conformance::assert_server_suite_passes;
use toolmux_testkit::peers::{node_peer, peer_file};
use toolmux_testkit::processes::{Background, free_port};
use toolmux_testkit::served::Served;

#[test]
fn the_reference_servers_suite_passes_through_toolmux() {
    let port = free_port();
    let script = peer_file("reference/everything-server.ts");
    let mut reference = Background::start(
        node_peer("reference", "tsx"),
        &[script.to_str().expect("a UTF-8 path")],
        &[("PORT", port.to_string())],
    );
    reference.wait_for_port(port);

    let project = toolmux_project();
    // A call left waiting by one scenario (see the baseline) must still be waiting when the
    // scenario it disturbs runs, whatever the machine's speed: a long call limit makes the
    // baseline's one entry fail every time, not only on a fast machine.
    project.config(
        &json!({"mcpServers": {"ref": {
            "url": format!("http://localhost:{port}/mcp"),
            "toolTimeoutMs": 600_000,
        }}})
        .to_string(),
    );
    project.run(&["mcp", "refresh"]).ok();
    let served = Served::start(&project, &["--pass-through", "ref"]);

    let stdout = assert_server_suite_passes(
        &served.mcp_url(),
        &peer_file("reference/conformance-baseline.yml"),
        &["--suite", "all"],
    );
    // The schema the reference server declares reaches the client as it was written (SEP-1613:
    // `$schema`, `$defs`, `additionalProperties`).
    assert!(
        stdout
            .lines()
            .any(|l| l == "✓ json-schema-2020-12: 4 passed, 0 failed"),
        "{stdout}"
    );
    assert!(
        stdout.lines().any(|l| l == "Total: 41 passed, 1 failed"),
        "{stdout}"
    );
    served.stop();
    reference.stop();
}
