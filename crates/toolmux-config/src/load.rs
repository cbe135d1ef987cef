//! Finding, reading, checking and merging the configuration files.

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::env::{Env, Expand, Lookups, expand_lookups};
use crate::error::{ConfigError, field_path};
use crate::model::Config;
use crate::secret_refs::SecretLookup;
use crate::unavailable::{UnavailableServer, take_unavailable};
use crate::upstream::ServerName;

use toolmux_files::PROJECT_DIR_NAME;
/// The configuration file's name, in the project and in the user's directory.
const CONFIG_FILE_NAME: &str = "config.json";
/// The schema file `toolmux init` writes beside the project's configuration.
const SCHEMA_FILE_NAME: &str = "config.schema.json";

/// A loaded, merged and checked configuration, with where it came from.
#[derive(Clone, Debug, PartialEq)]
pub struct LoadedConfig {
    /// The merged configuration.
    pub config: Config,
    /// The directory that holds `.toolmux/`.
    pub project_dir: PathBuf,
    /// The project root tools work in: `root` resolved against `project_dir`, canonical.
    pub root: PathBuf,
    /// The files that were read, lowest precedence first.
    pub files: Vec<PathBuf>,
    /// Every file this load read — the configuration files, then the registries — with the
    /// text it read, so that what else looks at them (the variables they name, the entries
    /// as written) reuses this read instead of reading them again.
    pub texts: Vec<FileText>,
    /// The registries read (`registries`), in order, with what each holds: where an edit of
    /// one of their entries goes.
    pub registry_files: Vec<crate::registries::RegistryFile>,
    /// Servers configured but waiting for a variable or secret they name: never started,
    /// shown with the reason ([`crate::UnavailableServer`]).
    pub unavailable_servers: BTreeMap<ServerName, UnavailableServer>,
}

impl LoadedConfig {
    /// The registry the script tool (`kind` [`RegistryKind::Tools`]) or the server
    /// ([`RegistryKind::Servers`]) `name` came from; `None` when it came from a configuration
    /// file or nowhere.
    pub fn registry_of(&self, kind: crate::RegistryKind, name: &str) -> Option<&Path> {
        self.registry_files
            .iter()
            .find(|r| r.kind == kind && r.names.iter().any(|n| n == name))
            .map(|r| r.file.path.as_path())
    }

    /// The first registry of `kind` the configuration names: where a new entry of that kind
    /// goes when there is one.
    pub fn first_registry(&self, kind: crate::RegistryKind) -> Option<&Path> {
        self.registry_files
            .iter()
            .find(|r| r.kind == kind)
            .map(|r| r.file.path.as_path())
    }
}

/// One file as a load read it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileText {
    /// The file.
    pub path: PathBuf,
    /// Its text, as read (a byte-order mark and comments included).
    pub text: Arc<str>,
}

impl FileText {
    /// Its JSON as written, references unexpanded and nothing checked; `None` when it does
    /// not parse.
    pub(crate) fn unexpanded(&self) -> Option<Value> {
        parse_unexpanded(&self.text)
    }
}

/// Walks up from `start` to the first directory that holds `.toolmux/config.json`.
pub fn find_project_dir(start: &Path) -> Option<PathBuf> {
    let start = std::path::absolute(start).ok()?;
    start
        .ancestors()
        .find(|dir| project_config_path(dir).is_file())
        .map(Path::to_path_buf)
}

/// `<project_dir>/.toolmux/config.json`.
pub fn project_config_path(project_dir: &Path) -> PathBuf {
    project_dir.join(PROJECT_DIR_NAME).join(CONFIG_FILE_NAME)
}

/// `<project_dir>/.toolmux/config.schema.json`: where `toolmux init` writes [`crate::schema`],
/// so that the `"$schema"` of [`crate::starter_config`] finds it.
pub fn project_schema_path(project_dir: &Path) -> PathBuf {
    project_dir.join(PROJECT_DIR_NAME).join(SCHEMA_FILE_NAME)
}

/// The user's configuration file: `$XDG_CONFIG_HOME/toolmux/config.json`, else
/// `~/.config/toolmux/config.json`; `None` when there is no home directory.
pub fn user_config_path() -> Option<PathBuf> {
    user_config_path_with(&toolmux_core::process_env::var)
}

pub(crate) fn user_config_path_with(env: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
    Some(toolmux_files::user_dir(env)?.join(CONFIG_FILE_NAME))
}

/// Loads the configuration of the project in `project_dir`, over the user file when given,
/// with `${VAR}` references taken from toolmux's environment (`toolmux_core::process_env`)
/// and no secret store (a `${secret:NAME}` is an error). A missing file counts as empty.
pub fn load(project_dir: &Path, user_config: Option<&Path>) -> Result<LoadedConfig, ConfigError> {
    load_merged(project_dir, user_config, Lookups::process(), None)
}

/// [`load`], with `${secret:NAME}` references read from `secrets` when there is a store (without
/// one, such a reference is an error): the store is passed in, as the environment is, and kept
/// by nothing.
pub fn load_with_secrets(
    project_dir: &Path,
    user_config: Option<&Path>,
    secrets: Option<&dyn SecretLookup>,
) -> Result<LoadedConfig, ConfigError> {
    let env = match secrets {
        Some(secrets) => Lookups::process().with_secrets(secrets),
        None => Lookups::process(),
    };
    load_merged(project_dir, user_config, env, None)
}

/// [`load`] with the environment given as a lookup function.
pub fn load_with_env(
    project_dir: &Path,
    user_config: Option<&Path>,
    env: Env<'_>,
) -> Result<LoadedConfig, ConfigError> {
    load_merged(project_dir, user_config, Lookups::vars(env), None)
}

/// [`load_with_env`], with one file's text (the project file's or a registry's) given instead of
/// read from disk when `given` is set: how an edit is checked, merged with the other files
/// exactly as it will be read, before anything is written.
pub(crate) fn load_merged(
    project_dir: &Path,
    user_config: Option<&Path>,
    env: Lookups<'_>,
    given: Option<(&Path, &str)>,
) -> Result<LoadedConfig, ConfigError> {
    let project_file = project_config_path(project_dir);
    let candidates = user_config
        .filter(|user| *user != project_file)
        .into_iter()
        .chain([project_file.as_path()]);

    let mut merged = Value::Object(Map::new());
    let mut files = Vec::new();
    let mut texts = Vec::new();
    let mut root_file = None;
    let mut unavailable_servers = BTreeMap::new();
    for path in candidates {
        let text: Arc<str> = match given {
            Some((given, text)) if given == path => text.into(),
            _ => match read_text(path)? {
                Some(text) => text.into(),
                None => continue,
            },
        };
        let (value, unavailable) = check_file(path, &text, env)?;
        // A later file's word on a server is the last: defined there, it is available (as
        // that file has it); waiting there, an earlier file's entry does not stand in.
        if let Some(Value::Object(servers)) = value.get(crate::server_list::KEY) {
            unavailable_servers.retain(|name: &ServerName, _| !servers.contains_key(name.as_str()));
        }
        if let Some(Value::Object(servers)) = merged.get_mut(crate::server_list::KEY) {
            for (name, _) in &unavailable {
                servers.shift_remove(name.as_str());
            }
        }
        unavailable_servers.extend(unavailable);
        if value.get("root").is_some() {
            root_file = Some(path.to_path_buf());
        }
        merge(&mut merged, value);
        files.push(path.to_path_buf());
        texts.push(FileText {
            path: path.to_path_buf(),
            text,
        });
    }

    // Each file was checked alone and merging two valid files gives a valid one, so this only
    // fails if that reasoning breaks; the project file is then the one to blame.
    let mut config: Config = serde_path_to_error::deserialize(merged).map_err(|e| {
        ConfigError::new(
            &project_file,
            field_path(e.path()),
            e.into_inner().to_string(),
        )
    })?;
    crate::principals::check(&config.principals, &config.roles)
        .map_err(|message| ConfigError::new(&project_file, "principals", message))?;
    let registry_files = crate::registries::read_into(
        &mut config,
        &mut unavailable_servers,
        project_dir,
        env,
        given,
    )?;
    texts.extend(registry_files.iter().map(|r| r.file.clone()));
    let root_file = root_file.unwrap_or(project_file);
    let root = resolve_root(project_dir, config.root.as_deref(), &root_file)?;
    Ok(LoadedConfig {
        config,
        project_dir: project_dir.to_path_buf(),
        root,
        files,
        texts,
        registry_files,
        unavailable_servers,
    })
}

/// Reads one configuration file (checked alone afterwards, so that every error names its own
/// file and position); `None` when it is missing.
fn read_text(path: &Path) -> Result<Option<String>, ConfigError> {
    match crate::read::read_config_text(path) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(ConfigError::new(
            path,
            "",
            format!("cannot read the file: {e}"),
        )),
    }
}

/// Checks the text of a configuration file as if it were read from `path` (which names it in
/// errors): the same checks as [`load`] makes of each file, with `${VAR}` references taken from
/// toolmux's environment. A command that edits a file checks its new text with this before
/// writing it.
pub fn check_config_text(path: &Path, text: &str) -> Result<Config, ConfigError> {
    let value = check_text(path, text, Lookups::process())?;
    serde_path_to_error::deserialize(value)
        .map_err(|e| ConfigError::new(path, field_path(e.path()), e.into_inner().to_string()))
}

/// The checks of one file's text; returns its raw value with references expanded.
fn check_text(path: &Path, text: &str, env: Lookups<'_>) -> Result<Value, ConfigError> {
    check_file(path, text, env).map(|(value, _)| value)
}

/// [`check_text`], with the servers that wait for an unset variable or secret taken out of the
/// value and returned apart ([`crate::UnavailableServer`]).
fn check_file(
    path: &Path,
    text: &str,
    env: Lookups<'_>,
) -> Result<(Value, Vec<(ServerName, UnavailableServer)>), ConfigError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let text = &*crate::jsonc::without_comments(text);

    let mut raw: Value =
        serde_json::from_str(text).map_err(|e| ConfigError::from_json(path, None, &e))?;
    let mut unavailable = Vec::new();
    if let Value::Object(file) = &mut raw {
        crate::server_list::normalise(file);
        if let Some(Value::Object(servers)) = file.get_mut(crate::server_list::KEY) {
            unavailable = take_unavailable(path, crate::server_list::KEY, servers, env)?;
        }
    }

    // Checked from the text, so that errors have their line and column; when servers were
    // taken out, from the rest, whose positions are not the file's.
    let rest;
    let checked_text = if unavailable.is_empty() {
        text
    } else {
        rest = raw.to_string();
        &rest
    };
    let mut de = serde_json::Deserializer::from_str(checked_text);
    let checked: Result<Config, _> = serde_path_to_error::deserialize(Expand::new(&mut de, env));
    let positioned = |mut error: ConfigError| {
        if !unavailable.is_empty() {
            error.line = None;
            error.column = None;
        }
        error
    };
    if let Err(e) = checked {
        return Err(positioned(ConfigError::from_json(
            path,
            Some(e.path()),
            e.inner(),
        )));
    }
    de.end()
        .map_err(|e| positioned(ConfigError::from_json(path, None, &e)))?;
    let value = expand_lookups(raw, env)
        .map_err(|e| ConfigError::new(path, e.path, e.problem.to_string()))?;
    Ok((value, unavailable))
}

/// The `mcpServers` entries of the files a configuration was loaded from, merged the same way
/// but with `${VAR}` references left as written: what decides a server's tool list, without
/// the secrets the references stand for. Taken from the texts the load read.
pub fn unexpanded_upstreams(loaded: &LoadedConfig) -> Map<String, Value> {
    let mut merged = Value::Object(Map::new());
    let configs = loaded
        .texts
        .iter()
        .filter(|file| loaded.files.contains(&file.path));
    for file in configs {
        if let Some(Value::Object(mut file)) = file.unexpanded()
            && let Some(servers) = {
                crate::server_list::normalise(&mut file);
                file.remove(crate::server_list::KEY)
            }
        {
            merge(&mut merged, servers);
        }
    }
    match merged {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

/// A configuration file's JSON as written, references unexpanded and nothing checked; `None`
/// when it can no longer be read or parsed.
pub(crate) fn read_unexpanded(path: &Path) -> Option<Value> {
    parse_unexpanded(&crate::read::read_config_text(path).ok()?)
}

/// A configuration file's text as JSON, references unexpanded and nothing checked; `None`
/// when it does not parse.
pub(crate) fn parse_unexpanded(text: &str) -> Option<Value> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    serde_json::from_str(&crate::jsonc::without_comments(text)).ok()
}

/// Merges `over` into `base`: objects key by key, recursively; anything else is replaced.
pub(crate) fn merge(base: &mut Value, over: Value) {
    match (base, over) {
        (Value::Object(base), Value::Object(over)) => {
            for (key, value) in over {
                match base.get_mut(&key) {
                    Some(slot) => merge(slot, value),
                    None => {
                        base.insert(key, value);
                    }
                }
            }
        }
        (slot, value) => *slot = value,
    }
}

fn resolve_root(
    project_dir: &Path,
    root: Option<&Path>,
    file: &Path,
) -> Result<PathBuf, ConfigError> {
    let joined = project_dir.join(root.unwrap_or(Path::new(".")));
    let (field, what) = match root {
        Some(root) => ("root", format!("the project root `{}`", root.display())),
        None => ("", "the project directory".to_string()),
    };
    let err = |message: String| ConfigError::new(file, field, message);
    match fs::canonicalize(&joined) {
        Ok(dir) if dir.is_dir() => Ok(dir),
        Ok(other) => Err(err(format!(
            "{what} is not a directory (`{}`)",
            other.display()
        ))),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Err(err(format!(
            "{what} does not exist (looked for `{}`)",
            joined.display()
        ))),
        Err(e) => Err(err(format!(
            "{what} cannot be opened (`{}`): {e}",
            joined.display()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn merge_is_deep_for_objects_and_replaces_everything_else() {
        let mut base = json!({
            "defaults": {"timeoutMs": 1, "approvalTimeoutMs": 2},
            "filters": {"include": ["a", "b"]},
            "root": "x",
        });
        merge(
            &mut base,
            json!({
                "defaults": {"timeoutMs": 5},
                "filters": {"include": ["c"]},
                "logs": {"retentionDays": 1},
            }),
        );
        assert_eq!(
            base,
            json!({
                "defaults": {"timeoutMs": 5, "approvalTimeoutMs": 2},
                "filters": {"include": ["c"]},
                "root": "x",
                "logs": {"retentionDays": 1},
            })
        );
    }

    #[test]
    fn user_config_path_honours_xdg_then_home() {
        let xdg = |name: &str| match name {
            "XDG_CONFIG_HOME" => Some("/xdg".to_string()),
            "HOME" => Some("/home/ada".to_string()),
            _ => None,
        };
        assert_eq!(
            user_config_path_with(&xdg),
            Some(PathBuf::from("/xdg/toolmux/config.json"))
        );
        let relative_xdg = |name: &str| match name {
            "XDG_CONFIG_HOME" => Some("relative".to_string()),
            "HOME" => Some("/home/ada".to_string()),
            _ => None,
        };
        assert_eq!(
            user_config_path_with(&relative_xdg),
            Some(PathBuf::from("/home/ada/.config/toolmux/config.json"))
        );
        assert_eq!(user_config_path_with(&|_| None), None);
    }
}
