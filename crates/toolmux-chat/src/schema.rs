//! Tool schemas as each provider accepts them. MCP servers write JSON Schema freely; provider
//! APIs accept subsets of it, and reject a request outright over one keyword they do not know.

use serde_json::{Map, Value};
use toolmux_config::ProviderKind;

/// Keywords a provider rejects, removed at every level of the schema.
fn rejected(kind: ProviderKind) -> &'static [&'static str] {
    match kind {
        // OpenAI and Anthropic accept `title`, but not a `$schema` inside `parameters` in
        // every deployment (OpenAI-compatible servers vary); it carries nothing for a model.
        ProviderKind::Openai | ProviderKind::Anthropic => &["$schema", "$id"],
        // Gemini's `Schema` is an OpenAPI 3.0 subset and rejects unknown fields.
        ProviderKind::Gemini => &[
            "$schema",
            "$id",
            "title",
            "additionalProperties",
            "examples",
            "$comment",
            "default",
        ],
    }
}

/// A copy of `schema` that the provider accepts: rejected keywords dropped, every array with
/// `items`, and an object at the top.
pub fn clean_schema(kind: ProviderKind, schema: &Value) -> Value {
    let mut cleaned = schema.clone();
    clean(&mut cleaned, rejected(kind), true);
    if let Value::Object(map) = &mut cleaned {
        map.entry("type").or_insert_with(|| "object".into());
        if map.get("type").and_then(Value::as_str) == Some("object") {
            map.entry("properties")
                .or_insert_with(|| Value::Object(Map::new()));
        }
    } else {
        cleaned = serde_json::json!({"type": "object", "properties": {}});
    }
    cleaned
}

fn clean(value: &mut Value, rejected: &[&str], schema_position: bool) {
    match value {
        Value::Object(map) => {
            if schema_position {
                for key in rejected {
                    map.remove(*key);
                }
                let is_array = match map.get("type") {
                    Some(Value::String(t)) => t == "array",
                    Some(Value::Array(types)) => types.iter().any(|t| t == "array"),
                    _ => false,
                };
                if is_array && !map.contains_key("items") {
                    map.insert("items".into(), Value::Object(Map::new()));
                }
            }
            for (key, child) in map.iter_mut() {
                // Under `properties` (and `$defs`) the keys are names, not keywords: a property
                // called `title` is kept. Their values are schemas again.
                let names_map = matches!(
                    key.as_str(),
                    "properties" | "$defs" | "definitions" | "patternProperties"
                );
                if names_map {
                    if let Value::Object(named) = child {
                        for schema in named.values_mut() {
                            clean(schema, rejected, true);
                        }
                    }
                } else {
                    let is_schema = matches!(
                        key.as_str(),
                        "items"
                            | "additionalProperties"
                            | "not"
                            | "anyOf"
                            | "oneOf"
                            | "allOf"
                            | "prefixItems"
                            | "if"
                            | "then"
                            | "else"
                    );
                    if is_schema {
                        clean(child, rejected, true);
                    }
                }
            }
        }
        Value::Array(items) => {
            for item in items {
                clean(item, rejected, schema_position);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn gemini_loses_rejected_keywords_but_keeps_properties_named_like_them() {
        let schema = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": "Args",
            "type": "object",
            "additionalProperties": false,
            "properties": {
                "title": {"type": "string", "title": "The title"},
                "tags": {"type": "array"}
            }
        });
        let cleaned = clean_schema(ProviderKind::Gemini, &schema);
        assert_eq!(
            cleaned,
            json!({
                "type": "object",
                "properties": {
                    "title": {"type": "string"},
                    "tags": {"type": "array", "items": {}}
                }
            })
        );
    }

    #[test]
    fn openai_keeps_titles_and_gains_items_on_arrays() {
        let schema = json!({
            "$schema": "x",
            "type": "object",
            "properties": {"paths": {"type": ["array", "null"], "title": "Paths"}}
        });
        let cleaned = clean_schema(ProviderKind::Openai, &schema);
        assert_eq!(
            cleaned,
            json!({
                "type": "object",
                "properties": {"paths": {"type": ["array", "null"], "title": "Paths", "items": {}}}
            })
        );
    }

    #[test]
    fn an_empty_schema_becomes_an_empty_object_schema() {
        assert_eq!(
            clean_schema(ProviderKind::Anthropic, &json!({})),
            json!({"type": "object", "properties": {}})
        );
        assert_eq!(
            clean_schema(ProviderKind::Anthropic, &json!(true)),
            json!({"type": "object", "properties": {}})
        );
    }
}
