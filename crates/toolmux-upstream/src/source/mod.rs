//! One configured MCP server as a tool source: its tools come from the discovery cache (listing
//! never starts it), its process or connection is opened on the first call and closed when idle,
//! and its faults stay its own.
//!
//! [`UpstreamSource`] is the source and its public face (tools, status, calls, relayed
//! requests, subscriptions); the `supervisor` starts the server, keeps its health, backs off
//! and stops it when idle; `discovery` lists its tools and keeps the cache; `clients` keeps
//! the per-client connections of a server served per client; `calls` runs a call and retries
//! it where a dropped connection makes that safe.

mod calls;
mod clients;
mod discovery;
mod supervisor;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock, Weak};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use backon::{ExponentialBuilder, Retryable};
use chrono::Utc;
use serde_json::Value;
use toolmux_config::UpstreamServer;
use toolmux_core::{
    ChangeNotifier, Content, LogLevel, Source, SourceCall, SourceError, SourceKind, SourceState,
    SourceStatus, ToolDescriptor, ToolResult,
};

use rmcp::model::{
    CompleteRequestParams, CompleteResult, GetPromptRequestParams, GetPromptResult, Prompt,
    ReadResourceRequestParams, ReadResourceResult, Resource, ResourceTemplate,
};
use rmcp::service::ServiceError;
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use toolmux_trust::ItemKind;

use crate::cache::{
    CachedTool, DiscoveryRecord, DiscoveryStatus, ServerIdentity, ServerOffers, ServerPaths,
};
use crate::callers::{Callers, Outlet};
use crate::connection::{Connection, Endpoint, Handler, InFlight, ServerHooks, describe};
use crate::error::UpstreamError;
use crate::names::registry_names;
use crate::schema;

pub use calls::CALL_RETRIES;
pub use discovery::DiscoveryOutcome;
pub use supervisor::Backoff;

use clients::Clients;
pub use clients::ResourceUpdate;

use discovery::{descriptors, lists_changed};
use supervisor::{Health, watch_idle};

/// How long a relayed request (a prompt, a resource, a completion) may take when the server
/// sets no `toolTimeoutMs`.
const RELAY_TIMEOUT: Duration = Duration::from_secs(60);
/// Resource-change notifications kept for a slow subscriber before it misses some.
const UPDATES_BUFFER: usize = 256;

/// One configured MCP server as a [`Source`]. Cheap to clone; clones share the server.
#[derive(Clone)]
pub struct UpstreamSource {
    inner: Arc<Inner>,
}

struct Inner {
    name: String,
    /// Why it is never started ([`ServerSpec::unavailable`]).
    unavailable: Option<String>,
    /// What can change while the server runs (see [`UpstreamSource::reconfigure`]).
    settings: RwLock<Settings>,
    endpoint: Endpoint,
    config_hash: String,
    paths: ServerPaths,
    backoff: Backoff,
    view: RwLock<View>,
    slot: tokio::sync::Mutex<Option<Arc<Connection>>>,
    health: Mutex<Health>,
    notifier: Mutex<Option<ChangeNotifier>>,
    discovery: tokio::sync::Mutex<()>,
    last_used: Mutex<Instant>,
    /// Set when a configuration change replaced or removed this server: it is never started
    /// again, and subscribers follow its URIs elsewhere.
    retired: CancellationToken,
    /// A rediscovery is queued (list-changed notifications are coalesced into one).
    rediscovery_queued: AtomicBool,
    /// Resources someone subscribed to, with how many subscriptions each; they keep the server
    /// running and are renewed when it restarts.
    subscriptions: Mutex<BTreeMap<String, usize>>,
    /// Subscribed resources the server says changed.
    updates: broadcast::Sender<ResourceUpdate>,
    /// Connections of downstream sessions, when the server is served per client.
    clients: Clients,
}

/// A server's configuration and the prefix of its registry names. Lock order: `view` before
/// `settings` when both are held.
struct Settings {
    server: Arc<UpstreamServer>,
    prefix: String,
}

/// The prefix of a server's registry names: the configured one, else one from its name.
fn prefix_of(name: &str, server: &UpstreamServer) -> String {
    server.prefix.as_ref().map_or_else(
        || {
            toolmux_config::Prefix::from_server_name(name)
                .as_str()
                .to_string()
        },
        |p| p.as_str().to_string(),
    )
}

/// What `tools()` and `status()` read: the cache record, its tools held against the server's
/// pins, and the descriptors made from both.
struct View {
    record: DiscoveryRecord,
    held: Vec<toolmux_trust::pins::Held>,
    tools: Arc<Vec<ToolDescriptor>>,
    discovering: bool,
}

/// What an [`UpstreamSource`] is made from.
#[derive(Clone, Debug)]
pub struct ServerSpec {
    /// The server's name (the source id).
    pub name: String,
    /// Its checked configuration, with `${VAR}` references expanded.
    pub server: UpstreamServer,
    /// The hash of its unexpanded entry ([`crate::config_hash`]).
    pub config_hash: String,
    /// Why it cannot be started, when its entry names a variable or secret that is not set
    /// ([`toolmux_config::UnavailableServer`]): it is shown with this reason and never started.
    pub unavailable: Option<String>,
}

impl UpstreamSource {
    /// A source for one server. Reads its discovery cache; starts nothing.
    pub fn new(
        spec: ServerSpec,
        project_dir: &std::path::Path,
        state_dir: &std::path::Path,
        backoff: Backoff,
    ) -> Self {
        let ServerSpec {
            name,
            server,
            config_hash,
            unavailable,
        } = spec;
        let prefix = prefix_of(&name, &server);
        let paths = ServerPaths::new(state_dir, &name);
        let record = match DiscoveryRecord::read(&paths.cache) {
            Some(record) if record.config_hash == config_hash => record,
            // Discovered with another configuration: its tools are still offered, so that
            // their names stay known; the first call starts the server with the configuration
            // now in force and discovers them again (the record keeps the old hash until then).
            Some(mut record) => {
                record.discovery_status = DiscoveryStatus::Never;
                record.discovery_error = Some(format!(
                    "the configuration changed since the last discovery; the tools shown are \
                     from the earlier one until the next call or `toolmux mcp refresh {name}` \
                     discovers them again"
                ));
                record
            }
            None => DiscoveryRecord::never(&name, &config_hash),
        };
        let mut record = record;
        if let Some(reason) = &unavailable {
            // Tools from an earlier discovery would be offered only to fail: none are.
            record.discovery_status = DiscoveryStatus::Failed;
            record.discovery_error = Some(reason.clone());
            record.tools.clear();
        }
        // Judged against the pins as they are; only a discovery or a person pins anything.
        let stored = crate::pinning::read(&name, &crate::pinning::pins_path(&paths.cache));
        let held = crate::pinning::judged(&stored, &record, server.trust).held;
        let tools = Arc::new(descriptors(&name, &prefix, &server, &record, &held));
        let endpoint = Endpoint {
            server: name.clone(),
            transport: server.transport.clone(),
            project_dir: project_dir.to_path_buf(),
            log: paths.log.clone(),
            startup_timeout: server.startup_timeout,
            oauth: server.oauth.clone(),
        };
        Self {
            inner: Arc::new(Inner {
                name,
                unavailable,
                settings: RwLock::new(Settings {
                    server: Arc::new(server),
                    prefix,
                }),
                endpoint,
                config_hash,
                paths,
                backoff,
                view: RwLock::new(View {
                    record,
                    held,
                    tools,
                    discovering: false,
                }),
                slot: tokio::sync::Mutex::new(None),
                health: Mutex::new(Health::default()),
                notifier: Mutex::new(None),
                discovery: tokio::sync::Mutex::new(()),
                last_used: Mutex::new(Instant::now()),
                retired: CancellationToken::new(),
                rediscovery_queued: AtomicBool::new(false),
                subscriptions: Mutex::default(),
                updates: broadcast::channel(UPDATES_BUFFER).0,
                clients: Clients::default(),
            }),
        }
    }

    /// The server's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The prefix of its tools' registry names.
    pub fn prefix(&self) -> String {
        read(&self.inner.settings).prefix.clone()
    }

    /// Its configuration.
    pub fn server(&self) -> Arc<UpstreamServer> {
        self.inner.server()
    }

    /// The hash of the configuration entry it was made from ([`crate::config_hash`]); the
    /// cache record keeps an earlier one until the server is discovered again.
    pub fn config_hash(&self) -> &str {
        &self.inner.config_hash
    }

    /// Whether `server` differs from this server's configuration only in what can change
    /// while it runs: tool filters, policies, time limits other than start-up, the prefix. The
    /// transport (command, arguments, environment, URL, headers), the start-up limit and
    /// `enabled` decide the process itself.
    pub fn can_reconfigure(&self, server: &UpstreamServer) -> bool {
        let current = self.inner.server();
        current.transport == server.transport
            && current.startup_timeout == server.startup_timeout
            && current.enabled == server.enabled
    }

    /// Applies a configuration for which [`UpstreamSource::can_reconfigure`] holds: its tools
    /// are offered, named and limited anew from the cache, and a new catalog is published;
    /// the running process, its subscriptions and its calls in flight carry on.
    pub fn reconfigure(&self, server: UpstreamServer) {
        let inner = &self.inner;
        let was_idling = inner.server().idle_timeout.is_some();
        let idles = server.idle_timeout.is_some();
        {
            let mut view = write(&inner.view);
            let prefix = prefix_of(&inner.name, &server);
            view.tools = Arc::new(descriptors(
                &inner.name,
                &prefix,
                &server,
                &view.record,
                &view.held,
            ));
            *write(&inner.settings) = Settings {
                server: Arc::new(server),
                prefix,
            };
        }
        inner.notify();
        if idles && !was_idling {
            // The running connection had no idle watcher; give it one.
            let inner = Arc::clone(inner);
            tokio::spawn(async move {
                let conn = inner.slot.lock().await.as_ref().map(Arc::downgrade);
                if let Some(conn) = conn {
                    watch_idle(Arc::downgrade(&inner), conn).await;
                }
            });
        }
    }

    /// Where its stderr and toolmux's notes about it are written.
    pub fn log_path(&self) -> &std::path::Path {
        &self.inner.paths.log
    }

    /// The end of its stderr log (a stdio server's stderr and toolmux's notes about it), at
    /// most 200 lines: what `GET /api/mcp-servers/{name}` shows as `stderrTail`.
    pub async fn stderr_tail(&self) -> Vec<String> {
        let log = self.inner.paths.log.clone();
        match tokio::task::spawn_blocking(move || crate::stdio::stderr_tail(&log)).await {
            Ok(Ok(lines)) => lines,
            Ok(Err(e)) => {
                tracing::warn!(server = %self.name(), error = %e, "cannot read a server's stderr log");
                Vec::new()
            }
            Err(_) => Vec::new(),
        }
    }

    /// Its discovery cache file.
    pub fn cache_path(&self) -> &std::path::Path {
        &self.inner.paths.cache
    }

    /// What signing in to it needs (`toolmux_oauth`); `None` for a stdio server.
    pub fn sign_in_target(&self) -> Option<toolmux_oauth::Target> {
        crate::streamable::sign_in_target(&self.inner.endpoint.project_dir, self)
    }

    /// Whether it reads `needs-sign-in`: its last discovery, or a call since, was refused.
    pub fn needs_sign_in(&self) -> bool {
        crate::streamable::needs_sign_in(&self.inner.endpoint.project_dir, self)
    }

    /// The cache record as it stands.
    pub fn record(&self) -> DiscoveryRecord {
        read(&self.inner.view).record.clone()
    }

    /// What the trust scanner found in its tools' definitions, and what each tool gets under
    /// the server's `onFinding`.
    pub fn findings(&self) -> Vec<toolmux_trust::ToolFindings> {
        let view = read(&self.inner.view);
        discovery::trust_findings(&self.inner.server(), &view.record)
    }

    /// Its tools, prompts and resource templates held until a person accepts them: changed
    /// since they were pinned, renamed, new on a server whose items are pinned, or every one
    /// when its pins cannot be read (see [`toolmux_trust::pins`]).
    pub fn held(&self) -> Vec<toolmux_trust::pins::Held> {
        read(&self.inner.view).held.clone()
    }

    /// Accepts held items (tools, prompts, resource templates, by their own names) as the
    /// server presents them now (every held item when `tools` is empty): they are pinned,
    /// offered again, and a new catalog is published. Returns the names accepted; refuses
    /// (accepting none) when one of `tools` is not held or the pins cannot be read.
    pub async fn trust(&self, tools: &[String]) -> Result<Vec<String>, UpstreamError> {
        Inner::trust(&self.inner, tools).await
    }

    /// Whether its tools should be discovered: never discovered, discovered with another
    /// configuration, the last discovery failed, or its lists are past their `ttlMs`.
    pub fn needs_discovery(&self) -> bool {
        self.needs_discovery_given(&read(&self.inner.view).record)
    }

    fn needs_discovery_given(&self, record: &DiscoveryRecord) -> bool {
        self.inner.server().enabled && self.inner.unavailable.is_none() && !record.is_current()
    }

    /// Whether its lists are known only to a process that discovered them: the server marked
    /// them private, so the cache file does not hold them, and this process has not listed
    /// them yet. A one-shot call discovers such a server first.
    pub fn lists_kept_private(&self) -> bool {
        let view = read(&self.inner.view);
        view.record.private && self.needs_discovery_given(&view.record)
    }

    /// Why it is never started (a variable or secret its entry names is not set), if so.
    pub fn unavailable(&self) -> Option<&str> {
        self.inner.unavailable.as_deref()
    }

    /// The process group of its running process, when it is a running stdio server.
    pub async fn pid(&self) -> Option<u32> {
        let slot = self.inner.slot.lock().await;
        slot.as_ref()
            .filter(|c| c.is_alive())
            .and_then(|c| c.pgid())
    }

    /// Whether a connection is open now.
    pub async fn is_running(&self) -> bool {
        let slot = self.inner.slot.lock().await;
        slot.as_ref().is_some_and(|c| c.is_alive())
    }

    /// Lists the server's tools (starting it when needed), sanitises them, writes the cache and
    /// publishes a new catalog. On failure the cache keeps the earlier tools and says why.
    pub async fn discover(&self) -> Result<DiscoveryOutcome, UpstreamError> {
        Inner::discover(&self.inner).await
    }

    /// Its prompts, under its own names, from the discovery cache, as models may see them
    /// (judged by the trust scanner: see [`crate::judging::offered`]); held ones left out.
    pub fn prompts(&self) -> Vec<Prompt> {
        let listed = self.by_hold(ItemKind::Prompt, |r| &r.prompts, |p| &p.name, false);
        crate::judging::offered(&self.inner.name, listed, self.inner.server().on_finding)
    }

    /// Its held prompts, as listed (never offered: for saying why a request for one is
    /// refused, [`UpstreamSource::held_refusal`]).
    pub fn held_prompts(&self) -> Vec<Prompt> {
        self.by_hold(ItemKind::Prompt, |r| &r.prompts, |p| &p.name, true)
    }

    /// Why its prompt or resource template `name` (its own name) is not offered, when it is
    /// held: what [`toolmux_trust::pins::Held::refusal`] says.
    pub fn held_refusal(&self, item: ItemKind, name: &str) -> Option<String> {
        read(&self.inner.view)
            .held
            .iter()
            .find(|h| h.item == item && h.tool == name)
            .map(|h| h.refusal(&self.inner.name))
    }

    /// The record's items of one kind that are `held` (or not).
    fn by_hold<T: Clone>(
        &self,
        item: ItemKind,
        of: impl Fn(&DiscoveryRecord) -> &Vec<T>,
        name: impl Fn(&T) -> &str,
        held: bool,
    ) -> Vec<T> {
        let view = read(&self.inner.view);
        of(&view.record)
            .iter()
            .filter(|listed| {
                let is_held = view
                    .held
                    .iter()
                    .any(|h| h.item == item && h.tool == name(listed));
                is_held == held
            })
            .cloned()
            .collect()
    }

    /// Its resources, from the discovery cache, as models may see them.
    pub fn resources(&self) -> Vec<Resource> {
        let listed = read(&self.inner.view).record.resources.clone();
        crate::judging::offered(&self.inner.name, listed, self.inner.server().on_finding)
    }

    /// Its resource templates, from the discovery cache, as models may see them; held ones
    /// left out.
    pub fn resource_templates(&self) -> Vec<ResourceTemplate> {
        let listed = self.by_hold(
            ItemKind::ResourceTemplate,
            |r| &r.resource_templates,
            |t| &t.name,
            false,
        );
        crate::judging::offered(&self.inner.name, listed, self.inner.server().on_finding)
    }

    /// What it offers besides tools, from the discovery cache.
    pub fn offers(&self) -> ServerOffers {
        read(&self.inner.view).record.offers
    }

    /// Gets one of its prompts (under its own name), starting it when needed; through
    /// `session`'s own connection when served per client (so for the rest of these).
    pub async fn get_prompt(
        &self,
        session: Option<&str>,
        params: GetPromptRequestParams,
    ) -> Result<GetPromptResult, UpstreamError> {
        self.request(session, "prompts/get", |conn| async move {
            conn.get_prompt(params).await
        })
        .await
    }

    /// Reads one of its resources, starting it when needed.
    pub async fn read_resource(
        &self,
        session: Option<&str>,
        params: ReadResourceRequestParams,
    ) -> Result<ReadResourceResult, UpstreamError> {
        self.request(session, "resources/read", |conn| async move {
            conn.read_resource(params).await
        })
        .await
    }

    /// Asks it to complete a prompt or resource-template argument, starting it when needed.
    pub async fn complete(
        &self,
        session: Option<&str>,
        params: CompleteRequestParams,
    ) -> Result<CompleteResult, UpstreamError> {
        self.request(session, "completion/complete", |conn| async move {
            conn.complete(params).await
        })
        .await
    }

    /// Subscribes to changes of one of its resources; they arrive on
    /// [`UpstreamSource::resource_updates`]. Subscriptions are counted: the server is asked once
    /// per URI, and keeps running while any is held. Pair with
    /// [`UpstreamSource::unsubscribe`]. Served per client, the subscription is `session`'s
    /// own, on its own connection, and so are its updates.
    pub async fn subscribe(&self, session: Option<&str>, uri: &str) -> Result<(), UpstreamError> {
        if let Some(session) = self.inner.client_of(session) {
            return self.subscribe_client(session, uri).await;
        }
        let first = {
            let mut subscriptions = lock(&self.inner.subscriptions);
            let count = subscriptions.entry(uri.to_string()).or_default();
            *count += 1;
            *count == 1
        };
        if !first {
            return Ok(());
        }
        let asked = self
            .request(None, "resources/subscribe", |conn| async move {
                conn.subscribe(uri).await
            })
            .await;
        if asked.is_err() {
            self.release(uri);
        }
        asked
    }

    /// Drops one subscription to `uri`; the last one unsubscribes at the server if it runs.
    pub async fn unsubscribe(&self, session: Option<&str>, uri: &str) -> Result<(), UpstreamError> {
        if let Some(session) = self.inner.client_of(session) {
            return self.unsubscribe_client(session, uri).await;
        }
        if !self.release(uri) {
            return Ok(());
        }
        let conn = match self.inner.slot.lock().await.as_ref() {
            Some(conn) if conn.is_alive() => conn.begin(),
            // Nothing runs, so nothing is subscribed there.
            _ => return Ok(()),
        };
        conn.unsubscribe(uri)
            .await
            .map_err(|e| self.inner.request_error("resources/unsubscribe", &conn, &e))
    }

    /// Removes one subscription count; whether it was the last one for `uri`.
    fn release(&self, uri: &str) -> bool {
        let mut subscriptions = lock(&self.inner.subscriptions);
        match subscriptions.get_mut(uri) {
            Some(count) if *count > 1 => {
                *count -= 1;
                false
            }
            Some(_) => {
                subscriptions.remove(uri);
                true
            }
            None => false,
        }
    }

    /// Subscribed resources as the server reports them changed, with whose news each is.
    pub fn resource_updates(&self) -> broadcast::Receiver<ResourceUpdate> {
        self.inner.updates.subscribe()
    }

    /// Runs one relayed request on the server's connection (`session`'s own when served per
    /// client), starting it when needed, within the server's tool timeout.
    async fn request<T, F, Fut>(
        &self,
        session: Option<&str>,
        method: &'static str,
        send: F,
    ) -> Result<T, UpstreamError>
    where
        F: FnOnce(Arc<Connection>) -> Fut,
        Fut: std::future::Future<Output = Result<T, ServiceError>>,
    {
        let inner = &self.inner;
        let conn = match inner.client_of(session) {
            Some(session) => inner.client_connection(session).await?,
            None => inner.connection().await?,
        };
        let limit = inner.server().tool_timeout.unwrap_or(RELAY_TIMEOUT);
        inner.touch();
        let answered = tokio::time::timeout(limit, send(Arc::clone(&conn))).await;
        inner.touch();
        match answered {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(e)) => Err(inner.request_error(method, &conn, &e)),
            Err(_) => Err(UpstreamError::Timeout {
                server: inner.name.clone(),
                what: method,
                after: limit,
            }),
        }
    }

    /// Marks the server replaced or removed by a configuration change: it is never started
    /// again (a call that picked it from an older catalog fails with [`UpstreamError::Retired`]),
    /// and [`UpstreamSource::retirement`] fires. Stop it with [`UpstreamSource::shutdown`].
    pub fn retire(&self) {
        self.inner.retired.cancel();
    }

    /// Fires when the server is retired.
    pub fn retirement(&self) -> CancellationToken {
        self.inner.retired.clone()
    }

    /// Stops the server cleanly if it runs (stdin closed, SIGTERM, SIGKILL for a stdio one),
    /// with every per-client connection of it.
    pub async fn shutdown(&self) {
        let conn = self.inner.slot.lock().await.take();
        if let Some(conn) = conn {
            conn.close().await;
        }
        self.inner.end_clients().await;
    }
}

fn read<T>(lock: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(PoisonError::into_inner)
}

fn write<T>(lock: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(PoisonError::into_inner)
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Inner {
    /// The configuration now.
    fn server(&self) -> Arc<UpstreamServer> {
        Arc::clone(&read(&self.settings).server)
    }

    /// A failed relayed request, keeping the server's own error code when it answered with one.
    fn request_error(
        &self,
        method: &str,
        conn: &Connection,
        error: &ServiceError,
    ) -> UpstreamError {
        match error {
            ServiceError::McpError(e) => UpstreamError::answered(&self.name, e.code.0, &e.message),
            _ if !conn.is_alive() => UpstreamError::Protocol {
                server: self.name.clone(),
                message: format!(
                    "it exited during {method} (its log: `toolmux mcp logs {}`)",
                    self.name
                ),
            },
            other => UpstreamError::protocol(
                &self.name,
                &format!("{method} failed: {}", describe(other)),
            ),
        }
    }

    fn notify(&self) {
        if let Some(notifier) = lock(&self.notifier).as_ref() {
            notifier.notify();
        }
    }

    fn touch(&self) {
        *lock(&self.last_used) = Instant::now();
    }
}

#[async_trait]
impl Source for UpstreamSource {
    fn id(&self) -> &str {
        &self.inner.name
    }

    fn kind(&self) -> SourceKind {
        SourceKind::Mcp
    }

    fn description(&self) -> Option<String> {
        read(&self.inner.view)
            .record
            .server_info
            .as_ref()
            .and_then(|identity| identity.description.clone())
    }

    fn tools(&self) -> Vec<ToolDescriptor> {
        read(&self.inner.view).tools.as_ref().clone()
    }

    fn status(&self) -> SourceStatus {
        let view = read(&self.inner.view);
        let last_discovery = view.record.last_discovery;
        let health = lock(&self.inner.health);
        if let Some(until) = health.unavailable_until
            && Instant::now() < until
        {
            return SourceStatus {
                state: SourceState::Failed,
                error: health.last_error.clone(),
                last_discovery,
            };
        }
        let state = if view.discovering {
            SourceState::Discovering
        } else {
            match view.record.discovery_status {
                DiscoveryStatus::Never => SourceState::Never,
                DiscoveryStatus::Discovering => SourceState::Discovering,
                DiscoveryStatus::Success => SourceState::Success,
                DiscoveryStatus::Failed | DiscoveryStatus::NeedsSignIn => SourceState::Failed,
            }
        };
        SourceStatus {
            state,
            error: view.record.discovery_error.clone(),
            last_discovery,
        }
    }

    async fn call(&self, call: SourceCall<'_>) -> Result<ToolResult, SourceError> {
        self.inner.call(&call).await
    }

    fn attach(&self, notifier: ChangeNotifier) {
        *lock(&self.inner.notifier) = Some(notifier);
    }
}

impl std::fmt::Debug for UpstreamSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UpstreamSource")
            .field("name", &self.inner.name)
            .field("transport", &self.inner.server().transport.kind())
            .finish_non_exhaustive()
    }
}

/// An upstream result in the core's shape. The shapes are the same (MCP's), so this goes
/// through JSON; a content block of a kind the core does not know is kept as its JSON text
/// rather than dropped.
fn tool_result(result: rmcp::model::CallToolResult) -> ToolResult {
    let is_error = result.is_error.unwrap_or(false);
    let content = result
        .content
        .iter()
        .map(|block| {
            let value = serde_json::to_value(block).unwrap_or(Value::Null);
            serde_json::from_value::<Content>(value.clone())
                .unwrap_or_else(|_| Content::text(value.to_string()))
        })
        .collect();
    let mut result = ToolResult {
        content,
        structured_content: result.structured_content,
        is_error,
    };
    let cleaned = crate::judging::visible_result(&mut result);
    if cleaned > 0 {
        tracing::warn!(
            blocks = cleaned,
            "invisible characters removed from a tool's result"
        );
    }
    result
}
