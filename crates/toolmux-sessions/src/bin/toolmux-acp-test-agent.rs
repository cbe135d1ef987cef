//! A small ACP agent for toolmux's tests, on the official `agent-client-protocol` crate: the
//! real protocol engine over stdio, with a script where a model would be. It is what the ACP
//! client's tests run against, so that they exercise the protocol as the crate speaks it rather
//! than a fake of ours.
//!
//! The prompt is the script, one command a line:
//! - `say TEXT`: an agent message chunk; `think TEXT`: a thought chunk; `plan`: a plan.
//! - `write PATH TEXT`: a tool call, then a permission request (allow once, allow always,
//!   reject once); when allowed, says `permission: OPTION`, writes TEXT to PATH through
//!   `fs/write_text_file` and says `wrote PATH`, or `write refused: ERROR`; when rejected, says
//!   `permission denied: not writing PATH` (with the reason toolmux put in `_meta`) and stops.
//! - `read PATH`: reads through `fs/read_text_file`, says `read: TEXT` or `read refused: ERROR`.
//! - `spawn ARG`: starts `sleep ARG` in the session's directory, and says `spawned PID`.
//! - `hang`: waits for `session/cancel`, then answers `cancelled`; `hang-deaf` never answers.
//! - `exit N`: exits at once with status N.
//!
//! A relative PATH is taken from the session's directory; an absolute one is used as it is.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use agent_client_protocol::v1::schema::{
    AgentCapabilities, CancelNotification, ContentBlock, ContentChunk, Implementation,
    InitializeRequest, InitializeResponse, NewSessionRequest, NewSessionResponse, PermissionOption,
    PermissionOptionKind, Plan, PlanEntry, PlanEntryPriority, PlanEntryStatus, PromptRequest,
    PromptResponse, ReadTextFileRequest, RequestPermissionOutcome, RequestPermissionRequest,
    SessionId, SessionNotification, SessionUpdate, StopReason, TextContent, ToolCall,
    ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields, ToolKind, WriteTextFileRequest,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Agent, ByteStreams, Client};
use serde_json::json;
use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};
use tokio_util::sync::CancellationToken;

const NAME: &str = "toolmux-acp-test-agent";

/// What the agent remembers between messages.
#[derive(Default)]
struct State {
    /// The session's directory, from `session/new`.
    cwd: Mutex<Option<PathBuf>>,
    /// Fired by `session/cancel` for the prompt running now.
    cancel: Mutex<CancellationToken>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> agent_client_protocol::Result<()> {
    let state = Arc::new(State::default());
    let (on_new, on_prompt, on_cancel) = (state.clone(), state.clone(), state);
    Agent
        .v1()
        .name(NAME)
        .on_receive_request(
            async |init: InitializeRequest,
                   responder: Responder<InitializeResponse>,
                   _cx: ConnectionTo<Client>| {
                responder.respond(
                    InitializeResponse::new(init.protocol_version)
                        .agent_capabilities(AgentCapabilities::new())
                        .agent_info(Implementation::new(NAME, env!("CARGO_PKG_VERSION"))),
                )
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: NewSessionRequest,
                        responder: Responder<NewSessionResponse>,
                        _cx: ConnectionTo<Client>| {
                *lock(&on_new.cwd) = Some(request.cwd);
                responder.respond(NewSessionResponse::new("session-1"))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: PromptRequest,
                        responder: Responder<PromptResponse>,
                        cx: ConnectionTo<Client>| {
                let cancel = CancellationToken::new();
                *lock(&on_prompt.cancel) = cancel.clone();
                let cwd = lock(&on_prompt.cwd).clone().unwrap_or_default();
                // The script sends requests and waits for their answers: outside the dispatch
                // loop, or the answers could never be read.
                let connection = cx.clone();
                cx.spawn(async move {
                    let stop = run(&connection, &request, &cwd, &cancel).await?;
                    responder.respond(PromptResponse::new(stop))
                })
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_notification(
            async move |_: CancelNotification, _cx: ConnectionTo<Client>| {
                lock(&on_cancel.cancel).cancel();
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .connect_to(ByteStreams::new(
            tokio::io::stdout().compat_write(),
            tokio::io::stdin().compat(),
        ))
        .await
}

/// Runs the prompt's script; returns the stop reason.
async fn run(
    cx: &ConnectionTo<Client>,
    request: &PromptRequest,
    cwd: &std::path::Path,
    cancel: &CancellationToken,
) -> agent_client_protocol::Result<StopReason> {
    let session = request.session_id.clone();
    let script: Vec<&str> = request
        .prompt
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Text(text) => Some(text.text.as_str()),
            _ => None,
        })
        .collect();
    for line in script.join("\n").lines() {
        let line = line.trim();
        let (command, rest) = line.split_once(' ').unwrap_or((line, ""));
        match command {
            "" => {}
            "say" => say(cx, &session, rest)?,
            "think" => update(
                cx,
                &session,
                SessionUpdate::AgentThoughtChunk(ContentChunk::new(text(rest))),
            )?,
            "plan" => update(
                cx,
                &session,
                SessionUpdate::Plan(Plan::new(vec![PlanEntry::new(
                    "write the file",
                    PlanEntryPriority::High,
                    PlanEntryStatus::InProgress,
                )])),
            )?,
            "write" => {
                let (path, content) = rest.split_once(' ').unwrap_or((rest, ""));
                if let Some(stop) = write(cx, &session, cwd, path, content).await? {
                    return Ok(stop);
                }
            }
            "read" => {
                let read = cx
                    .send_request(ReadTextFileRequest::new(session.clone(), cwd.join(rest)))
                    .block_task()
                    .await;
                match read {
                    Ok(read) => say(cx, &session, &format!("read: {}", read.content))?,
                    Err(e) => say(cx, &session, &format!("read refused: {e}"))?,
                }
            }
            "spawn" => {
                let child = std::process::Command::new("sleep")
                    .arg(rest)
                    .current_dir(cwd)
                    .spawn()
                    .map_err(agent_client_protocol::Error::into_internal_error)?;
                say(cx, &session, &format!("spawned {}", child.id()))?;
            }
            "hang" => {
                cancel.cancelled().await;
                return Ok(StopReason::Cancelled);
            }
            "hang-deaf" => std::future::pending::<()>().await,
            "exit" => std::process::exit(rest.parse().unwrap_or(1)),
            other => say(cx, &session, &format!("unknown command `{other}`"))?,
        }
    }
    Ok(StopReason::EndTurn)
}

/// The `write` command; `Some` when the prompt ends here.
async fn write(
    cx: &ConnectionTo<Client>,
    session: &SessionId,
    cwd: &std::path::Path,
    path: &str,
    content: &str,
) -> agent_client_protocol::Result<Option<StopReason>> {
    let target = cwd.join(path);
    let title = format!("Write {path}");
    let input = json!({ "path": target, "content": content });
    update(
        cx,
        session,
        SessionUpdate::ToolCall(
            ToolCall::new("write-1", title.clone())
                .kind(ToolKind::Edit)
                .status(ToolCallStatus::Pending)
                .raw_input(input.clone()),
        ),
    )?;
    let answer = cx
        .send_request(RequestPermissionRequest::new(
            session.clone(),
            ToolCallUpdate::new(
                "write-1",
                ToolCallUpdateFields::new()
                    .title(title)
                    .kind(ToolKind::Edit)
                    .raw_input(input),
            ),
            vec![
                PermissionOption::new("allow", "Allow once", PermissionOptionKind::AllowOnce),
                PermissionOption::new(
                    "allow-always",
                    "Always allow",
                    PermissionOptionKind::AllowAlways,
                ),
                PermissionOption::new("reject", "Reject", PermissionOptionKind::RejectOnce),
            ],
        ))
        .block_task()
        .await?;
    let option = match answer.outcome {
        RequestPermissionOutcome::Selected(selected) => selected.option_id.to_string(),
        _ => return Ok(Some(StopReason::Cancelled)),
    };
    if option == "reject" {
        let reason = answer
            .meta
            .as_ref()
            .and_then(|meta| meta.get("toolmux")?.get("denied")?.as_str())
            .map(|reason| format!(" ({reason})"))
            .unwrap_or_default();
        say(
            cx,
            session,
            &format!("permission denied: not writing {path}{reason}"),
        )?;
        return Ok(Some(StopReason::EndTurn));
    }
    say(cx, session, &format!("permission: {option}"))?;
    let written = cx
        .send_request(WriteTextFileRequest::new(session.clone(), target, content))
        .block_task()
        .await;
    let status = match written {
        Ok(_) => {
            say(cx, session, &format!("wrote {path}"))?;
            ToolCallStatus::Completed
        }
        Err(e) => {
            say(cx, session, &format!("write refused: {e}"))?;
            ToolCallStatus::Failed
        }
    };
    update(
        cx,
        session,
        SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
            "write-1",
            ToolCallUpdateFields::new().status(status),
        )),
    )?;
    Ok(None)
}

fn text(s: &str) -> ContentBlock {
    ContentBlock::Text(TextContent::new(s))
}

fn update(
    cx: &ConnectionTo<Client>,
    session: &SessionId,
    update: SessionUpdate,
) -> agent_client_protocol::Result<()> {
    cx.send_notification(SessionNotification::new(session.clone(), update))
}

fn say(
    cx: &ConnectionTo<Client>,
    session: &SessionId,
    message: &str,
) -> agent_client_protocol::Result<()> {
    update(
        cx,
        session,
        SessionUpdate::AgentMessageChunk(ContentChunk::new(text(message))),
    )
}
