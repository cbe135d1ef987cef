//! Translating the upstream servers other clients keep into toolmux's configuration, for
//! `toolmux import`: reading Claude Code's `.mcp.json`, Cursor's `.cursor/mcp.json` (both an
//! `mcpServers` object), Claude Code's `~/.claude.json` (its user scope, a top-level
//! `mcpServers`, and its local scope, `projects.<project dir>.mcpServers`: where `claude mcp add`
//! writes), VS Code's `.vscode/mcp.json` (a `servers` object) and Codex's `config.toml` under
//! `$CODEX_HOME` (`~/.codex` by default; `[mcp_servers.NAME]` tables) ([`read_import`]), each server becoming
//! an entry of toolmux's `mcpServers` section with a note for everything that did not carry over
//! as it was; then deciding which of them join the section a file already has ([`plan_import`]).
//! It reads files and writes none: the caller puts the plan into the file with
//! [`crate::ConfigEditor`].

use std::fmt;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

/// Keys an `mcpServers` entry of Claude Code, Cursor or VS Code may carry that toolmux reads
/// the same way.
const SHARED_KEYS: &[&str] = &["type", "command", "args", "env", "cwd", "url", "headers"];

/// Where upstream server definitions are imported from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ImportFormat {
    /// Claude Code's project file `.mcp.json`.
    ClaudeCode,
    /// Claude Code's own `~/.claude.json`: the user scope (its top-level `mcpServers`) and the
    /// local scope of this project (`projects.<project dir>.mcpServers`, which wins a name
    /// clash, as in Claude Code). `claude mcp add` writes the local scope by default.
    ClaudeCodeUser,
    /// Cursor's `.cursor/mcp.json`.
    Cursor,
    /// VS Code's `.vscode/mcp.json`.
    VsCode,
    /// Codex's `~/.codex/config.toml`.
    Codex,
}

impl ImportFormat {
    /// Every format, in the order `toolmux import` looks for them.
    pub const ALL: [ImportFormat; 5] = [
        ImportFormat::ClaudeCode,
        ImportFormat::ClaudeCodeUser,
        ImportFormat::Cursor,
        ImportFormat::VsCode,
        ImportFormat::Codex,
    ];

    /// Where the format's file usually is. Codex's is under `$CODEX_HOME` when that is set, as
    /// Codex itself reads it.
    pub fn default_path(self, project_dir: &Path, home: Option<&Path>) -> Option<PathBuf> {
        match self {
            ImportFormat::ClaudeCode => Some(project_dir.join(".mcp.json")),
            ImportFormat::ClaudeCodeUser => home.map(|h| h.join(".claude.json")),
            ImportFormat::Cursor => Some(project_dir.join(".cursor").join("mcp.json")),
            ImportFormat::VsCode => Some(project_dir.join(".vscode").join("mcp.json")),
            // Through toolmux's environment, which keeps a variable taken out of the process
            // environment at start (as every other lookup of the configuration does).
            ImportFormat::Codex => toolmux_core::process_env::var("CODEX_HOME")
                .filter(|dir| !dir.is_empty())
                .map(PathBuf::from)
                .or_else(|| home.map(|h| h.join(".codex")))
                .map(|dir| dir.join("config.toml")),
        }
    }
}

impl fmt::Display for ImportFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ImportFormat::ClaudeCode => "Claude Code",
            ImportFormat::ClaudeCodeUser => "Claude Code (user and local scopes)",
            ImportFormat::Cursor => "Cursor",
            ImportFormat::VsCode => "VS Code",
            ImportFormat::Codex => "Codex",
        })
    }
}

/// One upstream server read from another client's file.
#[derive(Clone, Debug, PartialEq)]
pub struct ImportedServer {
    /// Its name.
    pub name: String,
    /// The `mcpServers` entry for toolmux's configuration.
    pub entry: Value,
    /// What did not carry over as it was.
    pub notes: Vec<String>,
}

/// A file that cannot be imported.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// It cannot be read.
    #[error("cannot read `{path}`: {message}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        message: String,
    },
    /// It is not in the format expected.
    #[error("`{path}` is not a {format} MCP configuration: {message}")]
    Format {
        /// The file.
        path: PathBuf,
        /// The expected format.
        format: ImportFormat,
        /// Why.
        message: String,
    },
}

/// Reads the servers of one file. `project_dir` stands in for VS Code's `${workspaceFolder}`.
pub fn read_import(
    format: ImportFormat,
    path: &Path,
    project_dir: &Path,
) -> Result<Vec<ImportedServer>, ImportError> {
    let text = crate::read::read_config_text(path).map_err(|e| ImportError::Read {
        path: path.to_path_buf(),
        message: e.to_string(),
    })?;
    let bad = |message: String| ImportError::Format {
        path: path.to_path_buf(),
        format,
        message,
    };
    match format {
        ImportFormat::ClaudeCode | ImportFormat::Cursor | ImportFormat::VsCode => {
            // VS Code's and Cursor's files allow comments and trailing commas.
            let value: Value = serde_json::from_str(&crate::jsonc::without_comments(&text))
                .map_err(|e| bad(format!("invalid JSON: {e}")))?;
            let key = if format == ImportFormat::VsCode {
                "servers"
            } else {
                "mcpServers"
            };
            let servers = match value.get(key) {
                Some(Value::Object(servers)) => servers,
                Some(_) => return Err(bad(format!("`{key}` is not an object"))),
                None => return Err(bad(format!("there is no `{key}` object"))),
            };
            json_servers(format, servers, project_dir).map_err(bad)
        }
        ImportFormat::ClaudeCodeUser => {
            let value: Value =
                serde_json::from_str(&text).map_err(|e| bad(format!("invalid JSON: {e}")))?;
            // The file holds much else (settings, history): either scope may be missing.
            let mut servers = servers_at(&value, &["mcpServers"]).map_err(bad)?;
            // Claude Code keys a project by the directory it was started in; a symlinked path
            // may be recorded either way.
            let mut dirs = vec![project_dir.display().to_string()];
            if let Ok(real) = project_dir.canonicalize() {
                dirs.push(real.display().to_string());
            }
            dirs.dedup();
            for dir in &dirs {
                let local = servers_at(&value, &["projects", dir, "mcpServers"]).map_err(bad)?;
                servers.extend(local);
            }
            json_servers(format, &servers, project_dir).map_err(bad)
        }
        ImportFormat::Codex => {
            let value: toml::Table =
                toml::from_str(&text).map_err(|e| bad(format!("invalid TOML: {e}")))?;
            let Some(servers) = value.get("mcp_servers") else {
                return Ok(Vec::new());
            };
            let Some(servers) = servers.as_table() else {
                return Err(bad("`mcp_servers` is not a table".to_string()));
            };
            servers
                .iter()
                .map(|(name, entry)| {
                    let Some(entry) = entry.as_table() else {
                        return Err(bad(format!("`mcp_servers.{name}` is not a table")));
                    };
                    Ok(codex_server(name, entry))
                })
                .collect()
        }
    }
}

/// The object at `path` in `value` (empty when it is missing), or why it is not one.
fn servers_at(value: &Value, path: &[&str]) -> Result<Map<String, Value>, String> {
    let mut at = value;
    for key in path {
        match at.get(key) {
            Some(next) => at = next,
            None => return Ok(Map::new()),
        }
    }
    match at {
        Value::Object(servers) => Ok(servers.clone()),
        _ => Err(format!("`{}` is not an object", path.join("."))),
    }
}

/// Every entry of an `mcpServers` (or `servers`) object, translated.
fn json_servers(
    format: ImportFormat,
    servers: &Map<String, Value>,
    project_dir: &Path,
) -> Result<Vec<ImportedServer>, String> {
    servers
        .iter()
        .map(|(name, entry)| {
            let Value::Object(entry) = entry else {
                return Err(format!("server `{name}` is not an object"));
            };
            Ok(json_server(format, name, entry, project_dir))
        })
        .collect()
}

fn json_server(
    format: ImportFormat,
    name: &str,
    entry: &Map<String, Value>,
    project_dir: &Path,
) -> ImportedServer {
    let mut out = Map::new();
    let mut notes = Vec::new();
    for (key, value) in entry {
        if !SHARED_KEYS.contains(&key.as_str()) {
            notes.push(format!("`{key}` is not a toolmux setting and was left out"));
            continue;
        }
        let mut value = value.clone();
        if format == ImportFormat::VsCode {
            value = vscode_variables(value, project_dir, &mut notes);
        }
        out.insert(key.clone(), value);
    }
    literal_secrets(&out, &mut notes);
    ImportedServer {
        name: name.to_string(),
        entry: Value::Object(out),
        notes,
    }
}

/// VS Code's `${env:X}` is toolmux's `${X}`; `${workspaceFolder}` is the project directory;
/// `${input:id}` (a prompt VS Code shows) becomes a reference to an environment variable.
fn vscode_variables(value: Value, project_dir: &Path, notes: &mut Vec<String>) -> Value {
    match value {
        Value::String(text) => {
            let mut text = text
                .replace("${workspaceFolder}", &project_dir.display().to_string())
                .replace("${env:", "${");
            while let Some(start) = text.find("${input:") {
                let Some(len) = text[start..].find('}') else {
                    break;
                };
                let id = &text[start + "${input:".len()..start + len];
                let var: String = id
                    .chars()
                    .map(|c| {
                        if c.is_ascii_alphanumeric() {
                            c.to_ascii_uppercase()
                        } else {
                            '_'
                        }
                    })
                    .collect();
                notes.push(format!(
                    "VS Code input `{id}` became the environment variable reference `${{{var}}}`; \
                     set {var} before starting toolmux"
                ));
                text.replace_range(start..=start + len, &format!("${{{var}}}"));
            }
            Value::String(text)
        }
        Value::Array(items) => Value::Array(
            items
                .into_iter()
                .map(|v| vscode_variables(v, project_dir, notes))
                .collect(),
        ),
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| (k, vscode_variables(v, project_dir, notes)))
                .collect(),
        ),
        other => other,
    }
}

fn codex_server(name: &str, entry: &toml::Table) -> ImportedServer {
    let mut out = Map::new();
    let mut notes = Vec::new();
    let mut headers = Map::new();
    let mut passed = Map::new();
    for (key, value) in entry {
        let json = toml_to_json(value);
        match key.as_str() {
            "command" | "args" | "env" | "cwd" | "url" => {
                out.insert(key.clone(), json);
            }
            "enabled" => {
                out.insert("enabled".into(), json);
            }
            "enabled_tools" => {
                out.insert("enabledTools".into(), json);
            }
            "disabled_tools" => {
                out.insert("disabledTools".into(), json);
            }
            "startup_timeout_sec" | "tool_timeout_sec" => {
                let target = if key == "startup_timeout_sec" {
                    "startupTimeoutMs"
                } else {
                    "toolTimeoutMs"
                };
                match value.as_float().or(value.as_integer().map(|i| i as f64)) {
                    Some(secs) if secs > 0.0 => {
                        out.insert(target.into(), json!((secs * 1000.0).round() as u64));
                    }
                    _ => notes.push(format!("`{key}` is not a positive number and was left out")),
                }
            }
            "startup_timeout_ms" => {
                out.insert("startupTimeoutMs".into(), json);
            }
            "http_headers" => {
                if let Value::Object(map) = json {
                    headers.extend(map);
                }
            }
            "env_http_headers" => {
                if let Value::Object(map) = json {
                    for (header, var) in map {
                        if let Some(var) = var.as_str() {
                            headers.insert(header, json!(format!("${{{var}}}")));
                        }
                    }
                }
            }
            "bearer_token_env_var" => {
                if let Some(var) = value.as_str() {
                    headers.insert("Authorization".into(), json!(format!("Bearer ${{{var}}}")));
                }
            }
            // Codex passes these variables of its own environment to the server; toolmux passes
            // only an allowlist, so each becomes a `${VAR}` reference, read when it starts.
            "env_vars" => {
                if let Value::Array(names) = json {
                    for name in names.iter().filter_map(Value::as_str) {
                        passed.insert(name.to_string(), json!(format!("${{{name}}}")));
                    }
                }
            }
            other => notes.push(format!(
                "`{other}` is not a toolmux setting and was left out"
            )),
        }
    }
    if !headers.is_empty() {
        out.insert("headers".into(), Value::Object(headers));
    }
    if !passed.is_empty() {
        // The server's own `env` values win over a variable of the same name passed through.
        let env = out.entry("env").or_insert_with(|| json!({}));
        if let Value::Object(env) = env {
            for (name, reference) in passed {
                env.entry(name).or_insert(reference);
            }
        }
    }
    literal_secrets(&out, &mut notes);
    ImportedServer {
        name: name.to_string(),
        entry: Value::Object(out),
        notes,
    }
}

/// Notes env values and headers that look like secrets written out in full.
fn literal_secrets(entry: &Map<String, Value>, notes: &mut Vec<String>) {
    for section in ["env", "headers"] {
        let Some(Value::Object(map)) = entry.get(section) else {
            continue;
        };
        for (key, value) in map {
            if toolmux_core::is_secret_name(key)
                && value.as_str().is_some_and(|v| !v.contains("${"))
            {
                notes.push(format!(
                    "`{section}.{key}` holds a literal value; consider a `${{VAR}}` reference so \
                     the secret stays out of the file"
                ));
            }
        }
    }
}

fn toml_to_json(value: &toml::Value) -> Value {
    match value {
        toml::Value::String(s) => json!(s),
        toml::Value::Integer(i) => json!(i),
        toml::Value::Float(f) => json!(f),
        toml::Value::Boolean(b) => json!(b),
        toml::Value::Datetime(d) => json!(d.to_string()),
        toml::Value::Array(items) => Value::Array(items.iter().map(toml_to_json).collect()),
        toml::Value::Table(table) => Value::Object(
            table
                .iter()
                .map(|(k, v)| (k.clone(), toml_to_json(v)))
                .collect(),
        ),
    }
}

/// What `toolmux import --registry FILE` copies from one of seed 004's registries: its script
/// tools as `tools` entries (the script's path relative to the project when it is inside it)
/// and its servers as `mcpServers` entries, read exactly as the configuration's `registries`
/// reads them in place (the seed's key names translated, `${VAR}` references kept).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RegistryImport {
    /// `tools` entries by name, in the registry's order.
    pub tools: Vec<(String, Value)>,
    /// `mcpServers` entries.
    pub servers: Vec<ImportedServer>,
}

/// Reads one of seed 004's registries for import; its mistakes are reported with file, line
/// and field as when the configuration names it.
pub fn read_registry_import(
    path: &Path,
    project_dir: &Path,
) -> Result<RegistryImport, crate::ConfigError> {
    // Every `${VAR}` is looked up as itself, so the imported entries keep the references
    // (never the values) as the configuration should.
    let keep = |name: &str| Some(format!("${{{name}}}"));
    let (_, found) =
        crate::registries::read_registry_file(path, project_dir, crate::env::Lookups::vars(&keep))?;
    let relative = |arg: &String| {
        Path::new(arg)
            .strip_prefix(project_dir)
            .map(|p| p.display().to_string())
            .unwrap_or_else(|_| arg.clone())
    };
    let tools = found
        .tools
        .into_iter()
        .map(|(name, mut tool)| {
            tool.command = tool.command.iter().map(relative).collect();
            let entry = serde_json::to_value(&tool).unwrap_or_else(|_| json!({}));
            (name.as_str().to_string(), entry)
        })
        .collect();
    let servers = found
        .servers
        .into_iter()
        .map(|(name, server)| ImportedServer {
            name: name.as_str().to_string(),
            entry: serde_json::to_value(&server).unwrap_or_else(|_| json!({})),
            notes: Vec::new(),
        })
        .collect();
    Ok(RegistryImport { tools, servers })
}

/// One server found by [`read_import`], with where it was found.
#[derive(Clone, Debug, PartialEq)]
pub struct FoundServer {
    /// The client whose file held it.
    pub format: ImportFormat,
    /// That file.
    pub path: PathBuf,
    /// The server, translated.
    pub server: ImportedServer,
}

/// What an import adds to the `mcpServers` section, and the report lines saying so.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ImportPlan {
    /// The entries to insert (replacing one of the same name), in the order found.
    pub entries: Vec<(String, Value)>,
    /// One line per server added or replaced: its name, origin and command or URL, then a
    /// `note:` line for each thing that did not carry over.
    pub added: Vec<String>,
    /// One line per server left out, saying why.
    pub skipped: Vec<String>,
}

/// Decides, against the `mcpServers` section a file already has, which found servers are added
/// or replaced: a name the section has is replaced only with `force`, and a name found in two
/// files is taken from the first.
pub fn plan_import(
    existing: &Map<String, Value>,
    found: Vec<FoundServer>,
    force: bool,
) -> ImportPlan {
    let mut plan = ImportPlan::default();
    let mut seen = std::collections::HashSet::new();
    for FoundServer {
        format,
        path,
        server,
    } in found
    {
        if !seen.insert(server.name.clone()) {
            plan.skipped.push(format!(
                "{} (from {format}, {}): already imported from another file",
                server.name,
                path.display()
            ));
            continue;
        }
        let exists = existing.contains_key(&server.name);
        if exists && !force {
            plan.skipped.push(format!(
                "{} (from {format}): toolmux already has a server of that name; use --force to replace it",
                server.name
            ));
            continue;
        }
        let verb = if exists { "replaced" } else { "added" };
        let mut line = format!(
            "{verb} {} from {format} ({}): {}",
            server.name,
            path.display(),
            summary(&server.entry)
        );
        for note in &server.notes {
            line.push_str(&format!("\n    note: {note}"));
        }
        plan.added.push(line);
        plan.entries.push((server.name, server.entry));
    }
    plan
}

/// `npx -y pkg` or the URL, for the report.
fn summary(entry: &Value) -> String {
    if let Some(url) = entry.get("url").and_then(|u| u.as_str()) {
        let kind = entry.get("type").and_then(|t| t.as_str()).unwrap_or("http");
        return format!("{kind} {url}");
    }
    let mut words = vec![
        entry
            .get("command")
            .and_then(|c| c.as_str())
            .unwrap_or_default()
            .to_string(),
    ];
    if let Some(args) = entry.get("args").and_then(|a| a.as_array()) {
        words.extend(args.iter().filter_map(|a| a.as_str()).map(String::from));
    }
    words.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn import(format: ImportFormat, text: &str) -> Vec<ImportedServer> {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("file");
        std::fs::write(&path, text).expect("write");
        read_import(format, &path, Path::new("/work/app")).expect("imports")
    }

    /// Issue 28, found in review: Codex's folder was looked up in the process environment
    /// alone, so a `CODEX_HOME` toolmux took out of it at start (as it does with every
    /// variable it keeps from children) was not found; every other lookup goes through
    /// `process_env::var`.
    #[test]
    fn codex_home_taken_out_of_the_process_environment_is_still_found() {
        let kept = "/kept/by/toolmux/codex";
        toolmux_core::process_env::keep_more([("CODEX_HOME".to_string(), kept.to_string())].into());
        // A `CODEX_HOME` in this process's own environment wins, as it does in toolmux.
        let expected = std::env::var("CODEX_HOME").unwrap_or_else(|_| kept.to_string());
        assert_eq!(
            ImportFormat::Codex.default_path(Path::new("/work/app"), Some(Path::new("/home/u"))),
            Some(PathBuf::from(expected).join("config.toml"))
        );
    }

    #[test]
    fn claude_code_entries_carry_over_and_unknown_keys_are_noted() {
        let servers = import(
            ImportFormat::ClaudeCode,
            r#"{"mcpServers": {"gh": {"command": "npx", "args": ["-y", "x"],
                "env": {"GITHUB_TOKEN": "ghp_literal"}, "oauth": {}}}}"#,
        );
        assert_eq!(servers.len(), 1);
        assert_eq!(
            servers[0].entry,
            json!({"command": "npx", "args": ["-y", "x"], "env": {"GITHUB_TOKEN": "ghp_literal"}})
        );
        assert_eq!(
            servers[0].notes,
            [
                "`oauth` is not a toolmux setting and was left out",
                "`env.GITHUB_TOKEN` holds a literal value; consider a `${VAR}` reference so the secret stays out of the file"
            ]
        );
    }

    #[test]
    fn vscode_servers_with_comments_and_variables_are_translated() {
        let servers = import(
            ImportFormat::VsCode,
            r#"{
              // a comment
              "inputs": [],
              "servers": {
                "fs": {"type": "stdio", "command": "mcp-server-filesystem",
                       "args": ["${workspaceFolder}"], "env": {"TOKEN": "${input:api-key}", "H": "${env:HOME}"},},
              },
            }"#,
        );
        assert_eq!(
            servers[0].entry,
            json!({"type": "stdio", "command": "mcp-server-filesystem", "args": ["/work/app"],
                   "env": {"TOKEN": "${API_KEY}", "H": "${HOME}"}})
        );
        assert_eq!(servers[0].notes.len(), 1, "{:?}", servers[0].notes);
    }

    #[test]
    fn claude_codes_user_scope_and_this_projects_local_scope_are_read_local_first() {
        // As `claude mcp add -s user` and `claude mcp add` (local) write them, with another
        // project's local server that must stay out.
        let servers = import(
            ImportFormat::ClaudeCodeUser,
            r#"{"numStartups": 3, "mcpServers": {
                    "everywhere": {"type": "stdio", "command": "npx", "args": ["-y", "u"], "env": {}},
                    "both": {"type": "http", "url": "https://user.example/mcp"}},
                "projects": {
                    "/work/app": {"allowedTools": [], "mcpServers": {
                        "both": {"type": "http", "url": "https://local.example/mcp"},
                        "here": {"type": "stdio", "command": "here-server", "args": []}}},
                    "/work/other": {"mcpServers": {"elsewhere": {"command": "x"}}}}}"#,
        );
        let entries: Vec<(&str, &Value)> = servers
            .iter()
            .map(|s| (s.name.as_str(), &s.entry))
            .collect();
        assert_eq!(
            entries,
            [
                (
                    "everywhere",
                    &json!({"type": "stdio", "command": "npx", "args": ["-y", "u"], "env": {}})
                ),
                (
                    "both",
                    &json!({"type": "http", "url": "https://local.example/mcp"})
                ),
                (
                    "here",
                    &json!({"type": "stdio", "command": "here-server", "args": []})
                ),
            ]
        );
        // A `~/.claude.json` without any server imports nothing, and is no error.
        assert_eq!(
            import(ImportFormat::ClaudeCodeUser, r#"{"projects": {}}"#),
            []
        );
    }

    #[test]
    fn codex_tables_become_toolmux_entries() {
        let servers = import(
            ImportFormat::Codex,
            r#"
model = "o3"
[mcp_servers.docs]
command = "docs-server"
args = ["--port", "0"]
env = { "A" = "1" }
env_vars = ["A", "DOCS_TOKEN"]
startup_timeout_sec = 2.5
tool_timeout_sec = 60
enabled_tools = ["search"]

[mcp_servers.remote]
url = "https://example.com/mcp"
bearer_token_env_var = "REMOTE_TOKEN"
env_http_headers = { "X-Key" = "REMOTE_KEY" }
"#,
        );
        assert_eq!(servers.len(), 2);
        assert_eq!(
            servers[0].entry,
            json!({"command": "docs-server", "args": ["--port", "0"],
                   "env": {"A": "1", "DOCS_TOKEN": "${DOCS_TOKEN}"},
                   "startupTimeoutMs": 2500, "toolTimeoutMs": 60000, "enabledTools": ["search"]})
        );
        // What Codex passes from its environment is passed by reference, not noted as dropped.
        assert_eq!(servers[0].notes, Vec::<String>::new());
        assert_eq!(
            servers[1].entry,
            json!({"url": "https://example.com/mcp",
                   "headers": {"Authorization": "Bearer ${REMOTE_TOKEN}", "X-Key": "${REMOTE_KEY}"}})
        );
    }

    #[test]
    fn a_file_without_servers_is_a_clear_error() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join(".mcp.json");
        std::fs::write(&path, r#"{"servers": {}}"#).expect("write");
        let err = read_import(ImportFormat::ClaudeCode, &path, dir.path()).expect_err("no key");
        assert_eq!(
            err.to_string(),
            format!(
                "`{}` is not a Claude Code MCP configuration: there is no `mcpServers` object",
                path.display()
            )
        );
    }

    #[test]
    fn comments_inside_strings_are_kept() {
        let text = r#"{"a": "http://x//y", /* c */ "b": [1,],}"#;
        let value: Value =
            serde_json::from_str(&crate::jsonc::without_comments(text)).expect("JSON");
        assert_eq!(value, json!({"a": "http://x//y", "b": [1]}));
    }

    fn found(format: ImportFormat, file: &str, name: &str, entry: Value) -> FoundServer {
        FoundServer {
            format,
            path: PathBuf::from(file),
            server: ImportedServer {
                name: name.to_string(),
                entry,
                notes: Vec::new(),
            },
        }
    }

    #[test]
    fn a_planned_import_adds_new_servers_and_skips_taken_names_without_force() {
        let existing = json!({"gh": {"command": "gh-mcp"}});
        let existing = existing.as_object().expect("object");
        let mut docs = found(
            ImportFormat::ClaudeCode,
            ".mcp.json",
            "docs",
            json!({"command": "npx", "args": ["-y", "docs-mcp"]}),
        );
        docs.server
            .notes
            .push("`oauth` is not a toolmux setting and was left out".into());
        let plan = plan_import(
            existing,
            vec![
                docs,
                found(
                    ImportFormat::Cursor,
                    ".cursor/mcp.json",
                    "gh",
                    json!({"url": "https://example.com/mcp"}),
                ),
            ],
            false,
        );
        assert_eq!(
            plan.entries,
            [(
                "docs".to_string(),
                json!({"command": "npx", "args": ["-y", "docs-mcp"]})
            )]
        );
        assert_eq!(
            plan.added,
            [
                "added docs from Claude Code (.mcp.json): npx -y docs-mcp\n    note: `oauth` is not a toolmux setting and was left out"
            ]
        );
        assert_eq!(
            plan.skipped,
            [
                "gh (from Cursor): toolmux already has a server of that name; use --force to replace it"
            ]
        );
    }

    #[test]
    fn a_forced_import_replaces_a_taken_name_and_takes_a_repeated_name_from_the_first_file() {
        let existing = json!({"gh": {"command": "gh-mcp"}});
        let existing = existing.as_object().expect("object");
        let plan = plan_import(
            existing,
            vec![
                found(
                    ImportFormat::VsCode,
                    ".vscode/mcp.json",
                    "gh",
                    json!({"type": "sse", "url": "https://example.com/sse"}),
                ),
                found(
                    ImportFormat::Codex,
                    "config.toml",
                    "gh",
                    json!({"command": "other"}),
                ),
            ],
            true,
        );
        assert_eq!(
            plan.entries,
            [(
                "gh".to_string(),
                json!({"type": "sse", "url": "https://example.com/sse"})
            )]
        );
        assert_eq!(
            plan.added,
            ["replaced gh from VS Code (.vscode/mcp.json): sse https://example.com/sse"]
        );
        assert_eq!(
            plan.skipped,
            ["gh (from Codex, config.toml): already imported from another file"]
        );
    }
}
