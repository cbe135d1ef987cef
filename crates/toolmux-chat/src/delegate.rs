//! `delegate`: a sub-conversation of toolmux's own chat — the same loop, provider and model as
//! the chat — given an instruction, a subset of the tools its caller may reach (by pattern) and
//! a step limit; its final answer is the call's result.
//!
//! Its calls go through the hub with the `delegate` call's own context: the same channel,
//! session and approver (an `ask` call inside it asks the same person), never trusted (a model
//! drives them, so internal tools stay out of reach), narrowed to the chosen tools, and with
//! the `delegate` call's log id as `parent`, so the execution log ties every sub-call to it.
//! `delegate` is never among its own tools: a delegated task cannot delegate again, which bounds
//! the depth at one.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use toolmux_core::{
    Approval, ApprovalQueue, ApprovalRequest, Approver, CannotAsk, HumanAnswer, HumanQuestion,
    NamePattern, Policy, Source, SourceCall, SourceError, SourceKind, ToolAnnotations,
    ToolDescriptor, ToolErrorKind, ToolResult, WeakHub, input_schema, parse_arguments,
};

use crate::error::StoreError;
use crate::events::{EngineSettings, FinishReason};
use crate::provider::Message;
use crate::providers::Providers;
use crate::store::{Conversation, ConversationStore, StoredMessage};
use crate::turn::{ChatEngine, Delegation, only_tools};

/// The source id.
pub const DELEGATE_SOURCE_ID: &str = "delegate";
/// The tool's name.
pub const DELEGATE_TOOL: &str = "delegate";
/// Model calls a delegated task may make when the caller names no limit.
const DEFAULT_STEPS: u32 = 10;
/// The most model calls a caller may allow one delegated task.
const MAX_STEPS: u32 = 50;
/// How long one delegated task may run: several model calls, tool calls and perhaps a person's
/// approvals, far beyond an ordinary tool's limit. `toolSettings.delegate.timeout` overrides it.
const TIME_LIMIT: Duration = Duration::from_secs(30 * 60);

/// The `delegate` tool's source. It holds the hub weakly (the hub holds it) and builds the
/// chat's engine for each call from the providers the configuration had at start.
pub struct DelegateSource {
    hub: WeakHub,
    /// The configured providers, or why they could not be opened (said by every call).
    providers: Result<Providers, String>,
    approvals: Arc<ApprovalQueue>,
    settings: EngineSettings,
    skills: Option<toolmux_skills::SkillsSource>,
}

impl std::fmt::Debug for DelegateSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DelegateSource")
            .field("providers", &self.providers)
            .finish_non_exhaustive()
    }
}

impl DelegateSource {
    /// A source whose tasks run with `providers` through `hub`. `approvals` is the process's
    /// queue (the chat engine's): a delegated task's sampling requests and servers' forms wait
    /// there, as a chat turn's do.
    pub fn new(
        hub: WeakHub,
        providers: Result<Providers, String>,
        approvals: Arc<ApprovalQueue>,
        settings: EngineSettings,
    ) -> Self {
        Self {
            hub,
            providers,
            approvals,
            settings,
            skills: None,
        }
    }

    /// Names these skills in a delegated task's system prompt, as the chat does.
    pub fn with_skills(mut self, skills: toolmux_skills::SkillsSource) -> Self {
        self.skills = Some(skills);
        self
    }
}

fn descriptor() -> ToolDescriptor {
    let call = json!({"type": "object", "properties": {
        "name": {"type": "string"},
        "isError": {"type": "boolean"},
        "errorCode": {"type": "string"},
        "logId": {"type": "string"}
    }, "required": ["name", "isError", "logId"]});
    let output = json!({
        "type": "object",
        "properties": {
            "answer": {"type": "string"},
            "steps": {"type": "integer"},
            "truncated": {"type": "boolean"},
            "toolCalls": {"type": "array", "items": call},
            "tools": {"type": "array", "items": {"type": "string"}},
            "provider": {"type": "string"},
            "model": {"type": "string"},
            "usage": {"type": "object", "properties": {
                "inputTokens": {"type": "integer"}, "outputTokens": {"type": "integer"}
            }}
        },
        "required": ["answer", "steps", "truncated", "toolCalls", "tools", "provider", "model"]
    });
    let mut d = ToolDescriptor::new(
        DELEGATE_SOURCE_ID,
        DELEGATE_TOOL,
        "Hands a self-contained task to a sub-agent (toolmux's own chat model) that may use only \
         the tools you name, for at most `maxSteps` model calls, and returns its final answer \
         with the tool calls it made.",
        input_schema::<DelegateArgs>(),
    );
    d.output_schema = Some(Arc::new(output));
    d.annotations = ToolAnnotations {
        open_world_hint: Some(true),
        ..ToolAnnotations::default()
    };
    // It spends model tokens and acts with whatever tools it is given: a person says yes
    // first unless the configuration allows it.
    d.policy = Some(Policy::Ask);
    d.timeout = Some(TIME_LIMIT);
    d
}

/// `delegate`'s arguments: its input schema is derived from this struct.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct DelegateArgs {
    /// The instruction for the sub-agent: what to do and what to answer.
    #[schemars(length(min = 1))]
    task: String,
    /// Name patterns (globs such as `file_*`, `specs__*`) of the tools the sub-agent may use,
    /// among the tools you may use. `delegate` itself is never among them.
    #[schemars(length(min = 1), inner(length(min = 1)))]
    tools: Vec<String>,
    /// The most model calls the sub-agent may make; its answer says `truncated` when the limit
    /// cut it short.
    #[serde(default = "default_steps")]
    #[schemars(range(min = 1, max = MAX_STEPS))]
    max_steps: u32,
    /// The model; the chat's default model when left out.
    #[schemars(length(min = 1))]
    model: Option<String>,
}

fn default_steps() -> u32 {
    DEFAULT_STEPS
}

/// A call's arguments, parsed and checked (the hub has checked them against the schema).
struct Asked {
    task: String,
    patterns: Vec<NamePattern>,
    max_steps: u32,
    model: Option<String>,
}

fn asked(arguments: &Map<String, Value>) -> Result<Asked, String> {
    let DelegateArgs {
        task,
        tools,
        max_steps,
        model,
    } = parse_arguments(arguments)?;
    if !(1..=MAX_STEPS).contains(&max_steps) {
        return Err(format!("`maxSteps` must be from 1 to {MAX_STEPS}"));
    }
    let patterns = tools
        .iter()
        .map(|p| NamePattern::new(p).map_err(|e| e.to_string()))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Asked {
        task,
        patterns,
        max_steps,
        model,
    })
}

#[async_trait]
impl Source for DelegateSource {
    fn id(&self) -> &str {
        DELEGATE_SOURCE_ID
    }

    fn kind(&self) -> SourceKind {
        SourceKind::Builtin
    }

    fn description(&self) -> Option<String> {
        Some("Hands a self-contained sub-task to a sub-conversation with a subset of the tools; its final answer comes back.".to_string())
    }

    fn tools(&self) -> Vec<ToolDescriptor> {
        vec![descriptor()]
    }

    async fn call(&self, call: SourceCall<'_>) -> Result<ToolResult, SourceError> {
        let asked = match asked(&call.arguments) {
            Ok(asked) => asked,
            Err(e) => return Ok(ToolResult::kind_error(ToolErrorKind::Invalid, e)),
        };
        let providers = match &self.providers {
            Ok(providers) => providers.clone(),
            Err(e) => {
                return Ok(ToolResult::error(format!(
                    "`delegate` runs toolmux's own chat, whose providers could not be opened \
                     (`providers` in .toolmux/config.json): {e}"
                )));
            }
        };
        let hub = self
            .hub
            .upgrade()
            .ok_or_else(|| SourceError::Unavailable("toolmux is shutting down".into()))?;
        // The tools the caller may reach (never internal ones, never `delegate`) that a pattern
        // names, fixed for the whole task.
        let catalog = hub.catalog();
        let parent = call.context;
        let tools: Vec<String> = catalog
            .offered()
            .map(|e| &e.descriptor)
            .filter(|d| d.name != DELEGATE_TOOL && parent.admits(d))
            .filter(|d| asked.patterns.iter().any(|p| p.matches(&d.name)))
            .map(|d| d.name.clone())
            .collect();
        let named: Vec<String> = asked
            .patterns
            .iter()
            .map(|p| format!("`{}`", p.as_str()))
            .collect();
        let scope = only_tools(
            tools.iter().map(String::as_str),
            format!(
                "this delegated task, which may use only the tools matching {}",
                named.join(", ")
            ),
        );
        let mut context = parent.clone();
        context.trusted = false;
        context.parent = parent.call;
        context.call = None;
        context.scope = None;
        context.backchannel = None;
        context.approver = context
            .approver
            .map(|approver| Arc::new(DelegatedApprover { inner: approver }) as Arc<dyn Approver>);
        let engine = ChatEngine::new(
            hub,
            providers,
            Arc::new(Unsaved),
            Arc::clone(&self.approvals),
            self.settings.clone(),
        );
        let engine = match &self.skills {
            Some(skills) => engine.with_skills(skills.clone()),
            None => engine,
        };
        let done = engine
            .run_delegated(Delegation {
                task: asked.task,
                model: asked.model,
                max_steps: asked.max_steps,
                scope: Arc::new(scope),
                context,
            })
            .await;
        let done = match done {
            Ok(done) => done,
            Err(e) => return Ok(ToolResult::error(format!("the delegated task failed: {e}"))),
        };
        let truncated = done.reason == FinishReason::StepLimit;
        let calls: Vec<Value> = done
            .calls
            .iter()
            .map(|c| {
                let mut call = json!({"name": c.name, "isError": c.is_error, "logId": c.log_id});
                if let Some(code) = &c.error_code {
                    call["errorCode"] = json!(code);
                }
                call
            })
            .collect();
        let text = if truncated {
            format!(
                "{}\n\n(The sub-agent was stopped after {} steps, its limit.)",
                done.answer, done.steps
            )
        } else {
            done.answer.clone()
        };
        Ok(ToolResult::structured_with_text(
            json!({
                "answer": done.answer,
                "steps": done.steps,
                "truncated": truncated,
                "toolCalls": calls,
                "tools": tools,
                "provider": done.provider,
                "model": done.model,
                "usage": {
                    "inputTokens": done.usage.input_tokens,
                    "outputTokens": done.usage.output_tokens,
                },
            }),
            text,
        ))
    }
}

/// The caller's approver, asked about a delegated task's calls in words that say so and name
/// the tool the task calls: an approver that words its own question (an MCP client's form names
/// the tool its client called, `delegate`) shows this one instead.
struct DelegatedApprover {
    inner: Arc<dyn Approver>,
}

#[async_trait]
impl Approver for DelegatedApprover {
    async fn approve(&self, request: &ApprovalRequest) -> Approval {
        let mut request = request.clone();
        request.message = if request.configured_message {
            format!("A delegated task asks: {}", request.message)
        } else {
            let arguments =
                serde_json::to_string_pretty(&request.arguments).unwrap_or_else(|_| "{}".into());
            let mut message = format!(
                "A delegated task asks: allow `{}` (from `{}`) to run with these arguments?\n{arguments}",
                request.tool, request.source
            );
            if let Some(preview) = &request.preview {
                message.push_str("\n\n");
                message.push_str(preview);
            }
            message
        };
        request.configured_message = true;
        self.inner.approve(&request).await
    }

    async fn ask(&self, question: &HumanQuestion) -> Result<HumanAnswer, CannotAsk> {
        self.inner.ask(question).await
    }

    fn checks_answers(&self) -> bool {
        self.inner.checks_answers()
    }

    fn standing_approval(&self, request: &ApprovalRequest) -> Option<uuid::Uuid> {
        self.inner.standing_approval(request)
    }
}

/// The store of a delegated task's engine: the task keeps no conversation, so the loop never
/// reaches it (`Turn::saved` is false); it answers as a store that is not there.
struct Unsaved;

impl ConversationStore for Unsaved {
    fn create(
        &self,
        _: Option<&str>,
        _: &str,
        _: &str,
        _: &str,
    ) -> Result<Conversation, StoreError> {
        Err(StoreError::ShutDown)
    }
    fn get(&self, _: &str) -> Result<Option<Conversation>, StoreError> {
        Ok(None)
    }
    fn list(&self) -> Result<Vec<Conversation>, StoreError> {
        Ok(Vec::new())
    }
    fn messages(&self, _: &str) -> Result<Vec<StoredMessage>, StoreError> {
        Ok(Vec::new())
    }
    fn append(&self, _: &str, _: &str, _: &str, _: &[Message]) -> Result<(), StoreError> {
        Ok(())
    }
    fn rename(&self, _: &str, _: &str) -> Result<bool, StoreError> {
        Ok(false)
    }
    fn delete(&self, _: &str) -> Result<bool, StoreError> {
        Ok(false)
    }
    fn drop_from_turn(&self, _: &str, _: usize) -> Result<bool, StoreError> {
        Ok(false)
    }
}
