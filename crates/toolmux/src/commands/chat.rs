//! `toolmux chat`: the terminal chat. Streams the answer to stdout, shows each tool call on
//! stderr (name, source, short arguments, progress, outcome, duration), and asks approvals, the
//! model's questions and upstream servers' forms (elicitation) inline. Also lists, renames and
//! deletes conversations. The engine is the assembly's, the one `toolmux serve`'s `/api/chat`
//! uses too ([`Assembly::chat_engine`]).

use std::io::{IsTerminal, Write};
use std::path::Path;

use anyhow::Context;
use clap::{Args, Subcommand};
use serde_json::{Map, Value};
use tokio::sync::mpsc;
use toolmux_chat::{
    ChatEngine, ConversationStore, FinishReason, ReplyError, TurnEvent, TurnRequest, form_fields,
    preview,
};
use toolmux_core::{Approval, HumanAnswer, LogLevel, field_value};

use crate::assembly::Assembly;
use crate::exit::{Failure, OK, RUNTIME};
use crate::output::{emit, pretty};

#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct ChatArgs {
    /// The provider (a key of `providers` in the configuration). Default: `chat.defaultProvider`,
    /// else the only one configured, else the resumed conversation's.
    #[arg(long)]
    pub provider: Option<String>,
    /// The model. Default: the resumed conversation's, else the provider's `defaultModel`.
    #[arg(long)]
    pub model: Option<String>,
    /// Continue a conversation by id (`toolmux chat list` shows them).
    #[arg(long, value_name = "ID")]
    pub resume: Option<String>,
    /// Send this one message, print the answer and exit, instead of a conversation on stdin.
    pub message: Option<String>,
    #[command(subcommand)]
    pub command: Option<ChatCommand>,
}

#[derive(Debug, Subcommand)]
pub enum ChatCommand {
    /// List conversations, most recent first.
    List {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Print a conversation's messages as JSON.
    Show {
        /// The conversation's id.
        id: String,
    },
    /// Rename a conversation.
    Rename {
        /// The conversation's id.
        id: String,
        /// The new title.
        title: String,
    },
    /// Delete a conversation and its messages.
    Delete {
        /// The conversation's id.
        id: String,
    },
}

pub async fn run(project: Option<&Path>, args: ChatArgs) -> Result<u8, Failure> {
    let project = Assembly::open(project)?;
    match args.command {
        Some(command) => manage(&project, command),
        None => converse(&project, args).await,
    }
}

fn manage(project: &Assembly, command: ChatCommand) -> Result<u8, Failure> {
    let store = project.conversation_store()?;
    let missing = |id: &str| Failure::Usage(format!("no conversation `{id}`"));
    match command {
        ChatCommand::List { json } => {
            let list = store.list().context("cannot list conversations")?;
            if json {
                emit(&pretty(&list)?)?;
            } else {
                for c in list {
                    emit(&format!(
                        "{}  {}  {}/{}  {}",
                        c.id,
                        c.updated.format("%Y-%m-%d %H:%M"),
                        c.provider,
                        c.model,
                        c.title
                    ))?;
                }
            }
        }
        ChatCommand::Show { id } => {
            let conversation = store
                .get(&id)
                .context("cannot read the conversation")?
                .ok_or_else(|| missing(&id))?;
            let messages = store
                .messages(&id)
                .context("cannot read the conversation")?;
            emit(&pretty(&serde_json::json!({
                "conversation": conversation,
                "messages": messages,
            }))?)?;
        }
        ChatCommand::Rename { id, title } => {
            if !store.rename(&id, &title).context("cannot rename")? {
                return Err(missing(&id));
            }
        }
        ChatCommand::Delete { id } => {
            if !store.delete(&id).context("cannot delete")? {
                return Err(missing(&id));
            }
        }
    }
    Ok(OK)
}

/// Lines typed by the person, read on a thread of their own so that a turn can stream while
/// waiting for the next one.
fn stdin_lines() -> mpsc::UnboundedReceiver<String> {
    let (tx, rx) = mpsc::unbounded_channel();
    std::thread::spawn(move || {
        let stdin = std::io::stdin();
        let mut line = String::new();
        loop {
            line.clear();
            match stdin.read_line(&mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) => {
                    if tx
                        .send(line.trim_end_matches(['\n', '\r']).to_string())
                        .is_err()
                    {
                        return;
                    }
                }
            }
        }
    });
    rx
}

fn prompt(text: &str) {
    let mut err = std::io::stderr().lock();
    let _ = write!(err, "{text}");
    let _ = err.flush();
}

/// A prompt asked for by name, with its arguments.
type AskedPrompt = (String, Map<String, Value>);

/// The prompt a `/prompt NAME key=value …` line asks for (split as a shell splits words, so a
/// value with spaces is quoted): `None` for any other line, `Err` for one that cannot be read.
fn prompt_line(line: &str) -> Option<Result<AskedPrompt, String>> {
    let rest = line.trim().strip_prefix("/prompt")?;
    if !rest.is_empty() && !rest.starts_with(char::is_whitespace) {
        return None;
    }
    let usage = "usage: /prompt NAME key=value … (`toolmux` lists prompts at GET /api/prompts)";
    let Some(words) = shlex::split(rest) else {
        return Some(Err(format!("{usage}: an unclosed quote")));
    };
    let mut words = words.into_iter();
    let Some(name) = words.next() else {
        return Some(Err(usage.to_string()));
    };
    let mut arguments = Map::new();
    for word in words {
        let Some((key, value)) = word.split_once('=') else {
            return Some(Err(format!("{usage}: `{word}` is not key=value")));
        };
        arguments.insert(key.to_string(), Value::String(value.to_string()));
    }
    Some(Ok((name, arguments)))
}

/// Gets the prompt a `/prompt` line asked for: its messages as the person's message
/// (`toolmux_chat::prompt_text`), or why not.
async fn use_prompt(
    project: &Assembly,
    asked: Result<AskedPrompt, String>,
) -> Result<String, String> {
    let (name, arguments) = asked?;
    let result = project
        .upstream_view()
        .get_prompt(&name, arguments)
        .await
        .map_err(|e| format!("prompt `{name}`: {e}"))?;
    eprintln!("toolmux: prompt `{name}` is the message");
    Ok(toolmux_chat::prompt_text(&result))
}

async fn converse(project: &Assembly, args: ChatArgs) -> Result<u8, Failure> {
    let engine = project.chat_engine()?;
    let interactive = std::io::stdin().is_terminal();
    let mut lines = stdin_lines();
    let mut conversation = args.resume.clone();
    if let Some(id) = &conversation {
        let wanted = id.clone();
        let found = engine
            .with_store(move |store| store.get(&wanted))
            .await
            .context("cannot read the conversation")?;
        if found.is_none() {
            return Err(Failure::Usage(format!(
                "no conversation `{id}` to resume (`toolmux chat list` shows them)"
            )));
        }
    }
    let mut first = args.message.clone();
    let one_shot = first.is_some();
    let mut code = OK;
    loop {
        let text = match first.take() {
            Some(text) => text,
            None => {
                if interactive {
                    prompt("you> ");
                }
                match lines.recv().await {
                    Some(line) if line.trim().is_empty() => continue,
                    Some(line) if matches!(line.trim(), "/exit" | "/quit") => break,
                    Some(line) => line,
                    None => break,
                }
            }
        };
        // `/prompt NAME key=value …`: an upstream server's (or toolmux's own) prompt, whose
        // messages are the person's message.
        let text = match prompt_line(&text) {
            None => text,
            Some(asked) => match use_prompt(project, asked).await {
                Ok(text) => text,
                Err(e) if one_shot => return Err(Failure::Usage(e)),
                Err(e) => {
                    eprintln!("toolmux: {e}");
                    continue;
                }
            },
        };
        let request = TurnRequest {
            conversation: conversation.clone(),
            text,
            provider: args.provider.clone(),
            model: args.model.clone(),
            replace_turn: None,
        };
        let (id, events, cancel) = engine
            .start_turn(request)
            .await
            .map_err(|e| Failure::Usage(e.to_string()))?;
        if conversation.is_none() {
            eprintln!("toolmux: conversation {id} (continue it with --resume {id})");
        }
        conversation = Some(id.clone());
        let ok = show_turn(&engine, &id, events, &cancel, &mut lines).await?;
        if !ok {
            code = RUNTIME;
        }
        if one_shot {
            break;
        }
    }
    project.log.flush();
    Ok(code)
}

/// Shows one turn; returns false when it ended in an error.
async fn show_turn(
    engine: &ChatEngine,
    conversation: &str,
    mut events: mpsc::Receiver<TurnEvent>,
    cancel: &toolmux_chat::CancellationToken,
    lines: &mut mpsc::UnboundedReceiver<String>,
) -> Result<bool, Failure> {
    let mut out = std::io::stdout();
    let mut mid_line = false;
    let mut ok = true;
    // Progress and log events name the call by id; the person knows it by the tool's name.
    let mut names: std::collections::HashMap<String, String> = std::collections::HashMap::new();
    loop {
        let event = tokio::select! {
            event = events.recv() => event,
            _ = tokio::signal::ctrl_c() => {
                cancel.cancel();
                continue;
            }
        };
        let Some(event) = event else { break };
        match event {
            TurnEvent::TextDelta(delta) => {
                write!(out, "{delta}")
                    .and_then(|()| out.flush())
                    .map_err(broken)?;
                mid_line = !delta.ends_with('\n');
            }
            TurnEvent::ToolInput { call, source } => {
                end_line(&mut out, &mut mid_line)?;
                names.insert(call.id.clone(), call.name.clone());
                eprintln!(
                    "  ⚙ {} ({}) {}",
                    call.name,
                    source.unwrap_or_else(|| "unknown tool".into()),
                    preview(&call.arguments.to_string(), 100)
                );
            }
            TurnEvent::ToolOutput(output) => {
                let outcome = match (&output.error_code, output.is_error) {
                    (Some(code), _) => format!("{code}: {}", preview(&output.content, 100)),
                    (None, true) => format!("error: {}", preview(&output.content, 100)),
                    (None, false) => format!("ok, {} bytes", output.content.len()),
                };
                eprintln!(
                    "  ↳ {} {} in {} ms",
                    output.name, outcome, output.duration_ms
                );
            }
            TurnEvent::ApprovalRequested(pending) => {
                end_line(&mut out, &mut mid_line)?;
                prompt(&format!(
                    "  ? {}\n    arguments: {}\n    allow? [y/N] ",
                    pending.request.message,
                    preview(&pending.request.arguments.to_string(), 200)
                ));
                let answer = lines.recv().await.unwrap_or_default();
                let approval = if matches!(answer.trim(), "y" | "Y" | "yes") {
                    Approval::Allow
                } else {
                    Approval::Deny {
                        reason: "the person declined in the terminal chat".into(),
                    }
                };
                // The call may have timed out meanwhile; then there is nothing to answer.
                let _ = engine.approvals().answer(pending.id, approval);
            }
            TurnEvent::ToolProgress { call_id, progress } => {
                end_line(&mut out, &mut mid_line)?;
                let name = names.get(&call_id).map_or("tool", String::as_str);
                let amount = match progress.total {
                    Some(total) => format!("{}/{total}", progress.progress),
                    None => format!("{}", progress.progress),
                };
                let message = progress.message.map(|m| format!(" {}", preview(&m, 100)));
                eprintln!("  … {name} {amount}{}", message.unwrap_or_default());
            }
            // Servers log for their operators; a person chatting sees only what may need
            // their attention (warnings and worse). Everything else stays in the UI stream.
            TurnEvent::ToolLog { call_id, message } => {
                if message.level >= LogLevel::Warning {
                    end_line(&mut out, &mut mid_line)?;
                    let name = names.get(&call_id).map_or("tool", String::as_str);
                    let text = match &message.data {
                        serde_json::Value::String(s) => s.clone(),
                        other => other.to_string(),
                    };
                    eprintln!(
                        "  ! {name} {}: {}",
                        serde_json::to_value(message.level)
                            .ok()
                            .and_then(|v| v.as_str().map(str::to_string))
                            .unwrap_or_default(),
                        preview(&text, 200)
                    );
                }
            }
            TurnEvent::InputRequested(request) => {
                end_line(&mut out, &mut mid_line)?;
                // An answer that does not fit the form is refused with why and the question
                // stays open, so it is asked again.
                loop {
                    let answered = match &request.form {
                        Some(form) => {
                            let answer = fill_form(&request, form, lines).await;
                            engine.answer_input(conversation, Some(request.id), answer)
                        }
                        None => {
                            prompt(&format!("  ? {}\n  answer> ", request.question));
                            let text = lines.recv().await.unwrap_or_default();
                            engine.answer_input_text(conversation, Some(request.id), &text)
                        }
                    };
                    match answered {
                        Err(e @ ReplyError::DoesNotFit(_)) => eprintln!("  {e}"),
                        // The call may have ended meanwhile; then there is nothing to answer.
                        Ok(()) | Err(ReplyError::NotWaiting(_)) => break,
                    }
                }
            }
            TurnEvent::Finished { reason, .. } => {
                end_line(&mut out, &mut mid_line)?;
                if reason == FinishReason::Cancelled {
                    eprintln!("toolmux: the turn was cancelled");
                }
            }
            TurnEvent::Error { message } => {
                end_line(&mut out, &mut mid_line)?;
                eprintln!("toolmux: {message}");
                ok = false;
            }
            TurnEvent::Started { .. }
            | TurnEvent::StepStart { .. }
            | TurnEvent::StepFinish { .. }
            | TurnEvent::ToolInputStart { .. } => {}
        }
    }
    Ok(ok)
}

/// Asks a server's form one field at a time. `/decline` or `/cancel` on any line ends it so,
/// as the end of the input does.
async fn fill_form(
    request: &toolmux_chat::InputRequest,
    form: &serde_json::Value,
    lines: &mut mpsc::UnboundedReceiver<String>,
) -> HumanAnswer {
    let asker = request.asker.as_deref().unwrap_or("a tool");
    eprintln!(
        "  ? {asker} asks: {}\n    (answer each field; an empty line skips an optional one; \
         /decline or /cancel to not answer)",
        request.question
    );
    let mut fields = serde_json::Map::new();
    for (name, field, required) in form_fields(form) {
        let mut label = name.clone();
        if let Some(description) = field.get("description").and_then(|d| d.as_str()) {
            label.push_str(&format!(" ({description})"));
        }
        if let Some(choices) = field.get("enum").and_then(|e| e.as_array()) {
            let choices: Vec<String> = choices
                .iter()
                .map(|c| c.as_str().map_or_else(|| c.to_string(), str::to_string))
                .collect();
            label.push_str(&format!(" [{}]", choices.join(", ")));
        }
        if !required {
            label.push_str(" [optional]");
        }
        prompt(&format!("    {label}> "));
        let Some(line) = lines.recv().await else {
            return HumanAnswer::Cancel;
        };
        match line.trim() {
            "/decline" => return HumanAnswer::Decline,
            "/cancel" => return HumanAnswer::Cancel,
            "" if !required => {}
            text => {
                fields.insert(name, field_value(&field, text));
            }
        }
    }
    HumanAnswer::Accept(serde_json::Value::Object(fields))
}

fn broken(e: std::io::Error) -> Failure {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        Failure::BrokenPipe
    } else {
        e.into()
    }
}

fn end_line(out: &mut std::io::Stdout, mid_line: &mut bool) -> Result<(), Failure> {
    if *mid_line {
        writeln!(out).map_err(broken)?;
        *mid_line = false;
    }
    Ok(())
}
