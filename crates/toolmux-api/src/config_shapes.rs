//! The request bodies that are configuration entries — an upstream server (`mcpServers`) and a
//! script tool (`tools`) — described in the OpenAPI document by the configuration's own JSON
//! Schema ([`toolmux_config::schema`], derived with schemars from the structs that read the
//! file), not by copies of those structs: a field added to the configuration appears in the
//! document by itself, and the two cannot drift.
//!
//! Each becomes a component under the name clients already generate code from
//! (`McpServerDefinition`, `ScriptToolDefinition`): the configuration's definition plus the
//! `name` that `POST` takes in the body. The definitions they refer to follow as `Config…`
//! components, with their references rewritten from `#/$defs/X` to the document's.

use std::borrow::Cow;
use std::collections::BTreeSet;

use serde_json::{Map, Value, json};
use utoipa::openapi::RefOr;
use utoipa::openapi::extensions::Extensions;
use utoipa::openapi::schema::{Object, Schema, SchemaType};

/// Where the configuration's definitions are in its schema.
const DEFS: &str = "#/$defs/";
/// Where the document's components are.
const COMPONENTS: &str = "#/components/schemas/";
/// The prefix of the configuration's definitions among the document's components, so that they
/// cannot clash with the API's own.
const PREFIX: &str = "Config";

/// A request body that is one configuration entry: `$type`, documented under `$component`, is
/// the configuration's definition `$def` plus a `name` property described by `$name`.
macro_rules! config_entry {
    ($(#[$doc:meta])* $type:ident, $component:literal, $def:literal, $name:literal) => {
        $(#[$doc])*
        pub struct $type;

        impl utoipa::PartialSchema for $type {
            fn schema() -> RefOr<Schema> {
                entry($def, $name)
            }
        }

        impl utoipa::ToSchema for $type {
            fn name() -> Cow<'static, str> {
                Cow::Borrowed($component)
            }

            fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
                schemas.extend(referenced($def));
            }
        }
    };
}

config_entry!(
    /// The body of `POST /api/mcp-servers` and `PUT /api/mcp-servers/{name}`: one `mcpServers`
    /// entry (the configuration's `McpServer`).
    UpstreamDefinition,
    "McpServerDefinition",
    "McpServer",
    "The server's name (only in `POST /api/mcp-servers`); its tools are named `NAME__tool`."
);

config_entry!(
    /// The body of `POST /api/tools` and `PUT /api/tools/{name}`: one script tool of the
    /// `tools` section (the configuration's `ScriptTool`).
    ScriptToolDefinition,
    "ScriptToolDefinition",
    "ScriptTool",
    "The registry name (only in `POST /api/tools`)."
);

/// The configuration schema's definitions, their references pointing into the document.
fn definitions() -> Map<String, Value> {
    let mut schema = toolmux_config::schema();
    point_into_document(&mut schema);
    match schema {
        Value::Object(mut root) => match root.remove("$defs") {
            Some(Value::Object(defs)) => defs,
            _ => Map::new(),
        },
        _ => Map::new(),
    }
}

/// Rewrites every `$ref` to a definition of the configuration into one to its component.
fn point_into_document(value: &mut Value) {
    match value {
        Value::Object(fields) => {
            for (key, field) in fields.iter_mut() {
                if key == "$ref"
                    && let Value::String(target) = field
                    && let Some(name) = target.strip_prefix(DEFS)
                {
                    *target = format!("{COMPONENTS}{PREFIX}{name}");
                } else {
                    point_into_document(field);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(point_into_document),
        _ => {}
    }
}

/// The configuration's definition `def` with the `name` a `POST` body carries beside it.
fn entry(def: &str, name: &str) -> RefOr<Schema> {
    let mut schema = definitions().remove(def).unwrap_or_else(|| json!({}));
    if let Value::Object(fields) = &mut schema {
        let properties = fields
            .entry("properties")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(properties) = properties {
            properties.insert(
                "name".into(),
                json!({ "type": "string", "description": name }),
            );
        }
    }
    component(schema)
}

/// Every definition `def` refers to, directly or through another, as components.
fn referenced(def: &str) -> Vec<(String, RefOr<Schema>)> {
    let defs = definitions();
    let mut seen = BTreeSet::new();
    let mut pending = vec![def.to_string()];
    while let Some(next) = pending.pop() {
        if let Some(schema) = defs.get(&next) {
            collect_refs(schema, &mut |target| {
                if seen.insert(target.to_string()) {
                    pending.push(target.to_string());
                }
            });
        }
    }
    seen.into_iter()
        .filter_map(|name| {
            let schema = defs.get(&name)?.clone();
            Some((format!("{PREFIX}{name}"), component(schema)))
        })
        .collect()
}

/// Calls `found` with the definition name of every reference in `value`.
fn collect_refs(value: &Value, found: &mut dyn FnMut(&str)) {
    match value {
        Value::Object(fields) => {
            for (key, field) in fields {
                match (key.as_str(), field) {
                    ("$ref", Value::String(target)) => {
                        if let Some(name) = target
                            .strip_prefix(COMPONENTS)
                            .and_then(|t| t.strip_prefix(PREFIX))
                        {
                            found(name);
                        }
                    }
                    _ => collect_refs(field, found),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|item| collect_refs(item, found)),
        _ => {}
    }
}

/// A JSON Schema as an OpenAPI 3.1 component (whose schemas are JSON Schema 2020-12, the
/// dialect schemars writes), kept word for word. Read into utoipa's own types, a definition
/// loses what they do not model (`const`, and some definitions are refused outright), so the
/// schema rides in an untyped object's flattened keys, which utoipa writes out as they are.
fn component(schema: Value) -> RefOr<Schema> {
    let Value::Object(keywords) = schema else {
        return RefOr::T(Schema::Object(Object::with_type(SchemaType::AnyValue)));
    };
    let mut object = Object::with_type(SchemaType::AnyValue);
    object.extensions = Some(keywords.into_iter().collect::<Extensions>());
    RefOr::T(Schema::Object(object))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each definition is written into the document as the configuration's schema has it.
    #[test]
    fn every_definition_is_written_unchanged() {
        let definitions = definitions();
        assert!(definitions.contains_key("McpServer"), "{definitions:?}");
        for (name, schema) in definitions {
            let written = serde_json::to_value(component(schema.clone())).expect("serialises");
            assert_eq!(written, schema, "{name}");
        }
    }
}
