//! All configured servers of a project, as one handle: build their sources from the
//! configuration, discover the stale ones in the background, follow configuration changes
//! while running ([`Upstreams::apply`]), and stop them all on exit.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use futures::future::join_all;
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use toolmux_config::LoadedConfig;
use toolmux_core::{Hub, Source};

use crate::cache::{ServerPaths, config_hash};
use crate::error::UpstreamError;
use crate::source::{Backoff, ServerSpec, UpstreamSource};

/// The configured MCP servers of one project. Shared (`Arc<Upstreams>`) between the commands
/// that read it and the configuration reload that changes it.
pub struct Upstreams {
    servers: RwLock<Vec<UpstreamSource>>,
    state_dir: PathBuf,
    backoff: Backoff,
    /// The runtime to stop replaced servers and start discoveries on when [`Upstreams::apply`]
    /// runs on a thread outside it (the file watcher's).
    runtime: Option<tokio::runtime::Handle>,
    /// Discoveries running in the background, which [`Upstreams::shutdown`] stops and waits
    /// for: a server one of them is starting must not outlive toolmux.
    discoveries: TaskTracker,
    /// Fired by [`Upstreams::shutdown`]: background discoveries stop where they are.
    stopping: CancellationToken,
    /// Servers served per client whatever their configuration says (`serve --pass-through`);
    /// kept here so that a server replaced by a configuration change is served so too.
    per_client: Mutex<BTreeSet<String>>,
}

/// What [`Upstreams::apply`] changed, by server name.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ApplyReport {
    /// Servers that are new in the configuration.
    pub added: Vec<String>,
    /// Servers whose entry changed: the old one was stopped and replaced.
    pub changed: Vec<String>,
    /// Servers whose filters, policies, time limits or prefix changed: applied to the running
    /// server, whose process carries on.
    pub reconfigured: Vec<String>,
    /// Servers no longer configured: stopped and taken out of the hub.
    pub removed: Vec<String>,
}

impl ApplyReport {
    /// Whether nothing changed.
    pub fn is_empty(&self) -> bool {
        self.added.is_empty()
            && self.changed.is_empty()
            && self.reconfigured.is_empty()
            && self.removed.is_empty()
    }
}

impl Upstreams {
    /// A source per entry of `mcpServers`, reading each one's discovery cache under
    /// `state_dir`. Starts nothing.
    pub fn new(loaded: &LoadedConfig, state_dir: &Path) -> Self {
        Self::with_backoff(loaded, state_dir, Backoff::default())
    }

    /// Forgets the server `name` after it was removed from the configuration
    /// ([`ServerPaths::forget`]: its cache and pins).
    pub fn forget(&self, name: &str) -> std::io::Result<()> {
        ServerPaths::new(&self.state_dir, name).forget()
    }

    /// [`Upstreams::new`] with the restart policy given.
    pub fn with_backoff(loaded: &LoadedConfig, state_dir: &Path, backoff: Backoff) -> Self {
        let upstreams = Self {
            servers: RwLock::new(Vec::new()),
            state_dir: state_dir.to_path_buf(),
            backoff,
            runtime: tokio::runtime::Handle::try_current().ok(),
            discoveries: TaskTracker::new(),
            stopping: CancellationToken::new(),
            per_client: Mutex::default(),
        };
        let servers = upstreams
            .specs(loaded)
            .into_iter()
            .map(|spec| upstreams.source(spec, loaded))
            .collect();
        *upstreams.write() = servers;
        upstreams
    }

    /// One spec per configured server, with the hash of its entry as written; a server that
    /// waits for an unset variable or secret too, with why.
    fn specs(&self, loaded: &LoadedConfig) -> Vec<ServerSpec> {
        let raw = toolmux_config::unexpanded_upstreams(loaded);
        let available = loaded
            .config
            .upstreams
            .iter()
            .map(|(name, server)| (name, server, None));
        let waiting = loaded
            .unavailable_servers
            .iter()
            .map(|(name, waiting)| (name, &waiting.server, Some(waiting.reason.clone())));
        available
            .chain(waiting)
            .map(|(name, server, unavailable)| {
                let entry = raw
                    .get(name.as_str())
                    .cloned()
                    .unwrap_or_else(|| serde_json::to_value(server).unwrap_or(Value::Null));
                ServerSpec {
                    name: name.as_str().to_string(),
                    server: server.clone(),
                    config_hash: config_hash(&entry),
                    unavailable,
                }
            })
            .collect()
    }

    fn source(&self, spec: ServerSpec, loaded: &LoadedConfig) -> UpstreamSource {
        let forced = self
            .per_client
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(&spec.name);
        let source = UpstreamSource::new(spec, &loaded.project_dir, &self.state_dir, self.backoff);
        if forced {
            source.serve_per_client();
        }
        source
    }

    /// Serves the server `name` per client (see [`UpstreamSource::serve_per_client`]), now and
    /// after any configuration change: what `serve --pass-through NAME` asks for, since it
    /// stands in for that one server. A name that is no server (another source) is ignored.
    pub fn serve_per_client(&self, name: &str) {
        self.per_client
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(name.to_string());
        if let Some(server) = self.get(name) {
            server.serve_per_client();
        }
    }

    /// A downstream session (an MCP session deleted or expired) ended: every server served
    /// per client closes that session's connection, ending its upstream session or process.
    pub async fn end_session(&self, session: &str) {
        let servers = self.servers();
        // Every server: one whose per-client connection was stopped as idle, or a shared one,
        // still keeps the session's log level and subscriptions.
        join_all(servers.iter().map(|s| s.end_session(session))).await;
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Vec<UpstreamSource>> {
        self.servers.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Vec<UpstreamSource>> {
        self.servers.write().unwrap_or_else(PoisonError::into_inner)
    }

    /// The servers as they stand, by name: clones that share the running servers.
    pub fn servers(&self) -> Vec<UpstreamSource> {
        self.read().clone()
    }

    /// One server by name.
    pub fn get(&self, name: &str) -> Option<UpstreamSource> {
        self.read().iter().find(|s| s.name() == name).cloned()
    }

    /// What the trust scanner found in one server's tools (see [`UpstreamSource::findings`]),
    /// with shadowing between servers: a tool named like one of another enabled server's
    /// (a medium finding, shown but deciding nothing). `None` when there is no such server.
    pub fn findings(&self, name: &str) -> Option<Vec<toolmux_trust::ToolFindings>> {
        let servers = self.read();
        let source = servers.iter().find(|s| s.name() == name)?;
        let server = source.server();
        let others: Vec<String> = servers
            .iter()
            .filter(|s| s.name() != name && s.server().enabled)
            .flat_map(|s| s.record().tools.into_iter().map(|t| t.name))
            .collect();
        let mut findings = source.findings();
        for tool in source.record().tools {
            let Some(shadowing) =
                toolmux_trust::shadowing(&tool.name, others.iter().map(String::as_str))
            else {
                continue;
            };
            match findings
                .iter_mut()
                .find(|f| f.item.is_tool() && f.tool == tool.name)
            {
                Some(found) => found.findings.push(shadowing),
                None => findings.push(toolmux_trust::ToolFindings {
                    item: toolmux_trust::ItemKind::Tool,
                    action: toolmux_trust::Action::for_findings(
                        server.on_finding,
                        std::slice::from_ref(&shadowing),
                    ),
                    tool: tool.name,
                    findings: vec![shadowing],
                }),
            }
        }
        Some(findings)
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.read().is_empty()
    }

    /// The sources, to add to a hub.
    pub fn sources(&self) -> Vec<Arc<dyn Source>> {
        self.read()
            .iter()
            .map(|s| Arc::new(s.clone()) as Arc<dyn Source>)
            .collect()
    }

    /// Brings the running servers in line with a new configuration, comparing by name, by the
    /// hash of each entry as written and by its checked settings: a new server is added to the hub (and discovered in
    /// the background when its cache does not match); a changed one is stopped and replaced;
    /// a removed one is stopped and taken out of the hub; an unchanged one is left alone,
    /// running process and all. Returns at once; stopping and discovery happen in the
    /// background on the runtime.
    pub fn apply(&self, loaded: &LoadedConfig, hub: &Hub) -> ApplyReport {
        let specs = self.specs(loaded);
        let mut report = ApplyReport::default();
        let mut stopped = Vec::new();
        let mut started = Vec::new();
        {
            // One writer at a time: two reloads racing must not both add the same server.
            let mut servers = self.write();
            let mut next = Vec::with_capacity(specs.len());
            for spec in specs {
                let old = servers.iter().position(|s| s.name() == spec.name);
                match old.map(|i| servers.remove(i)) {
                    // The hash covers what decides the tool list (the transport as written); the
                    // checked entry covers the rest (filters, policies, time limits, and
                    // `${VAR}` values, which the hash leaves out). What the process itself
                    // depends on replaces the server; the rest is applied to it as it runs.
                    // A server that waited for a variable and has it now (or the other way
                    // round) is a new server.
                    Some(old)
                        if old.config_hash() == spec.config_hash
                            && old.unavailable() == spec.unavailable.as_deref()
                            && *old.server() == spec.server =>
                    {
                        next.push(old)
                    }
                    Some(old)
                        if old.config_hash() == spec.config_hash
                            && old.unavailable() == spec.unavailable.as_deref()
                            && old.can_reconfigure(&spec.server) =>
                    {
                        report.reconfigured.push(spec.name.clone());
                        old.reconfigure(spec.server);
                        next.push(old)
                    }
                    old => {
                        match old {
                            Some(old) => {
                                report.changed.push(spec.name.clone());
                                old.retire();
                                stopped.push(old);
                            }
                            None => report.added.push(spec.name.clone()),
                        }
                        let source = self.source(spec, loaded);
                        // Replaces a source with the same id, so a changed server's old tools
                        // leave the catalog in the same step as its new ones arrive.
                        hub.add_source(Arc::new(source.clone()));
                        started.push(source.clone());
                        next.push(source);
                    }
                }
            }
            for old in servers.drain(..) {
                report.removed.push(old.name().to_string());
                hub.remove_source(old.name());
                old.retire();
                stopped.push(old);
            }
            *servers = next;
        }
        let Some(runtime) = tokio::runtime::Handle::try_current()
            .ok()
            .or_else(|| self.runtime.clone())
        else {
            // No runtime to wait on: a stopped server's connection kills its process group
            // when its last clone is dropped, here.
            return report;
        };
        for old in stopped {
            runtime.spawn(async move { old.shutdown().await });
        }
        for server in started.into_iter().filter(UpstreamSource::needs_discovery) {
            self.discover_in_background(&runtime, server);
        }
        report
    }

    /// Discovers one server on `runtime`, tracked so that [`Upstreams::shutdown`] can stop it.
    fn discover_in_background(&self, runtime: &tokio::runtime::Handle, server: UpstreamSource) {
        let stopping = self.stopping.clone();
        self.discoveries.spawn_on(
            async move {
                tokio::select! {
                    // Dropping a discovery half-way stops the process it was starting.
                    () = stopping.cancelled() => {}
                    discovered = server.discover() => {
                        match discovered {
                            Ok(_) => {}
                            // Waiting for a person to sign in is a state, shown as
                            // `needs-sign-in` wherever servers are listed, not a failure.
                            Err(e @ UpstreamError::NeedsSignIn { .. }) => {
                                tracing::info!(error = %e, "discovery waits for a sign-in");
                            }
                            Err(e) => tracing::warn!(error = %e, "background discovery failed"),
                        }
                    }
                }
            },
            runtime,
        );
    }

    /// Starts discovery of every enabled server whose cache is missing, stale or failed, in
    /// the background; returns at once. For long-running modes (`toolmux serve`), so that
    /// start-up never waits for a server.
    pub fn discover_stale_in_background(&self) {
        let Some(runtime) = tokio::runtime::Handle::try_current()
            .ok()
            .or_else(|| self.runtime.clone())
        else {
            tracing::warn!("no async runtime to discover servers on");
            return;
        };
        for server in self.servers().into_iter().filter(|s| s.needs_discovery()) {
            self.discover_in_background(&runtime, server);
        }
    }

    /// Stops the background discoveries (and what they were starting), then every running
    /// server cleanly, all at once. For when toolmux is done with its servers: discoveries
    /// asked for later stop at once.
    pub async fn shutdown(&self) {
        self.stopping.cancel();
        self.discoveries.close();
        self.discoveries.wait().await;
        let servers = self.servers();
        join_all(servers.iter().map(UpstreamSource::shutdown)).await;
    }
}

impl Drop for Upstreams {
    /// Stops running servers cleanly when toolmux is done with them, also when a command
    /// returns without calling [`Upstreams::shutdown`]. Where the runtime cannot wait here (a
    /// single-threaded one), each connection's own drop kills its process group instead.
    fn drop(&mut self) {
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            return;
        };
        if handle.runtime_flavor() != tokio::runtime::RuntimeFlavor::MultiThread {
            return;
        }
        tokio::task::block_in_place(|| handle.block_on(self.shutdown()));
    }
}

/// `<project>/.toolmux/state`, re-exported from the configuration, which owns the layout.
pub use toolmux_config::state_dir;
