//! The `runners` section: coding agents (Claude Code, Codex, Gemini CLI, aider …) that
//! `run_session` may start, by name. An entry with a built-in runner's name changes that runner
//! (its command, arguments, model …); any other name defines a runner of its own.

use std::collections::BTreeMap;
use std::num::NonZeroU64;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How toolmux talks to a runner.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum RunnerProtocol {
    /// The runner's own non-interactive mode: the prompt on its command line, its output read
    /// line by line (JSON lines parsed where it prints them).
    Shell,
    /// The Agent Client Protocol (JSON-RPC over stdio): toolmux is the client, and the agent's
    /// permission requests wait in toolmux's approval queue.
    Acp,
}

/// One runner: how to start it and what it gets. Every field is optional for a built-in
/// runner's name (what is set replaces the built-in value); a new runner needs `command`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(
    default,
    rename_all = "camelCase",
    deny_unknown_fields,
    expecting = "an object with `command`, `args`, `env`, `acceptEnv`, `model`, `modelFlag`, \
                 `protocol`, `versionArgs`, `install`, `timeoutMs`, `inheritEnv` and `enabled`"
)]
pub struct RunnerSettings {
    /// The program (looked up on `PATH` unless it is a path).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// Its arguments. `{prompt}` is replaced by the prompt (as one argument, or inside one);
    /// with no `{prompt}` anywhere the prompt is passed last. `{model}` is replaced by `model`.
    /// A prompt that starts with `-` is refused where it would be an argument of its own with
    /// no `--` before it (the program would read it as an option): put `--` before `{prompt}`,
    /// or stick it to its option (`--message={prompt}`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub args: Option<Vec<String>>,
    /// Environment variables for the runner (use `${VAR}` references for secrets: they are
    /// expanded when the file is read and never written to a session's record).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// The names of the variables a `run_session` call may set for this runner (its `env`
    /// argument), besides the few every runner accepts (`CI`, `NO_COLOR`, `FORCE_COLOR`). A
    /// call that sets any other is refused: the caller is a model, and a variable such as
    /// `NODE_OPTIONS` or `LESSOPEN` changes what runs. Exact names, case included.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub accept_env: Vec<String>,
    /// The model to ask for, passed with `modelFlag` (when the arguments have no `{model}`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The flag that names the model (`--model` for most runners).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_flag: Option<String>,
    /// `shell` (default) or `acp`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub protocol: Option<RunnerProtocol>,
    /// The arguments that print the version (default `["--version"]`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version_args: Option<Vec<String>>,
    /// How to install it, shown when it is not found.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub install: Option<String>,
    /// How long a session may run when the call sets no limit, in milliseconds (default one
    /// hour); then its process group gets SIGTERM, and SIGKILL a moment later.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<NonZeroU64>,
    /// `true` hands the runner toolmux's whole environment (its provider keys too); by default
    /// it gets the basics (`PATH`, `HOME`, locale …) plus `env`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inherit_env: Option<bool>,
    /// `false` hides the runner (a built-in one too).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
}
