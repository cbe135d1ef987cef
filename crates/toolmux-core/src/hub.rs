//! The hub: holds the sources, publishes catalog snapshots, and runs every call through the one
//! pipeline — resolve, policy, approval, input validation, rate limit, timeout, run, output
//! validation, execution log.

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::{Duration, Instant};

use chrono::Utc;
use futures::stream::{self, FuturesUnordered, Stream, StreamExt};
use governor::clock::{Clock, DefaultClock};
use governor::{Quota, RateLimiter};
use serde_json::Value;
use tokio::sync::watch;
use uuid::Uuid;

use crate::approval::{Approval, ApprovalRequest, Approver, approve_within};
use crate::catalog::{Catalog, DisabledSources, Filters, Limiter, ToolEntry, ToolOverride};
use crate::context::CallContext;
use crate::error::{CallError, SourceError};
use crate::model::{RateLimit, ToolResult, arguments_object};
use crate::policy::{Policy, PolicyRules};
use crate::record::{ExecutionRecord, ExecutionSink, Outcome};
use crate::shape::{ResultShaper, ShapedCall};
use crate::source::{ChangeNotifier, SharedSource, Source, SourceCall};
use crate::validate::Violation;

/// Settings of the pipeline that come from configuration.
#[derive(Clone, Debug)]
pub struct HubSettings {
    /// Time limit for tools that set none.
    pub default_timeout: Duration,
    /// How long an `ask` call waits for an answer before it is denied.
    pub approval_timeout: Duration,
    /// Policy rules.
    pub policies: PolicyRules,
    /// Per-tool overrides, by the exact registry name the tool's source gives it.
    pub overrides: HashMap<String, ToolOverride>,
    /// Tools defined as another tool plus fixed arguments.
    pub derived: Vec<crate::DerivedTool>,
    /// Include and exclude patterns.
    pub filters: Filters,
    /// Sources switched off.
    pub disabled_sources: DisabledSources,
    /// The named endpoints, each a view of the catalog; every catalog carries the ones in force
    /// when it was built, so an endpoint changes with the catalog, as tools do.
    pub endpoints: Arc<crate::Endpoints>,
    /// The configured principals and their rights, carried by every catalog like endpoints.
    pub principals: Arc<crate::Principals>,
}

impl HubSettings {
    /// A tool's time limit when neither it nor the configuration sets one: one minute. The one
    /// definition; the configuration's `defaults.timeoutMs` defaults to it.
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);
    /// How long an `ask` call waits for a person when the configuration does not say: ten
    /// minutes (the configuration's `defaults.approvalTimeoutMs` defaults to it).
    pub const DEFAULT_APPROVAL_TIMEOUT: Duration = Duration::from_secs(600);
}

impl Default for HubSettings {
    fn default() -> Self {
        Self {
            default_timeout: Self::DEFAULT_TIMEOUT,
            approval_timeout: Self::DEFAULT_APPROVAL_TIMEOUT,
            policies: PolicyRules::default(),
            overrides: HashMap::new(),
            derived: Vec::new(),
            filters: Filters::default(),
            disabled_sources: DisabledSources::new(),
            endpoints: Arc::default(),
            principals: Arc::default(),
        }
    }
}

/// One call of a batch.
#[derive(Clone, Debug)]
pub struct BatchCall {
    /// The registry name.
    pub name: String,
    /// The arguments object.
    pub arguments: Value,
    /// The call's own context (each call of a chat step has its own way back, for one).
    pub context: CallContext,
}

/// A call's result together with its execution-log id and duration.
#[derive(Debug)]
pub struct CallReport {
    /// The id under which the call is in the execution log.
    pub id: Uuid,
    /// Wall time of the pipeline.
    pub duration: Duration,
    /// The result, or why there is none.
    pub result: Result<ToolResult, CallError>,
}

/// The registry and its pipeline. Cheap to clone; clones share everything.
#[derive(Clone)]
pub struct Hub {
    inner: Arc<HubInner>,
}

pub(crate) struct HubInner {
    sources: RwLock<Vec<SharedSource>>,
    settings: RwLock<Arc<HubSettings>>,
    limiters: Mutex<HashMap<String, (RateLimit, Arc<Limiter>)>>,
    catalog: watch::Sender<Arc<Catalog>>,
    /// Serialises rebuilds so that a higher version never holds older contents.
    rebuild: Mutex<u64>,
    sink: Arc<dyn ExecutionSink>,
    /// The pipeline's last step, once the assembly has set one ([`Hub::set_shaper`]).
    shaper: RwLock<Option<Arc<dyn ResultShaper>>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl HubInner {
    pub(crate) fn rebuild(inner: &Arc<HubInner>) {
        let mut version = lock(&inner.rebuild);
        let sources = inner
            .sources
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let settings = Arc::clone(
            &inner
                .settings
                .read()
                .unwrap_or_else(PoisonError::into_inner),
        );
        let mut limiters = lock(&inner.limiters);
        // A limiter survives a rebuild when its limit is unchanged, so editing an unrelated
        // setting does not hand every tool a fresh budget.
        let mut limiter_for = |name: &str, limit: &RateLimit| -> Arc<Limiter> {
            if let Some((existing, limiter)) = limiters.get(name)
                && existing == limit
            {
                return Arc::clone(limiter);
            }
            let limiter = Arc::new(new_limiter(limit));
            limiters.insert(name.to_string(), (limit.clone(), Arc::clone(&limiter)));
            limiter
        };
        *version += 1;
        let catalog = Catalog::build(*version, &sources, &settings, &mut limiter_for);
        inner.catalog.send_replace(Arc::new(catalog));
    }
}

fn new_limiter(limit: &RateLimit) -> Limiter {
    let requests = NonZeroU32::new(limit.requests.max(1)).unwrap_or(NonZeroU32::MIN);
    let per_request = (limit.period / requests.get()).max(Duration::from_nanos(1));
    let quota = Quota::with_period(per_request)
        .unwrap_or_else(|| Quota::per_second(requests))
        .allow_burst(requests);
    RateLimiter::direct(quota)
}

impl Hub {
    /// A hub with no sources, the given settings, and a sink for execution records.
    pub fn new(settings: HubSettings, sink: Arc<dyn ExecutionSink>) -> Self {
        let (catalog, _) = watch::channel(Arc::new(Catalog::empty()));
        let inner = Arc::new(HubInner {
            sources: RwLock::new(Vec::new()),
            settings: RwLock::new(Arc::new(settings)),
            limiters: Mutex::new(HashMap::new()),
            catalog,
            rebuild: Mutex::new(0),
            sink,
            shaper: RwLock::new(None),
        });
        HubInner::rebuild(&inner);
        Self { inner }
    }

    /// Adds a source (replacing one with the same id) and publishes a new catalog.
    pub fn add_source(&self, source: Arc<dyn Source>) {
        source.attach(ChangeNotifier {
            hub: Arc::downgrade(&self.inner),
        });
        {
            let mut sources = self
                .inner
                .sources
                .write()
                .unwrap_or_else(PoisonError::into_inner);
            sources.retain(|s| s.id() != source.id());
            sources.push(source);
        }
        HubInner::rebuild(&self.inner);
    }

    /// Removes a source by id and publishes a new catalog. Returns whether it was there.
    pub fn remove_source(&self, id: &str) -> bool {
        let removed = {
            let mut sources = self
                .inner
                .sources
                .write()
                .unwrap_or_else(PoisonError::into_inner);
            let before = sources.len();
            sources.retain(|s| s.id() != id);
            sources.len() != before
        };
        if removed {
            HubInner::rebuild(&self.inner);
        }
        removed
    }

    /// Sets the step that shapes every result before its caller sees it (caps, projections,
    /// spill). Without one, results reach callers as the tools returned them.
    pub fn set_shaper(&self, shaper: Arc<dyn ResultShaper>) {
        *self
            .inner
            .shaper
            .write()
            .unwrap_or_else(PoisonError::into_inner) = Some(shaper);
    }

    /// Replaces the settings and publishes a new catalog.
    pub fn configure(&self, settings: HubSettings) {
        *self
            .inner
            .settings
            .write()
            .unwrap_or_else(PoisonError::into_inner) = Arc::new(settings);
        HubInner::rebuild(&self.inner);
    }

    /// The current settings.
    pub fn settings(&self) -> Arc<HubSettings> {
        Arc::clone(
            &self
                .inner
                .settings
                .read()
                .unwrap_or_else(PoisonError::into_inner),
        )
    }

    /// Publishes a new catalog from the sources' current tool lists.
    pub fn refresh(&self) {
        HubInner::rebuild(&self.inner);
    }

    /// The current catalog snapshot.
    pub fn catalog(&self) -> Arc<Catalog> {
        Arc::clone(&self.inner.catalog.borrow())
    }

    /// A handle that does not keep the hub alive.
    pub fn downgrade(&self) -> WeakHub {
        WeakHub {
            inner: Arc::downgrade(&self.inner),
        }
    }

    /// A receiver that sees every new catalog snapshot.
    pub fn subscribe(&self) -> watch::Receiver<Arc<Catalog>> {
        self.inner.catalog.subscribe()
    }

    /// Calls a tool through the whole pipeline.
    pub async fn call(
        &self,
        name: &str,
        arguments: Value,
        context: &CallContext,
    ) -> Result<ToolResult, CallError> {
        self.call_reported(name, arguments, context).await.result
    }

    /// Calls a tool through the whole pipeline and returns its log id and duration too.
    pub async fn call_reported(
        &self,
        name: &str,
        arguments: Value,
        context: &CallContext,
    ) -> CallReport {
        let started = Instant::now();
        let catalog = self.catalog();
        let entry = catalog.resolve(name, context).cloned();
        // The record is written when the call ends — or, if the caller drops the call first (a
        // cancelled chat turn, a finished script, a client that went away), as a cancelled call.
        let mut pending = Unfinished {
            sink: &*self.inner.sink,
            started,
            record: Some(ExecutionRecord {
                id: Uuid::now_v7(),
                timestamp: Utc::now(),
                tool: name.to_string(),
                source: entry.as_ref().ok().map(|e| e.descriptor.source.clone()),
                channel: context.channel,
                session: context.session.clone(),
                caller: context.caller.clone(),
                arguments: arguments.clone(),
                outcome: Outcome::Error,
                error: Some(CANCELLED.to_string()),
                duration_us: 0,
                result: None,
                parent: context.parent,
                approved_by: None,
            }),
        };
        // The source sees its own call's id, to name it as the parent of calls it makes. An
        // approval id comes only from this call's own approval (`run`), never from a caller.
        let context = &CallContext {
            call: pending.record.as_ref().map(|r| r.id),
            approval: None,
            ..context.clone()
        };
        let mut approved_by = None;
        let output_schema = entry
            .as_ref()
            .is_ok_and(|e| e.descriptor.output_schema.is_some());
        let result = match entry {
            Ok(entry) => run(&entry, &catalog, arguments, context, &mut approved_by).await,
            Err(refused) => Err(refused),
        };
        let mut record = pending
            .record
            .take()
            .unwrap_or_else(|| unreachable!("taken once"));
        let id = record.id;
        record.outcome = outcome_of(&result);
        record.error = error_of(&result);
        record.duration_us = started.elapsed().as_micros() as u64;
        // The log keeps what the tool returned (under its own caps); the caller gets it shaped.
        record.result = result.as_ref().ok().cloned();
        record.approved_by = approved_by;
        self.inner.sink.record(record);
        let shaper = self
            .inner
            .shaper
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let result = match (shaper, result) {
            (Some(shaper), Ok(result)) => {
                let call = ShapedCall {
                    tool: name,
                    id,
                    channel: context.channel,
                    output_schema,
                };
                Ok(shaper.shape(call, result).await)
            }
            (_, result) => result,
        };
        let duration = started.elapsed();
        CallReport {
            id,
            duration,
            result,
        }
    }

    /// Runs several calls, each with its own context: consecutive tools marked `parallel` run
    /// concurrently, every other tool runs alone, in order, after everything before it has
    /// finished. Each call is reported (with its position in `calls`) the moment it finishes,
    /// so a caller can show results as they come; collect and sort by position for call order.
    pub fn call_batch(
        &self,
        calls: Vec<BatchCall>,
    ) -> impl Stream<Item = (usize, CallReport)> + Send + '_ {
        let catalog = self.catalog();
        let is_parallel = |name: &str| {
            catalog
                .get(name)
                .is_some_and(|e| e.descriptor.parallel && !e.descriptor.internal)
        };
        // A group is a run of parallel calls, or one call that is not parallel.
        let mut groups: Vec<Vec<(usize, BatchCall)>> = Vec::new();
        let mut joins_previous = false;
        for (position, call) in calls.into_iter().enumerate() {
            let parallel = is_parallel(&call.name);
            match groups.last_mut() {
                Some(group) if parallel && joins_previous => group.push((position, call)),
                _ => groups.push(vec![(position, call)]),
            }
            joins_previous = parallel;
        }
        // `flat_map` drains one group's stream before it starts the next.
        stream::iter(groups).flat_map(move |group| {
            group
                .into_iter()
                .map(|(position, call)| async move {
                    let report = self
                        .call_reported(&call.name, call.arguments, &call.context)
                        .await;
                    (position, report)
                })
                .collect::<FuturesUnordered<_>>()
        })
    }
}

/// A handle to a hub that does not keep it alive. Sources that call back into the hub (code mode
/// runs scripts whose tool calls go through the pipeline again) hold one of these, so that a hub
/// and its sources never form a reference cycle.
#[derive(Clone)]
pub struct WeakHub {
    inner: std::sync::Weak<HubInner>,
}

impl WeakHub {
    /// The hub, if it still exists.
    pub fn upgrade(&self) -> Option<Hub> {
        self.inner.upgrade().map(|inner| Hub { inner })
    }

    /// How long a person has to answer (`defaults.approvalTimeoutMs`, as the configuration
    /// reads now): the limit of every question a call's work puts to a person outside the
    /// pipeline's own `ask`. The default when `hub` is not given or gone.
    pub fn approval_timeout(hub: Option<&WeakHub>) -> Duration {
        hub.and_then(WeakHub::upgrade)
            .map(|hub| hub.catalog().approval_timeout)
            .unwrap_or_else(|| HubSettings::default().approval_timeout)
    }
}

impl std::fmt::Debug for WeakHub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WeakHub")
            .field("alive", &(self.inner.strong_count() > 0))
            .finish()
    }
}

impl std::fmt::Debug for Hub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hub")
            .field("catalog_version", &self.catalog().version())
            .finish_non_exhaustive()
    }
}

/// The error recorded for a call whose caller stopped waiting for it.
const CANCELLED: &str = "the caller cancelled the call before it finished";

/// A call's execution record until the call ends; recorded as cancelled if it is dropped first.
struct Unfinished<'a> {
    sink: &'a dyn ExecutionSink,
    started: Instant,
    record: Option<ExecutionRecord>,
}

impl Drop for Unfinished<'_> {
    fn drop(&mut self) {
        if let Some(mut record) = self.record.take() {
            record.duration_us = self.started.elapsed().as_micros() as u64;
            self.sink.record(record);
        }
    }
}

async fn run(
    entry: &ToolEntry,
    catalog: &Catalog,
    arguments: Value,
    context: &CallContext,
    approved_by: &mut Option<Uuid>,
) -> Result<ToolResult, CallError> {
    let name = &entry.descriptor.name;
    // A policy that refuses without asking anyone refuses first: a denied tool's schema is
    // none of the caller's business.
    let approver = refuse_unasked(entry, context)?;
    // Arguments are checked before a person is asked: nobody should approve a call that would
    // be refused anyway.
    let mut arguments = match arguments_object(arguments) {
        Ok(map) => map,
        Err(other) => {
            return Err(CallError::InvalidArguments {
                name: name.clone(),
                violations: vec![Violation {
                    pointer: String::new(),
                    message: format!(
                        "arguments must be a JSON object, not {}",
                        crate::value_kind(&other)
                    ),
                }],
            });
        }
    };
    crate::validate::drop_client_added(&entry.descriptor.input_schema, &mut arguments);
    // An override's renamed, defaulted and fixed arguments are put back into the source's shape
    // before validation, so the source's own schema judges what the source will receive.
    if let Some(plan) = &entry.arguments {
        plan.apply(&mut arguments);
    }
    let arguments = Value::Object(arguments);
    match entry.input_schema() {
        Ok(schema) => {
            let violations = schema.argument_violations(&arguments);
            if !violations.is_empty() {
                return Err(CallError::InvalidArguments {
                    name: name.clone(),
                    violations,
                });
            }
        }
        Err(e) => {
            return Err(CallError::Failed {
                name: name.clone(),
                message: format!("the tool's input schema is invalid: {e}"),
            });
        }
    }
    // An `ask` call's approval has an id of its own, which its preview and (once allowed) its
    // run both see, so that the run can carry out what the preview showed; the source hears
    // when the approval is over, however this function ends (a drop guard).
    let mut asked = None;
    if let Some(approver) = approver {
        let approval = ApprovalInForce {
            source: &entry.source,
            id: Uuid::now_v7(),
        };
        let context = CallContext {
            approval: Some(approval.id),
            ..context.clone()
        };
        *approved_by = ask(approver, entry, catalog, &arguments, &context).await?;
        asked = Some((approval, context));
    }
    let context = asked.as_ref().map_or(context, |(_, approved)| approved);
    let Value::Object(arguments) = arguments else {
        unreachable!("checked to be an object above")
    };

    if let Some(limiter) = &entry.limiter
        && let Err(not_until) = limiter.check()
    {
        return Err(CallError::RateLimited {
            name: name.clone(),
            retry_after: not_until.wait_time_from(DefaultClock::default().now()),
        });
    }

    let call = entry.source.call(SourceCall {
        tool: &entry.descriptor,
        arguments,
        context,
    });
    let result = match tokio::time::timeout(entry.timeout, call).await {
        Err(_elapsed) => {
            return Err(CallError::Timeout {
                name: name.clone(),
                after: entry.timeout,
            });
        }
        Ok(Err(SourceError::Unavailable(message))) => {
            return Err(CallError::Unavailable {
                name: name.clone(),
                message,
            });
        }
        Ok(Err(SourceError::Failed(message))) => {
            return Err(CallError::Failed {
                name: name.clone(),
                message,
            });
        }
        Ok(Err(SourceError::Timeout(after))) => {
            return Err(CallError::Timeout {
                name: name.clone(),
                after,
            });
        }
        Ok(Ok(result)) => result,
    };

    if !result.is_error
        && let Some(schema) = entry.output_schema()
    {
        let violations = match (schema, &result.structured_content) {
            (Err(e), _) => vec![Violation {
                pointer: String::new(),
                message: format!("the tool's output schema is invalid: {e}"),
            }],
            (Ok(_), None) => vec![Violation {
                pointer: String::new(),
                message: "the tool declares an output schema but returned no structured content"
                    .to_string(),
            }],
            (Ok(schema), Some(value)) => schema.violations(value),
        };
        if !violations.is_empty() {
            return Err(CallError::InvalidOutput {
                name: name.clone(),
                violations,
            });
        }
    }
    Ok(result)
}

/// An approval the hub asked, until its call ends or will never run: then its source hears
/// that it is over ([`Source::approval_ended`]), whichever way `run` ends (a cancelled call
/// included).
struct ApprovalInForce<'a> {
    source: &'a SharedSource,
    id: Uuid,
}

impl Drop for ApprovalInForce<'_> {
    fn drop(&mut self) {
        self.source.approval_ended(self.id);
    }
}

/// The policy's answer where nobody needs to be asked: `Ok(None)` to run, `Ok(Some(approver))`
/// to ask that approver first, or the refusal.
fn refuse_unasked<'a>(
    entry: &ToolEntry,
    context: &'a CallContext,
) -> Result<Option<&'a Arc<dyn Approver>>, CallError> {
    let name = &entry.descriptor.name;
    // A caller's role that says `ask` about a tool asks even where its policy allows it (a
    // role that denies it left it out of the caller's scope: the call never got here).
    let rights = context.scope.as_ref().and_then(|s| s.rights.as_ref());
    let policy = match rights.map(|r| r.rule(name)) {
        Some(Policy::Ask) if entry.policy == Policy::Allow => Policy::Ask,
        _ => entry.policy,
    };
    match policy {
        Policy::Allow => Ok(None),
        Policy::Deny => Err(CallError::Denied {
            name: name.clone(),
            reason: format!("its policy is `deny` ({})", entry.policy_origin),
        }),
        Policy::Ask => match &context.approver {
            Some(approver) => Ok(Some(approver)),
            None => Err(CallError::Denied {
                name: name.clone(),
                reason: format!(
                    "its policy is `ask` ({}) and there is no one to ask on the {} channel; \
                     to run it without asking, set \"policies\": {{\"tools\": {{\"{name}\": \"allow\"}}}} \
                     in .toolmux/config.json",
                    entry.policy_origin, context.channel
                ),
            }),
        },
    }
}

/// Asks a person about an `ask` call, within the approval time limit — unless an earlier answer
/// already allows it, whose approval id is returned for the log.
async fn ask(
    approver: &Arc<dyn Approver>,
    entry: &ToolEntry,
    catalog: &Catalog,
    arguments: &Value,
    context: &CallContext,
) -> Result<Option<Uuid>, CallError> {
    let name = &entry.descriptor.name;
    // The tool's configured message, rendered with the call's arguments, stands in for the
    // generic question on every channel.
    let mut message = match &entry.approval_message {
        Some(template) => template.render(arguments),
        None => format!(
            "Allow `{name}` from `{}` to run with these arguments?",
            entry.descriptor.source
        ),
    };
    // Whoever is asked sees who wants the call made, where a principal made it.
    let caller = context
        .scope
        .as_ref()
        .and_then(|s| s.rights.as_ref())
        .map(|r| r.principal.clone());
    if let Some(caller) = &caller {
        message = format!("{caller} wants to run `{name}`. {message}");
    }
    // What the call would change (a write tool's diff), where the source can tell: every
    // approver shows the message, so the person sees it on every channel.
    let mut shown = None;
    if let Value::Object(map) = arguments {
        let preview = entry.source.preview(SourceCall {
            tool: &entry.descriptor,
            arguments: map.clone(),
            context,
        });
        if let Ok(Some(preview)) = tokio::time::timeout(entry.timeout, preview).await {
            message.push_str("\n\n");
            message.push_str(&preview);
            shown = Some(preview);
        }
    }
    let request = ApprovalRequest {
        tool: name.clone(),
        source: entry.descriptor.source.clone(),
        arguments: arguments.clone(),
        channel: context.channel,
        session: context.session.clone(),
        tool_call_id: context.tool_call_id.clone(),
        message,
        preview: shown,
        configured_message: entry.approval_message.is_some(),
        time_limit: catalog.approval_timeout,
        caller,
    };
    if let Some(earlier) = approver.standing_approval(&request) {
        return Ok(Some(earlier));
    }
    match approve_within(approver.as_ref(), &request).await {
        Some(Approval::Allow) => Ok(None),
        Some(Approval::Deny { reason }) => Err(CallError::Denied {
            name: name.clone(),
            reason,
        }),
        None => Err(CallError::Denied {
            name: name.clone(),
            reason: format!(
                "nobody answered the approval request within {}",
                crate::duration::format_duration(catalog.approval_timeout)
            ),
        }),
    }
}

fn outcome_of(result: &Result<ToolResult, CallError>) -> Outcome {
    match result {
        Ok(r) if r.is_error => Outcome::Error,
        Ok(_) => Outcome::Ok,
        Err(
            CallError::NotFound { .. }
            | CallError::Disabled { .. }
            | CallError::NotServed { .. }
            | CallError::InvalidArguments { .. }
            | CallError::InvalidOutput { .. },
        ) => Outcome::Invalid,
        Err(CallError::Denied { .. } | CallError::RateLimited { .. }) => Outcome::Denied,
        Err(CallError::Timeout { .. }) => Outcome::Timeout,
        Err(CallError::Unavailable { .. } | CallError::Failed { .. }) => Outcome::Error,
    }
}

fn error_of(result: &Result<ToolResult, CallError>) -> Option<String> {
    match result {
        Ok(r) if r.is_error => Some(r.text_content()),
        Ok(_) => None,
        Err(e) => Some(e.to_string()),
    }
}
