//! Findings D19 and D21 against the real binary: what toolmux starts must not read toolmux's
//! secrets (from `/proc/$PPID/environ` or an inherited environment), while the configuration's
//! `${VAR}` references to them still resolve, also after a reload; and nothing toolmux starts
//! outlives its call or `toolmux serve` — not a `setsid env -i` daemon, not a process that
//! joined toolmux's own process group with an empty environment.

#![cfg(target_os = "linux")]

mod support;

use serde_json::{Value, json};
use support::toolmux_project;
use toolmux_testkit::eventually::wait_until;
use toolmux_testkit::peers::{mcp_python, plain_python};
use toolmux_testkit::processes::{ESCAPE_PY, SHELL_SECRETS, processes_with, unique_sleep};
use toolmux_testkit::served::{KEY, Served};
use toolmux_testkit::servers::rogue_script;

/// Prints toolmux's environment block as `/proc` shows it, a line `---`, then its own.
const PEEK: &str = "tr '\\0' '\\n' < /proc/$PPID/environ; echo ---; env";

fn tool(command: Value) -> Value {
    json!({"description": "A test tool.", "command": command})
}

/// A configuration requiring the test key, allowing script tools, with `tools` and `servers`.
fn config(tools: Value, servers: Value) -> String {
    json!({
        "server": {"apiKeys": ["${TOOLMUX_TEST_KEY}"]},
        "policies": {"sources": {"scripts": "allow"}},
        "tools": tools,
        "mcpServers": servers,
    })
    .to_string()
}

fn assert_no_secret(seen: &str, who: &str) {
    for (name, value) in SHELL_SECRETS {
        assert!(!seen.contains(value), "{who} sees {name}:\n{seen}");
    }
    assert!(!seen.contains(KEY), "{who} sees TOOLMUX_TEST_KEY:\n{seen}");
}

/// The text of a REST call's result.
fn text(called: &Value) -> String {
    assert_eq!(called["status"], "success", "{called}");
    called["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["text"].as_str())
        .collect()
}

#[test]
fn d19_no_child_reads_toolmuxs_secrets_and_the_configuration_still_resolves_them() {
    let project = toolmux_project();
    let mut inheriting = tool(json!(["sh", "-c", PEEK]));
    inheriting["inheritEnv"] = json!(true);
    let mut given = tool(json!(["sh", "-c", "printf '%s' \"$GIVEN\""]));
    given["env"] = json!({"GIVEN": "${OPENAI_API_KEY}"});
    project.config(&config(
        json!({"peek": tool(json!(["sh", "-c", PEEK])), "peek_all": inheriting, "given": given}),
        json!({}),
    ));

    // The one-shot CLI.
    for name in ["peek", "peek_all"] {
        let run = project
            .cmd()
            .env("TOOLMUX_TEST_KEY", KEY)
            .envs(SHELL_SECRETS.iter().copied())
            .args(["tools", "call", name])
            .output()
            .expect("run toolmux");
        let out = String::from_utf8_lossy(&run.stdout);
        assert!(run.status.success(), "{run:?}");
        assert!(out.contains("---"), "{out}");
        assert_no_secret(&out, name);
    }
    let run = project
        .cmd()
        .env("TOOLMUX_TEST_KEY", KEY)
        .envs(SHELL_SECRETS.iter().copied())
        .args(["tools", "call", "given"])
        .output()
        .expect("run toolmux");
    assert!(
        String::from_utf8_lossy(&run.stdout).contains(SHELL_SECRETS[0].1),
        "${{OPENAI_API_KEY}} did not resolve: {run:?}"
    );

    // The server, and a reload that adds a reference to another secret.
    let served = Served::start_with_env(&project, &[], SHELL_SECRETS);
    for name in ["peek", "peek_all"] {
        let seen = text(&served.post(&format!("/api/tools/{name}/call"), "{}").json());
        assert!(seen.contains("---"), "{seen}");
        assert_no_secret(&seen, name);
    }
    let mut reloaded = tool(json!(["sh", "-c", "printf '%s' \"$GIVEN\""]));
    reloaded["env"] = json!({"GIVEN": "${MYSQL_PWD}"});
    project.config(&config(json!({"reloaded": reloaded}), json!({})));
    wait_until("the reloaded tool", || {
        served.tool_names("scripts") == ["reloaded"]
    });
    let seen = text(&served.post("/api/tools/reloaded/call", "{}").json());
    assert_eq!(seen, "mysql-pw-4815162342");
    served.stop();
}

/// Issue 28, D19's kind (found in review): a `${VAR}` in a registry file is expanded like one
/// in the configuration, so the variable it names leaves toolmux's environment and `/proc` at
/// start like the configuration's do (a name that does not look like a secret too), while the
/// registry's server still gets the value.
#[test]
fn d19_a_variable_a_registry_names_is_hidden_too() {
    const NAME: &str = "REGISTRY_VALUE";
    const VALUE: &str = "registry-value-5772156649";
    let project = toolmux_project();
    project.write(
        "servers.json",
        &json!({"mcpServers": {"reg": {
            "command": mcp_python(),
            "args": [rogue_script()],
            "env": {"SEEN": format!("${{{NAME}}}")},
        }}})
        .to_string(),
    );
    let mut configured: Value = serde_json::from_str(&config(
        json!({"peek": tool(json!(["sh", "-c", PEEK]))}),
        json!({}),
    ))
    .expect("the configuration");
    configured["registries"] = json!(["servers.json"]);
    project.config(&configured.to_string());
    let run = |args: &[&str]| {
        let run = project
            .cmd()
            .env("TOOLMUX_TEST_KEY", KEY)
            .env(NAME, VALUE)
            .args(args)
            .output()
            .expect("run toolmux");
        assert!(run.status.success(), "{run:?}");
        String::from_utf8_lossy(&run.stdout).into_owned()
    };
    let seen = run(&["tools", "call", "peek"]);
    assert!(seen.contains("---"), "{seen}");
    assert!(!seen.contains(VALUE), "a child sees {NAME}:\n{seen}");
    run(&["mcp", "refresh", "reg"]);
    let server_env: Value =
        serde_json::from_str(run(&["tools", "call", "reg__env"]).trim()).expect("the server's env");
    assert_eq!(server_env["SEEN"], VALUE, "{server_env}");
    assert_eq!(server_env.get(NAME), None, "{server_env}");
}

/// Found in review of issue 28: the variables the configuration names were hidden only at
/// start, so a registry added by a reload that names a variable not looking like a secret
/// left it in toolmux's environment: a child inheriting the whole environment got it, and
/// `/proc/<toolmux>/environ` showed it. A reload hides what it names for the first time the
/// way the start does, and the registry's server still gets the value.
#[test]
fn d19_a_variable_a_reloaded_registry_names_is_hidden_too() {
    const NAME: &str = "RELOADED_PLAIN_NAME";
    const VALUE: &str = "reloaded-plain-value-1414213562";
    let project = toolmux_project();
    let mut inheriting = tool(json!(["sh", "-c", PEEK]));
    inheriting["inheritEnv"] = json!(true);
    let tools = json!({"peek_all": inheriting});
    project.config(&config(tools.clone(), json!({})));
    let served = Served::start_with_env(&project, &[], &[(NAME, VALUE)]);
    let peek = || text(&served.post("/api/tools/peek_all/call", "{}").json());
    // Named by nothing yet, it is an ordinary variable: in `/proc` and inherited.
    let seen = peek();
    let entry = format!("{NAME}={VALUE}");
    assert_eq!(seen.matches(&entry).count(), 2, "{seen}");

    project.write(
        "servers.json",
        &json!({"mcpServers": {"reg": {
            "command": mcp_python(),
            "args": [rogue_script()],
            "env": {"SEEN": format!("${{{NAME}}}")},
        }}})
        .to_string(),
    );
    let mut configured: Value =
        serde_json::from_str(&config(tools, json!({}))).expect("the configuration");
    configured["registries"] = json!(["servers.json"]);
    project.config(&configured.to_string());
    wait_until("the reloaded registry's server", || {
        !served.tool_names("reg").is_empty()
    });
    let seen = peek();
    assert!(seen.contains("---"), "{seen}");
    assert!(!seen.contains(VALUE), "{NAME} is still seen:\n{seen}");
    let called = served.post("/api/tools/reg__env/call", "{}").json();
    let server_env: Value = serde_json::from_str(&text(&called)).expect("the server's env");
    assert_eq!(server_env["SEEN"], VALUE, "{server_env}");
    assert_eq!(server_env.get(NAME), None, "{server_env}");
    served.stop();
}

#[test]
fn d21_nothing_a_script_or_a_server_left_outlives_its_call_or_serve() {
    let project = toolmux_project();
    project.write("esc.py", ESCAPE_PY);
    let by_call = unique_sleep();
    let by_server = unique_sleep();
    let python = plain_python().display().to_string();
    // A stdio server that, as it starts, leaves a process in toolmux's own process group
    // (`$PPID` of its shell is toolmux) with an empty environment, then runs as usual.
    let server = json!({
        "command": "sh",
        "args": [
            "-c",
            format!("\"$0\" esc.py {by_server} $PPID && exec \"$0\" \"$@\""),
            mcp_python(),
            rogue_script(),
        ],
    });
    project.config(&config(
        json!({
            "esc": tool(json!([python, "esc.py", by_call])),
            "daemon": tool(json!(["sh", "-c", format!("setsid env -i sleep {by_call} & echo started")])),
        }),
        json!({"rogue": server}),
    ));
    let sleeping = |marker: &str| processes_with(&format!("sleep\0{marker}"));

    let served = Served::start(&project, &[]);
    for name in ["esc", "daemon"] {
        let said = text(&served.post(&format!("/api/tools/{name}/call"), "{}").json());
        assert!(!said.is_empty());
        assert_eq!(
            sleeping(&by_call),
            Vec::<u32>::new(),
            "what `{name}` left outlived its call"
        );
    }
    wait_until("the server's tools", || {
        !served.tool_names("rogue").is_empty()
    });
    wait_until("the server's escaped process", || {
        sleeping(&by_server).len() == 1
    });
    served.stop();
    assert_eq!(
        sleeping(&by_server),
        Vec::<u32>::new(),
        "what a stdio server left in toolmux's process group outlived toolmux serve"
    );
}
