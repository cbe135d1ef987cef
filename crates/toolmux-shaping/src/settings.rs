//! What the configuration says about shaping one tool's results (`toolSettings.<name>.output`).

use std::num::NonZeroUsize;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::projection::Projection;

/// How a tool's results are shaped before any caller sees them: a jq `projection` applied to
/// the structured content (or to a JSON text result) first, then a cap of `maxTokens` (cl100k,
/// as toolmux counts tokens everywhere) or `maxBytes`, keeping the `head`, the `tail` or both
/// (`headTail`). A result over the cap says exactly what was cut and is kept whole for an hour
/// as `toolmux://results/<id>`, readable with `resources/read`, `GET /api/results/{id}` or the
/// `result_read` tool.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(
    rename_all = "camelCase",
    try_from = "OutputFields",
    into = "OutputFields",
    expecting = "an object with `maxTokens` or `maxBytes`, `keep` and `projection`"
)]
pub struct OutputSettings {
    /// The cap in cl100k tokens.
    pub max_tokens: Option<NonZeroUsize>,
    /// The cap in bytes of text.
    pub max_bytes: Option<NonZeroUsize>,
    /// Which part of a result over the cap is kept.
    pub keep: Keep,
    /// The jq expression applied first.
    pub projection: Option<Projection>,
}

/// [`OutputSettings`] as written, before the one rule serde cannot say: one cap, not two.
#[derive(Clone, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct OutputFields {
    /// The cap in cl100k tokens (as toolmux counts tokens everywhere).
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<NonZeroUsize>,
    /// The cap in bytes of text.
    #[serde(skip_serializing_if = "Option::is_none")]
    max_bytes: Option<NonZeroUsize>,
    /// Which part of a result over the cap is kept (`head` by default).
    #[serde(default, skip_serializing_if = "Keep::is_head")]
    keep: Keep,
    /// A jq expression applied to the structured content, or to a text result that is JSON,
    /// before the cap (`.items[:20] | map({id, title})`). The tool's output schema is checked
    /// against the result before it.
    #[serde(skip_serializing_if = "Option::is_none")]
    projection: Option<Projection>,
}

impl TryFrom<OutputFields> for OutputSettings {
    type Error = String;

    fn try_from(f: OutputFields) -> Result<Self, String> {
        if f.max_tokens.is_some() && f.max_bytes.is_some() {
            return Err("set `maxTokens` or `maxBytes`, not both".to_string());
        }
        Ok(Self {
            max_tokens: f.max_tokens,
            max_bytes: f.max_bytes,
            keep: f.keep,
            projection: f.projection,
        })
    }
}

impl From<OutputSettings> for OutputFields {
    fn from(s: OutputSettings) -> Self {
        Self {
            max_tokens: s.max_tokens,
            max_bytes: s.max_bytes,
            keep: s.keep,
            projection: s.projection,
        }
    }
}

impl OutputSettings {
    /// The cap these settings set, if any.
    pub fn cap(&self) -> Option<Cap> {
        let limit = match (self.max_tokens, self.max_bytes) {
            (Some(tokens), _) => Limit::Tokens(tokens.get()),
            (None, Some(bytes)) => Limit::Bytes(bytes.get()),
            (None, None) => return None,
        };
        Some(Cap {
            limit,
            keep: self.keep,
        })
    }
}

/// Which part of a result over its cap is kept.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum Keep {
    /// The beginning.
    #[default]
    Head,
    /// The end (a log's last lines).
    Tail,
    /// Half the cap at the beginning, half at the end.
    HeadTail,
}

impl Keep {
    fn is_head(&self) -> bool {
        *self == Keep::Head
    }
}

/// A cap: how much of a result's text a caller is shown, and which part.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cap {
    /// How much.
    pub limit: Limit,
    /// Which part.
    pub keep: Keep,
}

/// A size in the unit a cap counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limit {
    /// cl100k tokens.
    Tokens(usize),
    /// Bytes of UTF-8 text.
    Bytes(usize),
}

impl Limit {
    /// The most bytes a text within the limit can have: a token is at least one byte, so a
    /// text of no more bytes than the limit is within it without counting.
    pub fn bytes_bound(self) -> usize {
        match self {
            Limit::Tokens(n) | Limit::Bytes(n) => n,
        }
    }

    /// Half of it (at least one), for each end of `headTail`.
    pub(crate) fn half(self) -> Limit {
        match self {
            Limit::Tokens(n) => Limit::Tokens((n / 2).max(1)),
            Limit::Bytes(n) => Limit::Bytes((n / 2).max(1)),
        }
    }
}

impl std::fmt::Display for Limit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Limit::Tokens(n) => write!(f, "{n} tokens"),
            Limit::Bytes(n) => write!(f, "{n} bytes"),
        }
    }
}
