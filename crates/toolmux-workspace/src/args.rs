//! Reading a tool's arguments without trusting them. The pipeline has already checked them
//! against the input schema, but a tool can also be called directly, so every odd value becomes
//! a message the caller can act on, never a panic.

use serde_json::{Map, Value};

/// The arguments object of one call, with the names the tool accepts.
pub(crate) struct Args<'a> {
    map: &'a Map<String, Value>,
}

impl<'a> Args<'a> {
    /// Wraps `map`, refusing names the tool does not know.
    pub(crate) fn new(map: &'a Map<String, Value>, known: &[&str]) -> Result<Self, String> {
        if let Some(unknown) = map.keys().find(|k| !known.contains(&k.as_str())) {
            return Err(format!(
                "unknown argument `{unknown}`; this tool takes {}",
                known
                    .iter()
                    .map(|k| format!("`{k}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        Ok(Self { map })
    }

    /// A string argument, or `default` when it is absent or null.
    pub(crate) fn string(&self, name: &str, default: &'a str) -> Result<&'a str, String> {
        match self.map.get(name) {
            None | Some(Value::Null) => Ok(default),
            Some(Value::String(s)) => Ok(s),
            Some(other) => Err(format!("`{name}` must be a string, not {}", kind(other))),
        }
    }

    /// A string argument that must be there.
    pub(crate) fn required_string(&self, name: &str) -> Result<&'a str, String> {
        match self.map.get(name) {
            None | Some(Value::Null) => Err(format!("missing required argument `{name}`")),
            Some(Value::String(s)) => Ok(s),
            Some(other) => Err(format!("`{name}` must be a string, not {}", kind(other))),
        }
    }

    /// An optional string argument.
    pub(crate) fn optional_string(&self, name: &str) -> Result<Option<&'a str>, String> {
        match self.map.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(other) => Err(format!("`{name}` must be a string, not {}", kind(other))),
        }
    }

    /// A whole number in `min..=max`, or `default` when absent. `3.0` counts as `3`, as JSON
    /// Schema's `integer` says.
    pub(crate) fn integer(
        &self,
        name: &str,
        default: usize,
        min: usize,
        max: usize,
    ) -> Result<usize, String> {
        let range = if max == usize::MAX {
            format!("of at least {min}")
        } else {
            format!("from {min} to {max}")
        };
        let value = match self.map.get(name) {
            None | Some(Value::Null) => return Ok(default),
            Some(v) => v,
        };
        let n = match value {
            Value::Number(n) => n
                .as_u64()
                .or_else(|| {
                    n.as_f64()
                        .filter(|f| f.fract() == 0.0 && *f >= 0.0 && *f <= u64::MAX as f64)
                        .map(|f| f as u64)
                })
                .map(|n| usize::try_from(n).unwrap_or(usize::MAX)),
            _ => None,
        };
        match n {
            Some(n) if (min..=max).contains(&n) => Ok(n),
            _ => Err(format!("`{name}` must be an integer {range} (got {value})")),
        }
    }

    /// A boolean argument, or `default` when absent.
    pub(crate) fn boolean(&self, name: &str, default: bool) -> Result<bool, String> {
        match self.map.get(name) {
            None | Some(Value::Null) => Ok(default),
            Some(Value::Bool(b)) => Ok(*b),
            Some(other) => Err(format!(
                "`{name}` must be true or false, not {}",
                kind(other)
            )),
        }
    }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn map(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => Map::new(),
        }
    }

    #[test]
    fn odd_values_give_messages_not_panics() {
        let m = map(json!({"path": 3, "limit": -1, "offset": 2.0, "flag": "yes"}));
        let args = Args::new(&m, &["path", "limit", "offset", "flag"]).unwrap();
        assert_eq!(
            args.string("path", ".").unwrap_err(),
            "`path` must be a string, not a number"
        );
        assert_eq!(
            args.integer("limit", 1, 1, 10).unwrap_err(),
            "`limit` must be an integer from 1 to 10 (got -1)"
        );
        assert_eq!(args.integer("offset", 1, 1, usize::MAX).unwrap(), 2);
        assert_eq!(
            args.boolean("flag", false).unwrap_err(),
            "`flag` must be true or false, not a string"
        );
        assert_eq!(args.integer("missing", 7, 1, 10).unwrap(), 7);
    }

    #[test]
    fn unknown_arguments_are_named() {
        let m = map(json!({"pth": "x"}));
        assert_eq!(
            Args::new(&m, &["path", "limit"]).err().unwrap(),
            "unknown argument `pth`; this tool takes `path`, `limit`"
        );
    }
}
