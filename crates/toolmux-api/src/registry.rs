//! Registry writes: script tools registered, replaced and removed through the API. Every change
//! goes through one writer task that owns the project's config file, so concurrent requests
//! apply one after another; each is checked as a whole new file before anything is written
//! (a bad definition leaves the file untouched), written atomically, and applied to the running
//! hub at once.

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::{Map, Value};
use tokio::sync::{mpsc, oneshot};
use toolmux_config::{
    LoadedConfig, ToolName, check_config_text, project_config_path, write_atomic,
};
use toolmux_core::Hub;

use crate::error::ApiError;

/// Applies a freshly loaded configuration to the running server (hub settings, script tools).
pub type Apply = Arc<dyn Fn(&LoadedConfig) + Send + Sync>;

/// A change to the `tools` section.
#[derive(Debug)]
pub(crate) enum Edit {
    Add {
        name: String,
        definition: Map<String, Value>,
    },
    Replace {
        name: String,
        definition: Map<String, Value>,
    },
    Remove {
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
}

impl ConfigWriter {
    /// Starts the writer task on the current Tokio runtime.
    pub fn spawn(hub: Hub, files: ConfigFiles, apply: Apply) -> Self {
        let (jobs, mut rx) = mpsc::channel::<Job>(256);
        let files = Arc::new(files);
        tokio::spawn(async move {
            // One job at a time, in arrival order: this loop is the only writer of the file.
            while let Some(job) = rx.recv().await {
                let (hub, files, apply) = (hub.clone(), Arc::clone(&files), Arc::clone(&apply));
                let outcome =
                    tokio::task::spawn_blocking(move || write(&hub, &files, &apply, job.edit))
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

/// One change: read, edit, check, write, reload, apply.
fn write(hub: &Hub, files: &ConfigFiles, apply: &Apply, edit: Edit) -> Result<(), ApiError> {
    let path = project_config_path(&files.project_dir);
    let old = match std::fs::read_to_string(&path) {
        Ok(text) => Some(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => {
            return Err(ApiError::internal(format!(
                "cannot read `{}`: {e}",
                path.display()
            )));
        }
    };
    let mut root: Value = match &old {
        Some(text) => serde_json::from_str(text).map_err(|e| {
            ApiError::conflict(format!(
                "`{}` is not valid JSON ({e}); fix it by hand before changing tools through the API",
                path.display()
            ))
        })?,
        None => Value::Object(Map::new()),
    };
    let Some(object) = root.as_object_mut() else {
        return Err(ApiError::conflict(format!(
            "`{}` does not hold a JSON object; fix it by hand first",
            path.display()
        )));
    };
    let tools = object
        .entry("tools")
        .or_insert_with(|| Value::Object(Map::new()));
    let Some(tools) = tools.as_object_mut() else {
        return Err(ApiError::conflict(format!(
            "`tools` in `{}` is not an object; fix it by hand first",
            path.display()
        )));
    };
    match edit {
        Edit::Add { name, definition } => {
            ToolName::new(&name).map_err(ApiError::unprocessable)?;
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
        Edit::Replace { name, definition } => {
            if !tools.contains_key(&name) {
                return Err(not_a_script_tool(hub, &name));
            }
            tools.insert(name, Value::Object(definition));
        }
        Edit::Remove { name } => {
            if tools.remove(&name).is_none() {
                return Err(not_a_script_tool(hub, &name));
            }
            if tools.is_empty() {
                object.remove("tools");
            }
        }
    }
    let mut text = serde_json::to_string_pretty(&root)
        .map_err(|e| ApiError::internal(format!("cannot serialize the configuration: {e}")))?;
    text.push('\n');
    // The whole new file is checked the way it will be read; nothing is written if it fails.
    check_config_text(&path, &text).map_err(|e| ApiError::unprocessable(e.to_string()))?;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| ApiError::internal(format!("cannot create `{}`: {e}", dir.display())))?;
    }
    write_atomic(&path, text.as_bytes())
        .map_err(|e| ApiError::internal(format!("cannot write `{}`: {e}", path.display())))?;
    match files.load() {
        Ok(loaded) => {
            apply(&loaded);
            Ok(())
        }
        Err(e) => {
            // The project file was valid alone but not merged with the user's: put back what was
            // there (or nothing, if there was no file), and say so if even that fails.
            let undone = match &old {
                Some(old) => write_atomic(&path, old.as_bytes()),
                None => std::fs::remove_file(&path),
            };
            match undone {
                Ok(()) => Err(ApiError::unprocessable(e.to_string())),
                Err(undo) => Err(ApiError::internal(format!(
                    "{e}; and restoring `{}` failed: {undo}",
                    path.display()
                ))),
            }
        }
    }
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
                let touched = events.iter().any(|e| {
                    e.event
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
