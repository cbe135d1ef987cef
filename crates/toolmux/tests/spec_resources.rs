//! Specs as resources: each spec of a project's `specs/` folder is `spec://NNN-name`, listed
//! with its title and read as its README's text, over MCP (`toolmux mcp` on stdio, `toolmux
//! serve`'s `/mcp`) and REST (`/api/resources`) alike, with `resources/list_changed` when a spec
//! appears on disk while a session is open. Driven by the real Python MCP client
//! (`tests/peers/mcp/client.py`) on real temporary projects.

mod support;

use std::collections::BTreeMap;

use serde_json::{Value, json};
use support::toolmux_project;
use toolmux_testkit::project::TestProject;
use toolmux_testkit::python_client::{PythonClient, run_mcp_client, run_mcp_steps};
use toolmux_testkit::served::{KEY, Served, config_with_key};

/// MCP's JSON-RPC code for "resource not found".
const RESOURCE_NOT_FOUND: i64 = -32002;

/// A spec's README with this title and status.
fn readme(title: &str, status: &str) -> String {
    format!(
        "---\nstatus: {status}\ncreated: 2025-03-04\npriority: high\n---\n\n# {title}\n\n## Overview\n\nWhat {title} is about.\n"
    )
}

/// A project with two specs, the first with a sub-spec file.
fn project_with_specs() -> TestProject {
    let project = toolmux_project();
    project.write(
        "specs/001-search-index/README.md",
        &readme("Search index", "in-progress"),
    );
    project.write(
        "specs/001-search-index/DESIGN.md",
        "# Design\n\nAn index.\n",
    );
    project.write("specs/002-export/README.md", &readme("Export", "planned"));
    project
}

/// The `spec://` resources of a `resources` step (or REST listing), by URI.
fn spec_resources(resources: &Value) -> BTreeMap<String, Value> {
    resources
        .as_array()
        .unwrap_or_else(|| panic!("not a list: {resources}"))
        .iter()
        .filter(|r| r["uri"].as_str().is_some_and(|u| u.starts_with("spec://")))
        .map(|r| (r["uri"].as_str().expect("a uri").to_string(), r.clone()))
        .collect()
}

fn uris(resources: &BTreeMap<String, Value>) -> Vec<&str> {
    resources.keys().map(String::as_str).collect()
}

#[test]
fn specs_are_listed_and_read_as_resources_over_stdio() {
    let project = project_with_specs();
    let lines = run_mcp_client(&project.stdio_plan(
        &["mcp"],
        json!([
            {"op": "resources"},
            {"op": "read", "uri": "spec://001-search-index"},
            {"op": "read", "uri": "spec://001-search-index/DESIGN.md"},
            {"op": "read", "uri": "spec://999-nowhere"},
        ]),
    ));
    let resources = &lines[0]["connected"]["capabilities"]["resources"];
    assert_eq!(resources["listChanged"], true, "{resources}");
    assert_eq!(resources["subscribe"], true, "{resources}");

    let listed = spec_resources(&lines[1]["resources"]);
    assert_eq!(
        uris(&listed),
        [
            "spec://001-search-index",
            "spec://001-search-index/DESIGN.md",
            "spec://002-export"
        ]
    );
    let spec = &listed["spec://001-search-index"];
    assert_eq!(spec["name"], "001-search-index", "{spec}");
    assert_eq!(spec["title"], "Search index", "{spec}");
    assert_eq!(spec["mimeType"], "text/markdown", "{spec}");
    let description = spec["description"].as_str().expect("a description");
    assert!(
        description.contains("in-progress") && description.contains("high"),
        "{description}"
    );
    assert_eq!(listed["spec://002-export"]["title"], "Export");

    let contents = lines[2]["contents"].as_array().expect("contents");
    assert_eq!(contents.len(), 1, "{contents:?}");
    assert_eq!(contents[0]["uri"], "spec://001-search-index");
    assert_eq!(contents[0]["mimeType"], "text/markdown");
    assert_eq!(contents[0]["text"], readme("Search index", "in-progress"));
    assert_eq!(lines[3]["contents"][0]["text"], "# Design\n\nAn index.\n");

    let error = &lines[4]["error"];
    assert_eq!(error["code"], RESOURCE_NOT_FOUND, "{error}");
    assert!(
        error["message"]
            .as_str()
            .is_some_and(|m| m.contains("spec://999-nowhere")),
        "{error}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spec_created_on_disk_during_a_session_is_announced_and_listed() {
    let project = project_with_specs();
    let mut client = PythonClient::start(project.stdio_plan(
        &["mcp"],
        json!([
            {"op": "resources"},
            {"op": "subscribe", "uri": "spec://002-export"},
            {"op": "signal", "text": "create"},
            {"op": "wait_resources_changed", "timeout": 10},
            {"op": "resources"},
            {"op": "signal", "text": "edit"},
            {"op": "wait_updated", "uri": "spec://002-export", "timeout": 10},
            {"op": "read", "uri": "spec://002-export"},
        ]),
    ));
    client.next().await; // connected
    let before = spec_resources(&client.next().await["resources"]);
    assert!(!before.contains_key("spec://003-import"), "{before:?}");
    assert_eq!(client.next().await, json!({"ok": true}));

    assert_eq!(client.next().await, json!({"signal": "create"}));
    project.write("specs/003-import/README.md", &readme("Import", "draft"));
    assert_eq!(client.next().await, json!({"resources_changed": true}));
    let after = spec_resources(&client.next().await["resources"]);
    assert_eq!(after["spec://003-import"]["title"], "Import", "{after:?}");

    // Editing a subscribed spec's file tells the subscriber, and a read gives the new text.
    assert_eq!(client.next().await, json!({"signal": "edit"}));
    let edited = readme("Export", "planned").replace("What Export is about.", "Now with CSV.");
    project.write("specs/002-export/README.md", &edited);
    assert_eq!(client.next().await, json!({"updated": true}));
    assert_eq!(client.next().await["contents"][0]["text"], edited);
    client.finish().await;
}

#[test]
fn pass_through_and_filters_that_hide_the_spec_tools_hide_the_spec_resources() {
    let project = project_with_specs();
    let steps = json!([
        {"op": "resources"},
        {"op": "read", "uri": "spec://002-export"},
    ]);
    // Standing in for one other source, a session serves nothing of the spec pack.
    for args in [
        &["--pass-through", "workspace"][..],
        &["--exclude", "spec_*"][..],
    ] {
        let outcome = run_mcp_steps(&project.stdio_plan(&[&["mcp"], args].concat(), steps.clone()));
        let listed = spec_resources(&outcome[0]["resources"]);
        assert!(listed.is_empty(), "{args:?} lists {listed:?}");
        assert_eq!(
            outcome[1]["error"]["code"], RESOURCE_NOT_FOUND,
            "{args:?}: {outcome:?}"
        );
    }
    // A filter that keeps the spec tools keeps their resources.
    let outcome = run_mcp_steps(&project.stdio_plan(&["mcp", "--tools", "spec_*"], steps));
    assert_eq!(
        uris(&spec_resources(&outcome[0]["resources"])),
        [
            "spec://001-search-index",
            "spec://001-search-index/DESIGN.md",
            "spec://002-export"
        ]
    );
    assert_eq!(
        outcome[1]["contents"][0]["text"],
        readme("Export", "planned")
    );
}

#[test]
fn rest_lists_and_reads_the_spec_resources_as_mcp_does() {
    let project = project_with_specs();
    project.config(&config_with_key(""));
    let served = Served::start(&project, &[]);

    let listed = served.get_with_key("/api/resources");
    assert_eq!(listed.status, 200, "{}", listed.body);
    let rest = spec_resources(&listed.json()["resources"]);
    let spec = &rest["spec://002-export"];
    assert_eq!(spec["title"], "Export", "{spec}");
    assert_eq!(spec["mimeType"], "text/markdown", "{spec}");
    assert!(spec.get("server").is_none(), "a spec has no server: {spec}");

    let mcp = run_mcp_steps(&json!({
        "transport": "http",
        "url": served.mcp_url(),
        "headers": {"Authorization": format!("Bearer {KEY}")},
        "steps": [{"op": "resources"}, {"op": "read", "uri": "spec://002-export"}],
    }));
    assert_eq!(
        rest,
        spec_resources(&mcp[0]["resources"]),
        "REST and MCP differ"
    );

    let read = served.get_with_key("/api/resources/read?uri=spec://002-export");
    assert_eq!(read.status, 200, "{}", read.body);
    let read = read.json();
    assert_eq!(read["contents"][0]["text"], readme("Export", "planned"));
    assert_eq!(read["contents"], mcp[1]["contents"]);

    let missing = served
        .get_with_key("/api/resources/read?uri=spec://999-nowhere")
        .error(404, "not_found");
    assert!(
        missing["message"]
            .as_str()
            .is_some_and(|m| m.contains("spec://999-nowhere")),
        "{missing}"
    );
    served.stop();
}
