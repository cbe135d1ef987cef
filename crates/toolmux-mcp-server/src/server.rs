//! The MCP server: rmcp's `ServerHandler` over a hub. One `McpServer` value is one MCP session
//! (the stdio connection, or one `Mcp-Session-Id` over HTTP), or, for a 2026-07-28 client over
//! HTTP, one request; the hub and the cached tool list are shared between them.

// rmcp marks MCP logging deprecated (SEP-2577, protocol 2026-07-28); the handshake-era
// revisions toolmux serves still define `logging/setLevel` and `notifications/message`.
#![allow(deprecated)]

use std::borrow::Cow;
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use rmcp::ErrorData as McpError;
use rmcp::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CompleteRequestParams, CompleteResult,
    ContentBlock, ErrorCode, GetPromptRequestParams, GetPromptResponse, Implementation,
    InitializeResult, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult,
    ListToolsResult, LoggingLevel, LoggingMessageNotificationParam, PaginatedRequestParams,
    ProtocolVersion, ReadResourceRequestParams, ReadResourceResponse, Resource, ServerCapabilities,
    ServerConfig, SetLevelRequestParams, SubscribeRequestParams, SubscriptionFilter, Tool,
    UnsubscribeRequestParams,
};
use rmcp::service::{NotificationContext, RequestContext, RoleServer, SubscriptionContext};
use serde_json::{Value, json};
use tokio_util::sync::{CancellationToken, DropGuard};
use toolmux_core::{CALL_TOOL, CallContext, CallError, Catalog, Channel, Hub, Rights, ToolScope};

use crate::approval::{ElicitationApprover, QueuedApprover, SessionGrants};
use crate::backchannel;
use crate::convert::{View, wire_result};
use crate::input_required::{FormApprover, Forms, Next, Round, Rounds};
use crate::listen::{Listener, accepted_filter, announce_changes, listen_stream};
use crate::options::ServeOptions;
use crate::relay::{Relay, Subscriptions};
use crate::revision::{Audience, NEWEST_SUPPORTED, hinted, is_stateless, request_log_level};

/// What every session of one server shares: the hub, the options, and the tool list computed for
/// the current catalog version.
pub(crate) struct Shared {
    pub(crate) hub: Hub,
    pub(crate) options: ServeOptions,
    /// What calls through this server may reach, carried in every call's context: the
    /// serve-time filters' scope; for an endpoint, what a request already past its door gets
    /// once the endpoint is taken out of the configuration: nothing. See [`Shared::scope`].
    scope: Arc<ToolScope>,
    view: RwLock<Option<Arc<View>>>,
    /// Each configured principal's view, for the catalog version it was made from: at most
    /// one per principal (the configuration bounds their number), dropped when it is stale.
    caller_views: RwLock<std::collections::HashMap<String, Arc<View>>>,
    /// The relayed listings for a catalog version and built-in resource generation: every
    /// session compares against them after a change, so one session computes them (a listing
    /// of the spec resources walks the specs directory) and the others reuse them.
    listings: tokio::sync::Mutex<Option<(ListingsKey, Arc<RelayedListings>)>>,
    /// The calls of 2026-07-28 clients waiting on a form, and the key of their
    /// `requestState`; `None` when no key could be drawn.
    rounds: Option<Arc<Rounds>>,
}

/// What a relayed listing is current for: the catalog's version and the built-in resources'
/// change generation.
type ListingsKey = (u64, u64);

impl Shared {
    /// `rounds`: the calls parked for 2026-07-28 clients and their key, one for the whole
    /// server (every door shares it, so its caps are the server's).
    pub(crate) fn new(hub: Hub, options: ServeOptions, rounds: Option<Arc<Rounds>>) -> Arc<Self> {
        Arc::new(Self {
            hub,
            scope: Arc::new(match &options.endpoint {
                Some(name) => ToolScope::nothing(format!(
                    "the endpoint `{name}`, which is no longer configured"
                )),
                None => options.scope(),
            }),
            options,
            view: RwLock::new(None),
            caller_views: RwLock::default(),
            listings: tokio::sync::Mutex::new(None),
            rounds,
        })
    }

    /// What calls through this server may reach with `catalog`: the serve-time filters, or
    /// the endpoint's scope as that catalog holds it, so an endpoint follows configuration
    /// changes as the tools do.
    pub(crate) fn scope_in(&self, catalog: &Catalog) -> Arc<ToolScope> {
        let endpoint = self.options.endpoint.as_deref();
        match endpoint.and_then(|name| catalog.endpoints().get(name)) {
            Some(endpoint) => Arc::clone(&endpoint.scope),
            None => Arc::clone(&self.scope),
        }
    }

    /// [`Shared::scope_in`] narrowed to what `rights` grant: the scope of one caller's calls.
    /// A caller whose roles do not open this door gets nothing through it.
    pub(crate) fn caller_scope_in(
        &self,
        catalog: &Catalog,
        rights: Option<Arc<Rights>>,
    ) -> Arc<ToolScope> {
        let scope = self.scope_in(catalog);
        let Some(rights) = rights else {
            return scope;
        };
        let door = self.options.endpoint.as_deref().unwrap_or_default();
        Arc::new(scope.for_caller(rights, door))
    }

    /// The tools one caller is shown: [`Shared::view`] for a caller no principal's rights
    /// narrow, else its principal's own view, made once per catalog version.
    pub(crate) fn caller_view(&self, rights: Option<Arc<Rights>>) -> Arc<View> {
        let Some(rights) = rights else {
            return self.view();
        };
        let catalog = self.hub.catalog();
        let views = &self.caller_views;
        if let Some(view) = views
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&rights.principal)
            && view.version == catalog.version()
        {
            return Arc::clone(view);
        }
        let principal = rights.principal.clone();
        let view = Arc::new(View::new(
            &catalog,
            &self.caller_scope_in(&catalog, Some(rights)),
        ));
        let mut views = views.write().unwrap_or_else(PoisonError::into_inner);
        views.retain(|_, v| v.version == catalog.version());
        views.insert(principal, Arc::clone(&view));
        view
    }

    /// [`Shared::scope_in`] the hub's current catalog.
    pub(crate) fn scope(&self) -> Arc<ToolScope> {
        self.scope_in(&self.hub.catalog())
    }

    /// The served tools for the hub's current catalog, computed once per catalog version.
    pub(crate) fn view(&self) -> Arc<View> {
        let catalog = self.hub.catalog();
        if let Some(view) = &*self.view.read().unwrap_or_else(PoisonError::into_inner)
            && view.version == catalog.version()
        {
            return Arc::clone(view);
        }
        let mut slot = self.view.write().unwrap_or_else(PoisonError::into_inner);
        match &*slot {
            // Another session rebuilt it meanwhile, or saw a newer catalog: keep the newer.
            Some(view) if view.version >= catalog.version() => Arc::clone(view),
            _ => {
                let view = Arc::new(View::new(&catalog, &self.scope_in(&catalog)));
                *slot = Some(Arc::clone(&view));
                view
            }
        }
    }

    /// The upstream servers' prompts and resources, and toolmux's own resources, as this
    /// server serves them, when it has any to serve.
    pub(crate) fn relay(&self) -> Option<Relay<'_>> {
        if self.options.upstreams.is_none() && self.options.resources.is_empty() {
            return None;
        }
        Some(Relay {
            upstreams: self.options.upstreams.as_ref(),
            scope: self.scope(),
            resources: &self.options.resources,
            hub: &self.hub,
            session: None,
        })
    }

    /// What the relayed listings are now, to tell whether they changed: made once per catalog
    /// version and built-in resource generation, shared by every session.
    pub(crate) async fn relayed_listings(&self) -> Option<Arc<RelayedListings>> {
        let relay = self.relay()?;
        let key = (
            self.hub.catalog().version(),
            self.options.resources.generation(),
        );
        // Held while listing, so that sessions woken by the same change wait for one listing.
        let mut slot = self.listings.lock().await;
        if let Some((made_for, listings)) = &*slot
            && *made_for == key
        {
            return Some(Arc::clone(listings));
        }
        let listings = Arc::new(RelayedListings {
            prompts: relay.prompts().await.into_iter().map(|p| p.name).collect(),
            resources: relay.resources().await,
            templates: relay
                .resource_templates()
                .into_iter()
                .map(|t| t.uri_template)
                .collect(),
        });
        *slot = Some((key, Arc::clone(&listings)));
        Some(listings)
    }
}

/// The names of the relayed prompts, the served resources (whole: a spec's title or status
/// shows in its entry, so a change of either is a change of the list) and the URIs of the
/// templates.
#[derive(PartialEq)]
pub(crate) struct RelayedListings {
    pub(crate) prompts: Vec<String>,
    pub(crate) resources: Vec<Resource>,
    pub(crate) templates: Vec<String>,
}

/// One MCP session's own state.
struct Session {
    /// Used as the execution log's session id when the transport has none of its own (stdio).
    id: String,
    grants: Arc<SessionGrants>,
    /// The level the client asked for with `logging/setLevel`. toolmux sends its own messages
    /// only once the client asked; relayed ones are filtered by it once set.
    log_level: Arc<Mutex<Option<LoggingLevel>>>,
    /// Resources the client subscribed to.
    subscriptions: Subscriptions,
    /// The way back the upstream servers served per client use for this session.
    link: crate::relay::SessionLink,
    /// Stops this session's catalog watcher when the session ends (the server value is dropped).
    stop: CancellationToken,
    _stop_on_drop: DropGuard,
    /// Counts the session in `ServeOptions::live_sessions` until it ends.
    _live: crate::sessions::LiveSession,
}

/// toolmux's MCP server: serves the hub's catalog as `tools/list`, runs `tools/call` through the
/// hub's pipeline on the `mcp` channel, asks for approvals by elicitation, and announces catalog
/// changes with `notifications/tools/list_changed`.
pub struct McpServer {
    shared: Arc<Shared>,
    session: Session,
}

impl McpServer {
    /// A server for one session over `hub`.
    pub fn new(hub: Hub, options: ServeOptions) -> Self {
        Self::for_session(Shared::new(hub, options, Rounds::new().map(Arc::new)))
    }

    /// A new session sharing `shared` with the server's other sessions.
    pub(crate) fn for_session(shared: Arc<Shared>) -> Self {
        let stop = CancellationToken::new();
        let live = shared.options.live_sessions.enter();
        Self {
            shared,
            session: Session {
                id: format!("mcp-{}", uuid::Uuid::now_v7()),
                grants: Arc::default(),
                log_level: Arc::default(),
                subscriptions: Subscriptions::default(),
                link: crate::relay::SessionLink::default(),
                _stop_on_drop: stop.clone().drop_guard(),
                stop,
                _live: live,
            },
        }
    }

    /// The tools this server serves now, as `tools/list` returns them.
    pub fn tools(&self) -> Vec<Tool> {
        self.shared.view().tools.clone()
    }

    /// The relay, or the error for a client asking for prompts or resources of a server that
    /// relays none.
    fn relay(&self) -> Result<Relay<'_>, McpError> {
        self.shared.relay().ok_or_else(|| {
            McpError::new(
                ErrorCode::METHOD_NOT_FOUND,
                "this toolmux server relays no upstream MCP servers",
                None,
            )
        })
    }

    /// The relay as the request's caller may see it: narrowed by its rights, if any.
    fn caller_relay(&self, context: &RequestContext<RoleServer>) -> Result<Relay<'_>, McpError> {
        let mut relay = self.relay()?;
        let catalog = self.shared.hub.catalog();
        relay.scope = self
            .shared
            .caller_scope_in(&catalog, rights_of(context, &catalog));
        Ok(relay)
    }

    /// The relay for one request of this session: servers served per client answer it on the
    /// session's own upstream connection. A stateless request has no session, so its servers
    /// answer on their shared connection.
    fn relay_in(&self, context: &RequestContext<RoleServer>) -> Result<Relay<'_>, McpError> {
        let mut relay = self.caller_relay(context)?;
        if !is_stateless(context) {
            relay.session = Some(self.session_of(context));
        }
        Ok(relay)
    }

    /// The log level `context`'s messages are filtered by: the session's (`logging/setLevel`)
    /// in the handshake era, the request's own `_meta` one for a stateless request.
    fn log_level_for(
        &self,
        context: &RequestContext<RoleServer>,
    ) -> Arc<Mutex<Option<LoggingLevel>>> {
        if is_stateless(context) {
            request_log_level(context)
        } else {
            Arc::clone(&self.session.log_level)
        }
    }

    /// The request's session id (the transport's, else this server's own), with the session
    /// attached to the servers served per client.
    fn session_of(&self, context: &RequestContext<RoleServer>) -> String {
        let session = http_session_id(context).unwrap_or_else(|| self.session.id.clone());
        let upstreams = self.shared.options.upstreams.as_ref();
        let level = &self.session.log_level;
        (self.session.link).attach(upstreams, &session, &context.peer, level);
        session
    }

    /// The context of a call: `forms` are where a 2026-07-28 client that shows forms is asked
    /// (by input-required results); every other client is asked as before.
    fn call_context(
        &self,
        context: &RequestContext<RoleServer>,
        served_name: &str,
        forms: Option<&Forms>,
    ) -> CallContext {
        let stateless = is_stateless(context);
        let catalog = self.shared.hub.catalog();
        let scope = self
            .shared
            .caller_scope_in(&catalog, rights_of(context, &catalog));
        let mut call = CallContext::new(Channel::Mcp).with_scope(scope);
        // A stateless request belongs to no session: its calls reach the upstream servers on
        // their shared connections, and nothing is granted "for this session".
        if !stateless {
            call = call.with_session(self.session_of(context));
        }
        call.caller = caller_of(context);
        if let Some(forms) = forms {
            // The client answers every form itself, on its retry.
            let approver = FormApprover::new(served_name.to_string(), forms.clone());
            return call.with_approver(Arc::new(approver));
        }
        // 2026-07-28 has no server-to-client requests: a stateless client that cannot show
        // forms (no elicitation capability) has its approvals wait in the queue below.
        let elicits = !stateless && shows_forms(context);
        let client = elicits.then(|| {
            ElicitationApprover::new(
                context.peer.clone(),
                Arc::clone(&self.session.grants),
                served_name.to_string(),
            )
        });
        // Where the process has a queue a person answers out of band (`toolmux serve`), the
        // client's approvals and questions wait there too.
        match (client, &self.shared.options.people) {
            (client, Some(queue)) => {
                call = call.with_approver(Arc::new(QueuedApprover::new(client, Arc::clone(queue))));
            }
            (Some(client), None) => call = call.with_approver(Arc::new(client)),
            (None, None) => {}
        }
        call
    }

    /// The rounds of a `tools/call` from a 2026-07-28 client that shows forms (its request
    /// declares the elicitation capability); `None` for every other client.
    fn rounds_for(&self, context: &RequestContext<RoleServer>) -> Option<&Rounds> {
        let rounds = self.shared.rounds.as_deref()?;
        (is_stateless(context) && shows_forms(context)).then_some(rounds)
    }

    /// This request's round of a call of a client that shows forms: a new call, or the one its
    /// `requestState` continues.
    fn round<'a>(
        &'a self,
        rounds: &'a Rounds,
        registry_name: &str,
        request: CallToolRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<Round<'a>, McpError> {
        let caller = parked_caller_of(context);
        let door = self.shared.options.endpoint.as_deref().unwrap_or_default();
        if let Some(sealed) = request.request_state.as_deref() {
            let resumed = rounds.resume(
                sealed,
                door,
                &caller,
                &request.name,
                request.arguments.as_ref(),
                request.input_responses.as_ref(),
            )?;
            return Ok(resumed);
        }
        let (mut round, forms) =
            rounds.start(door, &caller, &request.name, request.arguments.as_ref());
        let (back, delivery) = backchannel::for_call(
            context.peer.clone(),
            context.meta.get_progress_token(),
            self.log_level_for(context),
        );
        let call_context = self
            .call_context(context, &request.name, Some(&forms))
            .with_backchannel(back);
        let delivery = delivery.with_forms(forms, self.shared.hub.settings().approval_timeout);
        let hub = self.shared.hub.clone();
        let name = registry_name.to_string();
        let arguments = request.arguments.map(Value::Object).unwrap_or(Value::Null);
        round.spawn(async move {
            delivery
                .run(hub.call(&name, arguments, &call_context))
                .await
        });
        Ok(round)
    }

    /// The answer to a `tools/call` whose call ended with `result`.
    async fn respond(
        &self,
        result: Result<toolmux_core::ToolResult, CallError>,
        served_name: &str,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        match result {
            Ok(result) => Ok(wire_result(result).into()),
            // The catalog changed between the lookup above and the call.
            Err(
                e @ (CallError::NotFound { .. }
                | CallError::Disabled { .. }
                | CallError::NotServed { .. }),
            ) => Err(McpError::invalid_params(
                e.to_string(),
                Some(json!({ "tool": served_name })),
            )),
            Err(e) => {
                self.log(
                    context,
                    level_of(&e),
                    json!({ "tool": served_name, "code": e.code(), "error": e.to_string() }),
                )
                .await;
                Ok(CallToolResult::error(vec![ContentBlock::text(e.to_string())]).into())
            }
        }
    }

    /// Sends a `notifications/message` when the client asked for messages at this level.
    async fn log(&self, context: &RequestContext<RoleServer>, level: LoggingLevel, data: Value) {
        let wanted = *self
            .log_level_for(context)
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let Some(wanted) = wanted else { return };
        if severity(level) < severity(wanted) {
            return;
        }
        let mut message = LoggingMessageNotificationParam::new(level, data);
        message.logger = Some("toolmux".into());
        if let Err(e) = context.peer.notify_logging_message(message).await {
            tracing::debug!(error = %e, "could not send a log message to the MCP client");
        }
    }
}

/// Who makes a request: the subject of its access token, when it came with one, else the name
/// the client gave itself.
fn caller_of(context: &RequestContext<RoleServer>) -> Option<String> {
    context
        .extensions
        .get::<axum::http::request::Parts>()
        .and_then(|parts| parts.extensions.get::<toolmux_http::Principal>())
        .map(toolmux_http::Principal::caller)
        .or_else(|| context.client_info().map(|info| info.name))
}

/// Who a parked call counts against: a principal by its name, else the client by the name it
/// gives itself — kept apart, so a client cannot name itself after a principal and use up that
/// principal's share.
fn parked_caller_of(context: &RequestContext<RoleServer>) -> String {
    let principal = context
        .extensions
        .get::<axum::http::request::Parts>()
        .and_then(|parts| parts.extensions.get::<toolmux_http::Principal>())
        .map(toolmux_http::Principal::caller);
    match principal {
        Some(name) => format!("principal:{name}"),
        None => format!(
            "client:{}",
            context
                .client_info()
                .map(|info| info.name)
                .unwrap_or_default()
        ),
    }
}

/// What the request's caller may do, when a configured principal's rights narrow it: a
/// credential that is not the owner's, once principals or roles are configured (one matched by
/// no principal gets nothing). The owner's credentials are not narrowed.
fn rights_of(context: &RequestContext<RoleServer>, catalog: &Catalog) -> Option<Arc<Rights>> {
    let principal = context
        .extensions
        .get::<axum::http::request::Parts>()
        .and_then(|parts| parts.extensions.get::<toolmux_http::Principal>())?;
    if principal.owner {
        return None;
    }
    catalog.principals().rights_of(principal.name.as_deref())
}

/// The cache hint for a list that depends on the caller's rights (`private`) or not.
fn audience_of(rights: Option<&Arc<Rights>>) -> Audience {
    if rights.is_some() {
        Audience::Caller
    } else {
        Audience::Everyone
    }
}

/// Whether the client can show a form: it declared form elicitation, at `initialize` or, in
/// 2026-07-28, in the request's own `_meta`.
fn shows_forms(context: &RequestContext<RoleServer>) -> bool {
    if is_stateless(context) {
        let form = context
            .client_capabilities()
            .and_then(|capabilities| capabilities.elicitation);
        // A capability that names neither mode means form (as rmcp reads it at `initialize`).
        return form.is_some_and(|e| e.form.is_some() || e.url.is_none());
    }
    context
        .peer
        .supported_elicitation_modes()
        .contains(&rmcp::service::ElicitationMode::Form)
}

/// The `Mcp-Session-Id` of the HTTP request a call came in, when it came over HTTP.
fn http_session_id(context: &RequestContext<RoleServer>) -> Option<String> {
    let parts = context.extensions.get::<axum::http::request::Parts>()?;
    let id = parts.headers.get("mcp-session-id")?.to_str().ok()?;
    Some(id.to_string())
}

/// A level's rank in syslog order, as MCP defines it (the core's `LogLevel` orders that way).
pub(crate) fn severity(level: LoggingLevel) -> toolmux_core::LogLevel {
    toolmux_upstream::wire::log_level_from_wire(level)
}

/// The log level a refused or failed call is reported at.
fn level_of(error: &CallError) -> LoggingLevel {
    match error {
        CallError::Timeout { .. } | CallError::Unavailable { .. } | CallError::Failed { .. } => {
            LoggingLevel::Error
        }
        _ => LoggingLevel::Warning,
    }
}

/// Why a `tools/call` names no served tool, as the JSON-RPC error MCP prescribes for unknown
/// tools (-32602, invalid params). Every other failure is a result with `isError: true`, which
/// the model reads and can act on.
fn unknown_tool(shared: &Shared, view: &View, name: &str) -> McpError {
    let catalog = shared.hub.catalog();
    let scope = shared.scope_in(&catalog);
    let context = CallContext::new(Channel::Mcp).with_scope(Arc::clone(&scope));
    let error = match catalog.resolve(name, &context) {
        // Clients know tools by their served names (which pass-through mode changes), so the
        // suggestion comes from what this server lists.
        Err(CallError::NotFound { name, .. }) => CallError::NotFound {
            suggestion: view.suggest(&name).map(str::to_string),
            name,
        },
        Err(refused) => refused,
        // In the scope but not listed: code mode (`--code-mode`, or an endpoint's `codeMode`) and
        // discovery mode list only their entry points. The refusal names what the client
        // connected to and how to reach the tool instead.
        Ok(_) => {
            let discovery = scope.entry_points.iter().any(|p| p == CALL_TOOL);
            let entry_points = scope
                .entry_points
                .join(if discovery { ", " } else { " and " });
            let (mode, how) = if discovery {
                ("discovery mode", "call it with call_tool")
            } else {
                ("code mode", "call it from a script")
            };
            CallError::NotServed {
                name: name.to_string(),
                served_by: match shared.options.endpoint.as_deref() {
                    Some(endpoint) => format!(
                        "the endpoint `{endpoint}` as a tool of its own (its {mode} serves \
                         {entry_points}; {how})"
                    ),
                    None if discovery => format!(
                        "this MCP server as a tool of its own (discovery mode serves \
                         {entry_points}; {how})"
                    ),
                    None => format!(
                        "this MCP server as a tool of its own (--code-mode serves \
                         {entry_points}; {how})"
                    ),
                },
            }
        }
    };
    McpError::invalid_params(error.to_string(), Some(json!({ "tool": name })))
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        let mut capabilities = ServerCapabilities::builder()
            .enable_logging()
            .enable_tools()
            .enable_tool_list_changed()
            .build();
        if self.shared.options.upstreams.is_some() {
            // Servers can be added while a session lasts, so relaying is announced whenever
            // there is something to relay from, even before any server lists a prompt.
            let relaying = ServerCapabilities::builder()
                .enable_prompts()
                .enable_prompts_list_changed()
                .enable_completions()
                .build();
            capabilities.prompts = relaying.prompts;
            capabilities.completions = relaying.completions;
        }
        if self.shared.relay().is_some() {
            // Resources come from the servers, from toolmux's own providers, or both; either
            // can change while a session lasts, and both can be subscribed to.
            let resources = ServerCapabilities::builder()
                .enable_resources()
                .enable_resources_subscribe()
                .enable_resources_list_changed()
                .enable_prompts()
                .enable_prompts_list_changed()
                .build();
            capabilities.resources = resources.resources;
            // toolmux's own packs offer prompts too (skills as `skill__NAME`).
            capabilities.prompts = resources.prompts;
        }
        let catalog = self.shared.hub.catalog();
        let sources: Vec<String> = catalog
            .sources()
            .iter()
            .filter(|s| s.enabled && s.tool_count > 0)
            .map(|s| format!("{} ({} tools)", s.id, s.tool_count))
            .collect();
        let configured = (self.shared.options.endpoint.as_deref())
            .and_then(|name| catalog.endpoints().get(name))
            .and_then(|endpoint| endpoint.instructions.clone());
        let instructions = configured.unwrap_or_else(|| {
            format!(
                "toolmux serves one registry of tools; calls pass through its policies, \
                 validation and execution log. Sources: {}.",
                if sources.is_empty() {
                    "none".to_string()
                } else {
                    sources.join(", ")
                }
            )
        });
        InitializeResult::new(capabilities)
            .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
            .with_server_info(
                Implementation::new("toolmux", env!("CARGO_PKG_VERSION")).with_title("toolmux"),
            )
            .with_instructions(instructions)
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(ProtocolVersion::known_up_to(&NEWEST_SUPPORTED))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let rights = rights_of(&context, &self.shared.hub.catalog());
        let audience = audience_of(rights.as_ref());
        let tools = ListToolsResult::with_all_items(self.shared.caller_view(rights).tools.clone());
        Ok(hinted(tools, &context, audience))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.shared.view().tool(name).cloned()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let view = self.shared.view();
        let Some(registry_name) = view
            .registry_name(&request.name)
            .or_else(|| view.denied(&request.name))
        else {
            return Err(unknown_tool(&self.shared, &view, &request.name));
        };
        if let Some(rounds) = self.rounds_for(&context) {
            let served_name = request.name.to_string();
            let round = self.round(rounds, registry_name, request, &context)?;
            let next = tokio::select! {
                next = round.next() => next?,
                // As below; dropping the round stops its call.
                () = context.ct.cancelled() => {
                    return Err(McpError::new(ErrorCode::INTERNAL_ERROR, "the request was cancelled", None));
                }
            };
            return match next {
                Next::InputRequired(asked) => Ok(asked.into()),
                Next::Done(result) => self.respond(result, &served_name, &context).await,
            };
        }
        let (back, delivery) = backchannel::for_call(
            context.peer.clone(),
            context.meta.get_progress_token(),
            self.log_level_for(&context),
        );
        let call_context = self
            .call_context(&context, &request.name, None)
            .with_backchannel(back);
        let arguments = request.arguments.map(Value::Object).unwrap_or(Value::Null);
        let call = delivery.run(
            self.shared
                .hub
                .call(registry_name, arguments, &call_context),
        );
        let result = tokio::select! {
            result = call => result,
            // The client cancelled the request (`notifications/cancelled`) or went away: drop
            // the call, which stops the tool. rmcp sends no response to a cancelled request.
            () = context.ct.cancelled() => {
                return Err(McpError::new(ErrorCode::INTERNAL_ERROR, "the request was cancelled", None));
            }
        };
        self.respond(result, &request.name, &context).await
    }

    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        *self
            .session
            .log_level
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(request.level);
        if let Ok(relay) = self.relay_in(&context) {
            relay.set_level(request.level).await;
        }
        Ok(())
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        let audience = audience_of(rights_of(&context, &self.shared.hub.catalog()).as_ref());
        let prompts =
            ListPromptsResult::with_all_items(self.caller_relay(&context)?.prompts().await);
        Ok(hinted(prompts, &context, audience))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        let result = self.relay_in(&context)?.get_prompt(request).await?;
        Ok(GetPromptResponse::Complete(result))
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        let audience = audience_of(rights_of(&context, &self.shared.hub.catalog()).as_ref());
        let resources =
            ListResourcesResult::with_all_items(self.caller_relay(&context)?.resources().await);
        Ok(hinted(resources, &context, audience))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        let templates = ListResourceTemplatesResult::with_all_items(
            self.caller_relay(&context)?.resource_templates(),
        );
        let audience = audience_of(rights_of(&context, &self.shared.hub.catalog()).as_ref());
        Ok(hinted(templates, &context, audience))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let result = self.relay_in(&context)?.read_resource(request).await?;
        Ok(ReadResourceResponse::Complete(hinted(
            result,
            &context,
            Audience::Caller,
        )))
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let relay = self.relay_in(&context)?;
        self.session
            .subscriptions
            .subscribe(
                &relay,
                request.uri,
                Listener::Session(context.peer),
                &self.session.stop,
            )
            .await
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        // A URI this server cannot follow is told in the log, and the stream stays open for
        // the others.
        Some(accepted_filter(requested))
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), McpError> {
        listen_stream(Arc::clone(&self.shared), &self.session.stop, context).await
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.relay()?;
        self.session.subscriptions.unsubscribe(&request.uri);
        Ok(())
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, McpError> {
        self.relay_in(&context)?.complete(request).await
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        tokio::spawn(announce_changes(
            Arc::clone(&self.shared),
            Listener::Session(context.peer),
            self.session.stop.clone(),
        ));
    }
}
