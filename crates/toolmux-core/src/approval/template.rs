//! A tool's configured approval message (`toolSettings.<name>.approvalMessage`) and how a
//! call's arguments are put into it.

use serde::Serialize;
use serde_json::Value;

/// The longest a value put into an approval message may be before it is cut.
const TEMPLATE_VALUE_CHARS: usize = 200;
/// The longest a rendered approval message may be before it is cut.
const TEMPLATE_MESSAGE_CHARS: usize = 2000;

/// A tool's configured approval message (`toolSettings.<name>.approvalMessage`): text with
/// `{{name}}` placeholders naming the call's arguments (`{{channel}}`, dotted paths into nested
/// ones: `{{target.name}}`, `{{items.0}}`). Checked when the configuration is read, so an
/// unclosed `{{` is a configuration error at its line; a name the call does not have stays
/// visible as written, since the template cannot know every tool's arguments.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApprovalTemplate(String);

/// Why an approval message template is not valid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the approval message has a `{{{{` at character {at} that no `}}}}` closes")]
pub struct TemplateError {
    /// Where the unclosed `{{` starts, counted in characters from 1.
    pub at: usize,
}

impl ApprovalTemplate {
    /// Checks a template.
    pub fn new(text: &str) -> Result<Self, TemplateError> {
        let mut rest = text;
        while let Some(open) = rest.find("{{") {
            let after = &rest[open + 2..];
            match after.find("}}") {
                Some(close) => rest = &after[close + 2..],
                None => {
                    let at = text.len() - rest.len() + open;
                    return Err(TemplateError {
                        at: text[..at].chars().count() + 1,
                    });
                }
            }
        }
        Ok(Self(text.to_string()))
    }

    /// The template as written.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The message for a call with `arguments`: each placeholder replaced by its value (a
    /// string as it is, anything else as JSON), each value and the whole message capped.
    pub fn render(&self, arguments: &Value) -> String {
        let mut out = String::new();
        let mut rest = self.0.as_str();
        while let Some(open) = rest.find("{{") {
            out.push_str(&rest[..open]);
            let after = &rest[open + 2..];
            let Some(close) = after.find("}}") else {
                // `new` refuses this; kept visible rather than dropped all the same.
                break;
            };
            let placeholder = &rest[open..open + 2 + close + 2];
            match lookup(arguments, after[..close].trim()) {
                Some(Value::String(text)) => out.push_str(&cap(text, TEMPLATE_VALUE_CHARS)),
                Some(value) => out.push_str(&cap(&value.to_string(), TEMPLATE_VALUE_CHARS)),
                None => out.push_str(placeholder),
            }
            rest = &after[close + 2..];
        }
        out.push_str(rest);
        cap(&out, TEMPLATE_MESSAGE_CHARS)
    }
}

/// The value at a dotted path (`a.b.0`) in the arguments.
fn lookup<'a>(arguments: &'a Value, path: &str) -> Option<&'a Value> {
    if path.is_empty() {
        return None;
    }
    path.split('.')
        .try_fold(arguments, |value, key| match value {
            Value::Object(map) => map.get(key),
            Value::Array(items) => key.parse::<usize>().ok().and_then(|i| items.get(i)),
            _ => None,
        })
}

/// `text` cut to `limit` characters, with an ellipsis when it was cut.
fn cap(text: &str, limit: usize) -> String {
    match text.char_indices().nth(limit) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_string(),
    }
}

impl Serialize for ApprovalTemplate {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> serde::Deserialize<'de> for ApprovalTemplate {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = std::borrow::Cow::<str>::deserialize(d)?;
        Self::new(&text).map_err(serde::de::Error::custom)
    }
}

impl schemars::JsonSchema for ApprovalTemplate {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "ApprovalTemplate".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "description": "The message a person sees when asked to approve a call of this tool, \
                            with `{{name}}` placeholders for its arguments (dotted paths into \
                            nested ones: `{{target.name}}`).",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_template_renders_arguments_by_dotted_path_and_leaves_unknown_names_visible() {
        let template = ApprovalTemplate::new(
            "Send {{text}} to {{ channel }} as {{user.name}} ({{user.roles.1}}, {{count}}, {{missing}})?",
        )
        .expect("valid");
        let arguments = json!({
            "text": "hi", "channel": "#general", "count": 3,
            "user": {"name": "ada", "roles": ["x", "admin"]}
        });
        assert_eq!(
            template.render(&arguments),
            "Send hi to #general as ada (admin, 3, {{missing}})?"
        );
        let long = "x".repeat(500);
        let rendered = template.render(&json!({"text": long}));
        assert!(
            rendered.contains(&format!("{}…", "x".repeat(200))),
            "{rendered}"
        );
        assert!(!rendered.contains(&"x".repeat(201)));
    }

    #[test]
    fn an_unclosed_placeholder_is_an_error_that_says_where() {
        assert_eq!(
            ApprovalTemplate::new("Send {{text}} to {{channel?"),
            Err(TemplateError { at: 18 })
        );
        assert!(ApprovalTemplate::new("no placeholders, }} alone is text").is_ok());
    }
}
