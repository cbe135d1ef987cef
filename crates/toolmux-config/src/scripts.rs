//! The `tools` section: user-defined script tools. Each is a command that takes the call's
//! arguments as JSON on stdin and answers on stdout.

use std::collections::BTreeMap;
use std::num::NonZeroU64;
use std::path::PathBuf;

use schemars::JsonSchema;
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;
use toolmux_core::Policy;

use crate::model::RateLimitSetting;

/// One script tool. A call runs `command` with the arguments as JSON on stdin; stdout is the
/// result (a JSON object becomes structured content, anything else text); a non-zero exit is an
/// error result carrying the end of stderr.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(
    rename_all = "camelCase",
    deny_unknown_fields,
    expecting = "an object with `description`, `command` and optionally `inputSchema`, \
                 `outputSchema`, `cwd`, `env`, `inheritEnv`, `timeoutMs`, `parallel`, `policy`, \
                 `rateLimit`, `_internal`"
)]
pub struct ScriptTool {
    /// What the tool does, for the model that chooses it.
    pub description: String,
    /// JSON Schema of the arguments (default: any object).
    #[serde(default = "any_object", skip_serializing_if = "is_any_object")]
    pub input_schema: Value,
    /// JSON Schema of the structured result, when the command prints a JSON object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// The program and its arguments (`["python3", "scripts/weather.py"]`); no shell is
    /// involved. A relative program path is taken from `cwd`.
    #[serde(deserialize_with = "non_empty_argv")]
    #[schemars(length(min = 1))]
    pub command: Vec<String>,
    /// The working directory, relative to the project root (default: the root).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<PathBuf>,
    /// Extra environment variables (values may use `${VAR}`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// `true` hands the command toolmux's whole environment. By default it gets only the
    /// basics a program needs (`PATH`, `HOME`, `USER`, locale, temp dir …) plus `env`, so
    /// toolmux's own API keys and provider keys never reach a script that was not given them.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub inherit_env: bool,
    /// How long a call may run, in milliseconds; the whole process group is killed after it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<NonZeroU64>,
    /// The tool may run concurrently with other parallel tools of a batch.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub parallel: bool,
    /// The tool's policy, unless a rule in `policies.tools` names it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<Policy>,
    /// At most this many calls per period.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_limit: Option<RateLimitSetting>,
    /// `true` makes it internal, as `_meta._internal` makes an MCP server's tool (seed 003's
    /// field, under its name): never offered to a model or an MCP client, callable by trusted
    /// callers only.
    #[serde(
        default,
        rename = "_internal",
        skip_serializing_if = "std::ops::Not::not"
    )]
    pub internal: bool,
}

fn any_object() -> Value {
    serde_json::json!({"type": "object"})
}

fn is_any_object(value: &Value) -> bool {
    *value == any_object()
}

fn non_empty_argv<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    let argv = Vec::<String>::deserialize(d)?;
    match argv.first() {
        None => Err(D::Error::custom(
            "`command` needs at least the program to run (`[\"python3\", \"tool.py\"]`)",
        )),
        Some(program) if program.trim().is_empty() => Err(D::Error::custom(
            "`command[0]`, the program to run, is empty",
        )),
        Some(_) => Ok(argv),
    }
}

/// The source id under which the tools of the `tools` section are registered, for every crate
/// that needs to recognise them (the script source itself, the API's registry writes).
pub const SCRIPT_SOURCE_ID: &str = "scripts";
