//! The `sessions` source: the tools over [`Sessions`].

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Map, Value, json};
use toolmux_core::{
    Page, Policy, Source, SourceCall, SourceError, SourceKind, ToolAnnotations, ToolDescriptor,
    ToolResult, WeakHub,
};

use crate::error::SessionError;
use crate::record::{SessionRecord, Status};
use crate::sessions::{Plan, RunRequest, Sessions, StartedBy};

/// The most session approvals whose plans are kept at once; past it a new one is shown as
/// unable to start, never kept by evicting another.
const MAX_SHOWN: usize = 1024;

/// The source's id.
pub const SOURCE_ID: &str = "sessions";

/// Its tools.
pub const TOOL_NAMES: [&str; 8] = [
    "list_runners",
    "detect_runners",
    "run_session",
    "run_subagent",
    "session_status",
    "list_sessions",
    "session_logs",
    "cancel_session",
];

/// How many log entries `session_logs` gives when the call sets no `limit`, and at most.
const DEFAULT_PAGE: usize = 200;
const MAX_PAGE: usize = 2000;
/// How many sessions `list_sessions` gives when the call sets no `limit`.
const DEFAULT_SESSIONS: usize = 50;

/// The `sessions` source. Cheap to clone.
#[derive(Clone, Debug)]
pub struct SessionsSource {
    sessions: Sessions,
    tools: Arc<Vec<ToolDescriptor>>,
    /// The plan each pending approval of a session showed, by the approval's id: the call
    /// starts that very plan (its session id, folder, command line), never one made again from
    /// settings or specs that changed while the person decided (THREATS.md rule 6). An entry
    /// lives as long as its approval; at most [`MAX_SHOWN`] wait at once.
    shown: Arc<std::sync::Mutex<std::collections::HashMap<uuid::Uuid, Plan>>>,
    /// The hub whose approval time limit an ACP agent's permission requests follow (held
    /// weakly: the hub owns its sources).
    hub: Option<WeakHub>,
    /// Where a one-shot process hands `run_session` to (a running `serve` of the project), so
    /// that the session outlives the process that was asked for it (issue 29). Shared by the
    /// clones: it is set after the source joined the hub.
    handoff: Arc<std::sync::OnceLock<Arc<dyn Handoff>>>,
}

/// Another toolmux process of the same project that can run a session for this one: what a
/// one-shot command (`toolmux mcp` over stdio, `tools call`) hands `run_session` to, since
/// a session it ran itself would end with it.
#[async_trait]
pub trait Handoff: Send + Sync + std::fmt::Debug {
    /// Starts a session with `arguments` (`run_session`'s, already checked and approved here)
    /// in the other process: `None` when no process takes it (the session runs here), else
    /// that process's answer — its record, or why it refused, which stands (a session refused
    /// there is never started here instead).
    async fn start(
        &self,
        arguments: &Map<String, Value>,
    ) -> Option<Result<SessionRecord, SessionError>>;
}

impl SessionsSource {
    /// The tools over `sessions`.
    pub fn new(sessions: Sessions) -> Self {
        Self {
            sessions,
            tools: Arc::new(descriptors()),
            shown: Default::default(),
            hub: None,
            handoff: Default::default(),
        }
    }

    /// Hands `run_session` to `handoff` from now on, whenever it takes it (set once; a second
    /// one is ignored).
    pub fn hand_off_to(&self, handoff: Arc<dyn Handoff>) {
        let _ = self.handoff.set(handoff);
    }

    /// Follows `hub`'s approval time limit for an ACP agent's permission requests.
    pub fn with_hub(mut self, hub: WeakHub) -> Self {
        self.hub = Some(hub);
        self
    }

    /// The sessions it serves.
    pub fn sessions(&self) -> &Sessions {
        &self.sessions
    }

    fn shown(&self) -> std::sync::MutexGuard<'_, std::collections::HashMap<uuid::Uuid, Plan>> {
        self.shown
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    async fn run(&self, call: &SourceCall<'_>) -> Result<(Value, String), SessionError> {
        let args = &call.arguments;
        let text_of = |v: &Value| serde_json::to_string_pretty(v).unwrap_or_default();
        match call.tool.original_name.as_str() {
            "list_runners" => {
                let runners: Vec<Value> = self
                    .sessions
                    .runners()
                    .into_iter()
                    .map(|(r, d)| {
                        let mut v = serde_json::to_value(&r).unwrap_or_default();
                        v["detected"] = serde_json::to_value(&d).unwrap_or_default();
                        v
                    })
                    .collect();
                let text = runners
                    .iter()
                    .map(|r| {
                        let detected = match &r["detected"] {
                            Value::Null => "not checked (detect_runners)".to_string(),
                            d if d["installed"] == true => format!(
                                "installed {}",
                                d["version"].as_str().unwrap_or("(version unknown)")
                            ),
                            _ => "not installed".to_string(),
                        };
                        format!(
                            "{} ({}): {}",
                            r["name"].as_str().unwrap_or_default(),
                            r["protocol"].as_str().unwrap_or_default(),
                            detected
                        )
                    })
                    .collect::<Vec<_>>()
                    .join("\n");
                Ok((json!({ "count": runners.len(), "runners": runners }), text))
            }
            "detect_runners" => {
                let names: Vec<String> = strings(args.get("names"));
                let refresh = args
                    .get("refresh")
                    .and_then(Value::as_bool)
                    .unwrap_or(false);
                let found = self.sessions.detect(&names, refresh).await;
                let value = json!({ "count": found.len(), "runners": found });
                let text = text_of(&value);
                Ok((value, text))
            }
            "run_session" | "run_subagent" => {
                let request: RunRequest = serde_json::from_value(Value::Object(args.clone()))
                    .map_err(|e| SessionError::Invalid(e.to_string()))?;
                let plan = match call.context.approval {
                    // Asked: what the person saw, or nothing (its preview failed, or more
                    // approvals than are kept were waiting).
                    Some(approval) => self
                        .shown()
                        .remove(&approval)
                        .ok_or(SessionError::NotApproved)?,
                    None => self.sessions.plan(&request)?,
                };
                let handed = match self.handoff.get() {
                    Some(handoff) => handoff.start(args).await,
                    None => None,
                };
                let record = match handed {
                    Some(answer) => answer?,
                    None => {
                        let started_by = StartedBy {
                            channel: call.context.channel,
                            session: call.context.session.clone(),
                            approval_timeout: WeakHub::approval_timeout(self.hub.as_ref()),
                        };
                        self.sessions
                            .start(plan, Some(started_by), call.context.approver.clone())
                            .await?
                    }
                };
                let value = serde_json::to_value(&record).unwrap_or_default();
                let text = format!(
                    "session {} ({}): {}{}\nfollow it with session_status / session_logs",
                    record.id,
                    record.runner,
                    record.status,
                    record
                        .error
                        .as_deref()
                        .map(|e| format!(": {e}"))
                        .unwrap_or_default()
                );
                Ok((value, text))
            }
            "session_status" => {
                let record = self.sessions.get(&id_of(args)?)?;
                let value = serde_json::to_value(&record).unwrap_or_default();
                Ok((value.clone(), text_of(&value)))
            }
            "list_sessions" => {
                let status = match args.get("status").and_then(Value::as_str) {
                    Some(s) => Some(
                        serde_json::from_value::<Status>(json!(s))
                            .map_err(|_| SessionError::Invalid(format!("unknown status `{s}`")))?,
                    ),
                    None => None,
                };
                let page = Page::from_arguments(args, DEFAULT_SESSIONS, usize::MAX)
                    .map_err(SessionError::Invalid)?;
                let mut all = self.sessions.list(status)?;
                let total = all.len();
                all.truncate(page.limit);
                let text = all
                    .iter()
                    .map(|r| {
                        format!(
                            "{}  {:<9} {:<12} {}",
                            r.id,
                            r.status.as_str(),
                            r.runner,
                            first_line(&r.prompt)
                        )
                    })
                    .collect::<Vec<_>>()
                    .join("\n");
                let value = json!({ "count": all.len(), "total": total, "sessions": all });
                Ok((
                    value,
                    if text.is_empty() {
                        "no sessions".into()
                    } else {
                        text
                    },
                ))
            }
            "session_logs" => {
                let id = id_of(args)?;
                let page = Page::from_arguments(args, DEFAULT_PAGE, MAX_PAGE)
                    .map_err(SessionError::Invalid)?;
                let page = self.sessions.logs(&id, page.offset, page.limit)?;
                let status = self.sessions.get(&id)?.status;
                let text = page
                    .entries
                    .iter()
                    .map(|e| e.text.as_str())
                    .collect::<Vec<_>>()
                    .join("\n");
                let mut value = serde_json::to_value(&page).unwrap_or_default();
                value["id"] = json!(id);
                value["status"] = json!(status);
                Ok((value, text))
            }
            "cancel_session" => {
                let id = id_of(args)?;
                self.sessions.cancel(&id)?;
                let record = self.sessions.wait(&id, crate::supervise::GRACE * 2).await?;
                let value = serde_json::to_value(&record).unwrap_or_default();
                Ok((value, format!("session {id}: {}", record.status)))
            }
            other => Err(SessionError::Invalid(format!("no tool `{other}`"))),
        }
    }
}

fn first_line(text: &str) -> String {
    let line = text.lines().next().unwrap_or_default();
    line.chars().take(60).collect()
}

fn strings(value: Option<&Value>) -> Vec<String> {
    value
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

fn id_of(args: &Map<String, Value>) -> Result<String, SessionError> {
    args.get("id")
        .and_then(Value::as_str)
        .map(str::to_string)
        .ok_or_else(|| SessionError::Invalid("`id` is required".into()))
}

#[async_trait]
impl Source for SessionsSource {
    fn id(&self) -> &str {
        SOURCE_ID
    }

    fn kind(&self) -> SourceKind {
        SourceKind::Builtin
    }

    fn description(&self) -> Option<String> {
        Some("Starts coding agents (Claude Code, Codex, …) on a task in the project and follows their sessions: status, logs, cancel.".to_string())
    }

    fn tools(&self) -> Vec<ToolDescriptor> {
        self.tools.as_ref().clone()
    }

    async fn call(&self, call: SourceCall<'_>) -> Result<ToolResult, SourceError> {
        Ok(match self.run(&call).await {
            Ok((value, text)) => ToolResult::structured_with_text(value, text),
            Err(e) => ToolResult::failure(e.kind(), e.to_string()),
        })
    }

    async fn preview(&self, call: SourceCall<'_>) -> Option<String> {
        if !matches!(
            call.tool.original_name.as_str(),
            "run_session" | "run_subagent"
        ) {
            return None;
        }
        let request: RunRequest =
            serde_json::from_value(Value::Object(call.arguments.clone())).ok()?;
        Some(match self.sessions.plan(&request) {
            Ok(plan) => {
                let preview = plan.preview();
                if let Some(approval) = call.context.approval {
                    let mut shown = self.shown();
                    if shown.len() >= MAX_SHOWN {
                        return Some(format!(
                            "{preview}\n(this session cannot start: {MAX_SHOWN} approvals of \
                             sessions are already waiting; answer or deny some first)"
                        ));
                    }
                    shown.insert(approval, plan);
                }
                preview
            }
            Err(e) => format!("this session cannot start: {e}"),
        })
    }

    fn approval_ended(&self, approval: uuid::Uuid) {
        self.shown().remove(&approval);
    }
}

fn descriptors() -> Vec<ToolDescriptor> {
    let id = json!({"type": "string", "description": "The session's id (from run_session or list_sessions)."});
    let object = |properties: Value, required: &[&str]| json!({"type": "object", "properties": properties, "required": required, "additionalProperties": false});
    let run_schema = object(
        json!({
            "runner": {"type": "string", "description": "The runner's name (list_runners): claude, codex, gemini, copilot, aider, goose, opencode, cursor-agent, or a configured one."},
            "prompt": {"type": "string", "description": "What the agent should do. With `specs`: text put before them, or their template with `{specs}`."},
            "specs": {"type": "array", "items": {"type": "string"}, "description": "Spec ids (number, folder name or unique fragment) to build the prompt from."},
            "cwd": {"type": "string", "description": "The folder to run in, relative to the project root (default: the root)."},
            "worktree": {"type": "boolean", "description": "Run in a new git worktree on a new branch, left for review afterwards."},
            "branch": {"type": "string", "description": "The new branch's name (default toolmux/session-<id>)."},
            "env": {"type": "object", "additionalProperties": {"type": "string"}, "description": "More environment variables for the runner."},
            "timeoutMs": {"type": "integer", "minimum": 1, "description": "The time limit in milliseconds (default: the runner's, one hour)."},
            "model": {"type": "string", "description": "The model to ask the runner for."},
        }),
        &["runner"],
    );
    let mut tools = vec![
        ToolDescriptor::new(
            SOURCE_ID,
            "list_runners",
            "List the coding agents (runners) toolmux can start — Claude Code, Codex, Gemini CLI, Copilot, aider, goose, opencode, Cursor's agent and configured ones — with how each is launched and what the last detection found (run detect_runners to check which are installed).",
            object(json!({}), &[]),
        ),
        ToolDescriptor::new(
            SOURCE_ID,
            "detect_runners",
            "Check which runners are installed: each runner's program on PATH and its version (from --version). Cached while the program is unchanged; `refresh` checks again.",
            object(
                json!({
                    "names": {"type": "array", "items": {"type": "string"}, "description": "Only these runners (default: all)."},
                    "refresh": {"type": "boolean", "description": "Ignore the cache."},
                }),
                &[],
            ),
        ),
        ToolDescriptor::new(
            SOURCE_ID,
            "run_session",
            "Start a coding session: a coding agent (runner) working on a prompt, or on specs, in a folder of the project (optionally its own git worktree on a new branch). Returns at once with the session's id; follow it with session_status and session_logs, stop it with cancel_session.",
            run_schema.clone(),
        ),
        ToolDescriptor::new(
            SOURCE_ID,
            "run_subagent",
            "Start a subagent: the same as run_session (a coding agent working on a prompt or specs in a folder of the project). Returns at once with the session's id.",
            run_schema,
        ),
        ToolDescriptor::new(
            SOURCE_ID,
            "session_status",
            "One coding session: its status (pending, running, completed, failed, cancelled, lost), runner, prompt, folder, command line, exit code and duration.",
            object(json!({"id": id}), &["id"]),
        ),
        ToolDescriptor::new(
            SOURCE_ID,
            "list_sessions",
            "List coding sessions, newest first, from every channel and toolmux process of this project.",
            object(
                json!({
                    "status": {"type": "string", "enum": ["pending", "running", "completed", "failed", "cancelled", "lost"]},
                    "limit": {"type": "integer", "minimum": 1, "description": "At most this many (default 50)."},
                }),
                &[],
            ),
        ),
        ToolDescriptor::new(
            SOURCE_ID,
            "session_logs",
            "Read a coding session's log, a page at a time: each line the runner printed (JSON events parsed), in order. Pass the answer's nextOffset as `offset` for the next page.",
            object(
                json!({
                    "id": id,
                    "offset": {"type": "integer", "minimum": 0, "description": "The first entry (default 0)."},
                    "limit": {"type": "integer", "minimum": 1, "maximum": MAX_PAGE, "description": "At most this many entries (default 200)."},
                }),
                &["id"],
            ),
        ),
        ToolDescriptor::new(
            SOURCE_ID,
            "cancel_session",
            "Cancel a running coding session: its runner and everything it started are stopped.",
            object(json!({"id": id}), &["id"]),
        ),
    ];
    for tool in &mut tools {
        match tool.name.as_str() {
            "list_runners" | "session_status" | "list_sessions" | "session_logs" => {
                tool.annotations = ToolAnnotations::read_only();
                tool.parallel = true;
            }
            // Starting an agent that edits the project is asked about by default; the
            // approval shows runner, folder, prompt and the exact command line.
            "run_session" | "run_subagent" => {
                tool.annotations.destructive_hint = Some(true);
                tool.policy = Some(Policy::Ask);
            }
            _ => {}
        }
    }
    tools
}
