//! `request_human_input` from the command line: on a terminal, the question is asked there as
//! a form built from the answer's schema (text, number, a choice, yes/no, with defaults);
//! without one, the call says nobody can answer. The terminal is a real pseudo-terminal, made
//! by Python's `pty` module, that types the answers when their prompts appear.

mod support;

use serde_json::{Value, json};
use support::toolmux_project;
use toolmux_testkit::peers::plain_python;
use toolmux_testkit::project::TestProject;

/// Runs ARGV on a pseudo-terminal, writing each `send` once its `expect` has appeared in the
/// output; prints `{"output", "code"}`.
const PTY_DRIVER: &str = r#"
import json, os, pty, select, sys, time

argv, steps, cwd, env = json.loads(sys.argv[1]), json.loads(sys.argv[2]), sys.argv[3], json.loads(sys.argv[4])
pid, fd = pty.fork()
if pid == 0:
    os.chdir(cwd)
    os.execve(argv[0], argv, {**os.environ, **env})
out = b""

def read(timeout):
    global out
    ready, _, _ = select.select([fd], [], [], timeout)
    if not ready:
        return False
    try:
        chunk = os.read(fd, 4096)
    except OSError:
        return None
    if not chunk:
        return None
    out += chunk
    return True

for expect, send in steps:
    deadline = time.time() + 30
    while expect.encode() not in out:
        if time.time() > deadline or read(0.5) is None:
            print(json.dumps({"output": out.decode(errors="replace"), "code": None, "stuck_at": expect}))
            sys.exit(0)
    time.sleep(0.2)
    os.write(fd, send.encode())
deadline = time.time() + 30
while time.time() < deadline and read(0.5) is not None:
    pass
_, status = os.waitpid(pid, 0)
print(json.dumps({"output": out.decode(errors="replace"), "code": os.waitstatus_to_exitcode(status)}))
"#;

fn on_terminal(project: &TestProject, args: &[&str], steps: Value) -> Value {
    let driver = project.write("pty_driver.py", PTY_DRIVER);
    let mut argv = vec![env!("CARGO_BIN_EXE_toolmux").to_string()];
    argv.extend(args.iter().map(|a| a.to_string()));
    let env = json!({
        "HOME": project.home(),
        "XDG_CONFIG_HOME": project.home().join(".config"),
        "TERM": "xterm",
    });
    let output = std::process::Command::new(plain_python())
        .arg(driver)
        .arg(json!(argv).to_string())
        .arg(steps.to_string())
        .arg(project.path())
        .arg(env.to_string())
        .output()
        .expect("run the pty driver");
    let stdout = String::from_utf8_lossy(&output.stdout);
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| {
        panic!(
            "the pty driver printed no result ({e}): {stdout}\n{}",
            String::from_utf8_lossy(&output.stderr)
        )
    })
}

/// The structured answer in the `--json` result printed after the prompts: from the last
/// line that opens an object at the left margin to the end.
fn structured(output: &str) -> Value {
    let mut lines: Vec<&str> = output.lines().map(|l| l.trim_end_matches('\r')).collect();
    // The prompt's last act, showing the cursor again (`ESC[?25h`), may open that line.
    let start = lines
        .iter()
        .rposition(|l| *l == "{" || l.ends_with("\u{1b}[?25h{"))
        .unwrap_or_else(|| panic!("no JSON result in: {output}"));
    lines[start] = "{";
    let text = lines[start..].join("\n");
    let result: Value =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"));
    result["structuredContent"].clone()
}

#[test]
fn a_question_is_asked_on_the_terminal_as_a_form() {
    let project = toolmux_project();
    project.config("{}");
    let schema = json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "title": "Project name"},
            "replicas": {"type": "integer", "title": "Replicas", "default": 2},
            "region": {"type": "string", "title": "Region", "enum": ["eu", "us", "ap"], "default": "us"},
            "public": {"type": "boolean", "title": "Public", "default": false},
        },
        "required": ["name", "replicas", "region", "public"],
    });
    let arguments = json!({"question": "How should it be deployed?", "schema": schema});
    let run = on_terminal(
        &project,
        &[
            "tools",
            "call",
            "request_human_input",
            "--args",
            &arguments.to_string(),
            "--json",
        ],
        json!([
            ["Project name", "atlas\r"],
            // The default (2) is taken as it is.
            ["Replicas", "\r"],
            // One down from the default `us`: `ap`.
            ["Region", "\u{1b}[B\r"],
            ["Public", "y"],
        ]),
    );
    let output = run["output"].as_str().expect("output");
    assert_eq!(run["code"], 0, "{output}");
    assert!(output.contains("How should it be deployed?"), "{output}");
    assert_eq!(
        structured(output),
        json!({"name": "atlas", "replicas": 2, "region": "ap", "public": true}),
        "{output}"
    );
}

#[test]
fn a_free_text_question_is_one_prompt_and_without_a_terminal_it_is_refused() {
    let project = toolmux_project();
    project.config("{}");
    let run = on_terminal(
        &project,
        &[
            "tools",
            "call",
            "request_human_input",
            "-a",
            "question=Favourite colour?",
            "--json",
        ],
        json!([["Favourite colour?", "teal\r"]]),
    );
    let output = run["output"].as_str().expect("output");
    assert_eq!(run["code"], 0, "{output}");
    assert_eq!(structured(output), json!({"answer": "teal"}), "{output}");

    // No terminal: the call says nobody can answer, as before.
    let piped = project.run(&[
        "tools",
        "call",
        "request_human_input",
        "-a",
        "question=Favourite colour?",
    ]);
    assert_ne!(piped.code(), 0, "{}", piped.stdout());
}
