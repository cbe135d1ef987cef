//! The chat over HTTP: `POST /api/chat` streams a turn as Server-Sent Events in the AI SDK's UI
//! message stream protocol, and a few routes manage conversations.
//!
//! # Routes
//! | route | what |
//! |---|---|
//! | `POST /api/chat` | runs a turn; body `{"conversation"?, "text", "provider"?, "model"?}`, or the AI SDK's `useChat` body (`{"id", "messages": [...]}`: the last user message is the new input, `id` the conversation; the server keeps the history) |
//! | `POST /api/chat/{conversation}/input` | answers a question (the model's `request_human_input`, or a server's form): `{"answer", "id"?}`, or `{"action": "decline" \| "cancel", "id"?}`; `answer` is text, or for a form an object of its fields. A form's answer that does not fit its schema declines the server's request and is answered `422 invalid_answer` with the reasons |
//! | `POST /api/chat/{conversation}/cancel` | cancels the running turn |
//! | `GET /api/conversations` | conversations, most recent first |
//! | `GET /api/conversations/{id}` | one conversation with its messages |
//! | `PATCH /api/conversations/{id}` | renames it: `{"title"}` |
//! | `DELETE /api/conversations/{id}` | deletes it |
//! | `GET /api/models` | each provider's models, as the provider lists them |
//!
//! Approvals of `ask` calls, and of a server's requests to use the turn's model (MCP sampling:
//! the server's `sampling/createMessage`, answered by the turn's provider and model without
//! tools), are answered through the REST API's `POST /api/approvals/{id}` (the id is in the
//! `data-approval` event); both use the same [`toolmux_core::ApprovalQueue`].
//!
//! # The stream
//! The response has `content-type: text/event-stream` and `x-vercel-ai-ui-message-stream: v1`.
//! Each event is one `data: <json>` line and a blank line; the stream ends with `data: [DONE]`.
//! Events, in the order a turn produces them:
//!
//! | `type` | fields | when |
//! |---|---|---|
//! | `start` | `messageId`, `messageMetadata: {conversationId, provider, model}` | once, first |
//! | `start-step` | | each model call starts |
//! | `text-start` | `id` | a run of answer text starts |
//! | `text-delta` | `id`, `delta` | more answer text |
//! | `text-end` | `id` | the run of text ends (before a tool call, at the end of a step) |
//! | `tool-input-start` | `toolCallId`, `toolName`, `dynamic: true` | the model starts writing a tool call |
//! | `tool-input-available` | `toolCallId`, `toolName`, `input`, `dynamic: true` | the call is complete and about to run |
//! | `data-approval` | `id` (the approval id), `data: {approvalId, tool, source, arguments, message, answer}` | an `ask` call waits; answer with `POST {answer}` and `{"decision": "allow" \| "deny", "reason"?}` |
//! | `data-tool-progress` | `id` (the call's id), `data: {toolCallId, progress, total?, message?}`, `transient: true` | a running tool reported progress (an MCP server's progress notification); each replaces the last, and none is kept in the message |
//! | `data-tool-log` | `data: {toolCallId, level, logger?, data}`, `transient: true` | a running tool's MCP server logged a message (`level` is MCP's: `debug` … `emergency`) |
//! | `data-input-request` | `id`, `data: {requestId, question, answer, form?, asker?}` | the model asked the person, or a running tool's MCP server sent a form (elicitation: `form` is its JSON Schema, `asker` the server); answer with `POST {answer}` and `{"answer": "..." or {fields}, "id": requestId}`, or `{"action": "decline"}` |
//! | `tool-output-available` | `toolCallId`, `output: {content, structured?, logId, durationMs}`, `dynamic: true` | the call returned a result |
//! | `tool-output-error` | `toolCallId`, `errorText`, `dynamic: true` | the call failed, was refused (a denied approval) or reported an error; the model sees the same text |
//! | `finish-step` | | the model call and its tool calls are done |
//! | `finish` | `messageMetadata: {conversationId, finishReason, usage: {inputTokens, outputTokens}, steps}` | the turn ended: `finishReason` is `stop`, `step-limit` (the loop stopped at `chat.maxSteps`, after a visible text saying so) or `cancelled` |
//! | `error` | `errorText` | the turn failed (the provider answered 429, the stream dropped); nothing but `[DONE]` follows |
//!
//! Tools are `dynamic` because toolmux's registry is known only at run time, so AI SDK front
//! ends render them as `dynamic-tool` parts. A client that disconnects cancels the turn.

use std::convert::Infallible;
use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use futures::StreamExt;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::engine::{ChatEngine, FinishReason, TurnEvent, TurnRequest};
use crate::error::ChatError;
use crate::human_input::{Reply, ReplyError};

/// The header that names the stream protocol.
pub const STREAM_HEADER: &str = "x-vercel-ai-ui-message-stream";

/// What the chat routes need.
#[derive(Clone)]
pub struct ChatHttpState {
    engine: Arc<ChatEngine>,
}

impl ChatHttpState {
    /// The state for an engine.
    pub fn new(engine: Arc<ChatEngine>) -> Self {
        Self { engine }
    }
}

/// The chat's routes (see the module documentation), ready to merge into the server. They carry
/// no guard of their own: the server puts them behind the REST API's one guard (Host and Origin
/// checks, API keys), so every HTTP route is protected the same way.
pub fn router(state: ChatHttpState) -> Router {
    Router::new()
        .route("/api/chat", post(chat))
        .route("/api/chat/{conversation}/input", post(input))
        .route("/api/chat/{conversation}/cancel", post(cancel))
        .route("/api/conversations", get(list))
        .route(
            "/api/conversations/{id}",
            get(show).patch(rename).delete(delete),
        )
        .route("/api/models", get(models))
        .with_state(state)
}

/// An error as the REST API renders it: `{"error": {"code", "message"}}` with a status.
#[derive(Debug)]
pub struct HttpError {
    status: StatusCode,
    code: &'static str,
    message: String,
}

impl HttpError {
    fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            code,
            message: message.into(),
        }
    }

    fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "bad_request", message)
    }
}

impl IntoResponse for HttpError {
    fn into_response(self) -> Response {
        (
            self.status,
            Json(json!({"error": {"code": self.code, "message": self.message}})),
        )
            .into_response()
    }
}

impl From<ChatError> for HttpError {
    fn from(e: ChatError) -> Self {
        let (status, code) = match &e {
            ChatError::NoProvider(_) | ChatError::NoModel(_) => {
                (StatusCode::BAD_REQUEST, "no_provider")
            }
            ChatError::NoConversation(_) => (StatusCode::NOT_FOUND, "not_found"),
            ChatError::Busy(_) => (StatusCode::CONFLICT, "busy"),
            ChatError::Provider(_) => (StatusCode::BAD_GATEWAY, "provider"),
            ChatError::Store(_) => (StatusCode::INTERNAL_SERVER_ERROR, "store"),
        };
        Self::new(status, code, e.to_string())
    }
}

impl From<crate::error::StoreError> for HttpError {
    fn from(e: crate::error::StoreError) -> Self {
        ChatError::from(e).into()
    }
}

/// The body of `POST /api/chat`: toolmux's own short form, or the AI SDK's `useChat` form.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ChatBody {
    conversation: Option<String>,
    text: Option<String>,
    provider: Option<String>,
    model: Option<String>,
    /// `useChat`'s chat id.
    id: Option<String>,
    /// `useChat`'s messages; only the last user message is read.
    #[serde(default)]
    messages: Vec<Value>,
}

/// The text of the last user message of a `useChat` body (`parts` of type `text`, or a
/// `content` string).
fn last_user_text(messages: &[Value]) -> Option<String> {
    let message = messages
        .iter()
        .rev()
        .find(|m| m.get("role").and_then(Value::as_str) == Some("user"))?;
    if let Some(parts) = message.get("parts").and_then(Value::as_array) {
        let text: Vec<&str> = parts
            .iter()
            .filter(|p| p.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect();
        return Some(text.join("\n"));
    }
    message
        .get("content")
        .and_then(Value::as_str)
        .map(str::to_string)
}

async fn chat(
    State(state): State<ChatHttpState>,
    body: Result<Json<ChatBody>, axum::extract::rejection::JsonRejection>,
) -> Result<Response, HttpError> {
    let Json(body) = body.map_err(|e| HttpError::bad_request(e.body_text()))?;
    let text = body
        .text
        .clone()
        .or_else(|| last_user_text(&body.messages))
        .filter(|t| !t.trim().is_empty())
        .ok_or_else(|| {
            HttpError::bad_request(
                "the request has no text: send {\"text\": \"...\"} or a `messages` list whose \
                 last user message has text",
            )
        })?;
    let request = TurnRequest {
        conversation: body.conversation.or(body.id),
        text,
        provider: body.provider,
        model: body.model,
    };
    let (conversation, events, cancel) = state.engine.start_turn(request).await?;
    let stream = ui_message_stream(conversation, events, cancel);
    let mut response = Response::new(Body::from_stream(stream));
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert(STREAM_HEADER, HeaderValue::from_static("v1"));
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    Ok(response)
}

/// Turns a turn's events into the UI message stream. Dropping the stream (the client went
/// away) cancels the turn.
fn ui_message_stream(
    conversation: String,
    events: tokio::sync::mpsc::Receiver<TurnEvent>,
    cancel: CancellationToken,
) -> impl futures::Stream<Item = Result<Bytes, Infallible>> + Send + 'static {
    let guard = cancel.drop_guard();
    let mut encoder = UiEncoder::new(conversation);
    let body = tokio_stream_from(events).flat_map(move |event| {
        let _ = &guard;
        futures::stream::iter(encoder.encode(&event))
    });
    body.chain(futures::stream::once(async {
        "data: [DONE]\n\n".to_string()
    }))
    .map(|text| Ok(Bytes::from(text)))
}

fn tokio_stream_from(
    mut rx: tokio::sync::mpsc::Receiver<TurnEvent>,
) -> impl futures::Stream<Item = TurnEvent> + Send + 'static {
    futures::stream::poll_fn(move |cx| rx.poll_recv(cx))
}

/// Encodes [`TurnEvent`]s as UI message stream chunks, keeping track of the open text part.
pub struct UiEncoder {
    conversation: String,
    open_text: Option<String>,
    texts: u32,
}

impl UiEncoder {
    /// An encoder for one turn.
    pub fn new(conversation: String) -> Self {
        Self {
            conversation,
            open_text: None,
            texts: 0,
        }
    }

    fn close_text(&mut self, out: &mut Vec<Value>) {
        if let Some(id) = self.open_text.take() {
            out.push(json!({"type": "text-end", "id": id}));
        }
    }

    /// The chunks for one event, as JSON values.
    pub fn chunks(&mut self, event: &TurnEvent) -> Vec<Value> {
        let mut out = Vec::new();
        match event {
            TurnEvent::Started {
                conversation,
                provider,
                model,
            } => out.push(json!({
                "type": "start",
                "messageId": uuid::Uuid::now_v7().to_string(),
                "messageMetadata": {"conversationId": conversation, "provider": provider, "model": model}
            })),
            TurnEvent::StepStart { .. } => out.push(json!({"type": "start-step"})),
            TurnEvent::TextDelta(delta) => {
                let id = match &self.open_text {
                    Some(id) => id.clone(),
                    None => {
                        self.texts += 1;
                        let id = format!("text-{}", self.texts);
                        out.push(json!({"type": "text-start", "id": id}));
                        self.open_text = Some(id.clone());
                        id
                    }
                };
                out.push(json!({"type": "text-delta", "id": id, "delta": delta}));
            }
            TurnEvent::ToolInputStart { call_id, name } => {
                self.close_text(&mut out);
                out.push(json!({"type": "tool-input-start", "toolCallId": call_id, "toolName": name, "dynamic": true}));
            }
            TurnEvent::ToolInput { call, .. } => {
                self.close_text(&mut out);
                out.push(json!({
                    "type": "tool-input-available",
                    "toolCallId": call.id,
                    "toolName": call.name,
                    "input": call.arguments,
                    "dynamic": true
                }));
            }
            TurnEvent::ApprovalRequested(pending) => {
                self.close_text(&mut out);
                out.push(json!({
                    "type": "data-approval",
                    "id": pending.id.to_string(),
                    "data": {
                        "approvalId": pending.id.to_string(),
                        "tool": pending.request.tool,
                        "source": pending.request.source,
                        "arguments": pending.request.arguments,
                        "message": pending.request.message,
                        "answer": format!("/api/approvals/{}", pending.id),
                    }
                }));
            }
            TurnEvent::InputRequested(request) => {
                self.close_text(&mut out);
                let mut data = json!({
                    "requestId": request.id.to_string(),
                    "question": request.question,
                    "answer": format!("/api/chat/{}/input", request.conversation),
                });
                if let Some(form) = &request.form {
                    data["form"] = form.clone();
                }
                if let Some(asker) = &request.asker {
                    data["asker"] = asker.clone().into();
                }
                out.push(json!({
                    "type": "data-input-request",
                    "id": request.id.to_string(),
                    "data": data,
                }));
            }
            // Transient: progress and logs matter while the tool runs; the AI SDK hands them
            // to `onData` and keeps them out of the message (and so out of its history).
            TurnEvent::ToolProgress { call_id, progress } => {
                // `Progress` serializes as MCP does: `progress`, and `total` and `message`
                // only when known.
                let mut data = json!(progress);
                data["toolCallId"] = json!(call_id);
                out.push(json!({
                    "type": "data-tool-progress",
                    "id": call_id,
                    "data": data,
                    "transient": true,
                }));
            }
            TurnEvent::ToolLog { call_id, message } => {
                let mut data = json!({
                    "toolCallId": call_id,
                    "level": message.level,
                    "data": message.data,
                });
                if let Some(logger) = &message.logger {
                    data["logger"] = json!(logger);
                }
                out.push(json!({"type": "data-tool-log", "data": data, "transient": true}));
            }
            TurnEvent::ToolOutput(output) => {
                if output.is_error {
                    out.push(json!({
                        "type": "tool-output-error",
                        "toolCallId": output.call_id,
                        "errorText": output.content,
                        "dynamic": true
                    }));
                } else {
                    let mut result = json!({
                        "content": output.content,
                        "logId": output.log_id,
                        "durationMs": output.duration_ms,
                    });
                    if let Some(structured) = &output.structured {
                        result["structured"] = structured.clone();
                    }
                    out.push(json!({
                        "type": "tool-output-available",
                        "toolCallId": output.call_id,
                        "output": result,
                        "dynamic": true
                    }));
                }
            }
            TurnEvent::StepFinish { .. } => {
                self.close_text(&mut out);
                out.push(json!({"type": "finish-step"}));
            }
            TurnEvent::Finished {
                reason,
                usage,
                steps,
            } => {
                self.close_text(&mut out);
                out.push(json!({
                    "type": "finish",
                    "messageMetadata": {
                        "conversationId": self.conversation,
                        "finishReason": match reason {
                            FinishReason::Stop => "stop",
                            FinishReason::StepLimit => "step-limit",
                            FinishReason::Cancelled => "cancelled",
                        },
                        "usage": usage,
                        "steps": steps,
                    }
                }));
            }
            TurnEvent::Error { message } => {
                self.close_text(&mut out);
                out.push(json!({"type": "error", "errorText": message}));
            }
        }
        out
    }

    /// The SSE lines for one event.
    pub fn encode(&mut self, event: &TurnEvent) -> Vec<String> {
        self.chunks(event)
            .into_iter()
            .map(|chunk| format!("data: {chunk}\n\n"))
            .collect()
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct InputAnswer {
    answer: Option<Value>,
    action: Option<InputAction>,
    id: Option<uuid::Uuid>,
}

#[derive(Deserialize)]
#[serde(rename_all = "lowercase")]
enum InputAction {
    Accept,
    Decline,
    Cancel,
}

async fn input(
    State(state): State<ChatHttpState>,
    Path(conversation): Path<String>,
    body: Result<Json<InputAnswer>, axum::extract::rejection::JsonRejection>,
) -> Result<StatusCode, HttpError> {
    let Json(body) = body.map_err(|e| HttpError::bad_request(e.body_text()))?;
    let reply = match (body.action, body.answer) {
        (Some(InputAction::Decline), _) => Reply::Decline,
        (Some(InputAction::Cancel), _) => Reply::Cancel,
        (_, Some(Value::String(text))) => Reply::Text(text),
        (_, Some(fields @ Value::Object(_))) => Reply::Form(fields),
        (_, Some(_)) => {
            return Err(HttpError::bad_request(
                "`answer` must be text, or for a form an object of its fields",
            ));
        }
        (_, None) => {
            return Err(HttpError::bad_request(
                "send an `answer`, or `action`: `decline` or `cancel`",
            ));
        }
    };
    state
        .engine
        .inputs()
        .reply(&conversation, body.id, reply)
        .map_err(|e| match e {
            ReplyError::NotWaiting(e) => {
                HttpError::new(StatusCode::NOT_FOUND, "not_found", e.to_string())
            }
            ReplyError::DoesNotFit(_) => HttpError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid_answer",
                e.to_string(),
            ),
        })?;
    Ok(StatusCode::NO_CONTENT)
}

async fn cancel(
    State(state): State<ChatHttpState>,
    Path(conversation): Path<String>,
) -> Result<StatusCode, HttpError> {
    if state.engine.cancel(&conversation) {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(HttpError::new(
            StatusCode::NOT_FOUND,
            "not_found",
            format!("conversation `{conversation}` has no turn running"),
        ))
    }
}

async fn list(State(state): State<ChatHttpState>) -> Result<Json<Value>, HttpError> {
    let conversations = state.engine.with_store(|store| store.list()).await?;
    Ok(Json(json!({"conversations": conversations})))
}

async fn show(
    State(state): State<ChatHttpState>,
    Path(id): Path<String>,
) -> Result<Json<Value>, HttpError> {
    let read = id.clone();
    let (conversation, messages) = state
        .engine
        .with_store(move |store| {
            let Some(conversation) = store.get(&read)? else {
                return Ok((None, Vec::new()));
            };
            Ok((Some(conversation), store.messages(&read)?))
        })
        .await?;
    let conversation = conversation.ok_or(ChatError::NoConversation(id))?;
    Ok(Json(
        json!({"conversation": conversation, "messages": messages}),
    ))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Rename {
    title: String,
}

async fn rename(
    State(state): State<ChatHttpState>,
    Path(id): Path<String>,
    body: Result<Json<Rename>, axum::extract::rejection::JsonRejection>,
) -> Result<StatusCode, HttpError> {
    let Json(body) = body.map_err(|e| HttpError::bad_request(e.body_text()))?;
    let (renamed, title) = (id.clone(), body.title.trim().to_string());
    if state
        .engine
        .with_store(move |store| store.rename(&renamed, &title))
        .await?
    {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ChatError::NoConversation(id).into())
    }
}

async fn delete(
    State(state): State<ChatHttpState>,
    Path(id): Path<String>,
) -> Result<StatusCode, HttpError> {
    let deleted = id.clone();
    if state
        .engine
        .with_store(move |store| store.delete(&deleted))
        .await?
    {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ChatError::NoConversation(id).into())
    }
}

async fn models(State(state): State<ChatHttpState>, _headers: HeaderMap) -> Json<Value> {
    let providers = state.engine.providers();
    let mut out = Vec::new();
    for name in providers.names() {
        let Ok((_, provider)) = providers.resolve(Some(name)) else {
            continue;
        };
        let entry = match provider.models().await {
            Ok(models) => {
                json!({"provider": name, "defaultModel": provider.default_model(), "models": models})
            }
            Err(e) => {
                json!({"provider": name, "defaultModel": provider.default_model(), "error": e.to_string()})
            }
        };
        out.push(entry);
    }
    Json(json!({"providers": out}))
}
