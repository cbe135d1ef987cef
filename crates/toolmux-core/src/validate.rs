//! JSON Schema validation of arguments and structured results.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Top-level arguments that known MCP clients add to every tool call for their own use, never
/// the tool's: Gemini CLI's `wait_for_previous` (how it orders parallel calls). They are dropped
/// before validation unless the tool's schema declares them, so that a strict schema
/// (`additionalProperties: false`) does not refuse every call such a client makes.
const CLIENT_ADDED_ARGUMENTS: &[&str] = &["wait_for_previous"];

/// Removes the [`CLIENT_ADDED_ARGUMENTS`] that `schema` (a tool's input schema) does not declare
/// as properties of its own.
pub(crate) fn drop_client_added(schema: &Value, arguments: &mut Map<String, Value>) {
    let declared = schema.get("properties").and_then(Value::as_object);
    for name in CLIENT_ADDED_ARGUMENTS {
        if !declared.is_some_and(|properties| properties.contains_key(*name))
            && arguments.remove(*name).is_some()
        {
            tracing::debug!(argument = name, "dropped an argument the client added");
        }
    }
}

/// One way a value breaks its schema.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Violation {
    /// JSON pointer to the offending value (`""` is the whole value).
    pub pointer: String,
    /// What is wrong, in words.
    pub message: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = if self.pointer.is_empty() {
            "/"
        } else {
            &self.pointer
        };
        write!(f, "{at}: {}", self.message)
    }
}

pub(crate) fn format_violations(violations: &[Violation]) -> String {
    violations
        .iter()
        .map(Violation::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

/// Whether `value` nests deeper than `max` levels (a scalar is one level, `{"a": 1}` two),
/// found with an explicit stack: the value is outside input.
pub(crate) fn nests_deeper_than(value: &Value, max: usize) -> bool {
    let mut stack = vec![(value, 1usize)];
    while let Some((value, depth)) = stack.pop() {
        if depth > max {
            return true;
        }
        match value {
            Value::Array(items) => stack.extend(items.iter().map(|item| (item, depth + 1))),
            Value::Object(map) => stack.extend(map.values().map(|item| (item, depth + 1))),
            _ => {}
        }
    }
    false
}

/// Whether `value`, serialized as JSON, is longer than `max` bytes; serializing stops as soon
/// as it is.
pub fn serializes_longer_than(value: &Value, max: usize) -> bool {
    /// Counts what is written, and refuses to take more than `max` bytes.
    struct Counter {
        written: usize,
        max: usize,
    }
    impl std::io::Write for Counter {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.written += bytes.len();
            if self.written > self.max {
                return Err(std::io::Error::other("over the limit"));
            }
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut counter = Counter { written: 0, max };
    serde_json::to_writer(&mut counter, value).is_err()
}

/// A compiled JSON Schema: the one way toolmux checks a value against a schema (tool arguments
/// and results, a question's answers, a form an upstream server sends). The draft is taken from
/// `$schema` when present, 2020-12 otherwise.
pub struct CompiledSchema(jsonschema::Validator);

impl std::fmt::Debug for CompiledSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompiledSchema").finish_non_exhaustive()
    }
}

impl CompiledSchema {
    /// Compiles a schema; the error says why the schema itself is invalid.
    pub fn compile(schema: &Value) -> Result<Self, String> {
        jsonschema::validator_for(schema)
            .map(Self)
            .map_err(|e| e.to_string())
    }

    /// Every violation of `instance`, or none.
    pub fn violations(&self, instance: &Value) -> Vec<Violation> {
        self.violations_worded(instance, |_, _| None)
    }

    /// Every violation of a tool call's `arguments`, or none; an argument the schema does not
    /// allow is named as such (`unexpected argument `x``), which is what a caller (a person, or
    /// a model retrying) needs to fix the call.
    pub(crate) fn argument_violations(&self, arguments: &Value) -> Vec<Violation> {
        self.violations_worded(arguments, |pointer, kind| match kind {
            jsonschema::error::ValidationErrorKind::AdditionalProperties { unexpected }
                if pointer.is_empty() =>
            {
                let names = unexpected
                    .iter()
                    .map(|name| format!("`{name}`"))
                    .collect::<Vec<_>>()
                    .join(", ");
                let noun = if unexpected.len() == 1 {
                    "argument"
                } else {
                    "arguments"
                };
                Some(format!(
                    "unexpected {noun} {names}: the tool's input schema does not allow it"
                ))
            }
            _ => None,
        })
    }

    /// The violations, each worded by `reword` (pointer, kind) when it has words of its own,
    /// else by the validator.
    fn violations_worded(
        &self,
        instance: &Value,
        reword: impl Fn(&str, &jsonschema::error::ValidationErrorKind) -> Option<String>,
    ) -> Vec<Violation> {
        if self.0.is_valid(instance) {
            return Vec::new();
        }
        self.0
            .iter_errors(instance)
            .map(|e| {
                let pointer = e.instance_path().to_string();
                let message = reword(&pointer, e.kind()).unwrap_or_else(|| e.to_string());
                Violation { pointer, message }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reports_every_violation_with_its_pointer() {
        let schema = CompiledSchema::compile(&json!({
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "limit": {"type": "integer", "minimum": 1},
                "tags": {"type": "array", "items": {"type": "string"}}
            },
            "required": ["path"],
            "additionalProperties": false
        }))
        .expect("valid schema");
        let mut v = schema.violations(&json!({"limit": 0, "tags": ["a", 3], "extra": true}));
        v.sort_by(|a, b| a.pointer.cmp(&b.pointer));
        let pointers: Vec<_> = v.iter().map(|v| v.pointer.as_str()).collect();
        assert_eq!(pointers, ["", "", "/limit", "/tags/1"]);
        assert!(
            v.iter()
                .any(|v| v.message.contains("\"path\" is a required property"))
        );
        assert!(v.iter().any(|v| v.message.contains("extra")));
        assert!(schema.violations(&json!({"path": "a"})).is_empty());
    }

    #[test]
    fn an_extra_argument_is_named_and_a_client_added_one_is_dropped_unless_declared() {
        let strict = json!({
            "type": "object",
            "properties": {"path": {"type": "string"}},
            "additionalProperties": false
        });
        let schema = CompiledSchema::compile(&strict).expect("valid schema");
        assert_eq!(
            schema.argument_violations(&json!({"path": "a", "colour": "red"})),
            [Violation {
                pointer: String::new(),
                message: "unexpected argument `colour`: the tool's input schema does not \
                          allow it"
                    .into(),
            }]
        );
        let mut arguments = json!({"path": "a", "wait_for_previous": true});
        let map = arguments.as_object_mut().expect("object");
        drop_client_added(&strict, map);
        assert_eq!(arguments, json!({"path": "a"}));
        // A tool that takes `wait_for_previous` itself gets it.
        let declaring = json!({"type": "object", "properties": {"wait_for_previous": {}}});
        let mut arguments = json!({"wait_for_previous": true});
        let map = arguments.as_object_mut().expect("object");
        drop_client_added(&declaring, map);
        assert_eq!(arguments, json!({"wait_for_previous": true}));
    }

    #[test]
    fn depth_and_size_are_measured_without_recursion() {
        let mut deep = json!(1);
        for _ in 0..100_000 {
            deep = Value::Array(vec![deep]);
        }
        assert!(nests_deeper_than(&deep, 32));
        assert!(!nests_deeper_than(&json!({"a": [1]}), 3));
        assert!(nests_deeper_than(&json!({"a": [1]}), 2));
        assert!(!serializes_longer_than(&json!("abc"), 5));
        assert!(serializes_longer_than(&json!("abcd"), 5));
        // A value this deep is dropped without recursion too (serde_json's own drop recurses).
        let mut stack = vec![deep];
        while let Some(value) = stack.pop() {
            if let Value::Array(items) = value {
                stack.extend(items);
            }
        }
    }

    #[test]
    fn an_invalid_schema_is_reported() {
        let err =
            CompiledSchema::compile(&json!({"type": "no-such-type"})).expect_err("invalid schema");
        assert!(err.contains("no-such-type"), "{err}");
    }
}
