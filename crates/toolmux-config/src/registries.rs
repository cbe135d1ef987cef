//! Seed 004's registries, read in place: a `tools.json` of script tools and an `mcp.json` of
//! upstream servers, named in the configuration's `registries` (paths relative to the project)
//! and joined to its `tools` and `mcpServers` sections whenever the configuration is loaded —
//! so a reload (and `serve`'s watcher, which watches them too) picks up their edits.
//!
//! The seed's own key names are accepted here, and only here: a tool has `description`,
//! `inputSchema` / `outputSchema` (or `input_schema` / `output_schema`, `parameters`),
//! `parallel_capable`, `timeout` in seconds and `script` (or `script_path`, `path`, `file`),
//! given as a list (with `name`), an object by name, or either under `tools`; a server is an
//! `mcpServers` (or `servers`) entry, whose `transport` is toolmux's `type`. A script runs with
//! the interpreter its extension names (`.py` python3, `.sh` bash, `.js` node), with the
//! arguments as JSON on stdin like every script tool; its path is taken from the registry's
//! folder, else from the project. Errors name the registry file, line and field.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::env::{Lookups, expand_lookups};
use crate::error::ConfigError;
use crate::fields::ToolName;
use crate::load::FileText;
use crate::model::Config;
use crate::scripts::ScriptTool;
use crate::unavailable::{UnavailableServer, checked_server, take_unavailable};
use crate::upstream::{ServerName, UpstreamServer};

/// One tool of a seed `tools.json`.
#[derive(Debug, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a tool with `description`, `script` and optionally `name`, `inputSchema`, \
                 `outputSchema`, `parallel_capable`, `timeout` (seconds), `_internal`"
)]
struct SeedTool {
    /// Its name (in the list form; the object form takes the key).
    #[serde(default)]
    name: Option<String>,
    description: String,
    #[serde(
        default,
        rename = "inputSchema",
        alias = "input_schema",
        alias = "parameters"
    )]
    input_schema: Option<Value>,
    #[serde(default, rename = "outputSchema", alias = "output_schema")]
    output_schema: Option<Value>,
    #[serde(default, alias = "parallelCapable")]
    parallel_capable: bool,
    /// Internal: hidden from models, callable by trusted callers (seed 003's tool field).
    #[serde(default, rename = "_internal")]
    internal: bool,
    /// Seconds.
    #[serde(default)]
    timeout: Option<f64>,
    #[serde(
        alias = "script_path",
        alias = "scriptPath",
        alias = "path",
        alias = "file"
    )]
    script: PathBuf,
}

/// `{"tools": ...}`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Wrapped<T> {
    tools: T,
}

/// What a registry holds: script tools (a seed `tools.json`) or upstream servers (an
/// `mcp.json`, with `mcpServers` or `servers`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RegistryKind {
    /// Script tools.
    #[default]
    Tools,
    /// Upstream servers.
    Servers,
}

/// The keys under which an MCP registry lists its servers, in the order they are looked for.
pub(crate) const SERVER_KEYS: [&str; 2] = ["mcpServers", "servers"];

/// One registry a load read: the file, what it holds and the names it defines.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegistryFile {
    /// The file and its text as read.
    pub file: FileText,
    /// Tools or servers.
    pub kind: RegistryKind,
    /// The names of its entries.
    pub names: Vec<String>,
}

/// What a registry holds, in toolmux's terms.
#[derive(Debug, Default)]
pub(crate) struct Found {
    pub(crate) kind: RegistryKind,
    pub(crate) tools: Vec<(ToolName, ScriptTool)>,
    pub(crate) servers: Vec<(ServerName, UpstreamServer)>,
    /// Servers waiting for a variable or secret they name.
    pub(crate) unavailable: Vec<(ServerName, UnavailableServer)>,
}

/// Reads every registry `config` names and adds its tools and servers to `config`; returns the
/// registries read. A name that the configuration (or an earlier registry) already has is an
/// error of the registry. A registry whose text is `given` is read from it instead of the disk.
pub(crate) fn read_into(
    config: &mut Config,
    unavailable_servers: &mut BTreeMap<ServerName, UnavailableServer>,
    project_dir: &Path,
    env: Lookups<'_>,
    given: Option<(&Path, &str)>,
) -> Result<Vec<RegistryFile>, ConfigError> {
    let mut read = Vec::new();
    for (index, relative) in config.registries.clone().iter().enumerate() {
        let path = registry_path(project_dir, relative).map_err(|message| {
            ConfigError::new(
                &crate::load::project_config_path(project_dir),
                format!("registries[{index}]"),
                message,
            )
        })?;
        let (text, found) = match given {
            Some((given, text)) if given == path => {
                let found = read_registry(&path, text, project_dir, env)?;
                (text.into(), found)
            }
            _ => read_registry_file(&path, project_dir, env)?,
        };
        let kind = found.kind;
        let names = found
            .tools
            .iter()
            .map(|(name, _)| name.as_str())
            .chain(found.servers.iter().map(|(name, _)| name.as_str()))
            .chain(found.unavailable.iter().map(|(name, _)| name.as_str()))
            .map(str::to_string)
            .collect();
        for (name, server) in found.unavailable {
            if config.upstreams.contains_key(&name) || unavailable_servers.contains_key(&name) {
                return Err(defined_twice(&path, &name));
            }
            unavailable_servers.insert(name, server);
        }
        read.push(RegistryFile {
            file: FileText {
                path: path.clone(),
                text,
            },
            kind,
            names,
        });
        for (name, tool) in found.tools {
            if config.tools.contains_key(&name) {
                return Err(ConfigError::new(
                    &path,
                    name.as_str(),
                    format!(
                        "the script tool `{}` is defined twice (also in the configuration or an earlier registry)",
                        name.as_str()
                    ),
                ));
            }
            config.tools.insert(name, tool);
        }
        for (name, server) in found.servers {
            if config.upstreams.contains_key(&name) || unavailable_servers.contains_key(&name) {
                return Err(defined_twice(&path, &name));
            }
            config.upstreams.insert(name, server);
        }
    }
    Ok(read)
}

fn defined_twice(path: &Path, name: &ServerName) -> ConfigError {
    ConfigError::new(
        path,
        name.as_str(),
        format!(
            "the MCP server `{}` is defined twice (also in the configuration or an earlier registry)",
            name.as_str()
        ),
    )
}

/// The registry files `config` names, as paths: what a watcher watches besides the
/// configuration files. A path [`registry_path`] refuses is left out (loading reports it).
pub fn registry_paths(config: &Config, project_dir: &Path) -> Vec<PathBuf> {
    config
        .registries
        .iter()
        .filter_map(|p| registry_path(project_dir, p).ok())
        .collect()
}

/// Where the registry named `relative` is: inside the project directory, or nowhere. A
/// configuration may come with a cloned repository, and a registry names commands to run and
/// servers to start, so it may not reach the user's other files (`~/.claude.json`'s servers,
/// another project's tools): an absolute path and any `..` are refused, and so is a path whose
/// symbolic links lead out of the project (checked when it is named; a link swapped in later
/// needs a writer inside the project, who could edit the registry itself).
pub(crate) fn registry_path(project_dir: &Path, relative: &Path) -> Result<PathBuf, String> {
    use std::path::Component;
    let shown = relative.display();
    if relative.is_absolute() {
        return Err(format!(
            "`{shown}` is an absolute path; a registry is named by a path relative to the \
             project directory, inside it"
        ));
    }
    if relative.components().any(|c| c == Component::ParentDir) {
        return Err(format!(
            "`{shown}` climbs out with `..`; a registry is named by a path relative to the \
             project directory, inside it"
        ));
    }
    let path = project_dir.join(relative);
    // A missing registry is the read's error, reported with its path.
    if let (Ok(real), Ok(project)) = (path.canonicalize(), project_dir.canonicalize())
        && !real.starts_with(&project)
    {
        return Err(format!(
            "`{shown}` leads out of the project directory through a symbolic link (to `{}`); \
             a registry stays inside the project",
            real.display()
        ));
    }
    Ok(path)
}

/// Every file whose `${VAR}` references a load of the project at `project_dir` (over the user
/// file `user_config`) expands, with its text: the two configuration files and every registry
/// either names (both files' `registries`, whichever wins the merge: naming one variable too
/// many hides it, one too few leaves a secret where children can read it). Read before the
/// configuration is loaded, so that the variables they name can leave the process environment
/// at start; each file is read once. A file that cannot be read is left out, and so is a
/// registry path [`registry_path`] refuses (loading reports both).
pub fn referencing_files(project_dir: &Path, user_config: Option<&Path>) -> Vec<FileText> {
    let configs = user_config
        .map(Path::to_path_buf)
        .into_iter()
        .chain([crate::load::project_config_path(project_dir)]);
    let read = |path: PathBuf, files: &mut Vec<FileText>| {
        if files.iter().any(|f| f.path == path) {
            return None;
        }
        let text: Arc<str> = crate::read::read_config_text(&path).ok()?.into();
        files.push(FileText { path, text });
        files.last().cloned()
    };
    let mut files = Vec::new();
    for config in configs {
        let Some(value) = read(config, &mut files).and_then(|f| f.unexpanded()) else {
            continue;
        };
        let named = value.get("registries").and_then(Value::as_array);
        for relative in named.into_iter().flatten().filter_map(Value::as_str) {
            // As the load reads it: references in the path expanded.
            let relative = crate::env::expand_text(relative, crate::env::Lookups::process())
                .map_or_else(|_| relative.to_string(), |p| p.into_owned());
            if let Ok(path) = registry_path(project_dir, Path::new(&relative)) {
                read(path, &mut files);
            }
        }
    }
    files
}

/// Reads the registry at `path` ([`read_registry`]); returns its text too.
pub(crate) fn read_registry_file(
    path: &Path,
    project_dir: &Path,
    env: Lookups<'_>,
) -> Result<(Arc<str>, Found), ConfigError> {
    let text: Arc<str> = crate::read::read_config_text(path)
        .map_err(|e| ConfigError::new(path, "", format!("cannot read the registry: {e}")))?
        .into();
    let found = read_registry(path, &text, project_dir, env)?;
    Ok((text, found))
}

/// One registry: servers when it holds `mcpServers` or `servers` (seed 004's `mcp.json`),
/// else tools (its `tools.json`). A missing or malformed registry is an error, as the seed
/// asks: a registry named in the configuration is expected to be there.
pub(crate) fn read_registry(
    path: &Path,
    text: &str,
    project_dir: &Path,
    env: Lookups<'_>,
) -> Result<Found, ConfigError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let text = &*crate::jsonc::without_comments(text);
    let value: Value =
        serde_json::from_str(text).map_err(|e| ConfigError::from_json(path, None, &e))?;
    let servers_key = SERVER_KEYS.into_iter().find(|k| value.get(k).is_some());
    match servers_key {
        Some(key) => read_servers(path, text, value, key, env),
        None => read_tools(path, text, &value, project_dir),
    }
}

fn read_tools(
    path: &Path,
    text: &str,
    value: &Value,
    project_dir: &Path,
) -> Result<Found, ConfigError> {
    // The shape decides the type to read the text as again, so errors keep their line.
    let listed: Vec<(String, SeedTool)> = match value {
        Value::Array(_) => with_names(typed::<Vec<SeedTool>>(path, text)?, path)?,
        Value::Object(map) => match map.get("tools") {
            Some(Value::Array(_)) => {
                with_names(typed::<Wrapped<Vec<SeedTool>>>(path, text)?.tools, path)?
            }
            Some(Value::Object(_)) => {
                by_key(typed::<Wrapped<BTreeMap<String, SeedTool>>>(path, text)?.tools)
            }
            _ => by_key(typed::<BTreeMap<String, SeedTool>>(path, text)?),
        },
        _ => {
            return Err(ConfigError::new(
                path,
                "",
                "a tools registry is a list of tools or an object of tools by name",
            ));
        }
    };
    let folder = path.parent().unwrap_or(project_dir);
    let mut found = Found::default();
    for (name, seed) in listed {
        let tool_name = ToolName::new(&name).map_err(|e| ConfigError::new(path, &name, e))?;
        let tool = script_tool(&seed, folder, project_dir)
            .map_err(|message| ConfigError::new(path, &name, message))?;
        found.tools.push((tool_name, tool));
    }
    Ok(found)
}

/// Reads `text` as `T`, with the error's line, column and field.
fn typed<T: serde::de::DeserializeOwned>(path: &Path, text: &str) -> Result<T, ConfigError> {
    let mut de = serde_json::Deserializer::from_str(text);
    serde_path_to_error::deserialize(&mut de)
        .map_err(|e| ConfigError::from_json(path, Some(e.path()), e.inner()))
}

fn with_names(tools: Vec<SeedTool>, path: &Path) -> Result<Vec<(String, SeedTool)>, ConfigError> {
    tools
        .into_iter()
        .enumerate()
        .map(|(i, tool)| match tool.name.clone() {
            Some(name) => Ok((name, tool)),
            None => Err(ConfigError::new(
                path,
                format!("[{i}]"),
                "a tool in a list needs its `name`",
            )),
        })
        .collect()
}

fn by_key(tools: BTreeMap<String, SeedTool>) -> Vec<(String, SeedTool)> {
    tools.into_iter().collect()
}

/// The interpreter a seed registry runs a script with, by its extension; `None`: the script
/// runs itself.
pub(crate) fn interpreter_of(script: &Path) -> Option<&'static str> {
    match script.extension().and_then(|e| e.to_str()) {
        Some("py") => Some("python3"),
        Some("sh") => Some("bash"),
        Some("js" | "mjs") => Some("node"),
        _ => None,
    }
}

/// The script tool a seed tool stands for.
fn script_tool(seed: &SeedTool, folder: &Path, project_dir: &Path) -> Result<ScriptTool, String> {
    let script = [folder.join(&seed.script), project_dir.join(&seed.script)]
        .into_iter()
        .find(|p| p.is_file())
        // A missing script is the call's error (the seed's `ToolExecutionError`), not the
        // registry's: the other tools still load.
        .unwrap_or_else(|| folder.join(&seed.script));
    let script = script.display().to_string();
    let command: Vec<String> = interpreter_of(&seed.script)
        .map(str::to_string)
        .into_iter()
        .chain([script])
        .collect();
    let mut tool = json!({
        "description": seed.description,
        "command": command,
        "parallel": seed.parallel_capable,
        "_internal": seed.internal,
    });
    if let Some(schema) = &seed.input_schema {
        tool["inputSchema"] = schema.clone();
    }
    if let Some(schema) = &seed.output_schema {
        tool["outputSchema"] = schema.clone();
    }
    if let Some(seconds) = seed.timeout {
        if !(seconds.is_finite() && seconds > 0.0) {
            return Err(format!(
                "`timeout` is in seconds and must be more than 0, not {seconds}"
            ));
        }
        tool["timeoutMs"] = json!((seconds * 1000.0).ceil() as u64);
    }
    serde_json::from_value(tool).map_err(|e| e.to_string())
}

fn read_servers(
    path: &Path,
    text: &str,
    value: Value,
    key: &str,
    env: Lookups<'_>,
) -> Result<Found, ConfigError> {
    let Value::Object(mut file) = value else {
        return Err(ConfigError::new(path, "", "an MCP registry is an object"));
    };
    // The list form (`[{name, command, …}]`) becomes the object form, as in the config.
    if key == "servers"
        && let Some(servers) = file.remove("servers")
    {
        file.insert(crate::server_list::KEY.to_string(), servers);
    }
    crate::server_list::normalise(&mut file);
    let servers = match file.remove(crate::server_list::KEY) {
        Some(Value::Object(servers)) => servers,
        _ => {
            return Err(ConfigError::new(
                path,
                key,
                "must be an object of servers by name, or a list of servers with their `name`",
            ));
        }
    };
    let mut servers: Map<String, Value> = servers
        .into_iter()
        .map(|(name, entry)| (name, seed_server(entry)))
        .collect();
    let unavailable = take_unavailable(path, key, &mut servers, env)?;
    let mut found = Found {
        kind: RegistryKind::Servers,
        unavailable,
        ..Found::default()
    };
    for (name, entry) in servers {
        let at = |field: String, message: String| {
            let mut error = ConfigError::new(path, field, message);
            error.line = line_of(text, &name);
            error
        };
        let server_name = ServerName::new(&name).map_err(|e| at(format!("{key}.{name}"), e))?;
        let entry = expand_lookups(entry, env)
            .map_err(|e| at(format!("{key}.{name}.{}", e.path), e.problem.to_string()))?;
        let server = checked_server(entry, key, &name).map_err(|(field, e)| at(field, e))?;
        found.servers.push((server_name, server));
    }
    Ok(found)
}

/// A seed server entry in toolmux's terms: `transport` is `type`.
fn seed_server(entry: Value) -> Value {
    let Value::Object(mut entry) = entry else {
        return entry;
    };
    if !entry.contains_key("type")
        && let Some(transport) = entry.remove("transport")
    {
        entry.insert("type".into(), transport);
    }
    Value::Object(entry.into_iter().collect::<Map<String, Value>>())
}

/// The line a server's name is first written on, for errors about its entry.
fn line_of(text: &str, name: &str) -> Option<usize> {
    let quoted = format!("\"{name}\"");
    text.lines()
        .position(|l| l.contains(&quoted))
        .map(|i| i + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_env(_: &str) -> Option<String> {
        None
    }

    fn registry(text: &str, name: &str) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("backend/src/tools").join(name);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("folders");
        std::fs::write(&path, text).expect("write");
        (dir, path)
    }

    #[test]
    fn seed_tools_become_script_tools() {
        let (dir, path) = registry(
            r#"{"tools": [{"name": "hello_world", "description": "Say hello.",
                "inputSchema": {"type": "object", "properties": {"who": {"type": "string"}}},
                "parallel_capable": true, "timeout": 2.5, "script": "hello_world.py"}]}"#,
            "tools.json",
        );
        let found = read_registry_file(&path, dir.path(), Lookups::vars(&no_env))
            .map(|(_, found)| found)
            .expect("read");
        let (name, tool) = &found.tools[0];
        assert_eq!(name.as_str(), "hello_world");
        assert_eq!(tool.command[0], "python3");
        assert!(tool.command[1].ends_with("backend/src/tools/hello_world.py"));
        assert!(tool.parallel);
        assert_eq!(tool.timeout_ms.map(|t| t.get()), Some(2500));
    }

    #[test]
    fn a_seed_tool_marked_internal_stays_internal() {
        let (dir, path) = registry(
            r#"[{"name": "openllm_secrets_get", "description": "[Internal] Get a key.",
                 "script": "get.py", "_internal": true},
                {"name": "read_file", "description": "Read.", "script": "read.py",
                 "_internal": false}]"#,
            "tools.json",
        );
        let found = read_registry_file(&path, dir.path(), Lookups::vars(&no_env))
            .map(|(_, found)| found)
            .expect("read");
        let internal: Vec<(&str, bool)> = found
            .tools
            .iter()
            .map(|(name, tool)| (name.as_str(), tool.internal))
            .collect();
        assert_eq!(
            internal,
            [("openllm_secrets_get", true), ("read_file", false)]
        );
    }

    #[test]
    fn a_mistake_names_the_registry_its_line_and_field() {
        let (dir, path) = registry(
            "{\n  \"hello\": {\n    \"description\": \"x\",\n    \"script\": \"h.py\",\n    \"timeoutMs\": 5\n  }\n}\n",
            "tools.json",
        );
        let error = read_registry_file(&path, dir.path(), Lookups::vars(&no_env))
            .map(|(_, found)| found)
            .expect_err("unknown key");
        assert_eq!(error.file, path);
        assert_eq!(error.line, Some(5), "{error}");
        assert_eq!(error.field, "hello", "{error}");
    }

    #[test]
    fn seed_servers_take_transport_as_type() {
        let (dir, path) = registry(
            r#"{"mcpServers": {"search": {"transport": "sse", "url": "http://127.0.0.1:9/sse"},
                "local": {"command": "python3", "args": ["server.py"]}}}"#,
            "mcp.json",
        );
        let found = read_registry_file(&path, dir.path(), Lookups::vars(&no_env))
            .map(|(_, found)| found)
            .expect("read");
        assert_eq!(found.servers.len(), 2);
        let bad = registry(
            r#"{"mcpServers": {"x": {"transport": "pigeon", "url": "u"}}}"#,
            "mcp.json",
        );
        let error = read_registry_file(&bad.1, bad.0.path(), Lookups::vars(&no_env))
            .map(|(_, found)| found)
            .expect_err("bad transport");
        assert!(error.field.starts_with("mcpServers.x"), "{error}");
        assert_eq!(error.line, Some(1));
    }
}
