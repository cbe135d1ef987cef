//! `toolmux mcp list | show | add | remove | enable | disable | refresh | diff | trust | audit | logs |
//! login | logout`: the upstream servers
//! (the `mcpServers` section) whose tools toolmux aggregates. Edits go to the project's `.toolmux/config.json`
//! through [`toolmux_config::ConfigEditor`], keeping every other key (and every `${VAR}`
//! reference) as written.

use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::{Args, Subcommand};
use comfy_table::{ContentArrangement, Table, presets};
use serde_json::{Map, Value, json};
use toolmux_core::{Source, SourceState};
use toolmux_upstream::UpstreamSource;

use crate::assembly::Assembly;
use crate::exit::{Failure, OK, TOOL_FAILED};
use crate::output::{emit, pretty};
use crate::project::{editor, locate};

mod oauth;
mod trust;

#[derive(Debug, Subcommand)]
pub enum McpCommand {
    /// List the upstream servers: transport, status, tools, last discovery, error.
    List {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Show one upstream server: its status, and what the trust scanner found in its tools'
    /// definitions (kind, severity, where, the exact text) and what that does to each tool.
    Show {
        /// The server's name.
        name: String,
        /// Print JSON (the row `list --json` prints).
        #[arg(long)]
        json: bool,
    },
    /// Add an upstream server and discover its tools: `toolmux mcp add NAME -- COMMAND ARGS...` for a
    /// local (stdio) server, `toolmux mcp add NAME --url URL` for an HTTP one.
    Add(Box<AddArgs>),
    /// Remove an upstream server from the project configuration (and its discovery cache).
    Remove {
        /// The server's name.
        name: String,
    },
    /// Use an upstream server again.
    Enable {
        /// The server's name.
        name: String,
    },
    /// Keep an upstream server configured but unused: it is never started and its tools are hidden.
    Disable {
        /// The server's name.
        name: String,
    },
    /// Discover the tools of one upstream server, or of every enabled one.
    Refresh {
        /// The server's name; all enabled servers when left out.
        name: Option<String>,
    },
    /// Show the tools of a server that toolmux holds until a person accepts them (their
    /// definition changed since it was pinned, they appeared as another went away, or they are
    /// new on a server whose tools are pinned), and each changed field before and now.
    Diff {
        /// The server's name.
        name: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Accept held tools as the server presents them now (every held tool when none is named):
    /// they are pinned and offered again.
    Trust {
        /// The server's name.
        name: String,
        /// The server's own names of the tools to accept.
        tools: Vec<String>,
    },
    /// Every server's trust findings and held tools in one report; exits 1 when a tool is held
    /// or has a high-severity finding (for CI).
    Audit {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Sign in to an HTTP server that asks for OAuth: prints the URL to open and opens it
    /// (`TOOLMUX_BROWSER`, else `xdg-open`/`open`), waits for the browser to come back, keeps
    /// the tokens in the secret store and discovers the server's tools.
    Login {
        /// The server's name.
        name: String,
        /// How long to wait for the browser, in seconds.
        #[arg(long, default_value_t = 300, value_name = "SECONDS")]
        wait: u64,
    },
    /// Forget the tokens of a server toolmux signed in to; it needs sign-in again.
    Logout {
        /// The server's name.
        name: String,
    },
    /// Print an upstream server's log (its stderr, and when it was started).
    Logs {
        /// The server's name.
        name: String,
        /// Only the last N lines.
        #[arg(short = 'n', long, value_name = "N")]
        lines: Option<usize>,
    },
}

#[derive(Debug, Args)]
pub struct AddArgs {
    /// The server's name; its tools are named `NAME__tool`.
    pub name: String,
    /// The URL of a streamable-HTTP (or, with --sse, legacy SSE) server.
    #[arg(long, conflicts_with = "command")]
    pub url: Option<String>,
    /// The server speaks the legacy HTTP+SSE transport.
    #[arg(long, requires = "url")]
    pub sse: bool,
    /// A header for an HTTP server, `Name=Value` (keep secrets as `${VAR}`). Repeatable.
    #[arg(long = "header", value_name = "NAME=VALUE", requires = "url")]
    pub headers: Vec<String>,
    /// An environment variable for a stdio server, `NAME=VALUE` (keep secrets as `${VAR}`).
    /// Repeatable.
    #[arg(short, long = "env", value_name = "NAME=VALUE")]
    pub env: Vec<String>,
    /// The working directory of a stdio server, relative to the project directory.
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// OAuth: a client id registered with the server's authorization server beforehand.
    #[arg(long, value_name = "ID", requires = "url")]
    pub client_id: Option<String>,
    /// OAuth: the secret of --client-id, written as given (keep it as `${VAR}` or
    /// `${secret:NAME}`).
    #[arg(long, value_name = "SECRET", requires = "client_id")]
    pub client_secret: Option<String>,
    /// OAuth: the https:// URL of toolmux's Client ID Metadata Document.
    #[arg(long, value_name = "URL", requires = "url")]
    pub client_metadata_url: Option<String>,
    /// OAuth: a scope to ask for (default: those the server names). Repeatable.
    #[arg(long = "scope", value_name = "SCOPE", requires = "url")]
    pub scopes: Vec<String>,
    /// OAuth: use the client credentials grant (machine to machine; needs --client-id and
    /// --client-secret) instead of a person signing in.
    #[arg(long, requires = "client_secret")]
    pub client_credentials: bool,
    /// Replace a server of the same name.
    #[arg(long)]
    pub force: bool,
    /// Only write the configuration; do not start the server to discover its tools.
    #[arg(long)]
    pub no_discover: bool,
    /// The command and its arguments (after `--`).
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

pub async fn run(project: Option<&Path>, cmd: McpCommand) -> Result<u8, Failure> {
    match cmd {
        McpCommand::List { json } => list(project, json),
        McpCommand::Show { name, json } => show(project, &name, json),
        McpCommand::Add(args) => add(project, *args).await,
        McpCommand::Remove { name } => remove(project, &name),
        McpCommand::Enable { name } => set_enabled(project, &name, true),
        McpCommand::Disable { name } => set_enabled(project, &name, false),
        McpCommand::Refresh { name } => refresh(project, name.as_deref()).await,
        McpCommand::Diff { name, json } => trust::diff(project, &name, json),
        McpCommand::Trust { name, tools } => trust::trust(project, &name, &tools).await,
        McpCommand::Audit { json } => trust::audit(project, json),
        McpCommand::Logs { name, lines } => logs(project, &name, lines),
        McpCommand::Login { name, wait } => {
            oauth::login(project, &name, Duration::from_secs(wait)).await
        }
        McpCommand::Logout { name } => oauth::logout(project, &name).await,
    }
}

fn list(project: Option<&Path>, json: bool) -> Result<u8, Failure> {
    let project = Assembly::open(project)?;
    let rows: Vec<Value> = project
        .upstreams
        .servers()
        .iter()
        .map(|server| server_row(&project, server))
        .collect();
    if json {
        emit(&pretty(&rows)?)?;
        return Ok(OK);
    }
    if rows.is_empty() {
        emit(
            "no MCP servers configured; add one with `toolmux mcp add NAME -- COMMAND ARGS...` or `toolmux import`",
        )?;
        return Ok(OK);
    }
    let mut table = Table::new();
    table
        .load_preset(presets::NOTHING)
        .set_content_arrangement(ContentArrangement::Dynamic)
        .set_header([
            "NAME",
            "TRANSPORT",
            "STATUS",
            "TOOLS",
            "LAST DISCOVERY",
            "FINDINGS",
            "ERROR",
        ]);
    for row in &rows {
        let status = if row["enabled"] == json!(false) {
            "disabled".to_string()
        } else {
            row["status"].as_str().unwrap_or_default().to_string()
        };
        let last = row["lastDiscovery"]
            .as_str()
            .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
            .map(|t| {
                t.with_timezone(&chrono::Local)
                    .format("%Y-%m-%d %H:%M:%S")
                    .to_string()
            })
            .unwrap_or_else(|| "-".to_string());
        table.add_row([
            row["name"].as_str().unwrap_or_default().to_string(),
            row["transport"].as_str().unwrap_or_default().to_string(),
            status,
            row["tools"].to_string(),
            last,
            findings_summary(&row["findings"]),
            row["error"].as_str().unwrap_or_default().to_string(),
        ]);
    }
    emit(&table.to_string())?;
    for stale in project.hub.catalog().stale_overrides() {
        emit(&format!("stale override: {stale}"))?;
    }
    Ok(OK)
}

/// One server as `mcp list --json` and `mcp show --json` print it.
fn server_row(project: &Assembly, server: &UpstreamSource) -> Value {
    let status = server.status();
    let catalog = project.hub.catalog();
    let names = format!("{}__", server.prefix());
    let stale: Vec<String> = catalog
        .stale_overrides()
        .iter()
        .filter(|s| s.tool.starts_with(&names))
        .map(ToString::to_string)
        .collect();
    let offered = catalog
        .sources()
        .iter()
        .find(|s| s.id == server.name())
        .map_or(0, |s| s.tool_count);
    let record = server.record();
    let needs_sign_in = server.needs_sign_in();
    json!({
        "name": server.name(),
        "transport": server.server().transport.kind(),
        "enabled": server.server().enabled,
        "status": if server.unavailable().is_some() {
            "unavailable"
        } else if needs_sign_in {
            "needs-sign-in"
        } else {
            state_name(status.state)
        },
        "tools": offered,
        "discovered": record.tools.len(),
        "lastDiscovery": status.last_discovery,
        "error": status.error,
        "prefix": server.prefix(),
        // The revision agreed on with the server: 2026-07-28 is spoken statelessly
        // (`server/discover`), an earlier one after the `initialize` handshake.
        "protocolVersion": record.server_info.as_ref().map(|i| i.protocol_version.as_str()),
        "findings": project.upstreams.findings(server.name()).unwrap_or_default(),
        "held": server.held(),
        // Overrides and derived tools naming a tool of this server that it no longer offers.
        "staleOverrides": stale,
    })
}

fn show(project: Option<&Path>, name: &str, json: bool) -> Result<u8, Failure> {
    let project = Assembly::open(project)?;
    let Some(server) = project.upstreams.get(name) else {
        return Err(unknown(&project, name));
    };
    let row = server_row(&project, &server);
    if json {
        emit(&pretty(&row)?)?;
        return Ok(OK);
    }
    let mut lines = vec![format!(
        "{name} ({}): {}, {} tools offered of {} discovered, prefix `{}`",
        row["transport"].as_str().unwrap_or_default(),
        row["status"].as_str().unwrap_or_default(),
        row["tools"],
        row["discovered"],
        row["prefix"].as_str().unwrap_or_default(),
    )];
    if let Some(version) = row["protocolVersion"].as_str() {
        lines.push(format!("protocol: {version}"));
    }
    if let Some(error) = row["error"].as_str() {
        lines.push(format!("error: {error}"));
    }
    let findings = row["findings"].as_array().cloned().unwrap_or_default();
    let held = server.held();
    if findings.is_empty() && held.is_empty() {
        lines.push("trust: nothing found".to_string());
    }
    lines.extend(trust::held_lines(name, &held));
    let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
    for tool in &findings {
        let action = match tool["action"].as_str() {
            Some("warn") => "warn (offered)",
            Some("ask") => "ask (each call asks first)",
            Some("block") => "block (left out)",
            _ => "",
        };
        // A prompt's, a resource's or a template's findings say what it is; nothing is
        // called, so there is nothing to ask about: `ask` only shows them.
        match tool["item"].as_str() {
            Some(item) => {
                let action = if tool["action"] == "block" {
                    "block (left out)"
                } else {
                    "shown"
                };
                lines.push(format!("{item} {}: {action}", text(&tool["tool"])));
            }
            None => lines.push(format!("{}: {action}", text(&tool["tool"]))),
        }
        for f in tool["findings"].as_array().into_iter().flatten() {
            lines.push(format!(
                "  {} {} in {} [{}..{}]{}: {}",
                text(&f["severity"]),
                text(&f["kind"]),
                text(&f["field"]),
                f["span"]["start"],
                f["span"]["end"],
                if f["hidden"] == true {
                    " (hidden in tag characters)"
                } else {
                    ""
                },
                f["text"]
            ));
        }
    }
    emit(&lines.join("\n"))?;
    Ok(OK)
}

/// The trust scanner's findings of a server in a table cell: each tool with findings, what
/// they do to it and its most serious one (`get_time: ask, high instruction in description`).
fn findings_summary(findings: &Value) -> String {
    let Some(tools) = findings.as_array().filter(|t| !t.is_empty()) else {
        return "-".to_string();
    };
    tools
        .iter()
        .map(|tool| {
            let worst = tool["findings"].as_array().and_then(|found| {
                ["high", "medium", "low"]
                    .iter()
                    .find_map(|s| found.iter().find(|f| f["severity"] == *s))
            });
            let what = worst.map_or_else(String::new, |f| {
                format!(
                    ", {} {} in {}",
                    f["severity"].as_str().unwrap_or_default(),
                    f["kind"].as_str().unwrap_or_default(),
                    f["field"].as_str().unwrap_or_default()
                )
            });
            format!(
                "{}: {}{what}",
                tool["tool"].as_str().unwrap_or_default(),
                tool["action"].as_str().unwrap_or_default()
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

fn state_name(state: SourceState) -> &'static str {
    match state {
        SourceState::Never => "never",
        SourceState::Discovering => "discovering",
        SourceState::Success => "success",
        SourceState::Failed => "failed",
    }
}

async fn add(project: Option<&Path>, args: AddArgs) -> Result<u8, Failure> {
    let dir = locate(project)?;
    let mut entry = Map::new();
    match (&args.url, args.command.split_first()) {
        (Some(url), None) => {
            if args.sse {
                entry.insert("type".into(), json!("sse"));
            }
            entry.insert("url".into(), json!(url));
            if !args.headers.is_empty() {
                entry.insert("headers".into(), pairs("--header", &args.headers)?);
            }
            if let Some(oauth) = oauth::settings_from(&args) {
                entry.insert("oauth".into(), oauth);
            }
            if !args.env.is_empty() || args.cwd.is_some() {
                return Err(Failure::Usage(
                    "--env and --cwd are for stdio servers (a command after `--`), not for --url"
                        .to_string(),
                ));
            }
        }
        (None, Some((command, rest))) => {
            entry.insert("command".into(), json!(command));
            if !rest.is_empty() {
                entry.insert("args".into(), json!(rest));
            }
            if !args.env.is_empty() {
                entry.insert("env".into(), pairs("--env", &args.env)?);
            }
            if let Some(cwd) = &args.cwd {
                entry.insert("cwd".into(), json!(cwd));
            }
        }
        (Some(_), Some(_)) => {
            return Err(Failure::Usage(
                "give either --url or a command after `--`, not both".to_string(),
            ));
        }
        (None, None) => {
            return Err(Failure::Usage(
                "give the server's command after `--` (`toolmux mcp add NAME -- npx -y PACKAGE`) \
                 or its --url"
                    .to_string(),
            ));
        }
    }
    let editor = editor(&dir);
    editor.edit(|doc| {
        let servers = doc.section_mut(SERVERS)?;
        if servers.contains_key(&args.name) && !args.force {
            return Err(Failure::Usage(format!(
                "a server named `{}` already exists in {}; use --force to replace it",
                args.name,
                editor.path().display()
            )));
        }
        servers.insert(args.name.clone(), Value::Object(entry));
        Ok(())
    })?;
    emit(&format!(
        "added MCP server `{}` to {}",
        args.name,
        editor.path().display()
    ))?;
    if args.no_discover {
        return Ok(OK);
    }
    let project = Assembly::open(Some(&dir))?;
    let Some(server) = project.upstreams.get(&args.name) else {
        return Ok(OK);
    };
    let code = discover_all(&[server]).await;
    project.upstreams.shutdown().await;
    Ok(code)
}

/// The `mcpServers` section of the config file.
const SERVERS: &str = "mcpServers";

/// `NAME=VALUE` pairs as a JSON object.
fn pairs(flag: &str, items: &[String]) -> Result<Value, Failure> {
    let mut map = Map::new();
    for item in items {
        let Some((name, value)) = item.split_once('=') else {
            return Err(Failure::Usage(format!(
                "{flag} expects NAME=VALUE, got `{item}`"
            )));
        };
        if name.is_empty() {
            return Err(Failure::Usage(format!("{flag} `{item}` has an empty name")));
        }
        map.insert(name.to_string(), json!(value));
    }
    Ok(Value::Object(map))
}

fn remove(project: Option<&Path>, name: &str) -> Result<u8, Failure> {
    let dir = locate(project)?;
    let editor = editor(&dir);
    editor.edit(|doc| match doc.section_mut(SERVERS)?.remove(name) {
        Some(_) => Ok(()),
        None => Err(missing(doc, name)),
    })?;
    let paths = toolmux_upstream::ServerPaths::new(&toolmux_upstream::state_dir(&dir), name);
    if let Err(e) = paths.forget() {
        // Removed from the configuration all the same; stale state only misleads `mcp show`.
        tracing::warn!(server = name, error = %e, "cannot remove its cache and pins");
    }
    emit(&format!(
        "removed MCP server `{name}` from {}",
        editor.path().display()
    ))?;
    Ok(OK)
}

fn set_enabled(project: Option<&Path>, name: &str, enabled: bool) -> Result<u8, Failure> {
    let dir = locate(project)?;
    editor(&dir).edit(|doc| {
        let Some(Value::Object(entry)) = doc.section_mut(SERVERS)?.get_mut(name) else {
            return Err(missing(doc, name));
        };
        if enabled {
            entry.remove("enabled");
        } else {
            entry.insert("enabled".into(), json!(false));
        }
        Ok(())
    })?;
    let word = if enabled { "enabled" } else { "disabled" };
    emit(&format!("{word} MCP server `{name}`"))?;
    Ok(OK)
}

async fn refresh(project: Option<&Path>, name: Option<&str>) -> Result<u8, Failure> {
    let project = Assembly::open(project)?;
    let servers: Vec<UpstreamSource> = match name {
        Some(name) => match project.upstreams.get(name) {
            Some(server) if server.server().enabled => vec![server],
            Some(_) => {
                return Err(Failure::Usage(format!(
                    "MCP server `{name}` is disabled; enable it with `toolmux mcp enable {name}`"
                )));
            }
            None => return Err(unknown(&project, name)),
        },
        None => project
            .upstreams
            .servers()
            .into_iter()
            .filter(|s| s.server().enabled)
            .collect(),
    };
    if servers.is_empty() {
        emit("no enabled MCP servers to refresh")?;
        return Ok(OK);
    }
    let code = discover_all(&servers).await;
    project.upstreams.shutdown().await;
    Ok(code)
}

/// Discovers several servers at once, with a progress bar when there is more than one, and
/// prints one line per server.
pub(super) async fn discover_all(servers: &[UpstreamSource]) -> u8 {
    let bar = (servers.len() > 1).then(|| {
        let bar = indicatif::ProgressBar::new(servers.len() as u64);
        if let Ok(style) =
            indicatif::ProgressStyle::with_template("{spinner} [{bar:30}] {pos}/{len} {msg}")
        {
            bar.set_style(style.progress_chars("=> "));
        }
        bar.enable_steady_tick(Duration::from_millis(120));
        bar.set_message("discovering tools");
        bar
    });
    let mut runs = tokio::task::JoinSet::new();
    for (index, server) in servers.iter().enumerate() {
        let server = server.clone();
        runs.spawn(async move { (index, server.discover().await) });
    }
    let mut results: Vec<Option<Result<_, _>>> = servers.iter().map(|_| None).collect();
    while let Some(joined) = runs.join_next().await {
        let Ok((index, outcome)) = joined else {
            continue;
        };
        if let Some(bar) = &bar {
            bar.inc(1);
            bar.set_message(format!("`{}` done", servers[index].name()));
        }
        results[index] = Some(outcome);
    }
    let results = servers.iter().zip(results).map(|(server, outcome)| {
        let outcome = outcome.unwrap_or_else(|| {
            Err(toolmux_upstream::UpstreamError::Protocol {
                server: server.name().to_string(),
                message: "discovery stopped unexpectedly".to_string(),
            })
        });
        (server.name().to_string(), outcome)
    });
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    let mut code = OK;
    for (name, outcome) in results {
        let line = match outcome {
            Ok(found) if found.held > 0 => format!(
                "{name}: {} tools, {} held until accepted (`toolmux mcp diff {name}`)",
                found.listed, found.held
            ),
            Ok(found) if found.offered == found.listed => {
                format!("{name}: {} tools", found.listed)
            }
            Ok(found) => format!(
                "{name}: {} tools ({} listed, the others filtered by enabledTools/disabledTools)",
                found.offered, found.listed
            ),
            // Not a failure of `add` or `refresh`: the server is there, waiting for a person.
            Err(toolmux_upstream::UpstreamError::NeedsSignIn { .. }) => {
                format!("{name}: needs sign-in: run `toolmux mcp login {name}`")
            }
            Err(e) => {
                code = TOOL_FAILED;
                format!("{name}: discovery failed: {e}")
            }
        };
        if emit(&line).is_err() {
            break;
        }
    }
    code
}

fn logs(project: Option<&Path>, name: &str, lines: Option<usize>) -> Result<u8, Failure> {
    let project = Assembly::open(project)?;
    let Some(server) = project.upstreams.get(name) else {
        return Err(unknown(&project, name));
    };
    let path = server.log_path();
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            eprintln!(
                "toolmux: MCP server `{name}` has no log yet ({} appears when it first starts)",
                path.display()
            );
            return Ok(OK);
        }
        Err(e) => {
            return Err(anyhow::Error::new(e)
                .context(format!("cannot read `{}`", path.display()))
                .into());
        }
    };
    let all: Vec<&str> = text.lines().collect();
    let start = lines.map_or(0, |n| all.len().saturating_sub(n));
    emit(&all[start..].join("\n"))?;
    Ok(OK)
}

pub(super) fn unknown(project: &Assembly, name: &str) -> Failure {
    let servers = project.upstreams.servers();
    let known: Vec<&str> = servers.iter().map(|s| s.name()).collect();
    if known.is_empty() {
        Failure::Usage(format!(
            "there is no MCP server `{name}`; none is configured"
        ))
    } else {
        Failure::Usage(format!(
            "there is no MCP server `{name}`; the servers are: {}",
            known.join(", ")
        ))
    }
}

/// A server the project's config file does not have, naming the ones it does.
fn missing(doc: &toolmux_config::ConfigDocument, name: &str) -> Failure {
    let known: Vec<String> = doc
        .section(SERVERS)
        .ok()
        .flatten()
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default();
    Failure::Usage(format!(
        "there is no MCP server `{name}` in {}{}",
        doc.path().display(),
        if known.is_empty() {
            String::new()
        } else {
            format!("; the servers there are: {}", known.join(", "))
        }
    ))
}
