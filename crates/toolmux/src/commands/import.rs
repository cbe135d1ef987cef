//! `toolmux import`: copy the upstream servers another client already has (Claude Code's
//! `.mcp.json` and `~/.claude.json`, Cursor's `.cursor/mcp.json`, VS Code's `.vscode/mcp.json`,
//! Codex's `$CODEX_HOME/config.toml`), and with `--registry` the script tools and servers of seed 004's
//! `tools.json` / `mcp.json`, into the project's `.toolmux/config.json`, saying what was added
//! and never replacing a server or tool of the same name without `--force`. The translation and the plan
//! are `toolmux_config`'s ([`read_import`], [`plan_import`]); this module picks the files from
//! the flags, writes the plan through the one config editor and reports it.

use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};
use serde_json::Value;
use toolmux_config::{FoundServer, ImportFormat, plan_import, read_import, read_registry_import};

use crate::assembly::Assembly;
use crate::commands::upstream::discover_all;
use crate::exit::{Failure, OK};
use crate::output::emit;
use crate::project::{editor, locate};

#[derive(Debug, Args)]
pub struct ImportArgs {
    /// Import only from this client (default: every one whose file exists).
    #[arg(long, value_enum)]
    pub from: Option<Client>,
    /// Read this file instead of the client's usual one (needs --from).
    #[arg(long, value_name = "FILE", requires = "from")]
    pub file: Option<PathBuf>,
    /// Import seed 004's registry FILE (a `tools.json` of script tools or an `mcp.json` of
    /// servers) instead of another client's servers; may be repeated.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["from", "file"])]
    pub registry: Vec<PathBuf>,
    /// Replace upstream servers (and script tools) that toolmux already has under the same name.
    #[arg(long)]
    pub force: bool,
    /// Show what would be added without writing anything.
    #[arg(long)]
    pub dry_run: bool,
}

/// The clients toolmux imports from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Client {
    /// `.mcp.json` and `~/.claude.json` (the user scope and this project's local scope)
    Claude,
    /// `.cursor/mcp.json`
    Cursor,
    /// `.vscode/mcp.json`
    Vscode,
    /// `$CODEX_HOME/config.toml` (`~/.codex/config.toml` by default)
    Codex,
}

impl Client {
    /// The client's formats: the first is how a `--file` is read.
    fn formats(self) -> &'static [ImportFormat] {
        match self {
            Client::Claude => &[ImportFormat::ClaudeCode, ImportFormat::ClaudeCodeUser],
            Client::Cursor => &[ImportFormat::Cursor],
            Client::Vscode => &[ImportFormat::VsCode],
            Client::Codex => &[ImportFormat::Codex],
        }
    }
}

pub async fn run(project: Option<&Path>, args: ImportArgs) -> Result<u8, Failure> {
    let dir = locate(project)?;
    if !args.registry.is_empty() {
        return import_registries(&dir, &args);
    }
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let sources: Vec<(ImportFormat, PathBuf)> = match (args.from, &args.file) {
        (Some(client), Some(file)) => vec![(client.formats()[0], file.clone())],
        (Some(client), None) => {
            let mut sources = Vec::new();
            let mut missing = Vec::new();
            for &format in client.formats() {
                let path = format.default_path(&dir, home.as_deref()).ok_or_else(|| {
                    Failure::Usage(format!(
                        "cannot find {format}'s file: there is no home directory"
                    ))
                })?;
                if path.exists() {
                    sources.push((format, path));
                } else {
                    missing.push(format!("`{}`", path.display()));
                }
            }
            if sources.is_empty() {
                return Err(Failure::Usage(format!(
                    "{}'s file {} does not exist; give another with --file",
                    client.formats()[0],
                    missing.join(" or ")
                )));
            }
            sources
        }
        (None, _) => ImportFormat::ALL
            .iter()
            .filter_map(|&f| f.default_path(&dir, home.as_deref()).map(|p| (f, p)))
            .filter(|(_, p)| p.exists())
            .collect(),
    };
    if sources.is_empty() {
        emit(
            "nothing to import: found no .mcp.json, ~/.claude.json, .cursor/mcp.json, .vscode/mcp.json or $CODEX_HOME/config.toml",
        )?;
        return Ok(OK);
    }

    let mut found: Vec<FoundServer> = Vec::new();
    for (format, path) in sources {
        let servers =
            read_import(format, &path, &dir).map_err(|e| Failure::Usage(e.to_string()))?;
        found.extend(servers.into_iter().map(|server| FoundServer {
            format,
            path: path.clone(),
            server,
        }));
    }

    let editor = editor(&dir);
    // One edit under the config file's lock: the names already there are read in the same
    // step as the new ones are written, so a server added meanwhile is never replaced unasked.
    // A dry run plans the same way and writes nothing (an edit that changes nothing).
    let (added, skipped, remote) = editor
        .edit(|doc| {
            let existing = doc.section("mcpServers")?.cloned().unwrap_or_default();
            let plan = plan_import(&existing, found, args.force);
            let remote: Vec<String> = plan
                .entries
                .iter()
                .filter(|(_, entry)| entry.get("url").is_some())
                .map(|(name, _)| name.clone())
                .collect();
            if !args.dry_run && !plan.entries.is_empty() {
                doc.section_mut("mcpServers")?.extend(plan.entries);
            }
            Ok::<_, Failure>((plan.added, plan.skipped, remote))
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
        if added.len() == remote.len() || args.dry_run {
            String::new()
        } else {
            "; the others' tools are discovered on first use or by `toolmux mcp refresh`"
                .to_string()
        }
    ))?;
    if args.dry_run || remote.is_empty() {
        return Ok(OK);
    }
    // Servers reached over HTTP are asked for their tools at once: it starts nothing on this
    // machine, and one that wants a sign-in then says so (`needs-sign-in`, with the command to
    // run) instead of reading `never` until its first call. Local commands are not started here.
    let project = Assembly::open(Some(&dir))?;
    let servers: Vec<_> = remote
        .iter()
        .filter_map(|name| project.upstreams.get(name))
        .filter(|server| server.server().enabled)
        .collect();
    // The exit status is the import's: each server's check is printed on its own line (its
    // tools, `needs sign-in`, or why it could not be reached), and a server that cannot be
    // reached now is still imported, as asked.
    discover_all(&servers).await;
    project.upstreams.shutdown().await;
    Ok(OK)
}

/// `toolmux import --registry FILE...`: seed 004's registries, read as the configuration's
/// `registries` reads them; their servers join `mcpServers` and their script tools `tools`, an
/// entry of a name the file already has replaced only with `--force`, all in one edit.
fn import_registries(dir: &Path, args: &ImportArgs) -> Result<u8, Failure> {
    // (section, what it is called in the report, name, entry, registry)
    let mut found: Vec<(&str, &str, String, Value, PathBuf)> = Vec::new();
    for path in &args.registry {
        let path = std::path::absolute(path).unwrap_or_else(|_| path.clone());
        let read = read_registry_import(&path, dir).map_err(|e| Failure::Config(e.to_string()))?;
        for server in read.servers {
            found.push((
                "mcpServers",
                "MCP server",
                server.name,
                server.entry,
                path.clone(),
            ));
        }
        for (name, tool) in read.tools {
            found.push(("tools", "script tool", name, tool, path.clone()));
        }
    }
    let editor = editor(dir);
    let (added, skipped) = editor
        .edit(|doc| {
            let (mut added, mut skipped) = (Vec::new(), Vec::new());
            for (section, what, name, entry, path) in found {
                let exists = doc.section(section)?.is_some_and(|s| s.contains_key(&name));
                if exists && !args.force {
                    skipped.push(format!(
                        "{what} {name}: toolmux already has one of that name; use --force to replace it"
                    ));
                    continue;
                }
                let verb = if exists { "replaced" } else { "added" };
                added.push(format!("{verb} {what} {name} from {}", path.display()));
                if !args.dry_run {
                    doc.section_mut(section)?.insert(name, entry);
                }
            }
            Ok::<_, Failure>((added, skipped))
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
        "{what} {} entr{} to {}",
        added.len(),
        if added.len() == 1 { "y" } else { "ies" },
        editor.path().display()
    ))?;
    Ok(OK)
}
