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
use toolmux_testkit::served::{KEY, config_with_key};

/// The result of `toolmux tools call shell` with `command`; `None` when the call was refused
/// because this system cannot give the sandbox (asserted).
fn shell(project: &toolmux_testkit::project::TestProject, command: &str) -> Option<Value> {
    let arguments = json!({ "command": command }).to_string();
    let run = project.run(&["tools", "call", "shell", "--json", "--args", &arguments]);
    if run.code() != 0 {
        let said = format!("{}{}", run.stdout(), run.stderr());
        assert!(said.contains("requireSandbox"), "{said}");
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
        eprintln!("this system cannot give the sandbox; refused as it must be: {text}");
        return;
    }
    let out = &result["structuredContent"];
    assert_eq!(out["sandbox"]["namespaces"], "full", "{out}");
    assert_eq!(out["stdout"], " exit=7\n exit=7\n", "{out}");
}
