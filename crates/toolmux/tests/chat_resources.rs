//! The chat's model reads MCP resources (issue 29): `list_resources` and `read_resource` are
//! registry tools, so the chat's tool-calling loop offers them like any other. A real upstream
//! (the reference `server-everything`) serves the resources; aimock stands in for the model,
//! and answers only when the resource's text reached its next request.

mod support;

use serde_json::json;
use support::toolmux_project;
use toolmux_testkit::aimock::Aimock;
use toolmux_testkit::peers::node_peer;

#[test]
fn the_chat_model_lists_and_reads_an_upstream_servers_resource() {
    let aimock = Aimock::serving(json!([
        {"match": {"userMessage": "What does dynamic resource 1 say?", "hasToolResult": false},
         "response": {"toolCalls": [{"id": "call_list", "name": "list_resources",
             "arguments": json!({"server": "everything"}).to_string()}]}},
        // The listing names the server's template, which the model fills in.
        {"match": {"toolCallId": "call_list",
                   "toolResultContains": "demo://resource/dynamic/text/{resourceId}"},
         "response": {"toolCalls": [{"id": "call_read", "name": "read_resource",
             "arguments": json!({"uri": "demo://resource/dynamic/text/1"}).to_string()}]}},
        {"match": {"toolCallId": "call_read",
                   "toolResultContains": "Resource 1: This is a plaintext resource created at"},
         "response": {"content": "It is a plaintext resource."}},
    ]));
    let project = toolmux_project();
    let everything = node_peer("upstream", "mcp-server-everything");
    project.config(
        &json!({
            "mcpServers": {"everything": {"command": everything.display().to_string()}},
            "providers": {"mock": aimock.openai_provider()},
        })
        .to_string(),
    );
    // Discovered first, as `serve` and `mcp add` do: listing reads the discovery cache. The
    // server announces list changes right after it starts, and a discovery that raced them can
    // record its resources empty; another discovery then finds them.
    toolmux_testkit::eventually::wait_until("the server's resources in the cache", || {
        project.run(&["mcp", "refresh"]).ok();
        project
            .run(&["tools", "call", "list_resources"])
            .ok()
            .contains("demo://resource/dynamic/text/{resourceId}")
    });
    let chat = project.run(&["chat", "What does dynamic resource 1 say?"]);
    assert_eq!(chat.ok().trim(), "It is a plaintext resource.");
}
