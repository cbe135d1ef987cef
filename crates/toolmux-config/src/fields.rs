//! Field types that check themselves while the file is read, so that a bad glob, tool name or
//! period is reported at its line and column like any other mistake, not later by the hub.

use std::cmp::Ordering;
use std::hash::{Hash, Hasher};
use std::time::Duration;

use toolmux_core::{NamePattern, PatternError, parse_duration};

/// The serde and schemars forms of a type kept as checked text: written as its `as_str()`, read
/// through its `new` (so a bad value is refused with `new`'s message at its line and column), its
/// JSON Schema the given object, named after the type. `Display` is the text as written.
macro_rules! checked_text {
    ($($ty:ident => $schema:tt)*) => {$(
        impl std::fmt::Display for $ty {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl serde::Serialize for $ty {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> serde::Deserialize<'de> for $ty {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let text = <std::borrow::Cow<'de, str> as serde::Deserialize>::deserialize(d)?;
                Self::new(&text).map_err(<D::Error as serde::de::Error>::custom)
            }
        }

        impl schemars::JsonSchema for $ty {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                stringify!($ty).into()
            }

            fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
                schemars::json_schema!($schema)
            }
        }
    )*};
}

/// A tool-name pattern: a plain name (`grep`) or a glob with `*`, `?` and `[...]`
/// (`github__*`), checked with core's [`NamePattern`] as it is read.
#[derive(Clone, Debug)]
pub struct ToolPattern(NamePattern);

impl ToolPattern {
    /// Parses a pattern.
    pub fn new(text: &str) -> Result<Self, PatternError> {
        if text.is_empty() {
            return Err(PatternError {
                pattern: String::new(),
                reason: "a pattern cannot be empty".to_string(),
            });
        }
        NamePattern::new(text).map(Self)
    }

    /// The compiled pattern, as core uses it.
    pub fn pattern(&self) -> &NamePattern {
        &self.0
    }

    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        self.0.as_str()
    }
}

impl PartialEq for ToolPattern {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for ToolPattern {}

impl PartialOrd for ToolPattern {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for ToolPattern {
    fn cmp(&self, other: &Self) -> Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl Hash for ToolPattern {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_str().hash(state);
    }
}

checked_text! {
    ToolPattern => {
        "type": "string",
        "minLength": 1,
        "description": "A tool name (`grep`) or a glob over tool names with `*`, `?` and \
                        `[...]` (`github__*`).",
    }
}

/// The exact registry name of one tool (`grep`, `github__create_issue`): 1 to 64 letters,
/// digits, `_` or `-`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ToolName(String);

/// The characters and length every registry name keeps to (see DESIGN: names).
const TOOL_NAME_PATTERN: &str = "^[A-Za-z0-9_-]{1,64}$";

impl ToolName {
    /// Checks a name. The error is the message a user sees.
    pub fn new(text: &str) -> Result<Self, String> {
        let valid = (1..=64).contains(&text.len())
            && text
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if valid {
            Ok(Self(text.to_string()))
        } else {
            Err(format!(
                "invalid tool name `{text}`: a tool name is 1 to 64 letters, digits, `_` or `-` \
                 (patterns belong in `policies.tools` and `filters`)"
            ))
        }
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

checked_text! {
    ToolName => {
        "type": "string",
        "pattern": TOOL_NAME_PATTERN,
        "description": "The exact registry name of a tool.",
    }
}

/// A positive duration written as a whole number and a unit: `"500ms"`, `"30s"`, `"1m"`,
/// `"2h"`, `"1d"`, or one of the words other tools' rate limits use, `"second"`, `"minute"`,
/// `"hour"`, `"day"` (one of each). Kept as written, so that saving a file does not rewrite it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Period {
    text: String,
    duration: Duration,
}

impl Period {
    /// Parses a period; zero is rejected. The error is the message a user sees.
    pub fn new(text: &str) -> Result<Self, String> {
        let word = match text {
            "second" => Some(Duration::from_secs(1)),
            "minute" => Some(Duration::from_secs(60)),
            "hour" => Some(Duration::from_secs(3600)),
            "day" => Some(Duration::from_secs(86_400)),
            _ => None,
        };
        let duration = match word {
            Some(duration) => duration,
            None => parse_duration(text)
                .map_err(|e| format!("{e}, or one of `second`, `minute`, `hour`, `day`"))?,
        };
        if duration.is_zero() {
            return Err(format!(
                "invalid duration `{text}`: a period must be longer than zero"
            ));
        }
        Ok(Self {
            text: text.to_string(),
            duration,
        })
    }

    /// The duration.
    pub fn duration(&self) -> Duration {
        self.duration
    }

    /// The period as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }
}

checked_text! {
    Period => {
        "type": "string",
        "pattern": r"^(\s*[0-9]+\s*(ms|s|m|h|d)\s*|second|minute|hour|day)$",
        "examples": ["30s", "1m", "1h", "minute"],
        "description": "A whole number and a unit (ms, s, m, h or d), or one of `second`, `minute`, `hour`, `day`.",
    }
}
