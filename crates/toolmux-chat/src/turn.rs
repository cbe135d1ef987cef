//! The loop: one turn streams the model's answer, runs the tool calls it makes through the
//! pipeline on the `chat` channel, feeds the results back, and repeats until the model answers
//! without calls, the step limit is reached, or the turn is cancelled.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::StreamExt;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use toolmux_config::ProviderKind;
use toolmux_core::{
    ApprovalQueue, BatchCall, CallContext, CallReport, Catalog, Channel, ContentBody, Hub,
    NamePattern, ToolScope,
};

use crate::backchannel::{CallBackchannel, SamplingSettings, TurnUsage};
use crate::error::{ChatError, ProviderError, StoreError};
use crate::events::{EngineSettings, FinishReason, ToolOutput, TurnEvent, TurnRequest};
use crate::forwarding::forward_requests;
use crate::prompt::{SkillSummary, system_prompt};
use crate::provider::{
    ChatProvider, Message, ModelRequest, ProviderEvent, ToolCall, ToolSpec, Usage,
};
use crate::providers::Providers;
use crate::rendering::{model_text, tool_specs};
use crate::store::ConversationStore;

/// The most a stored tool message keeps of a tool's images and audio (serialized, base64
/// included). The hub shapes a result's text and structured content for the chat
/// (`chat.maxToolResultBytes`) but passes media on whole; a conversation file must not grow by
/// megabytes per screenshot.
const MAX_STORED_MEDIA_BYTES: usize = 1024 * 1024;

/// The chat engine: providers, the hub, the conversation store, and the queues through which a
/// person answers approvals and questions. One per process, shared by every channel.
pub struct ChatEngine {
    hub: Hub,
    providers: Providers,
    store: Arc<dyn ConversationStore>,
    approvals: Arc<ApprovalQueue>,
    settings: EngineSettings,
    /// `settings.sampling` as currently in force: a running server's configuration can change
    /// it ([`ChatEngine::set_sampling`]) without a restart.
    sampling: Mutex<SamplingSettings>,
    running: Mutex<HashMap<String, CancellationToken>>,
    surface: Mutex<Option<Arc<Surface>>>,
    /// Where the skills named in the system prompt come from (read at each turn's start).
    skills: Option<toolmux_skills::SkillsSource>,
}

/// What the model is shown of one catalog version: the system prompt and the cleaned tool
/// list. Built once per catalog version and provider kind, not once per step.
struct Surface {
    version: u64,
    kind: ProviderKind,
    /// The skills the prompt names: a skill added on disk changes the prompt, not the catalog.
    skills: Vec<SkillSummary>,
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

/// The tool that loads a skill, and the tools a loaded skill always leaves reachable: the skill
/// tools themselves and asking the person.
const SKILL_LOAD: &str = "skill_load";
const ALWAYS_WITH_A_SKILL: [&str; 3] = ["skill_list", SKILL_LOAD, crate::human_input::TOOL_NAME];

/// What a loaded skill narrows the turn to: its `allowed-tools` that are tools of this catalog,
/// plus [`ALWAYS_WITH_A_SKILL`]. `None` — nothing narrowed — for a skill that names no tools,
/// or only tools toolmux does not have (a skill written for another agent's tool names, such
/// as Claude Code's `Read`): narrowing to nothing would leave the model unable to act.
fn skill_scope_of(output: &ToolOutput, catalog: &Catalog) -> Option<Arc<ToolScope>> {
    let skill = output.structured.as_ref()?;
    let name = skill.get("name")?.as_str()?;
    let listed: Vec<&str> = skill
        .get("allowedTools")?
        .as_array()?
        .iter()
        .filter_map(serde_json::Value::as_str)
        .collect();
    let known: Vec<&str> = listed
        .iter()
        .copied()
        .filter(|t| catalog.get(t).is_some())
        .collect();
    if known.is_empty() {
        if !listed.is_empty() {
            tracing::warn!(
                skill = name,
                "the skill's allowed-tools name no tool of this catalog; nothing is narrowed"
            );
        }
        return None;
    }
    let include = known
        .iter()
        .filter_map(|t| NamePattern::new(t).ok())
        .collect();
    Some(Arc::new(ToolScope {
        include,
        entry_points: ALWAYS_WITH_A_SKILL.iter().map(|t| t.to_string()).collect(),
        served_by: format!("the skill `{name}`, which allows only {}", known.join(", ")),
        ..ToolScope::default()
    }))
}

/// The scope a step's calls go through: the turn's own (a delegated task's), a loaded skill's,
/// or — when there are both — the tools both admit, by name (entry points included only when
/// both admit them, so a skill cannot widen a delegated task).
fn both(
    turn: Option<&Arc<ToolScope>>,
    skill: Option<&Arc<ToolScope>>,
    catalog: &Catalog,
) -> Option<Arc<ToolScope>> {
    match (turn, skill) {
        (None, None) => None,
        (Some(only), None) | (None, Some(only)) => Some(Arc::clone(only)),
        (Some(turn), Some(skill)) => Some(Arc::new(only_tools(
            catalog
                .tools()
                .filter(|e| turn.admits(&e.descriptor) && skill.admits(&e.descriptor))
                .map(|e| e.descriptor.name.as_str()),
            skill.served_by.clone(),
        ))),
    }
}

/// The skill scope after one more skill is loaded in a turn: the tools both the earlier
/// skills and the new one admit (entry points included, which every skill scope has). A skill
/// that narrows nothing (no `allowed-tools`, or none of this catalog's) leaves the earlier
/// narrowing as it was: loading it must not lift another skill's limit.
fn narrowed(
    earlier: Option<Arc<ToolScope>>,
    loaded: Option<Arc<ToolScope>>,
    catalog: &Catalog,
) -> Option<Arc<ToolScope>> {
    match (earlier, loaded) {
        (None, only) | (only, None) => only,
        (Some(earlier), Some(loaded)) => Some(Arc::new(only_tools(
            catalog
                .tools()
                .filter(|e| earlier.admits(&e.descriptor) && loaded.admits(&e.descriptor))
                .map(|e| e.descriptor.name.as_str()),
            format!("{} and {}", earlier.served_by, loaded.served_by),
        ))),
    }
}

/// A scope admitting exactly these tool names (none at all when there are none: an empty
/// `include` would admit everything).
pub(crate) fn only_tools<'a>(names: impl Iterator<Item = &'a str>, served_by: String) -> ToolScope {
    let include: Vec<NamePattern> = names.filter_map(|n| NamePattern::new(n).ok()).collect();
    let exclude = if include.is_empty() {
        NamePattern::new("*").into_iter().collect()
    } else {
        Vec::new()
    };
    ToolScope {
        include,
        exclude,
        served_by,
        ..ToolScope::default()
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
    /// What every call of the turn starts from: the chat channel with the conversation as
    /// session and the process's queue as approver — or, for a delegated task, its `delegate`
    /// call's own context (same channel, session and approver, its id as parent).
    context: CallContext,
    /// The most model calls.
    max_steps: u32,
    /// Whether the turn's messages are kept in the conversation store; a delegated task keeps
    /// none (its answer is its `delegate` call's result, in the log).
    saved: bool,
    /// The tools the turn may be offered and call besides what a skill narrows (a delegated
    /// task's); the hub enforces it on every call.
    scope: Option<Arc<ToolScope>>,
}

impl Turn {
    async fn emit(&self, event: TurnEvent) {
        // A channel that stopped listening cancels the turn through its token; until then an
        // event nobody reads is not an error.
        let _ = self.events.send(event).await;
    }
}

/// How many turns one engine runs at once, across conversations. A turn outlives the client
/// that started it (a reload must not cancel it), so this bounds what clients that start
/// turns and go away can leave running.
pub const MAX_RUNNING_TURNS: usize = 16;

/// Takes a turn off the engine's running turns when its task ends, however it ends, and then
/// says so on the approval queue's event stream (pages that follow a turn they did not start
/// read it once more on that word instead of reading it again and again).
struct TurnEnded {
    engine: Arc<ChatEngine>,
    conversation: String,
}

impl Drop for TurnEnded {
    fn drop(&mut self) {
        self.engine.running().remove(&self.conversation);
        // After the removal: a page that reads the conversation on this word sees it ended.
        self.engine.approvals.turn_ended(&self.conversation);
    }
}

impl ChatEngine {
    /// An engine. `approvals` must be the queue the hub's `ask` calls and questions park in for
    /// the chat channel (the loop passes it as the approver).
    pub fn new(
        hub: Hub,
        providers: Providers,
        store: Arc<dyn ConversationStore>,
        approvals: Arc<ApprovalQueue>,
        settings: EngineSettings,
    ) -> Self {
        Self {
            hub,
            providers,
            store,
            approvals,
            sampling: Mutex::new(settings.sampling.clone()),
            settings,
            running: Mutex::new(HashMap::new()),
            surface: Mutex::new(None),
            skills: None,
        }
    }

    /// Names these skills (name and description) in the system prompt, read afresh at the start
    /// of every turn.
    pub fn with_skills(mut self, skills: toolmux_skills::SkillsSource) -> Self {
        self.skills = Some(skills);
        self
    }

    /// The skills a model may load now, read off the async workers — and not read at all when
    /// `skill_load` is not offered on this catalog, since the prompt would not name them. A
    /// skill folder that cannot be read leaves the prompt without skills rather than failing
    /// the turn; the tools report it.
    async fn skill_summaries(&self, catalog: &Catalog) -> Vec<SkillSummary> {
        let Some(skills) = self.skills.clone() else {
            return Vec::new();
        };
        if !crate::prompt::skills_offered(catalog) {
            return Vec::new();
        }
        let found = tokio::task::spawn_blocking(move || skills.discover()).await;
        match found {
            Ok(Ok(found)) => found
                .skills
                .into_iter()
                .filter(|s| s.model_invocable)
                .map(|s| SkillSummary {
                    name: s.name,
                    description: s.description,
                })
                .collect(),
            Ok(Err(e)) => {
                tracing::warn!("skills are left out of the system prompt: {e}");
                Vec::new()
            }
            Err(e) => {
                tracing::warn!("skills are left out of the system prompt: {e}");
                Vec::new()
            }
        }
    }

    /// The prompt and tools for a catalog snapshot, from the cache when it is current.
    fn surface(
        &self,
        catalog: &Catalog,
        kind: ProviderKind,
        skills: &[SkillSummary],
    ) -> Arc<Surface> {
        let mut cached = self.surface.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(surface) = cached.as_ref()
            && surface.version == catalog.version()
            && surface.kind == kind
            && surface.skills == skills
        {
            return Arc::clone(surface);
        }
        let surface = Arc::new(Surface {
            version: catalog.version(),
            kind,
            skills: skills.to_vec(),
            system: system_prompt(catalog, &self.settings.project_name, skills),
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

    fn running(&self) -> std::sync::MutexGuard<'_, HashMap<String, CancellationToken>> {
        self.running.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether a turn runs in a conversation now (a page that reopens it follows the turn until
    /// it ends).
    pub fn is_running(&self, conversation: &str) -> bool {
        self.running().contains_key(conversation)
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
        // A new conversation has one turn to take: its first.
        if let Some(turn) = request.replace_turn
            && turn > 0
            && existing.is_none()
        {
            return Err(ChatError::NoConversation(
                request.conversation.unwrap_or_default(),
            ));
        }
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
            if running.len() >= MAX_RUNNING_TURNS {
                return Err(ChatError::TooManyTurns(running.len()));
            }
            running.insert(conversation.clone(), cancel.clone());
        }
        // Taken off the running turns however this ends from here on: a refused `replaceTurn`,
        // this request dropped while the store works (the client went away), a panic, or the
        // turn's task ending. Else the conversation would answer `Busy` for good.
        let ended = TurnEnded {
            engine: Arc::clone(self),
            conversation: conversation.clone(),
        };
        // Inside the running turns, so that no turn of this conversation saves while it goes.
        if let Some(turn) = request.replace_turn {
            self.drop_from_turn(&conversation, turn).await?;
        }
        let (tx, rx) = mpsc::channel(256);
        // Subscribe before the turn starts, so no request made during it is missed.
        let waiting = self.approvals.watch();
        let turn = Turn {
            context: CallContext::new(Channel::Chat)
                .with_session(conversation.clone())
                .with_approver(self.approvals.clone()),
            conversation: conversation.clone(),
            kind,
            provider,
            model,
            text: request.text,
            cancel: cancel.clone(),
            events: tx,
            sampled: Arc::default(),
            max_steps: self.settings.max_steps,
            saved: true,
            scope: None,
        };
        let engine = Arc::clone(self);
        tokio::spawn(async move {
            let _ended = ended;
            let _forward = forward_requests(
                turn.conversation.clone(),
                turn.events.clone(),
                Arc::clone(&engine.approvals),
                waiting,
            );
            engine.run(&turn).await;
        });
        Ok((conversation, rx, cancel))
    }

    /// Drops turn `turn` of `conversation` and what follows it, to take it again; its next
    /// turn drops nothing.
    async fn drop_from_turn(&self, conversation: &str, turn: usize) -> Result<(), ChatError> {
        let id = conversation.to_string();
        let turns = self
            .with_store(move |store| {
                if store.drop_from_turn(&id, turn)? {
                    return Ok(None);
                }
                let messages = store.messages(&id)?;
                Ok(Some(
                    messages
                        .iter()
                        .filter(|m| matches!(m.message, Message::User { .. }))
                        .count(),
                ))
            })
            .await?;
        match turns {
            Some(turns) if turns != turn => Err(ChatError::NoTurn {
                conversation: conversation.to_string(),
                turn,
                turns,
            }),
            _ => Ok(()),
        }
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

    /// Saves `messages` to the conversation and hands them back, so that the history gets them
    /// without a copy (a tool's result may be large).
    async fn persist(&self, turn: &Turn, messages: Vec<Message>) -> Result<Vec<Message>, String> {
        if !turn.saved {
            return Ok(messages);
        }
        let conversation = turn.conversation.clone();
        let provider = turn.provider.name().to_string();
        let model = turn.model.clone();
        self.with_store(move |store| {
            store
                .append(&conversation, &provider, &model, &messages)
                .map(|()| messages)
        })
        .await
        .map_err(|e| format!("cannot save the conversation: {e}"))
    }

    async fn run_steps(&self, turn: &Turn) -> Result<(FinishReason, Usage, u32), String> {
        let conversation = turn.conversation.clone();
        let mut history: Vec<Message> = if turn.saved {
            self.with_store(move |store| store.messages(&conversation))
                .await
                .map_err(|e| format!("cannot read the conversation: {e}"))?
                .into_iter()
                .map(|m| m.message)
                .collect()
        } else {
            Vec::new()
        };
        let user = Message::User {
            text: turn.text.clone(),
        };
        history.extend(self.persist(turn, vec![user]).await?);
        turn.emit(TurnEvent::Started {
            conversation: turn.conversation.clone(),
            provider: turn.provider.name().to_string(),
            model: turn.model.clone(),
        })
        .await;
        let context = turn.context.clone();
        let mut usage = Usage::default();
        let skills = self.skill_summaries(&self.hub.catalog()).await;
        // The tools the loaded skills allow, for the rest of the turn (`skill_scope_of`, `narrowed`).
        let mut skill_scope: Option<Arc<ToolScope>> = None;
        for step in 1..=turn.max_steps {
            turn.emit(TurnEvent::StepStart { step }).await;
            let catalog = self.hub.catalog();
            let surface = self.surface(&catalog, turn.kind, &skills);
            let scope = both(turn.scope.as_ref(), skill_scope.as_ref(), &catalog);
            let tools = match &scope {
                Some(scope) => surface
                    .tools
                    .iter()
                    .filter(|t| {
                        catalog
                            .get(&t.name)
                            .is_some_and(|e| scope.admits(&e.descriptor))
                    })
                    .cloned()
                    .collect(),
                None => Arc::clone(&surface.tools),
            };
            let request = ModelRequest {
                model: turn.model.clone(),
                system: surface.system.clone(),
                messages: history.clone(),
                tools,
                max_tokens: None,
            };
            let answer = self.model_call(turn, request, &mut usage).await;
            let (text, mut calls, cancelled) = match answer {
                Ok(answer) => answer,
                Err(e) => return Err(e.to_string()),
            };
            for call in &mut calls {
                call.source = catalog.get(&call.name).map(|e| e.descriptor.source.clone());
            }
            let assistant = Message::Assistant {
                text,
                tool_calls: calls.clone(),
            };
            let keep = !matches!(&assistant, Message::Assistant { text, tool_calls } if text.is_empty() && tool_calls.is_empty());
            if keep {
                history.extend(self.persist(turn, vec![assistant]).await?);
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
                    source: call.source.clone(),
                })
                .await;
            }
            // The scope goes with the calls too, so a tool the skill leaves out is refused by the
            // hub even when the model names it anyway.
            let step_context = match &scope {
                Some(scope) => context.clone().with_scope(Arc::clone(scope)),
                None => context.clone(),
            };
            let results = tokio::select! {
                results = self.run_calls(turn, &catalog, &calls, &step_context) => Some(results),
                () = turn.cancel.cancelled() => None,
            };
            if let Some(outputs) = &results {
                for output in outputs
                    .iter()
                    .filter(|o| o.name == SKILL_LOAD && !o.is_error)
                {
                    // A later skill narrows further and never widens: its scope meets the
                    // earlier ones', as a skill meets a delegated task's (`both`).
                    skill_scope = narrowed(
                        skill_scope.take(),
                        skill_scope_of(output, &catalog),
                        &catalog,
                    );
                }
            }
            let cancelled = results.is_none();
            // Every call gets a result message, even a cancelled one: providers reject a
            // conversation in which a tool call has no answer.
            let messages: Vec<Message> = match results {
                Some(outputs) => outputs.into_iter().map(|o| self.stored_result(o)).collect(),
                None => calls
                    .iter()
                    .map(|c| Message::Tool {
                        call_id: c.id.clone(),
                        name: c.name.clone(),
                        content: "the call was cancelled by the person".into(),
                        is_error: true,
                        log_id: None,
                        duration_ms: None,
                        structured: None,
                        media: Vec::new(),
                    })
                    .collect(),
            };
            history.extend(self.persist(turn, messages).await?);
            if cancelled {
                return Ok((FinishReason::Cancelled, usage, step));
            }
            turn.emit(TurnEvent::StepFinish { step }).await;
        }
        if !turn.saved {
            // A delegated task reports the limit in its result (`truncated`), not as chat text.
            return Ok((FinishReason::StepLimit, usage, turn.max_steps));
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

    /// Runs one step's calls through `Hub::call_batch` (consecutive `parallel` tools together,
    /// every other call alone and in order), each with its own backchannel. Each output is
    /// shown the moment its call finishes; they are returned in the order of the calls.
    async fn run_calls(
        &self,
        turn: &Turn,
        catalog: &Catalog,
        calls: &[ToolCall],
        context: &CallContext,
    ) -> Vec<ToolOutput> {
        // What a tool's source sends back while it runs reaches the person through the call's
        // own backchannel; its questions end with the call (its guard, dropped as the call
        // finishes) or with the turn.
        let mut call_ends = Vec::with_capacity(calls.len());
        let batch = calls
            .iter()
            .map(|call| {
                let ended = turn.cancel.child_token();
                call_ends.push(Some(ended.clone().drop_guard()));
                let backchannel = self.backchannel(turn, catalog, call, ended);
                BatchCall {
                    name: call.name.clone(),
                    arguments: call.arguments.clone(),
                    context: context
                        .clone()
                        .with_tool_call_id(call.id.clone())
                        .with_backchannel(Arc::new(backchannel)),
                }
            })
            .collect();
        let mut outputs: Vec<Option<ToolOutput>> = vec![None; calls.len()];
        // The batch makes progress only while it is polled, so outputs are shown from a second
        // future beside it: a slow reader of the turn's events never holds up the other calls.
        let (finished_tx, mut finished_rx) = mpsc::unbounded_channel();
        let run = async {
            let mut finished = std::pin::pin!(self.hub.call_batch(batch));
            while let Some((position, report)) = finished.next().await {
                call_ends[position].take();
                let output = self.output(&calls[position], report);
                // The receiver lives until this future ends.
                let _ = finished_tx.send(output.clone());
                outputs[position] = Some(output);
            }
            drop(finished_tx);
        };
        let show = async {
            while let Some(output) = finished_rx.recv().await {
                turn.emit(TurnEvent::ToolOutput(output)).await;
            }
        };
        tokio::join!(run, show);
        outputs.into_iter().flatten().collect()
    }

    fn backchannel(
        &self,
        turn: &Turn,
        catalog: &Catalog,
        call: &ToolCall,
        ended: CancellationToken,
    ) -> CallBackchannel {
        let source = catalog
            .get(&call.name)
            .map(|e| e.descriptor.source.clone())
            .unwrap_or_default();
        CallBackchannel {
            call_id: call.id.clone(),
            tool: call.name.clone(),
            conversation: turn.conversation.clone(),
            events: turn.events.clone(),
            turn: turn.cancel.clone(),
            ended,
            approvals: Arc::clone(&self.approvals),
            approval_timeout: self.hub.settings().approval_timeout,
            provider: Arc::clone(&turn.provider),
            model: turn.model.clone(),
            sampling: self
                .sampling
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .for_server(&source),
            sampled: Arc::clone(&turn.sampled),
            source,
        }
    }

    /// A finished call's result message: what the model sees, and what a reopened conversation
    /// shows as the live card did (the duration, and the structured content). Both come shaped
    /// by the hub: a result over the chat's cap (`chat.maxToolResultBytes`) arrives cut, with a
    /// note and without its structured content.
    fn stored_result(&self, output: ToolOutput) -> Message {
        let media = match serde_json::to_value(&output.media) {
            // Too large to keep: the live card showed them; the execution log has the result.
            Ok(value) if toolmux_core::serializes_longer_than(&value, MAX_STORED_MEDIA_BYTES) => {
                Vec::new()
            }
            Ok(_) => output.media,
            Err(e) => {
                tracing::warn!(error = %e, tool = %output.name, "a tool's images and audio are left out of the stored conversation");
                Vec::new()
            }
        };
        Message::Tool {
            call_id: output.call_id,
            name: output.name,
            content: output.content,
            is_error: output.is_error,
            log_id: Some(output.log_id),
            duration_ms: Some(output.duration_ms),
            structured: output.structured,
            media,
        }
    }

    /// A finished call as the model and the person see it.
    fn output(&self, call: &ToolCall, report: CallReport) -> ToolOutput {
        let log_id = report.id.to_string();
        let (content, structured, media, is_error, error_code) = match report.result {
            Ok(result) => {
                let text = model_text(&result);
                let media = result
                    .content
                    .into_iter()
                    .filter(|block| {
                        matches!(
                            block.body,
                            ContentBody::Image { .. } | ContentBody::Audio { .. }
                        )
                    })
                    .collect();
                (
                    text,
                    result.structured_content,
                    media,
                    result.is_error,
                    None,
                )
            }
            Err(e) => (
                e.to_string(),
                None,
                Vec::new(),
                true,
                Some(e.code().to_string()),
            ),
        };
        ToolOutput {
            call_id: call.id.clone(),
            name: call.name.clone(),
            content,
            structured,
            media,
            is_error,
            error_code,
            log_id,
            duration_ms: duration_ms(report.duration),
        }
    }
}

/// A delegated task, as `delegate` asks for it.
pub(crate) struct Delegation {
    /// The instruction, the sub-conversation's one user message.
    pub(crate) task: String,
    /// The model; the default provider's default model when `None`.
    pub(crate) model: Option<String>,
    /// The most model calls.
    pub(crate) max_steps: u32,
    /// The tools it may be offered and call.
    pub(crate) scope: Arc<ToolScope>,
    /// What its calls start from: the `delegate` call's channel, session and approver, that
    /// call's id as parent, never trusted.
    pub(crate) context: CallContext,
}

/// How a delegated task ended.
pub(crate) struct Delegated {
    /// The last text the model wrote.
    pub(crate) answer: String,
    /// Why it ended.
    pub(crate) reason: FinishReason,
    /// Model calls made.
    pub(crate) steps: u32,
    /// Tokens of every model call.
    pub(crate) usage: Usage,
    /// Every tool call it made, in the order they finished.
    pub(crate) calls: Vec<ToolOutput>,
    /// The provider and model used.
    pub(crate) provider: String,
    pub(crate) model: String,
}

impl ChatEngine {
    /// Runs a delegated task: the same loop as a turn, with the default provider, a tool scope
    /// of its own and its caller's context, keeping no conversation. Dropping the future stops
    /// it (its tool calls are cancelled as a turn's are).
    pub(crate) async fn run_delegated(&self, delegation: Delegation) -> Result<Delegated, String> {
        let (kind, provider) = self.providers.resolve(None).map_err(|e| e.to_string())?;
        let model = delegation
            .model
            .or_else(|| provider.default_model().map(str::to_string))
            .ok_or_else(|| ChatError::NoModel(provider.name().to_string()).to_string())?;
        // Questions and forms of its calls go where its caller's conversation shows them (a
        // chat's), else under a name of its own that nobody's stream shows.
        let conversation = delegation
            .context
            .session
            .clone()
            .unwrap_or_else(|| format!("delegate-{}", uuid::Uuid::now_v7()));
        let (events, mut received) = mpsc::channel(256);
        let cancel = CancellationToken::new();
        let _stop = cancel.clone().drop_guard();
        let turn = Turn {
            conversation,
            kind,
            provider,
            model,
            text: delegation.task,
            cancel,
            events,
            sampled: Arc::default(),
            context: delegation.context,
            max_steps: delegation.max_steps,
            saved: false,
            scope: Some(delegation.scope),
        };
        let collect = async {
            let mut answer = String::new();
            let mut step_text = String::new();
            let mut calls = Vec::new();
            while let Some(event) = received.recv().await {
                match event {
                    TurnEvent::StepStart { .. } => step_text.clear(),
                    TurnEvent::TextDelta(delta) => {
                        step_text.push_str(&delta);
                        if !step_text.trim().is_empty() {
                            answer.clone_from(&step_text);
                        }
                    }
                    TurnEvent::ToolOutput(output) => calls.push(output),
                    TurnEvent::Finished {
                        reason,
                        usage,
                        steps,
                    } => return Ok((answer, calls, reason, usage, steps)),
                    TurnEvent::Error { message } => return Err(message),
                    _ => {}
                }
            }
            Err("the delegated task ended without an answer".to_string())
        };
        let ((), ended) = tokio::join!(self.run(&turn), collect);
        let (answer, calls, reason, usage, steps) = ended?;
        Ok(Delegated {
            answer,
            reason,
            steps,
            usage,
            calls,
            provider: turn.provider.name().to_string(),
            model: turn.model.clone(),
        })
    }
}

fn duration_ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}
