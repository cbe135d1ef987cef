//! Which argument keys hold secrets, and hiding their values before a call is logged.
//!
//! The log is read by people and pasted into issues, so a value goes only by its key's name:
//! the rule errs towards hiding (a hidden count costs a little debugging; a leaked token costs
//! a rotation), while keeping the common words that merely *contain* a secret-ish word
//! (`author`, `keyword`, `monkey`, `tokenizer`, `max_tokens`) readable.
//!
//! Which keys are secret is the one judgement of what is a secret, [`toolmux_core::is_secret_name`]
//! (its documentation has the rule), which also decides what toolmux keeps from children.
//!
//! The value of a secret key is replaced by `"[redacted]"` whatever its type (a whole nested
//! object or array goes), except `null`, which reveals nothing and shows the secret was absent.
//! Objects and arrays under other keys are searched recursively.

use serde_json::Value;

/// What a secret value is replaced with.
pub const REDACTED: &str = "[redacted]";

/// Replaces, in place, the value of every secret key in `value`, at any depth.
pub fn redact(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (key, item) in map.iter_mut() {
                if toolmux_core::is_secret_name(key) {
                    if !item.is_null() {
                        *item = Value::String(REDACTED.to_string());
                    }
                } else {
                    redact(item);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(redact),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn redaction_reaches_nested_objects_and_arrays_and_keeps_null() {
        let mut args = json!({
            "query": "select 1",
            "password": "hunter2",
            "headers": {"Authorization": "Bearer abc", "Accept": "text/plain"},
            "accounts": [{"user": "ann", "apiKey": "k1"}, {"user": "bob", "api_key": null}],
            "credentials": {"user": "ann", "pass": "p"},
            "token": 12345,
            "max_tokens": 100
        });
        redact(&mut args);
        assert_eq!(
            args,
            json!({
                "query": "select 1",
                "password": REDACTED,
                "headers": {"Authorization": REDACTED, "Accept": "text/plain"},
                "accounts": [{"user": "ann", "apiKey": REDACTED}, {"user": "bob", "api_key": null}],
                "credentials": REDACTED,
                "token": REDACTED,
                "max_tokens": 100
            })
        );
    }
}
