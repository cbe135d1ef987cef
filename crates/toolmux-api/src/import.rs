//! `POST /api/import`: `toolmux import` over REST, for the web app's *Import* button. The
//! servers other clients keep (Claude Code's `.mcp.json`, Cursor's, VS Code's, Codex's
//! `config.toml`) are read and planned by the same `toolmux_config` code the command uses
//! ([`read_import`], [`plan_import`]); each planned server is then written through the one
//! writer queue like `POST /api/mcp-servers`, so the running server applies it at once, and
//! its tools are discovered in the background.

use std::path::PathBuf;

use axum::Json;
use axum::extract::State;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use toolmux_config::{FoundServer, ImportFormat, plan_import, read_import};
use toolmux_http::{ApiJson, OpenApiRouter, routes};
use utoipa::ToSchema;

use crate::ApiState;
use crate::error::{ApiError, ErrorBody};
use crate::registry::{Edit, Section};
use crate::upstreams::servers;

pub(crate) fn routes() -> OpenApiRouter<ApiState> {
    OpenApiRouter::new().routes(routes!(import))
}

/// A client whose MCP servers toolmux imports.
#[derive(Debug, Clone, Copy, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum ImportClient {
    /// Claude Code's `.mcp.json`.
    Claude,
    /// Cursor's `.cursor/mcp.json`.
    Cursor,
    /// VS Code's `.vscode/mcp.json`.
    Vscode,
    /// Codex's `~/.codex/config.toml`.
    Codex,
}

impl ImportClient {
    fn format(self) -> ImportFormat {
        match self {
            Self::Claude => ImportFormat::ClaudeCode,
            Self::Cursor => ImportFormat::Cursor,
            Self::Vscode => ImportFormat::VsCode,
            Self::Codex => ImportFormat::Codex,
        }
    }
}

/// What to import, as `toolmux import`'s flags say it (without `--file`: a request names no
/// path on the server's disk).
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ImportRequest {
    /// Only this client's file (default: every one that exists).
    pub from: Option<ImportClient>,
    /// Replace servers toolmux already has under the same name.
    #[serde(default)]
    pub force: bool,
    /// Say what would be added, writing nothing.
    #[serde(default)]
    pub dry_run: bool,
}

/// What an import found and did.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ImportReport {
    /// The files read.
    pub files: Vec<String>,
    /// The servers added or replaced (or that would be, in a dry run), by name.
    pub servers: Vec<String>,
    /// One line per server added or replaced, as `toolmux import` prints it.
    pub added: Vec<String>,
    /// One line per server left out, saying why.
    pub skipped: Vec<String>,
}

/// Imports the MCP servers other clients keep into the project's configuration, as
/// `toolmux import` does, and starts discovering their tools. A server of a name toolmux has
/// already is skipped unless `force`.
#[utoipa::path(
    post, path = "/api/import", tag = "mcp-servers",
    request_body = ImportRequest,
    responses(
        (status = 200, description = "What was found, added and skipped", body = ImportReport),
        (status = 400, description = "The body is not the JSON object described", body = ErrorBody),
        (status = 401, description = "No valid API key", body = ErrorBody),
        (status = 404, description = "`from` names a client whose file does not exist", body = ErrorBody),
        (status = 422, description = "A file is not in its client's format", body = ErrorBody),
        (status = 503, description = "This server does not change its configuration", body = ErrorBody),
    )
)]
pub(crate) async fn import(
    State(state): State<ApiState>,
    ApiJson(request): ApiJson<ImportRequest>,
) -> Result<Json<ImportReport>, ApiError> {
    let upstreams = servers(&state)?;
    let project_dir = state
        .inner
        .writer
        .as_ref()
        .map(|w| w.project_dir.clone())
        .ok_or_else(|| ApiError::unavailable("this server does not change its configuration"))?;
    let from = request.from;
    let found = tokio::task::spawn_blocking(move || find(&project_dir, from))
        .await
        .map_err(|e| ApiError::internal(format!("the import reader stopped: {e}")))??;
    let files: Vec<String> = found
        .iter()
        .map(|f| f.path.display().to_string())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    // The servers the running configuration has stand for the file's section: the writer
    // checks each name again under the file's lock, so one added meanwhile is never replaced
    // unasked (it is reported as skipped).
    let existing: Map<String, Value> = upstreams
        .list()
        .into_iter()
        .map(|s| (s.name, Value::Null))
        .collect();
    let plan = plan_import(&existing, found, request.force);
    let mut report = ImportReport {
        files,
        servers: Vec::new(),
        added: Vec::new(),
        skipped: plan.skipped,
    };
    for ((name, entry), line) in plan.entries.into_iter().zip(plan.added) {
        if request.dry_run {
            report.servers.push(name);
            report.added.push(line);
            continue;
        }
        let Value::Object(mut entry) = entry else {
            report.skipped.push(format!("{name}: not an object"));
            continue;
        };
        let edit = if existing.contains_key(&name) {
            Edit::replace(Section::Upstreams, name.clone(), entry)
        } else {
            entry.insert("name".into(), Value::String(name.clone()));
            Edit::add(Section::Upstreams, entry)
        };
        match async { state.write_config(edit?).await }.await {
            Ok(_) => {
                report.servers.push(name);
                report.added.push(line);
            }
            Err(e) => report.skipped.push(format!("{name}: {e}")),
        }
    }
    for name in &report.servers {
        if request.dry_run {
            break;
        }
        let upstreams = std::sync::Arc::clone(upstreams);
        let name = name.clone();
        // Discovery may take a server's whole start-up time: the page polls for its end.
        tokio::spawn(async move {
            if let Some(Err(e)) = upstreams.refresh(&name).await {
                tracing::warn!(server = %name, error = %e, "discovery of an imported server failed");
            }
        });
    }
    Ok(Json(report))
}

/// The servers of the files to import from, as `toolmux import` picks them.
fn find(
    project_dir: &std::path::Path,
    from: Option<ImportClient>,
) -> Result<Vec<FoundServer>, ApiError> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let sources: Vec<(ImportFormat, PathBuf)> = match from {
        Some(client) => {
            let format = client.format();
            let path = format
                .default_path(project_dir, home.as_deref())
                .filter(|p| p.exists())
                .ok_or_else(|| ApiError::not_found(format!("found no file of {format}'s")))?;
            vec![(format, path)]
        }
        None => ImportFormat::ALL
            .iter()
            .filter_map(|&f| f.default_path(project_dir, home.as_deref()).map(|p| (f, p)))
            .filter(|(_, p)| p.exists())
            .collect(),
    };
    let mut found = Vec::new();
    for (format, path) in sources {
        let servers = read_import(format, &path, project_dir)
            .map_err(|e| ApiError::unprocessable(e.to_string()))?;
        found.extend(servers.into_iter().map(|server| FoundServer {
            format,
            path: path.clone(),
            server,
        }));
    }
    Ok(found)
}
