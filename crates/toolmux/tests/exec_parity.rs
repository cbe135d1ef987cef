//! `shell` and `code_execution` reach every channel with one result: the same call over MCP
//! (the Python SDK's client), REST and code mode (`run_code` importing the `exec` source)
//! gives the same structured result, on a real `toolmux serve`.

mod support;

use serde_json::{Value, json};
use support::toolmux_project;
use toolmux_testkit::python_client::run_mcp_steps;
use toolmux_testkit::served::{KEY, Served, config_with_key};

#[test]
fn the_same_shell_call_over_mcp_rest_and_code_mode_gives_the_same_result() {
    let project = toolmux_project();
    // `shell` asks by default, and nobody answers in this test.
    project.config(&config_with_key(
        r#""policies": {"tools": {"shell": "allow", "code_execution": "allow"}}"#,
    ));
    project.write("notes/todo.md", "buy milk\n");
    let served = Served::start(&project, &[]);
    let command = "cat notes/todo.md; echo oops >&2; exit 3";
    let arguments = json!({"command": command});

    let outcomes = run_mcp_steps(&json!({
        "transport": "http",
        "url": served.mcp_url(),
        "headers": {"Authorization": format!("Bearer {KEY}")},
        "steps": [
            {"op": "call", "name": "shell", "arguments": arguments},
            {"op": "call", "name": "code_execution", "arguments": {"language": "python", "code": "print(6 * 7)"}},
        ],
    }));
    let mcp = outcomes[0]["result"]["structuredContent"].clone();
    assert_eq!(mcp["exitCode"], 3, "{}", outcomes[0]);
    assert_eq!(mcp["stdout"], "buy milk\n");
    assert!(mcp["sandbox"]["landlock"].is_string(), "{mcp}");

    let rest = served.post("/api/tools/shell/call", &arguments.to_string());
    assert_eq!(rest.status, 200, "{}", rest.body);
    let rest = rest.json()["structuredContent"].clone();

    let script = format!(
        "import {{ exec }} from '@capabilities/exec';\nreturn await exec.shell({arguments});"
    );
    let code = served.post(
        "/api/tools/run_code/call",
        &json!({"code": script}).to_string(),
    );
    assert_eq!(code.status, 200, "{}", code.body);
    let code_mode = code.json()["structuredContent"]["result"].clone();

    assert_eq!(mcp, rest, "MCP and REST differ");
    assert_eq!(mcp, code_mode, "MCP and code mode differ");

    // code_execution too: MCP and REST agree.
    let python = json!({"language": "python", "code": "print(6 * 7)"});
    let rest = served.post("/api/tools/code_execution/call", &python.to_string());
    assert_eq!(rest.status, 200, "{}", rest.body);
    let rest: Value = rest.json()["structuredContent"].clone();
    assert_eq!(rest["stdout"], "42\n");
    assert_eq!(outcomes[1]["result"]["structuredContent"], rest);
    served.stop();
}
