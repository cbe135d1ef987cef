//! One configured MCP server as a tool source: its tools come from the discovery cache (listing
//! never starts it), its process or connection is opened on the first call and closed when idle,
//! and its faults stay its own.
//!
//! # Faults
//! A call that finds the server down (never started, crashed, stopped when idle) starts it,
//! trying up to [`Backoff::tries`] times with exponentially growing pauses. When every try
//! fails, the server is *unavailable* for [`Backoff::window`]: its calls fail at once with an
//! error naming it and its last error, and the catalog shows it as failed. The first call after
//! the window tries again. A crash during a call fails that call only.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock, Weak};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use backon::{ExponentialBuilder, Retryable};
use chrono::Utc;
use serde_json::Value;
use toolmux_config::McpServer;
use toolmux_core::{
    ChangeNotifier, Content, Source, SourceCall, SourceError, SourceKind, SourceState,
    SourceStatus, ToolAnnotations, ToolDescriptor, ToolResult,
};

use rmcp::model::{
    CompleteRequestParams, CompleteResult, GetPromptRequestParams, GetPromptResult, Prompt,
    ReadResourceRequestParams, ReadResourceResult, Resource, ResourceTemplate,
};
use rmcp::service::ServiceError;
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use crate::cache::{
    CachedTool, DiscoveryRecord, DiscoveryStatus, ServerIdentity, ServerOffers, ServerPaths,
};
use crate::callers::Callers;
use crate::connection::{Connection, Endpoint, Handler, InFlight, ServerHooks, describe};
use crate::error::UpstreamError;
use crate::names::registry_names;
use crate::schema;

/// How a server that will not start is retried.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Backoff {
    /// Starts tried by one call before the server counts as unavailable.
    pub tries: usize,
    /// The pause after the first failed try; each later pause doubles.
    pub first_delay: Duration,
    /// How long an unavailable server's calls fail at once.
    pub window: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Self {
            tries: 3,
            first_delay: Duration::from_millis(200),
            window: Duration::from_secs(30),
        }
    }
}

/// The longest tool description kept; longer ones are cut (a model reads every one).
const MAX_DESCRIPTION_CHARS: usize = 8 * 1024;
/// How long a relayed request (a prompt, a resource, a completion) may take when the server
/// sets no `toolTimeoutMs`.
const RELAY_TIMEOUT: Duration = Duration::from_secs(60);
/// Resource-change notifications kept for a slow subscriber before it misses some.
const UPDATES_BUFFER: usize = 256;

/// What a discovery found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DiscoveryOutcome {
    /// Tools the server listed.
    pub listed: usize,
    /// Tools offered after `enabledTools` / `disabledTools`.
    pub offered: usize,
}

/// One configured MCP server as a [`Source`]. Cheap to clone; clones share the server.
#[derive(Clone)]
pub struct UpstreamSource {
    inner: Arc<Inner>,
}

struct Inner {
    name: String,
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
    /// URIs of subscribed resources the server says changed.
    updates: broadcast::Sender<String>,
}

/// A server's configuration and the prefix of its registry names. Lock order: `view` before
/// `settings` when both are held.
struct Settings {
    server: Arc<McpServer>,
    prefix: String,
}

/// The prefix of a server's registry names: the configured one, else one from its name.
fn prefix_of(name: &str, server: &McpServer) -> String {
    server.prefix.as_ref().map_or_else(
        || {
            toolmux_config::Prefix::from_server_name(name)
                .as_str()
                .to_string()
        },
        |p| p.as_str().to_string(),
    )
}

/// What `tools()` and `status()` read: the cache record and the descriptors made from it.
struct View {
    record: DiscoveryRecord,
    tools: Arc<Vec<ToolDescriptor>>,
    discovering: bool,
}

/// Start failures of the server.
#[derive(Default)]
struct Health {
    failures: u32,
    last_error: Option<String>,
    unavailable_until: Option<Instant>,
}

/// What an [`UpstreamSource`] is made from.
#[derive(Clone, Debug)]
pub struct ServerSpec {
    /// The server's name (the source id).
    pub name: String,
    /// Its checked configuration, with `${VAR}` references expanded.
    pub server: McpServer,
    /// The hash of its unexpanded entry ([`crate::config_hash`]).
    pub config_hash: String,
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
        } = spec;
        let prefix = prefix_of(&name, &server);
        let paths = ServerPaths::new(state_dir, &name);
        let record = match DiscoveryRecord::read(&paths.cache) {
            Some(record) if record.config_hash == config_hash => record,
            Some(_) => {
                let mut record = DiscoveryRecord::never(&name, &config_hash);
                record.discovery_error = Some(format!(
                    "the configuration changed since the last discovery; run `toolmux mcp \
                     refresh {name}`"
                ));
                record
            }
            None => DiscoveryRecord::never(&name, &config_hash),
        };
        let tools = Arc::new(descriptors(&name, &prefix, &server, &record));
        let endpoint = Endpoint {
            server: name.clone(),
            transport: server.transport.clone(),
            project_dir: project_dir.to_path_buf(),
            log: paths.log.clone(),
            startup_timeout: server.startup_timeout,
        };
        Self {
            inner: Arc::new(Inner {
                name,
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
    pub fn server(&self) -> Arc<McpServer> {
        self.inner.server()
    }

    /// Whether `server` differs from this server's configuration only in what can change
    /// while it runs: tool filters, policies, time limits other than start-up, the prefix. The
    /// transport (command, arguments, environment, URL, headers), the start-up limit and
    /// `enabled` decide the process itself.
    pub fn can_reconfigure(&self, server: &McpServer) -> bool {
        let current = self.inner.server();
        current.transport == server.transport
            && current.startup_timeout == server.startup_timeout
            && current.enabled == server.enabled
    }

    /// Applies a configuration for which [`UpstreamSource::can_reconfigure`] holds: its tools
    /// are offered, named and limited anew from the cache, and a new catalog is published;
    /// the running process, its subscriptions and its calls in flight carry on.
    pub fn reconfigure(&self, server: McpServer) {
        let inner = &self.inner;
        let was_idling = inner.server().idle_timeout.is_some();
        let idles = server.idle_timeout.is_some();
        {
            let mut view = write(&inner.view);
            let prefix = prefix_of(&inner.name, &server);
            view.tools = Arc::new(descriptors(&inner.name, &prefix, &server, &view.record));
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

    /// Its discovery cache file.
    pub fn cache_path(&self) -> &std::path::Path {
        &self.inner.paths.cache
    }

    /// The cache record as it stands.
    pub fn record(&self) -> DiscoveryRecord {
        read(&self.inner.view).record.clone()
    }

    /// Whether its tools should be discovered: never discovered, discovered with another
    /// configuration, or the last discovery failed.
    pub fn needs_discovery(&self) -> bool {
        let view = read(&self.inner.view);
        self.inner.server().enabled && view.record.discovery_status != DiscoveryStatus::Success
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

    /// Its prompts, under its own names, from the discovery cache.
    pub fn prompts(&self) -> Vec<Prompt> {
        read(&self.inner.view).record.prompts.clone()
    }

    /// Its resources, from the discovery cache.
    pub fn resources(&self) -> Vec<Resource> {
        read(&self.inner.view).record.resources.clone()
    }

    /// Its resource templates, from the discovery cache.
    pub fn resource_templates(&self) -> Vec<ResourceTemplate> {
        read(&self.inner.view).record.resource_templates.clone()
    }

    /// What it offers besides tools, from the discovery cache.
    pub fn offers(&self) -> ServerOffers {
        read(&self.inner.view).record.offers
    }

    /// Gets one of its prompts (under its own name), starting it when needed.
    pub async fn get_prompt(
        &self,
        params: GetPromptRequestParams,
    ) -> Result<GetPromptResult, UpstreamError> {
        self.request("prompts/get", |conn| async move {
            conn.get_prompt(params).await
        })
        .await
    }

    /// Reads one of its resources, starting it when needed.
    pub async fn read_resource(
        &self,
        params: ReadResourceRequestParams,
    ) -> Result<ReadResourceResult, UpstreamError> {
        self.request("resources/read", |conn| async move {
            conn.read_resource(params).await
        })
        .await
    }

    /// Asks it to complete a prompt or resource-template argument, starting it when needed.
    pub async fn complete(
        &self,
        params: CompleteRequestParams,
    ) -> Result<CompleteResult, UpstreamError> {
        self.request("completion/complete", |conn| async move {
            conn.complete(params).await
        })
        .await
    }

    /// Subscribes to changes of one of its resources; they arrive on
    /// [`UpstreamSource::resource_updates`]. Subscriptions are counted: the server is asked once
    /// per URI, and keeps running while any is held. Pair with
    /// [`UpstreamSource::unsubscribe`].
    pub async fn subscribe(&self, uri: &str) -> Result<(), UpstreamError> {
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
            .request("resources/subscribe", |conn| async move {
                conn.subscribe(uri).await
            })
            .await;
        if asked.is_err() {
            self.release(uri);
        }
        asked
    }

    /// Drops one subscription to `uri`; the last one unsubscribes at the server if it runs.
    pub async fn unsubscribe(&self, uri: &str) -> Result<(), UpstreamError> {
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

    /// URIs of subscribed resources as the server reports them changed.
    pub fn resource_updates(&self) -> broadcast::Receiver<String> {
        self.inner.updates.subscribe()
    }

    /// Runs one relayed request on the server's connection, starting it when needed, within
    /// the server's tool timeout.
    async fn request<T, F, Fut>(&self, method: &'static str, send: F) -> Result<T, UpstreamError>
    where
        F: FnOnce(Arc<Connection>) -> Fut,
        Fut: std::future::Future<Output = Result<T, ServiceError>>,
    {
        let inner = &self.inner;
        let conn = inner.connection().await?;
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

    /// Stops the server cleanly if it runs (stdin closed, SIGTERM, SIGKILL for a stdio one).
    pub async fn shutdown(&self) {
        let conn = self.inner.slot.lock().await.take();
        if let Some(conn) = conn {
            conn.close().await;
        }
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
    fn server(&self) -> Arc<McpServer> {
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
            ServiceError::McpError(e) => UpstreamError::Answered {
                server: self.name.clone(),
                code: e.code.0,
                message: e.message.to_string(),
            },
            _ if !conn.is_alive() => UpstreamError::Protocol {
                server: self.name.clone(),
                message: format!(
                    "it exited during {method} (its log: `toolmux mcp logs {}`)",
                    self.name
                ),
            },
            other => UpstreamError::Protocol {
                server: self.name.clone(),
                message: format!("{method} failed: {}", describe(other)),
            },
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

    /// The live connection, started (with retries) when there is none, with one request
    /// counted in flight on it.
    async fn connection(self: &Arc<Self>) -> Result<InFlight, UpstreamError> {
        let mut slot = self.slot.lock().await;
        if let Some(conn) = slot.as_ref() {
            if conn.is_alive() {
                return Ok(conn.begin());
            }
            tracing::warn!(server = %self.name, "the server exited; it is restarted on this call");
            if let Some(dead) = slot.take() {
                dead.close().await;
            }
        }
        if self.retired.is_cancelled() {
            return Err(UpstreamError::Retired {
                server: self.name.clone(),
            });
        }
        if !self.server().enabled {
            return Err(UpstreamError::Disabled {
                server: self.name.clone(),
            });
        }
        {
            let health = lock(&self.health);
            if let Some(until) = health.unavailable_until {
                let now = Instant::now();
                if now < until {
                    return Err(UpstreamError::Unavailable {
                        server: self.name.clone(),
                        attempts: health.failures,
                        last_error: health.last_error.clone().unwrap_or_default(),
                        retry_in: until - now,
                    });
                }
            }
        }
        let weak = Arc::downgrade(self);
        let open = || {
            let hooks = ServerHooks {
                on_list_changed: lists_changed(weak.clone()),
                on_resource_updated: resource_updated(weak.clone()),
            };
            // Each connection has its own: rmcp's progress tokens and request ids are per
            // connection, and start again after a restart.
            let handler = Handler::new(&self.name, hooks, Arc::new(Callers::default()));
            let endpoint = self.endpoint.clone();
            async move { Connection::open(&endpoint, handler).await }
        };
        let retries = self.backoff.tries.saturating_sub(1);
        let opened = open
            .retry(
                ExponentialBuilder::default()
                    .with_min_delay(self.backoff.first_delay)
                    .with_max_times(retries),
            )
            .notify(|e, pause| {
                tracing::debug!(error = %e, retry_in_ms = pause.as_millis() as u64, "start failed; retrying");
            })
            .await;
        match opened {
            Ok(conn) => {
                let conn = Arc::new(conn);
                let in_flight = conn.begin();
                let was_failing = {
                    let mut health = lock(&self.health);
                    let was = health.unavailable_until.is_some();
                    *health = Health::default();
                    was
                };
                *slot = Some(Arc::clone(&conn));
                drop(slot);
                self.touch();
                if self.server().idle_timeout.is_some() {
                    tokio::spawn(watch_idle(Arc::downgrade(self), Arc::downgrade(&conn)));
                }
                if was_failing {
                    self.notify();
                }
                let held: Vec<String> = lock(&self.subscriptions).keys().cloned().collect();
                if !held.is_empty() {
                    tokio::spawn(renew_subscriptions(conn.begin(), held));
                }
                // A discovery running now (which may have started this connection) covers it.
                let stale = read(&self.view).record.discovery_status != DiscoveryStatus::Success
                    && self.discovery.try_lock().is_ok();
                if stale {
                    let inner = Arc::clone(self);
                    tokio::spawn(async move { Inner::rediscover_live(&inner).await });
                }
                Ok(in_flight)
            }
            Err(e) => {
                {
                    let mut health = lock(&self.health);
                    health.failures = health.failures.saturating_add(self.backoff.tries as u32);
                    health.last_error = Some(e.to_string());
                    health.unavailable_until = Some(Instant::now() + self.backoff.window);
                }
                drop(slot);
                self.notify();
                Err(e)
            }
        }
    }

    async fn discover(self: &Arc<Self>) -> Result<DiscoveryOutcome, UpstreamError> {
        let _one_at_a_time = self.discovery.lock().await;
        let discovering = {
            let mut view = write(&self.view);
            view.discovering = true;
            view.record.discovery_status = DiscoveryStatus::Discovering;
            view.record.clone()
        };
        // Written outside the view's lock, so listing never waits on the disk; the cache file
        // has one writer at a time, since every writer holds `discovery`.
        self.persist(&discovering);
        self.notify();
        // Start-up has its own limit (each try); the discovery limit covers the listing, so a
        // slow `npx` download does not eat the time the server gets to list its tools.
        let limit = self.server().discovery_timeout;
        let listed = match self.connection().await {
            Ok(conn) => tokio::time::timeout(limit, Listing::read(&conn))
                .await
                .unwrap_or_else(|_| {
                    Err(UpstreamError::Timeout {
                        server: self.name.clone(),
                        what: "discovery",
                        after: limit,
                    })
                }),
            Err(e) => Err(e),
        };
        self.touch();
        self.record_discovery(listed)
    }

    /// Lists the tools again on the connection that is open now, when one is: after the server
    /// said its tools changed, or when a call started a server whose cache is not current.
    /// Starts nothing; a connection that closes meanwhile (toolmux stopping it, or a crash)
    /// leaves the cache as it was.
    async fn rediscover_live(self: &Arc<Self>) {
        let _one_at_a_time = self.discovery.lock().await;
        // From here on, a new notice queues another listing: this one may have missed it.
        self.rediscovery_queued.store(false, Ordering::SeqCst);
        let conn = match self.slot.lock().await.as_ref() {
            Some(conn) if conn.is_alive() => conn.begin(),
            _ => return,
        };
        let limit = self.server().discovery_timeout;
        let listed = tokio::time::timeout(limit, Listing::read(&conn)).await;
        let listed = match listed {
            Ok(Ok(listing)) => Ok(listing),
            _ if !conn.is_alive() => return,
            Ok(Err(e)) => Err(e),
            Err(_) => Err(UpstreamError::Timeout {
                server: self.name.clone(),
                what: "discovery",
                after: limit,
            }),
        };
        if let Err(e) = self.record_discovery(listed) {
            tracing::warn!(error = %e, "rediscovery failed");
        }
    }

    /// Writes what a discovery found to the cache and the view, and publishes a new catalog.
    /// On failure the earlier tools stay. The caller holds `discovery`.
    fn record_discovery(
        &self,
        listed: Result<Listing, UpstreamError>,
    ) -> Result<DiscoveryOutcome, UpstreamError> {
        let (outcome, record) = {
            let mut view = write(&self.view);
            let server = self.server();
            view.discovering = false;
            let mut record = view.record.clone();
            record.config_hash = self.config_hash.clone();
            let outcome = match listed {
                Ok(listing) => {
                    record.tools = listing.tools.iter().map(cached_tool).collect();
                    record.prompts = listing.prompts;
                    record.resources = listing.resources;
                    record.resource_templates = listing.resource_templates;
                    record.offers = listing.offers;
                    record.server_info = Some(listing.identity);
                    record.discovery_status = DiscoveryStatus::Success;
                    record.discovery_error = None;
                    record.last_discovery = Some(Utc::now());
                    Ok(DiscoveryOutcome {
                        listed: record.tools.len(),
                        offered: record
                            .tools
                            .iter()
                            .filter(|t| server.offers(&t.name))
                            .count(),
                    })
                }
                Err(e) => {
                    record.discovery_status = DiscoveryStatus::Failed;
                    record.discovery_error = Some(e.to_string());
                    Err(e)
                }
            };
            let settings = read(&self.settings);
            view.tools = Arc::new(descriptors(
                &self.name,
                &settings.prefix,
                &settings.server,
                &record,
            ));
            drop(settings);
            view.record = record.clone();
            (outcome, record)
        };
        self.persist(&record);
        self.notify();
        outcome
    }

    fn persist(&self, record: &DiscoveryRecord) {
        if let Err(e) = record.write(&self.paths.cache) {
            tracing::warn!(
                "{}",
                UpstreamError::Cache {
                    server: self.name.clone(),
                    path: self.paths.cache.display().to_string(),
                    message: e.to_string(),
                }
            );
        }
    }
}

/// Everything a discovery reads from a server.
struct Listing {
    identity: ServerIdentity,
    tools: Vec<rmcp::model::Tool>,
    prompts: Vec<Prompt>,
    resources: Vec<Resource>,
    resource_templates: Vec<ResourceTemplate>,
    offers: ServerOffers,
}

impl Listing {
    /// Lists the tools, and the prompts and resources when the server offers them. Only the
    /// tools decide whether discovery worked: a server that offers resources but fails to list
    /// its templates (some answer "method not found") still serves its tools.
    async fn read(conn: &Connection) -> Result<Self, UpstreamError> {
        let tools = conn.list_tools().await?;
        let capabilities = conn.capabilities();
        let resources_offered = capabilities.resources.as_ref();
        let offers = ServerOffers {
            prompts: capabilities.prompts.is_some(),
            resources: resources_offered.is_some(),
            subscribe: resources_offered.and_then(|r| r.subscribe).unwrap_or(false),
            completions: capabilities.completions.is_some(),
        };
        let prompts = if offers.prompts {
            optional(conn.list_prompts().await)
        } else {
            Vec::new()
        };
        let (resources, resource_templates) = if offers.resources {
            (
                optional(conn.list_resources().await),
                optional(conn.list_resource_templates().await),
            )
        } else {
            (Vec::new(), Vec::new())
        };
        Ok(Self {
            identity: conn.identity().clone(),
            tools,
            prompts,
            resources,
            resource_templates,
            offers,
        })
    }
}

/// An optional listing: its items, or none (with a warning) when the server failed it.
fn optional<T>(listed: Result<Vec<T>, UpstreamError>) -> Vec<T> {
    listed.unwrap_or_else(|e| {
        tracing::warn!(error = %e, "an optional listing failed; it is served empty");
        Vec::new()
    })
}

/// Asks a restarted server again for the resource changes someone still subscribes to.
async fn renew_subscriptions(conn: InFlight, uris: Vec<String>) {
    for uri in uris {
        if let Err(e) = conn.subscribe(&uri).await {
            tracing::warn!(uri, error = %describe(&e), "cannot renew a resource subscription");
        }
    }
}

/// The callback for a server's `resources/updated`: tell the subscribers.
fn resource_updated(source: Weak<Inner>) -> Arc<dyn Fn(String) + Send + Sync> {
    Arc::new(move |uri| {
        if let Some(inner) = source.upgrade() {
            // No receiver means no session subscribes any more; nothing to tell.
            let _ = inner.updates.send(uri);
        }
    })
}

/// The callback for `notifications/{tools,prompts,resources}/list_changed`: rediscover on the
/// open connection.
fn lists_changed(source: Weak<Inner>) -> Arc<dyn Fn() + Send + Sync> {
    Arc::new(move || {
        let Some(inner) = source.upgrade() else {
            return;
        };
        // Notices that arrive while one rediscovery is queued are covered by it; a server that
        // sends them in a burst (or on every listing) gets one listing, not a queue of them.
        if inner.rediscovery_queued.swap(true, Ordering::SeqCst) {
            return;
        }
        tokio::spawn(async move { Inner::rediscover_live(&inner).await });
    })
}

/// Closes a connection once it has had no call in flight for the server's `idleTimeoutMs`,
/// read afresh each time (a reconfiguration may change or remove it).
async fn watch_idle(source: Weak<Inner>, conn: Weak<Connection>) {
    let mut wait = Duration::ZERO;
    loop {
        tokio::time::sleep(wait).await;
        let (Some(inner), Some(watched)) = (source.upgrade(), conn.upgrade()) else {
            return;
        };
        let Some(idle) = inner.server().idle_timeout else {
            return; // no longer stopped when idle
        };
        let mut slot = inner.slot.lock().await;
        let current = slot.as_ref().is_some_and(|c| Arc::ptr_eq(c, &watched));
        if !current || !watched.is_alive() {
            return;
        }
        let quiet = lock(&inner.last_used).elapsed();
        let subscribed = !lock(&inner.subscriptions).is_empty();
        if watched.in_flight() == 0 && !subscribed && quiet >= idle {
            tracing::info!(server = %inner.name, "stopping the server after {}ms idle", idle.as_millis());
            slot.take();
            drop(slot);
            watched.close().await;
            return;
        }
        wait = idle.saturating_sub(quiet).max(Duration::from_millis(10));
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
                DiscoveryStatus::Failed => SourceState::Failed,
            }
        };
        SourceStatus {
            state,
            error: view.record.discovery_error.clone(),
            last_discovery,
        }
    }

    async fn call(&self, call: SourceCall<'_>) -> Result<ToolResult, SourceError> {
        let inner = &self.inner;
        let conn = inner.connection().await.map_err(|e| match e {
            UpstreamError::Unavailable { .. } | UpstreamError::Disabled { .. } => {
                SourceError::Unavailable(e.to_string())
            }
            UpstreamError::Timeout { after, .. } => SourceError::Timeout(after),
            other => SourceError::Unavailable(other.to_string()),
        })?;
        inner.touch();
        let result = conn
            .call(
                &call.tool.original_name,
                call.arguments,
                call.context
                    .backchannel
                    .clone()
                    .map(|b| (call.context.session.clone(), b)),
            )
            .await;
        inner.touch();
        match result {
            Ok(result) => Ok(tool_result(result)),
            Err(e) => {
                if !conn.is_alive() {
                    return Err(SourceError::Failed(format!(
                        "MCP server `{}` exited during the call (its log: `toolmux mcp logs {}`); \
                         the next call restarts it",
                        inner.name, inner.name
                    )));
                }
                Err(SourceError::Failed(format!(
                    "MCP server `{}`: {}",
                    inner.name,
                    describe(&e)
                )))
            }
        }
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

/// A tool as listed by the server, sanitised for the cache.
fn cached_tool(tool: &rmcp::model::Tool) -> CachedTool {
    let input = schema::input_schema(&Value::Object((*tool.input_schema).clone()));
    let (output, output_note) = match &tool.output_schema {
        Some(schema) => schema::output_schema(&Value::Object((**schema).clone())),
        None => (None, None),
    };
    let note = match (input.note, output_note) {
        (Some(a), Some(b)) => Some(format!("{a}; {b}")),
        (a, b) => a.or(b),
    };
    let annotations = tool
        .annotations
        .as_ref()
        .map(|a| ToolAnnotations {
            read_only_hint: a.read_only_hint,
            destructive_hint: a.destructive_hint,
            idempotent_hint: a.idempotent_hint,
            open_world_hint: a.open_world_hint,
        })
        .unwrap_or_default();
    let mut description = tool.description.as_deref().unwrap_or_default().to_string();
    if description.chars().count() > MAX_DESCRIPTION_CHARS {
        description = description
            .chars()
            .take(MAX_DESCRIPTION_CHARS - 1)
            .collect();
        description.push('…');
    }
    CachedTool {
        name: tool.name.to_string(),
        title: tool
            .title
            .clone()
            .or_else(|| tool.annotations.as_ref().and_then(|a| a.title.clone())),
        description,
        input_schema: input.schema,
        output_schema: output,
        annotations,
        note,
    }
}

/// The registry descriptors of a record's tools, after `enabledTools` / `disabledTools`.
/// Names are assigned over every listed tool, so switching one off never renames another.
fn descriptors(
    source: &str,
    prefix: &str,
    server: &McpServer,
    record: &DiscoveryRecord,
) -> Vec<ToolDescriptor> {
    let own: Vec<&str> = record.tools.iter().map(|t| t.name.as_str()).collect();
    let names = registry_names(prefix, &own);
    record
        .tools
        .iter()
        .zip(names)
        .filter(|(tool, _)| server.offers(&tool.name))
        .map(|(tool, name)| {
            let mut descriptor =
                ToolDescriptor::new(source, name, &tool.description, tool.input_schema.clone());
            descriptor.original_name = tool.name.clone();
            descriptor.title = tool.title.clone();
            descriptor.output_schema = tool.output_schema.clone().map(Arc::new);
            descriptor.annotations = tool.annotations.clone();
            descriptor.parallel = tool.annotations.read_only_hint == Some(true);
            descriptor.timeout = server.tool_timeout;
            descriptor.policy = server.policy_for(&tool.name);
            descriptor
        })
        .collect()
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
    ToolResult {
        content,
        structured_content: result.structured_content,
        is_error,
    }
}
