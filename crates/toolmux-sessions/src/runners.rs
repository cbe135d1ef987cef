//! The runners: the coding agents toolmux knows how to start non-interactively, built in and
//! from the configuration's `runners` section, and their detection (on `PATH`, version parsed
//! from `--version`), cached in `.toolmux/state/runners.json` so that listing never starts a
//! process.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use toolmux_config::{RunnerProtocol, RunnerSettings};

use crate::error::SessionError;
use crate::sessions::CALLER_ENV_ALLOWED;

/// How long `--version` may take before the runner counts as broken.
const VERSION_TIME_LIMIT: Duration = Duration::from_secs(10);

/// A session's time limit when neither the call nor the runner's configuration sets one.
pub const DEFAULT_SESSION_TIMEOUT: Duration = Duration::from_secs(3600);

/// A built-in runner: how its CLI runs one prompt without a person at the terminal.
struct Builtin {
    name: &'static str,
    command: &'static str,
    args: &'static [&'static str],
    model_flag: Option<&'static str>,
    protocol: RunnerProtocol,
    install: &'static str,
}

/// The built-in runners. Flags checked against each CLI's own documentation (2026-11).
///
/// The prompt comes from a caller (a model, over MCP or REST), so it must never be read as an
/// option: a prompt `--dangerously-skip-permissions` placed bare would switch the agent's own
/// approvals off. Each runner therefore takes it either after `--` (a positional prompt; every
/// one of these CLIs parses with clap, commander or yargs, which end the options at `--`) or
/// stuck to its option as `--option={prompt}` (a value option; clap, commander, yargs and
/// argparse all take everything after the `=` as the value, dashes included).
const BUILTINS: &[Builtin] = &[
    // Claude Code headless mode: `-p/--print`, `--output-format stream-json` (needs
    // `--verbose` with `-p`), `--permission-mode acceptEdits` so edits need no person;
    // https://docs.claude.com/en/docs/claude-code/headless
    Builtin {
        name: "claude",
        command: "claude",
        // `-p` is a flag; the prompt is Claude Code's positional argument (commander).
        args: &[
            "-p",
            "--output-format",
            "stream-json",
            "--verbose",
            "--permission-mode",
            "acceptEdits",
            "--",
            "{prompt}",
        ],
        model_flag: Some("--model"),
        protocol: RunnerProtocol::Shell,
        install: "Install it with `npm install -g @anthropic-ai/claude-code`",
    },
    // `codex exec` is Codex's non-interactive mode; `--json` prints JSONL events, `--sandbox
    // workspace-write` allows edits (`--full-auto` is deprecated);
    // https://developers.openai.com/codex/noninteractive
    Builtin {
        name: "codex",
        command: "codex",
        // `codex exec [OPTIONS] [PROMPT]` (clap).
        args: &[
            "exec",
            "--json",
            "--sandbox",
            "workspace-write",
            "--",
            "{prompt}",
        ],
        model_flag: Some("--model"),
        protocol: RunnerProtocol::Shell,
        install: "Install it with `npm install -g @openai/codex`",
    },
    // Gemini CLI headless mode: `-p/--prompt`, `--output-format stream-json` (JSONL events),
    // `--yolo` approves its own tool calls; https://geminicli.com/docs/cli/headless/
    Builtin {
        name: "gemini",
        command: "gemini",
        // yargs: a value starting with `-` after a separate `--prompt` would be read as an
        // option, the stuck form never is.
        args: &[
            "--prompt={prompt}",
            "--output-format",
            "stream-json",
            "--yolo",
        ],
        model_flag: Some("--model"),
        protocol: RunnerProtocol::Shell,
        install: "Install it with `npm install -g @google/gemini-cli`",
    },
    // Copilot CLI programmatic mode: `-p/--prompt PROMPT` (stuck to `--prompt=` so that no
    // parser reads it as an option), `--allow-all-tools` (required without a person),
    // `--no-ask-user`;
    // https://docs.github.com/en/copilot/reference/copilot-cli-reference/cli-programmatic-reference
    Builtin {
        name: "copilot",
        command: "copilot",
        args: &["--prompt={prompt}", "--allow-all-tools", "--no-ask-user"],
        model_flag: Some("--model"),
        protocol: RunnerProtocol::Shell,
        install: "Install it with `npm install -g @github/copilot`",
    },
    // aider scripting: `--message` runs one instruction and exits, `--yes-always` answers its
    // confirmations, `--no-auto-commits` leaves the commits to the person;
    // https://aider.chat/docs/scripting.html
    Builtin {
        name: "aider",
        command: "aider",
        // argparse refuses a separate value that starts with `-`; the stuck form takes it.
        args: &["--message={prompt}", "--yes-always", "--no-auto-commits"],
        model_flag: Some("--model"),
        protocol: RunnerProtocol::Shell,
        install: "Install it with `python -m pip install aider-install && aider-install`",
    },
    // goose: `goose run --text` runs one instruction and exits; `--no-session` keeps no
    // session file; https://block.github.io/goose/docs/guides/goose-cli-commands
    Builtin {
        name: "goose",
        command: "goose",
        // clap: the stuck form takes a value that starts with `-`.
        args: &["run", "--no-session", "--text={prompt}"],
        model_flag: Some("--model"),
        protocol: RunnerProtocol::Shell,
        install: "Install it with `curl -fsSL https://github.com/block/goose/releases/download/stable/download_cli.sh | bash`",
    },
    // opencode: `opencode run PROMPT` is its non-interactive mode, `--format json` prints
    // JSON events; https://opencode.ai/docs/cli/
    Builtin {
        name: "opencode",
        command: "opencode",
        // `opencode run [message..]` (yargs): the message after `--`.
        args: &["run", "--format", "json", "--", "{prompt}"],
        model_flag: Some("--model"),
        protocol: RunnerProtocol::Shell,
        install: "Install it with `npm install -g opencode-ai`",
    },
    // Cursor's agent CLI: `-p/--print` with `--output-format stream-json`, `--force` allows
    // commands without asking; https://cursor.com/docs/cli/reference/output-format
    Builtin {
        name: "cursor-agent",
        command: "cursor-agent",
        // `-p` is a flag; the prompt is positional (commander).
        args: &[
            "-p",
            "--output-format",
            "stream-json",
            "--force",
            "--",
            "{prompt}",
        ],
        model_flag: Some("--model"),
        protocol: RunnerProtocol::Shell,
        install: "Install it with `curl https://cursor.com/install -fsS | bash`",
    },
    // The same agents over the Agent Client Protocol, where toolmux answers their permission
    // requests: Gemini CLI (`--experimental-acp`), goose (`goose acp`), and Zed's adapters for
    // Claude Code and Codex (https://agentclientprotocol.com/overview/agents).
    Builtin {
        name: "gemini-acp",
        command: "gemini",
        args: &["--experimental-acp"],
        model_flag: Some("--model"),
        protocol: RunnerProtocol::Acp,
        install: "Install it with `npm install -g @google/gemini-cli`",
    },
    Builtin {
        name: "goose-acp",
        command: "goose",
        args: &["acp"],
        model_flag: None,
        protocol: RunnerProtocol::Acp,
        install: "Install it with `curl -fsSL https://github.com/block/goose/releases/download/stable/download_cli.sh | bash`",
    },
    Builtin {
        name: "claude-acp",
        command: "claude-code-acp",
        args: &[],
        model_flag: None,
        protocol: RunnerProtocol::Acp,
        install: "Install it with `npm install -g @zed-industries/claude-code-acp`",
    },
    Builtin {
        name: "codex-acp",
        command: "codex-acp",
        args: &[],
        model_flag: None,
        protocol: RunnerProtocol::Acp,
        install: "Install it with `npm install -g @zed-industries/codex-acp`",
    },
];

/// One runner with the configuration applied: what `list_runners` shows and what a session
/// starts.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Runner {
    /// Its name (`claude`, or a configured one).
    pub name: String,
    /// Built in (possibly changed by the configuration) or defined by it.
    pub builtin: bool,
    /// The program.
    pub command: String,
    /// The arguments, with `{prompt}` (and `{model}`) still in them.
    pub args: Vec<String>,
    /// The model asked for, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The flag that names the model.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_flag: Option<String>,
    /// `shell` or `acp`.
    pub protocol: RunnerProtocol,
    /// How to install it.
    pub install: String,
    /// The arguments that print its version.
    pub version_args: Vec<String>,
    /// The default time limit of its sessions, in milliseconds.
    pub timeout_ms: u64,
    /// Whether it gets toolmux's whole environment.
    #[serde(skip)]
    pub inherit_env: bool,
    /// Its configured environment (values are not shown: they may hold secrets).
    #[serde(skip)]
    pub env: BTreeMap<String, String>,
    /// The variables a `run_session` call may set for it: [`CALLER_ENV_ALLOWED`], then the
    /// configuration's `acceptEnv`.
    pub accept_env: Vec<String>,
}

impl Runner {
    /// The argument vector for one prompt: `{prompt}` and `{model}` replaced, the prompt
    /// appended when no argument names it, the model flag added when a model is set and no
    /// argument names it. An ACP runner gets its prompt over the protocol, never on its
    /// command line.
    ///
    /// Refused: a model that starts with `-`, and a prompt that starts with `-` where it would
    /// be an argument of its own (a bare `{prompt}`, or appended) with no `--` before it, since
    /// the program would read it as an option (`--dangerously-skip-permissions`).
    pub fn argv(&self, prompt: &str, model: Option<&str>) -> Result<Vec<String>, SessionError> {
        let model = model.or(self.model.as_deref());
        if let Some(model) = model.filter(|m| m.starts_with('-')) {
            return Err(SessionError::Invalid(format!(
                "the model `{model}` starts with `-`, which runner `{}` would read as an option",
                self.name
            )));
        }
        let optionlike = prompt.starts_with('-');
        let option_error = || {
            SessionError::Invalid(format!(
                "the prompt starts with `-`, and runner `{name}` passes it as an argument of \
                 its own with no `--` before it, so `{command}` would read it as an option; \
                 start the prompt with something else, or put `--` before `{{prompt}}` in \
                 `runners.{name}.args` if `{command}` accepts it",
                name = self.name,
                command = self.command,
            ))
        };
        let mut args: Vec<String> = Vec::with_capacity(self.args.len() + 3);
        let mut prompt_placed = self.protocol == RunnerProtocol::Acp;
        let mut model_placed = model.is_none();
        // Where options end: the first `--` of the template.
        let mut options_end = None;
        for template in &self.args {
            if template == "--" && options_end.is_none() {
                options_end = Some(args.len());
            }
            let filled = fill(template, prompt, model.unwrap_or_default());
            if filled.prompt {
                prompt_placed = true;
                if filled.starts_with_prompt && optionlike && options_end.is_none() {
                    return Err(option_error());
                }
            }
            model_placed |= filled.model;
            args.push(filled.text);
        }
        if let (false, Some(model), Some(flag)) = (model_placed, model, &self.model_flag) {
            // Among the options: before `--`, else before a trailing positional prompt, where
            // every CLI takes its options.
            let at = options_end.unwrap_or_else(|| {
                if self.args.last().is_some_and(|a| a == "{prompt}") {
                    args.len() - 1
                } else {
                    args.len()
                }
            });
            args.insert(at, model.to_string());
            args.insert(at, flag.clone());
        }
        if !prompt_placed {
            if optionlike && options_end.is_none() {
                return Err(option_error());
            }
            args.push(prompt.to_string());
        }
        Ok(args)
    }
}

/// One argument of a runner's template with its placeholders replaced.
struct Filled {
    text: String,
    /// It held `{prompt}`.
    prompt: bool,
    /// It starts with the prompt (`{prompt}` first), so a prompt's leading `-` leads it.
    starts_with_prompt: bool,
    /// It held `{model}`.
    model: bool,
}

/// Replaces `{prompt}` and `{model}` in one template argument in a single pass, so that a
/// prompt that itself contains `{model}` is left as it was written.
fn fill(template: &str, prompt: &str, model: &str) -> Filled {
    let mut filled = Filled {
        text: String::with_capacity(template.len() + prompt.len()),
        prompt: false,
        starts_with_prompt: template.starts_with("{prompt}"),
        model: false,
    };
    let mut rest = template;
    while let Some(at) = rest.find('{') {
        filled.text.push_str(&rest[..at]);
        let tail = &rest[at..];
        if let Some(after) = tail.strip_prefix("{prompt}") {
            filled.text.push_str(prompt);
            filled.prompt = true;
            rest = after;
        } else if let Some(after) = tail.strip_prefix("{model}") {
            filled.text.push_str(model);
            filled.model = true;
            rest = after;
        } else {
            filled.text.push('{');
            rest = &tail[1..];
        }
    }
    filled.text.push_str(rest);
    filled
}

/// Every runner: the built-in ones with the configuration applied, then the configured ones,
/// without those switched off.
pub fn resolve(config: &BTreeMap<String, RunnerSettings>) -> Vec<Runner> {
    let mut runners = Vec::new();
    for b in BUILTINS {
        let set = config.get(b.name);
        if set.and_then(|s| s.enabled) == Some(false) {
            continue;
        }
        let mut runner = Runner {
            name: b.name.to_string(),
            builtin: true,
            command: b.command.to_string(),
            args: b.args.iter().map(|a| a.to_string()).collect(),
            model: None,
            model_flag: b.model_flag.map(str::to_string),
            protocol: b.protocol,
            install: b.install.to_string(),
            version_args: vec!["--version".to_string()],
            timeout_ms: DEFAULT_SESSION_TIMEOUT.as_millis() as u64,
            inherit_env: false,
            env: BTreeMap::new(),
            accept_env: CALLER_ENV_ALLOWED.iter().map(|n| n.to_string()).collect(),
        };
        if let Some(set) = set {
            apply(&mut runner, set);
        }
        runners.push(runner);
    }
    for (name, set) in config {
        if BUILTINS.iter().any(|b| b.name == name) || set.enabled == Some(false) {
            continue;
        }
        let Some(command) = &set.command else {
            tracing::warn!(
                "runner `{name}` has no `command` and is not a built-in runner; left out"
            );
            continue;
        };
        let mut runner = Runner {
            name: name.clone(),
            builtin: false,
            command: command.clone(),
            args: vec!["{prompt}".to_string()],
            model: None,
            model_flag: Some("--model".to_string()),
            protocol: RunnerProtocol::Shell,
            install: format!("Install `{command}`"),
            version_args: vec!["--version".to_string()],
            timeout_ms: DEFAULT_SESSION_TIMEOUT.as_millis() as u64,
            inherit_env: false,
            env: BTreeMap::new(),
            accept_env: CALLER_ENV_ALLOWED.iter().map(|n| n.to_string()).collect(),
        };
        apply(&mut runner, set);
        runners.push(runner);
    }
    runners
}

fn apply(runner: &mut Runner, set: &RunnerSettings) {
    if let Some(command) = &set.command {
        runner.command = command.clone();
    }
    if let Some(args) = &set.args {
        runner.args = args.clone();
    }
    if set.model.is_some() {
        runner.model = set.model.clone();
    }
    if set.model_flag.is_some() {
        runner.model_flag = set.model_flag.clone();
    }
    if let Some(protocol) = set.protocol {
        runner.protocol = protocol;
    }
    if let Some(args) = &set.version_args {
        runner.version_args = args.clone();
    }
    if let Some(install) = &set.install {
        runner.install = install.clone();
    }
    if let Some(timeout) = set.timeout_ms {
        runner.timeout_ms = timeout.get();
    }
    if let Some(inherit) = set.inherit_env {
        runner.inherit_env = inherit;
    }
    runner.env.extend(set.env.clone());
    for name in &set.accept_env {
        if !runner.accept_env.contains(name) {
            runner.accept_env.push(name.clone());
        }
    }
}

/// Finds `command` as a shell would: a path as it is, a bare name in each `PATH` directory.
pub fn which(command: &str) -> Option<PathBuf> {
    let executable = |p: &Path| {
        use std::os::unix::fs::PermissionsExt;
        p.metadata()
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if command.contains('/') {
        let path = PathBuf::from(command);
        return executable(&path).then_some(path);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(command))
        .find(|candidate| executable(candidate))
}

/// What detection found out about one runner.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Detection {
    /// The runner's name.
    pub name: String,
    /// Whether its program was found.
    pub installed: bool,
    /// Where.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<PathBuf>,
    /// The version its `--version` printed (`X.Y.Z`), when one was found in it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Why the version is unknown (the program failed or printed none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// When it was checked.
    pub checked_at: chrono::DateTime<chrono::Utc>,
    /// The program's modification time when checked (seconds): a changed program is checked
    /// again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mtime: Option<i64>,
}

/// The first `X.Y.Z` (with an optional `v`) in a version text, as LeanSpec reads it.
pub fn parse_version(text: &str) -> Option<String> {
    static VERSION: OnceLock<regex::Regex> = OnceLock::new();
    let re = VERSION.get_or_init(|| {
        regex::Regex::new(r"\bv?(\d+\.\d+\.\d+(?:[-+][0-9A-Za-z.\-]+)?)").expect("a valid regex")
    });
    re.captures(text).map(|c| c[1].to_string())
}

fn mtime_of(path: &Path) -> Option<i64> {
    use std::os::unix::fs::MetadataExt;
    path.metadata().ok().map(|m| m.mtime())
}

/// Checks one runner: finds its program and runs its version command (in `cwd`, with the
/// runner's environment, at most ten seconds).
pub async fn detect(runner: &Runner, cwd: &Path) -> Detection {
    let now = chrono::Utc::now();
    let Some(path) = which(&runner.command) else {
        return Detection {
            name: runner.name.clone(),
            installed: false,
            path: None,
            version: None,
            error: None,
            checked_at: now,
            mtime: None,
        };
    };
    let mtime = mtime_of(&path);
    let (version, error) = match version_of(&path, runner, cwd).await {
        Ok(text) => match parse_version(&text) {
            Some(v) => (Some(v), None),
            None => (
                None,
                Some(format!(
                    "no version in the output of `{} {}`",
                    runner.command,
                    runner.version_args.join(" ")
                )),
            ),
        },
        Err(e) => (None, Some(e)),
    };
    Detection {
        name: runner.name.clone(),
        installed: true,
        path: Some(path),
        version,
        error,
        checked_at: now,
        mtime,
    }
}

async fn version_of(path: &Path, runner: &Runner, cwd: &Path) -> Result<String, String> {
    let (mut child, mut guard) = toolmux_scripts::child::spawn(
        path.as_os_str(),
        &runner.version_args,
        cwd,
        runner.env.iter(),
        runner.inherit_env,
    )
    .map_err(|e| format!("cannot start `{}`: {e}", path.display()))?;
    drop(child.stdin.take());
    let output = tokio::time::timeout(VERSION_TIME_LIMIT, async {
        use tokio::io::AsyncReadExt;
        let mut out = String::new();
        let mut err = String::new();
        let (mut so, mut se) = (child.stdout.take(), child.stderr.take());
        let read_out = async {
            if let Some(s) = so.as_mut() {
                let _ = s.take(64 * 1024).read_to_string(&mut out).await;
            }
        };
        let read_err = async {
            if let Some(s) = se.as_mut() {
                let _ = s.take(64 * 1024).read_to_string(&mut err).await;
            }
        };
        tokio::join!(read_out, read_err);
        let status = child.wait().await;
        (status, out, err)
    })
    .await;
    guard.sweep().await;
    match output {
        Err(_) => Err(format!(
            "`{} {}` did not finish within {}s",
            runner.command,
            runner.version_args.join(" "),
            VERSION_TIME_LIMIT.as_secs()
        )),
        Ok((Err(e), _, _)) => Err(e.to_string()),
        Ok((Ok(_), out, err)) => Ok(format!("{out}\n{err}")),
    }
}

/// The detection cache: `.toolmux/state/runners.json`, one entry per runner, kept while the
/// program's path and modification time stay the same.
#[derive(Debug)]
pub struct DetectionCache {
    file: PathBuf,
}

impl DetectionCache {
    /// The cache in `state_dir`.
    pub fn new(state_dir: &Path) -> Self {
        Self {
            file: state_dir.join("runners.json"),
        }
    }

    /// What the cache holds (nothing when it cannot be read).
    pub fn read(&self) -> BTreeMap<String, Detection> {
        std::fs::read(&self.file)
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or_default()
    }

    /// A cached detection that is still true: the program is where it was, unchanged; a
    /// runner that was not installed is looked for again.
    pub fn fresh(&self, runner: &Runner) -> Option<Detection> {
        let cached = self.read().remove(&runner.name)?;
        let path = which(&runner.command)?;
        (cached.path.as_deref() == Some(path.as_path()) && cached.mtime == mtime_of(&path))
            .then_some(cached)
    }

    /// Records detections (merged with the others cached).
    pub fn store(&self, found: &[Detection]) -> Result<(), SessionError> {
        let mut all = self.read();
        for d in found {
            all.insert(d.name.clone(), d.clone());
        }
        let bytes =
            serde_json::to_vec_pretty(&all).map_err(|e| SessionError::Failed(e.to_string()))?;
        if let Some(dir) = self.file.parent() {
            std::fs::create_dir_all(dir).map_err(|e| SessionError::io(dir, e))?;
        }
        toolmux_files::write_atomic(&self.file, &bytes).map_err(|e| SessionError::io(&self.file, e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_read_as_leanspec_reads_them() {
        assert_eq!(
            parse_version("1.0.43 (Claude Code)").as_deref(),
            Some("1.0.43")
        );
        assert_eq!(parse_version("codex-cli 0.46.0").as_deref(), Some("0.46.0"));
        assert_eq!(parse_version("aider v0.86.1\n").as_deref(), Some("0.86.1"));
        assert_eq!(parse_version("version unknown"), None);
    }

    #[test]
    fn the_prompt_goes_where_the_runner_takes_it() {
        let runners = resolve(&BTreeMap::new());
        let claude = runners
            .iter()
            .find(|r| r.name == "claude")
            .expect("built in");
        let argv = claude.argv("fix it", Some("opus")).expect("argv");
        assert_eq!(argv[0], "-p");
        assert_eq!(&argv[argv.len() - 2..], ["--", "fix it"]);
        assert!(argv.windows(2).any(|w| w == ["--model", "opus"]));
        let codex = runners
            .iter()
            .find(|r| r.name == "codex")
            .expect("built in");
        let argv = codex.argv("fix it", Some("o3")).expect("argv");
        assert_eq!(&argv[argv.len() - 4..], ["--model", "o3", "--", "fix it"]);
    }
}
