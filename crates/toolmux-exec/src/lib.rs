//! The built-in `exec` pack: `shell`, which runs a command line, and `code_execution`, which
//! runs a snippet of Python, bash or TypeScript — the tools that let an agent act on the
//! machine, so the ones that most need a fence.
//!
//! - Every call asks a person first by default (the tools are annotated destructive), and the
//!   approval shows the command or the code ([`Source::preview`]).
//! - A command runs in a directory inside the project root (resolved by the workspace's
//!   [`ProjectRoot`] rules), in the sandbox of [`sandbox`] (no capabilities; Landlock: write
//!   only in the root and a per-call temp dir, never in `.toolmux/`, `.git/`, the registries;
//!   toolmux's socket hidden; no network unless the configuration allows it), with only the
//!   allowlisted part of toolmux's environment and the variables `shell.env` names
//!   ([`run::passed_env`]).
//! - It runs under a time limit, in a process group of its own that is stopped when the call
//!   ends, times out or is cancelled — with whatever it left running ([`run`]); its output is
//!   kept under a cap, head and tail ([`output`]).
//! - TypeScript is not run here: it goes to code mode's `run_code` through the hub, with the
//!   caller's context, so there is one TypeScript sandbox and its calls keep their policies.
//!
//! What the sandbox does not defend: reading (a command may read anything toolmux may, so the
//! person approving it should read it), a protected path that does not exist yet (the result
//! names it; one that a link to nothing leads to refuses the call instead, see
//! [`DanglingLink`]), and a command that is allowed the network.

pub mod code;
pub mod output;
pub mod run;
pub mod sandbox;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use toolmux_core::{
    Source, SourceCall, SourceError, SourceKind, ToolAnnotations, ToolDescriptor, ToolErrorKind,
    ToolResult, WeakHub, input_schema, parse_arguments,
};
use toolmux_workspace::ProjectRoot;

pub use output::{Capture, Captured};
pub use run::{CommandSpec, Finished, RunError, run};
pub use sandbox::{
    DanglingLink, Landlock, Namespaces, Network, Prepared, Protected, ProtectedPaths,
    SandboxPolicy, SandboxReport,
};

/// The id of the pack's source in the registry.
pub const SOURCE_ID: &str = "exec";

/// The name of the command tool.
pub const SHELL: &str = "shell";

/// The name of the snippet tool (seed 004's name).
pub const CODE_EXECUTION: &str = "code_execution";

/// How commands run (`shell` in the configuration).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExecSettings {
    /// The time limit of a call that sets none.
    pub timeout: Duration,
    /// The longest time limit a call may ask for.
    pub max_timeout: Duration,
    /// The most bytes kept of each of stdout and stderr.
    pub max_output_bytes: usize,
    /// Whether commands reach the network by default.
    pub network: bool,
    /// Whether a call's `network: true` is honoured.
    pub network_per_call: bool,
    /// Whether the sandbox is on.
    pub sandbox: bool,
    /// Whether a call is refused when the sandbox is on but this system cannot give all of it.
    pub require_sandbox: bool,
    /// More directories commands may write in (absolute, or relative to the root).
    pub writable_paths: Vec<PathBuf>,
    /// toolmux's variables passed to commands besides the allowlist every child gets.
    pub env: Vec<String>,
}

/// The configuration's defaults: they are written once, in `toolmux_config::ShellSettings`.
impl Default for ExecSettings {
    fn default() -> Self {
        Self::from_config(&toolmux_config::ShellSettings::default())
    }
}

impl ExecSettings {
    /// The settings of the configuration's `shell` section. A default time limit above the
    /// maximum is lowered to it: the maximum is the promise (`at most maxTimeoutMs`), never
    /// raised.
    pub fn from_config(shell: &toolmux_config::ShellSettings) -> Self {
        let millis = |n: std::num::NonZeroU64| Duration::from_millis(n.get());
        let max_timeout = millis(shell.max_timeout_ms);
        Self {
            timeout: millis(shell.timeout_ms).min(max_timeout),
            max_timeout,
            max_output_bytes: usize::try_from(shell.max_output_bytes.get()).unwrap_or(usize::MAX),
            network: shell.network,
            network_per_call: shell.network_per_call,
            sandbox: shell.sandbox,
            require_sandbox: shell.require_sandbox,
            writable_paths: shell.writable_paths.clone(),
            env: shell.env.clone(),
        }
    }
}

/// The `exec` source. Cheap to clone.
#[derive(Clone, Debug)]
pub struct ExecPack {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    settings: ExecSettings,
    root: ProjectRoot,
    /// For TypeScript, which runs in code mode (held weakly: the hub owns the pack).
    hub: Option<WeakHub>,
    /// What the caller keeps from commands besides the pack's own (the configuration's
    /// files, toolmux's socket).
    protected: Protected,
    tools: Vec<ToolDescriptor>,
}

impl ExecPack {
    /// The pack running commands in `root` as `settings` say; `hub` is where `run_code` is,
    /// for TypeScript (without one, TypeScript is refused). Commands cannot change the root's
    /// `.toolmux/` and `.git/`; [`ExecPack::with_protected`] names more.
    pub fn new(root: ProjectRoot, settings: ExecSettings, hub: Option<WeakHub>) -> Self {
        Self::with_protected(root, settings, hub, Protected::default())
    }

    /// [`ExecPack::new`], keeping what `protected` names from commands too, as it says at
    /// each call.
    pub fn with_protected(
        root: ProjectRoot,
        settings: ExecSettings,
        hub: Option<WeakHub>,
        protected: Protected,
    ) -> Self {
        let tools = vec![shell_descriptor(&settings), code::descriptor(&settings)];
        Self {
            inner: Arc::new(Inner {
                settings,
                root,
                hub,
                protected,
                tools,
            }),
        }
    }

    /// The settings in force.
    pub fn settings(&self) -> &ExecSettings {
        &self.inner.settings
    }

    /// The sandbox policy of one call in `temp`, with network or not.
    fn policy(&self, network: bool, temp: &std::path::Path) -> SandboxPolicy {
        let root = self.inner.root.path();
        let mut writable = vec![root.to_path_buf(), temp.to_path_buf()];
        writable.extend(
            self.inner
                .settings
                .writable_paths
                .iter()
                .map(|p| root.join(p)),
        );
        let protected = self.inner.protected.paths();
        let mut read_only = protected.read_only;
        // toolmux's own directory (its configuration, state, secrets) and the repository's,
        // whose hooks and configuration run commands outside any sandbox. `.git` may be let
        // back in by naming it in `writablePaths` (for `git commit`); `.toolmux` may not.
        let git = root.join(".git");
        let git_writable = writable.iter().skip(2).any(|p| *p == git);
        let mut notes = Vec::new();
        // Even then what decides which commands git runs stays read-only: toolmux's own `git`
        // (a coding session's worktree) and the user's run the hooks and honour
        // `core.hooksPath` and `core.fsmonitor`, outside any sandbox. `commondir` would send
        // git to another folder's `config` and `hooks`, `config.worktree` is read as
        // configuration where `extensions.worktreeConfig` is on, and `worktrees/<id>/commondir`
        // does the same for a linked worktree (a session's). A mount can cover only what
        // exists, so a missing one is made first, as git tolerates it (see [`GitPlaceholder`]).
        let git_runs = [
            (git.join("hooks"), GitPlaceholder::Folder),
            (git.join("config"), GitPlaceholder::Empty),
            (git.join("config.worktree"), GitPlaceholder::Empty),
            (git.join("commondir"), GitPlaceholder::ItsOwnCommonDir),
            (git.join("worktrees"), GitPlaceholder::Folder),
        ];
        if git_writable && self.inner.settings.sandbox && git.is_dir() {
            for (path, placeholder) in &git_runs {
                if path.symlink_metadata().is_err() {
                    notes.push(placeholder.make(path));
                }
            }
        }
        // A link among them is kept even inside a read-only `.git`: binding `.git` covers the
        // link, not what it names (`.git/hooks -> ../hooks`, a folder the command may write).
        // The sandbox binds what a link names, or refuses the call when it names nothing.
        let is_link = |path: &std::path::Path| {
            path.symlink_metadata()
                .is_ok_and(|meta| meta.file_type().is_symlink())
        };
        let kept_paths = [(root.join(".toolmux"), true), (git, !git_writable)]
            .into_iter()
            .chain(git_runs.into_iter().map(|(path, _)| {
                let kept = git_writable || is_link(&path);
                (path, kept)
            }));
        for (own, kept) in kept_paths {
            if kept && own.symlink_metadata().is_ok() && !read_only.contains(&own) {
                read_only.push(own);
            }
        }
        SandboxPolicy {
            enabled: self.inner.settings.sandbox,
            network,
            writable,
            read_only,
            hidden: protected.hidden,
            notes,
        }
    }

    /// The call's time limit: its `timeoutMs` up to the maximum, or the default.
    fn timeout(&self, timeout_ms: Option<u64>) -> Duration {
        let settings = &self.inner.settings;
        timeout_ms.map_or(settings.timeout, |ms| {
            Duration::from_millis(ms.max(1)).min(settings.max_timeout)
        })
    }

    /// Whether the call gets the network, or why it may not ask.
    fn network(&self, asked: Option<bool>) -> Result<bool, ToolResult> {
        let settings = &self.inner.settings;
        match asked {
            None => Ok(settings.network),
            Some(false) => Ok(false),
            Some(true) if settings.network || settings.network_per_call => Ok(true),
            Some(true) => Err(ToolResult::kind_error(
                ToolErrorKind::Invalid,
                "this call asked for the network, which the configuration does not permit: set \
                 `\"shell\": {\"networkPerCall\": true}` (or `\"network\": true` for every \
                 command) in .toolmux/config.json",
            )),
        }
    }

    /// The directory a call runs in: `cwd` resolved inside the root (the root itself without
    /// one), or why not.
    fn cwd(&self, given: Option<&str>) -> Result<PathBuf, ToolResult> {
        let given = given.unwrap_or("");
        let path = self.inner.root.resolve(given).map_err(|e| {
            let kind = if matches!(e, toolmux_workspace::PathError::NotFound { .. }) {
                ToolErrorKind::NotFound
            } else {
                ToolErrorKind::Invalid
            };
            ToolResult::kind_error(kind, format!("cwd: {e}"))
        })?;
        if !path.is_dir() {
            return Err(ToolResult::kind_error(
                ToolErrorKind::Invalid,
                format!("cwd: `{given}` is not a directory"),
            ));
        }
        Ok(path)
    }

    /// A per-call temp dir (writable in the sandbox, removed after the call).
    fn temp_dir(prefix: &str) -> Result<tempfile::TempDir, ToolResult> {
        tempfile::Builder::new()
            .prefix(prefix)
            .tempdir()
            .map_err(|e| ToolResult::error(format!("cannot make the call's temp dir: {e}")))
    }

    async fn shell(&self, arguments: ShellArgs) -> ToolResult {
        let prepared = (|| {
            let cwd = self.cwd(arguments.cwd.as_deref())?;
            let network = self.network(arguments.network)?;
            let temp = Self::temp_dir("toolmux-shell-")?;
            Ok::<_, ToolResult>((cwd, network, temp))
        })();
        let (cwd, network, temp) = match prepared {
            Ok(prepared) => prepared,
            Err(refused) => return refused,
        };
        let spec = CommandSpec {
            program: "bash".into(),
            args: vec!["-lc".to_string(), arguments.command],
            cwd,
            env: common_env(temp.path()),
            pass_env: self.inner.settings.env.clone(),
            timeout: self.timeout(arguments.timeout_ms),
            max_output: self.inner.settings.max_output_bytes,
            sandbox: self.policy(network, temp.path()),
            require_sandbox: self.inner.settings.require_sandbox,
        };
        let limit = spec.timeout;
        match run(spec).await {
            Ok(finished) => {
                let text = render(&finished, limit);
                ToolResult::structured_with_text(finished_json(&finished), text)
            }
            Err(e) => ToolResult::error(e.to_string()),
        }
    }
}

/// What stands for a missing path of a writable `.git` that decides which commands git runs,
/// so that it can be bound read-only: each is what git reads as "nothing there".
#[derive(Clone, Copy, Debug)]
enum GitPlaceholder {
    /// An empty folder (`hooks`, `worktrees`; `git worktree prune` may remove the latter
    /// again, and the next call makes it anew).
    Folder,
    /// An empty file (`config`, `config.worktree`: no settings).
    Empty,
    /// `commondir` naming the repository itself: git refuses an empty one ("failed to read")
    /// and reads `.` as the folder it is in, so nothing changes but that it exists.
    ItsOwnCommonDir,
}

impl GitPlaceholder {
    /// Makes it at `path` (which does not exist); what was done, for the notes.
    fn make(self, path: &std::path::Path) -> String {
        let file = |contents: &[u8]| {
            use std::io::Write as _;
            std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(path)
                .and_then(|mut file| file.write_all(contents))
        };
        let (made, how) = match self {
            Self::Folder => (std::fs::create_dir(path), "made empty"),
            Self::Empty => (file(b""), "made empty"),
            Self::ItsOwnCommonDir => (file(b"."), "made naming `.git` itself (`.`)"),
        };
        match made {
            Ok(()) => format!(
                "`{}` did not exist: it was {how}, and is read-only like the rest of what \
                 decides which commands git runs, so that no command can plant one",
                path.display()
            ),
            Err(e) => format!(
                "`{}` does not exist and could not be made ({e}), so it could not be made \
                 read-only: a command may create it",
                path.display()
            ),
        }
    }
}

/// Variables every command gets: its temp dir, and pagers that do not wait for a terminal.
pub(crate) fn common_env(temp: &std::path::Path) -> Vec<(std::ffi::OsString, std::ffi::OsString)> {
    vec![
        ("TMPDIR".into(), temp.as_os_str().to_owned()),
        ("PAGER".into(), "cat".into()),
        ("GIT_PAGER".into(), "cat".into()),
    ]
}

/// The structured result of a finished command (`shell`'s output schema; `code_execution`
/// adds to it).
pub(crate) fn finished_json(finished: &Finished) -> Value {
    json!({
        "exitCode": finished.exit_code,
        "signal": finished.signal,
        "timedOut": finished.timed_out,
        "stdout": finished.stdout.text,
        "stderr": finished.stderr.text,
        "stdoutBytes": finished.stdout.total_bytes,
        "stderrBytes": finished.stderr.total_bytes,
        "stdoutDroppedBytes": finished.stdout.dropped_bytes,
        "stderrDroppedBytes": finished.stderr.dropped_bytes,
        "sandbox": finished.sandbox,
        "notes": finished.notes,
    })
}

/// The text a model (or a person) reads: how it ended, the output, the protections.
pub(crate) fn render(finished: &Finished, limit: Duration) -> String {
    let mut text = String::new();
    match (&finished.exit_code, &finished.signal) {
        _ if finished.timed_out => text.push_str(&format!(
            "timed out after {}s; its process group was stopped{}",
            limit.as_secs_f64(),
            finished
                .signal
                .as_ref()
                .map(|s| format!(" ({s})"))
                .unwrap_or_default()
        )),
        (Some(code), _) => text.push_str(&format!("exit code {code}")),
        (None, Some(signal)) => text.push_str(&format!("killed by {signal}")),
        (None, None) => text.push_str("ended"),
    }
    text.push('\n');
    for (name, stream) in [("stdout", &finished.stdout), ("stderr", &finished.stderr)] {
        if !stream.text.is_empty() {
            text.push_str(&format!("--- {name} ---\n{}", stream.text));
            if !stream.text.ends_with('\n') {
                text.push('\n');
            }
        }
    }
    text.push_str(&format!(
        "sandbox: landlock {}, network {}, namespaces {}\n",
        finished.sandbox.landlock.as_str(),
        finished.sandbox.network.as_str(),
        finished.sandbox.namespaces.as_str()
    ));
    for note in finished.sandbox.notes.iter().chain(&finished.notes) {
        text.push_str(&format!("note: {note}\n"));
    }
    text
}

/// The JSON Schema of the sandbox report.
pub(crate) fn sandbox_schema() -> Value {
    json!({
        "type": "object",
        "description": "The protections in force for this call.",
        "properties": {
            "landlock": {"enum": ["full", "partial", "unavailable", "off"]},
            "network": {"enum": ["blocked", "allowed", "unavailable"]},
            "namespaces": {
                "enum": ["full", "unavailable", "off"],
                "description": "`full`: a user namespace without capabilities, `.toolmux/`, `.git/` and the registries read-only, toolmux's socket hidden, SysV IPC of its own."
            },
            "notes": {"type": "array", "items": {"type": "string"}}
        },
        "required": ["landlock", "network", "namespaces", "notes"]
    })
}

/// The properties a finished command's result has (shared by both tools' output schemas).
pub(crate) fn finished_properties() -> Map<String, Value> {
    let count = json!({"type": "integer", "minimum": 0});
    let Value::Object(properties) = json!({
        "exitCode": {"type": ["integer", "null"], "description": "The exit code; null when a signal ended it."},
        "signal": {"type": ["string", "null"], "description": "The signal that ended it (`SIGKILL`)."},
        "timedOut": {"type": "boolean"},
        "stdout": {"type": "string", "description": "stdout: its head and tail when longer than the cap, with the bytes dropped named between them."},
        "stderr": {"type": "string"},
        "stdoutBytes": count,
        "stderrBytes": count,
        "stdoutDroppedBytes": count,
        "stderrDroppedBytes": count,
        "sandbox": sandbox_schema(),
        "notes": {"type": "array", "items": {"type": "string"}}
    }) else {
        unreachable!("an object literal")
    };
    properties
}

/// The result keys both tools always set.
pub(crate) const FINISHED_REQUIRED: &[&str] = &[
    "exitCode",
    "signal",
    "timedOut",
    "stdout",
    "stderr",
    "stdoutBytes",
    "stderrBytes",
    "stdoutDroppedBytes",
    "stderrDroppedBytes",
    "notes",
];

/// Annotations of a tool that changes the machine: policy asks by default.
pub(crate) fn acting() -> ToolAnnotations {
    ToolAnnotations {
        read_only_hint: Some(false),
        destructive_hint: Some(true),
        idempotent_hint: Some(false),
        open_world_hint: Some(true),
    }
}

/// `shell`'s arguments.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ShellArgs {
    /// The command line, run with `bash -lc`.
    #[schemars(length(min = 1))]
    command: String,
    /// The directory to run in, relative to the project root (default: the root).
    cwd: Option<String>,
    /// Time limit in milliseconds.
    #[schemars(range(min = 1))]
    timeout_ms: Option<u64>,
    /// Ask for the network (honoured only when the configuration permits it).
    network: Option<bool>,
}

/// The input schema of a tool whose arguments are `T`, its `timeoutMs` saying the longest time
/// limit a call may ask for (the configuration's `maxTimeoutMs`).
pub(crate) fn timed_input_schema<T: JsonSchema>(settings: &ExecSettings) -> Value {
    let mut schema = input_schema::<T>();
    schema["properties"]["timeoutMs"]["description"] = Value::from(format!(
        "Time limit in milliseconds (at most {}).",
        settings.max_timeout.as_millis()
    ));
    schema
}

fn shell_descriptor(settings: &ExecSettings) -> ToolDescriptor {
    let mut tool = ToolDescriptor::new(
        SOURCE_ID,
        SHELL,
        format!(
            "Run a command line with `bash -lc` in the project (or a directory inside it). \
             Returns its exit code, stdout and stderr (each capped at {} bytes: head and tail \
             kept). It runs sandboxed: it may write only inside the project (not `.toolmux/` or `.git/`) \
             and $TMPDIR, {}; \
             it is stopped, with everything it started, after its time limit ({} s unless \
             `timeoutMs` says otherwise) and when it ends.",
            settings.max_output_bytes,
            if settings.network {
                "and may reach the network"
            } else {
                "and has no network"
            },
            settings.timeout.as_secs()
        ),
        timed_input_schema::<ShellArgs>(settings),
    );
    tool.title = Some("Run a shell command".to_string());
    let mut required: Vec<&str> = FINISHED_REQUIRED.to_vec();
    required.push("sandbox");
    tool.output_schema = Some(Arc::new(json!({
        "type": "object",
        "properties": finished_properties(),
        "required": required
    })));
    tool.annotations = acting();
    tool.timeout = Some(pipeline_limit(settings));
    tool
}

/// The pipeline's limit for a call: the longest a call may ask for, plus the grace before
/// SIGKILL and the sweep, so that the tool's own limit (which reports the output) fires first.
pub(crate) fn pipeline_limit(settings: &ExecSettings) -> Duration {
    settings.max_timeout + run::KILL_GRACE + Duration::from_secs(10)
}

#[async_trait]
impl Source for ExecPack {
    fn id(&self) -> &str {
        SOURCE_ID
    }

    fn kind(&self) -> SourceKind {
        SourceKind::Builtin
    }

    fn description(&self) -> Option<String> {
        Some(
            "Runs shell commands and Python, Bash or TypeScript code in the project, sandboxed."
                .to_string(),
        )
    }

    fn tools(&self) -> Vec<ToolDescriptor> {
        self.inner.tools.clone()
    }

    async fn call(&self, call: SourceCall<'_>) -> Result<ToolResult, SourceError> {
        let invalid = |e: String| ToolResult::kind_error(ToolErrorKind::Invalid, e);
        match call.tool.original_name.as_str() {
            SHELL => Ok(match parse_arguments(&call.arguments) {
                Ok(arguments) => self.shell(arguments).await,
                Err(e) => invalid(e),
            }),
            CODE_EXECUTION => Ok(match parse_arguments(&call.arguments) {
                Ok(arguments) => self.code_execution(arguments, call.context).await,
                Err(e) => invalid(e),
            }),
            other => Err(SourceError::Failed(format!(
                "the exec source has no tool `{other}`"
            ))),
        }
    }

    async fn preview(&self, call: SourceCall<'_>) -> Option<String> {
        match call.tool.original_name.as_str() {
            SHELL => {
                let arguments: ShellArgs = parse_arguments(&call.arguments).ok()?;
                let command = &arguments.command;
                let cwd = arguments
                    .cwd
                    .as_deref()
                    .filter(|c| !c.is_empty())
                    .unwrap_or(".");
                let network = match self.network(arguments.network) {
                    Ok(true) => "with network",
                    Ok(false) => "no network",
                    Err(_) => "network refused by configuration",
                };
                let sandbox = if self.inner.settings.sandbox {
                    "sandboxed"
                } else {
                    "NOT sandboxed"
                };
                Some(format!(
                    "$ {command}\n(in {cwd}; {sandbox}, {network}; time limit {} s)",
                    self.timeout(arguments.timeout_ms).as_secs_f64()
                ))
            }
            CODE_EXECUTION => {
                let arguments: code::CodeArgs = parse_arguments(&call.arguments).ok()?;
                Some(format!(
                    "{}:\n{}",
                    arguments.language.name(),
                    arguments.code
                ))
            }
            _ => None,
        }
    }
}
