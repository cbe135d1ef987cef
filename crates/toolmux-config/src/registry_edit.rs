//! Editing one of seed 004's registries in its own format: a `tools.json` entry or an
//! `mcp.json` server replaced, added or removed where the file keeps it, the rest of the file
//! (its other entries, their order, the form it lists them in) left as it was. The entry given
//! is in toolmux's terms — what the API and `tools` / `mcpServers` take — and is written in
//! the registry's: a script tool becomes the seed's `description`, `inputSchema`,
//! `outputSchema`, `parallel_capable`, `timeout` (seconds) and `script`, and a definition the
//! seed's format cannot hold (an `env`, a `cwd`, a `command` that is not a script run by the
//! interpreter its extension names) is refused, never written half. The file is written by
//! [`crate::ConfigEditor::edit_registry`], checked and atomic like every edit.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::edit::EditError;
use crate::error::ConfigError;
use crate::registries::{RegistryKind, SERVER_KEYS, interpreter_of};
use crate::scripts::ScriptTool;

/// A registry file as an editable JSON value, handed to an edit.
pub struct RegistryDocument {
    path: PathBuf,
    kind: RegistryKind,
    pub(crate) root: Value,
    /// The project root, which a relative script path in a `command` is taken from (as a
    /// script tool's `cwd` is).
    project_root: PathBuf,
}

/// The entries of a registry, in the form the file lists them.
enum Entries<'a> {
    /// An object by name.
    ByName(&'a mut Map<String, Value>),
    /// A list of objects, each with its `name`.
    Listed(&'a mut Vec<Value>),
}

impl Entries<'_> {
    fn position(list: &[Value], name: &str) -> Option<usize> {
        list.iter()
            .position(|entry| entry.get("name").and_then(Value::as_str) == Some(name))
    }

    fn contains(&self, name: &str) -> bool {
        match self {
            Entries::ByName(map) => map.contains_key(name),
            Entries::Listed(list) => Self::position(list, name).is_some(),
        }
    }

    /// Whether any entry writes its transport as the seed does (`transport`, not `type`).
    fn any_has(&self, key: &str) -> bool {
        let has = |entry: &Value| entry.get(key).is_some();
        match self {
            Entries::ByName(map) => map.values().any(has),
            Entries::Listed(list) => list.iter().any(has),
        }
    }

    /// Replaces the entry `name` where it stands, or adds it at the end.
    fn put(&mut self, name: &str, entry: Map<String, Value>) {
        match self {
            Entries::ByName(map) => {
                map.insert(name.to_string(), Value::Object(entry));
            }
            Entries::Listed(list) => {
                let mut named = Map::new();
                named.insert("name".into(), Value::String(name.to_string()));
                named.extend(entry);
                match Self::position(list, name) {
                    Some(i) => list[i] = Value::Object(named),
                    None => list.push(Value::Object(named)),
                }
            }
        }
    }

    fn remove(&mut self, name: &str) -> bool {
        match self {
            // `shift_remove`: the other entries keep their order.
            Entries::ByName(map) => map.shift_remove(name).is_some(),
            Entries::Listed(list) => match Self::position(list, name) {
                Some(i) => {
                    list.remove(i);
                    true
                }
                None => false,
            },
        }
    }
}

impl RegistryDocument {
    pub(crate) fn new(path: PathBuf, root: Value, project_root: PathBuf) -> Self {
        let kind = if SERVER_KEYS.iter().any(|k| root.get(k).is_some()) {
            RegistryKind::Servers
        } else {
            RegistryKind::Tools
        };
        Self {
            path,
            kind,
            root,
            project_root,
        }
    }

    /// The registry being edited.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// What it holds.
    pub fn kind(&self) -> RegistryKind {
        self.kind
    }

    /// Whether it has an entry `name`.
    pub fn contains(&mut self, name: &str) -> Result<bool, EditError> {
        Ok(self.entries()?.contains(name))
    }

    /// Removes the entry `name`; `false` when there is none.
    pub fn remove(&mut self, name: &str) -> Result<bool, EditError> {
        Ok(self.entries()?.remove(name))
    }

    /// Writes `entry` (in toolmux's terms: a `tools` definition or an `mcpServers` entry) as the
    /// entry `name`, in the registry's format, replacing one of that name where it stands.
    pub fn put(&mut self, name: &str, entry: Map<String, Value>) -> Result<(), EditError> {
        let entry = match self.kind {
            RegistryKind::Tools => self.seed_tool(name, entry)?,
            RegistryKind::Servers => {
                let seed_style = self.entries()?.any_has("transport");
                seed_server(entry, seed_style)
            }
        };
        self.entries()?.put(name, entry);
        Ok(())
    }

    fn entries(&mut self) -> Result<Entries<'_>, EditError> {
        let path = self.path.clone();
        let uneditable = |message: &str| EditError::Uneditable {
            path: path.clone(),
            message: message.to_string(),
        };
        let key = match self.kind {
            RegistryKind::Servers => SERVER_KEYS.into_iter().find(|k| self.root.get(k).is_some()),
            RegistryKind::Tools => Some("tools").filter(|k| {
                self.root
                    .get(k)
                    .is_some_and(|v| v.is_array() || v.is_object())
            }),
        };
        let at = match key {
            Some(key) => self.root.get_mut(key),
            None => Some(&mut self.root),
        };
        match at {
            Some(Value::Object(map)) => Ok(Entries::ByName(map)),
            Some(Value::Array(list)) => Ok(Entries::Listed(list)),
            _ => Err(uneditable(
                "its entries are neither an object by name nor a list",
            )),
        }
    }

    /// A script tool's definition in the seed's terms, or why it does not fit them.
    fn seed_tool(
        &self,
        name: &str,
        entry: Map<String, Value>,
    ) -> Result<Map<String, Value>, EditError> {
        let invalid =
            |message: String| EditError::Invalid(ConfigError::new(&self.path, name, message));
        let tool: ScriptTool = serde_json::from_value(Value::Object(entry.clone()))
            .map_err(|e| invalid(e.to_string()))?;
        if let Err(why) = tool_fits_registry(&entry) {
            return Err(invalid(why));
        }
        let Some(script) = script_of(&tool.command) else {
            return Err(invalid(misfit_command(&tool.command)));
        };
        let mut seed = Map::new();
        seed.insert("description".into(), Value::String(tool.description));
        for key in ["inputSchema", "outputSchema"] {
            if let Some(schema) = entry.get(key) {
                seed.insert(key.into(), schema.clone());
            }
        }
        if tool.parallel {
            seed.insert("parallel_capable".into(), Value::Bool(true));
        }
        if let Some(ms) = tool.timeout_ms {
            seed.insert("timeout".into(), Value::from(ms.get() as f64 / 1000.0));
        }
        seed.insert("script".into(), Value::String(self.script_path(script)));
        Ok(seed)
    }

    /// A script path as the registry writes it: relative to its folder when the script is in
    /// it (where the registry looks first), else absolute, so that it cannot be taken for
    /// another file.
    fn script_path(&self, script: &str) -> String {
        let script = self.project_root.join(script);
        let folder = self.path.parent().unwrap_or(Path::new(""));
        match script.strip_prefix(folder) {
            Ok(inside) => inside.display().to_string(),
            Err(_) => script.display().to_string(),
        }
    }
}

/// Whether a script tool definition (`tools` entry) can be written to a tools registry in the
/// seed's format, or why not: only `description`, the schemas, `parallel`, `timeoutMs` and a
/// `command` that runs one script with the interpreter its extension names.
pub fn tool_fits_registry(entry: &Map<String, Value>) -> Result<(), String> {
    if let Some(key) = entry
        .keys()
        .find(|key| !SEED_TOOL_KEYS.contains(&key.as_str()))
    {
        return Err(format!(
            "`{key}` cannot be written to this registry: a tool there has only \
             `description`, `inputSchema`, `outputSchema`, `parallel`, `timeoutMs` and \
             `command` (its script)"
        ));
    }
    let command: Vec<String> = entry
        .get("command")
        .and_then(|c| serde_json::from_value(c.clone()).ok())
        .unwrap_or_default();
    match script_of(&command) {
        Some(_) => Ok(()),
        None => Err(misfit_command(&command)),
    }
}

/// The script a `command` runs as a seed registry would run it, if it is one.
fn script_of(command: &[String]) -> Option<&String> {
    match command {
        [interpreter, script]
            if interpreter_of(Path::new(script)) == Some(interpreter.as_str()) =>
        {
            Some(script)
        }
        [script] if interpreter_of(Path::new(script)).is_none() => Some(script),
        _ => None,
    }
}

fn misfit_command(command: &[String]) -> String {
    format!(
        "a tool of this registry runs its `script` with the interpreter its extension names \
         (`.py` python3, `.sh` bash, `.js` node) and no other argument, so `command` must be \
         such a pair (`[\"python3\", \"tool.py\"]`) or an executable alone, not {}",
        Value::from(command.to_vec())
    )
}

/// The keys of a script tool definition the seed's format can hold.
const SEED_TOOL_KEYS: [&str; 6] = [
    "description",
    "inputSchema",
    "outputSchema",
    "parallel",
    "timeoutMs",
    "command",
];

/// An `mcpServers` entry as the registry writes it: its `type` as `transport` when the file
/// writes its servers' transports so (the seed's name).
fn seed_server(mut entry: Map<String, Value>, seed_style: bool) -> Map<String, Value> {
    if seed_style && let Some(kind) = entry.remove("type") {
        entry.insert("transport".into(), kind);
    }
    entry
}
