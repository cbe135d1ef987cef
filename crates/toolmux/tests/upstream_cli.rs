//! `toolmux mcp list | add | remove | enable | disable | refresh | logs` and `toolmux import`,
//! driven as a user would, against the Python fault server and the npm reference servers.
//! After every command, no server process is left running.

mod support;

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Value, json};
use support::toolmux_project;
use toolmux_testkit::peers::{node_peer, python};
use toolmux_testkit::processes::{
    assert_exited, assert_no_process_left, processes_in, read_pid, unique_sleep,
};
use toolmux_testkit::project::{Run, TestProject};
use toolmux_testkit::python_client::run_mcp_steps;
use toolmux_testkit::served::{Served, run_with_key};
use toolmux_testkit::servers::{HungServer, faults_script, rogue_script};

/// How long a server the CLI started may take to exit once the command is done.
const EXIT_LIMIT: Duration = Duration::from_secs(5);

/// `toolmux mcp add NAME -- python faults.py --pid-file PID ARGS...`, returning the pid file.
fn add_faults(project: &TestProject, name: &str, extra: &[&str]) -> PathBuf {
    let pid_file = project.path().join(format!("{name}.pid"));
    let pid = pid_file.display().to_string();
    let python = python().display().to_string();
    let script = faults_script().display().to_string();
    let mut args = vec![
        "mcp",
        "add",
        name,
        "--",
        &python,
        &script,
        "--pid-file",
        &pid,
    ];
    args.extend_from_slice(extra);
    let out = project.run(&args).ok();
    assert!(out.contains(&format!("added MCP server `{name}`")), "{out}");
    pid_file
}

#[test]
fn mcp_add_discovers_the_tools_and_the_cli_calls_them() {
    let project = toolmux_project();
    let pid_file = add_faults(&project, "faults", &[]);
    assert_exited(read_pid(&pid_file), EXIT_LIMIT);

    let list = project.run(&["mcp", "list", "--json"]).json();
    assert_eq!(list[0]["name"], "faults");
    assert_eq!(list[0]["transport"], "stdio");
    assert_eq!(list[0]["status"], "success");
    assert_eq!(list[0]["tools"], 9);
    assert!(list[0]["lastDiscovery"].is_string());

    let table = project.run(&["mcp", "list"]).ok();
    assert!(
        table
            .lines()
            .next()
            .is_some_and(|h| h.contains("LAST DISCOVERY")),
        "{table}"
    );
    assert!(
        table.contains("faults") && table.contains("success"),
        "{table}"
    );

    let echo = project
        .run(&["tools", "call", "faults__echo", "-a", "text=hello"])
        .ok();
    assert_eq!(echo.trim(), "hello");
    assert_exited(read_pid(&pid_file), EXIT_LIMIT);

    let show = project.run(&["tools", "show", "faults__echo"]).ok();
    assert!(show.starts_with("faults__echo  (faults)"), "{show}");
    assert!(show.contains("original name: echo"), "{show}");
}

#[test]
fn tools_list_with_a_warm_cache_starts_no_server() {
    let project = toolmux_project();
    let pid_file = add_faults(&project, "faults", &[]);
    assert_exited(read_pid(&pid_file), EXIT_LIMIT);
    std::fs::remove_file(&pid_file).expect("remove pid file");
    let names = project.run(&["tools", "list", "--json"]).json();
    let names: Vec<&str> = names
        .as_array()
        .expect("array")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(names.contains(&"faults__kinds"), "{names:?}");
    assert!(!pid_file.exists(), "listing tools started the server");
    let catalog_check = project.run(&["config", "check"]).ok();
    assert!(
        catalog_check.starts_with("configuration ok"),
        "{catalog_check}"
    );
    assert!(
        !pid_file.exists(),
        "checking the configuration started the server"
    );
}

#[test]
fn a_crash_during_a_call_fails_that_call_and_names_the_server() {
    let project = toolmux_project();
    let pid_file = add_faults(&project, "flaky", &[]);
    let run = project.run(&["tools", "call", "flaky__crash"]);
    assert_eq!(run.code(), 1);
    assert!(
        run.stderr()
            .contains("MCP server `flaky` exited during the call"),
        "{}",
        run.stderr()
    );
    assert_exited(read_pid(&pid_file), EXIT_LIMIT);
    let logs = project.run(&["mcp", "logs", "flaky"]).ok();
    assert!(logs.contains("faults: crashing on purpose"), "{logs}");
    assert!(logs.contains("started pid"), "{logs}");
}

#[test]
fn add_refuses_an_existing_name_and_remove_enable_disable_edit_the_config() {
    let project = toolmux_project();
    project.config(r#"{"policies": {"default": "allow"}}"#);
    add_faults(&project, "faults", &[]);
    let again = project.run(&["mcp", "add", "faults", "--no-discover", "--", "x"]);
    assert_eq!(again.code(), 2);
    assert!(
        again.stderr().contains("already exists"),
        "{}",
        again.stderr()
    );

    project.run(&["mcp", "disable", "faults"]).ok();
    let config: Value = serde_json::from_str(
        &std::fs::read_to_string(project.path().join(".toolmux/config.json")).expect("config"),
    )
    .expect("json");
    assert_eq!(config["mcpServers"]["faults"]["enabled"], false);
    assert_eq!(
        config["policies"]["default"], "allow",
        "other keys are kept"
    );
    let table = project.run(&["mcp", "list"]).ok();
    assert!(table.contains("disabled"), "{table}");
    let call = project.run(&["tools", "call", "faults__echo", "-a", "text=x"]);
    assert_eq!(call.code(), 4, "{}", call.stderr());
    assert!(
        call.stderr()
            .contains("its source `faults` is switched off"),
        "{}",
        call.stderr()
    );

    project.run(&["mcp", "enable", "faults"]).ok();
    project
        .run(&["tools", "call", "faults__echo", "-a", "text=x"])
        .ok();

    project.run(&["mcp", "remove", "faults"]).ok();
    let list = project.run(&["mcp", "list", "--json"]).json();
    assert_eq!(list, json!([]));
    let missing = project.run(&["mcp", "remove", "faults"]);
    assert_eq!(missing.code(), 2);
    assert!(
        missing.stderr().contains("there is no MCP server `faults`"),
        "{}",
        missing.stderr()
    );
}

#[test]
fn refresh_reports_every_server_and_fails_for_a_broken_one() {
    let project = toolmux_project();
    add_faults(&project, "good", &[]);
    let broken = project.run(&[
        "mcp",
        "add",
        "broken",
        "--",
        &python().display().to_string(),
        &faults_script().display().to_string(),
        "--fail-start",
        "no credentials",
    ]);
    assert_eq!(broken.code(), 1);
    assert!(
        broken
            .stdout()
            .contains("broken: discovery failed: MCP server `broken`: cannot start"),
        "{}",
        broken.stdout()
    );
    assert!(
        broken.stdout().contains("no credentials"),
        "{}",
        broken.stdout()
    );

    let refresh = project.run(&["mcp", "refresh"]);
    assert_eq!(refresh.code(), 1);
    let out = refresh.stdout();
    assert!(out.contains("good: 9 tools"), "{out}");
    assert!(out.contains("broken: discovery failed"), "{out}");
    let list = project.run(&["mcp", "list", "--json"]).json();
    let broken = list
        .as_array()
        .expect("array")
        .iter()
        .find(|s| s["name"] == "broken")
        .expect("listed");
    assert_eq!(broken["status"], "failed");
    assert!(
        broken["error"]
            .as_str()
            .is_some_and(|e| e.contains("no credentials")),
        "{broken}"
    );

    let one = project.run(&["mcp", "refresh", "good"]).ok();
    assert_eq!(one.trim(), "good: 9 tools");
    let unknown = project.run(&["mcp", "refresh", "nope"]);
    assert_eq!(unknown.code(), 2);
    assert_eq!(
        unknown.stderr().trim(),
        "toolmux: there is no MCP server `nope`; the servers are: broken, good"
    );
}

#[test]
fn an_invalid_server_entry_is_reported_with_file_line_and_field() {
    let project = toolmux_project();
    let path = project.config("{\n  \"mcpServers\": {\n    \"x\": {\"command\": \"a\", \"headers\": {\"A\": \"b\"}}\n  }\n}\n");
    let run = project.run(&["mcp", "list"]);
    assert_eq!(run.code(), 3);
    assert_eq!(
        run.stderr().trim(),
        format!(
            "toolmux: invalid configuration: {}:4:3: at `mcpServers.x`: `headers` only apply to `http` and `sse` servers; a stdio server takes `env`",
            path.display()
        )
    );
}

#[test]
fn import_reads_other_clients_files_and_refuses_to_overwrite_without_force() {
    let project = toolmux_project();
    project.write(
        ".mcp.json",
        r#"{"mcpServers": {"everything": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-everything"]}}}"#,
    );
    project.write(
        ".cursor/mcp.json",
        r#"{"mcpServers": {"remote": {"url": "http://127.0.0.1:9/mcp", "headers": {"Authorization": "Bearer ${TOKEN:-none}"}}}}"#,
    );
    project.write(
        ".vscode/mcp.json",
        "{\n // VS Code allows comments\n \"servers\": {\"fs\": {\"type\": \"stdio\", \"command\": \"mcp-server-filesystem\", \"args\": [\"${workspaceFolder}\"]}}\n}",
    );
    let codex = project.home().join(".codex/config.toml");
    std::fs::create_dir_all(codex.parent().expect("parent")).expect("mkdir");
    std::fs::write(
        &codex,
        "[mcp_servers.docs]\ncommand = \"docs\"\ntool_timeout_sec = 5\n",
    )
    .expect("write");

    let dry = project.run(&["import", "--dry-run"]).ok();
    assert!(dry.contains("would add 4 server(s)"), "{dry}");
    assert!(
        !project.path().join(".toolmux/config.json").exists(),
        "a dry run writes nothing"
    );

    let out = project.run(&["import"]).ok();
    assert!(out.contains("added everything from Claude Code"), "{out}");
    assert!(out.contains("added remote from Cursor"), "{out}");
    assert!(out.contains("added fs from VS Code"), "{out}");
    assert!(out.contains("added docs from Codex"), "{out}");
    assert!(out.contains("added 4 server(s)"), "{out}");
    assert!(
        out.contains("remote: discovery failed"),
        "an imported remote server is checked at once, and one that cannot be reached still imports: {out}"
    );
    let config: Value = serde_json::from_str(
        &std::fs::read_to_string(project.path().join(".toolmux/config.json")).expect("config"),
    )
    .expect("json");
    assert_eq!(
        config["mcpServers"]["remote"]["headers"]["Authorization"], "Bearer ${TOKEN:-none}",
        "references stay references"
    );
    assert_eq!(config["mcpServers"]["docs"]["toolTimeoutMs"], 5000);
    assert_eq!(
        config["mcpServers"]["fs"]["args"][0],
        project.path().display().to_string()
    );

    let again = project.run(&["import", "--from", "claude"]).ok();
    assert!(again.contains("skipped everything (from Claude Code): toolmux already has a server of that name; use --force to replace it"), "{again}");
    assert!(again.contains("added 0 server(s)"), "{again}");
    let forced = project.run(&["import", "--from", "claude", "--force"]).ok();
    assert!(
        forced.contains("replaced everything from Claude Code"),
        "{forced}"
    );
    let list = project.run(&["mcp", "list", "--json"]).json();
    assert_eq!(list.as_array().map(Vec::len), Some(4));
}

#[test]
fn import_reads_claude_codes_user_and_local_scopes_and_codex_home() {
    let project = toolmux_project();
    // What `claude mcp add -s user ...` and `claude mcp add ...` (the local scope, keyed by the
    // project's directory) write, beside another project's server, which stays out.
    let claude = json!({
        "numStartups": 4,
        "mcpServers": {"memory": {"type": "stdio", "command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"], "env": {}}},
        "projects": {
            project.path().display().to_string(): {"mcpServers": {"sentry": {"type": "http", "url": "http://127.0.0.1:9/mcp"}}},
            "/somewhere/else": {"mcpServers": {"other": {"command": "other"}}},
        },
    });
    std::fs::write(project.home().join(".claude.json"), claude.to_string()).expect("write");
    // Codex's configuration under `$CODEX_HOME`, not `~/.codex`.
    let codex_home = project.home().join("codex-elsewhere");
    std::fs::create_dir_all(&codex_home).expect("mkdir");
    std::fs::write(
        codex_home.join("config.toml"),
        "[mcp_servers.docs]\ncommand = \"docs\"\n",
    )
    .expect("write");
    let dry = Run(project
        .cmd()
        .args(["import", "--dry-run"])
        .env("CODEX_HOME", &codex_home)
        .output()
        .expect("run toolmux"))
    .ok();
    let claude_json = project.home().join(".claude.json");
    let claude_json = claude_json.display();
    let lines: Vec<&str> = dry.lines().collect();
    assert_eq!(
        lines,
        [
            format!("added memory from Claude Code (user and local scopes) ({claude_json}): npx -y @modelcontextprotocol/server-memory").as_str(),
            format!("added sentry from Claude Code (user and local scopes) ({claude_json}): http http://127.0.0.1:9/mcp").as_str(),
            format!("added docs from Codex ({}): docs", codex_home.join("config.toml").display()).as_str(),
            format!("would add 3 server(s) to {}", project.path().join(".toolmux/config.json").display()).as_str(),
        ],
        "{dry}"
    );
    // `--from claude` alone finds `~/.claude.json` when the project has no `.mcp.json`.
    let claude_only = project
        .run(&["import", "--from", "claude", "--dry-run"])
        .ok();
    assert!(
        claude_only.contains("would add 2 server(s)"),
        "{claude_only}"
    );
}

#[test]
fn the_reference_everything_server_is_reachable_through_the_cli() {
    let project = toolmux_project();
    let bin = node_peer("upstream", "mcp-server-everything")
        .display()
        .to_string();
    let out = project.run(&["mcp", "add", "everything", "--", &bin]).ok();
    assert!(out.contains("everything: "), "{out}");
    let sum = project
        .run(&[
            "tools",
            "call",
            "everything__get-sum",
            "-a",
            "a=2",
            "-a",
            "b=40",
        ])
        .ok();
    assert!(sum.contains("42"), "{sum}");
    let logs = project.run(&["mcp", "logs", "everything", "-n", "50"]).ok();
    assert!(logs.contains("started pid"), "{logs}");
    for pid in logs
        .lines()
        .filter_map(|l| l.split("started pid ").nth(1))
        .filter_map(|r| r.split(':').next())
    {
        assert_exited(pid.parse().expect("a pid"), EXIT_LIMIT);
    }
}

/// Rewrites `mcpServers.NAME.args` in the project's config file.
fn set_server_args(project: &TestProject, name: &str, args: &[&str]) {
    let mut config = project.saved_config();
    config["mcpServers"][name]["args"] = json!(args);
    std::fs::write(project.config_file(), config.to_string()).expect("rewrite the config");
}

#[test]
fn d9_neither_a_script_tool_nor_a_stdio_server_sees_toolmux_secrets() {
    let project = toolmux_project();
    project.config(
        r#"{"tools": {"env": {"description": "Prints its environment.", "command": ["env"], "env": {"GIVEN": "by the config"}}}}"#,
    );
    let python = python().display().to_string();
    let script = rogue_script().display().to_string();
    project
        .run(&["mcp", "add", "rogue", "--", &python, &script])
        .ok();
    let secret = "sk-d9-do-not-pass";
    let run = |tool: &str| {
        let output = project
            .cmd()
            .args(["tools", "call", tool])
            .env("OPENAI_API_KEY", secret)
            .env("TOOLMUX_KEY", secret)
            .output()
            .expect("run toolmux");
        Run(output).ok()
    };
    let script_env = run("env");
    assert!(script_env.contains("GIVEN=by the config"), "{script_env}");
    assert!(script_env.contains("PATH="), "{script_env}");
    assert!(!script_env.contains(secret), "{script_env}");
    assert!(!script_env.contains("OPENAI_API_KEY"), "{script_env}");
    let server_env = run("rogue__env");
    assert!(server_env.contains("\"PATH\""), "{server_env}");
    assert!(!server_env.contains(secret), "{server_env}");
    assert!(!server_env.contains("TOOLMUX_KEY"), "{server_env}");
}

#[test]
fn d12_a_setsid_daemon_of_a_script_tool_neither_outlives_the_call_nor_holds_it_open() {
    let project = toolmux_project();
    let marker = unique_sleep();
    let script = format!("setsid sleep {marker} & sleep 0.3; echo started");
    project
        .run(&["tools", "add", "d", "-d", "x", "--", "sh", "-c", &script])
        .ok();
    let started = std::time::Instant::now();
    let out = project.run(&["tools", "call", "d"]).ok();
    assert_eq!(out.trim(), "started");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    let left = processes_in(project.path())
        .into_iter()
        .filter(|(_, cmd)| cmd.contains(&marker))
        .collect::<Vec<_>>();
    assert!(left.is_empty(), "the daemon outlived its call: {left:?}");
}

#[test]
fn d12_a_daemon_that_also_clears_its_environment_does_not_outlive_tools_call() {
    let project = toolmux_project();
    let marker = unique_sleep();
    // `env -i` drops the call's mark, so the call's own sweep cannot tell it from another
    // call's; the sweep when `toolmux` exits (whatever the command) stops it.
    let script = format!("setsid env -i sleep {marker} & sleep 0.3; echo started");
    project
        .run(&["tools", "add", "d", "-d", "x", "--", "sh", "-c", &script])
        .ok();
    let out = project.run(&["tools", "call", "d"]).ok();
    assert_eq!(out.trim(), "started");
    let left = processes_in(project.path())
        .into_iter()
        .filter(|(_, cmd)| cmd.contains(&marker))
        .collect::<Vec<_>>();
    assert!(left.is_empty(), "the daemon outlived toolmux: {left:?}");
}

#[test]
fn d13_a_session_that_ends_while_a_server_is_discovered_leaves_no_server() {
    let project = toolmux_project();
    // A server that never finishes its handshake and never exits on its own, under a shell
    // (as a Node server sits under `npx`).
    let hung = HungServer::write(project.path());
    let pid_file = hung.pid_file;
    let config = json!({"mcpServers": {"hung": hung.entry}});
    project.config(&config.to_string());

    // Never discovered, so `toolmux mcp` discovers it at start; the session ends while that
    // discovery still waits for the handshake.
    let steps = run_mcp_steps(&project.stdio_plan(
        &["mcp"],
        json!([{"op": "list"}, {"op": "wait_list_changed", "timeout": 1.0}]),
    ));
    assert!(steps[0]["tools"].is_array(), "{steps:?}");
    assert!(pid_file.exists(), "the discovery did not start the server");
    assert_exited(read_pid(&pid_file), EXIT_LIMIT);
    assert_no_process_left(project.path());
}

#[test]
fn d17_after_an_args_edit_the_tools_stay_known_and_a_call_rediscovers() {
    let project = toolmux_project();
    let pid_file = add_faults(&project, "faults", &[]);
    assert_exited(read_pid(&pid_file), EXIT_LIMIT);
    let moved = project.path().join("moved.pid");
    let script = faults_script().display().to_string();
    set_server_args(
        &project,
        "faults",
        &[&script, "--pid-file", &moved.display().to_string()],
    );

    // A fresh `toolmux mcp` still knows the tools, and calling one starts the server with the
    // configuration in force.
    let steps = run_mcp_steps(&project.stdio_plan(
        &["mcp"],
        json!([
            {"op": "list"},
            {"op": "call", "name": "faults__echo", "arguments": {"text": "known"}},
        ]),
    ));
    let listed: Vec<&str> = steps[0]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(listed.contains(&"faults__echo"), "{listed:?}");
    assert_eq!(
        steps[1]["result"]["content"][0]["text"], "known",
        "{steps:?}"
    );
    assert!(moved.exists(), "the server ran with the edited arguments");
    assert_exited(read_pid(&moved), EXIT_LIMIT);

    // And so does `tools call`, after which the cache is current again.
    set_server_args(&project, "faults", &[&script]);
    let echo = project
        .run(&["tools", "call", "faults__echo", "-a", "text=again"])
        .ok();
    assert_eq!(echo.trim(), "again");
    let list = project.run(&["mcp", "list", "--json"]).json();
    assert_eq!(list[0]["status"], "success", "{list}");
    assert_no_process_left(project.path());
}

/// Issue 29, item 12: a `${VAR}` that is not set in one server's entry (seed 000's example
/// names `GITHUB_TOKEN`) makes that server alone unavailable, with the variable, the field and
/// the file, in `toolmux mcp list` and the REST view; every other server serves, and the
/// waiting one is never started.
#[test]
fn a_server_naming_an_unset_variable_alone_is_unavailable_and_says_why() {
    let project = toolmux_project();
    let pid_file = project.path().join("github.pid");
    project.config(
        &json!({
            "server": {"apiKeys": ["${TOOLMUX_TEST_KEY}"]},
            "mcpServers": {
                "faults": {"command": python(), "args": [faults_script()]},
                "github": {
                    "command": python(),
                    "args": [faults_script(), "--pid-file", pid_file],
                    "env": {"GITHUB_TOKEN": "${TOOLMUX_TEST_NEVER_SET_29}"},
                },
            },
        })
        .to_string(),
    );
    let reason = format!(
        "environment variable `TOOLMUX_TEST_NEVER_SET_29` is not set (used in \
         `mcpServers.github.env.GITHUB_TOKEN` of `{}`)",
        project.config_file().display()
    );
    // Refreshing every server discovers the one that can start and names why the other
    // cannot.
    let refreshed = run_with_key(&project, &["mcp", "refresh"]);
    assert_ne!(refreshed.code(), 0);
    let said = format!("{}{}", refreshed.stdout(), refreshed.stderr());
    assert!(
        said.contains(&format!("MCP server `github`: cannot start: {reason}")),
        "{said}"
    );
    let called = run_with_key(
        &project,
        &[
            "tools",
            "call",
            "faults__echo",
            "-a",
            "text=hello",
            "--json",
        ],
    )
    .json();
    assert_eq!(called["content"][0]["text"], "hello", "{called}");

    let list = run_with_key(&project, &["mcp", "list", "--json"]).json();
    let github = list
        .as_array()
        .and_then(|rows| rows.iter().find(|row| row["name"] == "github"))
        .unwrap_or_else(|| panic!("no github in {list}"));
    assert_eq!(github["status"], "unavailable", "{list}");
    assert_eq!(github["error"], reason.as_str(), "{list}");
    assert_eq!(github["tools"], 0, "{list}");
    let faults = list
        .as_array()
        .and_then(|rows| rows.iter().find(|row| row["name"] == "faults"))
        .unwrap_or_else(|| panic!("no faults in {list}"));
    assert_eq!(faults["status"], "success", "{list}");

    let served = Served::start(&project, &[]);
    let view = served.get("/api/mcp-servers/github").json();
    assert_eq!(
        view["discovery"]["discoveryStatus"], "unavailable",
        "{view}"
    );
    assert_eq!(
        view["discovery"]["discoveryError"],
        reason.as_str(),
        "{view}"
    );
    let echoed = served
        .post("/api/tools/faults__echo/call", r#"{"text": "rest"}"#)
        .json();
    assert_eq!(echoed["status"], "success", "{echoed}");
    served.stop();
    assert!(!pid_file.exists(), "the waiting server was started");
}
