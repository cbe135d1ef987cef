//! A session of a runner whose protocol is `acp`: the Agent Client Protocol client
//! ([`crate::acp::run_acp`], toolmux as the client) drives the agent, its updates become log
//! entries (stream `acp`, with their `kind` and JSON), and its permission requests go to the
//! caller's approver (the approval queue when the caller has none), recorded under the caller's
//! channel and conversation, within the configured approval time limit.

use std::time::Instant;

use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use toolmux_core::Asker;

use crate::acp::{AcpEvent, AcpLaunch, run_acp};
use crate::error::SessionError;
use crate::record::{SessionRecord, Status, Stream};
use crate::sessions::{Plan, Sessions};
use crate::store::LogSink;
use crate::supervise::{Line, Log, finish};

/// How many updates may wait for the writer.
const QUEUE: usize = 1024;

/// Starts an ACP session and leaves it running on the runtime; `record` is saved `running`.
pub(crate) async fn launch(
    sessions: Sessions,
    plan: &Plan,
    record: &mut SessionRecord,
    token: CancellationToken,
    sink: Box<dyn LogSink>,
    asker: Option<Asker>,
) -> Result<(), SessionError> {
    let asker = asker.ok_or_else(|| {
        SessionError::Acp(format!(
            "runner `{}` speaks the Agent Client Protocol and asks for permissions, but nobody \
             can answer them here",
            plan.runner.name
        ))
    })?;
    let launch = AcpLaunch {
        program: plan.program.clone(),
        args: plan.args.clone(),
        env: plan
            .env
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        cwd: plan.cwd.clone(),
        root: sessions.confine().clone(),
        prompt: plan.prompt.clone(),
    };
    record.status = Status::Running;
    record.started_at = Some(chrono::Utc::now());
    sessions.store().save(record)?;
    let mut record = record.clone();
    let timeout = plan.timeout;
    tokio::spawn(async move {
        let mut log = Log::new(sink);
        log.note(&format!("started (ACP): {}", record.command.join(" ")));
        let started = Instant::now();
        let (tx, mut rx) = mpsc::channel(QUEUE);
        // The client stops the agent when this token fires: on cancel, at the time limit, or
        // when another process asked for it through the store.
        let stop = CancellationToken::new();
        let run = run_acp(launch, tx, asker, stop.clone());
        tokio::pin!(run);
        let deadline = tokio::time::Instant::now() + timeout;
        let mut poll = tokio::time::interval(std::time::Duration::from_millis(250));
        let mut timed_out = false;
        let mut cancelled = false;
        let outcome = loop {
            tokio::select! {
                biased;
                Some(event) = rx.recv() => {
                    if let AcpEvent::Agent(agent) = &event {
                        record.agent_version = agent["version"].as_str().map(str::to_string);
                        if let Err(e) = sessions.store().save(&record) {
                            tracing::warn!("session {}: the agent's version is not recorded: {e}", record.id);
                        }
                    }
                    log.write(line_of(event));
                    if rx.is_empty() {
                        log.flush();
                    }
                }
                outcome = &mut run => break outcome,
                () = token.cancelled(), if !cancelled => {
                    cancelled = true;
                    stop.cancel();
                }
                () = tokio::time::sleep_until(deadline), if !timed_out => {
                    timed_out = true;
                    stop.cancel();
                }
                _ = poll.tick() => if !cancelled && sessions.store().cancel_requested(&record.id) {
                    cancelled = true;
                    stop.cancel();
                },
            }
        };
        while let Ok(event) = rx.try_recv() {
            log.write(line_of(event));
        }
        let (status, error) = match outcome {
            _ if timed_out => (
                Status::Failed,
                Some(format!(
                    "the time limit of {}s was reached; the agent was stopped",
                    timeout.as_secs()
                )),
            ),
            _ if cancelled => (Status::Cancelled, Some("cancelled".to_string())),
            Ok(o) if o.stop_reason == "end_turn" => (Status::Completed, None),
            Ok(o) if o.stop_reason == "cancelled" => (
                Status::Cancelled,
                Some("cancelled by the agent".to_string()),
            ),
            Ok(o) => (
                Status::Failed,
                Some(format!("the agent stopped: {}", o.stop_reason)),
            ),
            Err(e) => (Status::Failed, Some(e.to_string())),
        };
        finish(&sessions, record, &mut log, status, None, error, started);
    });
    Ok(())
}

/// An ACP update as a log line: its kind, a readable text, and its JSON.
fn line_of(event: AcpEvent) -> Line {
    let (kind, text, json) = match event {
        AcpEvent::MessageChunk(text) => ("message_chunk", text, None),
        AcpEvent::ThoughtChunk(text) => ("thought_chunk", text, None),
        AcpEvent::ToolCall(v) => ("tool_call", title(&v, "tool call"), Some(v)),
        AcpEvent::ToolCallUpdate(v) => {
            let status = v["status"].as_str().unwrap_or("updated").to_string();
            (
                "tool_call_update",
                format!("{} {status}", title(&v, "tool call")),
                Some(v),
            )
        }
        AcpEvent::Plan(v) => ("plan", "plan".to_string(), Some(v)),
        AcpEvent::PermissionRequested(v) => {
            let what = title(&v["toolCall"], "a tool call");
            (
                "permission_requested",
                format!("asks permission: {what}"),
                Some(v),
            )
        }
        AcpEvent::PermissionAnswered { outcome } => (
            "permission_answered",
            format!("permission: {outcome}"),
            Some(json!({ "outcome": outcome })),
        ),
        AcpEvent::Other(v) => ("other", String::new(), Some(v)),
        AcpEvent::Agent(v) => (
            "agent",
            format!(
                "agent: {} {}",
                v["name"].as_str().unwrap_or("(unnamed)"),
                v["version"].as_str().unwrap_or("(no version)")
            ),
            Some(v),
        ),
    };
    Line {
        stream: Stream::Acp,
        text,
        json,
        kind: Some(kind.to_string()),
        cut: false,
    }
}

fn title(v: &Value, default: &str) -> String {
    v["title"].as_str().unwrap_or(default).to_string()
}
