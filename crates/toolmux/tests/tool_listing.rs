//! What a tool listing says about each tool, as seed 002's `ToolInfo` does: `enabled`,
//! `sourceKind`, `discoveryStatus` and `lastDiscovered`, on `GET /api/tools` (and with
//! `disabled=true`, the tools switched off) and on `toolmux tools list --json --disabled`; an
//! upstream tool without a description gets `"<server> tool: <name>"`; and a failed discovery
//! is recorded with its time and error. Against a real Python MCP server (the `mcp` SDK).

mod support;

use serde_json::{Value, json};
use support::toolmux_project;
use toolmux_testkit::peers::mcp_python;
use toolmux_testkit::project::TestProject;
use toolmux_testkit::served::{Served, config_with_key, run_with_key};
use toolmux_testkit::servers::faults_script;

/// A server with one tool that has a description and one that has none.
const BARE_SERVER: &str = r#"
import anyio
import mcp_types as types
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.stdio import stdio_server

OBJ = {"type": "object", "properties": {}}

async def list_tools(ctx, params):
    return types.ListToolsResult(tools=[
        types.Tool(name="plain", input_schema=OBJ),
        types.Tool(name="documented", description="Says hello.", input_schema=OBJ),
    ])

async def call_tool(ctx, params):
    return types.CallToolResult(content=[types.TextContent(text="hello")])

async def main():
    server = Server("bare", on_list_tools=list_tools, on_call_tool=call_tool)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options(NotificationOptions()))

anyio.run(main)
"#;

/// A project with the bare server, the fault server set to fail at start, a script tool, and
/// `grep` switched off.
fn project() -> TestProject {
    let project = toolmux_project();
    let server = project.write("bare_server.py", BARE_SERVER);
    let python = mcp_python().display().to_string();
    let servers = json!({
        "bare": {"command": python, "args": [server]},
        "broken": {"command": python, "args": [faults_script(), "--fail-start", "no database"]},
    });
    let tools = json!({
        "shout": {"description": "Shout.", "command": ["cat"]},
    });
    project.config(&config_with_key(&format!(
        r#""mcpServers": {servers}, "tools": {tools}, "toolSettings": {{"grep": {{"enabled": false}}}}"#
    )));
    project
}

fn by_name<'a>(tools: &'a Value, name: &str) -> Option<&'a Value> {
    tools
        .as_array()
        .expect("a list of tools")
        .iter()
        .find(|t| t["name"] == name)
}

#[test]
fn listings_carry_the_tool_info_fields_and_the_switched_off_tools_on_request() {
    let project = project();
    let refreshed = run_with_key(&project, &["mcp", "refresh", "bare"]);
    assert_eq!(refreshed.code(), 0, "{}", refreshed.stderr());
    let failed = run_with_key(&project, &["mcp", "refresh", "broken"]);
    assert_ne!(failed.code(), 0, "{}", failed.stdout());
    // The failed discovery is recorded with its time and error.
    let servers = run_with_key(&project, &["mcp", "list", "--json"]).json();
    let broken = by_name(&servers, "broken").expect("the broken server");
    assert_eq!(broken["status"], "failed", "{broken}");
    assert!(broken["lastDiscovery"].is_string(), "{broken}");
    assert!(
        broken["error"]
            .as_str()
            .is_some_and(|e| e.contains("no database")),
        "{broken}"
    );

    let served = Served::start(&project, &[]);
    let listed = served.get("/api/tools").json();
    let tools = &listed["tools"];

    // An upstream tool without a description gets where it comes from and its name.
    let plain = by_name(tools, "bare__plain").expect("bare__plain listed");
    assert_eq!(plain["description"], "bare tool: plain");
    assert_eq!(plain["sourceKind"], "mcp");
    assert_eq!(plain["discoveryStatus"], "success");
    assert_eq!(plain["enabled"], true);
    assert!(plain["lastDiscovered"].is_string(), "{plain}");
    let documented = by_name(tools, "bare__documented").expect("bare__documented");
    assert_eq!(documented["description"], "Says hello.");

    let read = by_name(tools, "file_read").expect("file_read");
    assert_eq!(read["sourceKind"], "builtin");
    assert_eq!(read["discoveryStatus"], "success");
    assert!(read.get("lastDiscovered").is_none(), "{read}");
    let shout = by_name(tools, "shout").expect("the script tool");
    assert_eq!(shout["sourceKind"], "script");

    // Switched off: not listed, unless asked for, and then as `enabled: false`.
    assert!(by_name(tools, "grep").is_none());
    let all = served.get("/api/tools?disabled=true").json();
    let grep = by_name(&all["tools"], "grep").expect("grep listed with disabled=true");
    assert_eq!(grep["enabled"], false);
    assert_eq!(grep["sourceKind"], "builtin");
    assert_eq!(grep["policy"], "allow", "{grep}");
    assert_eq!(
        all["tools"].as_array().map(Vec::len),
        tools.as_array().map(|t| t.len() + 1)
    );
    // One tool shows the same fields.
    let one = served.get("/api/tools/bare__plain").json();
    assert_eq!(one["description"], "bare tool: plain");
    assert_eq!(one["sourceKind"], "mcp");

    served.stop();

    // The command line lists the same, switched-off tools with `--disabled`.
    let cli = run_with_key(&project, &["tools", "list", "--json", "--disabled"]).json();
    let grep = by_name(&cli, "grep").expect("grep in the CLI listing");
    assert_eq!(grep["enabled"], false);
    assert_eq!(
        by_name(&cli, "bare__plain").map(|t| &t["sourceKind"]),
        Some(&json!("mcp"))
    );
    let without = run_with_key(&project, &["tools", "list", "--json"]).json();
    assert!(by_name(&without, "grep").is_none());
    let table = run_with_key(&project, &["tools", "list", "--disabled"]).ok();
    assert!(
        table
            .lines()
            .any(|l| l.trim_start().starts_with("grep") && l.contains(" off ")),
        "{table}"
    );
}
