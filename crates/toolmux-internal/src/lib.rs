//! The internal pack (source `internal`): what a host needs from toolmux itself — the secret
//! store (`secrets_list`, `secrets_get`, `secrets_set`, `secrets_delete`), the configuration
//! (`config_get`, `config_set`) and the project (`workspace_root`).
//!
//! Every tool is marked `internal`, so `Catalog::tools()` never lists it to a model or an MCP
//! client and `Catalog::resolve` refuses it to any caller that is not `trusted` (the CLI, an
//! authenticated REST request): the decision stays in the core, this crate only declares.
//! Values stay out of the execution log: `secrets_set` takes its value as `secret`, an argument
//! key the log redacts, and `secrets_get` returns it as `secret` in the structured result,
//! which the log redacts by the same rule, and never in the text.
//!
//! `config_get` reads the configuration files as written, merged, with `${VAR}` and
//! `${secret:NAME}` left as references, so it never reveals a value; `config_set` changes the
//! project file through the one `ConfigEditor` (checked whole, written atomically, under its
//! lock); a running `serve` picks the change up through its watcher.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use toolmux_config::ConfigEditor;
use toolmux_core::{
    Policy, Source, SourceCall, SourceError, SourceKind, ToolAnnotations, ToolDescriptor,
    ToolErrorKind, ToolResult, input_schema, parse_arguments,
};
use toolmux_secrets::{SecretStore, SecretValue};

/// The source id.
pub const SOURCE_ID: &str = "internal";

/// The internal pack of one project.
pub struct InternalPack {
    store: SecretStore,
    editor: ConfigEditor,
    /// The configuration files, lowest precedence first (the user's, the project's).
    files: Vec<PathBuf>,
    root: PathBuf,
    project_dir: PathBuf,
    tools: Vec<ToolDescriptor>,
}

impl InternalPack {
    /// The pack over a project's secret store and configuration; `root` is the workspace root
    /// the configuration resolved.
    pub fn new(
        store: SecretStore,
        project_dir: &Path,
        user_config: Option<&Path>,
        root: &Path,
    ) -> Self {
        let mut files: Vec<PathBuf> = user_config.map(Path::to_path_buf).into_iter().collect();
        files.push(toolmux_config::project_config_path(project_dir));
        // An edit is checked with the references it keeps resolved from this store.
        let secrets = store.clone();
        let editor = ConfigEditor::new(project_dir, user_config)
            .with_secrets(Some(Arc::new(move |name: &str| secrets.config_value(name))));
        Self {
            store,
            editor,
            files,
            root: root.to_path_buf(),
            project_dir: project_dir.to_path_buf(),
            tools: descriptors(),
        }
    }
}

const NAME_PATTERN: &str = r"^[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*$";

fn descriptors() -> Vec<ToolDescriptor> {
    let reads = ToolAnnotations::read_only();
    let writes = ToolAnnotations {
        read_only_hint: Some(false),
        destructive_hint: Some(true),
        idempotent_hint: Some(true),
        open_world_hint: Some(false),
    };
    let tool = |tool: &str,
                description: &str,
                input: Value,
                output: Value,
                annotations: &ToolAnnotations| {
        let mut d = ToolDescriptor::new(SOURCE_ID, tool, description, input);
        d.output_schema = Some(Arc::new(output));
        d.annotations = annotations.clone();
        d.internal = true;
        // Only trusted host callers reach these tools, and they act for the person at the
        // keyboard: asking that person to approve their own command adds nothing. A
        // configured rule for the name still wins.
        d.policy = Some(Policy::Allow);
        d
    };
    let object = |properties: Value, required: &[&str]| {
        json!({"type": "object", "properties": properties, "required": required,
            "additionalProperties": false})
    };
    vec![
        tool(
            "secrets_list",
            "[Internal] The names of the stored secrets (never their values), optionally under a prefix.",
            input_schema::<SecretsListArgs>(),
            object(
                json!({"names": {"type": "array", "items": {"type": "string"}},
                "backend": {"type": "string", "enum": ["keyring", "file"]}}),
                &["names", "backend"],
            ),
            &reads,
        ),
        tool(
            "secrets_get",
            "[Internal] One secret's value.",
            input_schema::<SecretNameArgs>(),
            object(
                json!({"name": {"type": "string"}, "secret": {"type": "string"}}),
                &["name", "secret"],
            ),
            &reads,
        ),
        tool(
            "secrets_set",
            "[Internal] Stores a secret under a name, replacing its value if it is set.",
            input_schema::<SecretsSetArgs>(),
            object(
                json!({"name": {"type": "string"}, "replaced": {"type": "boolean"}}),
                &["name", "replaced"],
            ),
            &writes,
        ),
        tool(
            "secrets_delete",
            "[Internal] Removes a secret.",
            input_schema::<SecretNameArgs>(),
            object(
                json!({"name": {"type": "string"}, "deleted": {"type": "boolean"}}),
                &["name", "deleted"],
            ),
            &writes,
        ),
        tool(
            "config_get",
            "[Internal] A value of the effective configuration (the user's file under the project's, \
             references such as `${VAR}` and `${secret:NAME}` left as written): a JSON pointer \
             (`/server/port`) or a dotted path (`mcpServers.github.command`); the whole \
             configuration without one.",
            input_schema::<ConfigGetArgs>(),
            object(
                json!({"path": {"type": "string"}, "value": {}}),
                &["path", "value"],
            ),
            &reads,
        ),
        tool(
            "config_set",
            "[Internal] Sets a value in the project's configuration file (a JSON pointer or a dotted \
             path; `null` removes the key). The whole file is checked before it is written.",
            input_schema::<ConfigSetArgs>(),
            object(
                json!({"path": {"type": "string"}, "written": {"type": "boolean"},
                "file": {"type": "string"}}),
                &["path", "written", "file"],
            ),
            &writes,
        ),
        tool(
            "workspace_root",
            "[Internal] The project's workspace root and the directory that holds `.toolmux/`.",
            input_schema::<NoArgs>(),
            object(
                json!({"root": {"type": "string"}, "projectDir": {"type": "string"}}),
                &["root", "projectDir"],
            ),
            &reads,
        ),
    ]
}

/// A path as segments: a JSON pointer (`/a/b~1c`) or a dotted path (`a.b`); empty for the
/// whole document.
fn segments(path: &str) -> Vec<String> {
    if path.is_empty() || path == "/" {
        Vec::new()
    } else if let Some(pointer) = path.strip_prefix('/') {
        pointer
            .split('/')
            .map(|s| s.replace("~1", "/").replace("~0", "~"))
            .collect()
    } else {
        path.split('.').map(str::to_string).collect()
    }
}

fn lookup<'v>(mut value: &'v Value, path: &[String]) -> Option<&'v Value> {
    for segment in path {
        value = match value {
            Value::Object(map) => map.get(segment)?,
            Value::Array(items) => items.get(segment.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(value)
}

/// Sets (or with `null` removes) the value at `path` in `root`, making the objects on the way.
fn assign(root: &mut Map<String, Value>, path: &[String], value: Value) -> Result<(), String> {
    let Some((last, parents)) = path.split_last() else {
        return Err("the path is empty".into());
    };
    let mut here = root;
    for (i, segment) in parents.iter().enumerate() {
        let next = here
            .entry(segment.clone())
            .or_insert_with(|| Value::Object(Map::new()));
        here = next.as_object_mut().ok_or_else(|| {
            format!(
                "`{}` is not an object",
                parents[..=i].join(".").trim_start_matches('.')
            )
        })?;
    }
    if value.is_null() {
        here.remove(last);
    } else {
        here.insert(last.clone(), value);
    }
    Ok(())
}

/// `secrets_list`'s arguments.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct SecretsListArgs {
    /// Only names starting with this (`oauth/github/`)
    #[serde(default)]
    prefix: String,
}

/// `secrets_get`'s and `secrets_delete`'s arguments.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct SecretNameArgs {
    /// The secret's name: letters, digits, `_`, `.`, `-`, segments separated by `/`
    #[schemars(regex(pattern = NAME_PATTERN), length(max = 200))]
    name: String,
}

/// `secrets_set`'s arguments.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct SecretsSetArgs {
    /// The secret's name: letters, digits, `_`, `.`, `-`, segments separated by `/`
    #[schemars(regex(pattern = NAME_PATTERN), length(max = 200))]
    name: String,
    /// The value
    secret: String,
}

/// `config_get`'s arguments.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ConfigGetArgs {
    /// A JSON pointer (`/server/port`) or a dotted path (`mcpServers.github.command`); the
    /// whole configuration without one.
    #[serde(default)]
    path: String,
}

/// `config_set`'s arguments.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ConfigSetArgs {
    /// A JSON pointer or a dotted path.
    #[schemars(length(min = 1))]
    path: String,
    /// The value to set; `null` removes the key.
    value: Value,
}

/// `workspace_root` takes no arguments.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct NoArgs {}

impl InternalPack {
    async fn run(&self, tool: &str, args: Map<String, Value>) -> ToolResult {
        match self.run_parsed(tool, &args).await {
            Ok(result) | Err(result) => result,
        }
    }

    /// Runs a tool on its parsed arguments; `Err` is an answer given early (arguments that do
    /// not fit the input struct, a store that cannot be read).
    async fn run_parsed(
        &self,
        tool: &str,
        args: &Map<String, Value>,
    ) -> Result<ToolResult, ToolResult> {
        let parse_failed = |e: String| ToolResult::kind_error(ToolErrorKind::Invalid, e);
        let failed = |e: &dyn std::fmt::Display| ToolResult::error(e.to_string());
        Ok(match tool {
            "secrets_list" => {
                let SecretsListArgs { prefix } = parse_arguments(args).map_err(parse_failed)?;
                match self.store.list_async(&prefix).await {
                    Ok(names) => {
                        let text = if names.is_empty() {
                            "no secrets".to_string()
                        } else {
                            names.join("\n")
                        };
                        ToolResult::structured_with_text(
                            json!({"names": names, "backend": self.store.backend()}),
                            text,
                        )
                    }
                    Err(e) => failed(&e),
                }
            }
            "secrets_get" => {
                let SecretNameArgs { name } = parse_arguments(args).map_err(parse_failed)?;
                let name = name.as_str();
                match self.store.get_async(name).await {
                    // The value goes only in the structured result, under a key the execution
                    // log redacts; the text names it without showing it.
                    Ok(Some(value)) => ToolResult::structured_with_text(
                        json!({"name": name, "secret": value.expose()}),
                        format!("secret `{name}` ({} characters)", value.expose().len()),
                    ),
                    Ok(None) => ToolResult::kind_error(
                        ToolErrorKind::NotFound,
                        format!("no secret named `{name}`"),
                    ),
                    Err(e) => failed(&e),
                }
            }
            "secrets_set" => {
                let SecretsSetArgs { name, secret } =
                    parse_arguments(args).map_err(parse_failed)?;
                let name = name.as_str();
                let value = SecretValue::new(secret);
                let replaced = match self.store.get_async(name).await {
                    Ok(old) => old.is_some(),
                    Err(e) => return Err(failed(&e)),
                };
                match self.store.set_async(name, value).await {
                    Ok(()) => ToolResult::structured_with_text(
                        json!({"name": name, "replaced": replaced}),
                        format!("stored secret `{name}` ({})", self.store.backend()),
                    ),
                    Err(e) => failed(&e),
                }
            }
            "secrets_delete" => {
                let SecretNameArgs { name } = parse_arguments(args).map_err(parse_failed)?;
                let name = name.as_str();
                match self.store.delete_async(name).await {
                    Ok(true) => ToolResult::structured_with_text(
                        json!({"name": name, "deleted": true}),
                        format!("deleted secret `{name}`"),
                    ),
                    Ok(false) => ToolResult::kind_error(
                        ToolErrorKind::NotFound,
                        format!("no secret named `{name}`"),
                    ),
                    Err(e) => failed(&e),
                }
            }
            "config_get" => {
                let ConfigGetArgs { path } = parse_arguments(args).map_err(parse_failed)?;
                let files = self.files.clone();
                let merged =
                    tokio::task::spawn_blocking(move || toolmux_config::unexpanded_config(&files))
                        .await
                        .unwrap_or_default();
                match lookup(&merged, &segments(&path)) {
                    Some(value) => ToolResult::structured(json!({"path": path, "value": value})),
                    None => ToolResult::kind_error(
                        ToolErrorKind::NotFound,
                        format!("the configuration has nothing at `{path}`"),
                    ),
                }
            }
            "config_set" => {
                let ConfigSetArgs { path, value } = parse_arguments(args).map_err(parse_failed)?;
                let editor = self.editor.clone();
                let file = editor.path().display().to_string();
                let edit_path = path.clone();
                let outcome = tokio::task::spawn_blocking(move || {
                    editor.edit(|doc| {
                        assign(doc.root_mut(), &segments(&edit_path), value)
                            .map_err(EditFailure::Path)
                    })
                })
                .await;
                match outcome {
                    Ok(Ok(edited)) => ToolResult::structured(
                        json!({"path": path, "written": edited.written, "file": file}),
                    ),
                    Ok(Err(EditFailure::Path(message))) => {
                        ToolResult::kind_error(ToolErrorKind::Invalid, message)
                    }
                    Ok(Err(EditFailure::Edit(e))) => {
                        ToolResult::kind_error(ToolErrorKind::Invalid, e.to_string())
                    }
                    Err(e) => failed(&e),
                }
            }
            "workspace_root" => {
                let NoArgs {} = parse_arguments(args).map_err(parse_failed)?;
                ToolResult::structured(json!({
                    "root": self.root.display().to_string(),
                    "projectDir": self.project_dir.display().to_string(),
                }))
            }
            other => ToolResult::error(format!("the internal pack has no tool `{other}`")),
        })
    }
}

enum EditFailure {
    Path(String),
    Edit(toolmux_config::EditError),
}

impl From<toolmux_config::EditError> for EditFailure {
    fn from(e: toolmux_config::EditError) -> Self {
        Self::Edit(e)
    }
}

#[async_trait]
impl Source for InternalPack {
    fn id(&self) -> &str {
        SOURCE_ID
    }

    fn kind(&self) -> SourceKind {
        SourceKind::Builtin
    }

    fn description(&self) -> Option<String> {
        Some("toolmux's own settings and secrets, for trusted callers only.".to_string())
    }

    fn tools(&self) -> Vec<ToolDescriptor> {
        self.tools.clone()
    }

    async fn call(&self, call: SourceCall<'_>) -> Result<ToolResult, SourceError> {
        Ok(self.run(&call.tool.original_name, call.arguments).await)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_pointers_or_dots() {
        let doc = json!({"a": {"b/c": [10, 20], "d": {"e": 1}}});
        assert_eq!(lookup(&doc, &segments("/a/b~1c/1")), Some(&json!(20)));
        assert_eq!(lookup(&doc, &segments("a.d.e")), Some(&json!(1)));
        assert_eq!(lookup(&doc, &segments("a.x")), None);
        assert_eq!(lookup(&doc, &segments("")), Some(&doc));
    }

    #[test]
    fn assign_makes_objects_and_null_removes() {
        let mut root = Map::new();
        assign(&mut root, &segments("server.port"), json!(8080)).expect("set");
        assert_eq!(
            Value::Object(root.clone()),
            json!({"server": {"port": 8080}})
        );
        assign(&mut root, &segments("/server/port"), Value::Null).expect("remove");
        assert_eq!(Value::Object(root.clone()), json!({"server": {}}));
        assert!(assign(&mut root, &segments("server.port.x"), json!(1)).is_ok());
        assert!(assign(&mut root, &segments("server.port.x.y"), json!(1)).is_err());
    }
}
