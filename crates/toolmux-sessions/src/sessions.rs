//! [`Sessions`]: starting a runner on a prompt, following it, cancelling it, and what is known
//! of every session — the ones this process runs and, through the store, the ones other
//! toolmux processes ran.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::Duration;

use serde::Deserialize;
use tokio_util::sync::CancellationToken;
use toolmux_config::{RunnerProtocol, RunnerSettings};
use toolmux_core::{Approver, Asker, Channel};
use toolmux_specs::SpecsSource;
use toolmux_workspace::{PathError, ProjectRoot};

use crate::error::SessionError;
use crate::record::{Owner, SessionRecord, Status, Worktree};
use crate::runners::{Detection, DetectionCache, Runner};
use crate::store::{DirStore, LogPage, SessionStore};

/// The environment variable every session's processes carry: the session's id. It tells a
/// lost session's leftovers from anything else at the next start.
pub const SESSION_ID_VAR: &str = "TOOLMUX_SESSION_ID";

/// The environment variables every runner accepts from a caller of `run_session` (a model,
/// over MCP or REST): switches of how output looks, which change nothing of what runs or where
/// its traffic goes. Any other name is refused unless the runner's configuration lists it in
/// `acceptEnv`: an allowlist, because a denylist always misses one (`LESSOPEN`, `GCONV_PATH`,
/// `PIP_INDEX_URL`, `npm_config_*`, `RUSTC_WRAPPER`, `DOTNET_STARTUP_HOOKS` … each runs code or
/// redirects traffic), and a person reading the approval cannot be expected to know them all.
/// Log levels (`RUST_LOG`, `DEBUG`) are not here: at their most verbose some agents print
/// request headers, credentials included, into the session's log.
pub const CALLER_ENV_ALLOWED: &[&str] = &["CI", "FORCE_COLOR", "NO_COLOR"];

/// The most variables one `run_session` call may set.
pub const MAX_CALLER_ENV_VARS: usize = 32;

/// The longest variable name a call may send (longer is no name a runner accepts, and is not
/// repeated back in the error).
pub const MAX_CALLER_ENV_NAME_BYTES: usize = 128;

/// The longest value a call may give one variable.
pub const MAX_CALLER_ENV_VALUE_BYTES: usize = 4 * 1024;

/// What `run_session` asks for.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunRequest {
    /// The runner's name.
    pub runner: String,
    /// The prompt (with `specs`: the text before them, or their template with `{specs}`).
    #[serde(default)]
    pub prompt: Option<String>,
    /// Specs to build the prompt from (number, folder name or unique fragment).
    #[serde(default)]
    pub specs: Vec<String>,
    /// The folder to run in, relative to the project root (default: the root).
    #[serde(default)]
    pub cwd: Option<String>,
    /// Run in a new git worktree on a new branch, left for the person afterwards.
    #[serde(default)]
    pub worktree: bool,
    /// The new branch's name (default `toolmux/session-<id>`).
    #[serde(default)]
    pub branch: Option<String>,
    /// More environment variables (names are recorded, values are not): only those the runner
    /// accepts ([`CALLER_ENV_ALLOWED`] and its `acceptEnv`), at most [`MAX_CALLER_ENV_VARS`].
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// The time limit in milliseconds (default: the runner's, one hour unless configured).
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    /// The model to ask for.
    #[serde(default)]
    pub model: Option<String>,
}

/// What a session would run: shown in the approval, then carried out.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The session's id.
    pub id: String,
    /// The runner with the configuration applied.
    pub runner: Runner,
    /// Where its program is.
    pub program: PathBuf,
    /// The arguments.
    pub args: Vec<String>,
    /// The prompt.
    pub prompt: String,
    /// The specs it was built from.
    pub specs: Vec<String>,
    /// The folder it runs in (in the worktree, when there is one).
    pub cwd: PathBuf,
    /// The worktree to create.
    pub worktree: Option<Worktree>,
    /// Its environment besides the allowlist.
    pub env: BTreeMap<String, String>,
    /// The part of `env` the caller set (the approval shows their values).
    pub caller_env: BTreeMap<String, String>,
    /// Its time limit.
    pub timeout: Duration,
    /// The model asked for.
    pub model: Option<String>,
}

impl Plan {
    /// The exact command line, quoted for a POSIX shell.
    pub fn command_line(&self) -> String {
        std::iter::once(self.program.display().to_string())
            .chain(self.args.iter().cloned())
            .map(|a| shell_quote(&a))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// What the person asked to approve the session sees.
    pub fn preview(&self) -> String {
        let mut text = format!(
            "Start a coding session\nrunner:    {} ({})\ndirectory: {}\n",
            self.runner.name,
            match self.runner.protocol {
                RunnerProtocol::Shell => "shell",
                RunnerProtocol::Acp => "acp",
            },
            self.cwd.display()
        );
        if let Some(w) = &self.worktree {
            text.push_str(&format!(
                "worktree:  {} on new branch {}\n",
                w.path.display(),
                w.branch
            ));
        }
        text.push_str(&format!(
            "time limit: {}s\ncommand:   {}\n",
            self.timeout.as_secs(),
            self.command_line()
        ));
        // The variables set by the configuration and by toolmux are named (the configuration's
        // values may hold secrets); the caller's are shown with their values, since a value is
        // what a person approves.
        let names: Vec<&str> = self
            .env
            .keys()
            .filter(|name| !self.caller_env.contains_key(*name))
            .map(String::as_str)
            .collect();
        if !names.is_empty() {
            text.push_str(&format!("env:       {}\n", names.join(" ")));
        }
        if !self.caller_env.is_empty() {
            text.push_str("env set by the call:\n");
            for (name, value) in &self.caller_env {
                // The one judgement of what is a secret, which toolmux also keeps out of every
                // child's inherited environment; erring towards hiding costs a person one unread
                // value, a shown token costs a rotation.
                if toolmux_scripts::environ::is_secret(name, std::ffi::OsStr::new(value)) {
                    text.push_str(&format!(
                        "  {name}=(hidden: the name looks like a secret)\n"
                    ));
                } else {
                    // Quoted and escaped: a newline in a value cannot forge a line of this text.
                    text.push_str(&format!("  {name}={value:?}\n"));
                }
            }
        }
        text.push_str(&format!("prompt:\n{}", self.prompt));
        text
    }
}

/// The caller's variables, each checked before the approval shows it: at most
/// [`MAX_CALLER_ENV_VARS`] of them; a name that is a plain variable name (an `=` in it would set
/// another variable than the one named) of at most [`MAX_CALLER_ENV_NAME_BYTES`] and one
/// `runner` accepts ([`Runner::accept_env`]); a value of at most [`MAX_CALLER_ENV_VALUE_BYTES`]
/// with no NUL byte (no process can get it).
fn checked_caller_env(
    runner: &Runner,
    env: &BTreeMap<String, String>,
) -> Result<BTreeMap<String, String>, SessionError> {
    if env.len() > MAX_CALLER_ENV_VARS {
        return Err(SessionError::Invalid(format!(
            "`env` sets {} variables; a call may set at most {MAX_CALLER_ENV_VARS}",
            env.len()
        )));
    }
    for (name, value) in env {
        if name.len() > MAX_CALLER_ENV_NAME_BYTES {
            return Err(SessionError::Invalid(format!(
                "`env`: a name of {} bytes is not a variable name (at most \
                 {MAX_CALLER_ENV_NAME_BYTES} bytes)",
                name.len()
            )));
        }
        let plain = name
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
            && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
        if !plain {
            return Err(SessionError::Invalid(format!(
                "`env`: {name:?} is not a variable name (letters, digits and `_`, not starting \
                 with a digit)"
            )));
        }
        if !runner.accept_env.iter().any(|accepted| accepted == name) {
            return Err(SessionError::Invalid(format!(
                "`env.{name}` is refused: runner `{runner}` accepts only {accepted} from a call; \
                 a project that needs `{name}` lists it in `runners.{runner}.acceptEnv` (or sets \
                 its value in `runners.{runner}.env`) in .toolmux/config.json",
                runner = runner.name,
                accepted = runner.accept_env.join(" "),
            )));
        }
        if value.len() > MAX_CALLER_ENV_VALUE_BYTES {
            return Err(SessionError::Invalid(format!(
                "`env.{name}` is {} bytes; a value may be at most {MAX_CALLER_ENV_VALUE_BYTES} \
                 bytes",
                value.len()
            )));
        }
        if value.contains('\0') {
            return Err(SessionError::Invalid(format!(
                "`env.{name}` holds a NUL byte"
            )));
        }
    }
    Ok(env.clone())
}

/// A branch name for `git worktree add -b`, checked before the approval shows it: git's own
/// rules for a branch name (`git check-ref-format --branch`), so that a name starting with
/// `-` is never an option of git and a control character cannot forge a line of the approval.
fn checked_branch(branch: &str) -> Result<String, SessionError> {
    let bad = |why: &str| {
        SessionError::Invalid(format!("`branch` {branch:?} is not a branch name: {why}"))
    };
    if branch.is_empty() {
        return Err(bad("it is empty"));
    }
    if branch.starts_with('-') {
        return Err(bad("it starts with `-`"));
    }
    if branch
        .chars()
        .any(|c| c.is_control() || " ~^:?*[\\".contains(c))
    {
        return Err(bad(
            "it holds a space, a control character or one of ~ ^ : ? * [ \\",
        ));
    }
    if branch.contains("..") || branch.contains("@{") || branch == "@" {
        return Err(bad("it holds `..` or `@{`, or is `@`"));
    }
    if branch.ends_with('.') || branch.ends_with(".lock") {
        return Err(bad("it ends with `.` or `.lock`"));
    }
    if branch
        .split('/')
        .any(|part| part.is_empty() || part.starts_with('.') || part.ends_with(".lock"))
    {
        return Err(bad(
            "a part between slashes is empty, starts with `.` or ends with `.lock`",
        ));
    }
    Ok(branch.to_string())
}

/// One argument as a POSIX shell would take it back. An argument with a control character
/// (a prompt's newline) is written `$'…'` with escapes, so that the command line stays one line
/// of the approval and no argument can lay out lines that look like the approval's own.
fn shell_quote(arg: &str) -> String {
    let plain = !arg.is_empty()
        && arg
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./=:@,+%".contains(&b));
    if plain {
        return arg.to_string();
    }
    // Line and paragraph separators too: some terminals and pages break lines at them.
    let special = |c: char| c.is_control() || matches!(c, '\u{2028}' | '\u{2029}');
    if !arg.chars().any(special) {
        return format!("'{}'", arg.replace('\'', r"'\''"));
    }
    let mut quoted = String::with_capacity(arg.len() + 3);
    quoted.push_str("$'");
    for c in arg.chars() {
        match c {
            '\n' => quoted.push_str(r"\n"),
            '\t' => quoted.push_str(r"\t"),
            '\r' => quoted.push_str(r"\r"),
            '\\' => quoted.push_str(r"\\"),
            '\'' => quoted.push_str(r"\'"),
            c if c.is_control() && u32::from(c) < 0x80 => {
                quoted.push_str(&format!(r"\x{:02x}", u32::from(c)));
            }
            // C1 controls and the separators: as their UTF-8 bytes, which `$'…'` takes back.
            c if special(c) => {
                let mut bytes = [0; 4];
                for b in c.encode_utf8(&mut bytes).bytes() {
                    quoted.push_str(&format!(r"\x{b:02x}"));
                }
            }
            c => quoted.push(c),
        }
    }
    quoted.push('\'');
    quoted
}

/// The sessions of one project. Cheap to clone.
#[derive(Clone)]
pub struct Sessions {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    /// The canonical project root: sessions run inside it.
    pub(crate) root: PathBuf,
    /// The root as the workspace tools confine paths to it, their protected paths included: a
    /// session's `cwd` is resolved by the same rule (no link out, never toolmux's state), and
    /// an ACP agent's files are confined to a folder of it.
    confine: ProjectRoot,
    pub(crate) state_dir: PathBuf,
    pub(crate) store: Arc<dyn SessionStore>,
    runners: RwLock<Vec<Runner>>,
    cache: DetectionCache,
    specs: Option<SpecsSource>,
    /// The sessions this process runs: their cancel tokens.
    pub(crate) live: Mutex<HashMap<String, CancellationToken>>,
    /// Who answers an ACP agent's permission requests when the caller has no approver.
    pub(crate) approver: Option<Arc<dyn Approver>>,
}

/// Who started a session: the call's channel and conversation, and the approval time limit
/// configured where it was called (`defaults.approvalTimeoutMs`) — what an ACP agent's
/// permission requests are recorded under and how long each waits for a person.
#[derive(Clone, Debug)]
pub struct StartedBy {
    /// The channel of the call that started it.
    pub channel: Channel,
    /// Its conversation or session, when there is one.
    pub session: Option<String>,
    /// How long a person has to answer a permission request.
    pub approval_timeout: std::time::Duration,
}

impl std::fmt::Debug for Sessions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sessions")
            .field("root", &self.inner.root)
            .finish_non_exhaustive()
    }
}

impl Sessions {
    /// The sessions of the project at `root` (the root the workspace tools are given, so
    /// that an ACP agent's writes are refused what theirs are), kept under `state_dir`, with
    /// the configured `runners`; `specs` builds prompts from specs. Sessions left `running` by
    /// a toolmux process that is gone are marked `lost` now (and what is left of them stopped).
    pub fn open(
        root: &ProjectRoot,
        state_dir: &Path,
        runners: &BTreeMap<String, RunnerSettings>,
        specs: Option<SpecsSource>,
        approver: Option<Arc<dyn Approver>>,
    ) -> Result<Self, SessionError> {
        let store: Arc<dyn SessionStore> = Arc::new(DirStore::new(state_dir));
        Self::with_store(root, state_dir, store, runners, specs, approver)
    }

    /// The sessions of a project as the binary opens them: the spec pack read from the
    /// project's specs directory (found as LeanSpec finds it, `LEANSPEC_SPECS_DIR` included)
    /// to build prompts from specs; without one, sessions take prompts only.
    pub fn for_project(
        root: &ProjectRoot,
        state_dir: &Path,
        runners: &BTreeMap<String, RunnerSettings>,
        approver: Option<Arc<dyn Approver>>,
    ) -> Result<Self, SessionError> {
        let override_dir = std::env::var(toolmux_specs::SPECS_DIR_ENV).ok();
        let specs = match SpecsSource::open_with(root.path(), override_dir.as_deref()) {
            Ok(specs) => specs,
            Err(e) => {
                tracing::warn!("sessions cannot build prompts from specs: {e}");
                None
            }
        };
        Self::open(root, state_dir, runners, specs, approver)
    }

    /// [`Sessions::open`] on another store.
    pub fn with_store(
        root: &ProjectRoot,
        state_dir: &Path,
        store: Arc<dyn SessionStore>,
        runners: &BTreeMap<String, RunnerSettings>,
        specs: Option<SpecsSource>,
        approver: Option<Arc<dyn Approver>>,
    ) -> Result<Self, SessionError> {
        let sessions = Self {
            inner: Arc::new(Inner {
                root: root.path().to_path_buf(),
                confine: root.clone(),
                state_dir: state_dir.to_path_buf(),
                store,
                runners: RwLock::new(crate::runners::resolve(runners)),
                cache: DetectionCache::new(state_dir),
                specs,
                live: Mutex::new(HashMap::new()),
                approver,
            }),
        };
        sessions.mark_lost();
        Ok(sessions)
    }

    /// Puts a changed `runners` section in force (sessions already running keep theirs).
    pub fn set_runners(&self, runners: &BTreeMap<String, RunnerSettings>) {
        *self
            .inner
            .runners
            .write()
            .unwrap_or_else(PoisonError::into_inner) = crate::runners::resolve(runners);
    }

    /// The store.
    pub fn store(&self) -> &Arc<dyn SessionStore> {
        &self.inner.store
    }

    /// The project's root as the workspace tools confine to it.
    pub(crate) fn confine(&self) -> &ProjectRoot {
        &self.inner.confine
    }

    /// Where the store keeps its files.
    pub fn state_dir(&self) -> &Path {
        &self.inner.state_dir
    }

    /// Every runner, with what the last detection found (read from the cache: nothing runs).
    pub fn runners(&self) -> Vec<(Runner, Option<Detection>)> {
        let cached = self.inner.cache.read();
        let told = self.agent_versions();
        self.runner_list()
            .into_iter()
            .map(|r| {
                let mut d = cached.get(&r.name).cloned();
                // An ACP agent's `--version` often says nothing (an adapter started only to
                // speak the protocol): the version it gave when a session initialized it
                // stands in.
                if let Some(d) = &mut d
                    && d.installed
                    && d.version.is_none()
                    && let Some(version) = told.get(&r.name)
                {
                    d.version = Some(version.clone());
                    d.error = None;
                }
                (r, d)
            })
            .collect()
    }

    /// Per runner, the version its newest session's ACP agent gave in `initialize`.
    fn agent_versions(&self) -> std::collections::HashMap<String, String> {
        let mut told = std::collections::HashMap::new();
        match self.list(None) {
            // Newest first: the first version seen per runner is the newest.
            Ok(records) => {
                for record in records {
                    if let Some(version) = record.agent_version {
                        told.entry(record.runner).or_insert(version);
                    }
                }
            }
            Err(e) => tracing::warn!("the sessions cannot be read for agents' versions: {e}"),
        }
        told
    }

    fn runner_list(&self) -> Vec<Runner> {
        self.inner
            .runners
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn runner(&self, name: &str) -> Result<Runner, SessionError> {
        let runners = self.runner_list();
        runners
            .iter()
            .find(|r| r.name == name)
            .cloned()
            .ok_or_else(|| SessionError::UnknownRunner {
                name: name.to_string(),
                known: runners
                    .iter()
                    .map(|r| r.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            })
    }

    /// Detects the runners named (all with none): a cached detection is kept while the
    /// program is unchanged, unless `refresh`.
    pub async fn detect(&self, names: &[String], refresh: bool) -> Vec<Detection> {
        let mut found = Vec::new();
        for runner in self.runner_list() {
            if !names.is_empty() && !names.contains(&runner.name) {
                continue;
            }
            let cached = (!refresh)
                .then(|| self.inner.cache.fresh(&runner))
                .flatten();
            found.push(match cached {
                Some(d) => d,
                None => crate::runners::detect(&runner, &self.inner.root).await,
            });
        }
        if let Err(e) = self.inner.cache.store(&found) {
            tracing::warn!("the runner detection cache cannot be written: {e}");
        }
        found
    }

    /// What a session for `request` would run; changes nothing (the approval shows it).
    pub fn plan(&self, request: &RunRequest) -> Result<Plan, SessionError> {
        let runner = self.runner(&request.runner)?;
        let program =
            crate::runners::which(&runner.command).ok_or_else(|| SessionError::NotInstalled {
                name: runner.name.clone(),
                command: runner.command.clone(),
                install: runner.install.clone(),
            })?;
        let (prompt, specs) = crate::prompt::build(
            request.prompt.as_deref(),
            &request.specs,
            self.inner.specs.as_ref(),
        )?;
        let id = uuid::Uuid::now_v7().to_string();
        let relative = self.relative_cwd(request.cwd.as_deref())?;
        let caller_env = checked_caller_env(&runner, &request.env)?;
        let worktree = if request.worktree {
            Some(Worktree {
                path: self.inner.root.join(".toolmux").join("worktrees").join(&id),
                branch: match &request.branch {
                    Some(branch) => checked_branch(branch)?,
                    None => format!("toolmux/session-{id}"),
                },
            })
        } else {
            None
        };
        let base = worktree.as_ref().map_or(&self.inner.root, |w| &w.path);
        let cwd = base.join(&relative);
        let mut env = runner.env.clone();
        env.extend(caller_env.clone());
        env.insert("LEANSPEC_PROJECT_PATH".into(), base.display().to_string());
        if !specs.is_empty() {
            env.insert("LEANSPEC_SPEC_IDS".into(), specs.join(","));
        }
        env.insert(SESSION_ID_VAR.into(), id.clone());
        let timeout = Duration::from_millis(request.timeout_ms.unwrap_or(runner.timeout_ms).max(1));
        let args = runner.argv(&prompt, request.model.as_deref())?;
        Ok(Plan {
            id,
            model: request.model.clone().or(runner.model.clone()),
            runner,
            program,
            args,
            prompt,
            specs,
            cwd,
            worktree,
            env,
            caller_env,
            timeout,
        })
    }

    /// `cwd` resolved as the workspace tools resolve a path ([`ProjectRoot::resolve`]: no `..`
    /// above the root, no link leading out, never toolmux's state), then refused inside `.git`
    /// (git's data and hooks) or `.toolmux` (toolmux's configuration, state and worktrees): one
    /// rule for where a model may point a tool, and an ACP agent's files are confined to this
    /// folder. Returns the folder relative to the root, with no link left in it.
    fn relative_cwd(&self, cwd: Option<&str>) -> Result<PathBuf, SessionError> {
        let Some(cwd) = cwd.filter(|c| !c.is_empty() && *c != ".") else {
            return Ok(PathBuf::new());
        };
        let outside = || {
            SessionError::Invalid(format!(
                "`cwd` must be a folder inside the project root `{}`: `{cwd}` is not",
                self.inner.root.display()
            ))
        };
        let reserved = || {
            SessionError::Invalid(format!(
                "`cwd` `{cwd}` is inside `.git` or `.toolmux` (git's and toolmux's own data); \
                 a session runs in a folder of the project"
            ))
        };
        let path = Path::new(cwd);
        let relative = if path.is_absolute() {
            path.strip_prefix(&self.inner.root).map_err(|_| outside())?
        } else {
            path
        };
        let text = relative.to_str().ok_or_else(outside)?;
        let real = match self.inner.confine.resolve(text) {
            Ok(real) => real,
            Err(PathError::State { .. }) => return Err(reserved()),
            Err(
                PathError::Absolute { .. }
                | PathError::Escapes { .. }
                | PathError::SymlinkEscapes { .. }
                | PathError::Tilde { .. },
            ) => return Err(outside()),
            Err(e) => return Err(SessionError::Invalid(format!("`cwd`: {e}"))),
        };
        let relative = real.strip_prefix(&self.inner.root).map_err(|_| outside())?;
        if relative.components().any(|c| {
            let name = c.as_os_str();
            name.eq_ignore_ascii_case(".git") || name.eq_ignore_ascii_case(".toolmux")
        }) {
            return Err(reserved());
        }
        if !real.is_dir() {
            return Err(SessionError::Invalid(format!(
                "`cwd` `{cwd}` is not a folder"
            )));
        }
        Ok(relative.to_path_buf())
    }

    /// Starts a session: creates its worktree, starts its process, and leaves it running in
    /// the background. The record returned says `running` (or `failed` when it could not
    /// start). `approver` answers an ACP agent's permission requests (the sessions' own when
    /// it is `None`), which are recorded under `started_by`'s channel and conversation and
    /// wait at most its approval time limit.
    pub async fn start(
        &self,
        plan: Plan,
        started_by: Option<StartedBy>,
        approver: Option<Arc<dyn Approver>>,
    ) -> Result<SessionRecord, SessionError> {
        let channel = started_by.as_ref().map(|by| by.channel.to_string());
        let mut record = SessionRecord {
            id: plan.id.clone(),
            runner: plan.runner.name.clone(),
            protocol: plan.runner.protocol,
            status: Status::Pending,
            prompt: plan.prompt.clone(),
            specs: plan.specs.clone(),
            model: plan.model.clone(),
            cwd: plan.cwd.clone(),
            worktree: plan.worktree.clone(),
            command: std::iter::once(plan.program.display().to_string())
                .chain(plan.args.iter().cloned())
                .collect(),
            env: plan.env.keys().cloned().collect(),
            timeout_ms: plan.timeout.as_millis() as u64,
            channel,
            created_at: chrono::Utc::now(),
            started_at: None,
            ended_at: None,
            duration_ms: None,
            exit_code: None,
            error: None,
            agent_version: None,
            final_answer: None,
            log_lines: 0,
            pgid: None,
            owner: Owner::current(),
        };
        self.inner.store.save(&record)?;
        if let Some(worktree) = &plan.worktree
            && let Err(e) = crate::worktree::create(&self.inner.root, worktree).await
        {
            return self.fail_to_start(record, e);
        }
        if !plan.cwd.is_dir() {
            let e = SessionError::Invalid(format!("`{}` is not a folder", plan.cwd.display()));
            return self.fail_to_start(record, e);
        }
        let token = CancellationToken::new();
        self.live().insert(record.id.clone(), token.clone());
        // A session no call started (a library user, a test) records its permission requests
        // as the command line's, with the default approval time limit.
        let asker =
            approver
                .or_else(|| self.inner.approver.clone())
                .map(|approver| match started_by {
                    Some(by) => Asker::new(approver, by.channel)
                        .with_session(by.session)
                        .with_time_limit(by.approval_timeout),
                    None => Asker::new(approver, Channel::Cli),
                });
        match crate::supervise::launch(self.clone(), &plan, &mut record, token, asker).await {
            Ok(()) => Ok(record),
            Err(e) => {
                self.live().remove(&record.id);
                self.fail_to_start(record, e)
            }
        }
    }

    fn fail_to_start(
        &self,
        mut record: SessionRecord,
        e: SessionError,
    ) -> Result<SessionRecord, SessionError> {
        record.status = Status::Failed;
        record.error = Some(e.to_string());
        record.ended_at = Some(chrono::Utc::now());
        record.duration_ms = Some(0);
        self.inner.store.save(&record)?;
        Ok(record)
    }

    pub(crate) fn live(&self) -> std::sync::MutexGuard<'_, HashMap<String, CancellationToken>> {
        self.inner
            .live
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// One session's record.
    pub fn get(&self, id: &str) -> Result<SessionRecord, SessionError> {
        self.inner
            .store
            .load(id)?
            .ok_or_else(|| SessionError::UnknownSession(id.to_string()))
    }

    /// Every session, newest first; only those with `status` when given.
    pub fn list(&self, status: Option<Status>) -> Result<Vec<SessionRecord>, SessionError> {
        let mut all = self.inner.store.list()?;
        if let Some(status) = status {
            all.retain(|r| r.status == status);
        }
        Ok(all)
    }

    /// A page of a session's log.
    pub fn logs(&self, id: &str, offset: u64, limit: usize) -> Result<LogPage, SessionError> {
        self.get(id)?;
        self.inner.store.read_log(id, offset, limit)
    }

    /// Cancels a running session: this process's own at once, another process's through the
    /// store (that process stops it within half a second).
    pub fn cancel(&self, id: &str) -> Result<SessionRecord, SessionError> {
        let record = self.get(id)?;
        if record.status.is_final() {
            return Err(SessionError::Ended {
                id: id.to_string(),
                status: record.status.to_string(),
            });
        }
        let token = self.live().get(id).cloned();
        match token {
            Some(token) => token.cancel(),
            None => self.inner.store.request_cancel(id)?,
        }
        Ok(record)
    }

    /// Waits until a session ended (polling its record), at most `limit`.
    pub async fn wait(&self, id: &str, limit: Duration) -> Result<SessionRecord, SessionError> {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let record = self.get(id)?;
            if record.status.is_final() || tokio::time::Instant::now() >= deadline {
                return Ok(record);
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The ids of the sessions this process runs now.
    pub fn running(&self) -> Vec<String> {
        self.live().keys().cloned().collect()
    }

    /// Cancels every session this process runs and waits (at most `limit`) until they are
    /// recorded as ended: what `serve` does when it stops.
    pub async fn shutdown(&self, limit: Duration) {
        let ids: Vec<String> = {
            let live = self.live();
            for token in live.values() {
                token.cancel();
            }
            live.keys().cloned().collect()
        };
        for id in ids {
            let _ = self.wait(&id, limit).await;
        }
    }

    /// Marks `lost` the sessions whose toolmux process is gone, and stops what is left of
    /// them: processes whose environment carries the session's id.
    fn mark_lost(&self) {
        let Ok(records) = self.inner.store.list() else {
            return;
        };
        for mut record in records {
            if record.status.is_final() || record.owner.is_alive() {
                continue;
            }
            if let Some(pgid) = record.pgid
                && carries_session(pgid, &record.id)
            {
                toolmux_scripts::child::signal_group(pgid, toolmux_scripts::child::Signal::Kill);
            }
            // What the group kill cannot reach: a group whose leader is gone, a child that
            // left it with `setsid`, an ACP agent (whose group is not recorded). Each carries
            // the session's id in its environment.
            #[cfg(unix)]
            kill_carriers(&record.id);
            let now = chrono::Utc::now();
            record.status = Status::Lost;
            record.error = Some(format!(
                "the toolmux process (pid {}) that ran this session ended before the session did",
                record.owner.pid
            ));
            record.duration_ms = record
                .started_at
                .map(|s| (now - s).num_milliseconds().max(0) as u64);
            record.ended_at = Some(now);
            record.pgid = None;
            if let Err(e) = self.inner.store.save(&record) {
                tracing::warn!("session {} cannot be marked lost: {e}", record.id);
            }
        }
    }
}

/// Kills every process whose environment carries session `id` (Linux's `/proc`; elsewhere
/// the group kill is all there is).
#[cfg(unix)]
fn kill_carriers(id: &str) {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return;
    };
    let me = std::process::id();
    for pid in entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| pid != me && carries_session(pid, id))
    {
        let Ok(pid) = i32::try_from(pid) else {
            continue;
        };
        // Gone already, or not ours to signal: nothing more can be done about it here.
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
}

/// Whether process `pid`'s environment holds `TOOLMUX_SESSION_ID=<id>`.
fn carries_session(pid: u32, id: &str) -> bool {
    let Ok(environ) = std::fs::read(format!("/proc/{pid}/environ")) else {
        return false;
    };
    let wanted = format!("{SESSION_ID_VAR}={id}");
    environ
        .split(|&b| b == 0)
        .any(|var| var == wanted.as_bytes())
}
