//! The exec pack's section: `shell` (time limits, output cap, network and sandbox of `shell`
//! and of `code_execution`'s Python and bash, which run in the same sandbox).

use std::num::NonZeroU64;
use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How `shell` and `code_execution` run commands: their time limits, how much output they keep,
/// whether they may reach the network, and the sandbox.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(
    default,
    rename_all = "camelCase",
    deny_unknown_fields,
    expecting = "an object with `timeoutMs`, `maxTimeoutMs`, `maxOutputBytes`, `network`, \
                 `networkPerCall`, `sandbox` and `writablePaths`"
)]
pub struct ShellSettings {
    /// How long a command may run when the call sets no `timeoutMs`, in milliseconds; then its
    /// process group gets SIGTERM, and SIGKILL a moment later.
    pub timeout_ms: NonZeroU64,
    /// The longest `timeoutMs` a call may ask for, in milliseconds.
    pub max_timeout_ms: NonZeroU64,
    /// The most bytes kept of each of stdout and stderr: the first half and the last half,
    /// with the number of bytes dropped between them.
    pub max_output_bytes: NonZeroU64,
    /// Whether commands may reach the network. Off by default: each command runs in a network
    /// namespace of its own, with no interface but a downed loopback.
    pub network: bool,
    /// Whether a call's own `network: true` is honoured (it is refused otherwise).
    pub network_per_call: bool,
    /// The sandbox (Landlock: write only in the project root, the call's temp dir and
    /// `writablePaths`; and the network rule above). `false` runs commands with toolmux's own
    /// rights, for the systems where the sandbox gets in the way.
    pub sandbox: bool,
    /// More directories commands may write in, relative to the project root or absolute
    /// (a build cache such as `/home/me/.cargo`, say).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub writable_paths: Vec<PathBuf>,
}

impl Default for ShellSettings {
    fn default() -> Self {
        Self {
            timeout_ms: NonZeroU64::new(120_000).expect("not zero"),
            max_timeout_ms: NonZeroU64::new(600_000).expect("not zero"),
            max_output_bytes: NonZeroU64::new(32 * 1024).expect("not zero"),
            network: false,
            network_per_call: false,
            sandbox: true,
            writable_paths: Vec::new(),
        }
    }
}
