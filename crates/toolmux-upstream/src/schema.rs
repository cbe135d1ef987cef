//! Sanitising the schemas an upstream server declares before they reach a model or the
//! pipeline: bounded in size and depth, without keywords that only make sense to the server that
//! wrote them (`$id`, remote `$ref`s, a `$schema` below the root or naming a dialect toolmux
//! cannot check), and checked to compile. A root `$schema` naming a standard draft is kept: MCP
//! clients are told which dialect a schema is written in (SEP-1613; 2020-12 when absent), and
//! the pipeline validates with that draft. The chat removes it where a provider refuses it.
//! A schema that cannot be used is replaced by an accept-anything object schema (the server
//! still checks its own arguments), and the reason is kept as a note in the discovery cache.

use serde_json::{Map, Value, json};
use toolmux_core::value_kind;

/// The largest schema kept, serialized.
pub const MAX_SCHEMA_BYTES: usize = 32 * 1024;
/// The deepest nesting kept; anything deeper becomes `{}` (accept anything).
const MAX_DEPTH: usize = 32;
/// Keywords dropped wherever they appear (but a root `$schema` of one of the
/// [`KNOWN_DIALECTS`]).
const DROPPED: &[&str] = &[
    "$schema",
    "$id",
    "$comment",
    "$vocabulary",
    "$dynamicAnchor",
];
/// The `$schema` values kept at a schema's root: the standard drafts the validator implements,
/// as their meta-schemas name themselves (with or without the empty fragment).
const KNOWN_DIALECTS: &[&str] = &[
    "https://json-schema.org/draft/2020-12/schema",
    "https://json-schema.org/draft/2019-09/schema",
    "http://json-schema.org/draft-07/schema",
    "http://json-schema.org/draft-06/schema",
    "http://json-schema.org/draft-04/schema",
];

/// Keywords dropped, in a second pass, from a schema still too large.
const DECORATIVE: &[&str] = &["description", "examples", "title", "default", "$comment"];

/// A sanitised schema and, when something had to change beyond dropping keywords, why.
#[derive(Debug, Clone, PartialEq)]
pub struct Sanitised {
    /// The schema to use.
    pub schema: Value,
    /// What was changed, for the cache and for `toolmux mcp list`.
    pub note: Option<String>,
}

/// Sanitises an input schema: the result is always an object schema that compiles.
pub fn input_schema(raw: &Value) -> Sanitised {
    let Value::Object(map) = raw else {
        return fallback(format!(
            "the input schema is not an object ({}); any arguments object is accepted",
            value_kind(raw)
        ));
    };
    let mut schema = Value::Object(clean_object(map, 0));
    if let Value::Object(map) = &mut schema {
        map.entry("type").or_insert_with(|| json!("object"));
    }
    match finish(schema) {
        Ok(sanitised) => sanitised,
        Err(reason) => fallback(format!("{reason}; any arguments object is accepted")),
    }
}

/// Sanitises an output schema; `None` when it cannot be used (then results are not checked
/// against it).
pub fn output_schema(raw: &Value) -> (Option<Value>, Option<String>) {
    let Value::Object(map) = raw else {
        return (
            None,
            Some(format!(
                "the output schema is not an object ({}); ignored",
                value_kind(raw)
            )),
        );
    };
    match finish(Value::Object(clean_object(map, 0))) {
        Ok(sanitised) => (Some(sanitised.schema), sanitised.note),
        Err(reason) => (
            None,
            Some(format!("{reason}; the output schema is ignored")),
        ),
    }
}

fn fallback(note: String) -> Sanitised {
    Sanitised {
        schema: json!({"type": "object"}),
        note: Some(note),
    }
}

/// Caps the size (dropping decorative keywords first) and checks that the schema compiles.
fn finish(mut schema: Value) -> Result<Sanitised, String> {
    let mut note = None;
    if size(&schema) > MAX_SCHEMA_BYTES {
        strip_decorative(&mut schema, true);
        if size(&schema) > MAX_SCHEMA_BYTES {
            return Err(format!(
                "the schema is larger than {} even without descriptions",
                toolmux_core::human_bytes(MAX_SCHEMA_BYTES as u64)
            ));
        }
        note = Some(format!(
            "the schema was larger than {}; nested descriptions, titles, defaults and \
             examples were dropped",
            toolmux_core::human_bytes(MAX_SCHEMA_BYTES as u64)
        ));
    }
    if let Err(e) = toolmux_core::CompiledSchema::compile(&schema) {
        return Err(format!("the schema is invalid ({e})"));
    }
    Ok(Sanitised { schema, note })
}

fn size(value: &Value) -> usize {
    serde_json::to_vec(value).map_or(usize::MAX, |v| v.len())
}

fn is_known_dialect(value: &Value) -> bool {
    value
        .as_str()
        .is_some_and(|uri| KNOWN_DIALECTS.contains(&uri.strip_suffix('#').unwrap_or(uri)))
}

fn clean_object(map: &Map<String, Value>, depth: usize) -> Map<String, Value> {
    let mut out = Map::with_capacity(map.len());
    for (key, value) in map {
        // A root `$schema` naming a draft the validator knows says which dialect the schema
        // is written in, for clients and the pipeline alike; anywhere else it goes.
        let dialect = depth == 0 && key == "$schema" && is_known_dialect(value);
        if DROPPED.contains(&key.as_str()) && !dialect {
            continue;
        }
        if key == "$ref"
            && let Value::String(target) = value
            && !target.starts_with('#')
        {
            // A reference to another document cannot be resolved offline; accept anything.
            continue;
        }
        out.insert(key.clone(), clean_value(value, depth + 1));
    }
    out
}

fn clean_value(value: &Value, depth: usize) -> Value {
    if depth > MAX_DEPTH {
        return json!({});
    }
    match value {
        Value::Object(map) => Value::Object(clean_object(map, depth)),
        Value::Array(items) => {
            Value::Array(items.iter().map(|v| clean_value(v, depth + 1)).collect())
        }
        other => other.clone(),
    }
}

/// Drops descriptions and the like below the top level (the top-level ones say what the
/// arguments are for; nested ones are the bulk of big schemas). Keys of `properties` are names,
/// not keywords, and are kept.
fn strip_decorative(value: &mut Value, top: bool) {
    match value {
        Value::Object(map) => {
            if !top {
                for key in DECORATIVE {
                    if map.get(*key).is_some_and(|v| !v.is_object()) {
                        map.remove(*key);
                    }
                }
            }
            for (_, child) in map.iter_mut() {
                strip_decorative(child, false);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| strip_decorative(v, false)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_keywords_and_remote_refs_are_dropped_and_local_refs_kept() {
        let raw = json!({
            "$schema": "http://json-schema.org/draft-07/schema#",
            "$id": "urn:x",
            "type": "object",
            "properties": {
                "a": {"$ref": "#/$defs/A", "$schema": "http://json-schema.org/draft-07/schema#"},
                "b": {"$ref": "https://example.com/b.json", "type": "string"}
            },
            "$defs": {"A": {"type": "integer"}}
        });
        let s = input_schema(&raw);
        assert_eq!(s.note, None);
        assert_eq!(
            s.schema,
            json!({
                "$schema": "http://json-schema.org/draft-07/schema#",
                "type": "object",
                "properties": {"a": {"$ref": "#/$defs/A"}, "b": {"type": "string"}},
                "$defs": {"A": {"type": "integer"}}
            })
        );
        // The root `$schema` comes first, where the server put it.
        assert_eq!(
            s.schema.as_object().unwrap().keys().next().unwrap(),
            "$schema"
        );
    }

    #[test]
    fn a_2020_12_schema_keeps_its_dialect_defs_and_additional_properties() {
        // The conformance suite's `json-schema-2020-12` tool (SEP-1613), as the reference
        // server declares it.
        let raw = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "$defs": {"address": {"type": "object", "properties": {
                "street": {"type": "string"}, "city": {"type": "string"}
            }}},
            "properties": {
                "name": {"type": "string"},
                "address": {"$ref": "#/$defs/address"}
            },
            "additionalProperties": false
        });
        let s = input_schema(&raw);
        assert_eq!(s.note, None);
        assert_eq!(s.schema, raw);
        let (output, note) = output_schema(&raw);
        assert_eq!((output, note), (Some(raw), None));
    }

    #[test]
    fn an_unknown_dialect_is_dropped_so_the_schema_still_compiles() {
        for dialect in [json!("https://example.com/my-dialect"), json!(7)] {
            let s = input_schema(&json!({"$schema": dialect, "type": "object"}));
            assert_eq!(s.schema, json!({"type": "object"}));
            assert_eq!(s.note, None);
        }
    }

    #[test]
    fn a_missing_type_becomes_object() {
        assert_eq!(
            input_schema(&json!({"properties": {}})).schema,
            json!({"properties": {}, "type": "object"})
        );
    }

    #[test]
    fn an_invalid_schema_is_replaced_with_a_note() {
        let s = input_schema(&json!({"type": "object", "properties": {"a": {"type": "strng"}}}));
        assert_eq!(s.schema, json!({"type": "object"}));
        assert!(
            s.note
                .as_deref()
                .is_some_and(|n| n.starts_with("the schema is invalid")),
            "{s:?}"
        );
        let s = input_schema(&json!("nope"));
        assert_eq!(
            s.note.as_deref(),
            Some("the input schema is not an object (a string); any arguments object is accepted")
        );
        assert_eq!(output_schema(&json!({"type": 5})).0, None);
    }

    #[test]
    fn oversized_schemas_lose_nested_descriptions_then_everything() {
        let mut properties = Map::new();
        for i in 0..200 {
            properties.insert(
                format!("p{i}"),
                json!({"type": "string", "description": "d".repeat(200)}),
            );
        }
        let raw = json!({"type": "object", "description": "top", "properties": properties});
        let s = input_schema(&raw);
        assert!(s.note.is_some());
        assert_eq!(s.schema["description"], "top");
        assert_eq!(s.schema["properties"]["p7"], json!({"type": "string"}));

        let mut huge = Map::new();
        for i in 0..5000 {
            huge.insert(format!("property_number_{i}"), json!({"type": "string"}));
        }
        let s = input_schema(&json!({"type": "object", "properties": huge}));
        assert_eq!(s.schema, json!({"type": "object"}));
    }

    #[test]
    fn deep_nesting_is_cut() {
        let mut deep = json!({"type": "string"});
        for _ in 0..100 {
            deep = json!({"type": "object", "properties": {"x": deep}});
        }
        let s = input_schema(&deep);
        assert!(size(&s.schema) < 4096);
    }
}
