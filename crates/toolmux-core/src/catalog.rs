//! The catalog: an immutable, versioned snapshot of every tool, with its effective policy,
//! limits and compiled schemas. A change publishes a new snapshot; readers keep theirs.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use serde::Serialize;
use serde::ser::SerializeMap;

use crate::context::CallContext;
use crate::error::CallError;
use crate::hub::HubSettings;
use crate::model::{RateLimit, ToolDescriptor};
use crate::overrides::{ArgumentPlan, DerivedTool, Presentation, StaleOverride, present};
use crate::pattern::NamePattern;
use crate::policy::{Policy, PolicyOrigin};
use crate::source::{SharedSource, SourceKind, SourceStatus};
use crate::validate::CompiledSchema;

pub(crate) type Limiter = governor::DefaultDirectRateLimiter;

/// Which tools a listing and the pipeline let through, by name.
#[derive(Clone, Debug, Default)]
pub struct Filters {
    /// When not empty, only tools matching one of these are available.
    pub include: Vec<NamePattern>,
    /// Tools matching one of these are not available.
    pub exclude: Vec<NamePattern>,
}

/// Per-tool settings from configuration that override what the source declares.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ToolOverride {
    /// Time limit.
    pub timeout: Option<Duration>,
    /// Rate limit.
    pub rate_limit: Option<RateLimit>,
    /// `Some(false)` switches the tool off.
    pub enabled: Option<bool>,
    /// The message shown when a person is asked to approve a call (`approvalMessage`).
    pub approval_message: Option<crate::approval::ApprovalTemplate>,
    /// How the tool presents itself instead of as its source declares (name, description,
    /// annotations, arguments).
    pub presentation: Presentation,
}

/// Why a tool that a source provides is not in the catalog.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", content = "detail", rename_all = "camelCase")]
pub enum HiddenReason {
    /// Matched an exclude pattern.
    Excluded(String),
    /// Matched no include pattern.
    NotIncluded,
    /// Switched off by name.
    DisabledTool,
    /// Its whole source is switched off.
    DisabledSource(String),
    /// Another source already provides a tool with this name.
    NameTaken(String),
    /// Its source holds it until a person accepts it ([`ToolDescriptor::held`] says why).
    Held(String),
}

impl fmt::Display for HiddenReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HiddenReason::Excluded(p) => write!(f, "excluded by pattern `{p}`"),
            HiddenReason::NotIncluded => f.write_str("not matched by any include pattern"),
            HiddenReason::DisabledTool => f.write_str("switched off in configuration"),
            HiddenReason::DisabledSource(s) => write!(f, "its source `{s}` is switched off"),
            HiddenReason::NameTaken(s) => write!(f, "the name is already taken by source `{s}`"),
            HiddenReason::Held(why) => write!(f, "held until a person accepts it: {why}"),
        }
    }
}

/// A source as the catalog shows it.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SourceInfo {
    /// Its id.
    pub id: String,
    /// Its family.
    pub kind: SourceKind,
    /// What its tools are for ([`crate::Source::description`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its health.
    pub status: SourceStatus,
    /// Tools it contributes to the catalog.
    pub tool_count: usize,
    /// Tools it holds back until a person accepts them ([`ToolDescriptor::held`]).
    #[serde(skip_serializing_if = "is_zero")]
    pub held_count: usize,
    /// Whether configuration switched it off.
    pub enabled: bool,
}

/// One tool in the catalog, with everything the pipeline needs to run it.
pub struct ToolEntry {
    /// What the source declared.
    pub descriptor: ToolDescriptor,
    /// The effective policy.
    pub policy: Policy,
    /// Which rule decided it.
    pub policy_origin: PolicyOrigin,
    /// The effective time limit.
    pub timeout: Duration,
    /// The effective rate limit.
    pub rate_limit: Option<RateLimit>,
    /// The configured approval message, when there is one.
    pub approval_message: Option<crate::approval::ApprovalTemplate>,
    pub(crate) source: SharedSource,
    pub(crate) limiter: Option<Arc<Limiter>>,
    /// How callers' arguments become the source's, when an override changes them.
    pub(crate) arguments: Option<ArgumentPlan>,
    input_schema: OnceLock<Result<CompiledSchema, String>>,
    output_schema: OnceLock<Result<CompiledSchema, String>>,
}

impl ToolEntry {
    /// Whether a model may be offered this tool: see [`Catalog::offered`].
    pub fn is_offered(&self) -> bool {
        !self.descriptor.internal && self.policy != crate::Policy::Deny
    }

    /// The compiled input schema: the source's own, which arguments are checked against once
    /// an override's plan has merged them. Compiled on first use, so that building a catalog
    /// of thousands of upstream tools costs nothing until they are called.
    pub(crate) fn input_schema(&self) -> &Result<CompiledSchema, String> {
        let schema = match &self.arguments {
            Some(plan) => &plan.original_schema,
            None => &self.descriptor.input_schema,
        };
        self.input_schema
            .get_or_init(|| CompiledSchema::compile(schema))
    }

    /// The compiled output schema, when the tool declares one.
    pub(crate) fn output_schema(&self) -> Option<&Result<CompiledSchema, String>> {
        let schema = self.descriptor.output_schema.as_ref()?;
        Some(
            self.output_schema
                .get_or_init(|| CompiledSchema::compile(schema)),
        )
    }
}

impl fmt::Debug for ToolEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolEntry")
            .field("name", &self.descriptor.name)
            .field("policy", &self.policy)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

/// Serialized as the descriptor plus the effective `policy`, `policyOrigin` and
/// `effectiveTimeoutMs`, which is what listings show.
impl Serialize for ToolEntry {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let descriptor =
            serde_json::to_value(&self.descriptor).map_err(serde::ser::Error::custom)?;
        let serde_json::Value::Object(fields) = descriptor else {
            return Err(serde::ser::Error::custom("descriptor is not an object"));
        };
        let mut map = serializer.serialize_map(Some(fields.len() + 4))?;
        for (k, v) in &fields {
            if k != "policy" && k != "rateLimit" {
                map.serialize_entry(k, v)?;
            }
        }
        map.serialize_entry("policy", &self.policy)?;
        map.serialize_entry("policyOrigin", &self.policy_origin.to_string())?;
        map.serialize_entry("effectiveTimeoutMs", &(self.timeout.as_millis() as u64))?;
        if let Some(limit) = &self.rate_limit {
            map.serialize_entry("rateLimit", limit)?;
        }
        map.end()
    }
}

/// One tool as every listing shows it (`GET /api/tools`, `toolmux tools list --json`): the
/// entry (descriptor, effective policy and limits) plus whether it is `enabled`, its
/// `sourceKind`, and its source's `discoveryStatus` and `lastDiscovered`, from the catalog's
/// snapshot of its source ([`Catalog::tool_view`]). The one definition of that shape: each
/// channel serialises this, none builds its own.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolView {
    /// The tool.
    #[serde(flatten)]
    pub entry: Arc<ToolEntry>,
    /// `false` for a tool switched off by configuration.
    pub enabled: bool,
    /// The family of its source.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_kind: Option<crate::SourceKind>,
    /// Where its source's tool list stands.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub discovery_status: Option<crate::SourceState>,
    /// When its source last tried to discover tools, as RFC 3339.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_discovered: Option<String>,
}

/// An immutable snapshot of the registry.
#[derive(Debug)]
pub struct Catalog {
    version: u64,
    entries: Vec<Arc<ToolEntry>>,
    index: HashMap<String, usize>,
    hidden: HashMap<String, HiddenReason>,
    /// The tools switched off by configuration (by name or by source), for listings that show
    /// them to a person (`GET /api/tools?disabled=true`).
    switched_off: Vec<Arc<ToolEntry>>,
    sources: Vec<SourceInfo>,
    endpoints: Arc<crate::Endpoints>,
    principals: Arc<crate::Principals>,
    stale: Vec<StaleOverride>,
    pub(crate) approval_timeout: Duration,
}

impl Catalog {
    pub(crate) fn empty() -> Self {
        Self {
            version: 0,
            entries: Vec::new(),
            index: HashMap::new(),
            hidden: HashMap::new(),
            switched_off: Vec::new(),
            sources: Vec::new(),
            endpoints: Arc::default(),
            principals: Arc::default(),
            stale: Vec::new(),
            approval_timeout: HubSettings::default().approval_timeout,
        }
    }

    pub(crate) fn build(
        version: u64,
        sources: &[SharedSource],
        settings: &HubSettings,
        limiter_for: &mut dyn FnMut(&str, &RateLimit) -> Arc<Limiter>,
    ) -> Self {
        let mut building = Building {
            settings,
            limiter_for,
            entries: Vec::new(),
            taken: HashMap::new(),
            hidden: HashMap::new(),
            switched_off: Vec::new(),
        };
        let mut derived_from: HashMap<&str, Vec<&DerivedTool>> = HashMap::new();
        for derived in &settings.derived {
            derived_from
                .entry(derived.from.as_str())
                .or_default()
                .push(derived);
        }
        let mut stale = Vec::new();
        let mut overridden: HashSet<String> = HashSet::new();
        let mut infos = Vec::with_capacity(sources.len());
        for source in sources {
            let source_id = source.id().to_string();
            let enabled = !settings.disabled_sources.contains(&source_id);
            let mut count = 0;
            let mut held_count = 0;
            for declared in source.tools() {
                held_count += usize::from(declared.held.is_some());
                // Overrides and derived tools name a tool as its source does; what they change
                // is applied here, once, so every channel shows the same tool.
                let derived = derived_from.remove(declared.name.as_str());
                let base = derived.as_ref().map(|_| declared.clone());
                let own = settings.overrides.get(&declared.name);
                let (descriptor, plan) = match own.filter(|o| !o.presentation.is_empty()) {
                    Some(own) => {
                        overridden.insert(declared.name.clone());
                        let setting = format!("toolSettings.{}", declared.name);
                        let (descriptor, plan, missing) = present(declared, &own.presentation);
                        stale.extend(no_such_arguments(&setting, &descriptor, missing));
                        (descriptor, plan)
                    }
                    None => (declared, None),
                };
                count += usize::from(building.admit(descriptor, own, plan, source));
                for derived in derived.into_iter().flatten() {
                    let Some(base) = &base else { break };
                    let setting = format!("derivedTools.{}", derived.name);
                    let (descriptor, plan, missing) =
                        present(base.clone(), &derived.presentation());
                    stale.extend(no_such_arguments(&setting, base, missing));
                    let limits = settings.overrides.get(&derived.name);
                    count += usize::from(building.admit(descriptor, limits, plan, source));
                }
            }
            infos.push(SourceInfo {
                id: source_id,
                kind: source.kind(),
                description: source.description(),
                status: source.status(),
                tool_count: count,
                held_count,
                enabled,
            });
        }
        let mut unmatched: Vec<_> = settings
            .overrides
            .iter()
            .filter(|(name, o)| !o.presentation.is_empty() && !overridden.contains(*name))
            .map(|(name, _)| StaleOverride {
                setting: format!("toolSettings.{name}"),
                tool: name.clone(),
                reason: format!("no source provides a tool `{name}`"),
            })
            .chain(derived_from.values().flatten().map(|d| StaleOverride {
                setting: format!("derivedTools.{}", d.name),
                tool: d.from.clone(),
                reason: format!("no source provides the tool `{}` it derives from", d.from),
            }))
            .collect();
        unmatched.sort_by(|a, b| a.setting.cmp(&b.setting));
        stale.extend(unmatched);
        let Building {
            mut entries,
            hidden,
            switched_off,
            ..
        } = building;
        entries.sort_by(|a, b| a.descriptor.name.cmp(&b.descriptor.name));
        let index = entries
            .iter()
            .enumerate()
            .map(|(i, e)| (e.descriptor.name.clone(), i))
            .collect();
        Self {
            version,
            entries,
            index,
            hidden,
            switched_off,
            sources: infos,
            endpoints: Arc::clone(&settings.endpoints),
            principals: Arc::clone(&settings.principals),
            stale,
            approval_timeout: settings.approval_timeout,
        }
    }

    /// The configured overrides and derived tools that matched nothing when this snapshot was
    /// built (a tool or argument the upstream renamed), for `toolmux config check` and
    /// `toolmux mcp list` to report.
    pub fn stale_overrides(&self) -> &[StaleOverride] {
        &self.stale
    }

    /// The snapshot's version; every change publishes a higher one.
    pub fn version(&self) -> u64 {
        self.version
    }

    /// A tool by registry name, internal tools included.
    pub fn get(&self, name: &str) -> Option<&Arc<ToolEntry>> {
        self.index.get(name).map(|&i| &self.entries[i])
    }

    /// The tools a model or an MCP client may see: everything but internal tools and entry
    /// points ([`ToolDescriptor::entry_point`]), by name.
    pub fn tools(&self) -> impl Iterator<Item = &Arc<ToolEntry>> {
        self.entries
            .iter()
            .filter(|e| !e.descriptor.internal && !e.descriptor.entry_point)
    }

    /// The tools a channel serving `scope` may list: [`Catalog::tools`], plus the entry points
    /// the scope names.
    pub fn served_tools<'a>(
        &'a self,
        scope: &'a crate::ToolScope,
    ) -> impl Iterator<Item = &'a Arc<ToolEntry>> {
        self.entries.iter().filter(|e| {
            !e.descriptor.internal
                && (!e.descriptor.entry_point || scope.entry_points.contains(&e.descriptor.name))
        })
    }

    /// The tools a model may be offered: not internal, and not denied by policy. A denied tool
    /// would only spend the model's context and fail every call; host views (`toolmux tools
    /// list`, `GET /api/tools`) still show it, with its policy and the rule that set it.
    pub fn offered(&self) -> impl Iterator<Item = &Arc<ToolEntry>> {
        self.entries
            .iter()
            .filter(|e| e.is_offered() && !e.descriptor.entry_point)
    }

    /// Every tool, internal ones included, for trusted host callers (`toolmux tools list`,
    /// `GET /api/tools`): all but the entry points of an MCP mode (discovery's `describe_tool`
    /// and `call_tool`), which are tools of that mode only.
    pub fn all_tools(&self) -> impl Iterator<Item = &Arc<ToolEntry>> {
        self.entries.iter().filter(|e| !e.descriptor.entry_point)
    }

    /// Whether a source provides a tool of this name, listed or hidden (switched off,
    /// filtered out): what a setting may be saved for. Else the "unknown tool" refusal, with a
    /// suggestion among the listed tools.
    pub fn known(&self, name: &str) -> Result<(), CallError> {
        if self.get(name).is_some() || self.hidden.contains_key(name) {
            return Ok(());
        }
        Err(CallError::NotFound {
            name: name.to_string(),
            suggestion: self.suggest_among(name, self.tools()),
        })
    }

    /// The tools configuration switched off (by name or by source), in source order: what a
    /// person may switch on again. Never offered or callable.
    pub fn switched_off(&self) -> &[Arc<ToolEntry>] {
        &self.switched_off
    }

    /// Why a tool its source provides is missing from the catalog.
    pub fn hidden_reason(&self, name: &str) -> Option<&HiddenReason> {
        self.hidden.get(name)
    }

    /// The sources, in the order they were added.
    pub fn sources(&self) -> &[SourceInfo] {
        &self.sources
    }

    /// The named endpoints in force with this snapshot.
    pub fn endpoints(&self) -> &crate::Endpoints {
        &self.endpoints
    }

    /// The configured principals and their rights in force with this snapshot.
    pub fn principals(&self) -> &crate::Principals {
        &self.principals
    }

    /// The endpoint `name`, or the refusal every door gives for an unknown one, which names the
    /// configured ones.
    pub fn endpoint(&self, name: &str) -> Result<&Arc<crate::Endpoint>, String> {
        self.endpoints
            .get(name)
            .ok_or_else(|| crate::unknown_endpoint(name, &self.endpoints))
    }

    /// `entry` as listings show it, `enabled` or switched off, with its source's kind and
    /// discovery state from this snapshot.
    pub fn tool_view(&self, entry: &Arc<ToolEntry>, enabled: bool) -> ToolView {
        let source = self
            .sources
            .iter()
            .find(|s| s.id == entry.descriptor.source);
        ToolView {
            entry: Arc::clone(entry),
            enabled,
            source_kind: source.map(|s| s.kind),
            discovery_status: source.map(|s| s.status.state),
            last_discovered: source
                .and_then(|s| s.status.last_discovery)
                .map(|at| at.to_rfc3339()),
        }
    }

    /// The tool a call names, or why a call to it is refused before anything runs: the one
    /// rule every channel reports (unknown, with a suggestion among the tools the caller may
    /// see; switched off by configuration; internal and the caller not trusted; outside the
    /// channel's scope).
    pub fn resolve(&self, name: &str, context: &CallContext) -> Result<&Arc<ToolEntry>, CallError> {
        match self.get(name) {
            Some(entry)
                if (entry.descriptor.internal && !context.trusted)
                    || (entry.descriptor.entry_point && !context.names_entry_point(name)) =>
            {
                Err(CallError::NotFound {
                    name: name.to_string(),
                    suggestion: self.suggest_for(name, context),
                })
            }
            Some(entry) if !context.admits(&entry.descriptor) => Err(CallError::NotServed {
                name: name.to_string(),
                served_by: context
                    .scope
                    .as_ref()
                    .map(|s| s.served_by.clone())
                    .unwrap_or_default(),
            }),
            Some(entry) => Ok(entry),
            None => Err(match self.hidden_reason(name) {
                Some(reason) => CallError::Disabled {
                    name: name.to_string(),
                    reason: reason.to_string(),
                },
                None => CallError::NotFound {
                    name: name.to_string(),
                    suggestion: self.suggest_for(name, context),
                },
            }),
        }
    }

    /// The tool name closest to `name` among the tools this caller may reach, when one is close
    /// enough to be a likely typo.
    fn suggest_for(&self, name: &str, context: &CallContext) -> Option<String> {
        self.suggest_among(name, self.tools().filter(|e| context.admits(&e.descriptor)))
    }

    fn suggest_among<'a>(
        &'a self,
        name: &str,
        tools: impl Iterator<Item = &'a Arc<ToolEntry>>,
    ) -> Option<String> {
        tools
            .map(|e| {
                (
                    strsim::jaro_winkler(name, &e.descriptor.name),
                    &e.descriptor.name,
                )
            })
            .filter(|(score, _)| *score >= 0.85)
            .max_by(|a, b| a.0.total_cmp(&b.0))
            .map(|(_, n)| n.clone())
    }
}

/// A catalog while [`Catalog::build`] fills it.
struct Building<'a> {
    settings: &'a HubSettings,
    limiter_for: &'a mut dyn FnMut(&str, &RateLimit) -> Arc<Limiter>,
    entries: Vec<Arc<ToolEntry>>,
    /// Registry names already listed, with the source that took each.
    taken: HashMap<String, String>,
    hidden: HashMap<String, HiddenReason>,
    switched_off: Vec<Arc<ToolEntry>>,
}

impl Building<'_> {
    /// Adds one tool as it will be shown (`limits` are its configured time and rate limits,
    /// `plan` how callers' arguments become the source's); whether it is listed.
    fn admit(
        &mut self,
        descriptor: ToolDescriptor,
        limits: Option<&ToolOverride>,
        plan: Option<ArgumentPlan>,
        source: &SharedSource,
    ) -> bool {
        let settings = self.settings;
        // Settings saved under the name callers see (switching a renamed tool off from the
        // web app, limits of a derived tool) win over those under the source's name.
        let limits = settings.overrides.get(&descriptor.name).or(limits);
        let hidden_as = hidden_reason(&descriptor, limits, settings, &self.taken);
        // A tool switched off is still described whole (policy, limits) for a person
        // who may switch it on again; any other hidden one is only named.
        let off = matches!(
            hidden_as,
            Some(HiddenReason::DisabledTool | HiddenReason::DisabledSource(_))
        );
        if let Some(reason) = hidden_as.clone()
            && !off
        {
            self.hidden.insert(descriptor.name.clone(), reason);
            return false;
        }
        let timeout = limits
            .and_then(|o| o.timeout)
            .or(descriptor.timeout)
            .unwrap_or(settings.default_timeout);
        let rate_limit = limits
            .and_then(|o| o.rate_limit.clone())
            .or_else(|| descriptor.rate_limit.clone());
        let limiter = rate_limit
            .as_ref()
            .filter(|_| !off)
            .map(|limit| (self.limiter_for)(&descriptor.name, limit));
        let (policy, policy_origin) = settings.policies.resolve(&descriptor);
        let approval_message = limits.and_then(|o| o.approval_message.clone());
        let entry = Arc::new(ToolEntry {
            descriptor,
            policy,
            policy_origin,
            timeout,
            rate_limit,
            approval_message,
            source: Arc::clone(source),
            limiter,
            arguments: plan,
            input_schema: OnceLock::new(),
            output_schema: OnceLock::new(),
        });
        if let Some(reason) = hidden_as {
            self.hidden.insert(entry.descriptor.name.clone(), reason);
            self.switched_off.push(entry);
            return false;
        }
        self.taken
            .insert(entry.descriptor.name.clone(), source.id().to_string());
        self.entries.push(entry);
        true
    }
}

/// What an override's arguments that `tool` lacks are reported as.
fn no_such_arguments<'a>(
    setting: &'a str,
    tool: &'a ToolDescriptor,
    missing: Vec<String>,
) -> impl Iterator<Item = StaleOverride> + 'a {
    missing.into_iter().map(move |argument| StaleOverride {
        setting: format!("{setting}.arguments.{argument}"),
        tool: tool.name.clone(),
        reason: format!(
            "the tool `{}` has no argument `{argument}`",
            tool.original_name
        ),
    })
}

fn hidden_reason(
    descriptor: &ToolDescriptor,
    limits: Option<&ToolOverride>,
    settings: &HubSettings,
    taken: &HashMap<String, String>,
) -> Option<HiddenReason> {
    if settings.disabled_sources.contains(&descriptor.source) {
        return Some(HiddenReason::DisabledSource(descriptor.source.clone()));
    }
    if let Some(owner) = taken.get(&descriptor.name) {
        return Some(HiddenReason::NameTaken(owner.clone()));
    }
    if let Some(why) = &descriptor.held {
        return Some(HiddenReason::Held(why.clone()));
    }
    if limits.and_then(|o| o.enabled) == Some(false) {
        return Some(HiddenReason::DisabledTool);
    }
    let name = &descriptor.name;
    if let Some(p) = settings.filters.exclude.iter().find(|p| p.matches(name)) {
        return Some(HiddenReason::Excluded(p.as_str().to_string()));
    }
    if !settings.filters.include.is_empty()
        && !settings.filters.include.iter().any(|p| p.matches(name))
    {
        return Some(HiddenReason::NotIncluded);
    }
    None
}

/// Source ids that configuration switched off.
pub(crate) type DisabledSources = HashSet<String>;

/// Whether a count is zero, for leaving it out of JSON.
fn is_zero(count: &usize) -> bool {
    *count == 0
}
