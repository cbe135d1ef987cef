//! The ACP client against a real ACP agent: `toolmux-acp-test-agent`, built on the official
//! `agent-client-protocol` crate and started over stdio as a coding agent is. Permissions are
//! answered by an `Approver` of the test's; the approval queue's path from REST is the
//! sessions' own test.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use toolmux_core::{Approval, ApprovalQueue, ApprovalRequest, Approver, Asker, Channel};
use toolmux_sessions::acp::{AcpError, AcpEvent, AcpLaunch, AcpOutcome, run_acp};
use toolmux_testkit::eventually::eventually;
use toolmux_testkit::processes::{assert_no_process_left, processes_with, unique_sleep};
use toolmux_workspace::ProjectRoot;

const AGENT: &str = env!("CARGO_BIN_EXE_toolmux-acp-test-agent");

/// How long a run may take before the test fails instead of hanging.
const RUN_LIMIT: Duration = Duration::from_secs(30);

/// An approver that gives one answer (or none, ever) and keeps what it was asked.
struct Person {
    answer: Option<Approval>,
    asked: Mutex<Vec<ApprovalRequest>>,
}

impl Person {
    fn answering(answer: Option<Approval>) -> Arc<Self> {
        Arc::new(Self {
            answer,
            asked: Mutex::new(Vec::new()),
        })
    }

    fn asked(&self) -> Vec<ApprovalRequest> {
        self.asked.lock().expect("lock").clone()
    }
}

#[async_trait]
impl Approver for Person {
    async fn approve(&self, request: &ApprovalRequest) -> Approval {
        self.asked.lock().expect("lock").push(request.clone());
        match &self.answer {
            Some(answer) => answer.clone(),
            None => std::future::pending().await,
        }
    }
}

fn launch(cwd: &Path, prompt: &str) -> AcpLaunch {
    AcpLaunch {
        program: AGENT.into(),
        args: Vec::new(),
        env: Vec::new(),
        cwd: cwd.to_path_buf(),
        root: ProjectRoot::new(cwd).expect("the root"),
        prompt: prompt.to_string(),
    }
}

/// A run started in the background, its events collected as they come.
struct Running {
    run: tokio::task::JoinHandle<Result<AcpOutcome, AcpError>>,
    events: mpsc::Receiver<AcpEvent>,
    seen: Vec<AcpEvent>,
    cancel: CancellationToken,
}

impl Running {
    fn start(launch: AcpLaunch, approver: Arc<dyn Approver>) -> Self {
        Self::asking(launch, Asker::new(approver, Channel::Cli))
    }

    fn asking(launch: AcpLaunch, asker: Asker) -> Self {
        // A small channel: a slow reader holds the agent back instead of losing events.
        let (tx, events) = mpsc::channel(4);
        let cancel = CancellationToken::new();
        let run = tokio::spawn(run_acp(launch, tx, asker, cancel.clone()));
        Self {
            run,
            events,
            seen: Vec::new(),
            cancel,
        }
    }

    /// Reads events until one matches.
    async fn until(&mut self, what: &str, wanted: impl Fn(&AcpEvent) -> bool) {
        loop {
            let event = tokio::time::timeout(RUN_LIMIT, self.events.recv())
                .await
                .unwrap_or_else(|_| panic!("no {what} among {:?}", self.seen))
                .unwrap_or_else(|| panic!("the run ended without {what}: {:?}", self.seen));
            let found = wanted(&event);
            self.seen.push(event);
            if found {
                return;
            }
        }
    }

    /// Waits for the end of the run, reading its events meanwhile (the agent waits for a
    /// reader when the channel is full): its result and every event.
    async fn finish(mut self) -> (Result<AcpOutcome, AcpError>, Vec<AcpEvent>) {
        let deadline = tokio::time::sleep(RUN_LIMIT);
        let mut deadline = std::pin::pin!(deadline);
        let result = loop {
            tokio::select! {
                ended = &mut self.run => break ended.expect("the run does not panic"),
                Some(event) = self.events.recv() => self.seen.push(event),
                () = &mut deadline => panic!("the run did not end in time: {:?}", self.seen),
            }
        };
        // The sender went with the run, so the channel ends after what is buffered.
        while let Some(event) = self.events.recv().await {
            self.seen.push(event);
        }
        (result, self.seen)
    }
}

async fn run(
    cwd: &Path,
    prompt: &str,
    approver: Arc<dyn Approver>,
) -> (Result<AcpOutcome, AcpError>, Vec<AcpEvent>) {
    Running::start(launch(cwd, prompt), approver).finish().await
}

fn chunks(events: &[AcpEvent]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            AcpEvent::MessageChunk(text) => Some(text.clone()),
            _ => None,
        })
        .collect()
}

fn position(events: &[AcpEvent], what: &str, wanted: impl Fn(&AcpEvent) -> bool) -> usize {
    events
        .iter()
        .position(wanted)
        .unwrap_or_else(|| panic!("no {what} among {events:?}"))
}

fn stop_reason(result: Result<AcpOutcome, AcpError>) -> String {
    result.expect("the run succeeds").stop_reason
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_allowed_write_streams_in_order_and_lands_inside_the_directory() {
    let dir = tempfile::tempdir().expect("temp dir");
    let person = Person::answering(Some(Approval::Allow));
    let prompt = "say one\nsay two\nthink pondering\nplan\nsay three\n\
                  write notes/hello.txt hello from the agent";
    let (result, events) = run(dir.path(), prompt, person.clone()).await;

    assert_eq!(stop_reason(result), "end_turn");
    assert_eq!(
        chunks(&events),
        [
            "one",
            "two",
            "three",
            "permission: allow",
            "wrote notes/hello.txt"
        ],
        "chunks in order, and the agent was given the allow-once option, not allow-always"
    );
    assert!(events.contains(&AcpEvent::ThoughtChunk("pondering".into())));
    let plan = position(&events, "plan", |e| matches!(e, AcpEvent::Plan(_)));
    let AcpEvent::Plan(plan) = &events[plan] else {
        unreachable!()
    };
    assert_eq!(plan["entries"][0]["content"], "write the file");
    let call = position(
        &events,
        "tool call",
        |e| matches!(e, AcpEvent::ToolCall(c) if c["title"] == "Write notes/hello.txt"),
    );
    let asked = position(
        &events,
        "permission request",
        |e| matches!(e, AcpEvent::PermissionRequested(r) if r["toolCall"]["toolCallId"] == "write-1"),
    );
    let answered = position(&events, "permission answer", |e| {
        *e == AcpEvent::PermissionAnswered {
            outcome: "allow_once".into(),
        }
    });
    let wrote = position(&events, "the agent's report", |e| {
        *e == AcpEvent::MessageChunk("wrote notes/hello.txt".into())
    });
    let done = position(
        &events,
        "completed update",
        |e| matches!(e, AcpEvent::ToolCallUpdate(u) if u["status"] == "completed"),
    );
    assert!(call < asked && asked < answered && answered < wrote && wrote < done);

    let written = std::fs::read_to_string(dir.path().join("notes/hello.txt")).expect("written");
    assert_eq!(written, "hello from the agent");

    let asked = person.asked();
    assert_eq!(asked.len(), 1, "one question: {asked:?}");
    assert_eq!(asked[0].tool, "Write notes/hello.txt");
    assert_eq!(asked[0].source, "acp:toolmux-acp-test-agent");
    // Issue 29: the question is the agent's own (its title, its input, its options), marked so
    // that an MCP client's form shows it instead of "Allow `run_session` …" and raw JSON.
    let input = serde_json::to_string_pretty(&serde_json::json!({
        "path": dir.path().join("notes/hello.txt"),
        "content": "hello from the agent",
    }))
    .expect("json");
    assert_eq!(
        asked[0].message,
        format!(
            "The coding agent `toolmux-acp-test-agent` asks permission in `{}`: Write \
             notes/hello.txt\n\n{input}\n\nThe agent offers: “Allow once”, “Always allow”, \
             “Reject”. Allowing picks “Allow once”; denying picks “Reject”.",
            dir.path().display()
        )
    );
    assert!(asked[0].configured_message);
    assert_no_process_left(dir.path());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_denial_reaches_the_agent_and_nothing_is_written() {
    let dir = tempfile::tempdir().expect("temp dir");
    let person = Person::answering(Some(Approval::Deny {
        reason: "not today".into(),
    }));
    let prompt = "say before\nwrite hello.txt data\nsay after";
    let (result, events) = run(dir.path(), prompt, person.clone()).await;

    assert_eq!(stop_reason(result), "end_turn");
    assert_eq!(
        chunks(&events),
        [
            "before",
            "permission denied: not writing hello.txt (not today)"
        ],
        "the agent heard the denial and its reason, and stopped"
    );
    assert!(events.contains(&AcpEvent::PermissionAnswered {
        outcome: "reject_once".into()
    }));
    assert!(!dir.path().join("hello.txt").exists());
    assert_eq!(person.asked().len(), 1);
    assert_no_process_left(dir.path());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_and_writes_outside_the_directory_are_refused() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let outside = tmp.path().join("outside");
    let project = tmp.path().join("project");
    std::fs::create_dir_all(&outside).expect("outside");
    std::fs::create_dir_all(project.join(".git")).expect("project");
    std::fs::write(outside.join("secret.txt"), "top secret").expect("secret");
    std::fs::write(project.join("inside.txt"), "inside text").expect("inside");
    std::os::unix::fs::symlink(&outside, project.join("link")).expect("link");
    let prompt = format!(
        "write {abs}/abs.txt x\n\
         write ../outside/up.txt x\n\
         write link/via-link.txt x\n\
         write .git/config x\n\
         read {abs}/secret.txt\n\
         read link/secret.txt\n\
         read inside.txt",
        abs = outside.display()
    );
    let person = Person::answering(Some(Approval::Allow));
    let (result, events) = run(&project, &prompt, person).await;

    assert_eq!(stop_reason(result), "end_turn");
    let said = chunks(&events);
    let refused_writes = said
        .iter()
        .filter(|c| c.starts_with("write refused:"))
        .count();
    let refused_reads = said
        .iter()
        .filter(|c| c.starts_with("read refused:"))
        .count();
    assert_eq!(refused_writes, 4, "{said:?}");
    assert_eq!(refused_reads, 2, "{said:?}");
    assert!(
        said.iter()
            .any(|c| c.contains("outside the session's directory")),
        "{said:?}"
    );
    assert!(!said.iter().any(|c| c.contains("top secret")), "{said:?}");
    assert!(
        said.contains(&"read: inside text".to_string()),
        "a read inside works: {said:?}"
    );
    for left_alone in ["abs.txt", "up.txt", "via-link.txt"] {
        assert!(
            !outside.join(left_alone).exists(),
            "{left_alone} was written"
        );
    }
    assert!(!project.join(".git/config").exists());
    assert_no_process_left(&project);
}

/// Runs `prompt` with every permission allowed, until the agent says it spawned its child.
async fn running_once_spawned(dir: &Path, prompt: &str) -> Running {
    let mut running = Running::start(
        launch(dir, prompt),
        Person::answering(Some(Approval::Allow)),
    );
    running
        .until(
            "spawned",
            |e| matches!(e, AcpEvent::MessageChunk(t) if t.starts_with("spawned")),
        )
        .await;
    running
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_mid_prompt_stops_the_agent_and_leaves_no_process() {
    let dir = tempfile::tempdir().expect("temp dir");
    let marker = unique_sleep();
    let prompt = format!("say started\nspawn {marker}\nhang");
    let running = running_once_spawned(dir.path(), &prompt).await;
    assert_eq!(processes_with(&marker).len(), 1, "the agent's child runs");
    running.cancel.cancel();
    let (result, _) = running.finish().await;

    assert_eq!(stop_reason(result), "cancelled");
    assert!(
        processes_with(&marker).is_empty(),
        "the agent's child is gone"
    );
    assert_no_process_left(dir.path());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_deaf_to_cancel_is_killed() {
    let dir = tempfile::tempdir().expect("temp dir");
    let marker = unique_sleep();
    let prompt = format!("spawn {marker}\nhang-deaf");
    let running = running_once_spawned(dir.path(), &prompt).await;
    running.cancel.cancel();
    let (result, _) = running.finish().await;

    assert_eq!(stop_reason(result), "cancelled");
    assert!(
        processes_with(&marker).is_empty(),
        "the agent's child is gone"
    );
    assert_no_process_left(dir.path());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_while_a_person_is_asked_answers_the_agent_cancelled() {
    let dir = tempfile::tempdir().expect("temp dir");
    let person = Person::answering(None);
    let mut running = Running::start(launch(dir.path(), "write hello.txt data"), person.clone());
    running
        .until("permission request", |e| {
            matches!(e, AcpEvent::PermissionRequested(_))
        })
        .await;
    eventually(RUN_LIMIT, "the person is asked", async || {
        !person.asked().is_empty()
    })
    .await;
    running.cancel.cancel();
    let (result, events) = running.finish().await;

    assert_eq!(stop_reason(result), "cancelled");
    assert!(events.contains(&AcpEvent::PermissionAnswered {
        outcome: "cancelled".into()
    }));
    assert!(!dir.path().join("hello.txt").exists());
    assert_eq!(person.asked().len(), 1);
    assert_no_process_left(dir.path());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_that_dies_mid_prompt_is_an_error_naming_its_status() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (result, _) = run(
        dir.path(),
        "exit 3",
        Person::answering(Some(Approval::Allow)),
    )
    .await;
    let error = result.expect_err("the run fails");
    assert!(
        matches!(&error, AcpError::Exited { status, .. } if status.contains('3')),
        "{error:?}"
    );
    assert!(
        error.to_string().contains("toolmux-acp-test-agent"),
        "{error}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_agent_is_a_start_error() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut missing = launch(dir.path(), "say hi");
    missing.program = dir.path().join("no-such-agent");
    let (tx, _rx) = mpsc::channel(4);
    let error = run_acp(
        missing,
        tx,
        Asker::new(Person::answering(Some(Approval::Allow)), Channel::Cli),
        CancellationToken::new(),
    )
    .await
    .expect_err("nothing to start");
    assert!(matches!(error, AcpError::Spawn { .. }), "{error:?}");
    assert!(error.to_string().contains("no-such-agent"), "{error}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_chunks_arrive_all_and_in_order_through_a_small_channel() {
    let dir = tempfile::tempdir().expect("temp dir");
    let count = 5_000;
    let prompt: String = (0..count).map(|i| format!("say {i}\n")).collect();
    let started = std::time::Instant::now();
    let (result, events) = run(
        dir.path(),
        &prompt,
        Person::answering(Some(Approval::Allow)),
    )
    .await;
    let elapsed = started.elapsed();

    assert_eq!(stop_reason(result), "end_turn");
    let expected: Vec<String> = (0..count).map(|i| i.to_string()).collect();
    assert_eq!(chunks(&events), expected);
    eprintln!("{count} chunks in {elapsed:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_approval_queue_answers_the_agent() {
    let dir = tempfile::tempdir().expect("temp dir");
    let queue = Arc::new(ApprovalQueue::new());
    let mut asked = queue.subscribe();
    // Whoever answers out of band (REST's `POST /api/approvals/{id}`) answers the queue.
    let answering = Arc::clone(&queue);
    let person = tokio::spawn(async move {
        let pending = asked.recv().await.expect("an approval is asked");
        answering
            .answer(
                pending.id,
                Approval::Deny {
                    reason: "denied from the queue".into(),
                },
            )
            .expect("it is waiting");
        pending
    });
    let (result, events) = run(dir.path(), "write hello.txt data", queue.clone()).await;

    assert_eq!(stop_reason(result), "end_turn");
    let pending = person.await.expect("the person answered");
    assert_eq!(pending.request.source, "acp:toolmux-acp-test-agent");
    assert!(pending.request.message.contains("hello.txt"));
    assert_eq!(
        chunks(&events),
        ["permission denied: not writing hello.txt (denied from the queue)"]
    );
    assert!(queue.pending(None).is_empty());
    assert!(!dir.path().join("hello.txt").exists());
}

/// A permission request waits at most the configured approval time limit (here a small one),
/// recorded in the queue under the channel and conversation of the call that started the
/// session — not as REST's, with the default limit — and the agent hears why it was refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_permission_nobody_answers_times_out_after_the_configured_limit_under_its_channel() {
    let dir = tempfile::tempdir().expect("temp dir");
    let queue = Arc::new(ApprovalQueue::new());
    let mut asked = queue.subscribe();
    let limit = Duration::from_millis(300);
    let asker = Asker::new(queue.clone(), Channel::Mcp)
        .with_session(Some("conversation-7".into()))
        .with_time_limit(limit);
    let running = Running::asking(launch(dir.path(), "write hello.txt data"), asker);
    let pending = tokio::time::timeout(RUN_LIMIT, asked.recv())
        .await
        .expect("asked in time")
        .expect("an approval is asked");
    let (result, events) = running.finish().await;

    assert_eq!(pending.request.channel, Channel::Mcp);
    assert_eq!(pending.request.session.as_deref(), Some("conversation-7"));
    assert_eq!(pending.request.time_limit, limit);
    assert_eq!(stop_reason(result), "end_turn");
    assert_eq!(
        chunks(&events),
        ["permission denied: not writing hello.txt (nobody answered within 300ms)"]
    );
    assert!(events.contains(&AcpEvent::PermissionAnswered {
        outcome: "reject_once".into()
    }));
    assert!(queue.pending(None).is_empty(), "the request was withdrawn");
    assert!(!dir.path().join("hello.txt").exists());
}
