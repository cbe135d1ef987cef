//! The one editor of a project's `.toolmux/config.json`: every command and every API route that
//! changes the file goes through [`ConfigEditor::edit`]. An edit reads the file as JSON (keys in
//! the user's order, `${VAR}` references as written), changes the value, checks the whole result
//! with the real loader (merged with the user's file, exactly as it will be read), and only then
//! writes it with `toolmux_files::write_atomic`. It holds an advisory lock on `.toolmux/state/config.lock`
//! from the read to the rename, so that a CLI command and a running server never interleave
//! their read-modify-write cycles and neither loses the other's change.

use std::fs::{self, File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Map, Value};
use toolmux_core::Policy;
use toolmux_files::{remove_stale_temps, state_dir, write_atomic};

use crate::env::Lookups;
use crate::error::ConfigError;
use crate::load::{LoadedConfig, load_merged, project_config_path};
use crate::registry_edit::RegistryDocument;
use crate::secret_refs::SecretLookup;

/// Why an edit was not made. In every case the file on disk is as it was.
#[derive(Debug, thiserror::Error)]
pub enum EditError {
    /// The file or its lock could not be read or written.
    #[error("cannot {action} `{}`: {source}", path.display())]
    Io {
        /// What was being done (`read`, `write`, `lock`).
        action: &'static str,
        /// The file.
        path: PathBuf,
        /// The system's error.
        #[source]
        source: io::Error,
    },
    /// The file holds something a program cannot edit without losing it (not JSON, not an
    /// object, a section that is not an object): a person has to fix it first.
    #[error("{}: {message}; fix it by hand first", path.display())]
    Uneditable {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// The edited configuration does not pass the loader's checks, so it was not written.
    #[error(transparent)]
    Invalid(#[from] ConfigError),
}

/// The project's configuration file as an editable JSON object, handed to an edit.
pub struct ConfigDocument {
    path: PathBuf,
    root: Map<String, Value>,
    touched: Vec<String>,
}

impl ConfigDocument {
    /// The file being edited.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The whole top-level object.
    pub fn root_mut(&mut self) -> &mut Map<String, Value> {
        &mut self.root
    }

    /// A top-level section (`tools`, `mcpServers`), `None` when the file has none.
    pub fn section(&self, key: &str) -> Result<Option<&Map<String, Value>>, EditError> {
        match self.root.get(key) {
            None => Ok(None),
            Some(Value::Object(map)) => Ok(Some(map)),
            Some(_) => Err(self.not_an_object(key)),
        }
    }

    /// A top-level section to change, created when missing. A section left empty by the edit
    /// is removed again, so that adding and removing an entry leaves the file as it was.
    pub fn section_mut(&mut self, key: &str) -> Result<&mut Map<String, Value>, EditError> {
        if matches!(self.root.get(key), Some(v) if !v.is_object()) {
            return Err(self.not_an_object(key));
        }
        if !self.touched.iter().any(|k| k == key) {
            self.touched.push(key.to_string());
        }
        match self
            .root
            .entry(key)
            .or_insert_with(|| Value::Object(Map::new()))
        {
            Value::Object(map) => Ok(map),
            // Checked above; kept as an error rather than a panic.
            _ => Err(EditError::Uneditable {
                path: self.path.clone(),
                message: format!("`{key}` is not an object"),
            }),
        }
    }

    /// Switches one tool on or off (`toolSettings.<name>.enabled`). Switching it on removes
    /// the setting rather than writing `true`, so a tool switched off and on again leaves the
    /// file as it was.
    pub fn set_tool_enabled(&mut self, name: &str, enabled: bool) -> Result<(), EditError> {
        let path = self.path.clone();
        let settings = self.section_mut(TOOL_SETTINGS)?;
        if enabled {
            let now_empty = match settings.get_mut(name) {
                None => false,
                Some(Value::Object(entry)) => {
                    entry.remove("enabled");
                    entry.is_empty()
                }
                Some(_) => return Err(nested_not_an_object(path, TOOL_SETTINGS, name)),
            };
            if now_empty {
                settings.remove(name);
            }
        } else {
            match settings
                .entry(name)
                .or_insert_with(|| Value::Object(Map::new()))
            {
                Value::Object(entry) => {
                    entry.insert("enabled".into(), Value::Bool(false));
                }
                _ => return Err(nested_not_an_object(path, TOOL_SETTINGS, name)),
            }
        }
        Ok(())
    }

    /// Sets one tool's own policy (`policies.tools.<name>`), or with `None` removes it, so the
    /// tool's other rules (patterns, its source, its annotations) decide again.
    pub fn set_tool_policy(&mut self, name: &str, policy: Option<Policy>) -> Result<(), EditError> {
        let path = self.path.clone();
        let policies = self.section_mut(POLICIES)?;
        let Value::Object(tools) = policies
            .entry("tools")
            .or_insert_with(|| Value::Object(Map::new()))
        else {
            return Err(nested_not_an_object(path, POLICIES, "tools"));
        };
        match policy {
            Some(policy) => {
                tools.insert(name.to_string(), Value::String(policy.to_string()));
            }
            None => {
                tools.remove(name);
            }
        }
        if tools.is_empty() {
            policies.remove("tools");
        }
        Ok(())
    }

    fn not_an_object(&self, key: &str) -> EditError {
        EditError::Uneditable {
            path: self.path.clone(),
            message: format!("`{key}` is not an object"),
        }
    }
}

const TOOL_SETTINGS: &str = "toolSettings";
const POLICIES: &str = "policies";

fn nested_not_an_object(path: PathBuf, section: &str, key: &str) -> EditError {
    EditError::Uneditable {
        path,
        message: format!("`{section}.{key}` is not an object"),
    }
}

/// What an edit returned, and the configuration as it now stands.
#[derive(Debug)]
pub struct Edited<T> {
    /// What the edit function returned.
    pub value: T,
    /// The merged configuration after the edit, as a fresh [`crate::load`] would read it.
    pub loaded: LoadedConfig,
    /// Whether the file changed (an edit that changes nothing writes nothing).
    pub written: bool,
}

/// The editor of one project's configuration file. Cheap to clone; holds no lock between edits.
#[derive(Clone, Debug)]
pub struct ConfigEditor {
    project_dir: PathBuf,
    user_config: Option<PathBuf>,
    secrets: Option<Arc<dyn SecretLookup>>,
}

impl ConfigEditor {
    /// The editor of `<project_dir>/.toolmux/config.json`; `user_config` is the user's file
    /// that results are checked merged with (as [`crate::load`] takes it).
    pub fn new(project_dir: &Path, user_config: Option<&Path>) -> Self {
        Self {
            project_dir: project_dir.to_path_buf(),
            user_config: user_config.map(Path::to_path_buf),
            secrets: None,
        }
    }

    /// The same editor, checking results with `${secret:NAME}` read from `secrets` (without
    /// one, a configuration that holds such a reference does not load).
    pub fn with_secrets(self, secrets: Option<Arc<dyn SecretLookup>>) -> Self {
        Self { secrets, ..self }
    }

    /// What references resolve against when this editor loads: toolmux's environment, and its
    /// secret store when it has one.
    fn env(&self) -> Lookups<'_> {
        match &self.secrets {
            Some(secrets) => Lookups::process().with_secrets(secrets.as_ref()),
            None => Lookups::process(),
        }
    }

    /// The file this editor changes.
    pub fn path(&self) -> PathBuf {
        project_config_path(&self.project_dir)
    }

    /// The directory that holds `.toolmux/`.
    pub fn project_dir(&self) -> &Path {
        &self.project_dir
    }

    /// Loads the merged configuration as it stands on disk.
    pub fn load(&self) -> Result<LoadedConfig, ConfigError> {
        load_merged(
            &self.project_dir,
            self.user_config.as_deref(),
            self.env(),
            None,
        )
    }

    /// Runs one edit under the file lock: read, `change`, check the whole result, write
    /// atomically. When `change` fails, or the result does not load, nothing is written.
    /// Blocks while another process edits the file.
    pub fn edit<T, E>(
        &self,
        change: impl FnOnce(&mut ConfigDocument) -> Result<T, E>,
    ) -> Result<Edited<T>, E>
    where
        E: From<EditError>,
    {
        let path = self.path();
        let _lock = self.lock()?;
        let old = read_object(&path)?;
        let mut doc = ConfigDocument {
            path: path.clone(),
            root: old.clone().unwrap_or_default(),
            touched: Vec::new(),
        };
        let value = change(&mut doc)?;
        for key in &doc.touched {
            if doc
                .root
                .get(key)
                .is_some_and(|v| v.as_object().is_some_and(Map::is_empty))
            {
                doc.root.remove(key);
            }
        }
        let unchanged = match &old {
            Some(old) => *old == doc.root,
            None => doc.root.is_empty(),
        };
        let text = file_text(&path, &Value::Object(doc.root))?;
        // Checked merged with the user's file, the way every command will read it; nothing is
        // written when that fails.
        let loaded = if unchanged {
            self.load().map_err(EditError::from)?
        } else {
            load_merged(
                &self.project_dir,
                self.user_config.as_deref(),
                self.env(),
                Some((&path, &text)),
            )
            .map_err(EditError::from)?
        };
        if !unchanged {
            write_config_file(&path, text.as_bytes())?;
        }
        Ok(Edited {
            value,
            loaded,
            written: !unchanged,
        })
    }

    /// Runs one edit of the registry at `path` (one the configuration names, see
    /// [`crate::registry_edit`]) under the same lock as every configuration edit: read it,
    /// `change` it in its own format, check the whole configuration with the result, write it
    /// atomically. When `change` fails, or the result does not load, nothing is written.
    pub fn edit_registry<T, E>(
        &self,
        path: &Path,
        change: impl FnOnce(&mut RegistryDocument) -> Result<T, E>,
    ) -> Result<Edited<T>, E>
    where
        E: From<EditError>,
    {
        let _lock = self.lock()?;
        remove_stale_temps(path);
        let before = self.load().map_err(EditError::from)?;
        // The registry as this load read it (inside the project, checked): not read again,
        // which could follow a link swapped in since.
        let Some(registry) = before.registry_files.iter().find(|r| r.file.path == path) else {
            return Err(EditError::Uneditable {
                path: path.to_path_buf(),
                message: "the configuration names no such registry".to_string(),
            }
            .into());
        };
        let old = registry
            .file
            .unexpanded()
            .ok_or_else(|| EditError::Uneditable {
                path: path.to_path_buf(),
                message: "the file is not valid JSON".to_string(),
            })?;
        let mut doc = RegistryDocument::new(path.to_path_buf(), old.clone(), before.root.clone());
        let value = change(&mut doc)?;
        if doc.root == old {
            return Ok(Edited {
                value,
                loaded: before,
                written: false,
            });
        }
        let text = file_text(path, &doc.root)?;
        let loaded = load_merged(
            &self.project_dir,
            self.user_config.as_deref(),
            self.env(),
            Some((path, &text)),
        )
        .map_err(EditError::from)?;
        write_atomic(path, text.as_bytes()).map_err(|source| EditError::Io {
            action: "write",
            path: path.to_path_buf(),
            source,
        })?;
        Ok(Edited {
            value,
            loaded,
            written: true,
        })
    }

    /// Replaces the whole file with `bytes` under the lock, without checking them: for
    /// `toolmux init`, which writes a starter configuration of its own making.
    pub fn overwrite(&self, bytes: &[u8]) -> Result<(), EditError> {
        let path = self.path();
        let _lock = self.lock()?;
        write_config_file(&path, bytes)
    }

    /// Takes the exclusive advisory lock (`flock` on Unix), released when the file is dropped.
    /// A separate lock file rather than the config file itself: [`write_atomic`] replaces the
    /// config file's inode, and a lock on a replaced inode excludes nobody.
    fn lock(&self) -> Result<File, EditError> {
        let dir = state_dir(&self.project_dir);
        let path = dir.join("config.lock");
        let io_error = |action, source| EditError::Io {
            action,
            path: path.clone(),
            source,
        };
        fs::create_dir_all(&dir).map_err(|e| io_error("create", e))?;
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|e| io_error("open", e))?;
        file.lock().map_err(|e| io_error("lock", e))?;
        // Every writer of the config file holds this lock while it writes, so a temporary file
        // found now was left by a writer that died between its write and its rename.
        remove_stale_temps(&project_config_path(&self.project_dir));
        Ok(file)
    }
}

/// Writes the config file atomically, creating `.toolmux/` first when a project has none yet.
/// Callers hold the lock: both ways of writing the file end here.
fn write_config_file(path: &Path, bytes: &[u8]) -> Result<(), EditError> {
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir).map_err(|source| EditError::Io {
            action: "create",
            path: dir.to_path_buf(),
            source,
        })?;
    }
    write_atomic(path, bytes).map_err(|source| EditError::Io {
        action: "write",
        path: path.to_path_buf(),
        source,
    })
}

/// An edited file's new text: pretty JSON ending with a newline, as every edit writes it.
fn file_text(path: &Path, value: &Value) -> Result<String, EditError> {
    let mut text = serde_json::to_string_pretty(value).map_err(|e| EditError::Uneditable {
        path: path.to_path_buf(),
        message: format!("the edited file cannot be serialized: {e}"),
    })?;
    text.push('\n');
    Ok(text)
}

/// The file's top-level object; `None` when there is no file.
fn read_object(path: &Path) -> Result<Option<Map<String, Value>>, EditError> {
    let text = match crate::read::read_config_text(path) {
        Ok(text) => text,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(EditError::Io {
                action: "read",
                path: path.to_path_buf(),
                source,
            });
        }
    };
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    if text.trim().is_empty() {
        return Ok(Some(Map::new()));
    }
    // A commented file (`toolmux init`'s) is edited as its JSON; the edit writes no comments.
    match serde_json::from_str(&crate::jsonc::without_comments(text)) {
        // An edit writes the list form of `mcpServers` back as the object form, the one form
        // the editor changes entries of.
        Ok(Value::Object(mut map)) => {
            crate::server_list::normalise(&mut map);
            Ok(Some(map))
        }
        Ok(_) => Err(EditError::Uneditable {
            path: path.to_path_buf(),
            message: "the file does not hold a JSON object".to_string(),
        }),
        Err(e) => Err(EditError::Uneditable {
            path: path.to_path_buf(),
            message: format!("the file is not valid JSON ({e})"),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn project(text: Option<&str>) -> (tempfile::TempDir, ConfigEditor) {
        let dir = tempfile::tempdir().expect("tempdir");
        if let Some(text) = text {
            let path = project_config_path(dir.path());
            fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
            fs::write(&path, text).expect("seed");
        }
        let editor = ConfigEditor::new(dir.path(), None);
        (dir, editor)
    }

    #[test]
    fn adding_a_server_to_a_list_of_servers_writes_the_object_form() {
        let (_dir, editor) = project(Some(
            r#"{"mcpServers": [{"name": "a", "command": "x", "env": {"T": "${T:-t}"}}]}"#,
        ));
        let edited = editor
            .edit(|doc| {
                doc.section_mut("mcpServers")?
                    .insert("b".into(), json!({"command": "y"}));
                Ok::<_, EditError>(())
            })
            .expect("edit");
        let text = fs::read_to_string(editor.path()).expect("read");
        let written: Value = serde_json::from_str(&text).expect("JSON");
        assert_eq!(
            written,
            json!({"mcpServers": {"a": {"command": "x", "env": {"T": "${T:-t}"}}, "b": {"command": "y"}}})
        );
        assert_eq!(edited.loaded.config.upstreams.len(), 2);
    }

    #[test]
    fn an_edit_keeps_the_users_keys_their_order_and_their_references() {
        let (_dir, editor) = project(Some(
            r#"{"server": {"apiKeys": ["${KEY:-k}"]}, "logs": {"retentionDays": 3}, "defaults": {"timeoutMs": 5000}}"#,
        ));
        let edited = editor
            .edit(|doc| {
                doc.section_mut("tools")?.insert(
                    "hi".into(),
                    json!({"description": "d", "command": ["echo", "hi"]}),
                );
                Ok::<_, EditError>(())
            })
            .expect("edit");
        assert!(edited.written);
        let text = fs::read_to_string(editor.path()).expect("read");
        let keys: Vec<String> = serde_json::from_str::<Map<String, Value>>(&text)
            .expect("JSON")
            .keys()
            .cloned()
            .collect();
        assert_eq!(keys, ["server", "logs", "defaults", "tools"]);
        assert!(text.contains("${KEY:-k}"), "{text}");
        assert_eq!(edited.loaded.config.server.api_keys, ["k"]);
        assert_eq!(edited.loaded.config.tools.len(), 1);
    }

    #[test]
    fn an_invalid_result_writes_nothing() {
        let seed = "{\n  \"logs\": {\"retentionDays\": 3}\n}\n";
        let (dir, editor) = project(Some(seed));
        let err = editor
            .edit(|doc| {
                doc.section_mut("tools")?
                    .insert("x".into(), json!({"description": "d", "command": []}));
                Ok::<_, EditError>(())
            })
            .expect_err("refused");
        assert!(
            err.to_string()
                .contains("`command` needs at least the program to run"),
            "{err}"
        );
        assert_eq!(fs::read_to_string(editor.path()).expect("read"), seed);
        // Only the config file and the state folder (with its lock) are there.
        let mut names: Vec<String> = fs::read_dir(dir.path().join(".toolmux"))
            .expect("ls")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names, ["config.json", "state"]);
    }

    #[test]
    fn a_section_emptied_by_an_edit_is_removed_and_an_unchanged_file_is_not_written() {
        let seed = r#"{"tools": {"a": {"description": "d", "command": ["true"]}}}"#;
        let (_dir, editor) = project(Some(seed));
        let edited = editor
            .edit(|doc| {
                doc.section_mut("tools")?.remove("a");
                Ok::<_, EditError>(())
            })
            .expect("edit");
        assert!(edited.written);
        assert_eq!(fs::read_to_string(editor.path()).expect("read"), "{}\n");
        let again = editor
            .edit(|doc| doc.section("tools").map(|s| s.is_none()))
            .expect("edit");
        assert!(again.value);
        assert!(!again.written);
    }

    #[test]
    fn a_tool_switched_off_and_on_and_its_policy_set_and_cleared_leave_the_file_as_it_was() {
        let seed =
            r#"{"toolSettings": {"grep": {"timeoutMs": 5000}}, "logs": {"retentionDays": 3}}"#;
        let (_dir, editor) = project(Some(seed));
        let edited = editor
            .edit(|doc| {
                doc.set_tool_enabled("grep", false)?;
                doc.set_tool_enabled("file_read", false)?;
                doc.set_tool_policy("file_read", Some(Policy::Ask))
            })
            .expect("edit");
        let saved: Value =
            serde_json::from_str(&fs::read_to_string(editor.path()).expect("read")).expect("json");
        assert_eq!(
            saved,
            json!({
                "toolSettings": {"grep": {"timeoutMs": 5000, "enabled": false}, "file_read": {"enabled": false}},
                "logs": {"retentionDays": 3},
                "policies": {"tools": {"file_read": "ask"}},
            })
        );
        let file_read = crate::ToolName::new("file_read").expect("a tool name");
        assert_eq!(
            edited.loaded.config.tool_settings[&file_read].enabled,
            Some(false)
        );
        editor
            .edit(|doc| {
                doc.set_tool_enabled("grep", true)?;
                doc.set_tool_enabled("file_read", true)?;
                doc.set_tool_enabled("never_off", true)?;
                doc.set_tool_policy("file_read", None)
            })
            .expect("edit back");
        let saved: Value =
            serde_json::from_str(&fs::read_to_string(editor.path()).expect("read")).expect("json");
        assert_eq!(
            saved,
            json!({"toolSettings": {"grep": {"timeoutMs": 5000}}, "logs": {"retentionDays": 3}})
        );
    }

    #[test]
    fn a_file_that_is_not_an_object_is_not_edited() {
        let (_dir, editor) = project(Some("[1, 2]"));
        let err = editor
            .edit(|doc| doc.section_mut("tools").map(|_| ()))
            .expect_err("refused");
        assert!(matches!(err, EditError::Uneditable { .. }), "{err}");
        assert_eq!(fs::read_to_string(editor.path()).expect("read"), "[1, 2]");
    }

    #[test]
    fn a_temporary_file_left_by_a_killed_writer_is_removed_by_the_next_edit() {
        let (dir, editor) = project(Some("{}"));
        let stale = dir.path().join(".toolmux/.config.json.999999.0.tmp");
        fs::write(&stale, "{\"half\": ").expect("seed");
        editor
            .edit(|doc| {
                doc.root_mut()
                    .insert("logs".into(), json!({"retentionDays": 2}));
                Ok::<_, EditError>(())
            })
            .expect("edit");
        assert!(!stale.exists());
    }

    #[test]
    fn concurrent_edits_from_threads_all_land() {
        let (_dir, editor) = project(None);
        std::thread::scope(|scope| {
            for i in 0..16 {
                let editor = editor.clone();
                scope.spawn(move || {
                    editor
                        .edit(|doc| {
                            doc.section_mut("tools")?.insert(
                                format!("t{i}"),
                                json!({"description": "d", "command": ["true"]}),
                            );
                            Ok::<_, EditError>(())
                        })
                        .expect("edit");
                });
            }
        });
        assert_eq!(editor.load().expect("load").config.tools.len(), 16);
    }
}
