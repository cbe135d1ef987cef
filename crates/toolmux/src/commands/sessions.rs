//! `toolmux sessions run | list | show | logs | cancel`: coding sessions from the command line.
//! Each subcommand is a call of a `sessions` tool through the pipeline; `run` and
//! `logs --follow` then follow the session's log as it is written (from the store, so a
//! session another toolmux process runs can be followed too). A session started here runs in
//! this process: it is followed to its end, and Ctrl-C cancels it.

use std::path::Path;
use std::sync::Arc;

use clap::{Args, Subcommand};
use serde_json::{Value, json};
use toolmux_sessions::{DirStore, FollowEvent, Follower, SessionStore, Stream};

use crate::assembly::Assembly;
use crate::cli_call;
use crate::exit::{Failure, OK, TOOL_FAILED};
use crate::output::{emit, pretty};

/// `toolmux sessions`.
#[derive(Debug, Args)]
pub struct SessionsArgs {
    /// Print structured results as JSON (for `run` and `logs --follow`: one JSON log entry a
    /// line, then the final status).
    #[arg(long, global = true)]
    pub json: bool,
    #[command(subcommand)]
    pub command: SessionsCommand,
}

#[derive(Debug, Subcommand)]
pub enum SessionsCommand {
    /// Start a runner on a prompt (or on specs) and show its log live until it ends.
    Run {
        /// The runner (`toolmux runners list`).
        runner: String,
        /// What the agent should do (with --spec: text before the specs, or their template
        /// with `{specs}`).
        prompt: Option<String>,
        /// A spec to build the prompt from (repeatable).
        #[arg(long = "spec", value_name = "SPEC")]
        specs: Vec<String>,
        /// The folder to run in, relative to the project root.
        #[arg(long)]
        cwd: Option<String>,
        /// Run in a new git worktree on a new branch.
        #[arg(long)]
        worktree: bool,
        /// The new branch's name.
        #[arg(long, requires = "worktree")]
        branch: Option<String>,
        /// The time limit (`90s`, `10m`, `1h`).
        #[arg(long, value_parser = toolmux_core::parse_duration)]
        timeout: Option<std::time::Duration>,
        /// The model to ask the runner for.
        #[arg(long)]
        model: Option<String>,
    },
    /// Sessions of this project, newest first.
    List {
        /// Only sessions with this status.
        #[arg(long)]
        status: Option<String>,
        /// At most this many.
        #[arg(long, default_value_t = 50)]
        limit: u64,
    },
    /// One session's record.
    Show {
        /// The session's id.
        id: String,
    },
    /// A session's log.
    Logs {
        /// The session's id.
        id: String,
        /// The first entry.
        #[arg(long, default_value_t = 0)]
        offset: u64,
        /// At most this many entries.
        #[arg(long, default_value_t = 200)]
        limit: u64,
        /// Keep following the log until the session ends.
        #[arg(long, short)]
        follow: bool,
    },
    /// Cancel a running session.
    Cancel {
        /// The session's id.
        id: String,
    },
}

pub async fn run(project: Option<&Path>, args: SessionsArgs) -> Result<u8, Failure> {
    let assembly = Assembly::open(project)?;
    let json_out = args.json;
    match args.command {
        SessionsCommand::Run {
            runner,
            prompt,
            specs,
            cwd,
            worktree,
            branch,
            timeout,
            model,
        } => {
            let mut request = json!({ "runner": runner, "worktree": worktree });
            for (key, value) in [
                ("prompt", prompt.map(Value::from)),
                ("cwd", cwd.map(Value::from)),
                ("branch", branch.map(Value::from)),
                ("model", model.map(Value::from)),
                (
                    "timeoutMs",
                    timeout.map(|t| Value::from(t.as_millis() as u64)),
                ),
            ] {
                if let Some(value) = value {
                    request[key] = value;
                }
            }
            if !specs.is_empty() {
                request["specs"] = json!(specs);
            }
            let record = cli_call::call_structured(&assembly, "run_session", request).await?;
            let id = record["id"].as_str().unwrap_or_default().to_string();
            if !json_out {
                eprintln!(
                    "session {id} ({}) in {}",
                    record["runner"].as_str().unwrap_or_default(),
                    record["cwd"].as_str().unwrap_or_default()
                );
            }
            follow(&assembly, &id, json_out, true).await
        }
        SessionsCommand::List { status, limit } => {
            let mut arguments = json!({ "limit": limit });
            if let Some(status) = status {
                arguments["status"] = json!(status);
            }
            let list = cli_call::call_structured(&assembly, "list_sessions", arguments).await?;
            if json_out {
                emit(&pretty(&list)?)?;
            } else {
                emit(&list_text(&list))?;
            }
            Ok(OK)
        }
        SessionsCommand::Show { id } => {
            let record =
                cli_call::call_structured(&assembly, "session_status", json!({ "id": id })).await?;
            emit(&pretty(&record)?)?;
            Ok(OK)
        }
        SessionsCommand::Logs {
            id,
            offset,
            limit,
            follow: true,
        } => {
            // The status call checks the id (and the policy) the same way as without --follow.
            cli_call::call_structured(&assembly, "session_status", json!({ "id": id })).await?;
            let _ = (offset, limit);
            follow(&assembly, &id, json_out, false).await
        }
        SessionsCommand::Logs {
            id, offset, limit, ..
        } => {
            let page = cli_call::call_structured(
                &assembly,
                "session_logs",
                json!({ "id": id, "offset": offset, "limit": limit }),
            )
            .await?;
            if json_out {
                emit(&pretty(&page)?)?;
            } else {
                let lines: Vec<&str> = page["entries"]
                    .as_array()
                    .map(Vec::as_slice)
                    .unwrap_or_default()
                    .iter()
                    .filter_map(|e| e["text"].as_str())
                    .collect();
                emit(&lines.join("\n"))?;
                if page["more"] == true {
                    eprintln!("more: --offset {}", page["nextOffset"]);
                }
            }
            Ok(OK)
        }
        SessionsCommand::Cancel { id } => {
            let record =
                cli_call::call_structured(&assembly, "cancel_session", json!({ "id": id })).await?;
            emit(&format!(
                "session {id}: {}",
                record["status"].as_str().unwrap_or_default()
            ))?;
            Ok(OK)
        }
    }
}

/// Prints a session's log as it is written, then its final status; with `cancel_on_interrupt`
/// Ctrl-C cancels the session (which runs in this process) and the rest of it is still shown.
async fn follow(
    assembly: &Assembly,
    id: &str,
    json_out: bool,
    cancel_on_interrupt: bool,
) -> Result<u8, Failure> {
    let store: Arc<dyn SessionStore> = Arc::new(DirStore::new(&toolmux_config::state_dir(
        &assembly.loaded.project_dir,
    )));
    let mut follower =
        Follower::new(store, id).map_err(|e| Failure::Runtime(anyhow::anyhow!(e)))?;
    let mut interrupted = false;
    loop {
        let event = tokio::select! {
            event = follower.next() => event,
            _ = tokio::signal::ctrl_c(), if cancel_on_interrupt && !interrupted => {
                interrupted = true;
                eprintln!("cancelling session {id} …");
                let _ = cli_call::call(assembly, "cancel_session", json!({ "id": id })).await;
                continue;
            }
        };
        match event {
            Some(FollowEvent::Entry(entry)) => {
                if json_out {
                    emit(&serde_json::to_string(&entry).unwrap_or_default())?;
                } else if entry.stream == Stream::Toolmux {
                    eprintln!("· {}", entry.text);
                } else {
                    emit(&entry.text)?;
                }
            }
            Some(FollowEvent::Ended(end)) => {
                if json_out {
                    emit(&serde_json::to_string(&json!({ "status": end })).unwrap_or_default())?;
                } else {
                    eprintln!(
                        "session {id} {}{}{}",
                        end.status,
                        end.duration_ms
                            .map(|d| format!(" after {:.1}s", d as f64 / 1000.0))
                            .unwrap_or_default(),
                        end.error
                            .as_deref()
                            .map(|e| format!(": {e}"))
                            .unwrap_or_default()
                    );
                }
                return Ok(if end.status == toolmux_sessions::Status::Completed {
                    OK
                } else {
                    TOOL_FAILED
                });
            }
            None => return Ok(TOOL_FAILED),
        }
    }
}

fn list_text(list: &Value) -> String {
    let sessions = list["sessions"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    if sessions.is_empty() {
        return "no sessions".to_string();
    }
    sessions
        .iter()
        .map(|s| {
            let prompt: String = s["prompt"]
                .as_str()
                .unwrap_or_default()
                .lines()
                .next()
                .unwrap_or_default()
                .chars()
                .take(60)
                .collect();
            format!(
                "{}  {:<9} {:<12} {}",
                s["id"].as_str().unwrap_or_default(),
                s["status"].as_str().unwrap_or_default(),
                s["runner"].as_str().unwrap_or_default(),
                prompt
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}
