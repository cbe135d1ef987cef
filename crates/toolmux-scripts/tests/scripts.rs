//! Script tools run real Python and shell scripts through the hub's pipeline.

mod support;

use std::time::{Duration, Instant};

use serde_json::json;
use support::{call_ok, hub, hub_in_tempdir, sh_tool};
use toolmux_config::ScriptTool;
use toolmux_core::{CallContext, CallError, Channel};
use toolmux_scripts::MAX_STDOUT_BYTES;
use toolmux_testkit::eventually::eventually;
use toolmux_testkit::peers::plain_python;
use toolmux_testkit::processes::{processes_with, unique_sleep};

fn cx() -> CallContext {
    CallContext::new(Channel::Cli)
}

#[tokio::test]
async fn a_python_script_gets_the_arguments_on_stdin_and_its_json_becomes_structured_content() {
    let dir = tempfile::tempdir().expect("dir");
    std::fs::write(
        dir.path().join("add.py"),
        "import json, sys\nargs = json.load(sys.stdin)\nprint(json.dumps({'sum': args['a'] + args['b']}))\n",
    )
    .expect("write");
    let hub = hub(
        dir.path(),
        json!({"add": {
            "description": "Adds two numbers.",
            "inputSchema": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]},
            "outputSchema": {"type": "object", "properties": {"sum": {"type": "number"}}, "required": ["sum"]},
            "command": [plain_python(), "add.py"],
        }}),
    );
    let result = hub
        .call("add", json!({"a": 2, "b": 3}), &cx())
        .await
        .expect("call");
    assert!(!result.is_error);
    assert_eq!(result.structured_content, Some(json!({"sum": 5})));
    assert_eq!(result.text_content(), "{\"sum\": 5}");
}

#[tokio::test]
async fn plain_stdout_is_text_and_env_and_cwd_apply() {
    let dir = tempfile::tempdir().expect("dir");
    std::fs::create_dir(dir.path().join("sub")).expect("mkdir");
    let hub = hub(
        dir.path(),
        json!({"hello": {
            "description": "Greets.",
            "command": ["sh", "-c", "printf 'hello %s from %s' \"$WHO\" \"$(basename \"$PWD\")\""],
            "cwd": "sub",
            "env": {"WHO": "world"},
        }}),
    );
    let result = call_ok(&hub, "hello").await;
    assert_eq!(result.structured_content, None);
    assert_eq!(result.text_content(), "hello world from sub");
}

#[tokio::test]
async fn a_non_zero_exit_is_an_error_result_with_the_end_of_stderr() {
    let (_dir, hub) = hub_in_tempdir(json!({"fail": {
        "description": "Fails.",
        "command": ["sh", "-c", "echo partial; echo 'something broke' >&2; exit 3"],
    }}));
    let result = call_ok(&hub, "fail").await;
    assert!(result.is_error);
    assert_eq!(
        result.text_content(),
        "`sh` exited with status 3: something broke"
    );
}

#[tokio::test]
async fn a_missing_executable_is_an_error_naming_its_path() {
    let dir = tempfile::tempdir().expect("dir");
    let hub = hub(
        dir.path(),
        json!({
            "gone": {"description": "Missing.", "command": ["./bin/nothing-here"]},
            "nowhere": {"description": "Not on PATH.", "command": ["toolmux-no-such-program"]},
        }),
    );
    let err = hub
        .call("gone", json!({}), &cx())
        .await
        .expect_err("missing");
    let expected = format!(
        "tool `gone` failed: cannot run `./bin/nothing-here`: `{}` does not exist",
        dir.path().join("./bin/nothing-here").display()
    );
    assert!(matches!(err, CallError::Failed { .. }), "{err:?}");
    assert_eq!(err.to_string(), expected);
    let err = hub
        .call("nowhere", json!({}), &cx())
        .await
        .expect_err("missing");
    assert_eq!(
        err.to_string(),
        "tool `nowhere` failed: cannot run `toolmux-no-such-program`: no such program on PATH"
    );
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn a_timeout_kills_the_whole_process_group() {
    // A marker unique to this run: the sleeps' argument.
    let marker = format!("{}.{}", 1000 + std::process::id() % 1000, 4321);
    let script = format!("sleep {marker} & sleep {marker} & wait");
    let (_dir, hub) = hub_in_tempdir(sh_tool("slow", "Hangs.", &script, Some(300)));
    let started = Instant::now();
    let err = hub
        .call("slow", json!({}), &cx())
        .await
        .expect_err("timeout");
    assert_eq!(err.to_string(), "tool `slow` timed out after 300ms");
    assert!(started.elapsed() < Duration::from_secs(5));
    eventually(Duration::from_secs(5), "the orphans to end", async || {
        processes_with(&marker).is_empty()
    })
    .await;
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn background_processes_die_with_a_call_that_finished() {
    let marker = format!("{}.{}", 2000 + std::process::id() % 1000, 8765);
    let script = format!("sleep {marker} & echo done");
    let (_dir, hub) = hub_in_tempdir(sh_tool("bg", "Leaves a child.", &script, None));
    let started = Instant::now();
    let result = call_ok(&hub, "bg").await;
    assert_eq!(result.text_content(), "done\n");
    assert!(started.elapsed() < Duration::from_secs(5));
    eventually(Duration::from_secs(5), "the orphans to end", async || {
        processes_with(&marker).is_empty()
    })
    .await;
}

#[tokio::test]
async fn output_is_capped() {
    let (_dir, hub) = hub_in_tempdir(json!({"big": {
        "description": "Prints a lot.",
        "command": [plain_python(), "-c", "import sys; sys.stdout.write('x' * (3 * 1024 * 1024))"],
    }}));
    let result = call_ok(&hub, "big").await;
    let text = result.text_content();
    assert!(text.len() < MAX_STDOUT_BYTES + 200, "{}", text.len());
    assert!(
        text.ends_with(&format!(
            "[output cut: {} bytes, only the first {MAX_STDOUT_BYTES} kept]",
            3 * 1024 * 1024
        )),
        "{}",
        &text[text.len() - 100..]
    );
}

#[test]
fn an_empty_command_is_refused_when_the_definition_is_read() {
    let err = serde_json::from_value::<ScriptTool>(json!({"description": "x", "command": []}))
        .expect_err("empty");
    assert_eq!(
        err.to_string(),
        "`command` needs at least the program to run (`[\"python3\", \"tool.py\"]`)"
    );
}

/// A variable of the test process's environment that no allowlist contains: cargo sets it
/// for every test it runs, so a script that inherited everything would see it.
const NOT_ALLOWLISTED: &str = "CARGO_MANIFEST_DIR";

/// The `NAME=value` lines a script's `env` printed, as pairs.
fn printed_env(text: &str) -> Vec<(String, String)> {
    text.lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[tokio::test]
async fn d9_a_script_gets_only_the_allowlist_and_its_configured_env() {
    assert!(
        std::env::var_os(NOT_ALLOWLISTED).is_some(),
        "cargo sets {NOT_ALLOWLISTED} for tests"
    );
    let (_dir, hub) = hub_in_tempdir(
        json!({"env": {"description": "Prints its environment.", "command": ["env"], "env": {"GIVEN": "by the config"}}}),
    );
    let result = call_ok(&hub, "env").await;
    let env = printed_env(&result.text_content());
    assert!(
        env.contains(&("GIVEN".to_string(), "by the config".to_string())),
        "{env:?}"
    );
    assert!(env.iter().any(|(k, _)| k == "PATH"), "{env:?}");
    let unexpected: Vec<&String> = env
        .iter()
        .map(|(k, _)| k)
        .filter(|k| {
            !toolmux_scripts::child::is_inherited(k)
                && *k != "GIVEN"
                && *k != toolmux_scripts::child::MARK_VAR
        })
        .collect();
    assert!(
        unexpected.is_empty(),
        "not on the allowlist: {unexpected:?}"
    );
}

#[tokio::test]
async fn d9_a_script_that_inherits_the_environment_gets_all_of_it() {
    let (_dir, hub) = hub_in_tempdir(
        json!({"env": {"description": "Prints its environment.", "command": ["env"], "env": {"GIVEN": "yes"}, "inheritEnv": true}}),
    );
    let result = call_ok(&hub, "env").await;
    let env = printed_env(&result.text_content());
    assert!(env.iter().any(|(k, _)| k == NOT_ALLOWLISTED), "{env:?}");
    assert!(env.contains(&("GIVEN".to_string(), "yes".to_string())));
}

/// Calls a tool `d` that runs `daemon` in the background (a daemon holding the call's output),
/// waits a moment and prints `started`: the call answers that well within its 20 s limit. The hub (returned, with
/// the directory it runs in) stays up for the test's further checks.
#[cfg(target_os = "linux")]
async fn start_daemon(daemon: &str) -> (tempfile::TempDir, toolmux_core::Hub) {
    let script = format!("{daemon} & sleep 0.3; echo started");
    let (dir, hub) = hub_in_tempdir(sh_tool("d", "Starts a daemon.", &script, Some(20000)));
    let started = Instant::now();
    let result = call_ok(&hub, "d").await;
    assert_eq!(result.text_content(), "started\n");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    (dir, hub)
}

#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn d12_a_setsid_child_neither_outlives_the_call_nor_holds_it_open() {
    let marker = unique_sleep();
    // The daemon keeps the call's stdout open: waiting for its end would take 300 s.
    let _running = start_daemon(&format!("setsid sleep {marker}")).await;
    // Swept before the call answered.
    assert!(
        processes_with(&format!("sleep\0{marker}")).is_empty(),
        "the setsid child outlived its call"
    );
}

#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn d12_output_held_by_an_unattributable_process_ends_the_call_after_a_grace() {
    let marker = unique_sleep();
    // `env -i` drops toolmux's mark, so nothing ties the daemon to this call any more; it
    // holds stdout open, and the call still ends once its command has.
    let _running = start_daemon(&format!("setsid env -i sleep {marker}")).await;
    // What toolmux does on exit: stop every process that escaped to it.
    toolmux_scripts::child::sweep_escaped();
    eventually(
        Duration::from_secs(5),
        "the escaped daemon to end after the exit sweep",
        async || processes_with(&format!("sleep\0{marker}")).is_empty(),
    )
    .await;
}

/// Issue 29: seed 003 marks a tool internal with a top-level `"_internal": true`; a script
/// tool's definition takes it as `_meta._internal` counts for an MCP server's tool: the model
/// never sees the tool, an untrusted caller cannot reach it, a trusted one calls it.
#[tokio::test]
async fn a_script_tool_marked_internal_is_hidden_from_models_and_callable_when_trusted() {
    let dir = tempfile::tempdir().expect("dir");
    let hub = hub(
        dir.path(),
        json!({
            "reset_cache": {
                "description": "Empties the cache.",
                "command": ["sh", "-c", "printf emptied"],
                "_internal": true,
            },
            "status": {"description": "Says how things are.", "command": ["sh", "-c", "printf fine"]},
        }),
    );
    let catalog = hub.catalog();
    let offered: Vec<&str> = catalog
        .tools()
        .map(|e| e.descriptor.name.as_str())
        .collect();
    assert_eq!(offered, ["status"]);
    let refused = hub
        .call("reset_cache", json!({}), &cx())
        .await
        .expect_err("an untrusted caller cannot reach an internal tool");
    assert_eq!(refused.to_string(), "unknown tool `reset_cache`");
    let ran = hub
        .call("reset_cache", json!({}), &cx().trusted())
        .await
        .expect("a trusted caller calls it");
    assert_eq!(ran.text_content(), "emptied");
}
