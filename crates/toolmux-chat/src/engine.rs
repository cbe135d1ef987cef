//! The loop: one turn streams the model's answer, runs the tool calls it makes through the
//! pipeline on the `chat` channel, feeds the results back, and repeats until the model answers
//! without calls, the step limit is reached, or the turn is cancelled.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::StreamExt;
use futures::future::join_all;
use serde::Serialize;
use serde_json::Value;
use tokio::sync::{broadcast, mpsc};
use tokio_util::sync::CancellationToken;
use toolmux_config::ProviderKind;
use toolmux_core::{
    ApprovalQueue, CallContext, Catalog, Channel, ContentBody, Hub, LogMessage, PendingApproval,
    Progress, ToolResult,
};

use crate::backchannel::{CallBackchannel, SamplingSettings, TurnUsage};
use crate::error::{ChatError, ProviderError, StoreError};
use crate::human_input::{HumanInputs, InputRequest};
use crate::prompt::system_prompt;
use crate::provider::{
    ChatProvider, Message, ModelRequest, ProviderEvent, ToolCall, ToolSpec, Usage,
};
use crate::providers::Providers;
use crate::schema::clean_schema;
use crate::store::ConversationStore;

/// Limits of the loop.
#[derive(Clone, Debug)]
pub struct EngineSettings {
    /// The most model calls in one turn.
    pub max_steps: u32,
    /// Tool results longer than this are cut before the model sees them.
    pub max_tool_result_bytes: usize,
    /// The project's name, for the system prompt.
    pub project_name: String,
    /// What a server's request to use the turn's model gets.
    pub sampling: SamplingSettings,
}

impl EngineSettings {
    /// Settings from the `chat` configuration section, with each MCP server's `sampling`.
    pub fn from_config(config: &toolmux_config::Config, project_name: &str) -> Self {
        let chat = &config.chat;
        Self {
            max_steps: chat.max_steps.get(),
            max_tool_result_bytes: chat.max_tool_result_bytes.get(),
            project_name: project_name.to_string(),
            sampling: SamplingSettings::from_config(config),
        }
    }
}

/// What a turn asks for.
#[derive(Clone, Debug, Default)]
pub struct TurnRequest {
    /// The conversation to continue; a new one is started when it is `None` or unknown.
    pub conversation: Option<String>,
    /// What the person wrote.
    pub text: String,
    /// The provider's name; default: the conversation's, else the configured default.
    pub provider: Option<String>,
    /// The model; default: the conversation's, else the provider's default model.
    pub model: Option<String>,
}

/// Why a turn ended without an error.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FinishReason {
    /// The model answered without calling a tool.
    Stop,
    /// The step limit was reached.
    StepLimit,
    /// The turn was cancelled.
    Cancelled,
}

/// The outcome of one tool call, as channels show it.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolOutput {
    /// The call it answers.
    pub call_id: String,
    /// The tool.
    pub name: String,
    /// What the model is given (possibly cut).
    pub content: String,
    /// Structured content, when the tool returned some.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub structured: Option<Value>,
    /// Whether the call failed or was refused.
    pub is_error: bool,
    /// A `CallError` code (`denied`, `timeout`...) when the pipeline refused or broke the call.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_code: Option<String>,
    /// Its execution-log id.
    pub log_id: String,
    /// How long the pipeline took, in milliseconds.
    pub duration_ms: u64,
}

/// What a turn reports while it runs, channel-neutral; the HTTP stream and the terminal render
/// it. Every turn ends with exactly one `Finished` or `Error`.
#[derive(Clone, Debug)]
pub enum TurnEvent {
    /// The turn started.
    Started {
        /// The conversation id.
        conversation: String,
        /// The provider used.
        provider: String,
        /// The model used.
        model: String,
    },
    /// A model call starts.
    StepStart {
        /// Its number in the turn, from 1.
        step: u32,
    },
    /// More answer text.
    TextDelta(String),
    /// The model started writing a tool call.
    ToolInputStart {
        /// The call's id.
        call_id: String,
        /// The tool.
        name: String,
    },
    /// A complete tool call, about to run.
    ToolInput {
        /// The call.
        call: ToolCall,
        /// The tool's source, when the tool exists.
        source: Option<String>,
    },
    /// A running tool reported how far it has got.
    ToolProgress {
        /// The call.
        call_id: String,
        /// How far, as the source reported it.
        progress: Progress,
    },
    /// A running tool's source logged a message (an upstream MCP server's log notification).
    ToolLog {
        /// The call.
        call_id: String,
        /// The message.
        message: LogMessage,
    },
    /// A call waits for the person's approval (answer through the [`ApprovalQueue`]): an `ask`
    /// call, or a server's request to use the turn's model (sampling).
    ApprovalRequested(PendingApproval),
    /// The model asked the person a question, or a running tool's server sent a form (answer
    /// through [`HumanInputs`]).
    InputRequested(InputRequest),
    /// A tool call finished.
    ToolOutput(ToolOutput),
    /// A model call and its tool calls are done.
    StepFinish {
        /// Its number.
        step: u32,
    },
    /// The turn ended.
    Finished {
        /// Why.
        reason: FinishReason,
        /// Tokens of every model call of the turn.
        usage: Usage,
        /// Model calls made.
        steps: u32,
    },
    /// The turn failed (the provider refused or broke off); nothing follows.
    Error {
        /// What happened, for a person.
        message: String,
    },
}

/// The chat engine: providers, the hub, the conversation store, and the queues through which a
/// person answers approvals and questions. One per process, shared by every channel.
pub struct ChatEngine {
    hub: Hub,
    providers: Providers,
    store: Arc<dyn ConversationStore>,
    approvals: Arc<ApprovalQueue>,
    inputs: Arc<HumanInputs>,
    settings: EngineSettings,
    /// `settings.sampling` as currently in force: a running server's configuration can change
    /// it ([`ChatEngine::set_sampling`]) without a restart.
    sampling: Mutex<SamplingSettings>,
    running: Mutex<HashMap<String, CancellationToken>>,
    surface: Mutex<Option<Arc<Surface>>>,
}

/// What the model is shown of one catalog version: the system prompt and the cleaned tool
/// list. Built once per catalog version and provider kind, not once per step.
struct Surface {
    version: u64,
    kind: ProviderKind,
    system: String,
    tools: Arc<[ToolSpec]>,
}

impl std::fmt::Debug for ChatEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatEngine")
            .field("providers", &self.providers)
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

/// Aborts a task when dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Resolved choices of a turn.
struct Turn {
    conversation: String,
    kind: ProviderKind,
    provider: Arc<dyn ChatProvider>,
    model: String,
    text: String,
    cancel: CancellationToken,
    events: mpsc::Sender<TurnEvent>,
    /// Tokens the turn's model spent answering servers' sampling requests, which run inside
    /// tool calls, away from the loop's own count.
    sampled: Arc<TurnUsage>,
}

impl Turn {
    async fn emit(&self, event: TurnEvent) {
        // A channel that stopped listening cancels the turn through its token; until then an
        // event nobody reads is not an error.
        let _ = self.events.send(event).await;
    }
}

impl ChatEngine {
    /// An engine. `approvals` must be the queue the hub's `ask` calls park in for the chat
    /// channel (the loop passes it as the approver), and `inputs` the one the `chat` source
    /// asks through.
    pub fn new(
        hub: Hub,
        providers: Providers,
        store: Arc<dyn ConversationStore>,
        approvals: Arc<ApprovalQueue>,
        inputs: Arc<HumanInputs>,
        settings: EngineSettings,
    ) -> Self {
        Self {
            hub,
            providers,
            store,
            approvals,
            inputs,
            sampling: Mutex::new(settings.sampling.clone()),
            settings,
            running: Mutex::new(HashMap::new()),
            surface: Mutex::new(None),
        }
    }

    /// The prompt and tools for a catalog snapshot, from the cache when it is current.
    fn surface(&self, catalog: &Catalog, kind: ProviderKind) -> Arc<Surface> {
        let mut cached = self.surface.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(surface) = cached.as_ref()
            && surface.version == catalog.version()
            && surface.kind == kind
        {
            return Arc::clone(surface);
        }
        let surface = Arc::new(Surface {
            version: catalog.version(),
            kind,
            system: system_prompt(catalog, &self.settings.project_name),
            tools: tool_specs(catalog, kind).into(),
        });
        *cached = Some(Arc::clone(&surface));
        surface
    }

    /// Puts changed sampling settings into effect (a configuration reload): sampling requests
    /// of tool calls that start from now on follow them.
    pub fn set_sampling(&self, sampling: SamplingSettings) {
        *self.sampling.lock().unwrap_or_else(PoisonError::into_inner) = sampling;
    }

    /// The conversation store.
    pub fn store(&self) -> &Arc<dyn ConversationStore> {
        &self.store
    }

    /// The providers.
    pub fn providers(&self) -> &Providers {
        &self.providers
    }

    /// The approval queue.
    pub fn approvals(&self) -> &Arc<ApprovalQueue> {
        &self.approvals
    }

    /// The questions waiting for the person.
    pub fn inputs(&self) -> &Arc<HumanInputs> {
        &self.inputs
    }

    fn running(&self) -> std::sync::MutexGuard<'_, HashMap<String, CancellationToken>> {
        self.running.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Cancels the turn running in a conversation; false when none runs.
    pub fn cancel(&self, conversation: &str) -> bool {
        match self.running().get(conversation) {
            Some(token) => {
                token.cancel();
                true
            }
            None => false,
        }
    }

    /// Starts a turn and returns the conversation id and its events. Choosing the provider and
    /// model and opening the conversation happen before this returns, so those errors reach the
    /// caller directly; everything after arrives as events.
    pub async fn start_turn(
        self: &Arc<Self>,
        request: TurnRequest,
    ) -> Result<(String, mpsc::Receiver<TurnEvent>, CancellationToken), ChatError> {
        let existing = match request.conversation.clone() {
            Some(id) => self.with_store(move |store| store.get(&id)).await?,
            None => None,
        };
        let provider_name = request
            .provider
            .clone()
            .or_else(|| existing.as_ref().map(|c| c.provider.clone()));
        let (kind, provider) = self.providers.resolve(provider_name.as_deref())?;
        let model = request
            .model
            .clone()
            .or_else(|| {
                existing
                    .as_ref()
                    .filter(|c| c.provider == provider.name())
                    .map(|c| c.model.clone())
            })
            .or_else(|| provider.default_model().map(str::to_string))
            .ok_or_else(|| ChatError::NoModel(provider.name().to_string()))?;
        let conversation = match existing {
            Some(c) => c.id,
            None => {
                let id = request.conversation.clone();
                let title: String = request.text.chars().take(80).collect();
                let provider = provider.name().to_string();
                let model = model.clone();
                self.with_store(move |store| {
                    store.create(id.as_deref(), title.trim(), &provider, &model)
                })
                .await?
                .id
            }
        };
        let cancel = CancellationToken::new();
        {
            let mut running = self.running();
            if running.contains_key(&conversation) {
                return Err(ChatError::Busy(conversation));
            }
            running.insert(conversation.clone(), cancel.clone());
        }
        let (tx, rx) = mpsc::channel(256);
        // Subscribe before the turn starts, so no request made during it is missed.
        let approvals = self.approvals.subscribe();
        let inputs = self.inputs.subscribe();
        let turn = Turn {
            conversation: conversation.clone(),
            kind,
            provider,
            model,
            text: request.text,
            cancel: cancel.clone(),
            events: tx,
            sampled: Arc::default(),
        };
        let engine = Arc::clone(self);
        tokio::spawn(async move {
            let _forward = forward_requests(
                turn.conversation.clone(),
                turn.events.clone(),
                (Arc::clone(&engine.approvals), approvals),
                (Arc::clone(&engine.inputs), inputs),
            );
            engine.run(&turn).await;
            engine.running().remove(&turn.conversation);
        });
        Ok((conversation, rx, cancel))
    }

    async fn run(&self, turn: &Turn) {
        let ended = self.run_steps(turn).await;
        let event = match ended {
            Ok((reason, mut usage, steps)) => {
                // Every tool call, and so every sampling request, has ended by now.
                let sampled = turn.sampled.get();
                usage.input_tokens += sampled.input_tokens;
                usage.output_tokens += sampled.output_tokens;
                TurnEvent::Finished {
                    reason,
                    usage,
                    steps,
                }
            }
            Err(message) => TurnEvent::Error { message },
        };
        turn.emit(event).await;
    }

    /// Runs one store operation on tokio's blocking pool. The store is synchronous (SQLite
    /// waits on the disk and on its connection's lock), and an async worker thread it held
    /// would stall every other turn and request scheduled on it.
    pub async fn with_store<T: Send + 'static>(
        &self,
        operation: impl FnOnce(&dyn ConversationStore) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let store = Arc::clone(&self.store);
        match tokio::task::spawn_blocking(move || operation(store.as_ref())).await {
            Ok(done) => done,
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            Err(_) => Err(StoreError::ShutDown),
        }
    }

    async fn persist(&self, turn: &Turn, messages: Vec<Message>) -> Result<(), String> {
        let conversation = turn.conversation.clone();
        let provider = turn.provider.name().to_string();
        let model = turn.model.clone();
        self.with_store(move |store| store.append(&conversation, &provider, &model, &messages))
            .await
            .map_err(|e| format!("cannot save the conversation: {e}"))
    }

    async fn run_steps(&self, turn: &Turn) -> Result<(FinishReason, Usage, u32), String> {
        let conversation = turn.conversation.clone();
        let mut history: Vec<Message> = self
            .with_store(move |store| store.messages(&conversation))
            .await
            .map_err(|e| format!("cannot read the conversation: {e}"))?
            .into_iter()
            .map(|m| m.message)
            .collect();
        let user = Message::User {
            text: turn.text.clone(),
        };
        self.persist(turn, vec![user.clone()]).await?;
        history.push(user);
        turn.emit(TurnEvent::Started {
            conversation: turn.conversation.clone(),
            provider: turn.provider.name().to_string(),
            model: turn.model.clone(),
        })
        .await;
        let context = CallContext::new(Channel::Chat)
            .with_session(turn.conversation.clone())
            .with_approver(self.approvals.clone());
        let mut usage = Usage::default();
        for step in 1..=self.settings.max_steps {
            turn.emit(TurnEvent::StepStart { step }).await;
            let catalog = self.hub.catalog();
            let surface = self.surface(&catalog, turn.kind);
            let request = ModelRequest {
                model: turn.model.clone(),
                system: surface.system.clone(),
                messages: history.clone(),
                tools: Arc::clone(&surface.tools),
                max_tokens: None,
            };
            let answer = self.model_call(turn, request, &mut usage).await;
            let (text, calls, cancelled) = match answer {
                Ok(answer) => answer,
                Err(e) => return Err(e.to_string()),
            };
            let assistant = Message::Assistant {
                text,
                tool_calls: calls.clone(),
            };
            let keep = !matches!(&assistant, Message::Assistant { text, tool_calls } if text.is_empty() && tool_calls.is_empty());
            if keep {
                self.persist(turn, vec![assistant.clone()]).await?;
                history.push(assistant);
            }
            if cancelled {
                return Ok((FinishReason::Cancelled, usage, step));
            }
            if calls.is_empty() {
                turn.emit(TurnEvent::StepFinish { step }).await;
                return Ok((FinishReason::Stop, usage, step));
            }
            for call in &calls {
                turn.emit(TurnEvent::ToolInput {
                    call: call.clone(),
                    source: catalog.get(&call.name).map(|e| e.descriptor.source.clone()),
                })
                .await;
            }
            let results = tokio::select! {
                results = self.run_calls(turn, &catalog, &calls, &context) => Some(results),
                () = turn.cancel.cancelled() => None,
            };
            let cancelled = results.is_none();
            // Every call gets a result message, even a cancelled one: providers reject a
            // conversation in which a tool call has no answer.
            let messages: Vec<Message> = match results {
                Some(outputs) => outputs
                    .into_iter()
                    .map(|o| Message::Tool {
                        call_id: o.call_id,
                        name: o.name,
                        content: o.content,
                        is_error: o.is_error,
                        log_id: Some(o.log_id),
                    })
                    .collect(),
                None => calls
                    .iter()
                    .map(|c| Message::Tool {
                        call_id: c.id.clone(),
                        name: c.name.clone(),
                        content: "the call was cancelled by the person".into(),
                        is_error: true,
                        log_id: None,
                    })
                    .collect(),
            };
            self.persist(turn, messages.clone()).await?;
            history.extend(messages);
            if cancelled {
                return Ok((FinishReason::Cancelled, usage, step));
            }
            turn.emit(TurnEvent::StepFinish { step }).await;
        }
        let notice = format!(
            "I stopped after {} steps, the limit for one request (`chat.maxSteps`). Ask me to \
             continue if you want me to go on.",
            self.settings.max_steps
        );
        turn.emit(TurnEvent::StepStart {
            step: self.settings.max_steps + 1,
        })
        .await;
        turn.emit(TurnEvent::TextDelta(notice.clone())).await;
        turn.emit(TurnEvent::StepFinish {
            step: self.settings.max_steps + 1,
        })
        .await;
        self.persist(
            turn,
            vec![Message::Assistant {
                text: notice,
                tool_calls: Vec::new(),
            }],
        )
        .await?;
        Ok((FinishReason::StepLimit, usage, self.settings.max_steps))
    }

    /// One streamed model call: the text, the complete tool calls, and whether the turn was
    /// cancelled meanwhile.
    async fn model_call(
        &self,
        turn: &Turn,
        request: ModelRequest,
        usage: &mut Usage,
    ) -> Result<(String, Vec<ToolCall>, bool), ProviderError> {
        let mut text = String::new();
        let mut calls = Vec::new();
        let mut stream = tokio::select! {
            stream = turn.provider.stream(request) => stream?,
            () = turn.cancel.cancelled() => return Ok((text, calls, true)),
        };
        let mut announced: HashSet<String> = HashSet::new();
        loop {
            let next = tokio::select! {
                next = stream.next() => next,
                () = turn.cancel.cancelled() => return Ok((text, Vec::new(), true)),
            };
            match next {
                None => break,
                Some(Err(e)) => return Err(e),
                Some(Ok(event)) => match event {
                    ProviderEvent::TextDelta(delta) => {
                        text.push_str(&delta);
                        turn.emit(TurnEvent::TextDelta(delta)).await;
                    }
                    ProviderEvent::ToolCallDelta { id, name, .. } => {
                        if !name.is_empty() && announced.insert(id.clone()) {
                            turn.emit(TurnEvent::ToolInputStart { call_id: id, name })
                                .await;
                        }
                    }
                    ProviderEvent::ToolCall(call) => {
                        if announced.insert(call.id.clone()) {
                            turn.emit(TurnEvent::ToolInputStart {
                                call_id: call.id.clone(),
                                name: call.name.clone(),
                            })
                            .await;
                        }
                        calls.push(call);
                    }
                    ProviderEvent::Usage(u) => {
                        usage.input_tokens += u.input_tokens;
                        usage.output_tokens += u.output_tokens;
                    }
                    ProviderEvent::Finish { .. } => break,
                },
            }
        }
        Ok((text, calls, false))
    }

    /// Runs one step's calls with `Hub::call_batch`'s grouping: consecutive `parallel` tools
    /// run together, every other call alone and in order. Outputs are reported as each call
    /// finishes and returned in the order of the calls.
    ///
    /// Not `Hub::call_batch` itself: each call here needs a context of its own (its
    /// backchannel), `call_reported`'s log id and duration, and its output shown the moment it
    /// finishes, where `call_batch` shares one context and answers when the whole batch is done.
    async fn run_calls(
        &self,
        turn: &Turn,
        catalog: &Catalog,
        calls: &[ToolCall],
        context: &CallContext,
    ) -> Vec<ToolOutput> {
        let is_parallel = |name: &str| {
            catalog
                .get(name)
                .is_some_and(|e| e.descriptor.parallel && !e.descriptor.internal)
        };
        let mut outputs = Vec::with_capacity(calls.len());
        // A group is a run of parallel calls, or one call that is not parallel.
        for group in calls.chunk_by(|a, b| is_parallel(&a.name) && is_parallel(&b.name)) {
            let running = group
                .iter()
                .map(|call| self.run_call(turn, catalog, call, context));
            outputs.extend(join_all(running).await);
        }
        outputs
    }

    async fn run_call(
        &self,
        turn: &Turn,
        catalog: &Catalog,
        call: &ToolCall,
        context: &CallContext,
    ) -> ToolOutput {
        // What the tool's source sends back while it runs reaches the person through this
        // call's own backchannel; its questions end with the call (the guard), or with the turn.
        let ended = turn.cancel.child_token();
        let _ended = ended.clone().drop_guard();
        let source = catalog
            .get(&call.name)
            .map(|e| e.descriptor.source.clone())
            .unwrap_or_default();
        let backchannel = CallBackchannel {
            call_id: call.id.clone(),
            tool: call.name.clone(),
            conversation: turn.conversation.clone(),
            events: turn.events.clone(),
            turn: turn.cancel.clone(),
            ended,
            approvals: Arc::clone(&self.approvals),
            approval_timeout: self.hub.settings().approval_timeout,
            inputs: Arc::clone(&self.inputs),
            provider: Arc::clone(&turn.provider),
            model: turn.model.clone(),
            sampling: self
                .sampling
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .for_server(&source),
            sampled: Arc::clone(&turn.sampled),
            source,
        };
        let context = context.clone().with_backchannel(Arc::new(backchannel));
        let report = self
            .hub
            .call_reported(&call.name, call.arguments.clone(), &context)
            .await;
        let log_id = report.id.to_string();
        let (content, structured, is_error, error_code) = match report.result {
            Ok(result) => {
                let is_error = result.is_error;
                (
                    model_text(&result),
                    result.structured_content,
                    is_error,
                    None,
                )
            }
            Err(e) => (e.to_string(), None, true, Some(e.code().to_string())),
        };
        let output = ToolOutput {
            call_id: call.id.clone(),
            name: call.name.clone(),
            content: cut(content, self.settings.max_tool_result_bytes, &log_id),
            structured,
            is_error,
            error_code,
            log_id,
            duration_ms: duration_ms(report.duration),
        };
        turn.emit(TurnEvent::ToolOutput(output.clone())).await;
        output
    }
}

fn duration_ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// Forwards the approvals and questions of `conversation` into its turn's `events` for as long
/// as the returned guard lives: each queue with the receiver of its announcements.
///
/// A broadcast receiver that falls behind loses the oldest announcements (`Lagged`). The
/// queues still hold every request that waits, so a lagged receiver re-reads them from there
/// rather than skip a prompt the turn is blocked on; `shown` keeps a request that is both
/// re-read and announced from being shown twice.
fn forward_requests(
    conversation: String,
    events: mpsc::Sender<TurnEvent>,
    (approval_queue, mut approvals): (Arc<ApprovalQueue>, broadcast::Receiver<PendingApproval>),
    (input_queue, mut inputs): (Arc<HumanInputs>, broadcast::Receiver<InputRequest>),
) -> AbortOnDrop {
    AbortOnDrop(tokio::spawn(async move {
        let mut shown: HashSet<uuid::Uuid> = HashSet::new();
        loop {
            let batch: Vec<TurnEvent> = tokio::select! {
                got = approvals.recv() => {
                    let waiting = || approval_queue.pending(Some(&conversation));
                    let Some(list) = or_waiting(got, waiting) else { return };
                    list.into_iter()
                        .filter(|a| a.request.session.as_deref() == Some(conversation.as_str()))
                        .filter(|a| shown.insert(a.id))
                        .map(TurnEvent::ApprovalRequested)
                        .collect()
                }
                got = inputs.recv() => {
                    let waiting = || input_queue.pending(&conversation);
                    let Some(list) = or_waiting(got, waiting) else { return };
                    list.into_iter()
                        .filter(|i| i.conversation == conversation && shown.insert(i.id))
                        .map(TurnEvent::InputRequested)
                        .collect()
                }
            };
            for event in batch {
                if events.send(event).await.is_err() {
                    return;
                }
            }
        }
    }))
}

/// What one broadcast receive yields: the announced request, or after a lag every request
/// that still waits (from `waiting`, oldest first); `None` when the queue is gone.
fn or_waiting<T>(
    received: Result<T, broadcast::error::RecvError>,
    waiting: impl FnOnce() -> Vec<T>,
) -> Option<Vec<T>> {
    match received {
        Ok(request) => Some(vec![request]),
        Err(broadcast::error::RecvError::Lagged(_)) => Some(waiting()),
        Err(broadcast::error::RecvError::Closed) => None,
    }
}

/// The tools offered to the model: the catalog's non-internal, non-denied tools with schemas
/// cleaned for the provider.
pub fn tool_specs(catalog: &Catalog, kind: ProviderKind) -> Vec<ToolSpec> {
    catalog
        .offered()
        .map(|e| ToolSpec {
            name: e.descriptor.name.clone(),
            description: e.descriptor.description.clone(),
            schema: clean_schema(kind, &e.descriptor.input_schema),
        })
        .collect()
}

/// A result as text for the model: its text blocks; the structured content when there is no
/// text; a line for each block a text model cannot read.
fn model_text(result: &ToolResult) -> String {
    let mut out = String::new();
    for block in &result.content {
        let piece = match &block.body {
            ContentBody::Text { text } => text.clone(),
            ContentBody::Image { mime_type, .. } | ContentBody::Audio { mime_type, .. } => {
                format!("[{mime_type} content, not shown]")
            }
            ContentBody::ResourceLink { uri, .. } => format!("[resource {uri}]"),
            ContentBody::Resource { resource } => resource
                .text
                .clone()
                .unwrap_or_else(|| format!("[resource {}]", resource.uri)),
        };
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(&piece);
    }
    if out.is_empty()
        && let Some(structured) = &result.structured_content
    {
        out = structured.to_string();
    }
    if result.is_error && out.is_empty() {
        out = "the tool reported an error without a message".into();
    }
    out
}

/// The first `max` characters of `text` on one line, with an ellipsis when cut: how a long
/// text (arguments, a result, a request) is shown to a person at a glance.
pub fn preview(text: &str, max: usize) -> String {
    let one_line = text.replace('\n', " ");
    if one_line.chars().count() <= max {
        one_line
    } else {
        format!("{}…", one_line.chars().take(max).collect::<String>())
    }
}

/// Cuts `text` to at most `max` bytes (on a character boundary) with a note naming the
/// execution-log id under which the whole result is kept.
pub fn cut(text: String, max: usize, log_id: &str) -> String {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "{}\n[result cut at {end} of {} bytes; the full result is in the execution log under id \
         {log_id}]",
        &text[..end],
        text.len()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_result_is_cut_on_a_character_boundary_with_its_log_id() {
        let text = "é".repeat(10);
        let out = cut(text, 5, "0190");
        assert!(out.starts_with("éé\n[result cut at 4 of 20 bytes"), "{out}");
        assert!(out.contains("under id 0190"));
        assert_eq!(cut("short".into(), 5, "x"), "short");
    }

    #[tokio::test]
    async fn a_forwarder_that_fell_behind_still_shows_every_waiting_question_once() {
        const ASKED: usize = 80;
        let approvals = Arc::new(ApprovalQueue::new());
        let inputs = Arc::new(HumanInputs::default());
        let (approvals_rx, inputs_rx) = (approvals.subscribe(), inputs.subscribe());
        // More questions than the announcement channel holds, all asked before the forwarder
        // reads one: its receiver lags and loses the oldest announcements.
        for n in 0..ASKED {
            let inputs = Arc::clone(&inputs);
            tokio::spawn(async move { inputs.ask("c", &format!("question {n}")).await });
        }
        while inputs.pending("c").len() < ASKED {
            tokio::task::yield_now().await;
        }
        let (tx, mut rx) = mpsc::channel(2 * ASKED);
        let _forward = forward_requests(
            "c".into(),
            tx,
            (approvals, approvals_rx),
            (Arc::clone(&inputs), inputs_rx),
        );
        let mut shown = Vec::new();
        while shown.len() < ASKED {
            let next = tokio::time::timeout(Duration::from_secs(5), rx.recv()).await;
            match next {
                Ok(Some(TurnEvent::InputRequested(request))) => shown.push(request.question),
                Ok(other) => panic!("not a question: {other:?}"),
                Err(_) => panic!("only {} of {ASKED} questions were shown", shown.len()),
            }
        }
        // Re-read and announced, but shown once.
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(rx.try_recv().is_err(), "a question was shown twice");
        shown.sort();
        let mut asked: Vec<String> = (0..ASKED).map(|n| format!("question {n}")).collect();
        asked.sort();
        assert_eq!(shown, asked);
    }
}
