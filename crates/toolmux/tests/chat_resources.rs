//! The chat and MCP resources and prompts (issue 29): the chat's model reads resources through
//! `list_resources` and `read_resource`, registry tools the chat's tool-calling loop offers like
//! any other; a person starts a turn from a prompt by name — `/prompt NAME key=value` in the
//! terminal chat, `prompt` in `POST /api/chat` — and the prompt's messages are the person's
//! message. A real upstream (the reference `server-everything`) serves both; aimock stands in
//! for the model, and answers only when what the server gave reached its request.

mod support;

use serde_json::{Value, json};
use support::toolmux_project;
use toolmux_testkit::aimock::Aimock;
use toolmux_testkit::peers::node_peer;
use toolmux_testkit::project::TestProject;
use toolmux_testkit::served::Served;

/// A project with `server-everything` as `everything`, discovered, and aimock as the model.
fn project_with_everything(aimock: &Aimock) -> TestProject {
    let project = toolmux_project();
    let everything = node_peer("upstream", "mcp-server-everything");
    project.config(
        &json!({
            "mcpServers": {"everything": {"command": everything.display().to_string()}},
            "providers": {"mock": aimock.openai_provider()},
        })
        .to_string(),
    );
    // Discovered first, as `serve` and `mcp add` do: resources and prompts are listed from the
    // discovery cache. The server announces list changes right after it starts, and a
    // discovery that raced them can record its lists empty; another discovery then finds them.
    toolmux_testkit::eventually::wait_until("the server's resources in the cache", || {
        project.run(&["mcp", "refresh"]).ok();
        project
            .run(&["tools", "call", "list_resources"])
            .ok()
            .contains("demo://resource/dynamic/text/{resourceId}")
    });
    project
}

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
    let project = project_with_everything(&aimock);
    let chat = project.run(&["chat", "What does dynamic resource 1 say?"]);
    assert_eq!(chat.ok().trim(), "It is a plaintext resource.");
}

/// `/prompt NAME key=value` in the terminal chat: the server's prompt, with its argument, is
/// what the model is asked, and what the conversation keeps as the person's message.
#[test]
fn a_prompt_by_name_in_the_terminal_chat_is_the_persons_message() {
    let aimock = Aimock::serving(json!([
        {"match": {"userMessage": "What's weather in New York?"},
         "response": {"content": "Sunny in New York."}},
    ]));
    let project = project_with_everything(&aimock);
    let chat = project.run(&["chat", r#"/prompt everything__args-prompt city="New York""#]);
    assert_eq!(chat.ok().trim(), "Sunny in New York.");
    assert!(
        chat.stderr()
            .contains("toolmux: prompt `everything__args-prompt` is the message"),
        "{}",
        chat.stderr()
    );
    let conversations: Value =
        serde_json::from_str(&project.run(&["chat", "list", "--json"]).ok()).expect("JSON");
    let id = conversations[0]["id"].as_str().expect("a conversation");
    let shown = project.run(&["chat", "show", id]).ok();
    assert!(shown.contains("What's weather in New York?"), "{shown}");

    // An unknown prompt is said, and no turn is started.
    let unknown = project.run(&["chat", "/prompt everything__no-such-prompt"]);
    assert_eq!(unknown.code(), 2, "{}", unknown.stderr());
    assert_eq!(
        unknown.stderr().trim(),
        "toolmux: prompt `everything__no-such-prompt`: no MCP server behind toolmux offers the \
         prompt `everything__no-such-prompt`"
    );
}

/// `prompt` in `POST /api/chat`: its messages, then the body's `text`, are the person's message.
#[test]
fn a_prompt_by_name_in_the_rest_chat_is_the_persons_message() {
    let aimock = Aimock::serving(json!([
        {"match": {"userMessage": "What's weather in Lyon?\n\nAnswer in one word."},
         "response": {"content": "Rainy."}},
    ]));
    let project = project_with_everything(&aimock);
    let served = Served::start(&project, &[]);
    let turn = served.send(
        "POST",
        "/api/chat",
        Some(
            &json!({
                "prompt": {"name": "everything__args-prompt", "arguments": {"city": "Lyon"}},
                "text": "Answer in one word.",
            })
            .to_string(),
        ),
    );
    assert_eq!(turn.status, 200, "{}", turn.body);
    assert!(turn.body.contains(r#""delta":"Rainy.""#), "{}", turn.body);
    let unknown = served.send(
        "POST",
        "/api/chat",
        Some(&json!({"prompt": {"name": "everything__no-such-prompt"}}).to_string()),
    );
    assert_eq!(unknown.status, 404, "{}", unknown.body);
    assert_eq!(
        unknown.json()["error"]["message"],
        "no MCP server behind toolmux offers the prompt `everything__no-such-prompt`"
    );
    served.stop();
}
