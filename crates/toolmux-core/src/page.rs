//! [`Page`]: the `offset` and `limit` arguments of every tool that answers a long list a page at
//! a time (`task_list`, `session_logs`, `list_sessions`), read one way.

use serde_json::{Map, Value};

/// Which part of a long list one answer holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Page {
    /// How many items come before the page.
    pub offset: u64,
    /// The most items the page holds.
    pub limit: usize,
}

impl Page {
    /// Reads `offset` (0 when absent) and `limit` (`default_limit` when absent) from a tool's
    /// arguments. A value that is not a whole number in its range is refused with an error
    /// naming the argument and the range, never read as absent: a tool's input schema says
    /// `integer`, but JSON Schema's `integer` admits `5.0` and `1e30` (and a number past
    /// `u64::MAX` arrives as a float), which a plain `as_u64` would silently turn into the
    /// first page.
    pub fn from_arguments(
        args: &Map<String, Value>,
        default_limit: usize,
        max_limit: usize,
    ) -> Result<Self, String> {
        let offset = match args.get("offset") {
            None | Some(Value::Null) => 0,
            Some(value) => whole(value, "offset", 0, u64::MAX)?,
        };
        let max = u64::try_from(max_limit).unwrap_or(u64::MAX);
        let limit = match args.get("limit") {
            None | Some(Value::Null) => default_limit,
            // Within `max_limit`, so it fits.
            Some(value) => usize::try_from(whole(value, "limit", 1, max)?).unwrap_or(max_limit),
        };
        Ok(Self { offset, limit })
    }

    /// `offset` as an index (a page past `usize::MAX` is past every list's end).
    pub fn skip(&self) -> usize {
        usize::try_from(self.offset).unwrap_or(usize::MAX)
    }
}

/// `value` as a whole number from `min` to `max`, or the error that names `name`.
fn whole(value: &Value, name: &str, min: u64, max: u64) -> Result<u64, String> {
    value
        .as_u64()
        .filter(|n| (min..=max).contains(n))
        .ok_or_else(|| format!("`{name}` must be a whole number from {min} to {max}, not {value}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn page(args: Value) -> Result<Page, String> {
        let Value::Object(args) = args else {
            panic!("arguments are an object")
        };
        Page::from_arguments(&args, 100, 1000)
    }

    #[test]
    fn absent_arguments_are_the_first_page_and_present_ones_are_read_exactly() {
        assert_eq!(
            page(json!({})),
            Ok(Page {
                offset: 0,
                limit: 100
            })
        );
        assert_eq!(
            page(json!({"offset": null, "limit": null})),
            Ok(Page {
                offset: 0,
                limit: 100
            })
        );
        assert_eq!(
            page(json!({"offset": u64::MAX, "limit": 1000})),
            Ok(Page {
                offset: u64::MAX,
                limit: 1000
            })
        );
        assert_eq!(
            page(json!({"offset": u64::MAX})).map(|p| p.skip()),
            Ok(usize::MAX)
        );
    }

    #[test]
    fn what_is_not_a_whole_number_in_range_is_refused_never_read_as_absent() {
        for (args, error) in [
            (
                json!({"limit": 0}),
                "`limit` must be a whole number from 1 to 1000, not 0",
            ),
            (
                json!({"limit": -1}),
                "`limit` must be a whole number from 1 to 1000, not -1",
            ),
            (
                json!({"limit": 1001}),
                "`limit` must be a whole number from 1 to 1000, not 1001",
            ),
            (
                json!({"limit": u64::MAX}),
                "`limit` must be a whole number from 1 to 1000, not 18446744073709551615",
            ),
            (
                json!({"limit": 5.0}),
                "`limit` must be a whole number from 1 to 1000, not 5.0",
            ),
            (
                json!({"limit": "5"}),
                "`limit` must be a whole number from 1 to 1000, not \"5\"",
            ),
            (
                json!({"offset": -1}),
                "`offset` must be a whole number from 0 to 18446744073709551615, not -1",
            ),
            (
                json!({"offset": 1e30}),
                "`offset` must be a whole number from 0 to 18446744073709551615, not 1e+30",
            ),
        ] {
            assert_eq!(page(args.clone()), Err(error.to_string()), "{args}");
        }
        // Past u64::MAX, JSON gives a float.
        let past: Value = serde_json::from_str(r#"{"offset": 18446744073709551616}"#).unwrap();
        assert_eq!(
            page(past),
            Err(
                "`offset` must be a whole number from 0 to 18446744073709551615, not 1.8446744073709552e+19"
                    .to_string()
            )
        );
    }
}
