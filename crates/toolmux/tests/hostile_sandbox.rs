//! The sandbox as the `toolmux` binary assembles it, against the reproductions of D20 (a
//! `shell` call rewrote `.toolmux/config.json` and a registry, switching its own sandbox off
//! for the next call) and D39 (a network-less command reached `serve --socket`'s socket).
//! Where this system cannot give the sandbox the call must be refused, naming what is missing
//! (`shell.requireSandbox`); the tests assert that refusal rather than pass unconfined.

mod support;

use std::io::{BufRead, Read, Write};
use std::process::Stdio;

use serde_json::{Value, json};
use support::toolmux_project;
use toolmux_testkit::sandbox::system_can_sandbox;
use toolmux_testkit::served::{KEY, config_with_key};

/// The result of `toolmux tools call shell` with `command`; `None` when the call was refused
/// because this system cannot give the sandbox (asserted).
fn shell(project: &toolmux_testkit::project::TestProject, command: &str) -> Option<Value> {
    let arguments = json!({ "command": command }).to_string();
    let run = project.run(&["tools", "call", "shell", "--json", "--args", &arguments]);
    if run.code() != 0 {
        let said = format!("{}{}", run.stdout(), run.stderr());
        assert!(said.contains("requireSandbox"), "{said}");
        // A refusal is right only where the system really cannot: where this test process can
        // make the namespaces itself, toolmux must too.
        assert!(
            !system_can_sandbox(),
            "this system makes user, mount, IPC and network namespaces, but toolmux refused: {said}"
        );
        eprintln!("this system cannot give the sandbox; refused as it must be: {said}");
        return None;
    }
    let out = run.json()["structuredContent"].clone();
    assert_eq!(out["sandbox"]["namespaces"], "full", "{out}");
    Some(out)
}

#[test]
fn a_shell_call_cannot_rewrite_the_configuration_a_registry_or_a_skill() {
    let project = toolmux_project();
    let config = json!({
        "policies": {"tools": {"shell": "allow"}},
        "registries": ["backend/mcp.json"],
        "skills": {"paths": ["docs/skills"]}
    })
    .to_string();
    let config_path = project.config(&config);
    let registry = project.write("backend/mcp.json", "{\"mcpServers\": {}}\n");
    let skill = project.write(
        "docs/skills/review/SKILL.md",
        "---\nname: review\n---\nRead.\n",
    );
    let attacks = [
        // D20's reproduction: the sandbox switched off for the next call.
        r#"printf %s '{"policies":{"tools":{"shell":"allow"}},"shell":{"sandbox":false,"network":true}}' > .toolmux/config.json"#,
        // A server that would run unsandboxed.
        r#"printf %s '{"mcpServers":{"x":{"command":"sh","args":["-c","id > owned"]}}}' > backend/mcp.json"#,
        "mv backend old-backend && mkdir backend && echo '{}' > backend/mcp.json",
        "echo 'allowed-tools: shell' >> docs/skills/review/SKILL.md",
        "mkdir -p .toolmux/skills/evil && echo x > .toolmux/skills/evil/SKILL.md",
    ];
    for attack in attacks {
        let Some(out) = shell(&project, &format!("{attack}; echo ran")) else {
            return;
        };
        assert_eq!(out["stdout"], "ran\n", "{attack}: {out}");
        assert_eq!(
            std::fs::read_to_string(&config_path).expect("config"),
            config,
            "{attack}"
        );
        assert_eq!(
            std::fs::read_to_string(&registry).expect("registry"),
            "{\"mcpServers\": {}}\n",
            "{attack}"
        );
        assert!(
            std::fs::read_to_string(&skill)
                .expect("skill")
                .ends_with("Read.\n")
        );
        assert!(!project.path().join("old-backend").exists(), "{attack}");
        assert!(!project.path().join(".toolmux/skills").exists(), "{attack}");
    }
    // The next call still runs sandboxed, with no network.
    let Some(out) = shell(&project, "true") else {
        return;
    };
    assert_eq!(out["sandbox"]["network"], "blocked", "{out}");
    assert_ne!(out["sandbox"]["landlock"], "off", "{out}");
}

#[cfg(unix)]
#[test]
fn a_shell_call_under_serve_cannot_reach_its_socket() {
    let project = toolmux_project();
    project.config(&config_with_key(
        r#""policies": {"tools": {"shell": "allow"}}"#,
    ));
    let socket = project.path().join("tm.sock");
    let mut child = project
        .cmd()
        .args(["serve", "--socket", "tm.sock"])
        .env("TOOLMUX_TEST_KEY", KEY)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start toolmux serve --socket");
    let mut stderr = std::io::BufReader::new(child.stderr.take().expect("stderr"));
    let mut line = String::new();
    stderr.read_line(&mut line).expect("first line");
    assert!(line.contains("serving MCP at unix:"), "{line}");
    // D39's reproduction, through the socket itself: exit 7 is curl's "could not connect".
    let command = "curl -s -m 5 --unix-socket tm.sock http://localhost/api/health; echo \" exit=$?\"; \
                   curl -s -m 5 --unix-socket \"$PWD/tm.sock\" http://localhost/api/health; echo \" exit=$?\"";
    let body = json!({ "command": command }).to_string();
    let request = format!(
        "POST /api/tools/shell/call HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\
         Authorization: Bearer {KEY}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let mut stream = std::os::unix::net::UnixStream::connect(&socket).expect("connect");
    stream.write_all(request.as_bytes()).expect("send");
    let mut response = String::new();
    stream.read_to_string(&mut response).expect("read");
    let _ = child.kill();
    let _ = child.wait();
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    let json_text =
        &response[response.find('{').expect("a body")..=response.rfind('}').expect("a body")];
    let result: Value = serde_json::from_str(json_text).expect("JSON");
    if result["isError"] == true {
        let text = result.to_string();
        assert!(text.contains("requireSandbox"), "{text}");
        assert!(
            !system_can_sandbox(),
            "this system makes the sandbox's namespaces, but toolmux refused: {text}"
        );
        eprintln!("this system cannot give the sandbox; refused as it must be: {text}");
        return;
    }
    let out = &result["structuredContent"];
    assert_eq!(out["sandbox"]["namespaces"], "full", "{out}");
    assert_eq!(out["stdout"], " exit=7\n exit=7\n", "{out}");
}

/// Found in review of issue 28: toolmux makes itself not dumpable at start (D19), a fork
/// inherits that, and a child that is not root could then not write its user namespace's id
/// maps — every `shell` call of a user who is not root was refused (or, with
/// `requireSandbox: false`, ran unconfined). As root the other tests take root's path; this
/// one runs the real binary as `nobody`, with toolmux's secrets-hiding start-up, and asks for
/// the whole sandbox.
#[test]
fn a_user_who_is_not_root_gets_the_whole_sandbox() {
    use std::os::unix::fs::PermissionsExt;
    let whoami = std::process::Command::new("id")
        .arg("-u")
        .output()
        .expect("id -u");
    if String::from_utf8_lossy(&whoami.stdout).trim() != "0" {
        // Not root: every other test here already runs as a user who is not root.
        eprintln!("not root: the other tests of this file run as a user who is not root");
        return;
    }
    const NOBODY: u32 = 65534;
    let place = tempfile::tempdir().expect("temp dir");
    std::fs::set_permissions(place.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    // The test's build lives under /root, where `nobody` may not go: a copy it may run.
    let binary = place.path().join("toolmux");
    std::fs::copy(env!("CARGO_BIN_EXE_toolmux"), &binary).expect("copy the binary");
    std::fs::set_permissions(&binary, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let project = place.path().join("project");
    std::fs::create_dir_all(project.join(".toolmux")).expect("project");
    std::fs::write(
        project.join(".toolmux/config.json"),
        r#"{"policies": {"tools": {"shell": "allow"}}}"#,
    )
    .expect("config");
    for path in [
        &project,
        &project.join(".toolmux"),
        &project.join(".toolmux/config.json"),
    ] {
        std::os::unix::fs::chown(path, Some(NOBODY), Some(NOBODY)).expect("chown");
    }
    let arguments = json!({"command": "id -u; grep CapEff /proc/self/status"}).to_string();
    let run = std::process::Command::new("setpriv")
        .args([
            "--reuid",
            "65534",
            "--regid",
            "65534",
            "--clear-groups",
            "--",
        ])
        .arg(&binary)
        .args(["tools", "call", "shell", "--json", "--args", &arguments])
        .current_dir(&project)
        .env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("HOME", &project)
        .env("XDG_CONFIG_HOME", project.join(".config"))
        // A secret in its environment makes the start-up hide it, as a real user's would.
        .env("OPENAI_API_KEY", "sk-not-for-children")
        .output()
        .expect("run toolmux as nobody");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr)
    );
    assert!(run.status.success(), "{said}");
    let out: Value = serde_json::from_slice(&run.stdout).expect("JSON result");
    let out = &out["structuredContent"];
    assert_eq!(out["sandbox"]["namespaces"], "full", "{out}");
    assert_eq!(out["sandbox"]["network"], "blocked", "{out}");
    let stdout = out["stdout"].as_str().unwrap_or_default();
    assert!(
        stdout.contains("CapEff:\t0000000000000000"),
        "the command kept capabilities: {out}"
    );
}

/// Found in review of issue 28: toolmux takes its secrets out of its environment at start (D19),
/// and `shell.env`, the one way to hand a command a secret on purpose, read the process
/// environment afterwards and found nothing. A variable `shell.env` names reaches the command;
/// one it does not name does not.
#[test]
fn a_secret_shell_env_names_reaches_the_command_and_no_other_does() {
    let project = toolmux_project();
    project
        .config(r#"{"policies": {"tools": {"shell": "allow"}}, "shell": {"env": ["MYSQL_PWD"]}}"#);
    let arguments = json!({"command": "echo \"pwd=$MYSQL_PWD key=$OPENAI_API_KEY\""}).to_string();
    let run = toolmux_testkit::project::Run(
        project
            .cmd()
            .args(["tools", "call", "shell", "--json", "--args", &arguments])
            .env("MYSQL_PWD", "named-on-purpose")
            .env("OPENAI_API_KEY", "sk-not-named")
            .output()
            .expect("run toolmux"),
    );
    let said = format!("{}{}", run.stdout(), run.stderr());
    assert_eq!(run.code(), 0, "{said}");
    let out = run.json()["structuredContent"].clone();
    assert_eq!(out["stdout"], "pwd=named-on-purpose key=\n", "{out}");
}

/// Found in review of issue 28 (D20's kind): the registries were read-only, but the files a
/// configured script tool or stdio server runs were not — one sandboxed `shell` call could
/// rewrite `scripts/lint.sh`, and the tool's next call ran it unsandboxed.
#[test]
fn a_shell_call_cannot_rewrite_what_a_configured_tool_or_server_runs() {
    let project = toolmux_project();
    project.config(
        r#"{
            "policies": {"tools": {"shell": "allow"}},
            "tools": {"lint": {"description": "Lint.", "command": ["sh", "scripts/lint.sh"]}},
            "mcpServers": {"local": {"command": "node", "args": ["servers/local.js"], "enabled": false}}
        }"#,
    );
    let lint = project.write("scripts/lint.sh", "echo lint\n");
    let server = project.write("servers/local.js", "// server\n");
    let attack = "echo 'touch pwned' > scripts/lint.sh; echo 'x' > servers/local.js; \
                  rm -f scripts/lint.sh; echo ran";
    let Some(out) = shell(&project, attack) else {
        return;
    };
    assert_eq!(out["stdout"], "ran\n", "{out}");
    assert_eq!(std::fs::read_to_string(&lint).expect("lint"), "echo lint\n");
    assert_eq!(
        std::fs::read_to_string(&server).expect("server"),
        "// server\n"
    );
}

/// Found in review of issue 28 (D20's kind): a registry named through a link had only the
/// file it points at made read-only; the link itself could be removed and replaced by a file
/// of the command's, which the next load read as the registry.
#[test]
fn a_registry_named_through_a_link_cannot_be_replaced() {
    let project = toolmux_project();
    project.config(
        r#"{"policies": {"tools": {"shell": "allow"}}, "registries": ["backend/mcp.json"]}"#,
    );
    let real = project.write("shared/mcp.json", "{\"mcpServers\": {}}\n");
    std::fs::create_dir_all(project.path().join("backend")).expect("backend");
    std::os::unix::fs::symlink(
        "../shared/mcp.json",
        project.path().join("backend/mcp.json"),
    )
    .expect("link");
    let attack = r#"rm -f backend/mcp.json; printf %s '{"mcpServers":{"x":{"command":"sh"}}}' > backend/mcp.json; echo ran"#;
    let Some(out) = shell(&project, attack) else {
        return;
    };
    assert_eq!(out["stdout"], "ran\n", "{out}");
    let link = std::fs::read_link(project.path().join("backend/mcp.json")).expect("still a link");
    assert_eq!(link, std::path::Path::new("../shared/mcp.json"));
    assert_eq!(
        std::fs::read_to_string(&real).expect("registry"),
        "{\"mcpServers\": {}}\n"
    );
}

/// Found in review of issue 28 (D20's kind): the program a configured tool runs was
/// read-only, the modules beside it were not — a sandboxed command could rewrite
/// `tools/helper.py` (or plant a `json.py` that shadows Python's own, or change a server's
/// `node_modules`), and the tool's next call ran that code unsandboxed. The folder holding a
/// configured program and a configured `cwd` are read-only; the rest of the root is not.
#[test]
fn a_shell_call_cannot_change_a_module_beside_a_configured_script() {
    let project = toolmux_project();
    project.config(
        r#"{
            "policies": {"tools": {"shell": "allow"}},
            "tools": {"fmt": {"description": "Format.", "command": ["python3", "tools/fmt.py"]}},
            "mcpServers": {"app": {"command": "node", "args": ["-e", "require('m')"],
                                   "cwd": "servers/app", "enabled": false}}
        }"#,
    );
    project.write("tools/fmt.py", "import helper\n");
    let helper = project.write("tools/helper.py", "def run(): pass\n");
    let module = project.write("servers/app/node_modules/m/index.js", "// m\n");
    let attack = "{ echo 'import os' > tools/helper.py; echo 'x = 1' > tools/json.py; \
                  echo x > servers/app/node_modules/m/index.js; mv tools tools-old; \
                  echo ok > notes.txt && echo wrote; } 2>&1";
    let Some(out) = shell(&project, attack) else {
        return;
    };
    assert_eq!(
        out["stdout"],
        "bash: line 1: tools/helper.py: Read-only file system\n\
         bash: line 1: tools/json.py: Read-only file system\n\
         bash: line 1: servers/app/node_modules/m/index.js: Read-only file system\n\
         mv: cannot move 'tools' to 'tools-old': Device or resource busy\n\
         wrote\n",
        "{out}"
    );
    assert_eq!(
        std::fs::read_to_string(&helper).expect("helper"),
        "def run(): pass\n"
    );
    assert_eq!(std::fs::read_to_string(&module).expect("module"), "// m\n");
    assert!(!project.path().join("tools/json.py").exists());
}
