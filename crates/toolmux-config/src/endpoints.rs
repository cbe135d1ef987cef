//! The `endpoints` section: named views of the one registry, each served at `/mcp/<name>`,
//! through `?endpoint=<name>` on the REST API and by `toolmux mcp --endpoint <name>`.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::Arc;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize};
use toolmux_core::{Endpoint, EndpointFilter, Endpoints};

use crate::fields::ToolPattern;

/// The most endpoints one configuration may define: each is a door of the HTTP server, and
/// more than this is a mistake (a generated file) rather than a deployment.
pub const MAX_ENDPOINTS: usize = 1000;

/// The longest endpoint name.
const MAX_NAME_CHARS: usize = 64;

/// One endpoint: which tools, prompts and resources it serves, what its clients are told, and
/// whether it offers code mode.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(
    default,
    rename_all = "camelCase",
    deny_unknown_fields,
    expecting = "an object with `tools`, `exclude`, `servers`, `instructions`, `codeMode` and \
                 `discovery`"
)]
pub struct EndpointSettings {
    /// When not empty, only tools, prompts and resources whose registry name matches one of
    /// these patterns are served (`github__*`, `grep`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<ToolPattern>,
    /// What is not served, by registry name pattern.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub exclude: Vec<ToolPattern>,
    /// When not empty, only these sources' tools, prompts and resources are served (an
    /// upstream server's name, `workspace`, `scripts` …).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub servers: Vec<String>,
    /// What the endpoint's MCP clients are told in `initialize` (its `instructions`), in place
    /// of toolmux's own summary.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// Offer only `run_code` and `search_tools`; scripts reach the rest of what the endpoint
    /// serves, and nothing else.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub code_mode: bool,
    /// Discovery mode, for catalogs too big to send: offer only `search_tools` (ranked search
    /// by what a tool does), `describe_tool` (full schemas) and `call_tool` (call by name,
    /// through the same policies and approvals); they reach the rest of what it serves.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub discovery: bool,
}

/// An endpoint's name, the last segment of its URL (`/mcp/<name>`): 1 to 64 ASCII letters,
/// digits, `-` and `_`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct EndpointName(String);

impl EndpointName {
    /// Checks a name. The error is the message a user sees.
    pub fn new(text: &str) -> Result<Self, String> {
        let fits = (1..=MAX_NAME_CHARS).contains(&text.len())
            && text
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        if !fits {
            let shown: String = text.chars().take(MAX_NAME_CHARS + 1).collect();
            return Err(format!(
                "invalid endpoint name `{}`: an endpoint name is 1 to {MAX_NAME_CHARS} ASCII \
                 letters, digits, `-` and `_` (it is a segment of the endpoint's URL)",
                shown.escape_debug()
            ));
        }
        Ok(Self(text.to_string()))
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for EndpointName {
    type Error = String;

    fn try_from(text: String) -> Result<Self, String> {
        Self::new(&text)
    }
}

impl From<EndpointName> for String {
    fn from(name: EndpointName) -> Self {
        name.0
    }
}

impl JsonSchema for EndpointName {
    fn schema_name() -> Cow<'static, str> {
        "EndpointName".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "pattern": "^[A-Za-z0-9_-]{1,64}$",
            "description": "An endpoint's name: the last segment of its URL, /mcp/<name>.",
        })
    }
}

/// The `endpoints` section, at most [`MAX_ENDPOINTS`] of them.
pub(crate) fn bounded<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<BTreeMap<EndpointName, EndpointSettings>, D::Error> {
    let endpoints = BTreeMap::<EndpointName, EndpointSettings>::deserialize(d)?;
    if endpoints.len() > MAX_ENDPOINTS {
        return Err(D::Error::custom(format!(
            "{} endpoints are configured; at most {MAX_ENDPOINTS} are allowed",
            endpoints.len()
        )));
    }
    Ok(endpoints)
}

/// The `endpoints` section's schema: its entries, and their number's cap.
pub(crate) fn schema(generator: &mut SchemaGenerator) -> Schema {
    let entry = generator.subschema_for::<EndpointSettings>();
    json_schema!({
        "type": "object",
        "propertyNames": {"pattern": "^[A-Za-z0-9_-]{1,64}$"},
        "additionalProperties": entry,
        "maxProperties": MAX_ENDPOINTS,
    })
}

/// The endpoints as the hub keeps them.
pub(crate) fn hub_endpoints(section: &BTreeMap<EndpointName, EndpointSettings>) -> Endpoints {
    let patterns = |list: &[ToolPattern]| list.iter().map(|p| p.pattern().clone()).collect();
    section
        .iter()
        .map(|(name, settings)| {
            let filter = EndpointFilter {
                tools: patterns(&settings.tools),
                exclude: patterns(&settings.exclude),
                servers: settings.servers.clone(),
                code_mode: settings.code_mode,
                discovery: settings.discovery,
            };
            let endpoint = Endpoint::new(name.as_str(), filter, settings.instructions.clone());
            (name.as_str().to_string(), Arc::new(endpoint))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_is_a_url_segment_and_nothing_else() {
        for good in ["review", "ci-bot", "A_1", &"x".repeat(64)] {
            assert_eq!(EndpointName::new(good).map(|n| n.0), Ok(good.to_string()));
        }
        let refusal = |shown: &str| {
            format!(
                "invalid endpoint name `{shown}`: an endpoint name is 1 to 64 ASCII letters, \
                 digits, `-` and `_` (it is a segment of the endpoint's URL)"
            )
        };
        for bad in ["", "a/b", "..", ".", "a b", "é"] {
            assert_eq!(EndpointName::new(bad), Err(refusal(bad)), "{bad}");
        }
        // A huge name is named by its start only.
        let huge = "y".repeat(100_000);
        assert_eq!(EndpointName::new(&huge), Err(refusal(&"y".repeat(65))));
    }
}
