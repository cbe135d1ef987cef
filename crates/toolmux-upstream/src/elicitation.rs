//! Defaults in a server's form (SEP-1034): when toolmux answers an upstream server's
//! `elicitation/create` — a person in the chat, the web app, the terminal or over REST, or a
//! downstream MCP client toolmux relays the form to — a field the answer leaves out (or sends
//! as `null`) gets the `default` its schema gives. Applied here, on the way back to the server,
//! because every channel's answer passes through this one place.

use serde_json::{Map, Value};

/// `answer` (an elicitation result) with the defaults of `schema` (the request's
/// `requestedSchema`) filled into an accepted answer's `content`; any other answer as it is.
pub(crate) fn with_defaults(schema: Option<&Value>, mut answer: Value) -> Value {
    let accepted = answer.get("action").and_then(Value::as_str) == Some("accept");
    let (Some(schema), true) = (schema, accepted) else {
        return answer;
    };
    let Some(object) = answer.as_object_mut() else {
        return answer;
    };
    let content = object
        .entry("content")
        .or_insert_with(|| Value::Object(Map::new()));
    if content.is_null() {
        *content = Value::Object(Map::new());
    }
    if let Some(content) = content.as_object_mut() {
        toolmux_core::fill_form_defaults(schema, content);
    }
    answer
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::with_defaults;

    fn schema() -> serde_json::Value {
        json!({"type": "object", "properties": {
            "name": {"type": "string", "default": "John Doe"},
            "age": {"type": "integer", "default": 30},
            "score": {"type": "number", "default": 95.5},
            "status": {"type": "string", "enum": ["active", "inactive"], "default": "active"},
            "verified": {"type": "boolean", "default": true},
            "note": {"type": "string"}
        }})
    }

    #[test]
    fn fields_left_out_of_an_accepted_answer_get_their_defaults() {
        let answer = json!({"action": "accept", "content": {"name": "Ada", "age": null}});
        assert_eq!(
            with_defaults(Some(&schema()), answer),
            json!({"action": "accept", "content": {
                "name": "Ada", "age": 30, "score": 95.5, "status": "active", "verified": true
            }})
        );
    }

    #[test]
    fn an_accepted_answer_without_content_gets_every_default() {
        let filled = with_defaults(Some(&schema()), json!({"action": "accept"}));
        assert_eq!(filled["content"]["verified"], true);
        assert_eq!(filled["content"]["status"], "active");
        assert!(
            filled["content"].get("note").is_none(),
            "no default, no value"
        );
    }

    #[test]
    fn a_declined_or_cancelled_answer_is_left_alone() {
        for action in ["decline", "cancel"] {
            let answer = json!({"action": action});
            assert_eq!(with_defaults(Some(&schema()), answer.clone()), answer);
        }
        let answer = json!({"action": "accept", "content": {"x": 1}});
        assert_eq!(with_defaults(None, answer.clone()), answer);
    }
}
