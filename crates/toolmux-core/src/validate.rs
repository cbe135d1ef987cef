//! JSON Schema validation of arguments and structured results.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

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

/// A compiled schema. The draft is taken from `$schema` when present, 2020-12 otherwise.
pub(crate) struct CompiledSchema(jsonschema::Validator);

impl CompiledSchema {
    /// Compiles a schema; the error says why the schema itself is invalid.
    pub(crate) fn compile(schema: &Value) -> Result<Self, String> {
        jsonschema::validator_for(schema)
            .map(Self)
            .map_err(|e| e.to_string())
    }

    /// Every violation of `instance`, or none.
    pub(crate) fn violations(&self, instance: &Value) -> Vec<Violation> {
        if self.0.is_valid(instance) {
            return Vec::new();
        }
        self.0
            .iter_errors(instance)
            .map(|e| Violation {
                pointer: e.instance_path().to_string(),
                message: e.to_string(),
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
    fn an_invalid_schema_is_reported() {
        let err = CompiledSchema::compile(&json!({"type": "no-such-type"}))
            .err()
            .expect("invalid schema");
        assert!(err.contains("no-such-type"), "{err}");
    }
}
