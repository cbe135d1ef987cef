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
                 `networkPerCall`, `sandbox`, `requireSandbox`, `writablePaths` and `env`"
)]
pub struct ShellSettings {
    /// How long a command may run when the call sets no `timeoutMs`, in milliseconds; then its
    /// process group gets SIGTERM, and SIGKILL a moment later. Above `maxTimeoutMs` it is
    /// lowered to it.
    pub timeout_ms: NonZeroU64,
    /// The longest `timeoutMs` a call may ask for, in milliseconds: no call runs longer.
    pub max_timeout_ms: NonZeroU64,
    /// The most bytes kept of each of stdout and stderr: the first half and the last half,
    /// with the number of bytes dropped between them.
    pub max_output_bytes: NonZeroU64,
    /// Whether commands may reach the network. Off by default: each command runs in a network
    /// namespace of its own, with no interface but a downed loopback.
    pub network: bool,
    /// Whether a call's own `network: true` is honoured (it is refused otherwise).
    pub network_per_call: bool,
    /// The sandbox: no capabilities (a user namespace), write only in the project root, the
    /// call's temp dir and `writablePaths` (Landlock), never in `.toolmux/`, `.git/` or the
    /// registries (read-only in a mount namespace), toolmux's socket out of reach, SysV IPC of
    /// its own, and the network rule above. `false` runs commands with toolmux's own rights,
    /// for the systems where the sandbox gets in the way.
    pub sandbox: bool,
    /// With the sandbox on, refuse to run a command when this system cannot give all of it
    /// (no Landlock, no user namespaces) rather than run it with what is available. On by
    /// default: a sandbox that silently shrinks is worse than a refusal that names what is
    /// missing; `false` runs with what is available, and each result says what that was.
    pub require_sandbox: bool,
    /// More directories commands may write in, relative to the project root or absolute
    /// (a build cache such as `/home/me/.cargo`, say). `.git` listed here lets commands write
    /// the repository (`git commit`); `.toolmux` stays read-only whatever is listed.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub writable_paths: Vec<PathBuf>,
    /// Names of toolmux's environment variables commands get besides `PATH`, `HOME`, `USER`,
    /// `SHELL`, `TERM`, `LOGNAME`, the locale (`LANG`, `LC_*`), `TZ` and `TMPDIR`, which every
    /// child gets (`CARGO_HOME`, `VIRTUAL_ENV`, say). Nothing else of toolmux's environment —
    /// API keys, tokens, database URLs — reaches a command unless it is named here.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<String>,
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
            require_sandbox: true,
            writable_paths: Vec::new(),
            env: Vec::new(),
        }
    }
}
