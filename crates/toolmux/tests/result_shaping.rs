//! Result shaping on every channel (issue 33): a real upstream server (the Python `mcp` SDK's)
//! answers a 5 MB JSON document; MCP clients (the Python SDK's client) and REST callers get it
//! cut to its cap with a note, and read the whole back through `resources/read`, `result_read`
//! pages and `GET /api/results/{id}`; a configured projection shapes it instead.

mod support;

use serde_json::{Value, json};
use support::toolmux_project;
use toolmux_testkit::peers::mcp_python;
use toolmux_testkit::project::TestProject;
use toolmux_testkit::python_client::run_mcp_client;
use toolmux_testkit::served::{Served, config_with_key};

/// Items in the document: about 5 MB of JSON as the server writes it.
const ITEMS: usize = 95_000;

/// A server whose tools answer the whole document as JSON text.
const BULK_SERVER: &str = r#"
import json
from mcp.server.mcpserver import MCPServer

server = MCPServer("bulk")
ITEMS = 95000

def document():
    items = [{"id": i, "name": f"item {i}", "tags": ["a", "b"]} for i in range(ITEMS)]
    return json.dumps({"items": items, "total": ITEMS})

@server.tool()
def export() -> str:
    """Every item, as JSON text."""
    return document()

@server.tool()
def export_projected() -> str:
    """Every item again, as JSON text."""
    return document()

if __name__ == "__main__":
    server.run()
"#;

/// A project with the server, `bulk__export` capped at 5,000 tokens and `bulk__export_projected`
/// projected, its tools discovered; with an API key for `serve` when `served`.
fn project(served: bool) -> TestProject {
    let project = toolmux_project();
    let script = project.write("bulk.py", BULK_SERVER);
    let servers = json!({"bulk": {"command": mcp_python(), "args": [script]}});
    let settings = json!({
        "bulk__export": {"output": {"maxTokens": 5000}},
        "bulk__export_projected": {"output": {"projection": ".items[:3] | map({id})"}},
    });
    let sections = format!(r#""mcpServers": {servers}, "toolSettings": {settings}"#);
    project.config(&format!("{{{sections}}}"));
    project.run(&["mcp", "refresh"]).ok();
    if served {
        project.config(&config_with_key(&sections));
    }
    project
}

/// The id in a cut result's resource link, checking the note that comes before it.
fn kept_id(content: &[Value]) -> String {
    let text = content[0]["text"].as_str().expect("a text block");
    assert!(
        text.contains("\n[toolmux: result cut to its first 5000 tokens: bytes 0–"),
        "{}",
        &text[text.len().saturating_sub(600)..]
    );
    let link = &content[1];
    assert_eq!(link["type"], "resource_link", "{link}");
    assert_eq!(link["mimeType"], "application/json", "{link}");
    let uri = link["uri"].as_str().expect("a URI");
    assert!(text.contains(uri), "the note names {uri}");
    uri.strip_prefix("toolmux://results/")
        .expect("a results URI")
        .to_string()
}

/// The document the server sent, checked whole.
fn assert_whole(text: &str) {
    let document: Value = serde_json::from_str(text).expect("the whole document");
    let items = document["items"].as_array().expect("items");
    assert_eq!(items.len(), ITEMS);
    assert_eq!(document["total"], ITEMS);
    assert_eq!(
        items[0],
        json!({"id": 0, "name": "item 0", "tags": ["a", "b"]})
    );
    assert_eq!(
        items[ITEMS - 1],
        json!({"id": ITEMS - 1, "name": format!("item {}", ITEMS - 1), "tags": ["a", "b"]})
    );
}

#[test]
fn an_mcp_client_gets_a_5mb_result_cut_and_reads_it_back_whole() {
    let project = project(false);
    let first = run_mcp_client(&project.stdio_plan(
        &["mcp"],
        json!([
            {"op": "call", "name": "bulk__export"},
            {"op": "call", "name": "bulk__export_projected"},
        ]),
    ));
    let cut = &first[1]["result"];
    assert_eq!(cut["isError"], false, "{cut}");
    // The server's SDK declares an output schema (`{"result": string}`): the structured
    // content is a contract the client checks, so it stays whole; the text is what is cut.
    assert_whole(
        cut["structuredContent"]["result"]
            .as_str()
            .expect("the whole structured content"),
    );
    let id = kept_id(cut["content"].as_array().expect("content"));
    // The projection: the first three ids, nothing else.
    let projected = &first[2]["result"]["content"];
    assert_eq!(projected[0]["text"], r#"[{"id":0},{"id":1},{"id":2}]"#);

    // Another session reads the whole: as a resource, then page by page. A page of 2,000 of
    // these short lines is under `result_read`'s 64 KiB, so pages start every 2,000 lines.
    let uri = format!("toolmux://results/{id}");
    let read = run_mcp_client(&project.stdio_plan(&["mcp"], json!([{"op": "read", "uri": uri}])));
    let whole = read[1]["contents"][0]["text"].as_str().expect("the text");
    assert_eq!(read[1]["contents"][0]["mimeType"], "application/json");
    assert_whole(whole);
    let lines = whole.lines().count();
    // Where each page starts: a page is 5,000 lines or 64 KiB, whichever is less (worked out
    // with `result_read`'s own window, since a client's plan cannot follow `nextOffset`).
    let mut offsets = vec![1];
    while let Some(next) = toolmux_shaping::window(&id, whole, *offsets.last().unwrap_or(&1), 5000)
        .structured_content
        .and_then(|meta| meta.get("nextOffset").and_then(Value::as_u64))
    {
        offsets.push(next as usize);
    }
    let mut joined = String::new();
    // A few sessions, each well within a test child's time limit.
    for chunk in offsets.chunks(40) {
        let pages: Vec<Value> = chunk
            .iter()
            .map(|offset| {
                json!({"op": "call", "name": "result_read",
                    "arguments": {"id": id, "offset": offset, "limit": 5000}})
            })
            .collect();
        let paged = run_mcp_client(&project.stdio_plan(&["mcp"], Value::Array(pages)));
        for (line, offset) in paged[1..].iter().zip(chunk) {
            let result = &line["result"];
            assert_eq!(result["isError"], false, "page at {offset}: {result}");
            assert_eq!(result["structuredContent"]["totalLines"], lines);
            assert_eq!(result["structuredContent"]["offset"], *offset);
            joined.push_str(result["content"][0]["text"].as_str().expect("a page"));
        }
    }
    assert_eq!(joined, format!("{whole}\n"));
}

#[test]
fn a_rest_caller_gets_the_same_cut_and_reads_the_whole_at_api_results() {
    let project = project(true);
    let served = Served::start(&project, &[]);
    let called = served.post("/api/tools/bulk__export/call", "{}");
    assert_eq!(called.status, 200, "{:.500}", called.body);
    let body = called.json();
    let id = kept_id(body["content"].as_array().expect("content"));
    let whole = served.get_with_key(&format!("/api/results/{id}"));
    assert_eq!(whole.status, 200, "{:.500}", whole.body);
    assert_eq!(whole.header("content-type"), Some("application/json"));
    assert_whole(&whole.body);
    // An id that is not one, and one that names a path, are not found.
    for (path, id) in [
        ("/api/results/..%2F..%2Fconfig", "../../config"),
        (
            "/api/results/0123456789abcdef0123456789abcdef",
            "0123456789abcdef0123456789abcdef",
        ),
    ] {
        let missing = served.get_with_key(path);
        assert_eq!(missing.status, 404, "{path}: {}", missing.body);
        let message = missing.json()["error"]["message"].clone();
        let expected = if id.len() == 32 {
            format!("no kept result `{id}`: it expired or never existed")
        } else {
            format!("`{id}` is not a result id (32 lowercase hex digits)")
        };
        assert_eq!(message, expected, "{path}");
    }
}
