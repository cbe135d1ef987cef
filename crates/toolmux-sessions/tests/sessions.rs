//! Sessions of fake runners (small scripts under `fixtures/bin` that behave like the real
//! CLIs) run as real processes: detection, prompts from specs, failures, cancel, the time
//! limit, a runner that ignores SIGTERM and leaves a child behind, a runner that is not
//! installed, a toolmux process that died mid-run, and a worktree.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use toolmux_config::RunnerSettings;
use toolmux_sessions::{RunRequest, SESSION_ID_VAR, SessionError, Sessions, Status, Stream};
use toolmux_testkit::processes::processes_with_env;

mod common;
use common::{open, project_root, request};

async fn start(sessions: &Sessions, request: RunRequest) -> String {
    let plan = sessions.plan(&request).expect("a plan");
    let record = sessions.start(plan, None, None).await.expect("started");
    assert_eq!(record.status, Status::Running, "{record:?}");
    record.id
}

/// The processes whose environment names session `id`.
fn processes_of(id: &str) -> Vec<u32> {
    processes_with_env(&format!("{SESSION_ID_VAR}={id}"))
}

async fn assert_nothing_left(id: &str) {
    for _ in 0..50 {
        if processes_of(id).is_empty() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!(
        "processes of session {id} are still running: {:?}",
        processes_of(id)
    );
}

async fn wait_for_lines(sessions: &Sessions, id: &str, n: u64) {
    for _ in 0..200 {
        if sessions.logs(id, 0, 1000).expect("logs").entries.len() as u64 >= n {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("session {id} did not log {n} lines");
}

#[tokio::test]
async fn detection_finds_the_runner_and_reads_its_version() {
    let project = tempfile::tempdir().expect("temp");
    let sessions = open(project.path());
    let found = sessions
        .detect(&["claude".into(), "codex".into()], true)
        .await;
    let claude = found.iter().find(|d| d.name == "claude").expect("claude");
    assert!(claude.installed);
    assert_eq!(claude.version.as_deref(), Some("1.0.43"));
    let codex = found.iter().find(|d| d.name == "codex").expect("codex");
    assert_eq!(codex.version.as_deref(), Some("0.46.0"));
    // Cached: listing reads the cache and starts nothing.
    let listed = sessions.runners();
    let (_, cached) = listed
        .iter()
        .find(|(r, _)| r.name == "claude")
        .expect("listed");
    assert_eq!(
        cached.as_ref().and_then(|d| d.version.as_deref()),
        Some("1.0.43")
    );
    assert!(project.path().join(".toolmux/state/runners.json").exists());
}

#[tokio::test]
async fn a_runner_that_is_not_installed_is_named_with_how_to_install_it() {
    let project = tempfile::tempdir().expect("temp");
    let mut runners = BTreeMap::new();
    runners.insert(
        "gemini".to_string(),
        RunnerSettings {
            command: Some("gemini-not-installed-here".into()),
            ..Default::default()
        },
    );
    let sessions = Sessions::for_project(
        &project_root(project.path()),
        &project.path().join("s"),
        &runners,
        None,
    )
    .expect("open");
    let err = sessions
        .plan(&request("gemini", "hi"))
        .expect_err("not installed");
    assert!(matches!(err, SessionError::NotInstalled { .. }), "{err}");
    let message = err.to_string();
    assert!(
        message.contains("runner `gemini` is not installed"),
        "{message}"
    );
    assert!(
        message.contains("npm install -g @google/gemini-cli"),
        "{message}"
    );
    let err = sessions.plan(&request("nope", "hi")).expect_err("unknown");
    assert!(
        err.to_string().contains("there is no runner `nope`"),
        "{err}"
    );
}

#[tokio::test]
async fn a_session_runs_the_runner_with_its_prompt_and_logs_its_json_events() {
    let project = tempfile::tempdir().expect("temp");
    let sessions = open(project.path());
    let plan = sessions
        .plan(&request("claude", "add a login page"))
        .expect("plan");
    // The approval shows the exact command line, with the built-in flags.
    let preview = plan.preview();
    assert!(
        preview.contains(
            "-p --output-format stream-json --verbose --permission-mode acceptEdits -- 'add a login page'"
        ),
        "{preview}"
    );
    let id = sessions.start(plan, None, None).await.expect("start").id;
    let record = sessions
        .wait(&id, Duration::from_secs(20))
        .await
        .expect("wait");
    assert_eq!(record.status, Status::Completed, "{record:?}");
    assert_eq!(record.exit_code, Some(0));
    let written =
        std::fs::read_to_string(project.path().join("claude-was-here.txt")).expect("written");
    assert_eq!(written.trim(), "add a login page");
    let page = sessions.logs(&id, 0, 100).expect("logs");
    let assistant = page
        .entries
        .iter()
        .find(|e| e.json.as_ref().is_some_and(|j| j["type"] == "assistant"))
        .expect("the assistant event parsed");
    assert_eq!(assistant.text, "[assistant] working on: add a login page");
    assert!(
        page.entries
            .last()
            .is_some_and(|e| e.stream == Stream::Toolmux && e.text.contains("completed"))
    );
    // Persisted: another `Sessions` (a later toolmux process) reads the same record.
    let again = open(project.path());
    assert_eq!(again.get(&id).expect("record").status, Status::Completed);
}

#[tokio::test]
async fn a_prompt_is_built_from_specs_through_the_spec_pack() {
    let project = tempfile::tempdir().expect("temp");
    let spec = "---\nstatus: planned\ncreated: '2026-01-01'\n---\n\n# Login page\n\nA form with email and password.\n";
    std::fs::create_dir_all(project.path().join("specs/001-login-page")).expect("mkdir");
    std::fs::write(project.path().join("specs/001-login-page/README.md"), spec).expect("write");
    let sessions = open(project.path());
    let id = start(
        &sessions,
        RunRequest {
            runner: "claude".into(),
            specs: vec!["1".into()],
            ..Default::default()
        },
    )
    .await;
    let record = sessions
        .wait(&id, Duration::from_secs(20))
        .await
        .expect("wait");
    assert_eq!(record.status, Status::Completed, "{record:?}");
    assert_eq!(record.specs, ["001-login-page"]);
    let prompt =
        std::fs::read_to_string(project.path().join("claude-was-here.txt")).expect("written");
    assert!(
        prompt.starts_with("Implement the following specs:"),
        "{prompt}"
    );
    assert!(prompt.contains("## 001-login-page: Login page"), "{prompt}");
    assert!(
        prompt.contains("A form with email and password."),
        "{prompt}"
    );
    assert!(
        !prompt.contains("status: planned"),
        "the frontmatter is left out: {prompt}"
    );
}

#[tokio::test]
async fn a_failing_runner_fails_the_session_with_its_exit_code_and_stderr() {
    let project = tempfile::tempdir().expect("temp");
    let sessions = open(project.path());
    let id = start(&sessions, request("claude", "fail now")).await;
    let record = sessions
        .wait(&id, Duration::from_secs(20))
        .await
        .expect("wait");
    assert_eq!(record.status, Status::Failed);
    assert_eq!(record.exit_code, Some(3));
    let page = sessions.logs(&id, 0, 100).expect("logs");
    assert!(
        page.entries
            .iter()
            .any(|e| e.stream == Stream::Stderr && e.text == "something broke")
    );
}

#[tokio::test]
async fn cancel_mid_run_stops_the_runner_and_leaves_no_process() {
    let project = tempfile::tempdir().expect("temp");
    let sessions = open(project.path());
    let id = start(&sessions, request("claude", "slow")).await;
    wait_for_lines(&sessions, &id, 4).await;
    assert!(!processes_of(&id).is_empty(), "the runner runs");
    sessions.cancel(&id).expect("cancel");
    let record = sessions
        .wait(&id, Duration::from_secs(10))
        .await
        .expect("wait");
    assert_eq!(record.status, Status::Cancelled);
    assert_nothing_left(&id).await;
    // An ended session cannot be cancelled again: a conflict.
    let err = sessions.cancel(&id).expect_err("ended");
    assert!(matches!(err, SessionError::Ended { .. }));
}

#[tokio::test]
async fn the_time_limit_stops_the_runner() {
    let project = tempfile::tempdir().expect("temp");
    let sessions = open(project.path());
    let id = start(
        &sessions,
        RunRequest {
            timeout_ms: Some(600),
            ..request("claude", "slow")
        },
    )
    .await;
    let record = sessions
        .wait(&id, Duration::from_secs(10))
        .await
        .expect("wait");
    assert_eq!(record.status, Status::Failed);
    assert!(
        record
            .error
            .as_deref()
            .is_some_and(|e| e.contains("time limit")),
        "{record:?}"
    );
    assert!(record.duration_ms.is_some_and(|d| d < 5000), "{record:?}");
    assert_nothing_left(&id).await;
}

#[tokio::test]
async fn a_runner_that_ignores_sigterm_and_forks_a_child_is_stopped_with_its_child() {
    let project = tempfile::tempdir().expect("temp");
    let sessions = open(project.path());
    let id = start(&sessions, request("claude", "stubborn")).await;
    wait_for_lines(&sessions, &id, 3).await;
    // The runner, and the `setsid sleep` that left its group.
    assert!(processes_of(&id).len() >= 2, "{:?}", processes_of(&id));
    sessions.cancel(&id).expect("cancel");
    let record = sessions
        .wait(&id, Duration::from_secs(15))
        .await
        .expect("wait");
    assert_eq!(record.status, Status::Cancelled);
    assert_nothing_left(&id).await;
}

#[tokio::test]
async fn a_session_whose_toolmux_process_died_is_marked_lost_at_the_next_start() {
    let project = tempfile::tempdir().expect("temp");
    let state = project.path().join(".toolmux/state");
    let sessions = open(project.path());
    let id = start(&sessions, request("claude", "slow")).await;
    // As a toolmux process that was killed would leave it: `running`, owned by a process
    // that is gone.
    let mut record = sessions.get(&id).expect("record");
    let dead = std::process::Command::new("true").spawn().expect("spawn");
    let dead_pid = dead.id();
    let _ = { dead }.wait();
    record.owner.pid = dead_pid;
    let dir = state.join("sessions").join(&id);
    std::fs::write(
        dir.join("session.json"),
        serde_json::to_vec(&record).expect("json"),
    )
    .expect("write");
    let later = open(project.path());
    let lost = later.get(&id).expect("record");
    assert_eq!(lost.status, Status::Lost, "{lost:?}");
    assert!(
        lost.error
            .as_deref()
            .is_some_and(|e| e.contains("ended before the session did"))
    );
    // What it left running was stopped.
    assert_nothing_left(&id).await;
}

#[tokio::test]
async fn a_lost_session_without_a_recorded_group_still_has_everything_it_left_stopped() {
    let project = tempfile::tempdir().expect("temp");
    let state = project.path().join(".toolmux/state");
    let sessions = open(project.path());
    // A runner that ignores SIGTERM and a child that left its group with `setsid`.
    let id = start(&sessions, request("claude", "stubborn")).await;
    wait_for_lines(&sessions, &id, 3).await;
    assert!(processes_of(&id).len() >= 2, "{:?}", processes_of(&id));
    // As a killed toolmux would leave an ACP session (whose group is not recorded): running,
    // owned by a process that is gone, no group.
    let mut record = sessions.get(&id).expect("record");
    let dead = std::process::Command::new("true").spawn().expect("spawn");
    let dead_pid = dead.id();
    let _ = { dead }.wait();
    record.owner.pid = dead_pid;
    record.pgid = None;
    std::fs::write(
        state.join("sessions").join(&id).join("session.json"),
        serde_json::to_vec(&record).expect("json"),
    )
    .expect("write");
    let later = open(project.path());
    assert_eq!(later.get(&id).expect("record").status, Status::Lost);
    // Found by the session id in their environment, runner and escaped child alike.
    assert_nothing_left(&id).await;
}

#[tokio::test]
async fn a_worktree_session_runs_on_its_own_branch_and_is_left_for_the_user() {
    let project = tempfile::tempdir().expect("temp");
    let root = project.path();
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .args(args)
            .current_dir(root)
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@example.com")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@example.com")
            .output()
            .expect("git");
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    git(&["init", "-q", "-b", "main"]);
    std::fs::write(root.join("README.md"), "hello\n").expect("write");
    git(&["add", "."]);
    git(&["commit", "-q", "-m", "first"]);
    let sessions = open(root);
    let id = start(
        &sessions,
        RunRequest {
            worktree: true,
            branch: Some("agent/login".into()),
            ..request("claude", "write it")
        },
    )
    .await;
    let record = sessions
        .wait(&id, Duration::from_secs(20))
        .await
        .expect("wait");
    assert_eq!(record.status, Status::Completed, "{record:?}");
    let worktree = record.worktree.expect("a worktree");
    assert_eq!(worktree.branch, "agent/login");
    assert!(worktree.path.join("claude-was-here.txt").exists());
    assert!(
        !root.join("claude-was-here.txt").exists(),
        "the root is untouched"
    );
    assert!(git(&["branch", "--list", "agent/login"]).contains("agent/login"));
    assert!(git(&["worktree", "list"]).contains(&worktree.path.display().to_string()));
}

#[tokio::test]
async fn a_folder_outside_the_root_is_refused() {
    let project = tempfile::tempdir().expect("temp");
    let sessions = open(project.path());
    for cwd in ["..", "/tmp", "a/../../b"] {
        let err = sessions
            .plan(&RunRequest {
                cwd: Some(cwd.into()),
                ..request("claude", "hi")
            })
            .expect_err("outside");
        assert!(matches!(err, SessionError::Invalid(_)), "{cwd}: {err}");
    }
}

#[tokio::test]
async fn many_lines_are_all_kept_in_order() {
    let project = tempfile::tempdir().expect("temp");
    let sessions = open(project.path());
    let id = start(&sessions, request("claude", "lines 20000")).await;
    let record = sessions
        .wait(&id, Duration::from_secs(60))
        .await
        .expect("wait");
    assert_eq!(record.status, Status::Completed);
    let mut n = 0u64;
    let mut offset = 0;
    loop {
        let page = sessions.logs(&id, offset, 2000).expect("logs");
        for e in page.entries.iter().filter(|e| e.stream == Stream::Stdout) {
            n += 1;
            assert_eq!(e.text, format!("line {n}"));
        }
        offset = page.next_offset;
        if !page.more {
            break;
        }
    }
    assert_eq!(n, 20000);
}

/// The sessions of a project whose one runner, `test-agent`, is the ACP test agent; `approver`
/// answers its permission requests when the caller brings none.
fn acp_sessions(
    root: &Path,
    approver: Option<std::sync::Arc<dyn toolmux_core::Approver>>,
) -> Sessions {
    let mut runners = BTreeMap::new();
    runners.insert(
        "test-agent".to_string(),
        RunnerSettings {
            command: Some(env!("CARGO_BIN_EXE_toolmux-acp-test-agent").to_string()),
            args: Some(Vec::new()),
            protocol: Some(toolmux_config::RunnerProtocol::Acp),
            ..Default::default()
        },
    );
    Sessions::for_project(
        &project_root(root),
        &root.join(".toolmux/state"),
        &runners,
        approver,
    )
    .expect("open")
}

#[tokio::test]
async fn an_acp_session_logs_the_agents_updates_and_its_permission_goes_through_the_queue() {
    let project = tempfile::tempdir().expect("temp");
    let queue = std::sync::Arc::new(toolmux_core::ApprovalQueue::new());
    let approver: std::sync::Arc<dyn toolmux_core::Approver> = queue.clone();
    let sessions = acp_sessions(project.path(), Some(approver));
    let id = start(
        &sessions,
        request(
            "test-agent",
            "say hello\nwrite out.txt from the agent\nsay All done.",
        ),
    )
    .await;
    // The agent's write waits in the queue until a person answers it.
    let mut pending = Vec::new();
    for _ in 0..200 {
        pending = queue.pending(None);
        if !pending.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(pending.len(), 1, "one permission request waits");
    assert_eq!(sessions.get(&id).expect("record").status, Status::Running);
    queue
        .answer(pending[0].id, toolmux_core::Approval::Allow)
        .expect("answer");
    let record = sessions
        .wait(&id, Duration::from_secs(20))
        .await
        .expect("wait");
    assert_eq!(record.status, Status::Completed, "{record:?}");
    assert_eq!(
        std::fs::read_to_string(project.path().join("out.txt")).expect("written"),
        "from the agent"
    );
    // `session_status` has the answer (the message after the agent's last tool call) and the
    // version the agent gave in `initialize`; the runner's `--version` says nothing, so its
    // detection reads that version too.
    assert_eq!(record.final_answer.as_deref(), Some("All done."));
    assert_eq!(
        record.agent_version.as_deref(),
        Some(env!("CARGO_PKG_VERSION"))
    );
    sessions.detect(&[], true).await;
    let detected = sessions
        .runners()
        .into_iter()
        .find(|(runner, _)| runner.name == "test-agent")
        .and_then(|(_, detection)| detection)
        .expect("the runner was detected");
    assert_eq!(
        (detected.version.as_deref(), detected.error),
        (Some(env!("CARGO_PKG_VERSION")), None)
    );
    let kinds: Vec<String> = sessions
        .logs(&id, 0, 100)
        .expect("logs")
        .entries
        .into_iter()
        .filter(|e| e.stream == Stream::Acp)
        .filter_map(|e| e.kind)
        .collect();
    for kind in [
        "message_chunk",
        "tool_call",
        "permission_requested",
        "permission_answered",
    ] {
        assert!(kinds.iter().any(|k| k == kind), "no {kind} in {kinds:?}");
    }
}

/// Through the hub, as every channel starts a session: the agent's permission request waits in
/// the queue under the starting call's channel and conversation, for the hub's configured
/// approval time limit (a small one here), and nobody answering refuses it when that runs out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_acp_permission_waits_the_configured_approval_limit_under_the_callers_channel() {
    use std::sync::Arc;
    use toolmux_core::{Approval, ApprovalQueue, CallContext, Channel, Hub, HubSettings, NullSink};
    use toolmux_sessions::SessionsSource;

    let project = tempfile::tempdir().expect("temp");
    let sessions = acp_sessions(project.path(), None);
    let limit = Duration::from_millis(400);
    let settings = HubSettings {
        approval_timeout: limit,
        ..Default::default()
    };
    let hub = Hub::new(settings, Arc::new(NullSink));
    hub.add_source(Arc::new(
        SessionsSource::new(sessions.clone()).with_hub(hub.downgrade()),
    ));
    let queue = Arc::new(ApprovalQueue::new());
    let mut asked = queue.subscribe();
    let context = CallContext::new(Channel::Mcp)
        .with_session("conversation-9".to_string())
        .with_approver(queue.clone());
    let arguments = serde_json::json!({"runner": "test-agent", "prompt": "write out.txt data"});
    let calling = {
        let hub = hub.clone();
        tokio::spawn(async move { hub.call("run_session", arguments, &context).await })
    };
    // `run_session` itself is asked about first; allowed, the session starts.
    let run = asked.recv().await.expect("the call is asked about");
    assert_eq!(run.request.tool, "run_session");
    queue.answer(run.id, Approval::Allow).expect("waiting");
    let result = calling.await.expect("joined").expect("the call ran");
    assert!(!result.is_error, "{result:?}");
    let id = sessions.list(None).expect("list")[0].id.clone();
    assert_eq!(
        sessions.get(&id).expect("record").channel.as_deref(),
        Some("mcp")
    );

    // The agent's permission request: recorded under the call's channel and conversation, with
    // the configured limit; nobody answers it.
    let permission = asked.recv().await.expect("the agent asks");
    assert_eq!(permission.request.source, "acp:toolmux-acp-test-agent");
    assert_eq!(permission.request.channel, Channel::Mcp);
    assert_eq!(
        permission.request.session.as_deref(),
        Some("conversation-9")
    );
    assert_eq!(permission.request.time_limit, limit);
    let record = sessions
        .wait(&id, Duration::from_secs(20))
        .await
        .expect("wait");
    assert_eq!(record.status, Status::Completed, "{record:?}");
    let said: Vec<String> = sessions
        .logs(&id, 0, 100)
        .expect("logs")
        .entries
        .into_iter()
        .filter(|e| e.stream == Stream::Acp)
        .map(|e| e.text)
        .collect();
    assert!(
        said.iter()
            .any(|t| t == "permission denied: not writing out.txt (nobody answered within 400ms)"),
        "{said:?}"
    );
    assert!(queue.pending(None).is_empty(), "the request was withdrawn");
    assert!(!project.path().join("out.txt").exists());
    sessions.shutdown(Duration::from_secs(5)).await;
}
