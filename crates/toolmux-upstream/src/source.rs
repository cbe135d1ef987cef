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

use crate::cache::{CachedTool, DiscoveryRecord, DiscoveryStatus, ServerPaths};
use crate::connection::{Connection, Endpoint, Handler, describe};
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
    prefix: String,
    server: McpServer,
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
        let prefix = server.prefix.as_ref().map_or_else(
            || {
                toolmux_config::Prefix::from_server_name(&name)
                    .as_str()
                    .to_string()
            },
            |p| p.as_str().to_string(),
        );
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
                prefix,
                server,
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
            }),
        }
    }

    /// The server's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The prefix of its tools' registry names.
    pub fn prefix(&self) -> &str {
        &self.inner.prefix
    }

    /// Its configuration.
    pub fn server(&self) -> &McpServer {
        &self.inner.server
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
        self.inner.server.enabled && view.record.discovery_status != DiscoveryStatus::Success
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
    fn notify(&self) {
        if let Some(notifier) = lock(&self.notifier).as_ref() {
            notifier.notify();
        }
    }

    fn touch(&self) {
        *lock(&self.last_used) = Instant::now();
    }

    /// The live connection, started (with retries) when there is none.
    async fn connection(self: &Arc<Self>) -> Result<Arc<Connection>, UpstreamError> {
        let mut slot = self.slot.lock().await;
        if let Some(conn) = slot.as_ref() {
            if conn.is_alive() {
                return Ok(Arc::clone(conn));
            }
            tracing::warn!(server = %self.name, "the server exited; it is restarted on this call");
            if let Some(dead) = slot.take() {
                dead.close().await;
            }
        }
        if !self.server.enabled {
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
            let handler = Handler::new(&self.name, tools_changed(weak.clone()));
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
                let was_failing = {
                    let mut health = lock(&self.health);
                    let was = health.unavailable_until.is_some();
                    *health = Health::default();
                    was
                };
                *slot = Some(Arc::clone(&conn));
                drop(slot);
                self.touch();
                if let Some(idle) = self.server.idle_timeout {
                    tokio::spawn(watch_idle(
                        Arc::downgrade(self),
                        Arc::downgrade(&conn),
                        idle,
                    ));
                }
                if was_failing {
                    self.notify();
                }
                // A discovery running now (which may have started this connection) covers it.
                let stale = read(&self.view).record.discovery_status != DiscoveryStatus::Success
                    && self.discovery.try_lock().is_ok();
                if stale {
                    let inner = Arc::clone(self);
                    tokio::spawn(async move { Inner::rediscover_live(&inner).await });
                }
                Ok(conn)
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
        {
            let mut view = write(&self.view);
            view.discovering = true;
            view.record.discovery_status = DiscoveryStatus::Discovering;
            self.persist(&view.record);
        }
        self.notify();
        let limit = self.server.discovery_timeout;
        let listed = tokio::time::timeout(limit, async {
            let conn = self.connection().await?;
            let _busy = conn.begin();
            let tools = conn.list_tools().await?;
            Ok::<_, UpstreamError>((conn.identity().clone(), tools))
        })
        .await
        .unwrap_or_else(|_| {
            Err(UpstreamError::Timeout {
                server: self.name.clone(),
                what: "discovery",
                after: limit,
            })
        });
        self.touch();
        self.record_discovery(listed)
    }

    /// Lists the tools again on the connection that is open now, when one is: after the server
    /// said its tools changed, or when a call started a server whose cache is not current.
    /// Starts nothing; a connection that closes meanwhile (toolmux stopping it, or a crash)
    /// leaves the cache as it was.
    async fn rediscover_live(self: &Arc<Self>) {
        let _one_at_a_time = self.discovery.lock().await;
        let conn = match self.slot.lock().await.as_ref() {
            Some(conn) if conn.is_alive() => Arc::clone(conn),
            _ => return,
        };
        let listed = {
            let _busy = conn.begin();
            tokio::time::timeout(self.server.discovery_timeout, conn.list_tools()).await
        };
        let listed = match listed {
            Ok(Ok(tools)) => Ok((conn.identity().clone(), tools)),
            _ if !conn.is_alive() => return,
            Ok(Err(e)) => Err(e),
            Err(_) => Err(UpstreamError::Timeout {
                server: self.name.clone(),
                what: "discovery",
                after: self.server.discovery_timeout,
            }),
        };
        if let Err(e) = self.record_discovery(listed) {
            tracing::warn!(error = %e, "rediscovery failed");
        }
    }

    /// Writes what a discovery found to the cache and the view, and publishes a new catalog.
    /// On failure the earlier tools stay.
    fn record_discovery(
        &self,
        listed: Result<(crate::cache::ServerIdentity, Vec<rmcp::model::Tool>), UpstreamError>,
    ) -> Result<DiscoveryOutcome, UpstreamError> {
        let outcome = {
            let mut view = write(&self.view);
            view.discovering = false;
            let mut record = view.record.clone();
            record.config_hash = self.config_hash.clone();
            let outcome = match listed {
                Ok((identity, tools)) => {
                    record.tools = tools.iter().map(cached_tool).collect();
                    record.server_info = Some(identity);
                    record.discovery_status = DiscoveryStatus::Success;
                    record.discovery_error = None;
                    record.last_discovery = Some(Utc::now());
                    Ok(DiscoveryOutcome {
                        listed: record.tools.len(),
                        offered: record
                            .tools
                            .iter()
                            .filter(|t| self.server.offers(&t.name))
                            .count(),
                    })
                }
                Err(e) => {
                    record.discovery_status = DiscoveryStatus::Failed;
                    record.discovery_error = Some(e.to_string());
                    Err(e)
                }
            };
            view.tools = Arc::new(descriptors(&self.name, &self.prefix, &self.server, &record));
            self.persist(&record);
            view.record = record;
            outcome
        };
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

/// The callback for `notifications/tools/list_changed`: rediscover on the open connection.
fn tools_changed(source: Weak<Inner>) -> Arc<dyn Fn() + Send + Sync> {
    Arc::new(move || {
        let Some(inner) = source.upgrade() else {
            return;
        };
        tokio::spawn(async move { Inner::rediscover_live(&inner).await });
    })
}

/// Closes a connection once it has had no call in flight for `idle`.
async fn watch_idle(source: Weak<Inner>, conn: Weak<Connection>, idle: Duration) {
    let mut wait = idle;
    loop {
        tokio::time::sleep(wait).await;
        let (Some(inner), Some(watched)) = (source.upgrade(), conn.upgrade()) else {
            return;
        };
        let mut slot = inner.slot.lock().await;
        let current = slot.as_ref().is_some_and(|c| Arc::ptr_eq(c, &watched));
        if !current || !watched.is_alive() {
            return;
        }
        let quiet = lock(&inner.last_used).elapsed();
        if watched.in_flight() == 0 && quiet >= idle {
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
        let result = {
            let _busy = conn.begin();
            inner.touch();
            conn.call(&call.tool.original_name, call.arguments).await
        };
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
            .field("transport", &self.inner.server.transport.kind())
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
