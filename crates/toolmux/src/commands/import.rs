//! `toolmux import`: copy the MCP servers another client already has (Claude Code's
//! `.mcp.json`, Cursor's `.cursor/mcp.json`, VS Code's `.vscode/mcp.json`, Codex's
//! `~/.codex/config.toml`) into the project's `.toolmux/config.json`, saying what was added and
//! never replacing a server of the same name without `--force`.

use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};
use toolmux_upstream::{ImportFormat, ImportedServer, read_import};

use crate::commands::emit;
use crate::commands::upstream::editor;
use crate::exit::{Failure, OK};
use crate::project::locate;

#[derive(Debug, Args)]
pub struct ImportArgs {
    /// Import only from this client (default: every one whose file exists).
    #[arg(long, value_enum)]
    pub from: Option<Client>,
    /// Read this file instead of the client's usual one (needs --from).
    #[arg(long, value_name = "FILE", requires = "from")]
    pub file: Option<PathBuf>,
    /// Replace servers that toolmux already has under the same name.
    #[arg(long)]
    pub force: bool,
    /// Show what would be added without writing anything.
    #[arg(long)]
    pub dry_run: bool,
}

/// The clients toolmux imports from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Client {
    /// `.mcp.json`
    Claude,
    /// `.cursor/mcp.json`
    Cursor,
    /// `.vscode/mcp.json`
    Vscode,
    /// `~/.codex/config.toml`
    Codex,
}

impl Client {
    fn format(self) -> ImportFormat {
        match self {
            Client::Claude => ImportFormat::ClaudeCode,
            Client::Cursor => ImportFormat::Cursor,
            Client::Vscode => ImportFormat::VsCode,
            Client::Codex => ImportFormat::Codex,
        }
    }
}

pub async fn run(project: Option<&Path>, args: ImportArgs) -> Result<u8, Failure> {
    let dir = locate(project)?;
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let sources: Vec<(ImportFormat, PathBuf)> = match (args.from, &args.file) {
        (Some(client), Some(file)) => vec![(client.format(), file.clone())],
        (Some(client), None) => {
            let format = client.format();
            let path = format.default_path(&dir, home.as_deref()).ok_or_else(|| {
                Failure::Usage(format!(
                    "cannot find {format}'s file: there is no home directory"
                ))
            })?;
            if !path.exists() {
                return Err(Failure::Usage(format!(
                    "{format}'s file `{}` does not exist; give another with --file",
                    path.display()
                )));
            }
            vec![(format, path)]
        }
        (None, _) => ImportFormat::ALL
            .iter()
            .filter_map(|&f| f.default_path(&dir, home.as_deref()).map(|p| (f, p)))
            .filter(|(_, p)| p.exists())
            .collect(),
    };
    if sources.is_empty() {
        emit(
            "nothing to import: found no .mcp.json, .cursor/mcp.json, .vscode/mcp.json or ~/.codex/config.toml",
        )?;
        return Ok(OK);
    }

    let mut found: Vec<(ImportFormat, PathBuf, ImportedServer)> = Vec::new();
    for (format, path) in sources {
        let servers =
            read_import(format, &path, &dir).map_err(|e| Failure::Usage(e.to_string()))?;
        found.extend(servers.into_iter().map(|s| (format, path.clone(), s)));
    }

    let editor = editor(&dir);
    // One edit under the config file's lock: the names already there are read in the same
    // step as the new ones are written, so a server added meanwhile is never replaced unasked.
    // A dry run plans the same way and writes nothing (an edit that changes nothing).
    let (added, skipped) = editor
        .edit(|doc| {
            let existing = doc.section("mcpServers")?.cloned().unwrap_or_default();
            let plan = plan(&existing, found, args.force);
            if !args.dry_run && !plan.entries.is_empty() {
                doc.section_mut("mcpServers")?.extend(plan.entries);
            }
            Ok::<_, Failure>((plan.added, plan.skipped))
        })?
        .value;
    for line in &added {
        emit(line)?;
    }
    for line in &skipped {
        emit(&format!("skipped {line}"))?;
    }
    let what = if args.dry_run { "would add" } else { "added" };
    emit(&format!(
        "{what} {} server(s) to {}{}",
        added.len(),
        editor.path().display(),
        if added.is_empty() || args.dry_run {
            String::new()
        } else {
            "; discover their tools with `toolmux mcp refresh`".to_string()
        }
    ))?;
    Ok(OK)
}

/// What an import adds, and the report lines saying so.
struct Plan {
    entries: Vec<(String, serde_json::Value)>,
    added: Vec<String>,
    skipped: Vec<String>,
}

/// Decides, against the servers the file has, which found servers are added or replaced.
fn plan(
    existing: &serde_json::Map<String, serde_json::Value>,
    found: Vec<(ImportFormat, PathBuf, ImportedServer)>,
    force: bool,
) -> Plan {
    let mut plan = Plan {
        entries: Vec::new(),
        added: Vec::new(),
        skipped: Vec::new(),
    };
    let mut seen = std::collections::HashSet::new();
    for (format, path, server) in found {
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
fn summary(entry: &serde_json::Value) -> String {
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
