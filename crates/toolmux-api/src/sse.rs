//! Server-sent events, as every stream of the REST API writes them (approvals, logs, sessions).

use axum::http::{HeaderValue, header};
use axum::response::Response;
use futures::{Stream, StreamExt};
use serde::Serialize;

/// A response that streams `frames` (each a whole event: [`frame`], or a comment) as
/// server-sent events, with the headers every stream sends: not cached, and not buffered by a
/// proxy in front (`x-accel-buffering`), so each event leaves when it is written.
pub(crate) fn response(frames: impl Stream<Item = String> + Send + 'static) -> Response {
    let body = frames.map(Ok::<_, std::convert::Infallible>);
    let mut response = Response::new(axum::body::Body::from_stream(body));
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
}

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
