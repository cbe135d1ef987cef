//! toolmux as an ACP *client*: one run of a coding agent that speaks the Agent Client Protocol
//! (JSON-RPC over its stdio — Gemini CLI, goose, the ACP adapters of Claude Code and Codex) on
//! one prompt, on the official `agent-client-protocol` crate.
//!
//! [`run_acp`] starts the agent as toolmux starts every child (`toolmux_scripts::child`: a
//! process group of its own, the allowlisted environment plus the launch's, killed on drop),
//! initializes it, opens a session in the launch directory, sends the prompt, and streams the
//! agent's `session/update` notifications as [`AcpEvent`]s until the prompt is answered. Meanwhile
//! it answers what the agent asks of its client:
//! - `session/request_permission` through toolmux's approval path: an [`ApprovalRequest`] to the
//!   given [`Asker`]'s approver (a session's is the approval queue, answered from REST, the web
//!   page or a terminal), recorded under the starting call's channel and conversation, within
//!   the configured approval time limit. An allow selects the agent's `allow_once`
//!   option and a deny its `reject_once`; never an `allow_always`, which would let the agent
//!   skip the person the next time;
//! - `fs/read_text_file` and `fs/write_text_file`, confined to the launch directory by the
//!   workspace's [`ProjectRoot`] (no link leading out, never `.git` or toolmux's state, writes
//!   atomic), a folder of the project's root that keeps its protected paths (`.toolmux/`, the
//!   registries, LeanSpec's and the user's configuration) — the same guard and the same list as
//!   the workspace tools, not a second one;
//! - terminals are not offered (the capabilities say so); the crate answers any request not
//!   handled here with method-not-found.
//!
//! Cancelling sends `session/cancel`, gives the agent [`CANCEL_GRACE`] to answer the prompt with
//! `cancelled`, then kills the process group. However the run ends, nothing it started is left:
//! the group and whatever escaped it are killed before [`run_acp`] returns.
//!
//! The crate (5.x) requires its handlers and connection futures to be `Send`, so the connection
//! runs on the caller's runtime: no dedicated thread or `LocalSet` is needed. Its `process`
//! feature is not used: the agent is started by `toolmux_scripts::child`, like every child.

use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    CancelNotification, ClientCapabilities, ContentBlock, ContentChunk, FileSystemCapabilities,
    Implementation, InitializeRequest, NewSessionRequest, PermissionOption, PermissionOptionKind,
    PromptRequest, ReadTextFileRequest, ReadTextFileResponse, RequestPermissionOutcome,
    RequestPermissionRequest, RequestPermissionResponse, SelectedPermissionOutcome,
    SessionNotification, SessionUpdate, StopReason, TextContent, ToolCallContent,
    WriteTextFileRequest, WriteTextFileResponse,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Agent, Client, ErrorCode, Lines};
use futures::{SinkExt, TryStreamExt};
use serde_json::{Value, json};
use tokio::io::AsyncReadExt;
use tokio::process::{Child, ChildStderr};
use tokio_util::codec::{FramedRead, FramedWrite, LinesCodec, LinesCodecError};
use tokio_util::sync::CancellationToken;
use toolmux_core::{Approval, ApprovalRequest, Asker, approve_within};
use toolmux_scripts::child::{self, Guard, Signal};
use toolmux_workspace::{PathError, ProjectRoot};

/// The longest JSON-RPC line accepted from an agent, as for a stdio MCP server: a longer one
/// fails the run instead of growing a buffer without bound.
const MAX_MESSAGE_BYTES: usize = 16 * 1024 * 1024;

/// The largest file an agent may read through `fs/read_text_file`.
const MAX_READ_BYTES: u64 = 16 * 1024 * 1024;

/// How long a cancelled agent has to answer its prompt (with `cancelled`, as ACP asks) before
/// its process group is killed.
pub const CANCEL_GRACE: Duration = Duration::from_secs(2);

/// How long an agent whose stdin was closed (or that was sent SIGTERM) has to exit on its own.
const EXIT_GRACE: Duration = Duration::from_secs(1);

/// How much of the agent's stderr is kept, its end, to explain a failure.
const STDERR_TAIL_BYTES: usize = 4096;

/// How long an approver's preview of a tool call's input may be.
const PREVIEW_CHARS: usize = 4000;

/// One run of an ACP agent: the command that starts it, where, and the prompt it is given.
#[derive(Clone, Debug)]
pub struct AcpLaunch {
    /// The agent's executable (found on `PATH` when it has no directory).
    pub program: PathBuf,
    /// Its arguments (an agent's ACP mode, e.g. `--experimental-acp`).
    pub args: Vec<String>,
    /// Variables added to the allowlisted environment a child gets.
    pub env: Vec<(String, String)>,
    /// The session's directory, inside `root`: the agent runs there, its session is opened
    /// there, and its file reads and writes are confined to it.
    pub cwd: PathBuf,
    /// The project's root as the workspace tools have it: its state directory, which the agent
    /// never reads or writes even when it lies inside `cwd` (a project whose `root` is `..`
    /// has it deeper inside), and the paths no write may change (toolmux's configuration, the
    /// registries), kept current by the configuration's reloads.
    pub root: ProjectRoot,
    /// The prompt, sent as one text block.
    pub prompt: String,
}

/// What the agent reports while it works, in the order it reported it.
#[derive(Clone, Debug, PartialEq)]
pub enum AcpEvent {
    /// A piece of the agent's answer (`agent_message_chunk` with text).
    MessageChunk(String),
    /// A piece of its reasoning (`agent_thought_chunk` with text).
    ThoughtChunk(String),
    /// A tool call it started (`tool_call`), in ACP's JSON.
    ToolCall(Value),
    /// A change to one (`tool_call_update`), in ACP's JSON.
    ToolCallUpdate(Value),
    /// Its plan (`plan`), in ACP's JSON.
    Plan(Value),
    /// It asked for permission (`session/request_permission`'s parameters: `toolCall`, `options`).
    PermissionRequested(Value),
    /// The answer it was given: the kind of the option selected (`allow_once`, `reject_once`,
    /// `reject_always`) or `cancelled`.
    PermissionAnswered {
        /// The option kind selected, or `cancelled`.
        outcome: String,
    },
    /// Any other update (non-text chunks, commands, modes, usage), as ACP's `update` JSON.
    Other(Value),
    /// What the agent said about itself in its `initialize` answer (`agentInfo`: `name`,
    /// `version`, `title`), when it said anything: a runner's version where `--version` is no
    /// help (an ACP adapter started only to speak the protocol).
    Agent(Value),
}

/// How the prompt ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AcpOutcome {
    /// ACP's stop reason in its wire form (`end_turn`, `max_tokens`, `max_turn_requests`,
    /// `refusal`, `cancelled`). A run cancelled through the token is `cancelled`, whether the
    /// agent answered the cancel in time or was killed.
    pub stop_reason: String,
}

/// Why a run failed. Every variant names the agent; those after its start carry the end of
/// what it wrote to stderr, which is usually where an agent explains itself.
#[derive(Debug, thiserror::Error)]
pub enum AcpError {
    /// The launch directory cannot be used.
    #[error("the session's directory `{}` cannot be used: {source}", path.display())]
    Cwd {
        /// The directory as given.
        path: PathBuf,
        /// Why.
        source: PathError,
    },
    /// The agent could not be started (not installed, not executable).
    #[error("cannot start the ACP agent `{agent}`: {source}")]
    Spawn {
        /// The program.
        agent: String,
        /// What the operating system said.
        source: std::io::Error,
    },
    /// The agent went away before it answered the prompt.
    #[error("the ACP agent `{agent}` stopped before it answered ({status}){}", stderr_suffix(.stderr))]
    Exited {
        /// The program.
        agent: String,
        /// How it ended (`exit status: 3`, `signal: 9 (SIGKILL)`, or `still running`).
        status: String,
        /// The end of its stderr.
        stderr: String,
    },
    /// The agent answered with an error, or broke the protocol.
    #[error("the ACP agent `{agent}` failed: {message}{}", stderr_suffix(.stderr))]
    Agent {
        /// The program.
        agent: String,
        /// The error.
        message: String,
        /// The end of its stderr.
        stderr: String,
    },
}

fn stderr_suffix(stderr: &str) -> String {
    let stderr = stderr.trim();
    if stderr.is_empty() {
        String::new()
    } else {
        format!("; its stderr ends with: {stderr}")
    }
}

/// Runs `launch` to the end of its prompt: streams what the agent reports to `events` (a full
/// channel holds the agent back, a closed one is ignored), asks `asker` about every
/// permission the agent requests, and stops when the prompt is answered, the agent fails, or
/// `cancel` fires. The agent's process group is gone when this returns.
pub async fn run_acp(
    launch: AcpLaunch,
    events: tokio::sync::mpsc::Sender<AcpEvent>,
    asker: Asker,
    cancel: CancellationToken,
) -> Result<AcpOutcome, AcpError> {
    let root = launch
        .root
        .beneath(&launch.cwd)
        .map_err(|source| AcpError::Cwd {
            path: launch.cwd.clone(),
            source,
        })?;
    let agent = launch.program.file_name().map_or_else(
        || launch.program.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    let spawn_error = |source| AcpError::Spawn {
        agent: agent.clone(),
        source,
    };
    let (mut process, mut group) = child::spawn(
        launch.program.as_os_str(),
        &launch.args,
        root.path(),
        launch.env.iter().map(|(k, v)| (k.as_str(), v.as_str())),
        false,
    )
    .map_err(spawn_error)?;
    let (Some(stdin), Some(stdout)) = (process.stdin.take(), process.stdout.take()) else {
        return Err(spawn_error(std::io::Error::other(
            "the agent's stdin or stdout is missing",
        )));
    };
    let stderr = StderrTail::follow(process.stderr.take());
    let transport = Lines::new(
        SinkExt::<String>::sink_map_err(FramedWrite::new(stdin, LinesCodec::new()), into_io),
        FramedRead::new(stdout, LinesCodec::new_with_max_length(MAX_MESSAGE_BYTES))
            .map_err(into_io),
    );
    let handlers = Arc::new(Handlers {
        events,
        asker,
        root,
        given_cwd: launch.cwd.clone(),
        agent: agent.clone(),
        cancel: cancel.clone(),
    });
    let ended = converse(transport, handlers, launch.prompt, cancel.clone()).await;
    let status = stop(&mut process, &mut group, cancel.is_cancelled()).await;
    let stderr = stderr.finish().await;
    match ended {
        Ok(stop_reason) => Ok(AcpOutcome { stop_reason }),
        Err(error)
            if agent_client_protocol::is_incoming_transport_closed(&error)
                || agent_client_protocol::is_connection_terminated(&error) =>
        {
            Err(AcpError::Exited {
                agent,
                status: status.map_or_else(|| "still running".to_string(), |s| s.to_string()),
                stderr,
            })
        }
        Err(error) => Err(AcpError::Agent {
            agent,
            message: error.to_string(),
            stderr,
        }),
    }
}

fn into_io(e: LinesCodecError) -> std::io::Error {
    match e {
        LinesCodecError::Io(e) => e,
        LinesCodecError::MaxLineLengthExceeded => std::io::Error::other(format!(
            "the agent sent a message longer than {}",
            toolmux_core::human_bytes(MAX_MESSAGE_BYTES as u64)
        )),
    }
}

/// The conversation: initialize, open the session, prompt, and on `cancel` ask the agent to
/// stop. Returns the stop reason in its wire form.
async fn converse(
    transport: impl agent_client_protocol::ConnectTo<Client> + 'static,
    handlers: Arc<Handlers>,
    prompt: String,
    cancel: CancellationToken,
) -> Result<String, agent_client_protocol::Error> {
    let cwd = handlers.root.path().to_path_buf();
    let on_update = Arc::clone(&handlers);
    let on_permission = Arc::clone(&handlers);
    let on_read = Arc::clone(&handlers);
    let events = handlers.events.clone();
    let on_write = handlers;
    Client
        .v1()
        .name("toolmux")
        .on_receive_notification(
            async move |note: SessionNotification, _cx| {
                // A closed receiver only means nobody watches any more; the run goes on.
                let _ = on_update.events.send(event_of(note.update)).await;
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .on_receive_request(
            async move |request: RequestPermissionRequest,
                        responder: Responder<RequestPermissionResponse>,
                        cx: ConnectionTo<Agent>| {
                // A person may take minutes: wait outside the dispatch loop, so that the
                // agent's updates and the prompt's answer still flow meanwhile.
                let handlers = Arc::clone(&on_permission);
                cx.spawn(async move { handlers.answer_permission(request, responder).await })
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: ReadTextFileRequest,
                        responder: Responder<ReadTextFileResponse>,
                        _cx: ConnectionTo<Agent>| {
                let handlers = Arc::clone(&on_read);
                let answer = tokio::task::spawn_blocking(move || handlers.read(&request))
                    .await
                    .map_err(agent_client_protocol::Error::into_internal_error)?;
                match answer {
                    Ok(text) => responder.respond(ReadTextFileResponse::new(text)),
                    Err(refusal) => responder.respond_with_error(refusal),
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: WriteTextFileRequest,
                        responder: Responder<WriteTextFileResponse>,
                        _cx: ConnectionTo<Agent>| {
                let handlers = Arc::clone(&on_write);
                let answer = tokio::task::spawn_blocking(move || handlers.write(&request))
                    .await
                    .map_err(agent_client_protocol::Error::into_internal_error)?;
                match answer {
                    Ok(()) => responder.respond(WriteTextFileResponse::new()),
                    Err(refusal) => responder.respond_with_error(refusal),
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .connect_with(transport, async move |cx: ConnectionTo<Agent>| {
            let open = async {
                let initialized = cx
                    .send_request(
                        InitializeRequest::new(ProtocolVersion::V1)
                            .client_capabilities(
                                ClientCapabilities::new().fs(FileSystemCapabilities::new()
                                    .read_text_file(true)
                                    .write_text_file(true)),
                            )
                            .client_info(Implementation::new("toolmux", env!("CARGO_PKG_VERSION"))),
                    )
                    .block_task()
                    .await?;
                if let Some(agent) = initialized.agent_info {
                    let _ = events.send(AcpEvent::Agent(to_json(&agent))).await;
                }
                let session = cx
                    .send_request(NewSessionRequest::new(cwd))
                    .block_task()
                    .await?;
                Ok::<_, agent_client_protocol::Error>(session.session_id)
            };
            let session_id = tokio::select! {
                opened = open => opened?,
                // Nothing to cancel yet: the process is killed.
                () = cancel.cancelled() => return Ok(wire(&StopReason::Cancelled)),
            };
            let prompt = cx
                .send_request(PromptRequest::new(
                    session_id.clone(),
                    vec![ContentBlock::Text(TextContent::new(prompt))],
                ))
                .block_task();
            let mut prompt = std::pin::pin!(prompt);
            tokio::select! {
                answered = &mut prompt => return answered.map(|r| wire(&r.stop_reason)),
                () = cancel.cancelled() => {}
            }
            cx.send_notification(CancelNotification::new(session_id))?;
            // ACP asks the agent to answer the prompt with `cancelled`; whatever it answers, or
            // if it does not in time, the run was cancelled and its group is killed next.
            let _ = tokio::time::timeout(CANCEL_GRACE, prompt).await;
            Ok(wire(&StopReason::Cancelled))
        })
        .await
}

/// A value's wire form, for enums ACP serializes as a string (`end_turn`, `allow_once`).
fn wire<T: serde::Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(Value::String(s)) => s,
        Ok(other) => other.to_string(),
        Err(e) => e.to_string(),
    }
}

/// ACP's JSON of a value it defined (which always serializes).
fn to_json<T: serde::Serialize>(value: &T) -> Value {
    serde_json::to_value(value).unwrap_or_else(|e| json!({ "error": e.to_string() }))
}

/// The event an update becomes.
fn event_of(update: SessionUpdate) -> AcpEvent {
    match update {
        SessionUpdate::AgentMessageChunk(ContentChunk {
            content: ContentBlock::Text(text),
            ..
        }) => AcpEvent::MessageChunk(text.text),
        SessionUpdate::AgentThoughtChunk(ContentChunk {
            content: ContentBlock::Text(text),
            ..
        }) => AcpEvent::ThoughtChunk(text.text),
        SessionUpdate::ToolCall(call) => AcpEvent::ToolCall(to_json(&call)),
        SessionUpdate::ToolCallUpdate(update) => AcpEvent::ToolCallUpdate(to_json(&update)),
        SessionUpdate::Plan(plan) => AcpEvent::Plan(to_json(&plan)),
        other => AcpEvent::Other(to_json(&other)),
    }
}

/// What answers the agent's requests: shared by the connection's handlers.
struct Handlers {
    events: tokio::sync::mpsc::Sender<AcpEvent>,
    /// Who answers permission requests, and what they are recorded under.
    asker: Asker,
    /// The launch directory, opened once: every file the agent names is resolved beneath it.
    root: ProjectRoot,
    /// The launch directory as given, which an agent may also use to name files under it.
    given_cwd: PathBuf,
    agent: String,
    cancel: CancellationToken,
}

impl Handlers {
    /// Asks the approver about a permission request and gives the agent the answer. A run
    /// cancelled meanwhile answers `cancelled`, as ACP asks of a client that cancels.
    async fn answer_permission(
        &self,
        request: RequestPermissionRequest,
        responder: Responder<RequestPermissionResponse>,
    ) -> Result<(), agent_client_protocol::Error> {
        let asked = json!({ "toolCall": to_json(&request.tool_call), "options": to_json(&request.options) });
        let _ = self
            .events
            .send(AcpEvent::PermissionRequested(asked.clone()))
            .await;
        let fields = &request.tool_call.fields;
        let title = fields
            .title
            .clone()
            .unwrap_or_else(|| request.tool_call.tool_call_id.to_string());
        let preview = fields.raw_input.as_ref().map(|input| {
            let text = serde_json::to_string_pretty(input).unwrap_or_default();
            match text.char_indices().nth(PREVIEW_CHARS) {
                Some((cut, _)) => format!("{}…", &text[..cut]),
                None => text,
            }
        });
        let message = permission_message(
            &self.agent,
            self.root.path(),
            &title,
            fields.content.as_deref().unwrap_or_default(),
            preview.as_deref(),
            &request.options,
        );
        let question = ApprovalRequest {
            tool: title,
            source: format!("acp:{}", self.agent),
            arguments: asked,
            // The channel and conversation of the call that started the session, and the
            // configured approval limit: what the person sees and how long they have.
            channel: self.asker.channel,
            session: self.asker.session.clone(),
            // The agent's own request, not a call of the conversation's model.
            tool_call_id: None,
            message,
            preview,
            // The agent's own words, worded for the person: an approver that words its own
            // question (an MCP client's form, which names the tool its client called,
            // `run_session`) shows this one instead.
            configured_message: true,
            time_limit: self.asker.time_limit,
            caller: None,
        };
        let approval = tokio::select! {
            approval = approve_within(self.asker.approver.as_ref(), &question) => {
                approval.unwrap_or_else(|| Approval::Deny {
                    reason: format!(
                        "nobody answered within {}",
                        toolmux_core::format_duration(self.asker.time_limit)
                    ),
                })
            }
            () = self.cancel.cancelled() => {
                let _ = self.events.send(AcpEvent::PermissionAnswered { outcome: "cancelled".into() }).await;
                return responder.respond(RequestPermissionResponse::new(RequestPermissionOutcome::Cancelled));
            }
        };
        let (outcome, label) = choose(&request.options, &approval);
        let _ = self
            .events
            .send(AcpEvent::PermissionAnswered { outcome: label })
            .await;
        let mut response = RequestPermissionResponse::new(outcome);
        if let Approval::Deny { reason } = approval {
            // ACP has no field for a reason; `_meta` carries it to an agent that looks.
            let mut meta = serde_json::Map::new();
            meta.insert("toolmux".into(), json!({ "denied": reason }));
            response = response.meta(meta);
        }
        responder.respond(response)
    }

    /// A path the agent named (absolute, as ACP asks; a relative one is taken from the launch
    /// directory) as a path relative to the launch directory, for [`ProjectRoot`] to check.
    fn relative(&self, path: &Path) -> Result<String, agent_client_protocol::Error> {
        let outside = || {
            refusal(format!(
                "`{}` is outside the session's directory `{}`",
                path.display(),
                self.root.path().display()
            ))
        };
        let rel = if path.is_absolute() {
            path.strip_prefix(self.root.path())
                .or_else(|_| path.strip_prefix(&self.given_cwd))
                .map_err(|_| outside())?
        } else {
            path
        };
        rel.to_str()
            .map(str::to_string)
            .ok_or_else(|| refusal(format!("`{}` is not UTF-8", path.display())))
    }

    /// `fs/read_text_file`: the file's text, from line `line` (1-based) for `limit` lines.
    fn read(&self, request: &ReadTextFileRequest) -> Result<String, agent_client_protocol::Error> {
        let rel = self.relative(&request.path)?;
        let text = self
            .root
            .read_text(&rel, MAX_READ_BYTES)
            .map_err(|e| path_refusal(&request.path, &e))?;
        if request.line.is_none() && request.limit.is_none() {
            return Ok(text);
        }
        let skip = request.line.map_or(0, |l| l.saturating_sub(1)) as usize;
        let take = request.limit.map_or(usize::MAX, |l| l as usize);
        Ok(text.split_inclusive('\n').skip(skip).take(take).collect())
    }

    /// `fs/write_text_file`: the whole file, written atomically beneath the launch directory.
    fn write(&self, request: &WriteTextFileRequest) -> Result<(), agent_client_protocol::Error> {
        let rel = self.relative(&request.path)?;
        self.root
            .write_text(&rel, &request.content)
            .map_err(|e| path_refusal(&request.path, &e))?;
        Ok(())
    }
}

/// The question a permission request puts to the person, in the agent's words: what it wants
/// to do (its title, say the command it would run), the text it attached, its input, and the
/// options it offers with the one each answer here picks (see [`choose`]).
fn permission_message(
    agent: &str,
    dir: &Path,
    title: &str,
    content: &[ToolCallContent],
    input: Option<&str>,
    options: &[PermissionOption],
) -> String {
    let mut message = format!(
        "The coding agent `{agent}` asks permission in `{}`: {title}",
        dir.display()
    );
    for item in content {
        if let ToolCallContent::Content(item) = item
            && let ContentBlock::Text(text) = &item.content
        {
            message.push('\n');
            message.push_str(&text.text);
        }
    }
    if let Some(input) = input {
        message.push_str("\n\n");
        message.push_str(input);
    }
    if !options.is_empty() {
        let names: Vec<String> = options.iter().map(|o| format!("“{}”", o.name)).collect();
        let picked = |approval: &Approval| match choose(options, approval).0 {
            RequestPermissionOutcome::Selected(selected) => options
                .iter()
                .find(|o| o.option_id == selected.option_id)
                .map_or_else(|| "none".to_string(), |o| format!("“{}”", o.name)),
            _ => "none (the request is cancelled)".to_string(),
        };
        message.push_str(&format!(
            "\n\nThe agent offers: {}. Allowing picks {}; denying picks {}.",
            names.join(", "),
            picked(&Approval::Allow),
            picked(&Approval::Deny {
                reason: String::new()
            }),
        ));
    }
    message
}

/// The option an answer selects: allow → `allow_once`; deny → `reject_once`, else
/// `reject_always`. With no such option the request is answered `cancelled`, never with a
/// broader grant than the person gave.
fn choose(options: &[PermissionOption], approval: &Approval) -> (RequestPermissionOutcome, String) {
    let wanted: &[PermissionOptionKind] = match approval {
        Approval::Allow => &[PermissionOptionKind::AllowOnce],
        Approval::Deny { .. } => &[
            PermissionOptionKind::RejectOnce,
            PermissionOptionKind::RejectAlways,
        ],
    };
    for kind in wanted {
        if let Some(option) = options.iter().find(|o| o.kind == *kind) {
            return (
                RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(
                    option.option_id.clone(),
                )),
                wire(kind),
            );
        }
    }
    (RequestPermissionOutcome::Cancelled, "cancelled".to_string())
}

fn refusal(message: String) -> agent_client_protocol::Error {
    agent_client_protocol::Error::new(ErrorCode::INVALID_PARAMS, message)
}

/// A confinement refusal as the agent gets it: a missing file is ACP's resource-not-found.
fn path_refusal(path: &Path, error: &PathError) -> agent_client_protocol::Error {
    let message = format!("`{}`: {error}", path.display());
    match error {
        PathError::NotFound { .. } => {
            agent_client_protocol::Error::new(ErrorCode::RESOURCE_NOT_FOUND, message)
        }
        _ => refusal(message),
    }
}

/// Stops the agent and everything it started: with stdin closed (the connection is over), a
/// well-behaved agent exits by itself; otherwise — at once when the run was cancelled — its
/// group gets SIGTERM, then SIGKILL with whatever escaped it. Returns how it ended, when known.
async fn stop(process: &mut Child, group: &mut Guard, cancelled: bool) -> Option<ExitStatus> {
    let mut status = None;
    if !cancelled {
        status = tokio::time::timeout(EXIT_GRACE, process.wait())
            .await
            .ok()
            .and_then(Result::ok);
    }
    if status.is_none() {
        if let Some(pgid) = group.pgid() {
            child::signal_group(pgid, Signal::Term);
        }
        status = tokio::time::timeout(EXIT_GRACE, process.wait())
            .await
            .ok()
            .and_then(Result::ok);
    }
    group.sweep().await;
    if status.is_none() {
        status = process.wait().await.ok();
    }
    status
}

/// The end of the agent's stderr, read as it comes so that a chatty agent never blocks on a
/// full pipe.
struct StderrTail {
    tail: Arc<Mutex<Vec<u8>>>,
    reader: Option<tokio::task::JoinHandle<()>>,
}

impl StderrTail {
    fn follow(stderr: Option<ChildStderr>) -> Self {
        let tail = Arc::new(Mutex::new(Vec::new()));
        let reader = stderr.map(|mut stderr| {
            let tail = Arc::clone(&tail);
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                while let Ok(n @ 1..) = stderr.read(&mut buf).await {
                    let mut tail = tail.lock().unwrap_or_else(PoisonError::into_inner);
                    tail.extend_from_slice(&buf[..n]);
                    let excess = tail.len().saturating_sub(STDERR_TAIL_BYTES);
                    tail.drain(..excess);
                }
            })
        });
        Self { tail, reader }
    }

    /// The tail, once the pipe closed (the group is dead by now) or after a moment.
    async fn finish(mut self) -> String {
        if let Some(reader) = self.reader.take() {
            let _ = tokio::time::timeout(EXIT_GRACE, reader).await;
        }
        let tail = self.tail.lock().unwrap_or_else(PoisonError::into_inner);
        String::from_utf8_lossy(&tail).into_owned()
    }
}
