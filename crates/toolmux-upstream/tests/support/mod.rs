//! What the upstream tests need besides the test kit: a scratch project configured with
//! servers, the upstreams and hub built from it (with a quick backoff), and calling a tool
//! through the hub as the CLI would.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use toolmux_core::{CallContext, CallError, Channel, Hub, NullSink, ToolResult};
use toolmux_testkit::project::TestProject;
use toolmux_upstream::{Backoff, Upstreams};

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
