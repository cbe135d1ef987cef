//! Opening a project: find its directory, load its configuration, and assemble the hub with its
//! sources and execution log. Every command that touches tools starts here.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;
use toolmux_config::LoadedConfig;
use toolmux_core::Hub;
use toolmux_execlog::{ExecutionLog, LogBudget, LogSettings};
use toolmux_workspace::{WorkspaceLimits, WorkspacePack};

use crate::exit::Failure;

/// A loaded project with its hub.
pub struct Project {
    pub loaded: LoadedConfig,
    pub hub: Hub,
    pub log: Arc<ExecutionLog>,
    /// Counts every call for `/metrics`; the hub records into it and it passes records on to
    /// the execution log.
    pub metrics: Arc<toolmux_api::CallMetrics>,
    /// The configured MCP servers (their sources are in the hub); dropping this stops the
    /// running ones cleanly.
    pub upstreams: Arc<toolmux_upstream::Upstreams>,
    /// Calls with policy `ask` waiting for a person, shared by every channel of the process
    /// (the REST API answers them, the chat stream shows them).
    pub approvals: Arc<toolmux_core::ApprovalQueue>,
    /// Questions the chat's model asked the person (the `chat` source waits on them).
    pub inputs: Arc<toolmux_chat::HumanInputs>,
}

/// The project directory: the one given, else the nearest ancestor with `.toolmux/config.json`,
/// else the current directory.
pub fn locate(given: Option<&Path>) -> Result<PathBuf, Failure> {
    if let Some(dir) = given {
        if !dir.is_dir() {
            return Err(Failure::Usage(format!(
                "project directory `{}` does not exist",
                dir.display()
            )));
        }
        return Ok(dir.to_path_buf());
    }
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    Ok(toolmux_config::find_project_dir(&cwd).unwrap_or(cwd))
}

/// Loads the configuration of a project directory (project file over user file).
pub fn load_config(project_dir: &Path) -> Result<LoadedConfig, Failure> {
    let user = toolmux_config::user_config_path();
    toolmux_config::load(project_dir, user.as_deref()).map_err(|e| Failure::Config(e.to_string()))
}

/// Where the execution log lives.
pub fn log_dir(project_dir: &Path) -> PathBuf {
    toolmux_config::state_dir(project_dir).join("logs")
}

impl Project {
    /// Loads the configuration and assembles the hub.
    pub fn open(given: Option<&Path>) -> Result<Self, Failure> {
        let project_dir = locate(given)?;
        let loaded = load_config(&project_dir)?;
        let config = &loaded.config;
        let log = Arc::new(
            ExecutionLog::open_with_budget(
                LogSettings {
                    dir: log_dir(&loaded.project_dir),
                    retention_days: config.logs.retention_days,
                    result_cap_bytes: config.logs.result_cap_bytes,
                },
                LogBudget {
                    argument_cap_bytes: config.logs.argument_cap_bytes,
                    whole_file_cap_bytes: config.logs.whole_file_cap_bytes,
                    max_day_bytes: config.logs.max_day_bytes,
                },
            )
            .context("cannot open the execution log")?,
        );
        let metrics = Arc::new(toolmux_api::CallMetrics::new(log.clone()));
        let hub = Hub::new(config.hub_settings(), metrics.clone());
        let limits = config.workspace_limits();
        let limits = WorkspaceLimits {
            max_read_bytes: limits.max_read_bytes,
            max_results: limits.max_results,
            max_output_bytes: limits.max_output_bytes,
            // grep holds at most this much of one line: four reads' worth.
            max_line_bytes: limits.max_read_bytes.saturating_mul(4),
            ..WorkspaceLimits::default()
        };
        // The state directory is the project directory's, which with `"root": ".."` (or a
        // symbolic `.toolmux`) is not `<root>/.toolmux/state`.
        let workspace = WorkspacePack::with_state_dir(
            &loaded.root,
            toolmux_config::state_dir(&loaded.project_dir),
            limits,
        )
        .with_context(|| format!("cannot open the project root `{}`", loaded.root.display()))?;
        hub.add_source(Arc::new(workspace));
        if !config.tools.is_empty() {
            hub.add_source(Arc::new(toolmux_scripts::ScriptSource::new(
                &config.tools,
                &loaded.root,
            )));
        }
        // Code mode calls back into the hub, so it holds it weakly (no reference cycle).
        hub.add_source(Arc::new(toolmux_codemode::CodeModeSource::new(
            hub.downgrade(),
            Default::default(),
        )));
        // The chat's `request_human_input` tool, only where a chat can run (a provider is set).
        let inputs = Arc::new(toolmux_chat::HumanInputs::default());
        if !config.providers.is_empty() {
            hub.add_source(Arc::new(toolmux_chat::HumanInputSource::new(
                inputs.clone(),
            )));
        }
        let upstreams = Arc::new(toolmux_upstream::Upstreams::new(
            &loaded,
            &toolmux_config::state_dir(&loaded.project_dir),
        ));
        for source in upstreams.sources() {
            hub.add_source(source);
        }
        Ok(Self {
            loaded,
            hub,
            log,
            metrics,
            upstreams,
            approvals: Arc::new(toolmux_core::ApprovalQueue::new()),
            inputs,
        })
    }
}
