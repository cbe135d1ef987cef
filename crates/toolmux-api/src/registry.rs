//! Registry writes: script tools and upstream servers registered, replaced and removed through the
//! API. Every change goes through one writer task, so concurrent requests apply one after
//! another, and through [`ConfigEditor`], the one editor of the config file and of seed 004's
//! registries (which also locks them against a CLI command writing at the same time): each is
//! checked as a whole new configuration before anything is written (a bad definition leaves the
//! file untouched), written atomically, and applied to the running server at once.
//!
//! An entry is changed in the file it came from: a tool of a `tools.json` or a server of an
//! `mcp.json` in that registry, in its format; anything else in the project's config file. A
//! new server goes to the first `mcp.json` the configuration names, else the config file; a
//! new tool to the first `tools.json` when its definition fits the seed's format (a script run
//! by the interpreter its extension names, no `env` or `cwd`), else the config file.

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::{Map, Value};
use tokio::sync::{mpsc, oneshot};
use toolmux_config::{
    ConfigDocument, ConfigEditor, LoadedConfig, RegistryDocument, RegistryKind, SecretLookup,
    ToolName, project_config_path, tool_fits_registry,
};
use toolmux_core::{Hub, Policy};

use crate::error::ApiError;

/// Applies a freshly loaded configuration to the running server (hub settings, script tools,
/// upstream servers).
pub type Apply = Arc<dyn Fn(&LoadedConfig) + Send + Sync>;

/// A section of the config file that the API changes, one entry per name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Section {
    /// `tools`: script tools.
    ScriptTools,
    /// `mcpServers`: upstream servers.
    Upstreams,
}

/// How a [`Section`] is named in the file, in messages and in routes.
struct SectionNames {
    /// Its key in the config file.
    key: &'static str,
    /// One entry, for messages: "a script tool needs a `name`".
    entry: &'static str,
    /// Where the API serves its entries, for the hint on replacing one.
    route: &'static str,
    /// The verb of its POST route, for the hint on renaming.
    add_verb: &'static str,
}

impl Section {
    /// The kind of registry that holds entries of this section.
    fn registry_kind(self) -> RegistryKind {
        match self {
            Self::ScriptTools => RegistryKind::Tools,
            Self::Upstreams => RegistryKind::Servers,
        }
    }

    fn names(self) -> &'static SectionNames {
        match self {
            Self::ScriptTools => &SectionNames {
                key: "tools",
                entry: "a script tool",
                route: "/api/tools",
                add_verb: "registering",
            },
            Self::Upstreams => &SectionNames {
                key: "mcpServers",
                entry: "an MCP server",
                route: "/api/mcp-servers",
                add_verb: "adding",
            },
        }
    }

    /// Why `name` cannot be replaced or removed: it is not an entry of this section of the
    /// project's file or of a registry. 409 when something else has the name (so the caller
    /// learns it cannot be changed here), 404 when nothing has it.
    fn missing(self, hub: &Hub, name: &str) -> ApiError {
        match self {
            Self::ScriptTools => match hub.catalog().get(name) {
                Some(entry) if entry.descriptor.source == toolmux_config::SCRIPT_SOURCE_ID => {
                    ApiError::conflict(format!(
                        "`{name}` is not a script tool of the project's configuration file or \
                         its registries (it may come from the user's \
                         `~/.config/toolmux/config.json`, which the API does not change)"
                    ))
                }
                Some(entry) => ApiError::conflict(format!(
                    "`{name}` is a tool of source `{}`; only script tools can be changed through the API",
                    entry.descriptor.source
                )),
                None => ApiError::not_found(format!("no script tool named `{name}`")),
            },
            Self::Upstreams if hub.catalog().sources().iter().any(|s| s.id == name) => {
                ApiError::conflict(format!(
                    "`{name}` is not an MCP server of the project's configuration file (it may \
                     come from the user's `~/.config/toolmux/config.json`, which the API does \
                     not change)"
                ))
            }
            Self::Upstreams => no_server_named(name),
        }
    }

    /// Checks that `name` is free to add: 409 when the file being edited (`in_file`) or the
    /// catalog has it already.
    fn check_free(self, hub: &Hub, in_file: bool, name: &str) -> Result<(), ApiError> {
        if self == Self::ScriptTools {
            ToolName::new(name).map_err(ApiError::unprocessable)?;
        }
        if in_file {
            return Err(ApiError::conflict(format!(
                "{} named `{name}` exists already; replace it with PUT {}/{name}",
                self.names().entry,
                self.names().route
            )));
        }
        match self {
            Self::ScriptTools => match hub.catalog().get(name) {
                Some(entry) if entry.descriptor.source != toolmux_config::SCRIPT_SOURCE_ID => {
                    Err(ApiError::conflict(format!(
                        "the name `{name}` is taken by a tool of source `{}`",
                        entry.descriptor.source
                    )))
                }
                _ => Ok(()),
            },
            // A server's tools are a source named after it; another source of that name (the
            // workspace pack, the scripts, a server in the user's file) would be replaced.
            Self::Upstreams if hub.catalog().sources().iter().any(|s| s.id == name) => {
                Err(ApiError::conflict(format!(
                    "the name `{name}` is taken by another source of tools"
                )))
            }
            Self::Upstreams => Ok(()),
        }
    }
}

/// 404 for an upstream server name that nothing has.
pub(crate) fn no_server_named(name: &str) -> ApiError {
    ApiError::not_found(format!("no MCP server named `{name}`"))
}

/// A change to one named entry of the file, made from a request: an entry of a [`Section`], or
/// one tool's own settings.
#[derive(Debug)]
pub(crate) struct Edit {
    name: String,
    change: Change,
}

#[derive(Debug)]
enum Change {
    Add(Section, Map<String, Value>),
    Replace(Section, Map<String, Value>),
    Remove(Section),
    /// `toolSettings.<name>.enabled` and `policies.tools.<name>` (`Some(None)` removes it).
    ToolState {
        enabled: Option<bool>,
        policy: Option<Option<Policy>>,
    },
}

impl Edit {
    /// Adds the entry a POST body defines; the body names it (`name`, taken out of the entry).
    pub(crate) fn add(section: Section, mut body: Map<String, Value>) -> Result<Self, ApiError> {
        let name = match body.remove("name") {
            Some(Value::String(name)) => name,
            Some(_) => return Err(ApiError::unprocessable("`name` must be a string")),
            None => {
                return Err(ApiError::unprocessable(format!(
                    "{} needs a `name`",
                    section.names().entry
                )));
            }
        };
        Ok(Self {
            name,
            change: Change::Add(section, body),
        })
    }

    /// Replaces the entry the path names with a PUT body; a `name` in the body may only repeat
    /// the path's, because a rename would silently leave the old entry behind.
    pub(crate) fn replace(
        section: Section,
        name: String,
        mut body: Map<String, Value>,
    ) -> Result<Self, ApiError> {
        if let Some(Value::String(named)) = body.remove("name")
            && named != name
        {
            return Err(ApiError::unprocessable(format!(
                "the body names `{named}` but the path names `{name}`; rename by removing and {}",
                section.names().add_verb
            )));
        }
        Ok(Self {
            name,
            change: Change::Replace(section, body),
        })
    }

    /// Removes the entry the path names.
    pub(crate) fn remove(section: Section, name: String) -> Self {
        Self {
            name,
            change: Change::Remove(section),
        }
    }

    /// Switches a tool on or off and sets or removes its own policy, as the path and body say.
    pub(crate) fn tool_state(
        name: String,
        enabled: Option<bool>,
        policy: Option<Option<Policy>>,
    ) -> Self {
        Self {
            name,
            change: Change::ToolState { enabled, policy },
        }
    }
}

struct Job {
    edit: Edit,
    reply: oneshot::Sender<Result<(), ApiError>>,
}

/// The handle to the writer task. Cheap to clone; the task ends when the last handle is gone.
#[derive(Clone)]
pub struct ConfigWriter {
    jobs: mpsc::Sender<Job>,
    /// The directory that holds `.toolmux/`, where `POST /api/import` looks for other clients' files.
    pub(crate) project_dir: PathBuf,
}

/// Where the configuration lives, what its `${secret:NAME}` references read, and how to reload
/// it.
#[derive(Clone, Debug)]
pub struct ConfigFiles {
    /// The directory that holds `.toolmux/`.
    pub project_dir: PathBuf,
    /// The user's file, read under the project file.
    pub user_config: Option<PathBuf>,
    /// The secret store references read; none: a reference does not load.
    pub secrets: Option<Arc<dyn SecretLookup>>,
}

impl ConfigFiles {
    /// Loads the merged configuration from disk.
    pub fn load(&self) -> Result<LoadedConfig, toolmux_config::ConfigError> {
        self.editor().load()
    }

    /// The editor of the project's file.
    pub fn editor(&self) -> ConfigEditor {
        ConfigEditor::new(&self.project_dir, self.user_config.as_deref())
            .with_secrets(self.secrets.clone())
    }
}

impl ConfigWriter {
    /// Starts the writer task on the current Tokio runtime.
    pub fn spawn(hub: Hub, files: ConfigFiles, apply: Apply) -> Self {
        let (jobs, mut rx) = mpsc::channel::<Job>(256);
        let editor = files.editor();
        let project_dir = files.project_dir.clone();
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
        Self { jobs, project_dir }
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

impl crate::ApiState {
    /// Makes `edit` through the one writer task and waits until it is written and applied.
    /// Returns the entry's name, so that a handler can show the entry as it now is.
    pub(crate) async fn write_config(&self, edit: Edit) -> Result<String, ApiError> {
        let name = edit.name.clone();
        self.inner
            .writer
            .as_ref()
            .ok_or_else(|| ApiError::unavailable("this server does not change its configuration"))?
            .submit(edit)
            .await?;
        Ok(name)
    }
}

/// One change: edit the file the entry belongs in (checked, written atomically, under the
/// lock), then apply.
fn write(hub: &Hub, editor: &ConfigEditor, apply: &Apply, edit: Edit) -> Result<(), ApiError> {
    let edited = match registry_for(editor, &edit)? {
        Some(registry) => editor.edit_registry(&registry, |doc| change_registry(hub, doc, edit))?,
        None => editor.edit(|doc| change(hub, doc, edit))?,
    };
    apply(&edited.loaded);
    Ok(())
}

/// The registry `edit` changes, if it is one (see the module's documentation); `None`: the
/// project's config file.
fn registry_for(editor: &ConfigEditor, edit: &Edit) -> Result<Option<PathBuf>, ApiError> {
    let (section, entry) = match &edit.change {
        Change::Add(section, entry) => (*section, Some(entry)),
        Change::Replace(section, _) | Change::Remove(section) => (*section, None),
        Change::ToolState { .. } => return Ok(None),
    };
    let loaded = editor.load().map_err(toolmux_config::EditError::from)?;
    let kind = section.registry_kind();
    let defined = match section {
        Section::ScriptTools => loaded.config.tools.keys().any(|n| n.as_str() == edit.name),
        Section::Upstreams => loaded
            .config
            .upstreams
            .keys()
            .chain(loaded.unavailable_servers.keys())
            .any(|n| n.as_str() == edit.name),
    };
    let registry = match entry {
        // A name already taken is refused (409) by the writer of the file that has it.
        Some(_) if defined => loaded.registry_of(kind, &edit.name),
        Some(entry) => loaded
            .first_registry(kind)
            .filter(|_| kind == RegistryKind::Servers || tool_fits_registry(entry).is_ok()),
        None => loaded.registry_of(kind, &edit.name),
    };
    Ok(registry.map(std::path::Path::to_path_buf))
}

/// [`change`] for an entry of a registry.
fn change_registry(hub: &Hub, doc: &mut RegistryDocument, edit: Edit) -> Result<(), ApiError> {
    let Edit { name, change } = edit;
    match change {
        Change::Add(section, entry) => {
            section.check_free(hub, doc.contains(&name)?, &name)?;
            doc.put(&name, entry)?;
        }
        Change::Replace(section, entry) => {
            if !doc.contains(&name)? {
                return Err(section.missing(hub, &name));
            }
            doc.put(&name, entry)?;
        }
        Change::Remove(section) => {
            if !doc.remove(&name)? {
                return Err(section.missing(hub, &name));
            }
        }
        // Settings live in the config file (`registry_for`).
        Change::ToolState { .. } => {
            return Err(ApiError::internal(
                "a tool's settings are kept in the config file, not a registry",
            ));
        }
    }
    Ok(())
}

fn change(hub: &Hub, doc: &mut ConfigDocument, edit: Edit) -> Result<(), ApiError> {
    let Edit { name, change } = edit;
    match change {
        Change::Add(section, entry) => {
            let in_file = doc
                .section(section.names().key)?
                .is_some_and(|s| s.contains_key(&name));
            section.check_free(hub, in_file, &name)?;
            doc.section_mut(section.names().key)?
                .insert(name, Value::Object(entry));
        }
        Change::Replace(section, entry) => {
            let entries = doc.section_mut(section.names().key)?;
            if !entries.contains_key(&name) {
                return Err(section.missing(hub, &name));
            }
            entries.insert(name, Value::Object(entry));
        }
        Change::Remove(section) => {
            if doc
                .section_mut(section.names().key)?
                .remove(&name)
                .is_none()
            {
                return Err(section.missing(hub, &name));
            }
        }
        Change::ToolState { enabled, policy } => {
            // Only a tool the catalog knows (listed or switched off), so a typo is not saved
            // as a setting of a tool that does not exist.
            hub.catalog().known(&name)?;
            if let Some(enabled) = enabled {
                doc.set_tool_enabled(&name, enabled)?;
            }
            if let Some(policy) = policy {
                doc.set_tool_policy(&name, policy)?;
            }
        }
    }
    Ok(())
}

/// Watches the project's config file and applies every valid change made by hand. A change
/// that does not load is reported and ignored: the last good configuration stays in force. So
/// is a file that disappeared (deleted, renamed away by an editor, absent on the branch `git`
/// switched to): read as a configuration it would be empty, and applying that would drop every
/// key and deny rule the server was started with. When a file appears again, it is applied.
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
        let watched = path.clone();
        // Seed 004's registries (`registries`) are part of the configuration: an edit of one
        // reloads it too. Those named when the server starts are watched.
        let registries: Vec<PathBuf> = files
            .load()
            .map(|l| toolmux_config::registry_paths(&l.config, &l.project_dir))
            .unwrap_or_default();
        let registry_events = registries.clone();
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
                    ) && e.event.paths.iter().any(|p| {
                        p.file_name().map(std::ffi::OsStr::to_os_string) == name
                            || registry_events.contains(p)
                    })
                });
                if !touched {
                    return;
                }
                if !watched.is_file() {
                    tracing::warn!(
                        "the configuration file `{}` is gone; the last good configuration stays \
                         in force (its keys and policies too) until the file is back",
                        watched.display()
                    );
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
        for folder in registries.iter().filter_map(|p| p.parent()) {
            if let Err(e) = debouncer.watch(folder, RecursiveMode::NonRecursive) {
                tracing::warn!(
                    "cannot watch the registry folder `{}`: {e}",
                    folder.display()
                );
            }
        }
        Ok(Self {
            _debouncer: debouncer,
        })
    }
}
