//! Reading a tool's arguments without trusting them. The pipeline has already checked them
//! against the input schema, but a tool can also be called directly, so every odd value becomes
//! a message the caller can act on, never a panic.

use serde_json::{Map, Value};
use toolmux_core::value_kind;

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
            Some(other) => Err(format!(
                "`{name}` must be a string, not {}",
                value_kind(other)
            )),
        }
    }

    /// A string argument that must be there.
    pub(crate) fn required_string(&self, name: &str) -> Result<&'a str, String> {
        match self.map.get(name) {
            None | Some(Value::Null) => Err(format!("missing required argument `{name}`")),
            Some(Value::String(s)) => Ok(s),
            Some(other) => Err(format!(
                "`{name}` must be a string, not {}",
                value_kind(other)
            )),
        }
    }

    /// An optional string argument.
    pub(crate) fn optional_string(&self, name: &str) -> Result<Option<&'a str>, String> {
        match self.map.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(other) => Err(format!(
                "`{name}` must be a string, not {}",
                value_kind(other)
            )),
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
        let value = match self.map.get(name) {
            None | Some(Value::Null) => return Ok(default),
            Some(v) => v,
        };
        let whole = match value {
            Value::Number(n) => {
                if let Some(n) = n.as_u64() {
                    Some(Whole::Fits(usize::try_from(n).unwrap_or(usize::MAX)))
                } else if n.is_i64() {
                    // Below zero: out of every range, reported as such below.
                    None
                } else {
                    // A float: whole, and maybe far beyond any usize (`1e26`). One below zero
                    // is out of every range, as a negative integer is.
                    n.as_f64()
                        .filter(|f| f.fract() == 0.0 && *f >= 0.0)
                        .map(|f| {
                            if f < u64::MAX as f64 {
                                Whole::Fits(f as usize)
                            } else {
                                Whole::TooLarge
                            }
                        })
                }
            }
            _ => None,
        };
        let range = if max == usize::MAX {
            format!("of at least {min}")
        } else {
            format!("from {min} to {max}")
        };
        match whole {
            Some(Whole::Fits(n)) if (min..=max).contains(&n) => Ok(n),
            // A whole number beyond any count: "of at least 1" would read as if it were too
            // small. (With a finite maximum the range in the usual message already says it.)
            Some(Whole::TooLarge) if max == usize::MAX => Err(format!(
                "`{name}` is too large (got {value}); it must be an integer from {min} to {max}"
            )),
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
                value_kind(other)
            )),
        }
    }
}

/// What a JSON number is as a count.
enum Whole {
    /// A whole number no bigger than `usize::MAX`.
    Fits(usize),
    /// A whole number beyond the largest accepted.
    TooLarge,
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
        let m = map(json!({"neg": -3.0, "huge_neg": -1e26}));
        let args = Args::new(&m, &["neg", "huge_neg"]).unwrap();
        assert_eq!(
            args.integer("neg", 1, 0, usize::MAX).unwrap_err(),
            "`neg` must be an integer of at least 0 (got -3.0)"
        );
        assert_eq!(
            args.integer("huge_neg", 1, 1, usize::MAX).unwrap_err(),
            "`huge_neg` must be an integer of at least 1 (got -1e+26)"
        );
    }

    #[test]
    fn d17_a_huge_whole_number_is_too_large_not_too_small() {
        let m = map(json!({"limit": 1e26, "small": 11, "half": 2.5}));
        let args = Args::new(&m, &["limit", "small", "half"]).unwrap();
        let max = usize::MAX;
        assert_eq!(
            args.integer("limit", 1, 1, max).unwrap_err(),
            format!("`limit` is too large (got 1e+26); it must be an integer from 1 to {max}")
        );
        assert_eq!(
            args.integer("small", 1, 1, 10).unwrap_err(),
            "`small` must be an integer from 1 to 10 (got 11)"
        );
        assert_eq!(
            args.integer("limit", 1, 1, 1000).unwrap_err(),
            "`limit` must be an integer from 1 to 1000 (got 1e+26)"
        );
        assert_eq!(
            args.integer("half", 1, 1, max).unwrap_err(),
            "`half` must be an integer of at least 1 (got 2.5)"
        );
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
