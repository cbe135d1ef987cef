//! All configured servers of a project, as one handle: build their sources from the
//! configuration, discover the stale ones in the background, and stop them all on exit.

use std::path::Path;
use std::sync::Arc;

use futures::future::join_all;
use toolmux_config::LoadedConfig;
use toolmux_core::Source;

use crate::cache::config_hash;
use crate::source::{Backoff, ServerSpec, UpstreamSource};

/// The configured MCP servers of one project.
pub struct Upstreams {
    servers: Vec<UpstreamSource>,
}

impl Upstreams {
    /// A source per entry of `mcpServers`, reading each one's discovery cache under
    /// `state_dir`. Starts nothing.
    pub fn new(loaded: &LoadedConfig, state_dir: &Path) -> Self {
        Self::with_backoff(loaded, state_dir, Backoff::default())
    }

    /// [`Upstreams::new`] with the restart policy given.
    pub fn with_backoff(loaded: &LoadedConfig, state_dir: &Path, backoff: Backoff) -> Self {
        let raw = toolmux_config::unexpanded_mcp_servers(loaded);
        let servers = loaded
            .config
            .mcp_servers
            .iter()
            .map(|(name, server)| {
                let entry = raw
                    .get(name.as_str())
                    .cloned()
                    .unwrap_or_else(|| serde_json::to_value(server).unwrap_or_default());
                let spec = ServerSpec {
                    name: name.as_str().to_string(),
                    server: server.clone(),
                    config_hash: config_hash(&entry),
                };
                UpstreamSource::new(spec, &loaded.project_dir, state_dir, backoff)
            })
            .collect();
        Self { servers }
    }

    /// The servers, by name.
    pub fn iter(&self) -> impl Iterator<Item = &UpstreamSource> {
        self.servers.iter()
    }

    /// One server by name.
    pub fn get(&self, name: &str) -> Option<&UpstreamSource> {
        self.servers.iter().find(|s| s.name() == name)
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.servers.is_empty()
    }

    /// The sources, to add to a hub.
    pub fn sources(&self) -> Vec<Arc<dyn Source>> {
        self.servers
            .iter()
            .map(|s| Arc::new(s.clone()) as Arc<dyn Source>)
            .collect()
    }

    /// Starts discovery of every enabled server whose cache is missing, stale or failed, in
    /// the background; returns at once. For long-running modes (`toolmux serve`), so that
    /// start-up never waits for a server.
    pub fn discover_stale_in_background(&self) {
        for server in self.servers.iter().filter(|s| s.needs_discovery()) {
            let server = server.clone();
            tokio::spawn(async move {
                if let Err(e) = server.discover().await {
                    tracing::warn!(error = %e, "background discovery failed");
                }
            });
        }
    }

    /// Stops every running server cleanly, all at once.
    pub async fn shutdown(&self) {
        join_all(self.servers.iter().map(UpstreamSource::shutdown)).await;
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
