//! Field types that check themselves while the file is read, so that a bad glob, tool name or
//! period is reported at its line and column like any other mistake, not later by the hub.

use std::borrow::Cow;
use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::time::Duration;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use toolmux_core::{NamePattern, PatternError, parse_duration};

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

impl fmt::Display for ToolPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for ToolPattern {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ToolPattern {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = Cow::<str>::deserialize(d)?;
        Self::new(&text).map_err(D::Error::custom)
    }
}

impl JsonSchema for ToolPattern {
    fn schema_name() -> Cow<'static, str> {
        "ToolPattern".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "minLength": 1,
            "description": "A tool name (`grep`) or a glob over tool names with `*`, `?` and \
                            `[...]` (`github__*`).",
        })
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

impl fmt::Display for ToolName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Serialize for ToolName {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for ToolName {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = Cow::<str>::deserialize(d)?;
        Self::new(&text).map_err(D::Error::custom)
    }
}

impl JsonSchema for ToolName {
    fn schema_name() -> Cow<'static, str> {
        "ToolName".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "pattern": TOOL_NAME_PATTERN,
            "description": "The exact registry name of a tool.",
        })
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

impl Serialize for Period {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.text)
    }
}

impl<'de> Deserialize<'de> for Period {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = Cow::<str>::deserialize(d)?;
        Self::new(&text).map_err(D::Error::custom)
    }
}

impl JsonSchema for Period {
    fn schema_name() -> Cow<'static, str> {
        "Period".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "pattern": r"^(\s*[0-9]+\s*(ms|s|m|h|d)\s*|second|minute|hour|day)$",
            "examples": ["30s", "1m", "1h", "minute"],
            "description": "A whole number and a unit (ms, s, m, h or d), or one of `second`, `minute`, `hour`, `day`.",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_names_keep_to_the_registry_alphabet() {
        assert!(ToolName::new("github__create_issue").is_ok());
        assert!(ToolName::new("a-b").is_ok());
        assert!(ToolName::new("").is_err());
        assert!(ToolName::new("github__*").is_err());
        assert!(ToolName::new(&"x".repeat(65)).is_err());
    }

    #[test]
    fn periods_are_positive_and_kept_as_written() {
        let p = Period::new("1m").expect("valid");
        assert_eq!(p.duration(), Duration::from_secs(60));
        assert_eq!(p.as_str(), "1m");
        assert!(Period::new("0s").is_err());
        let soon = Period::new("soon").expect_err("not a period");
        assert!(
            soon.ends_with(", or one of `second`, `minute`, `hour`, `day`"),
            "{soon}"
        );
        for (word, seconds) in [
            ("second", 1),
            ("minute", 60),
            ("hour", 3600),
            ("day", 86_400),
        ] {
            let p = Period::new(word).expect("a word period");
            assert_eq!(p.duration(), Duration::from_secs(seconds), "{word}");
            assert_eq!(p.as_str(), word);
        }
    }

    #[test]
    fn empty_pattern_is_rejected() {
        assert!(ToolPattern::new("").is_err());
        assert!(ToolPattern::new("a[").is_err());
        assert!(ToolPattern::new("github__*").is_ok());
    }
}
