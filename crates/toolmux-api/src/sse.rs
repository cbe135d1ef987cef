//! Server-sent events, as every stream of the REST API writes them (approvals, logs, sessions).

use serde::Serialize;

/// One event: its name, and its data as one line of JSON. A value that cannot be written as
/// JSON (only a map with keys that are not strings could be) is logged and sent as `null`, so
/// that one bad value does not end a stream others are reading.
pub(crate) fn frame(event: &str, data: &impl Serialize) -> String {
    let data = serde_json::to_string(data).unwrap_or_else(|e| {
        tracing::error!(error = %e, event, "an event's data cannot be written as JSON");
        "null".to_string()
    });
    format!("event: {event}\ndata: {data}\n\n")
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::frame;

    #[test]
    fn an_event_is_its_name_and_one_line_of_json() {
        assert_eq!(
            frame("entry", &serde_json::json!({"a": "two\nlines"})),
            "event: entry\ndata: {\"a\":\"two\\nlines\"}\n\n"
        );
    }

    #[test]
    fn data_that_is_not_json_is_sent_as_null() {
        let mut keyed_by_pairs = BTreeMap::new();
        keyed_by_pairs.insert((1, 2), "x");
        assert_eq!(
            frame("entry", &keyed_by_pairs),
            "event: entry\ndata: null\n\n"
        );
    }
}
