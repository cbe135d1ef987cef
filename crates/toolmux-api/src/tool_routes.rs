//! Routes that stand for one built-in tool and take its arguments as they are: as the query
//! string (`GET /api/files/grep?pattern=milk`) or as the JSON body (`POST /api/specs`), less
//! those the path names (`PATCH /api/specs/{spec}`). The tool's input schema is the one
//! definition: the document derives the route's parameters or body from it, a query string is
//! read by it, and the pipeline checks the arguments against it, so the route cannot offer a
//! field the tool lacks or miss one it has.

use serde_json::{Map, Value};
use toolmux_core::Catalog;

use crate::error::ApiError;

/// How a route takes its tool's arguments.
#[derive(Clone, Copy)]
pub(crate) enum Takes {
    /// As the query string, one parameter per argument.
    Query,
    /// As the JSON body, an object.
    Body,
}

/// A route that stands for one built-in tool.
pub(crate) struct ToolRoute {
    /// The route's method, lower case as in the document (`get`).
    pub method: &'static str,
    /// The route's path as in the document (`/api/specs/{spec}`).
    pub path: &'static str,
    /// The tool the route calls.
    pub tool: &'static str,
    /// How the route takes the tool's arguments.
    pub takes: Takes,
    /// The arguments the path gives, left out of the query or body.
    pub from_path: &'static [&'static str],
}

/// Every route that stands for one tool, for the document.
pub(crate) fn every() -> impl Iterator<Item = &'static ToolRoute> {
    crate::files::TOOL_ROUTES
        .iter()
        .chain(crate::specs::TOOL_ROUTES)
        .chain(crate::tasks::TOOL_ROUTES)
        .chain(crate::sessions::TOOL_ROUTES)
        .chain([&crate::runners::DETECT])
}

impl ToolRoute {
    /// `GET path`, whose query string is all of `tool`'s arguments.
    pub(crate) const fn get(path: &'static str, tool: &'static str) -> Self {
        Self {
            method: "get",
            path,
            tool,
            takes: Takes::Query,
            from_path: &[],
        }
    }

    /// The tool's input schema without the path's arguments; `None` when the tool is not in
    /// `catalog` (the spec pack without a specs directory).
    fn schema(&self, catalog: &Catalog) -> Option<Value> {
        let mut schema = catalog
            .get(self.tool)?
            .descriptor
            .input_schema
            .as_ref()
            .clone();
        if let Some(properties) = schema["properties"].as_object_mut() {
            properties.retain(|name, _| !self.from_path.contains(&name.as_str()));
        }
        if let Some(required) = schema["required"].as_array_mut() {
            required.retain(|name| !self.from_path.iter().any(|p| name == p));
        }
        Some(schema)
    }

    /// Writes the route's arguments into `document` (a serialised OpenAPI document): a body
    /// as a component the operation's JSON body points at (the tool's input itself when the
    /// path gives nothing, `{tool}.body` otherwise), a query as the operation's parameters
    /// after those of its path.
    pub(crate) fn document(&self, document: &mut Value, catalog: &Catalog) {
        let Some(schema) = self.schema(catalog) else {
            return;
        };
        match self.takes {
            Takes::Body => {
                let component = if self.from_path.is_empty() {
                    crate::tool_input_component(self.tool)
                } else {
                    format!("{}.body", self.tool)
                };
                let reference =
                    serde_json::json!({ "$ref": format!("#/components/schemas/{component}") });
                document["components"]["schemas"][&component] = schema;
                let body = &mut document["paths"][self.path][self.method]["requestBody"];
                if body.is_object() {
                    body["content"]["application/json"]["schema"] = reference;
                }
            }
            Takes::Query => {
                let operation = &mut document["paths"][self.path][self.method];
                if !operation.is_object() {
                    return;
                }
                let parameters = crate::openapi::query_parameters(&schema);
                let parameters = serde_json::to_value(parameters).unwrap_or(Value::Null);
                let listed = operation["parameters"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default();
                let mut all = listed;
                all.extend(parameters.as_array().cloned().unwrap_or_default());
                operation["parameters"] = Value::Array(all);
            }
        }
    }

    /// A request's body as the tool's arguments, with the path's `values` (in `from_path`'s
    /// order, typed as the path parsed them) put in.
    pub(crate) fn body_arguments(
        &self,
        body: Map<String, Value>,
        values: Vec<Value>,
    ) -> Result<Map<String, Value>, ApiError> {
        self.with_path(body, values)
    }

    /// A request's query string (its `name=value` pairs, decoded) as the tool's arguments,
    /// each value read as its property's type in the tool's input schema from `catalog`: a
    /// number, `true`/`false`, a comma-separated list, or text. A name the schema lacks is
    /// passed on as text, for the pipeline to refuse with the tool's own rule (422, naming
    /// it); a name given twice is a malformed request.
    pub(crate) fn query_arguments(
        &self,
        pairs: Vec<(String, String)>,
        values: Vec<Value>,
        catalog: &Catalog,
    ) -> Result<Map<String, Value>, ApiError> {
        // Borrowed, not copied per request: a name the path gives is refused by `with_path`
        // whatever its type here.
        let entry = catalog.get(self.tool);
        let schema = entry.map_or(&Value::Null, |e| e.descriptor.input_schema.as_ref());
        let mut arguments = Map::new();
        for (name, text) in pairs {
            let property = &schema["properties"][&name];
            let value = typed(property, &text).ok_or_else(|| {
                let digits = text.strip_prefix('-').unwrap_or(&text);
                let whole = !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit());
                ApiError::malformed(if property["type"] == "integer" && whole {
                    format!("bad query string: `{name}` is too large ({text})")
                } else {
                    format!(
                        "bad query string: `{name}` must be {}, not `{text}`",
                        expected(property)
                    )
                })
            })?;
            if arguments.insert(name.clone(), value).is_some() {
                return Err(ApiError::malformed(format!(
                    "bad query string: `{name}` is given more than once"
                )));
            }
        }
        self.with_path(arguments, values)
    }

    /// `arguments` with the path's `values` put in. Arguments that name one of them
    /// themselves are refused: the path says which.
    fn with_path(
        &self,
        mut arguments: Map<String, Value>,
        values: Vec<Value>,
    ) -> Result<Map<String, Value>, ApiError> {
        for (name, value) in self.from_path.iter().zip(values) {
            if arguments.contains_key(*name) {
                return Err(ApiError::malformed(format!(
                    "`{name}` is named by the path ({}), not the {}",
                    self.path,
                    match self.takes {
                        Takes::Query => "query",
                        Takes::Body => "body",
                    }
                )));
            }
            arguments.insert((*name).to_string(), value);
        }
        Ok(arguments)
    }
}

/// `text` as a value of `property`'s type; `None` when it is not one. A property without a
/// single type (or unknown to the schema) takes the text as it is.
fn typed(property: &Value, text: &str) -> Option<Value> {
    match property["type"].as_str() {
        Some("integer") => text
            .parse::<i64>()
            .map(Value::from)
            .or_else(|_| text.parse::<u64>().map(Value::from))
            .ok(),
        Some("number") => text
            .parse::<f64>()
            .ok()
            .and_then(serde_json::Number::from_f64)
            .map(Value::Number),
        Some("boolean") => match text {
            "true" => Some(Value::Bool(true)),
            "false" => Some(Value::Bool(false)),
            _ => None,
        },
        Some("array") if text.is_empty() => Some(Value::Array(Vec::new())),
        Some("array") => text
            .split(',')
            .map(|item| typed(&property["items"], item))
            .collect::<Option<Vec<Value>>>()
            .map(Value::Array),
        _ => Some(Value::from(text)),
    }
}

/// What `property`'s type wants, for a refusal.
fn expected(property: &Value) -> String {
    match property["type"].as_str() {
        Some("integer") => "a whole number".into(),
        Some("number") => "a number".into(),
        Some("boolean") => "`true` or `false`".into(),
        Some("array") => format!(
            "a comma-separated list (each item {})",
            expected(&property["items"])
        ),
        _ => "text".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_query_value_is_read_as_its_propertys_type() {
        let integer = json!({"type": "integer"});
        assert_eq!(typed(&integer, "3"), Some(json!(3)));
        assert_eq!(typed(&integer, "-3"), Some(json!(-3)));
        assert_eq!(typed(&integer, "3.5"), None);
        assert_eq!(
            typed(&json!({"type": "boolean"}), "true"),
            Some(json!(true))
        );
        assert_eq!(typed(&json!({"type": "boolean"}), "yes"), None);
        let list = json!({"type": "array", "items": {"type": "integer"}});
        assert_eq!(typed(&list, "1,2"), Some(json!([1, 2])));
        assert_eq!(typed(&list, "1,x"), None);
        assert_eq!(
            expected(&list),
            "a comma-separated list (each item a whole number)"
        );
        assert_eq!(typed(&json!({"type": "string"}), "1"), Some(json!("1")));
        assert_eq!(typed(&Value::Null, "x"), Some(json!("x")));
    }
}
