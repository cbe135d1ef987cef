//! The REST API served by this crate alone, over real loopback HTTP, on a hub with the
//! workspace pack: a tool is shown as core's one tool view (`Catalog::tool_view`), the shape the
//! command line's `tools list --json` prints too, so the two cannot drift.

use std::sync::Arc;

use serde_json::{Value, json};
use toolmux_testkit::http::request;
use toolmux_workspace::{WorkspaceLimits, WorkspacePack};

mod support;

/// The API with the workspace pack over `root`.
fn serve(runtime: &tokio::runtime::Runtime, root: &std::path::Path) -> (String, toolmux_core::Hub) {
    let pack = WorkspacePack::new(root, WorkspaceLimits::default()).expect("workspace");
    support::serve(runtime, root, vec![Arc::new(pack)], support::options(&[]))
}

#[test]
fn a_tool_is_shown_as_cores_one_tool_view_in_the_listing_and_alone() {
    let dir = tempfile::tempdir().expect("temp dir");
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let (address, hub) = serve(&runtime, dir.path());
    let catalog = hub.catalog();
    let entry = catalog
        .get("file_read")
        .expect("file_read is in the catalog");
    let view = serde_json::to_value(catalog.tool_view(entry, true)).expect("serialises");
    assert_eq!(view["sourceKind"], json!("builtin"));
    assert_eq!(view["discoveryStatus"], json!("success"));
    assert_eq!(view["enabled"], json!(true));
    assert_eq!(view["name"], json!("file_read"));

    let shown = request(&address, "GET", "/api/tools/file_read", &[], None);
    assert_eq!(shown.status, 200, "{}", shown.body);
    assert_eq!(shown.json(), view);

    let listed = request(&address, "GET", "/api/tools", &[], None);
    assert_eq!(listed.status, 200, "{}", listed.body);
    let listed = listed.json();
    let in_listing: Vec<&Value> = listed["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter(|t| t["name"] == "file_read")
        .collect();
    assert_eq!(in_listing, vec![&view]);
}

/// Without upstream servers handed to the API, their routes say so with the one error body.
#[test]
fn the_upstream_routes_answer_503_when_the_server_has_none() {
    let dir = tempfile::tempdir().expect("temp dir");
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let (address, _hub) = serve(&runtime, dir.path());
    for path in ["/api/mcp-servers", "/api/prompts", "/api/resources"] {
        let response = request(&address, "GET", path, &[], None);
        assert_eq!(
            response.error(503, "unavailable")["message"],
            json!("this server has no MCP servers to show"),
            "{path}"
        );
    }
}
