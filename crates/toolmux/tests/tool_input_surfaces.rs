//! One definition per shape: a built-in tool's input struct is the only place its fields are
//! written, and every surface is derived from it. For the spec filter (`spec_list`'s input, and
//! with the group `spec_board`'s), every field of the struct is in the MCP `tools/list`
//! inputSchema, in the REST OpenAPI document (as the route's query parameter and in the tool's
//! input component) and among `toolmux specs` flags, against the real served binary and the
//! real Python MCP client. The fields are read from the struct itself, so a field added to it
//! is checked on all three surfaces with no edit here.

mod support;

use serde_json::{Map, Value, json};
use support::toolmux_project;
use toolmux_testkit::python_client::run_mcp_steps;
use toolmux_testkit::served::{KEY, Served, config_with_key};

/// One tool input and the surfaces derived from it.
struct Surfaces {
    tool: &'static str,
    schema: Value,
    route: &'static str,
    command: [&'static str; 3],
}

/// A property name as its flag: `tagMatch` is `--tag-match`.
fn flag(property: &str) -> String {
    let mut flag = String::from("--");
    for c in property.chars() {
        if c.is_ascii_uppercase() {
            flag.push('-');
        }
        flag.push(c.to_ascii_lowercase());
    }
    flag
}

/// `toolmux serve` of a project with one spec and `extra` configuration (the project must
/// outlive the server).
fn served_with_a_spec(extra: &str) -> (toolmux_testkit::project::TestProject, Served) {
    let project = toolmux_project();
    project.config(&config_with_key(extra));
    project.write(
        "specs/001-first/README.md",
        "---\nstatus: planned\ncreated: 2025-01-10\n---\n\n# First\n",
    );
    let served = Served::start(&project, &[]);
    (project, served)
}

fn properties(schema: &Value) -> &Map<String, Value> {
    schema["properties"]
        .as_object()
        .unwrap_or_else(|| panic!("no properties: {schema}"))
}

#[test]
fn every_field_of_a_tool_input_struct_is_on_every_surface() {
    let (project, served) = served_with_a_spec("");

    let listed = run_mcp_steps(&json!({
        "transport": "http",
        "url": served.mcp_url(),
        "headers": {"Authorization": format!("Bearer {KEY}")},
        "steps": [{"op": "list"}],
    }));
    let mcp_tools = listed[0]["tools"].as_array().expect("MCP tools");
    let document = served.get_with_key("/api/openapi.json");
    assert_eq!(document.status, 200, "{}", document.body);
    let document = document.json();

    for surfaces in [
        Surfaces {
            tool: "spec_list",
            schema: toolmux_core::input_schema::<toolmux_specs::SpecFilter>(),
            route: "/api/specs",
            command: ["specs", "list", "--help"],
        },
        Surfaces {
            tool: "spec_board",
            schema: toolmux_core::input_schema::<toolmux_specs::SpecBoard>(),
            route: "/api/specs/board",
            command: ["specs", "board", "--help"],
        },
    ] {
        let tool = surfaces.tool;
        let fields = properties(&surfaces.schema);
        assert!(!fields.is_empty(), "{tool}: the struct has no fields");

        let mcp = mcp_tools
            .iter()
            .find(|t| t["name"] == tool)
            .unwrap_or_else(|| panic!("{tool} is not listed over MCP"));
        let component = &document["components"]["schemas"][toolmux_api::tool_input_component(tool)];
        let parameters: Vec<&Value> = document["paths"][surfaces.route]["get"]["parameters"]
            .as_array()
            .unwrap_or_else(|| panic!("{} has no parameters", surfaces.route))
            .iter()
            .collect();
        let help = project.run(&surfaces.command).ok();

        for (name, field) in fields {
            // MCP and the OpenAPI component carry the field as the struct declares it.
            assert_eq!(
                &mcp["inputSchema"]["properties"][name], field,
                "{tool}.{name} over MCP"
            );
            assert_eq!(
                &component["properties"][name], field,
                "{tool}.{name} in the OpenAPI component"
            );
            // The route's query parameter, with the field's description.
            let parameter = parameters
                .iter()
                .find(|p| p["name"] == name.as_str())
                .unwrap_or_else(|| panic!("{tool}.{name}: no `{name}` parameter"));
            assert_eq!(parameter["in"], "query", "{tool}.{name}");
            assert_eq!(
                parameter["description"], field["description"],
                "{tool}.{name}"
            );
            // The command's flag (or, for a field clap was not told is a flag, its positional
            // argument: `[TITLE]`).
            let flag = flag(name);
            let positional = flag
                .trim_start_matches('-')
                .replace('-', "_")
                .to_uppercase();
            assert!(
                help.split(|c: char| c.is_whitespace() || c == ',')
                    .any(|word| word == flag
                        || word.trim_matches(['[', ']', '<', '>']) == positional),
                "{tool}.{name}: no {flag} in `toolmux {}`:\n{help}",
                surfaces.command.join(" ")
            );
        }
        // Nothing on a surface that the struct does not have.
        assert_eq!(
            properties(&mcp["inputSchema"]).len(),
            fields.len(),
            "{tool} over MCP"
        );
        assert_eq!(parameters.len(), fields.len(), "{}", surfaces.route);
    }
}

/// Every built-in tool's input is a component of the OpenAPI document, the very schema the tool
/// lists (both derived from its input struct).
#[test]
fn every_builtin_tool_input_is_an_openapi_component() {
    let (_project, served) = served_with_a_spec("");
    let tools = served.get_with_key("/api/tools").json();
    let document = served.get_with_key("/api/openapi.json").json();
    let components = &document["components"]["schemas"];
    let builtin: Vec<&Value> = tools["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter(|t| t["sourceKind"] == "builtin")
        .collect();
    assert!(builtin.iter().any(|t| t["name"] == "spec_list"), "{tools}");
    for tool in builtin {
        let name = tool["name"].as_str().expect("name");
        assert_eq!(
            components[toolmux_api::tool_input_component(name)],
            tool["inputSchema"],
            "{name}"
        );
    }
}

/// A REST body that stands for a tool's arguments is that tool's input schema in the document
/// (`POST /api/specs` is `spec_create.input`; `PATCH /api/specs/{spec}` is `spec_update.input`
/// without the `spec` its path names), and the tool's own rules answer a body: a field the
/// struct does not have is the pipeline's 422, and a body naming the spec the path names is
/// a malformed request (400), never silently overridden.
#[test]
fn a_spec_routes_body_is_its_tools_input() {
    let (_project, served) =
        served_with_a_spec(r#""policies": {"tools": {"spec_update": "allow"}}"#);
    let tools = served.get_with_key("/api/tools").json();
    let schema_of = |name: &str| {
        tools["tools"]
            .as_array()
            .expect("tools")
            .iter()
            .find(|t| t["name"] == name)
            .map(|t| t["inputSchema"].clone())
            .unwrap_or_else(|| panic!("no {name} in {tools}"))
    };
    let document = served.get_with_key("/api/openapi.json").json();
    let body_ref = |path: &str, method: &str| {
        document["paths"][path][method]["requestBody"]["content"]["application/json"]["schema"]
            ["$ref"]
            .as_str()
            .map(String::from)
            .unwrap_or_else(|| panic!("{method} {path} has no body reference"))
    };
    assert_eq!(
        body_ref("/api/specs", "post"),
        "#/components/schemas/spec_create.input"
    );
    assert_eq!(
        body_ref("/api/specs/{spec}", "patch"),
        "#/components/schemas/spec_update.body"
    );
    assert_eq!(
        body_ref("/api/tasks", "post"),
        "#/components/schemas/task_create.input"
    );
    assert_eq!(
        body_ref("/api/tasks/{id}/notes", "post"),
        "#/components/schemas/task_add_note.body"
    );
    let mut changes = schema_of("spec_update");
    changes["properties"]
        .as_object_mut()
        .expect("properties")
        .remove("spec");
    changes["required"] = json!([]);
    let mut documented = document["components"]["schemas"]["spec_update.body"].clone();
    if documented.get("required").is_none() {
        documented["required"] = json!([]);
    }
    assert_eq!(documented, changes);

    let unknown = served.send(
        "PATCH",
        "/api/specs/1",
        Some(r#"{"status": "in-progress", "colour": "teal"}"#),
    );
    let refused = unknown.error(422, "invalid_arguments");
    assert!(
        refused.to_string().contains("colour"),
        "the violation names the extra field: {refused}"
    );
    served
        .send("PATCH", "/api/specs/1", Some(r#"{"spec": "2"}"#))
        .exact_error(
            400,
            "malformed",
            "`spec` is named by the path (/api/specs/{spec}), not the body",
        );
    // Adding a link is `spec_relationships` with `action` given by the route: the body is the
    // tool's input less `spec` and `action`, and naming `action` is refused, not obeyed.
    let link = &document["components"]["schemas"]["spec_relationships.body"]["properties"];
    let mut link_fields: Vec<&str> = link
        .as_object()
        .expect("the link body is documented")
        .keys()
        .map(String::as_str)
        .collect();
    link_fields.sort_unstable();
    assert_eq!(link_fields, ["target", "type"], "{link}");
    // Both are optional to the tool (`view` needs neither) but this route needs them: a request
    // without one is refused at once, never put before a person to be refused afterwards.
    assert_eq!(
        document["components"]["schemas"]["spec_relationships.body"]["required"],
        json!(["type", "target"])
    );
    served
        .post("/api/specs/1/relationships", r#"{"target": "2"}"#)
        .exact_error(
            422,
            "invalid_arguments",
            "`type` is required by POST /api/specs/{spec}/relationships",
        );
    served
        .post(
            "/api/specs/1/relationships",
            r#"{"action": "remove", "type": "depends_on", "target": "2"}"#,
        )
        .exact_error(
            400,
            "malformed",
            "`action` is given by the route (/api/specs/{spec}/relationships), not the body",
        );
    let changed = served.send(
        "PATCH",
        "/api/specs/1",
        Some(r#"{"status": "in-progress"}"#),
    );
    assert_eq!(changed.status, 200, "{}", changed.body);
    let viewed = served.get_with_key("/api/specs/1").json();
    assert_eq!(viewed["status"], "in-progress", "{viewed}");
}

/// A route whose query string is a tool's arguments (`GET /api/files/grep`, `GET /api/tasks`)
/// documents one query parameter per property of the tool's input schema, required as the
/// schema says, so a field added to the tool is a parameter with no edit to the route.
#[test]
fn a_routes_query_is_its_tools_input() {
    let project = toolmux_project();
    project.config(&config_with_key(""));
    let served = Served::start(&project, &[]);
    let tools = served.get_with_key("/api/tools").json();
    let document = served.get_with_key("/api/openapi.json").json();
    for (path, tool) in [
        ("/api/files", "directory_list"),
        ("/api/files/content", "file_read"),
        ("/api/files/search", "file_search"),
        ("/api/files/grep", "grep"),
        ("/api/tasks", "task_list"),
    ] {
        let schema = &tools["tools"]
            .as_array()
            .expect("tools")
            .iter()
            .find(|t| t["name"] == tool)
            .unwrap_or_else(|| panic!("no {tool}"))["inputSchema"];
        let required: Vec<&Value> = schema["required"]
            .as_array()
            .map(|r| r.iter().collect())
            .unwrap_or_default();
        let mut expected: Vec<(String, bool)> = properties(schema)
            .keys()
            .map(|name| (name.clone(), required.contains(&&json!(name))))
            .collect();
        let mut documented: Vec<(String, bool)> = document["paths"][path]["get"]["parameters"]
            .as_array()
            .unwrap_or_else(|| panic!("{path} has no parameters"))
            .iter()
            .map(|p| {
                assert_eq!(p["in"], "query", "{p}");
                (
                    p["name"].as_str().expect("name").to_string(),
                    p["required"] == json!(true),
                )
            })
            .collect();
        expected.sort();
        documented.sort();
        assert_eq!(documented, expected, "{path}");
    }
}
