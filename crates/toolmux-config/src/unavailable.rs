//! Servers that wait for a value: an `mcpServers` entry (of a configuration file or an MCP
//! registry) whose `${VAR}` names a variable that is not set, or whose `${secret:NAME}` names a
//! secret the store does not hold, makes that server alone unavailable, with the reason (the
//! variable, where it is used, the file), instead of the whole configuration: seed 000's own
//! example names `GITHUB_TOKEN`, which not everyone has, and every other server still serves.
//! Any other mistake in the entry (a bad reference, a typo in a key) is still an error.

use std::path::Path;

use serde_json::{Map, Value};

use crate::env::{EnvProblem, Lookups, expand_lookups};
use crate::error::{ConfigError, field_path};
use crate::upstream::{ServerName, UpstreamServer};

/// A configured server that cannot be started until a variable or secret it names is set.
#[derive(Clone, Debug, PartialEq)]
pub struct UnavailableServer {
    /// Its entry, checked, with its references left as written (nothing of it is started).
    pub server: UpstreamServer,
    /// Why: the variable or secret, the field that uses it and the file.
    pub reason: String,
}

/// The server an `mcpServers` entry (`name` under `key`) stands for, or the field at fault and
/// why.
pub(crate) fn checked_server(
    entry: Value,
    key: &str,
    name: &str,
) -> Result<UpstreamServer, (String, String)> {
    serde_path_to_error::deserialize(entry).map_err(|e| {
        let field = field_path(e.path().iter());
        let field = if field.is_empty() {
            format!("{key}.{name}")
        } else {
            format!("{key}.{name}.{field}")
        };
        (field, e.into_inner().to_string())
    })
}

/// The entry a waiting server is shown with: as written, except that a `url` that is all or
/// partly a reference (`"${SEARCH_URL}"`), which cannot pass the URL check, reads
/// `http://unset.invalid/` (a name that never resolves); it is never connected to.
fn stand_in(mut entry: Value) -> Value {
    if let Some(url) = entry.get_mut("url")
        && url.as_str().is_some_and(|u| u.contains("${"))
    {
        *url = Value::String("http://unset.invalid/".into());
    }
    entry
}

/// Takes out of `servers` (the `key` section of `path`, `mcpServers` or `servers`) every entry
/// that names an unset variable or secret, and returns them by name.
pub(crate) fn take_unavailable(
    path: &Path,
    key: &str,
    servers: &mut Map<String, Value>,
    env: Lookups<'_>,
) -> Result<Vec<(ServerName, UnavailableServer)>, ConfigError> {
    let mut taken = Vec::new();
    let waiting: Vec<(String, String)> = servers
        .iter()
        .filter_map(|(name, entry)| match expand_lookups(entry.clone(), env) {
            Err(e)
                if matches!(
                    e.problem,
                    EnvProblem::Unset { .. } | EnvProblem::SecretUnset { .. }
                ) =>
            {
                let field = if e.path.is_empty() {
                    format!("{key}.{name}")
                } else {
                    format!("{key}.{name}.{}", e.path)
                };
                Some((
                    name.clone(),
                    format!("{} (used in `{field}` of `{}`)", e.problem, path.display()),
                ))
            }
            _ => None,
        })
        .collect();
    for (name, reason) in waiting {
        let Some(entry) = servers.shift_remove(&name) else {
            continue;
        };
        let at = |field: String, message: String| ConfigError::new(path, field, message);
        let server_name = ServerName::new(&name).map_err(|e| at(format!("{key}.{name}"), e))?;
        let server =
            checked_server(stand_in(entry), key, &name).map_err(|(field, e)| at(field, e))?;
        taken.push((server_name, UnavailableServer { server, reason }));
    }
    Ok(taken)
}
