//! The chat over HTTP: `POST /api/chat` streams a turn as Server-Sent Events in the AI SDK's UI
//! message stream protocol, and a few routes manage conversations. The engine (turns,
//! providers, the conversation store) is `toolmux-chat`'s; this crate serves it, as it serves
//! the hub, so that every REST route lives in one crate.
//!
//! # Routes
//! | route | what |
//! |---|---|
//! | `POST /api/chat` | runs a turn; body `{"conversation"?, "text", "provider"?, "model"?, "prompt"?: {"name", "arguments"?}}` (`prompt`: a prompt of `GET /api/prompts`, whose messages are the person's message, before `text` when both are sent), or the AI SDK's `useChat` body (`{"id", "messages": [...]}`: the last user message is the new input, `id` the conversation; the server keeps the history) |
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
//! | `tool-input-available` | `toolCallId`, `toolName`, `input`, `dynamic: true`, `source`, `providerMetadata: {toolmux: {source}}` | the call is complete and about to run; `source` is the tool's source (a built-in pack's id, `script`, or the MCP server's name), absent for an unknown tool |
//! | `data-approval` | `id` (the approval id), `data: {approvalId, toolCallId?, tool, source, arguments, message, answer}` | an `ask` call (`toolCallId`: of the call it is for) waits; answer with `POST {answer}` and `{"decision": "allow" \| "deny", "reason"?, "scope"?: "once" \| "conversation"}` — `conversation` allows the tool's later calls in this conversation without asking |
//! | `data-tool-progress` | `id` (the call's id), `data: {toolCallId, progress, total?, message?}`, `transient: true` | a running tool reported progress (an MCP server's progress notification); each replaces the last, and none is kept in the message |
//! | `data-tool-log` | `data: {toolCallId, level, logger?, data}`, `transient: true` | a running tool's MCP server logged a message (`level` is MCP's: `debug` … `emergency`) |
//! | `data-input-request` | `id`, `data: {requestId, question, answer, form?, asker?}` | the model asked the person, or a running tool's MCP server sent a form (elicitation: `form` is its JSON Schema, `asker` the server); answer with `POST {answer}` and `{"answer": "..." or {fields}, "id": requestId}`, or `{"action": "decline"}` |
//! | `tool-output-available` | `toolCallId`, `output: {content, structured?, media?, logId, durationMs, source?}`, `dynamic: true` | the call returned a result (`media`: its image and audio blocks, as MCP has them) |
//! | `tool-output-error` | `toolCallId`, `errorText`, `dynamic: true`, `source?` | the call failed, was refused (a denied approval) or reported an error; the model sees the same text |
//! | `finish-step` | | the model call and its tool calls are done |
//! | `finish` | `messageMetadata: {conversationId, finishReason, usage: {inputTokens, outputTokens}, steps}` | the turn ended: `finishReason` is `stop`, `step-limit` (the loop stopped at `chat.maxSteps`, after a visible text saying so) or `cancelled` |
//! | `error` | `errorText` | the turn failed (the provider answered 429, the stream dropped); nothing but `[DONE]` follows |
//!
//! Tools are `dynamic` because toolmux's registry is known only at run time, so AI SDK front
//! ends render them as `dynamic-tool` parts. The AI SDK's client drops fields it does not know
//! from the parts it builds but keeps `tool-input-available`'s `providerMetadata` as the part's
//! `callProviderMetadata`, so the tool's source travels there (`toolmux.source`) for front ends
//! that badge a call, and as a plain `source` field for raw readers of the stream.
//!
//! A client that disconnects does not stop the turn: a reloaded page must not lose a turn that
//! waits on an approval. The turn runs to its end and is saved; the page finds what it waits on
//! in `GET /api/approvals` (by `session`, the conversation) and follows the turn through
//! `running` of `GET /api/conversations/{id}`, read again when `GET /api/approvals/stream` says
//! `turn-ended` for it. `POST /api/chat/{conversation}/cancel` stops it.

use std::convert::Infallible;
use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use axum::{Json, Router};
use chrono::{DateTime, Utc};
use futures::StreamExt;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use toolmux_core::HumanAnswer;
use toolmux_http::{ApiError, ApiJson, ApiPath, ErrorBody, OpenApiRouter, routes};
use utoipa::ToSchema;

use toolmux_chat::{
    ChatEngine, ChatError, Conversation, ConversationStore, FinishReason, ReplyError, StoreError,
    StoredMessage, TurnEvent, TurnRequest,
};

/// The header that names the stream protocol.
pub const STREAM_HEADER: &str = "x-vercel-ai-ui-message-stream";

/// What the chat routes need.
#[derive(Clone)]
pub struct ChatHttpState {
    engine: Arc<ChatEngine>,
    /// Where a turn's `prompt` is got from (the prompts of `GET /api/prompts`).
    prompts: Option<Arc<dyn crate::UpstreamServers>>,
}

impl ChatHttpState {
    /// The state for an engine.
    pub fn new(engine: Arc<ChatEngine>) -> Self {
        Self {
            engine,
            prompts: None,
        }
    }

    /// Gets a turn's `prompt` from `prompts`.
    pub fn with_prompts(mut self, prompts: Arc<dyn crate::UpstreamServers>) -> Self {
        self.prompts = Some(prompts);
        self
    }
}

/// The chat's routes (see the module documentation) with their OpenAPI operations, registered
/// together so that none can exist without its entry in the server's one document. They carry
/// no guard of their own: the server puts them behind the one guard of every HTTP route
/// (`toolmux_http::guarded`: Host and Origin checks, API keys).
pub fn routes() -> OpenApiRouter<ChatHttpState> {
    OpenApiRouter::new()
        .routes(routes!(chat))
        .routes(routes!(input))
        .routes(routes!(cancel))
        .routes(routes!(list))
        .routes(routes!(show, rename, delete))
        .routes(routes!(models))
}

/// The chat's routes, ready to merge into the server (made from [`routes`]).
pub fn router(state: ChatHttpState) -> Router {
    let (router, _document) = routes().split_for_parts();
    router.with_state(state)
}

/// The chat routes' OpenAPI operations (made from [`routes`]), for the server's one document.
pub fn openapi() -> utoipa::openapi::OpenApi {
    routes().into_openapi()
}

/// A chat failure as every HTTP route answers one: the one error body, with its status.
fn chat_failure(e: impl Into<ChatError>) -> ApiError {
    let e = e.into();
    let (status, code) = match &e {
        ChatError::NoProvider(_) | ChatError::NoModel(_) => {
            (StatusCode::BAD_REQUEST, "no_provider")
        }
        ChatError::NoConversation(_) | ChatError::NoTurn { .. } => {
            (StatusCode::NOT_FOUND, "not_found")
        }
        ChatError::Busy(_) => (StatusCode::CONFLICT, "busy"),
        ChatError::TooManyTurns(_) => (StatusCode::TOO_MANY_REQUESTS, "too_many_turns"),
        ChatError::Provider(_) => (StatusCode::BAD_GATEWAY, "provider"),
        ChatError::Store(_) => (StatusCode::INTERNAL_SERVER_ERROR, "store"),
    };
    ApiError::new(status, code, e.to_string())
}

/// The body of `POST /api/chat`: toolmux's own short form, or the AI SDK's `useChat` form.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ChatBody {
    /// The conversation to continue; a new one when absent.
    conversation: Option<String>,
    /// The person's new message.
    text: Option<String>,
    /// The configured provider to use; the default one when absent.
    provider: Option<String>,
    /// The model to use; the provider's default model when absent.
    model: Option<String>,
    /// Edit and resend, or regenerate: takes this turn of the conversation again (0 for the
    /// first; a turn starts with the person's message). It and every later message are dropped
    /// and the new message (`text`, or `messages`' last) takes its place.
    #[schema(minimum = 0)]
    replace_turn: Option<usize>,
    /// `useChat`'s chat id.
    id: Option<String>,
    /// `useChat`'s messages; only the last user message is read.
    #[serde(default)]
    #[schema(value_type = Vec<Object>)]
    messages: Vec<Value>,
    /// A prompt (one of `GET /api/prompts`) whose messages are the person's message, followed
    /// by `text` when there is one.
    prompt: Option<ChatPrompt>,
}

/// A prompt a chat turn starts from.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ChatPrompt {
    /// Its name as `GET /api/prompts` lists it (`SERVER__prompt`, `skill__NAME`).
    name: String,
    /// Its arguments.
    #[serde(default)]
    #[schema(value_type = Object)]
    arguments: serde_json::Map<String, Value>,
}

/// The error responses every chat route shares: a foreign Host or Origin, a missing or wrong
/// key (written once, so that the document cannot drift between the routes).
#[derive(utoipa::IntoResponses)]
#[allow(
    dead_code,
    reason = "only its OpenAPI description is used; `ApiError` builds the bodies"
)]
enum GuardFailures {
    /// A key that is not valid, or none where one is needed.
    #[response(status = 401)]
    Unauthorized(ErrorBody),
    /// A foreign Host or Origin.
    #[response(status = 403)]
    Forbidden(ErrorBody),
}

/// The error responses of every route that names a stored conversation, beside
/// [`GuardFailures`].
#[derive(utoipa::IntoResponses)]
#[allow(
    dead_code,
    reason = "only its OpenAPI description is used; `ApiError` builds the bodies"
)]
enum ConversationFailures {
    /// A malformed path (a body too, on a route that takes one).
    #[response(status = 400)]
    BadRequest(ErrorBody),
    /// No conversation by that id.
    #[response(status = 404)]
    NotFound(ErrorBody),
    /// The conversation store failed.
    #[response(status = 500)]
    StoreFailed(ErrorBody),
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

/// The messages of the prompt a turn starts from, as the person's message.
async fn prompt_text(state: &ChatHttpState, prompt: &ChatPrompt) -> Result<String, ApiError> {
    let prompts = state.prompts.as_ref().ok_or_else(|| {
        ApiError::malformed("this server's chat takes no `prompt`: it serves no prompts")
    })?;
    let result = prompts
        .get_prompt(&prompt.name, prompt.arguments.clone())
        .await
        .map_err(crate::error::relay_failure)?;
    Ok(toolmux_chat::prompt_text(&result))
}

/// Runs a turn and streams it as the AI SDK's UI message stream (see the module
/// documentation for its events). Every failure before the turn starts is an error body; once
/// the stream has started, a failure is its `error` event.
#[utoipa::path(
    post, path = "/api/chat", tag = "chat",
    request_body = ChatBody,
    responses(
        (status = 200, description = "The turn, as Server-Sent Events (`data: <json>` lines, \
            ending with `data: [DONE]`)", content_type = "text/event-stream", body = String),
        (status = 400, description = "A malformed body, no text, or no provider or model \
            (none configured, or none named where several are)", body = ErrorBody),
        (status = 404, description = "No conversation by that id, no `prompt` by that name, or \
            no turn `replaceTurn` in the conversation", body = ErrorBody),
        (status = 409, description = "The conversation already has a turn running", body = ErrorBody),
        (status = 500, description = "The conversation store failed", body = ErrorBody),
        (status = 502, description = "The provider refused the request", body = ErrorBody),
        GuardFailures,
    )
)]
async fn chat(
    State(state): State<ChatHttpState>,
    ApiJson(body): ApiJson<ChatBody>,
) -> Result<Response, ApiError> {
    let typed = body
        .text
        .clone()
        .or_else(|| last_user_text(&body.messages))
        .filter(|t| !t.trim().is_empty());
    let prompted = match &body.prompt {
        Some(prompt) => Some(prompt_text(&state, prompt).await?),
        None => None,
    };
    let text = match (prompted, typed) {
        (Some(prompted), Some(typed)) => Some(format!("{prompted}\n\n{typed}")),
        (prompted, typed) => prompted.or(typed),
    };
    let text = text.ok_or_else(|| {
        ApiError::malformed(
            "the request has no text: send {\"text\": \"...\"} or a `messages` list whose \
                 last user message has text",
        )
    })?;
    let request = TurnRequest {
        conversation: body.conversation.or(body.id),
        text,
        provider: body.provider,
        model: body.model,
        replace_turn: body.replace_turn,
    };
    // The turn's token is not tied to the response: a client that goes away leaves the turn
    // running (see the module documentation); the cancel route reaches it through the engine.
    let (conversation, events, _cancel) = state
        .engine
        .start_turn(request)
        .await
        .map_err(chat_failure)?;
    let stream = ui_message_stream(conversation, events);
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
/// away) drops the receiver only: the turn's later events go nowhere, and the turn goes on.
fn ui_message_stream(
    conversation: String,
    events: tokio::sync::mpsc::Receiver<TurnEvent>,
) -> impl futures::Stream<Item = Result<Bytes, Infallible>> + Send + 'static {
    let mut encoder = UiEncoder::new(conversation);
    let body = tokio_stream_from(events)
        .flat_map(move |event| futures::stream::iter(encoder.encode(&event)));
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
    /// Each call's source, from its `ToolInput`, so its output can name it too.
    sources: std::collections::HashMap<String, String>,
}

impl UiEncoder {
    /// An encoder for one turn.
    pub fn new(conversation: String) -> Self {
        Self {
            conversation,
            open_text: None,
            texts: 0,
            sources: std::collections::HashMap::new(),
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
            TurnEvent::ToolInput { call, source } => {
                self.close_text(&mut out);
                let mut chunk = json!({
                    "type": "tool-input-available",
                    "toolCallId": call.id,
                    "toolName": call.name,
                    "input": call.arguments,
                    "dynamic": true
                });
                if let Some(source) = source {
                    chunk["source"] = json!(source);
                    chunk["providerMetadata"] = json!({"toolmux": {"source": source}});
                    self.sources.insert(call.id.clone(), source.clone());
                }
                out.push(chunk);
            }
            TurnEvent::ApprovalRequested(pending) => {
                self.close_text(&mut out);
                let mut data = json!({
                    "approvalId": pending.id.to_string(),
                    "tool": pending.request.tool,
                    "source": pending.request.source,
                    "arguments": pending.request.arguments,
                    "message": pending.request.message,
                    "answer": format!("/api/approvals/{}", pending.id),
                });
                if let Some(call) = &pending.request.tool_call_id {
                    data["toolCallId"] = json!(call);
                }
                out.push(json!({
                    "type": "data-approval",
                    "id": pending.id.to_string(),
                    "data": data,
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
                let source = self.sources.remove(&output.call_id);
                if output.is_error {
                    let mut chunk = json!({
                        "type": "tool-output-error",
                        "toolCallId": output.call_id,
                        "errorText": output.content,
                        "dynamic": true
                    });
                    if let Some(source) = source {
                        chunk["source"] = json!(source);
                    }
                    out.push(chunk);
                } else {
                    let mut result = json!({
                        "content": output.content,
                        "logId": output.log_id,
                        "durationMs": output.duration_ms,
                    });
                    if let Some(structured) = &output.structured {
                        result["structured"] = structured.clone();
                    }
                    if !output.media.is_empty() {
                        result["media"] = json!(output.media);
                    }
                    if let Some(source) = source {
                        result["source"] = json!(source);
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

/// The answer to a question: `answer`, or `action`.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct InputAnswer {
    /// Text, or for a form an object of its fields.
    answer: Option<Value>,
    /// `decline` or `cancel` instead of an answer.
    action: Option<InputAction>,
    /// The question's `requestId`; the oldest waiting one when absent.
    id: Option<uuid::Uuid>,
}

/// What to do with a question instead of answering it.
#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum InputAction {
    Accept,
    Decline,
    Cancel,
}

/// Answers a question of a running turn: the model's `request_human_input`, or a server's form.
#[utoipa::path(
    post, path = "/api/chat/{conversation}/input", tag = "chat",
    params(("conversation" = String, Path, description = "The conversation's id")),
    request_body = InputAnswer,
    responses(
        (status = 204, description = "Answered; the turn goes on"),
        (status = 400, description = "A malformed body, or neither an answer nor an action", body = ErrorBody),
        (status = 404, description = "No question is waiting there", body = ErrorBody),
        (status = 422, description = "The answer does not fit the form's schema; the question \
            keeps waiting for an answer that does", body = ErrorBody),
        GuardFailures,
    )
)]
async fn input(
    State(state): State<ChatHttpState>,
    ApiPath(conversation): ApiPath<String>,
    ApiJson(body): ApiJson<InputAnswer>,
) -> Result<StatusCode, ApiError> {
    let engine = &state.engine;
    let answered = match (body.action, body.answer) {
        (Some(InputAction::Decline), _) => {
            engine.answer_input(&conversation, body.id, HumanAnswer::Decline)
        }
        (Some(InputAction::Cancel), _) => {
            engine.answer_input(&conversation, body.id, HumanAnswer::Cancel)
        }
        (_, Some(Value::String(text))) => engine.answer_input_text(&conversation, body.id, &text),
        (_, Some(fields @ Value::Object(_))) => {
            engine.answer_input(&conversation, body.id, HumanAnswer::Accept(fields))
        }
        (_, Some(_)) => {
            return Err(ApiError::malformed(
                "`answer` must be text, or for a form an object of its fields",
            ));
        }
        (_, None) => {
            return Err(ApiError::malformed(
                "send an `answer`, or `action`: `decline` or `cancel`",
            ));
        }
    };
    answered.map_err(|e| match e {
        ReplyError::NotWaiting(e) => ApiError::not_found(e.to_string()),
        ReplyError::DoesNotFit(_) => ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_answer",
            e.to_string(),
        ),
    })?;
    Ok(StatusCode::NO_CONTENT)
}

/// Cancels a conversation's running turn.
#[utoipa::path(
    post, path = "/api/chat/{conversation}/cancel", tag = "chat",
    params(("conversation" = String, Path, description = "The conversation's id")),
    responses(
        (status = 204, description = "Cancelled; the stream ends with `finish` (`cancelled`)"),
        (status = 400, description = "A malformed path", body = ErrorBody),
        (status = 404, description = "No turn is running there", body = ErrorBody),
        GuardFailures,
    )
)]
async fn cancel(
    State(state): State<ChatHttpState>,
    ApiPath(conversation): ApiPath<String>,
) -> Result<StatusCode, ApiError> {
    if state.engine.cancel(&conversation) {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::not_found(format!(
            "conversation `{conversation}` has no turn running"
        )))
    }
}

/// A conversation's header, as the routes show it.
#[derive(Serialize, ToSchema)]
pub(crate) struct ConversationView {
    /// Its id.
    id: String,
    /// A title for lists (the first question, until renamed).
    title: String,
    /// The provider last used.
    provider: String,
    /// The model last used.
    model: String,
    /// When it started.
    created: DateTime<Utc>,
    /// When it last changed.
    updated: DateTime<Utc>,
}

impl From<Conversation> for ConversationView {
    fn from(c: Conversation) -> Self {
        Self {
            id: c.id,
            title: c.title,
            provider: c.provider,
            model: c.model,
            created: c.created,
            updated: c.updated,
        }
    }
}

/// Conversations, most recent first.
#[derive(Serialize, ToSchema)]
pub(crate) struct ConversationList {
    conversations: Vec<ConversationView>,
}

/// One conversation with its messages.
#[derive(Serialize, ToSchema)]
pub(crate) struct ConversationDetail {
    conversation: ConversationView,
    /// Whether a turn runs in it now (its client may have gone away: a turn outlives it).
    running: bool,
    /// The messages in order, each with its `seq` and `created` and the message's own fields
    /// (`role`, `content`, ...; a tool call also its `source`, a tool result its `durationMs`
    /// and `structured`, as the live stream showed them).
    #[schema(value_type = Vec<Object>)]
    messages: Vec<StoredMessage>,
}

/// Lists the conversations, most recent first.
#[utoipa::path(
    get, path = "/api/conversations", tag = "chat",
    responses(
        (status = 200, description = "Conversations, most recent first", body = ConversationList),
        (status = 500, description = "The conversation store failed", body = ErrorBody),
        GuardFailures,
    )
)]
async fn list(State(state): State<ChatHttpState>) -> Result<Json<ConversationList>, ApiError> {
    let conversations = state
        .engine
        .with_store(|store| store.list())
        .await
        .map_err(chat_failure)?;
    Ok(Json(ConversationList {
        conversations: conversations.into_iter().map(Into::into).collect(),
    }))
}

/// One conversation with its messages.
#[utoipa::path(
    get, path = "/api/conversations/{id}", tag = "chat",
    params(("id" = String, Path, description = "The conversation's id")),
    responses(
        (status = 200, description = "The conversation and its messages", body = ConversationDetail),
        ConversationFailures,
        GuardFailures,
    )
)]
async fn show(
    State(state): State<ChatHttpState>,
    ApiPath(id): ApiPath<String>,
) -> Result<Json<ConversationDetail>, ApiError> {
    // Whether a turn runs is taken before the messages are read: a turn saves its answer and
    // then stops running, so a `false` read first means the messages read after it are whole
    // (read the other way round, a page following the turn could see it stopped without its
    // answer, and stop following).
    let running = state.engine.is_running(&id);
    let read = id.clone();
    let (conversation, messages) = state
        .engine
        .with_store(move |store| {
            let Some(conversation) = store.get(&read)? else {
                return Ok((None, Vec::new()));
            };
            Ok((Some(conversation), store.messages(&read)?))
        })
        .await
        .map_err(chat_failure)?;
    let conversation = conversation.ok_or_else(|| chat_failure(ChatError::NoConversation(id)))?;
    Ok(Json(ConversationDetail {
        conversation: conversation.into(),
        running,
        messages,
    }))
}

/// A conversation's new title.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Rename {
    /// The title.
    title: String,
}

/// Renames a conversation.
#[utoipa::path(
    patch, path = "/api/conversations/{id}", tag = "chat",
    params(("id" = String, Path, description = "The conversation's id")),
    request_body = Rename,
    responses(
        (status = 204, description = "Renamed"),
        ConversationFailures,
        GuardFailures,
    )
)]
async fn rename(
    State(state): State<ChatHttpState>,
    ApiPath(id): ApiPath<String>,
    ApiJson(body): ApiJson<Rename>,
) -> Result<StatusCode, ApiError> {
    let title = body.title.trim().to_string();
    change(&state, id, move |store, id| store.rename(id, &title)).await
}

/// Deletes a conversation with its messages.
#[utoipa::path(
    delete, path = "/api/conversations/{id}", tag = "chat",
    params(("id" = String, Path, description = "The conversation's id")),
    responses(
        (status = 204, description = "Deleted"),
        ConversationFailures,
        GuardFailures,
    )
)]
async fn delete(
    State(state): State<ChatHttpState>,
    ApiPath(id): ApiPath<String>,
) -> Result<StatusCode, ApiError> {
    change(&state, id, |store, id| store.delete(id)).await
}

/// Makes `edit` to the conversation `id` in the store: 204 when it was there, 404 when not.
async fn change(
    state: &ChatHttpState,
    id: String,
    edit: impl FnOnce(&dyn ConversationStore, &str) -> Result<bool, StoreError> + Send + 'static,
) -> Result<StatusCode, ApiError> {
    let edited = id.clone();
    if state
        .engine
        .with_store(move |store| edit(store, &edited))
        .await
        .map_err(chat_failure)?
    {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(chat_failure(ChatError::NoConversation(id)))
    }
}

/// A provider's models, or why they could not be listed.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ProviderModels {
    /// The provider's configured name.
    provider: String,
    /// Its default model, if it has one.
    default_model: Option<String>,
    /// The models, as the provider lists them.
    #[serde(skip_serializing_if = "Option::is_none")]
    models: Option<Vec<String>>,
    /// Why the models could not be listed.
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

/// Each configured provider's models.
#[derive(Serialize, ToSchema)]
pub(crate) struct ModelList {
    providers: Vec<ProviderModels>,
}

/// Lists each configured provider's models, as the provider lists them; a provider that cannot
/// be asked is listed with its error rather than failing the request.
#[utoipa::path(
    get, path = "/api/models", tag = "chat",
    responses(
        (status = 200, description = "Each provider's models", body = ModelList),
        GuardFailures,
    )
)]
async fn models(State(state): State<ChatHttpState>) -> Json<ModelList> {
    let providers = state.engine.providers();
    let mut out = Vec::new();
    for name in providers.names() {
        let Ok((_, provider)) = providers.resolve(Some(name)) else {
            continue;
        };
        let (models, error) = match provider.models().await {
            Ok(models) => (Some(models), None),
            Err(e) => (None, Some(e.to_string())),
        };
        out.push(ProviderModels {
            provider: name.to_string(),
            default_model: provider.default_model().map(str::to_string),
            models,
            error,
        });
    }
    Json(ModelList { providers: out })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every chat route is registered with its operation (issue 11: the chat routes were missing
    /// from the OpenAPI document and nothing failed), so the document lists each one, with its
    /// method, and nothing else.
    #[test]
    fn the_document_has_one_operation_per_chat_route() {
        let document = openapi();
        let operations = toolmux_http::operations(&document);
        let doc = serde_json::to_value(document).expect("serializable");
        let expected = [
            "delete /api/conversations/{id}",
            "get /api/conversations",
            "get /api/conversations/{id}",
            "get /api/models",
            "patch /api/conversations/{id}",
            "post /api/chat",
            "post /api/chat/{conversation}/cancel",
            "post /api/chat/{conversation}/input",
        ];
        assert_eq!(operations, expected);
        let streamed = &doc["paths"]["/api/chat"]["post"]["responses"]["200"]["content"];
        assert!(streamed["text/event-stream"].is_object(), "{streamed}");
    }
}
