//! Registry writes: script tools and MCP servers registered, replaced and removed through the
//! API. Every change goes through one writer task, so concurrent requests apply one after
//! another, and through [`ConfigEditor`], the one editor of the config file (which also locks it
//! against a CLI command writing at the same time): each is checked as a whole new file before
//! anything is written (a bad definition leaves the file untouched), written atomically, and
//! applied to the running server at once.

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::{Map, Value};
use tokio::sync::{mpsc, oneshot};
use toolmux_config::{ConfigDocument, ConfigEditor, LoadedConfig, ToolName, project_config_path};
use toolmux_core::Hub;

use crate::error::ApiError;

/// Applies a freshly loaded configuration to the running server (hub settings, script tools,
/// MCP servers).
pub type Apply = Arc<dyn Fn(&LoadedConfig) + Send + Sync>;

/// The config file's section of script tools.
const TOOLS: &str = "tools";
/// The config file's section of MCP servers.
const SERVERS: &str = "mcpServers";

/// A change to the `tools` or `mcpServers` section.
#[derive(Debug)]
pub(crate) enum Edit {
    AddTool {
        name: String,
        definition: Map<String, Value>,
    },
    ReplaceTool {
        name: String,
        definition: Map<String, Value>,
    },
    RemoveTool {
        name: String,
    },
    AddServer {
        name: String,
        entry: Map<String, Value>,
    },
    ReplaceServer {
        name: String,
        entry: Map<String, Value>,
    },
    RemoveServer {
        name: String,
    },
}

struct Job {
    edit: Edit,
    reply: oneshot::Sender<Result<(), ApiError>>,
}

/// The handle to the writer task. Cheap to clone; the task ends when the last handle is gone.
#[derive(Clone)]
pub struct ConfigWriter {
    jobs: mpsc::Sender<Job>,
}

/// Where the configuration lives and how to reload it.
#[derive(Clone, Debug)]
pub struct ConfigFiles {
    /// The directory that holds `.toolmux/`.
    pub project_dir: PathBuf,
    /// The user's file, read under the project file.
    pub user_config: Option<PathBuf>,
}

impl ConfigFiles {
    /// Loads the merged configuration from disk.
    pub fn load(&self) -> Result<LoadedConfig, toolmux_config::ConfigError> {
        toolmux_config::load(&self.project_dir, self.user_config.as_deref())
    }

    /// The editor of the project's file.
    pub fn editor(&self) -> ConfigEditor {
        ConfigEditor::new(&self.project_dir, self.user_config.as_deref())
    }
}

impl ConfigWriter {
    /// Starts the writer task on the current Tokio runtime.
    pub fn spawn(hub: Hub, files: ConfigFiles, apply: Apply) -> Self {
        let (jobs, mut rx) = mpsc::channel::<Job>(256);
        let editor = files.editor();
        tokio::spawn(async move {
            // One job at a time, in arrival order: within this process, this loop is the only
            // writer of the file (the editor's lock keeps other processes out).
            while let Some(job) = rx.recv().await {
                let (hub, editor, apply) = (hub.clone(), editor.clone(), Arc::clone(&apply));
                let outcome =
                    tokio::task::spawn_blocking(move || write(&hub, &editor, &apply, job.edit))
                        .await
                        .unwrap_or_else(|e| {
                            Err(ApiError::internal(format!(
                                "the configuration writer failed: {e}"
                            )))
                        });
                let _ = job.reply.send(outcome);
            }
        });
        Self { jobs }
    }

    pub(crate) async fn submit(&self, edit: Edit) -> Result<(), ApiError> {
        let (reply, answer) = oneshot::channel();
        self.jobs
            .send(Job { edit, reply })
            .await
            .map_err(|_| ApiError::unavailable("the configuration writer has stopped"))?;
        answer
            .await
            .map_err(|_| ApiError::unavailable("the configuration writer has stopped"))?
    }
}

/// One change: edit (checked, written atomically, under the lock), then apply.
fn write(hub: &Hub, editor: &ConfigEditor, apply: &Apply, edit: Edit) -> Result<(), ApiError> {
    let edited = editor.edit(|doc| change(hub, doc, edit))?;
    apply(&edited.loaded);
    Ok(())
}

fn change(hub: &Hub, doc: &mut ConfigDocument, edit: Edit) -> Result<(), ApiError> {
    match edit {
        Edit::AddTool { name, definition } => {
            ToolName::new(&name).map_err(ApiError::unprocessable)?;
            let tools = doc.section_mut(TOOLS)?;
            if tools.contains_key(&name) {
                return Err(ApiError::conflict(format!(
                    "a script tool named `{name}` exists already; replace it with PUT /api/tools/{name}"
                )));
            }
            if let Some(entry) = hub.catalog().get(&name)
                && entry.descriptor.source != toolmux_config::SCRIPT_SOURCE_ID
            {
                return Err(ApiError::conflict(format!(
                    "the name `{name}` is taken by a tool of source `{}`",
                    entry.descriptor.source
                )));
            }
            tools.insert(name, Value::Object(definition));
        }
        Edit::ReplaceTool { name, definition } => {
            let tools = doc.section_mut(TOOLS)?;
            if !tools.contains_key(&name) {
                return Err(not_a_script_tool(hub, &name));
            }
            tools.insert(name, Value::Object(definition));
        }
        Edit::RemoveTool { name } => {
            if doc.section_mut(TOOLS)?.remove(&name).is_none() {
                return Err(not_a_script_tool(hub, &name));
            }
        }
        Edit::AddServer { name, entry } => {
            if doc.section(SERVERS)?.is_some_and(|s| s.contains_key(&name)) {
                return Err(ApiError::conflict(format!(
                    "an MCP server named `{name}` exists already; replace it with PUT /api/mcp-servers/{name}"
                )));
            }
            // A server's tools are a source named after it; another source of that name (the
            // workspace pack, the scripts, a server in the user's file) would be replaced.
            if hub.catalog().sources().iter().any(|s| s.id == name) {
                return Err(ApiError::conflict(format!(
                    "the name `{name}` is taken by another source of tools"
                )));
            }
            doc.section_mut(SERVERS)?.insert(name, Value::Object(entry));
        }
        Edit::ReplaceServer { name, entry } => {
            let servers = doc.section_mut(SERVERS)?;
            if !servers.contains_key(&name) {
                return Err(not_a_project_server(hub, &name));
            }
            servers.insert(name, Value::Object(entry));
        }
        Edit::RemoveServer { name } => {
            if doc.section_mut(SERVERS)?.remove(&name).is_none() {
                return Err(not_a_project_server(hub, &name));
            }
        }
    }
    Ok(())
}

fn not_a_script_tool(hub: &Hub, name: &str) -> ApiError {
    match hub.catalog().get(name) {
        Some(entry) => ApiError::conflict(format!(
            "`{name}` is a tool of source `{}`; only script tools can be changed through the API",
            entry.descriptor.source
        )),
        None => ApiError::not_found(format!("no script tool named `{name}`")),
    }
}

fn not_a_project_server(hub: &Hub, name: &str) -> ApiError {
    if hub.catalog().sources().iter().any(|s| s.id == name) {
        return ApiError::conflict(format!(
            "`{name}` is not an MCP server of the project's configuration file (it may come from \
             the user's `~/.config/toolmux/config.json`, which the API does not change)"
        ));
    }
    ApiError::not_found(format!("no MCP server named `{name}`"))
}

/// Watches the project's config file and applies every valid change made by hand. A change
/// that does not load is reported and ignored: the last good configuration stays in force.
pub struct ConfigWatcher {
    _debouncer: notify_debouncer_full::Debouncer<
        notify::RecommendedWatcher,
        notify_debouncer_full::RecommendedCache,
    >,
}

/// How long the file must be quiet before a change is read (editors write in several steps).
const DEBOUNCE: std::time::Duration = std::time::Duration::from_millis(200);

impl ConfigWatcher {
    /// Starts watching. The folder `.toolmux/` is watched rather than the file, so that a file
    /// replaced by rename (as editors and [`write_atomic`] do) stays watched.
    pub fn start(files: ConfigFiles, apply: Apply) -> Result<Self, notify::Error> {
        use notify::RecursiveMode;

        let path = project_config_path(&files.project_dir);
        let dir = path
            .parent()
            .map(std::path::Path::to_path_buf)
            .unwrap_or_else(|| files.project_dir.clone());
        std::fs::create_dir_all(&dir)?;
        let name = path.file_name().map(std::ffi::OsStr::to_os_string);
        let mut debouncer = notify_debouncer_full::new_debouncer(
            DEBOUNCE,
            None,
            move |result: notify_debouncer_full::DebounceEventResult| {
                let Ok(events) = result else {
                    return;
                };
                // Only a change counts: reading the file (this watcher's own load does) is an
                // access event, which would otherwise reload it again and again.
                let touched = events.iter().any(|e| {
                    !matches!(
                        e.event.kind,
                        notify::EventKind::Access(_) | notify::EventKind::Other
                    ) && e
                        .event
                        .paths
                        .iter()
                        .any(|p| p.file_name().map(std::ffi::OsStr::to_os_string) == name)
                });
                if !touched {
                    return;
                }
                match files.load() {
                    Ok(loaded) => {
                        tracing::info!("configuration reloaded");
                        apply(&loaded);
                    }
                    Err(e) => tracing::error!(
                        "the configuration changed but cannot be used; the last good one stays \
                         in force: {e}"
                    ),
                }
            },
        )?;
        debouncer.watch(&dir, RecursiveMode::NonRecursive)?;
        Ok(Self {
            _debouncer: debouncer,
        })
    }
}
