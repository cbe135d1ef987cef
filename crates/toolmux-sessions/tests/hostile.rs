//! Hostile `run_session` arguments, as a model (over MCP or REST) may send them, against the
//! real planner and real processes (the fake runners under `fixtures/bin` read their command
//! line as the real CLIs' parsers do): a prompt that looks like an option (D35), environment
//! variables that change what runs and values the approval must show (D36), a session folder
//! in `.git` or toolmux's own directory (D37), a branch or model that looks like an option,
//! and an ACP agent whose folder holds toolmux's state.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use toolmux_config::{RunnerProtocol, RunnerSettings};
use toolmux_core::{Approval, ApprovalRequest, Approver, Asker, Channel};
use toolmux_sessions::acp::{AcpEvent, AcpLaunch, run_acp};
use toolmux_sessions::{
    CALLER_ENV_ALLOWED, MAX_CALLER_ENV_NAME_BYTES, MAX_CALLER_ENV_VALUE_BYTES, MAX_CALLER_ENV_VARS,
    RunRequest, SessionError, SessionRecord, Sessions, Status,
};

use toolmux_workspace::ProjectRoot;

mod common;
use common::{fixture, open, open_with, project_root, request, settings};

fn invalid(result: Result<toolmux_sessions::Plan, SessionError>, what: &str) -> String {
    match result {
        Err(e @ SessionError::Invalid(_)) => e.to_string(),
        Err(e) => panic!("{what}: refused, but not as invalid: {e}"),
        Ok(plan) => panic!("{what}: accepted: {}", plan.preview()),
    }
}

/// Runs `request` to its end and returns what the fake runner read from its command line:
/// its `argv` event (`prompt`, `options`).
async fn argv_read_by_the_runner(sessions: &Sessions, request: RunRequest) -> Value {
    let plan = sessions.plan(&request).expect("a plan");
    let id = sessions.start(plan, None, None).await.expect("started").id;
    let record = sessions
        .wait(&id, Duration::from_secs(30))
        .await
        .expect("wait");
    assert_eq!(record.status, Status::Completed, "{record:?}");
    let page = sessions.logs(&id, 0, 100).expect("logs");
    page.entries
        .iter()
        .find_map(|e| e.json.clone().filter(|j| j["type"] == "argv"))
        .unwrap_or_else(|| panic!("no argv event in {:?}", page.entries))
}

// D35 ---------------------------------------------------------------------------------------

#[tokio::test]
async fn a_prompt_that_looks_like_an_option_reaches_codex_and_claude_as_their_prompt() {
    let project = tempfile::tempdir().expect("temp");
    let sessions = open(project.path());
    for (runner, prompt) in [
        ("codex", "--dangerously-bypass-approvals-and-sandbox"),
        ("claude", "--dangerously-skip-permissions"),
        ("claude", "-rf /"),
        ("codex", "--"),
    ] {
        let read = argv_read_by_the_runner(&sessions, request(runner, prompt)).await;
        assert_eq!(read["prompt"], prompt, "{runner}: {read}");
        let options = read["options"].as_array().expect("options");
        assert!(
            !options.iter().any(|o| o == prompt),
            "{runner} read the prompt as an option: {read}"
        );
    }
    // The approval shows the prompt where the runner takes it: after `--`.
    let preview = sessions
        .plan(&request(
            "codex",
            "--dangerously-bypass-approvals-and-sandbox",
        ))
        .expect("plan")
        .preview();
    assert!(
        preview.contains("--sandbox workspace-write -- --dangerously-bypass-approvals-and-sandbox"),
        "{preview}"
    );
}

#[tokio::test]
async fn a_configured_runner_with_a_bare_prompt_refuses_a_prompt_that_starts_with_a_dash() {
    let project = tempfile::tempdir().expect("temp");
    let mut extra = BTreeMap::new();
    // Its own runner, `{prompt}` bare (the default for a configured runner).
    extra.insert("bare".to_string(), settings(&fixture("codex")));
    // The same program with `--` before the prompt.
    extra.insert(
        "separated".to_string(),
        RunnerSettings {
            args: Some(vec!["exec".into(), "--".into(), "{prompt}".into()]),
            ..settings(&fixture("codex"))
        },
    );
    // `{prompt}` appended (no placeholder), no `--`.
    extra.insert(
        "appended".to_string(),
        RunnerSettings {
            args: Some(vec!["exec".into(), "--json".into()]),
            ..settings(&fixture("codex"))
        },
    );
    let sessions = open_with(project.path(), extra);
    for runner in ["bare", "appended"] {
        let message = invalid(
            sessions.plan(&request(
                runner,
                "--dangerously-bypass-approvals-and-sandbox",
            )),
            runner,
        );
        assert!(message.contains("starts with `-`"), "{message}");
        assert!(
            message.contains(&format!("`runners.{runner}.args`")),
            "{message}"
        );
        // An ordinary prompt still runs.
        let read = argv_read_by_the_runner(&sessions, request(runner, "fix the bug")).await;
        assert_eq!(read["prompt"], "fix the bug");
    }
    let read = argv_read_by_the_runner(&sessions, request("separated", "-rf /")).await;
    assert_eq!(read["prompt"], "-rf /");
    assert_eq!(read["options"], serde_json::json!([]));
}

#[tokio::test]
async fn a_model_that_looks_like_an_option_is_refused() {
    let project = tempfile::tempdir().expect("temp");
    let sessions = open(project.path());
    for model in ["--dangerously-bypass-approvals-and-sandbox", "-x"] {
        let message = invalid(
            sessions.plan(&RunRequest {
                model: Some(model.into()),
                ..request("codex", "hi")
            }),
            model,
        );
        assert!(message.contains("starts with `-`"), "{message}");
    }
    // A real model goes with its flag, among the options.
    let plan = sessions
        .plan(&RunRequest {
            model: Some("o3".into()),
            ..request("codex", "hi")
        })
        .expect("plan");
    assert_eq!(
        &plan.args[plan.args.len() - 4..],
        ["--model", "o3", "--", "hi"]
    );
}

/// Prompts a model could send, hostile and plain, small and huge.
fn generated_prompts() -> Vec<String> {
    let mut prompts: Vec<String> = [
        "-",
        "--",
        "-p",
        "--yolo",
        "--model=x",
        "--prompt=--yolo",
        "-- x",
        "{model}",
        "{prompt}",
        "{{prompt}}{model}{",
        "--a\n--b",
        "-é",
        "fix the bug",
        "\u{0}",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for size in [1usize, 10, 1_000, 100_000, 1 << 20] {
        prompts.push(format!("-{}", "x".repeat(size)));
        prompts.push("-".repeat(size));
        prompts.push("{".repeat(size));
        prompts.push("{prompt}".repeat(size / 8 + 1));
    }
    prompts
}

#[tokio::test]
async fn every_built_in_runner_keeps_any_prompt_out_of_its_options() {
    let project = tempfile::tempdir().expect("temp");
    let sessions = Sessions::for_project(
        &project_root(project.path()),
        &project.path().join(".toolmux/state"),
        &BTreeMap::new(),
        None,
    )
    .expect("open");
    let prompts = generated_prompts();
    let runners: Vec<_> = sessions
        .runners()
        .into_iter()
        .map(|(r, _)| r)
        .filter(|r| r.builtin)
        .collect();
    assert!(runners.len() >= 12, "{runners:?}");
    for runner in &runners {
        // The template: the prompt comes after `--`, or stuck to its option as `--name=`.
        for (i, template) in runner.args.iter().enumerate() {
            if template.contains("{prompt}") {
                let after_separator = runner.args[..i].iter().any(|a| a == "--");
                let stuck = template.starts_with("--") && template.ends_with("={prompt}");
                assert!(
                    after_separator || stuck,
                    "{}: `{template}` could be read as an option",
                    runner.name
                );
            }
        }
        for prompt in &prompts {
            let argv = runner
                .argv(prompt, Some("m"))
                .unwrap_or_else(|e| panic!("{} refused {prompt:.40?}: {e}", runner.name));
            if runner.protocol == RunnerProtocol::Acp {
                assert!(
                    !argv
                        .iter()
                        .any(|a| a.contains(prompt.as_str()) && prompt.len() > 2)
                );
                continue;
            }
            // The prompt is there exactly as written (placeholders in it left alone), once:
            // alone after `--`, or as the value stuck to an option before it.
            let separator = argv.iter().position(|a| a == "--").unwrap_or(argv.len());
            let (options, operands) = argv.split_at(separator);
            let stuck = options
                .iter()
                .filter(|a| {
                    a.starts_with("--") && a.split_once('=').is_some_and(|(_, v)| v == prompt)
                })
                .count();
            let operands = operands.get(1..).unwrap_or_default();
            assert!(
                (stuck == 1 && operands.is_empty()) || (stuck == 0 && operands == [prompt.clone()]),
                "{}: {prompt:.40?} in {argv:.200?}",
                runner.name
            );
            // The model is among the options, before any `--`.
            let model = argv
                .windows(2)
                .position(|w| w[0] == "--model" && w[1] == "m");
            assert!(
                model.is_some_and(|at| at < separator),
                "{}: {argv:.200?}",
                runner.name
            );
        }
    }
}

#[tokio::test]
async fn a_prompt_with_line_breaks_keeps_the_command_line_one_line_and_a_shell_reads_it_back() {
    let project = tempfile::tempdir().expect("temp");
    let sessions = open(project.path());
    let prompt = "fix it\nenv set by the call:\n  X=\"y\"\r\ttab \u{1b}[31mred \\ 'quote' \u{85} \u{2028} end";
    let plan = sessions.plan(&request("claude", prompt)).expect("plan");
    let line = plan.command_line();
    assert!(
        !line.contains(['\n', '\r', '\u{1b}', '\u{85}', '\u{2028}']),
        "{line:?}"
    );
    let preview = plan.preview();
    let shown = preview
        .lines()
        .find(|l| l.starts_with("command:"))
        .expect("the command line");
    assert!(shown.ends_with(&line), "{preview}");
    // bash reads the quoted arguments back to exactly what the runner gets.
    let program = plan.program.display().to_string();
    let arguments = line.strip_prefix(&program).expect("the program first");
    let out = std::process::Command::new("bash")
        .arg("-c")
        .arg(format!("printf '%s\\0'{arguments}"))
        .output()
        .expect("bash");
    assert!(out.status.success(), "{out:?}");
    let read: Vec<String> = String::from_utf8(out.stdout)
        .expect("utf-8")
        .split_terminator('\0')
        .map(str::to_string)
        .collect();
    assert_eq!(read, plan.args);
}

// D36 ---------------------------------------------------------------------------------------

fn with_env(runner: &str, env: &[(&str, &str)]) -> RunRequest {
    RunRequest {
        env: env
            .iter()
            .map(|(name, value)| (name.to_string(), value.to_string()))
            .collect(),
        ..request(runner, "hi")
    }
}

#[tokio::test]
async fn a_call_may_set_only_the_variables_its_runner_accepts() {
    let project = tempfile::tempdir().expect("temp");
    let mut extra = BTreeMap::new();
    extra.insert(
        "mine".to_string(),
        RunnerSettings {
            accept_env: vec!["FEATURE_FLAG".to_string(), "NODE_OPTIONS".to_string()],
            ..settings(&fixture("codex"))
        },
    );
    let sessions = open_with(project.path(), extra);
    // The old denylist's names, and those it missed: each runs code or redirects traffic.
    for name in [
        "LD_PRELOAD",
        "NODE_OPTIONS",
        "PATH",
        "path",
        "PYTHONPATH",
        "BASH_ENV",
        "GIT_SSH_COMMAND",
        "HOME",
        "HTTPS_PROXY",
        "LESSOPEN",
        "GCONV_PATH",
        "PIP_INDEX_URL",
        "UV_INDEX_URL",
        "NODE_TLS_REJECT_UNAUTHORIZED",
        "npm_config_registry",
        "RUSTC_WRAPPER",
        "DOTNET_STARTUP_HOOKS",
        "RUST_LOG",
        "ci",
    ] {
        let message = invalid(sessions.plan(&with_env("claude", &[(name, "x")])), name);
        assert_eq!(
            message,
            format!(
                "`env.{name}` is refused: runner `claude` accepts only CI FORCE_COLOR NO_COLOR \
                 from a call; a project that needs `{name}` lists it in \
                 `runners.claude.acceptEnv` (or sets its value in `runners.claude.env`) in \
                 .toolmux/config.json"
            )
        );
    }
    // The few every runner accepts, and what a runner's configuration adds (to it alone).
    let plan = sessions
        .plan(&with_env(
            "claude",
            &[("CI", "1"), ("NO_COLOR", "1"), ("FORCE_COLOR", "0")],
        ))
        .expect("the variables every runner accepts");
    assert_eq!(plan.caller_env.len(), 3);
    let plan = sessions
        .plan(&with_env(
            "mine",
            &[
                ("FEATURE_FLAG", "on"),
                ("NODE_OPTIONS", "--max-old-space-size=4096"),
                ("CI", "1"),
            ],
        ))
        .expect("the variables `mine` accepts");
    assert_eq!(plan.env["NODE_OPTIONS"], "--max-old-space-size=4096");
    assert_eq!(
        invalid(
            sessions.plan(&with_env("mine", &[("LD_PRELOAD", "x")])),
            "LD_PRELOAD"
        ),
        "`env.LD_PRELOAD` is refused: runner `mine` accepts only CI FORCE_COLOR NO_COLOR \
         FEATURE_FLAG NODE_OPTIONS from a call; a project that needs `LD_PRELOAD` lists it in \
         `runners.mine.acceptEnv` (or sets its value in `runners.mine.env`) in \
         .toolmux/config.json"
    );
    assert_eq!(
        invalid(
            sessions.plan(&with_env("claude", &[("FEATURE_FLAG", "on")])),
            "FEATURE_FLAG"
        ),
        "`env.FEATURE_FLAG` is refused: runner `claude` accepts only CI FORCE_COLOR NO_COLOR \
         from a call; a project that needs `FEATURE_FLAG` lists it in \
         `runners.claude.acceptEnv` (or sets its value in `runners.claude.env`) in \
         .toolmux/config.json"
    );
    assert_eq!(CALLER_ENV_ALLOWED, ["CI", "FORCE_COLOR", "NO_COLOR"]);
    // Names that are not variable names would set another variable than the one named
    // (`PATH=/evil:` reaches the process as `PATH`).
    for name in ["PATH=/evil:", "", "1X", "A B", "BASH_FUNC_ls%%", "X\0Y"] {
        let message = invalid(sessions.plan(&with_env("claude", &[(name, "x")])), name);
        assert_eq!(
            message,
            format!(
                "`env`: {name:?} is not a variable name (letters, digits and `_`, not starting \
                 with a digit)"
            )
        );
    }
}

#[tokio::test]
async fn many_or_huge_variables_are_refused_with_their_limits() {
    let project = tempfile::tempdir().expect("temp");
    let accepted: Vec<String> = (0..=MAX_CALLER_ENV_VARS).map(|i| format!("V{i}")).collect();
    let mut extra = BTreeMap::new();
    extra.insert(
        "mine".to_string(),
        RunnerSettings {
            accept_env: accepted.clone(),
            ..settings(&fixture("codex"))
        },
    );
    let sessions = open_with(project.path(), extra);
    let many = |n: usize| RunRequest {
        env: accepted[..n]
            .iter()
            .map(|name| (name.clone(), "x".to_string()))
            .collect(),
        ..request("mine", "hi")
    };
    assert_eq!(
        sessions
            .plan(&many(MAX_CALLER_ENV_VARS))
            .expect("as many as allowed")
            .caller_env
            .len(),
        MAX_CALLER_ENV_VARS
    );
    assert_eq!(
        invalid(
            sessions.plan(&many(MAX_CALLER_ENV_VARS + 1)),
            "one too many"
        ),
        "`env` sets 33 variables; a call may set at most 32"
    );
    // A huge name is not repeated back.
    let long = "A".repeat(1_000_000);
    assert_eq!(
        invalid(
            sessions.plan(&with_env("mine", &[(&long, "x")])),
            "a huge name"
        ),
        "`env`: a name of 1000000 bytes is not a variable name (at most 128 bytes)"
    );
    let name = "N".repeat(MAX_CALLER_ENV_NAME_BYTES + 1);
    assert_eq!(
        invalid(
            sessions.plan(&with_env("mine", &[(&name, "x")])),
            "a name one byte too long"
        ),
        "`env`: a name of 129 bytes is not a variable name (at most 128 bytes)"
    );
    let huge = "v".repeat(10 * 1024 * 1024);
    assert_eq!(
        invalid(
            sessions.plan(&with_env("mine", &[("V0", &huge)])),
            "a huge value"
        ),
        "`env.V0` is 10485760 bytes; a value may be at most 4096 bytes"
    );
    let over = "v".repeat(MAX_CALLER_ENV_VALUE_BYTES + 1);
    assert_eq!(
        invalid(
            sessions.plan(&with_env("mine", &[("V0", &over)])),
            "a value one byte too long"
        ),
        "`env.V0` is 4097 bytes; a value may be at most 4096 bytes"
    );
    let fits = "v".repeat(MAX_CALLER_ENV_VALUE_BYTES);
    assert_eq!(
        sessions
            .plan(&with_env("mine", &[("V0", &fits)]))
            .expect("a value at the limit")
            .env["V0"],
        fits
    );
    assert_eq!(
        invalid(
            sessions.plan(&with_env("mine", &[("V0", "a\0b")])),
            "a NUL byte"
        ),
        "`env.V0` holds a NUL byte"
    );
}

#[tokio::test]
async fn the_approval_shows_the_values_a_call_sets_and_hides_secret_looking_ones() {
    let project = tempfile::tempdir().expect("temp");
    let mut extra = BTreeMap::new();
    // The configuration may set anything, and its values (secrets, often) are not shown.
    extra.insert(
        "configured".to_string(),
        RunnerSettings {
            env: BTreeMap::from([
                ("LD_PRELOAD".to_string(), "/opt/configured.so".to_string()),
                (
                    "NODE_OPTIONS".to_string(),
                    "--max-old-space-size=4096".to_string(),
                ),
            ]),
            accept_env: vec!["FEATURE_FLAG".to_string(), "MY_API_KEY".to_string()],
            ..settings(&fixture("codex"))
        },
    );
    let sessions = open_with(project.path(), extra);
    let plan = sessions
        .plan(&RunRequest {
            env: BTreeMap::from([
                (
                    "FEATURE_FLAG".to_string(),
                    "on\nprompt:\nforged".to_string(),
                ),
                ("MY_API_KEY".to_string(), "sk-live-123".to_string()),
            ]),
            ..request("configured", "hi")
        })
        .expect("plan");
    let preview = plan.preview();
    assert!(
        preview.contains("FEATURE_FLAG=\"on\\nprompt:\\nforged\""),
        "{preview}"
    );
    assert!(
        !preview.lines().any(|l| l == "forged"),
        "a value forged a line: {preview}"
    );
    assert!(preview.contains("MY_API_KEY=(hidden"), "{preview}");
    assert!(!preview.contains("sk-live-123"), "{preview}");
    assert!(preview.contains("LD_PRELOAD"), "{preview}");
    assert!(!preview.contains("/opt/configured.so"), "{preview}");
    assert_eq!(plan.env["LD_PRELOAD"], "/opt/configured.so");
    assert_eq!(plan.env["MY_API_KEY"], "sk-live-123");
}

// D37 ---------------------------------------------------------------------------------------

#[tokio::test]
async fn a_session_may_not_run_in_git_or_toolmux_folders() {
    let project = tempfile::tempdir().expect("temp");
    let root = project.path();
    for dir in [
        ".toolmux/state/sessions",
        ".toolmux/worktrees/x",
        ".git/hooks",
        "sub/.git",
        "src",
    ] {
        std::fs::create_dir_all(root.join(dir)).expect("mkdir");
    }
    std::os::unix::fs::symlink(root.join(".toolmux/state"), root.join("state-link")).expect("link");
    std::os::unix::fs::symlink(".git", root.join("git-link")).expect("link");
    let sessions = open(root);
    let absolute_git = root.canonicalize().expect("root").join(".git");
    for cwd in [
        ".toolmux/state",
        ".toolmux/state/sessions",
        "./.toolmux/state",
        "src/../.toolmux/state",
        ".toolmux",
        ".toolmux/worktrees/x",
        ".git",
        ".git/hooks",
        "sub/.git",
        "state-link",
        "git-link",
        absolute_git.to_str().expect("utf-8"),
    ] {
        let message = invalid(
            sessions.plan(&RunRequest {
                cwd: Some(cwd.into()),
                ..request("claude", "hi")
            }),
            cwd,
        );
        assert!(message.contains("`.git` or `.toolmux`"), "{cwd}: {message}");
    }
    for (cwd, outside) in [("..", true), ("/etc", true), ("missing", false)] {
        let message = invalid(
            sessions.plan(&RunRequest {
                cwd: Some(cwd.into()),
                ..request("claude", "hi")
            }),
            cwd,
        );
        assert_eq!(
            message.contains("inside the project root"),
            outside,
            "{message}"
        );
    }
    let plan = sessions
        .plan(&RunRequest {
            cwd: Some("src".into()),
            ..request("claude", "hi")
        })
        .expect("a folder of the project");
    assert!(plan.cwd.ends_with("src"), "{:?}", plan.cwd);
}

#[tokio::test]
async fn a_branch_that_looks_like_an_option_is_refused_before_the_approval() {
    let project = tempfile::tempdir().expect("temp");
    let sessions = open(project.path());
    for branch in [
        "-D",
        "--force",
        "agent\nprompt: forged",
        "a b",
        "x..y",
        "",
        "a/",
        "a//b",
        ".hidden",
        "a.lock",
        "a@{1}",
    ] {
        let message = invalid(
            sessions.plan(&RunRequest {
                worktree: true,
                branch: Some(branch.into()),
                ..request("claude", "hi")
            }),
            branch,
        );
        assert!(message.contains("not a branch name"), "{message}");
    }
    let plan = sessions
        .plan(&RunRequest {
            worktree: true,
            branch: Some("agent/login-2".into()),
            ..request("claude", "hi")
        })
        .expect("a branch name");
    assert_eq!(plan.worktree.expect("worktree").branch, "agent/login-2");
}

// ACP ---------------------------------------------------------------------------------------

struct AllowAll;

#[async_trait]
impl Approver for AllowAll {
    async fn approve(&self, _request: &ApprovalRequest) -> Approval {
        Approval::Allow
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_acp_agent_cannot_read_toolmux_state_that_lies_inside_its_folder() {
    // A project whose root is its parent (`"root": ".."`): toolmux's state lies inside the
    // folder the agent is given, not at that folder's own `.toolmux/state`.
    let tmp = tempfile::tempdir().expect("temp");
    let root = tmp.path();
    let state = root.join("project/.toolmux/state");
    std::fs::create_dir_all(&state).expect("state");
    std::fs::write(state.join("local-token"), "the local token").expect("token");
    std::fs::write(root.join("notes.txt"), "ordinary notes").expect("notes");
    let launch = AcpLaunch {
        program: env!("CARGO_BIN_EXE_toolmux-acp-test-agent").into(),
        args: Vec::new(),
        env: Vec::new(),
        cwd: root.to_path_buf(),
        root: ProjectRoot::with_state_dir(root, &state).expect("the root"),
        prompt: "read project/.toolmux/state/local-token\nread notes.txt".into(),
    };
    let (tx, mut rx) = tokio::sync::mpsc::channel(64);
    let run = tokio::spawn(run_acp(
        launch,
        tx,
        Asker::new(Arc::new(AllowAll), Channel::Cli),
        CancellationToken::new(),
    ));
    let mut said = Vec::new();
    while let Some(event) = tokio::time::timeout(Duration::from_secs(30), rx.recv())
        .await
        .expect("the agent answers in time")
    {
        if let AcpEvent::MessageChunk(text) = event {
            said.push(text);
        }
    }
    let outcome = run.await.expect("no panic").expect("the run ends well");
    assert_eq!(outcome.stop_reason, "end_turn");
    assert!(
        said.iter().any(|s| s.starts_with("read refused:")),
        "{said:?}"
    );
    assert!(
        !said.iter().any(|s| s.contains("the local token")),
        "{said:?}"
    );
    assert!(
        said.contains(&"read: ordinary notes".to_string()),
        "{said:?}"
    );
}

/// The ACP test agent as runner `agent`.
fn acp_runner() -> BTreeMap<String, RunnerSettings> {
    let agent = RunnerSettings {
        command: Some(env!("CARGO_BIN_EXE_toolmux-acp-test-agent").to_string()),
        args: Some(Vec::new()),
        protocol: Some(RunnerProtocol::Acp),
        ..Default::default()
    };
    BTreeMap::from([("agent".to_string(), agent)])
}

/// Runs `request` to its end, every permission allowed: the record, and what the agent said.
async fn acp_session(sessions: &Sessions, request: RunRequest) -> (SessionRecord, Vec<String>) {
    let plan = sessions.plan(&request).expect("a plan");
    let record = sessions
        .start(plan, None, Some(Arc::new(AllowAll)))
        .await
        .expect("started");
    let ended = sessions
        .wait(&record.id, Duration::from_secs(30))
        .await
        .expect("the session ends");
    assert_eq!(ended.status, Status::Completed, "{ended:?}");
    let said = sessions
        .logs(&record.id, 0, 200)
        .expect("logs")
        .entries
        .into_iter()
        .filter(|e| e.kind.as_deref() == Some("message_chunk"))
        .map(|e| e.text)
        .collect();
    (ended, said)
}

/// What the agent says of a write to `path` (at `abs`) refused as a protected path of `kind`.
fn refused_as_protected(abs: &Path, path: &str, kind: &str) -> String {
    format!(
        "write refused: `{}`: `{path}` is {kind}, which defines what toolmux runs and how it is \
         sandboxed; the workspace tools never write it (a person edits it, or `toolmux config \
         set` does)",
        abs.display()
    )
}

/// Runs git in `root` as a test's author.
fn git(root: &Path, args: &[&str]) {
    let out = std::process::Command::new("git")
        .args(args)
        .current_dir(root)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .output()
        .expect("git");
    assert!(out.status.success(), "git {args:?}");
}

/// Found in review of issue 28 (D20's kind for sessions): an ACP agent's `fs/write_text_file`
/// was confined by a root of its own, which knew `.toolmux/` but not the registries the
/// configuration names (nor their link targets, nor the user's configuration): an agent could
/// rewrite `backend/mcp.json`, and the next reload ran the server it added. The sessions now
/// confine it with the root the binary gives the workspace tools, protection list included.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_acp_agent_cannot_write_the_configuration_or_a_registry_or_read_secrets() {
    let project = tempfile::tempdir().expect("temp");
    let root = project.path().canonicalize().expect("canonical");
    let state = root.join(".toolmux/state");
    std::fs::create_dir_all(&state).expect("state");
    std::fs::create_dir_all(root.join("backend")).expect("backend");
    let config = r#"{"registries": ["backend/mcp.json"]}"#;
    std::fs::write(root.join(".toolmux/config.json"), config).expect("config");
    std::fs::write(root.join("backend/mcp.json"), "{}").expect("registry");
    std::fs::write(state.join("secrets.enc"), "sealed secrets").expect("secrets");
    let confine = ProjectRoot::with_state_dir(&root, &state).expect("root");
    let loaded: toolmux_config::Config = serde_json::from_str(config).expect("a configuration");
    confine.protect(toolmux_workspace::ProtectedPaths::for_project(
        &root, &root, &loaded,
    ));
    let sessions = Sessions::for_project(&confine, &state, &acp_runner(), None).expect("open");
    let prompt = "write .toolmux/config.json {\"shell\":{\"sandbox\":false}}\n\
                  write backend/mcp.json {\"mcpServers\":{}}\n\
                  read .toolmux/state/secrets.enc\n\
                  write notes.txt fine";
    let (_, said) = acp_session(&sessions, request("agent", prompt)).await;
    let protected = |path: &str, kind: &str| refused_as_protected(&root.join(path), path, kind);
    assert_eq!(
        said,
        [
            "permission: allow".to_string(),
            protected(
                ".toolmux/config.json",
                "inside `.toolmux`, toolmux's own configuration"
            ),
            "permission: allow".to_string(),
            protected(
                "backend/mcp.json",
                "a tool registry named in the configuration's `registries`"
            ),
            format!(
                "read refused: `{}`: `.toolmux/state/secrets.enc` is inside `.toolmux/state`, \
                 toolmux's own state, which the workspace tools do not read",
                root.join(".toolmux/state/secrets.enc").display()
            ),
            "permission: allow".to_string(),
            "wrote notes.txt".to_string(),
        ]
    );
    assert_eq!(
        std::fs::read_to_string(root.join(".toolmux/config.json")).expect("config"),
        config
    );
    assert_eq!(
        std::fs::read_to_string(root.join("backend/mcp.json")).expect("registry"),
        "{}"
    );
    assert_eq!(
        std::fs::read_to_string(root.join("notes.txt")).expect("written"),
        "fine"
    );
}

/// Found with the fix above: a session's worktree lies under `.toolmux/worktrees`, inside the
/// protected `.toolmux/`, so an ACP agent working there was refused every write. The worktree
/// is a checkout toolmux never reads its settings from: the agent writes its files, while the
/// checkout's own `.toolmux/` stays refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_acp_agent_in_a_worktree_writes_the_checkout_but_not_its_toolmux_folder() {
    let dir = tempfile::tempdir().expect("temp");
    let root = dir.path().canonicalize().expect("canonical");
    git(&root, &["init", "-q", "-b", "main"]);
    std::fs::create_dir_all(root.join(".toolmux")).expect(".toolmux");
    std::fs::write(root.join(".toolmux/config.json"), "{}").expect("config");
    std::fs::write(root.join("README.md"), "hello\n").expect("readme");
    git(&root, &["add", "."]);
    git(&root, &["commit", "-q", "-m", "first"]);
    let sessions = Sessions::for_project(
        &project_root(&root),
        &root.join(".toolmux/state"),
        &acp_runner(),
        None,
    )
    .expect("open");
    let (record, said) = acp_session(
        &sessions,
        RunRequest {
            worktree: true,
            branch: Some("agent/acp".into()),
            ..request(
                "agent",
                "write notes.txt fine\nwrite .toolmux/config.json {}",
            )
        },
    )
    .await;
    let worktree = record.worktree.expect("a worktree").path;
    assert!(
        worktree.starts_with(root.join(".toolmux/worktrees")),
        "{worktree:?}"
    );
    assert_eq!(
        said,
        [
            "permission: allow".to_string(),
            "wrote notes.txt".to_string(),
            "permission: allow".to_string(),
            refused_as_protected(
                &worktree.join(".toolmux/config.json"),
                ".toolmux/config.json",
                "inside `.toolmux`, toolmux's own configuration"
            ),
        ]
    );
    assert_eq!(
        std::fs::read_to_string(worktree.join("notes.txt")).expect("written"),
        "fine"
    );
    assert!(!root.join("notes.txt").exists());
    assert_eq!(
        std::fs::read_to_string(root.join(".toolmux/config.json")).expect("config"),
        "{}"
    );
}

/// A repository with one commit (of `.toolmux/config.json`) in a temp folder, and its
/// canonical path.
fn committed_repository() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("temp");
    let root = dir.path().canonicalize().expect("canonical");
    git(&root, &["init", "-q", "-b", "main"]);
    std::fs::create_dir_all(root.join(".toolmux")).expect(".toolmux");
    std::fs::write(root.join(".toolmux/config.json"), "{}").expect("config");
    git(&root, &["add", "."]);
    git(&root, &["commit", "-q", "-m", "first"]);
    (dir, root)
}

/// Plans and starts (allowed) an ACP session in a worktree of `root`: what was recorded.
async fn start_in_a_worktree(root: &Path) -> SessionRecord {
    let sessions = Sessions::for_project(
        &project_root(root),
        &root.join(".toolmux/state"),
        &acp_runner(),
        None,
    )
    .expect("open");
    let plan = sessions
        .plan(&RunRequest {
            worktree: true,
            branch: Some("agent/planted".into()),
            ..request("agent", "write notes.txt fine")
        })
        .expect("a plan");
    sessions
        .start(plan, None, Some(Arc::new(AllowAll)))
        .await
        .expect("recorded")
}

/// Found in review of issue 28: where `.git` was writable, a command could write
/// `.git/commondir` naming a folder of its own, whose hooks toolmux's `git worktree add` for
/// the next worktree session then ran, outside any sandbox. The exec pack's sandbox now keeps
/// `commondir` read-only; a session refuses one that sends git elsewhere all the same, before
/// running git.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worktree_session_refuses_a_repository_that_commondir_sends_elsewhere() {
    use std::os::unix::fs::PermissionsExt;

    let (_dir, root) = committed_repository();
    // What the command planted: a repository of its own, with the project's objects so that
    // git works, and a hook.
    let planted = root.join("planted");
    let copied = std::process::Command::new("cp")
        .args(["-r", ".git"])
        .arg(&planted)
        .current_dir(&root)
        .status()
        .expect("cp");
    assert!(copied.success());
    let hook = planted.join("hooks/post-checkout");
    let marker = root.join("hook-ran");
    std::fs::write(&hook, format!("#!/bin/sh\ntouch '{}'\n", marker.display())).expect("hook");
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    std::fs::write(
        root.join(".git/commondir"),
        format!("{}\n", planted.display()),
    )
    .expect("commondir");
    let refused = start_in_a_worktree(&root).await;
    assert_eq!(refused.status, Status::Failed);
    assert_eq!(
        refused.error.as_deref(),
        Some(&*format!(
            "`{}` sends git to {:?} for its configuration and hooks, which neither git nor \
             toolmux makes in a main repository: something planted it to have git run its own \
             commands. Remove it (and look at what is there) before starting a session in a \
             worktree",
            root.join(".git/commondir").display(),
            planted.display().to_string()
        ))
    );
    assert!(!marker.exists(), "the planted hook ran");
    assert!(!root.join(".toolmux/worktrees").exists());
}

/// Found in review of issue 28: `.git/commondir` was read as it came — through a link, whole,
/// and waited on when it was a FIFO, which held the session's start until something wrote to
/// it. A FIFO there is refused at once, unread (the writer waiting on its other end is never
/// heard), and git never runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worktree_session_refuses_a_fifo_as_commondir_without_waiting() {
    let (_dir, root) = committed_repository();
    let commondir = root.join(".git/commondir");
    toolmux_testkit::fifo::mkfifo(&commondir);
    let refused = toolmux_testkit::fifo::read_with_a_writer(&commondir, b"planted\n", || {
        tokio::task::block_in_place(|| {
            tokio::runtime::Handle::current().block_on(start_in_a_worktree(&root))
        })
    });
    assert_eq!(refused.status, Status::Failed);
    assert_eq!(
        refused.error.as_deref(),
        Some(&*format!(
            "`{}` is not what git writes there (a FIFO, not a regular file): something planted \
             it. Remove it (and look at what is there) before starting a session in a worktree",
            commondir.display(),
        ))
    );
    assert!(!root.join(".toolmux/worktrees").exists());
}

// What the approval showed ----------------------------------------------------------------

/// A person who, while deciding, sees the runners change (a reload of the configuration), and
/// then allows.
struct RunnersChangeWhileDeciding {
    sessions: Sessions,
    runners: BTreeMap<String, RunnerSettings>,
}

#[async_trait]
impl Approver for RunnersChangeWhileDeciding {
    async fn approve(&self, _request: &ApprovalRequest) -> Approval {
        self.sessions.set_runners(&self.runners);
        Approval::Allow
    }
}

/// Found in review of issue 28 (rule 6, D30's kind for sessions): `run_session` planned again
/// when it ran, so a runner, a spec or `PATH` that changed while the person decided started
/// something they never saw — and a worktree session, whose plan carries a fresh id, could
/// never match its approval at all. Now the call starts the very plan its approval showed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_starts_the_plan_its_approval_showed() {
    use toolmux_core::{CallContext, Channel, Hub, HubSettings, NullSink};
    use toolmux_sessions::SessionsSource;

    let dir = tempfile::tempdir().expect("temp");
    let root = dir.path();
    git(root, &["init", "-q", "-b", "main"]);
    std::fs::write(root.join("README.md"), "hello\n").expect("write");
    git(root, &["add", "."]);
    git(root, &["commit", "-q", "-m", "first"]);
    let sessions = open(root);
    let hub = Hub::new(HubSettings::default(), Arc::new(NullSink));
    hub.add_source(Arc::new(SessionsSource::new(sessions.clone())));

    // While the person decides, `claude` is pointed at another program; what starts is the
    // program the approval named, in a worktree, under the session id the approval showed.
    let mut swapped = BTreeMap::new();
    swapped.insert("claude".to_string(), settings(&fixture("codex")));
    let person = Arc::new(RunnersChangeWhileDeciding {
        sessions: sessions.clone(),
        runners: swapped,
    });
    let context = CallContext::new(Channel::Rest).with_approver(person);
    let arguments = serde_json::json!({"runner": "claude", "prompt": "hi", "worktree": true});
    let result = hub
        .call("run_session", arguments, &context)
        .await
        .expect("the call ran");
    let said = serde_json::to_string(&result).expect("json");
    assert!(!result.is_error, "{said}");
    let started = sessions.list(None).expect("list");
    assert_eq!(started.len(), 1, "{said}");
    let claude = fixture("claude").display().to_string();
    assert_eq!(started[0].command.first(), Some(&claude), "{said}");
    let worktree = started[0].worktree.as_ref().expect("a worktree");
    assert!(
        worktree.branch.ends_with(&started[0].id),
        "{worktree:?} {}",
        started[0].id
    );
    sessions.shutdown(Duration::from_secs(5)).await;
}

/// Pages past the edges of a session's log and of the session list (issue 28, found in
/// review): what JSON Schema's `integer` admits but no u64 holds is refused naming the
/// argument, never read as absent (which gave the first page); past the end is an empty page.
#[tokio::test]
async fn log_and_list_pages_past_the_edges_are_refused_or_empty() {
    use toolmux_core::{CallContext, Channel, Hub, HubSettings, NullSink};
    use toolmux_sessions::SessionsSource;

    let project = tempfile::tempdir().expect("temp");
    let sessions = open(project.path());
    argv_read_by_the_runner(&sessions, request("codex", "hi")).await;
    let id = sessions.list(None).expect("list")[0].id.clone();
    let hub = Hub::new(HubSettings::default(), Arc::new(NullSink));
    hub.add_source(Arc::new(SessionsSource::new(sessions.clone())));
    let context = CallContext::new(Channel::Cli);
    let call = |tool: &'static str, arguments: Value| {
        let (hub, context) = (&hub, &context);
        async move {
            match hub.call(tool, arguments, context).await {
                Ok(result) if result.is_error => Err(result.text_content()),
                Ok(result) => Ok(result.structured_content.expect("structured")),
                Err(e) => Err(e.to_string()),
            }
        }
    };
    for (tool, arguments, error) in [
        (
            "session_logs",
            serde_json::json!({"id": id, "limit": 0}),
            "invalid arguments for `session_logs`: /limit: 0 is less than the minimum of 1",
        ),
        (
            "session_logs",
            serde_json::json!({"id": id, "offset": 1e30}),
            "`offset` must be a whole number from 0 to 18446744073709551615, not 1e+30",
        ),
        (
            "session_logs",
            serde_json::json!({"id": id, "limit": 3.0}),
            "`limit` must be a whole number from 1 to 2000, not 3.0",
        ),
        (
            "list_sessions",
            serde_json::json!({"limit": 1e30}),
            "`limit` must be a whole number from 1 to 18446744073709551615, not 1e+30",
        ),
    ] {
        assert_eq!(
            call(tool, arguments.clone()).await,
            Err(error.to_string()),
            "{tool} {arguments}"
        );
    }
    let past = call(
        "session_logs",
        serde_json::json!({"id": id, "offset": u64::MAX}),
    )
    .await
    .expect("an empty page");
    assert_eq!(past["entries"], serde_json::json!([]));
    assert_eq!(past["offset"], u64::MAX);
    assert_eq!(past["more"], false);
    let all = call("list_sessions", serde_json::json!({"limit": u64::MAX}))
        .await
        .expect("every session");
    assert_eq!(
        (all["count"].clone(), all["total"].clone()),
        (1.into(), 1.into())
    );
}
