//! What the upstream tests need besides the test kit: a scratch project configured with
//! servers, the upstreams and hub built from it (with a quick backoff), and calling a tool
//! through the hub as the CLI would.

// Each test binary uses part of this module.
#![allow(dead_code)]

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use toolmux_core::{CallContext, CallError, Channel, Hub, NullSink, ToolResult};
use toolmux_testkit::processes::assert_group_gone;
use toolmux_testkit::project::TestProject;
use toolmux_upstream::{ApplyReport, Backoff, UpstreamSource, Upstreams};

/// A temporary project with a configuration.
pub struct Project {
    pub dir: TestProject,
}

impl Project {
    pub fn new(config: &Value) -> Self {
        let dir = TestProject::new();
        dir.config(&config.to_string());
        Self { dir }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Loads the configuration and builds the servers with a quick backoff.
    pub fn upstreams(&self) -> Upstreams {
        let loaded = toolmux_config::load(self.path(), None).expect("config loads");
        let state = toolmux_upstream::state_dir(self.path());
        Upstreams::with_backoff(&loaded, &state, quick_backoff())
    }

    /// A hub with the servers' sources and the configuration's settings.
    pub fn hub(&self, upstreams: &Upstreams) -> Hub {
        let loaded = toolmux_config::load(self.path(), None).expect("config loads");
        let hub = Hub::new(loaded.config.hub_settings(), Arc::new(NullSink));
        for source in upstreams.sources() {
            hub.add_source(source);
        }
        hub
    }

    /// The upstreams and the hub, with the server `name` discovered.
    pub async fn discovered(&self, name: &str) -> (Upstreams, Hub, UpstreamSource) {
        let upstreams = self.upstreams();
        let hub = self.hub(&upstreams);
        let server = upstreams.get(name).expect("configured");
        server.discover().await.expect("discovers");
        (upstreams, hub, server)
    }

    /// Writes `config` as the project's configuration and applies it to the running servers.
    pub fn reconfigure(&self, config: &Value, upstreams: &Upstreams, hub: &Hub) -> ApplyReport {
        std::fs::write(
            toolmux_config::project_config_path(self.path()),
            config.to_string(),
        )
        .expect("edit the config");
        let loaded = toolmux_config::load(self.path(), None).expect("config loads");
        upstreams.apply(&loaded, hub)
    }
}

/// `server` is running; after the upstreams shut down, its process group (returned) is gone.
pub async fn shut_down(upstreams: &Upstreams, server: &UpstreamSource) -> u32 {
    let pgid = server.pid().await.expect("running");
    upstreams.shutdown().await;
    assert_group_gone(pgid);
    pgid
}

/// The server entry `entry` with `key` set to `value`.
pub fn with_setting(mut entry: Value, key: &str, value: Value) -> Value {
    entry[key] = value;
    entry
}

/// The tool `echo` answers `text` with `text`; `why` says what the call shows when it fails.
pub async fn assert_echoes(hub: &Hub, echo: &str, text: &str, why: &str) {
    assert_answers(hub, echo, serde_json::json!({ "text": text }), text, why).await;
}

/// The call of `tool` with `arguments` answers `expected`; `why` says what the call shows when
/// it fails.
pub async fn assert_answers(hub: &Hub, tool: &str, arguments: Value, expected: &str, why: &str) {
    let result = call(hub, tool, arguments).await.expect(why);
    assert_eq!(result.text_content(), expected);
}

/// Three tries within 800 ms, so that a test sees a server given up on in well under a second.
pub fn quick_backoff() -> Backoff {
    Backoff {
        tries: 3,
        first_delay: Duration::from_millis(20),
        window: Duration::from_millis(800),
    }
}

/// Calls a tool through the hub as the CLI would.
pub async fn call(hub: &Hub, name: &str, arguments: Value) -> Result<ToolResult, CallError> {
    hub.call(name, arguments, &CallContext::new(Channel::Cli).trusted())
        .await
}
