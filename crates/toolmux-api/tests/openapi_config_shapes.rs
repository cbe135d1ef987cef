//! The request bodies that are configuration entries are described by the configuration's own
//! schema: every field of an `mcpServers` entry and of a script tool appears in the OpenAPI
//! component clients generate code from, so a field added to the configuration cannot be
//! missing from the REST API's document (as `inheritEnv` once was).

use serde_json::Value;

/// The property names of `schema`'s object.
fn properties(schema: &Value) -> Vec<String> {
    let mut names: Vec<String> = schema["properties"]
        .as_object()
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default();
    names.sort();
    names
}

fn component(name: &str) -> Value {
    let document = serde_json::to_value(toolmux_api::openapi()).expect("the document serialises");
    document["components"]["schemas"][name].clone()
}

fn config_definition(name: &str) -> Value {
    toolmux_config::schema()["$defs"][name].clone()
}

/// Every property of the configuration's definition `def` is in the component, with `name`
/// beside them; `inheritEnv` is among them (the field the hand-written copies lacked).
fn assert_every_field_is_in(def: &str, component_name: &str) {
    let config = properties(&config_definition(def));
    assert!(config.contains(&"inheritEnv".to_string()), "{config:?}");
    let mut expected = config;
    expected.push("name".into());
    expected.sort();
    assert_eq!(properties(&component(component_name)), expected);
}

#[test]
fn every_field_of_a_server_entry_is_in_the_mcp_server_definition() {
    assert_every_field_is_in("McpServer", "McpServerDefinition");
    // All of `ServerEntry`: transport, process, HTTP, filters, policies, timeouts, sessions.
    assert!(properties(&config_definition("McpServer")).len() >= 25);
}

#[test]
fn every_field_of_a_script_tool_is_in_the_script_tool_definition() {
    assert_every_field_is_in("ScriptTool", "ScriptToolDefinition");
}

/// The definitions an entry refers to are in the document, so that every `$ref` resolves.
#[test]
fn every_reference_of_the_config_components_resolves() {
    let document = serde_json::to_value(toolmux_api::openapi()).expect("the document serialises");
    let schemas = document["components"]["schemas"]
        .as_object()
        .expect("components");
    let mut refs = Vec::new();
    collect(&document, &mut refs);
    let missing: Vec<&String> = refs
        .iter()
        .filter(|r| {
            r.strip_prefix("#/components/schemas/")
                .is_none_or(|name| !schemas.contains_key(name))
        })
        .collect();
    assert!(missing.is_empty(), "unresolved: {missing:?}");
    assert!(
        refs.iter()
            .any(|r| r.starts_with("#/components/schemas/Config")),
        "{refs:?}"
    );
}

fn collect(value: &Value, refs: &mut Vec<String>) {
    match value {
        Value::Object(fields) => {
            for (key, field) in fields {
                match (key.as_str(), field) {
                    ("$ref", Value::String(target)) => refs.push(target.clone()),
                    _ => collect(field, refs),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|item| collect(item, refs)),
        _ => {}
    }
}
