//! The tasks pack through every channel of the real binary: tasks made over MCP (the Python
//! client), REST and the CLI land in one list, `.toolmux/state/tasks.json`, and each channel
//! reads back the same state.

mod support;

use serde_json::{Value, json};
use support::toolmux_project;
use toolmux_testkit::python_client::run_mcp_steps;
use toolmux_testkit::served::{KEY, Served, config_with_key};

fn titles(list: &Value) -> Vec<String> {
    list["tasks"]
        .as_array()
        .unwrap_or_else(|| panic!("no tasks in {list}"))
        .iter()
        .map(|t| t["title"].as_str().expect("title").to_string())
        .collect()
}

#[test]
fn mcp_rest_and_cli_share_one_task_list() {
    let project = toolmux_project();
    project.config(&config_with_key(""));

    // CLI first, with the server not yet running: the file is the state.
    let added = project
        .run_keyed(&["tasks", "add", "plan the release", "--json"])
        .json();
    let plan = added["task"]["id"].as_u64().expect("id");
    assert_eq!(added["task"]["status"], "pending");

    let served = Served::start(&project, &[]);
    let outcomes = run_mcp_steps(&json!({
        "transport": "http",
        "url": served.mcp_url(),
        "headers": {"Authorization": format!("Bearer {KEY}")},
        "steps": [
            {"op": "call", "name": "task_create",
             "arguments": {"title": "write the notes", "parent": plan}},
            {"op": "call", "name": "task_update",
             "arguments": {"id": plan, "status": "in_progress"}},
            {"op": "call", "name": "task_view", "arguments": {"id": 999}},
            {"op": "call", "name": "task_create",
             "arguments": {"title": "cycle", "parent": 12345}},
        ],
    }));
    let created = &outcomes[0]["result"]["structuredContent"]["task"];
    assert_eq!(created["parent"], plan, "{}", outcomes[0]);
    let note_id = created["id"].as_u64().expect("id");
    assert_eq!(outcomes[2]["result"]["isError"], true, "{}", outcomes[2]);
    assert_eq!(outcomes[3]["result"]["isError"], true, "{}", outcomes[3]);

    // REST: create at the top, first in order; add a note; complete the MCP task.
    let made = served.post("/api/tasks", r#"{"title": "tag it", "position": 0}"#);
    assert_eq!(made.status, 201, "{}", made.body);
    let tag = made.json()["task"]["id"].as_u64().expect("id");
    assert_eq!(
        made.header("location").map(str::to_string),
        Some(format!("/api/tasks/{tag}"))
    );
    let noted = served.post(
        &format!("/api/tasks/{note_id}/notes"),
        r#"{"text": "draft in docs/"}"#,
    );
    assert_eq!(noted.status, 200, "{}", noted.body);
    let missing = served.get("/api/tasks/999");
    assert_eq!(missing.status, 404, "{}", missing.body);
    let done = served.send(
        "PATCH",
        &format!("/api/tasks/{note_id}"),
        Some(r#"{"status": "completed"}"#),
    );
    assert_eq!(done.status, 200, "{}", done.body);
    let cycle = served.send(
        "PATCH",
        &format!("/api/tasks/{plan}"),
        Some(&format!(r#"{{"parent": {note_id}}}"#)),
    );
    assert_eq!(cycle.status, 422, "{}", cycle.body);

    // Every channel reads the same list, in plan order.
    let expected = ["tag it", "plan the release", "write the notes"];
    let rest = served.get("/api/tasks").json();
    assert_eq!(titles(&rest), expected);
    assert_eq!(
        rest["counts"],
        json!({"pending": 1, "in_progress": 1, "completed": 1})
    );
    let mcp = run_mcp_steps(&json!({
        "transport": "http",
        "url": served.mcp_url(),
        "headers": {"Authorization": format!("Bearer {KEY}")},
        "steps": [{"op": "call", "name": "task_list", "arguments": {}}],
    }));
    let mcp = &mcp[0]["result"]["structuredContent"];
    assert_eq!(mcp, &rest);
    let cli = project.run_keyed(&["tasks", "list", "--json"]).json();
    assert_eq!(cli, rest);
    // A page on the command line is the REST API's page, and the text says where the rest is.
    let page = project
        .run_keyed(&["tasks", "list", "--limit", "1", "--offset", "1", "--json"])
        .json();
    assert_eq!(page, served.get("/api/tasks?limit=1&offset=1").json());
    assert_eq!(page["tasks"].as_array().map(Vec::len), Some(1), "{page}");
    let first = project.run_keyed(&["tasks", "list", "--limit", "1"]).ok();
    assert_eq!(first.lines().count(), 2, "{first}");
    assert!(
        first
            .trim_end()
            .ends_with("… 2 more: toolmux tasks list --offset 1"),
        "{first}"
    );
    let shown = project
        .run_keyed(&["tasks", "show", &note_id.to_string()])
        .ok();
    assert!(
        shown.contains("[x]") && shown.contains("draft in docs/"),
        "{shown}"
    );

    // The CLI completes a task the server sees at once.
    project.run_keyed(&["tasks", "done", &tag.to_string()]).ok();
    let view = served.get(&format!("/api/tasks/{tag}")).json();
    assert_eq!(view["task"]["status"], "completed");
    let text = project.run_keyed(&["tasks", "list"]).ok();
    assert!(text.contains(&format!("[x] {tag}. tag it")), "{text}");
    assert!(
        text.contains(&format!("  [x] {note_id}. write the notes")),
        "{text}"
    );

    let deleted = served.send("DELETE", &format!("/api/tasks/{plan}"), None);
    assert_eq!(deleted.json()["deleted"], json!([plan, note_id]));
    assert_eq!(titles(&served.get("/api/tasks").json()), ["tag it"]);
    served.stop();
}
