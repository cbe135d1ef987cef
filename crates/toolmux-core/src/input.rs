//! A built-in tool's input, declared once: a serde + `schemars::JsonSchema` struct the tool
//! parses its arguments into, and from which its `inputSchema` is derived ([`input_schema`]),
//! so that the schema a client sees and the arguments the tool reads cannot disagree (rmcp's
//! `Parameters<P>` rule). The REST query of a route that stands for the tool, the CLI flags
//! and the OpenAPI component come from the same struct.

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

/// The JSON Schema (draft 2020-12) of a tool's arguments object `T`, as MCP clients take it:
/// `type: object` with `properties`, `required` and the fields' doc comments as
/// `description`s. Unlike rmcp's `schema_for_input` it has no `$schema` key (noise in every
/// listing) and no `$defs`: nested types are written inline, so the schema stands alone as an
/// OpenAPI component too. The top-level `title` and `description` are the Rust type's name and
/// doc, which the tool's own description replaces.
///
/// An optional field (one not in `required`) is one a caller leaves out, so its schema does
/// not also admit `null`: a model shown `"type": ["string", "null"]` sends `null`, and code
/// mode would declare it `string | null`. A unit enum is a plain `enum` of its names (the
/// variants' doc comments would make it a `oneOf` of `const`s, which some providers' function
/// schemas refuse), and a doc comment's line breaks inside a paragraph are spaces, as in
/// Markdown.
pub fn input_schema<T: JsonSchema>() -> Value {
    let mut settings = SchemaSettings::draft2020_12();
    settings.meta_schema = None;
    settings.inline_subschemas = true;
    let mut schema = settings
        .into_generator()
        .into_root_schema_for::<T>()
        .to_value();
    if let Some(root) = schema.as_object_mut() {
        root.remove("title");
        root.remove("description");
    }
    if let Some(root) = schema.as_object_mut() {
        // A tool without arguments still says it has no properties, as rmcp's empty input does.
        root.entry("properties")
            .or_insert_with(|| Value::Object(Map::new()));
    }
    tidy(&mut schema);
    schema
}

/// A call's arguments as the tool's input struct. The hub has checked them against the
/// schema already; this names the field when they still do not fit (`` `limit`: … ``).
pub fn parse_arguments<T: DeserializeOwned>(args: &Map<String, Value>) -> Result<T, String> {
    serde_path_to_error::deserialize(args).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        if path == "." {
            inner.to_string()
        } else {
            format!("`{path}`: {inner}")
        }
    })
}

/// An input struct as a tool's arguments (a channel that parsed a query or flags into the
/// struct passes them on this way). A field that is `None` is left out rather than sent as
/// `null`, which its schema does not admit ([`input_schema`]).
pub fn arguments_of<T: Serialize>(input: &T) -> Result<Map<String, Value>, String> {
    match serde_json::to_value(input) {
        Ok(Value::Object(mut arguments)) => {
            arguments.retain(|_, value| !value.is_null());
            Ok(arguments)
        }
        Ok(other) => Err(format!("arguments must be an object, not {other}")),
        Err(e) => Err(format!("the arguments cannot be written: {e}")),
    }
}

/// What a JSON value is, for a message that names a value of the wrong kind (`` `path` must
/// be a string, not a number ``).
pub fn value_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Walks every schema in `schema`: takes `null` out of optional properties, turns a `oneOf`
/// of `const`s into an `enum` and joins the lines of descriptions' paragraphs.
fn tidy(schema: &mut Value) {
    let Some(object) = schema.as_object_mut() else {
        return;
    };
    if let Some(Value::String(description)) = object.get_mut("description") {
        *description = unwrapped(description);
    }
    let constants: Option<Vec<Value>> = match object.get("oneOf") {
        Some(Value::Array(options)) => options.iter().map(|o| o.get("const").cloned()).collect(),
        _ => None,
    };
    if let Some(constants) = constants {
        object.remove("oneOf");
        if constants.iter().all(Value::is_string) {
            object.insert("type".into(), Value::from("string"));
        }
        object.insert("enum".into(), Value::Array(constants));
    }
    let required: Vec<String> = object
        .get("required")
        .and_then(Value::as_array)
        .map(|r| {
            r.iter()
                .filter_map(Value::as_str)
                .map(String::from)
                .collect()
        })
        .unwrap_or_default();
    if let Some(Value::Object(properties)) = object.get_mut("properties") {
        for (name, property) in properties.iter_mut() {
            if !required.contains(name) {
                not_null(property);
            }
        }
    }
    for (key, value) in object.iter_mut() {
        match (key.as_str(), value) {
            ("properties", Value::Object(properties)) => {
                properties.values_mut().for_each(tidy);
            }
            ("items" | "additionalProperties", item) => tidy(item),
            ("anyOf" | "oneOf" | "allOf" | "prefixItems", Value::Array(items)) => {
                items.iter_mut().for_each(tidy);
            }
            _ => {}
        }
    }
}

/// A doc comment's text with the line breaks inside each paragraph made spaces.
fn unwrapped(text: &str) -> String {
    text.split("\n\n")
        .map(|paragraph| {
            paragraph
                .lines()
                .map(str::trim)
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// One property's schema without its `null` alternative: `type: [T, "null"]` becomes `type:
/// T`, `null` leaves an `enum`, `anyOf: [S, {type: null}]` becomes `S` (keeping the property's
/// own description and default), and a `default: null` goes.
fn not_null(property: &mut Value) {
    let Some(object) = property.as_object_mut() else {
        return;
    };
    if let Some(Value::Array(types)) = object.get_mut("type") {
        types.retain(|t| t != "null");
        if let [only] = types.as_slice() {
            let only = only.clone();
            object.insert("type".into(), only);
        }
    }
    if let Some(Value::Array(values)) = object.get_mut("enum") {
        values.retain(|v| !v.is_null());
    }
    if object.get("default").is_some_and(Value::is_null) {
        object.remove("default");
    }
    let is_null = |s: &Value| s.get("type").and_then(Value::as_str) == Some("null");
    let rest = match object.get("anyOf") {
        Some(Value::Array(options)) if options.len() == 2 && options.iter().any(is_null) => {
            options.iter().find(|o| !is_null(o)).cloned()
        }
        _ => None,
    };
    if let Some(Value::Object(rest)) = rest {
        object.remove("anyOf");
        for (key, value) in rest {
            object.entry(key).or_insert(value);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use serde_json::json;

    /// How a pack declares a tool's input.
    #[derive(Deserialize, JsonSchema)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    #[allow(dead_code)]
    struct Search {
        /// The query.
        query: String,
        /// The most results.
        /// Default 10.
        #[serde(default = "ten")]
        #[schemars(range(min = 1, max = 1000))]
        limit: u32,
        /// Only these tags.
        #[serde(default)]
        tags: Vec<String>,
        /// How to match.
        match_mode: Option<Mode>,
        /// A nested part.
        nested: Option<Nested>,
    }

    fn ten() -> u32 {
        10
    }

    #[derive(Deserialize, JsonSchema)]
    #[serde(rename_all = "lowercase")]
    #[allow(dead_code)]
    enum Mode {
        /// Every one.
        All,
        /// One is enough.
        Any,
    }

    /// A tool without arguments.
    #[derive(Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    struct Nothing {}

    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Nested {
        /// Inner.
        inner: bool,
    }

    #[test]
    fn the_schema_is_an_object_of_the_fields_with_their_docs_and_no_null() {
        let schema = input_schema::<Search>();
        assert_eq!(
            schema,
            json!({
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "The query."},
                    "limit": {"type": "integer", "format": "uint32", "minimum": 1, "maximum": 1000,
                              "default": 10, "description": "The most results. Default 10."},
                    "tags": {"type": "array", "items": {"type": "string"}, "default": [],
                             "description": "Only these tags."},
                    "matchMode": {"type": "string", "enum": ["all", "any"], "description": "How to match."},
                    "nested": {"type": "object", "properties": {"inner": {"type": "boolean", "description": "Inner."}},
                               "required": ["inner"], "description": "A nested part."},
                },
                "required": ["query"],
                "additionalProperties": false,
            })
        );
    }

    #[test]
    fn absent_fields_are_left_out_of_the_arguments() {
        #[derive(Serialize)]
        struct Filter {
            status: Option<String>,
            tags: Vec<String>,
        }
        let filter = Filter {
            status: None,
            tags: vec!["api".into()],
        };
        let arguments = arguments_of(&filter).map(Value::Object);
        assert_eq!(arguments, Ok(json!({"tags": ["api"]})));
    }

    #[test]
    fn a_tool_without_arguments_has_an_empty_object() {
        assert_eq!(
            input_schema::<Nothing>(),
            json!({"type": "object", "properties": {}, "additionalProperties": false})
        );
    }

    #[test]
    fn arguments_that_do_not_fit_name_the_field() {
        let args = json!({"query": "x", "limit": "many"});
        let Value::Object(args) = args else {
            unreachable!("an object literal")
        };
        let error = parse_arguments::<Search>(&args).err();
        assert_eq!(
            error.as_deref(),
            Some("`limit`: invalid type: string \"many\", expected u32")
        );
    }
}
