//! `toolmux tools list | show | call | add | remove`.

use std::path::Path;
use std::sync::Arc;

use comfy_table::{ContentArrangement, Table, presets};
use serde_json::{Map, Value};
use toolmux_core::{CallContext, Channel, HiddenReason, Policy, ToolEntry};

use crate::assembly::Assembly;
use crate::cli::{AddToolArgs, CallArgs, ToolsCommand};
use crate::cli_call;
use crate::exit::{Failure, OK};
use crate::output::{emit, pretty};
use crate::project::{editor, locate};

pub async fn run(project: Option<&Path>, cmd: ToolsCommand) -> Result<u8, Failure> {
    // Editing the configuration does not need the hub (and must work while it would not load
    // the tool being replaced).
    let cmd = match cmd {
        ToolsCommand::Add(args) => return add(project, args),
        ToolsCommand::Remove { name } => return remove(project, &name),
        cmd => cmd,
    };
    let project = Assembly::open(project)?;
    if matches!(cmd, ToolsCommand::Call(_)) {
        discover_private_lists(&project).await;
    }
    match cmd {
        ToolsCommand::List {
            source,
            all,
            disabled,
            json,
        } => list(&project, source.as_deref(), all, disabled, json),
        ToolsCommand::Show { name, json } => show(&project, &name, json),
        ToolsCommand::Call(args) => call(&project, args).await,
        ToolsCommand::Enable { name } => set_state(&project, &name, StateChange::Enabled(true)),
        ToolsCommand::Disable { name } => set_state(&project, &name, StateChange::Enabled(false)),
        ToolsCommand::Policy { name, policy } => {
            let policy = match policy.as_str() {
                "allow" => Some(Policy::Allow),
                "ask" => Some(Policy::Ask),
                "deny" => Some(Policy::Deny),
                _ => None,
            };
            set_state(&project, &name, StateChange::Policy(policy))
        }
        ToolsCommand::Add(_) | ToolsCommand::Remove { .. } => Ok(OK),
    }
}

/// Discovers the servers whose lists only a process that listed them knows (they marked them
/// `cacheScope: private`, so the cache file does not hold them), so that a call finds their
/// tools. Only for a call, which starts servers anyway: listing never does, so their tools
/// are listed only by a process that discovered them (`toolmux serve`). A failure leaves them
/// out, as a failed discovery does, and is logged.
async fn discover_private_lists(project: &Assembly) {
    let servers = project.upstreams.servers();
    for server in servers.iter().filter(|s| s.lists_kept_private()) {
        if let Err(e) = server.discover().await {
            tracing::warn!(server = %server.name(), error = %e, "cannot discover a server whose lists are private");
        }
    }
}

/// What `enable`, `disable` and `policy` change.
enum StateChange {
    Enabled(bool),
    Policy(Option<Policy>),
}

/// `toolmux tools enable | disable | policy`: one tool's settings, written through the one
/// config editor. The tool must be one the catalog knows (listed or switched off), so a typo
/// is not saved as a setting for a tool that does not exist.
fn set_state(project: &Assembly, name: &str, change: StateChange) -> Result<u8, Failure> {
    let catalog = project.hub.catalog();
    catalog.known(name)?;
    let editor = editor(&project.loaded.project_dir);
    editor.edit(|doc| match change {
        StateChange::Enabled(on) => doc.set_tool_enabled(name, on),
        StateChange::Policy(policy) => doc.set_tool_policy(name, policy),
    })?;
    let file = editor.path();
    let done = match change {
        StateChange::Enabled(true) => format!("enabled `{name}` in {}", file.display()),
        StateChange::Enabled(false) => format!("disabled `{name}` in {}", file.display()),
        StateChange::Policy(Some(policy)) => {
            format!(
                "set the policy of `{name}` to {policy} in {}",
                file.display()
            )
        }
        StateChange::Policy(None) => format!(
            "removed the policy of `{name}` from {}; its other rules decide",
            file.display()
        ),
    };
    emit(&done)?;
    // Switching a tool on does not bring back one that something else hides.
    if matches!(change, StateChange::Enabled(true)) {
        let still = catalog
            .hidden_reason(name)
            .filter(|reason| **reason != HiddenReason::DisabledTool);
        if let Some(why) = still {
            eprintln!("note: `{name}` stays hidden: {why}");
        }
    }
    Ok(OK)
}

/// The `tools` section of the config file.
const TOOLS: &str = "tools";

/// `toolmux tools add`: the definition from `--file` and the options, written through the one
/// config editor (checked as a whole file first, so a bad definition leaves the file as it was).
fn add(project: Option<&Path>, args: AddToolArgs) -> Result<u8, Failure> {
    let dir = locate(project)?;
    toolmux_config::ToolName::new(&args.name)
        .map_err(|e| Failure::Config(format!("tool `{}`: {e}", args.name)))?;
    let definition = definition(&args)?;
    // A script tool may not take the name of another source's tool (a built-in one, say): the
    // same check the REST API makes.
    if let Ok(project) = Assembly::open(Some(&dir))
        && let Some(entry) = project.hub.catalog().get(&args.name)
        && entry.descriptor.source != toolmux_config::SCRIPT_SOURCE_ID
    {
        return Err(Failure::Usage(format!(
            "the name `{}` is taken by a tool of source `{}`",
            args.name, entry.descriptor.source
        )));
    }
    let editor = editor(&dir);
    let replaced = editor
        .edit(|doc| {
            let tools = doc.section_mut(TOOLS)?;
            let exists = tools.contains_key(&args.name);
            if exists && !args.force {
                return Err(Failure::Usage(format!(
                    "a script tool named `{}` already exists; use --force to replace it",
                    args.name
                )));
            }
            tools.insert(args.name.clone(), Value::Object(definition));
            Ok(exists)
        })?
        .value;
    let verb = if replaced { "replaced" } else { "added" };
    emit(&format!(
        "{verb} script tool `{}` in {}",
        args.name,
        editor.path().display()
    ))?;
    Ok(OK)
}

/// The definition object: `--file`, then each option given over it.
fn definition(args: &AddToolArgs) -> Result<Map<String, Value>, Failure> {
    let mut definition = match &args.file {
        None => Map::new(),
        Some(path) => {
            let text = std::fs::read_to_string(path).map_err(|e| {
                Failure::Usage(format!("--file {}: cannot read it: {e}", path.display()))
            })?;
            match serde_json::from_str(&text) {
                Ok(Value::Object(map)) => map,
                Ok(_) => {
                    return Err(Failure::Config(format!(
                        "--file {}: the definition must be a JSON object",
                        path.display()
                    )));
                }
                Err(e) => {
                    return Err(Failure::Config(format!(
                        "--file {}: not valid JSON: {e}",
                        path.display()
                    )));
                }
            }
        }
    };
    // The name is the positional argument; a `name` in the file (as `POST /api/tools` takes
    // it) must agree.
    match definition.remove("name") {
        Some(Value::String(n)) if n != args.name => {
            return Err(Failure::Usage(format!(
                "the file names the tool `{n}`, the command line `{}`",
                args.name
            )));
        }
        _ => {}
    }
    if let Some(description) = &args.description {
        definition.insert("description".into(), Value::from(description.as_str()));
    }
    if let Some(schema) = &args.input_schema {
        definition.insert("inputSchema".into(), json_arg("--input-schema", schema)?);
    }
    if let Some(schema) = &args.output_schema {
        definition.insert("outputSchema".into(), json_arg("--output-schema", schema)?);
    }
    if !args.command.is_empty() {
        definition.insert("command".into(), Value::from(args.command.clone()));
    }
    if let Some(cwd) = &args.cwd {
        definition.insert("cwd".into(), Value::from(cwd.display().to_string()));
    }
    if !args.env.is_empty() {
        let mut env = match definition.remove("env") {
            Some(Value::Object(env)) => env,
            _ => Map::new(),
        };
        for pair in &args.env {
            let Some((name, value)) = pair.split_once('=').filter(|(n, _)| !n.is_empty()) else {
                return Err(Failure::Usage(format!(
                    "--env expects NAME=VALUE, got `{pair}`"
                )));
            };
            env.insert(name.to_string(), Value::from(value));
        }
        definition.insert("env".into(), Value::Object(env));
    }
    if let Some(ms) = args.timeout_ms {
        definition.insert("timeoutMs".into(), Value::from(ms));
    }
    if let Some(policy) = &args.policy {
        definition.insert("policy".into(), Value::from(policy.as_str()));
    }
    if args.parallel {
        definition.insert("parallel".into(), Value::Bool(true));
    }
    Ok(definition)
}

/// A JSON value given inline (`{...}`) or as a file.
fn json_arg(flag: &str, given: &str) -> Result<Value, Failure> {
    let text = if given.trim_start().starts_with('{') {
        given.to_string()
    } else {
        std::fs::read_to_string(given)
            .map_err(|e| Failure::Usage(format!("{flag} {given}: cannot read it: {e}")))?
    };
    serde_json::from_str(&text).map_err(|e| Failure::Config(format!("{flag}: not valid JSON: {e}")))
}

/// `toolmux tools remove`.
fn remove(project: Option<&Path>, name: &str) -> Result<u8, Failure> {
    let dir = locate(project)?;
    let editor = editor(&dir);
    editor.edit(|doc| {
        if doc.section_mut(TOOLS)?.remove(name).is_some() {
            return Ok(());
        }
        let known: Vec<String> = doc
            .section(TOOLS)?
            .map(|t| t.keys().cloned().collect())
            .unwrap_or_default();
        Err(Failure::Usage(format!(
            "there is no script tool `{name}` in {}{}",
            doc.path().display(),
            if known.is_empty() {
                String::new()
            } else {
                format!("; the script tools there are: {}", known.join(", "))
            }
        )))
    })?;
    emit(&format!(
        "removed script tool `{name}` from {}",
        editor.path().display()
    ))?;
    Ok(OK)
}

/// `toolmux tools list`: the catalog, and with `--disabled` the tools switched off after it,
/// each as `GET /api/tools` shows it (`toolmux_core::ToolView`).
fn list(
    project: &Assembly,
    source: Option<&str>,
    all: bool,
    disabled: bool,
    json: bool,
) -> Result<u8, Failure> {
    let catalog = project.hub.catalog();
    let switched_off: &[Arc<ToolEntry>] = if disabled {
        catalog.switched_off()
    } else {
        &[]
    };
    let tools: Vec<(&Arc<ToolEntry>, bool)> = catalog
        .all_tools()
        .map(|e| (e, true))
        .chain(switched_off.iter().map(|e| (e, false)))
        .filter(|(e, _)| all || !e.descriptor.internal)
        .filter(|(e, _)| source.is_none_or(|s| e.descriptor.source == s))
        .collect();
    if json {
        let listed: Vec<toolmux_core::ToolView> = tools
            .iter()
            .map(|(e, enabled)| catalog.tool_view(e, *enabled))
            .collect();
        emit(&pretty(&listed)?)?;
        return Ok(OK);
    }
    let mut table = Table::new();
    table
        .load_preset(presets::NOTHING)
        .set_content_arrangement(ContentArrangement::Dynamic)
        .set_header(["NAME", "SOURCE", "POLICY", "DESCRIPTION"]);
    for (entry, enabled) in &tools {
        // A switched-off tool runs under no policy: `off` says why it is not offered.
        let policy = if *enabled {
            entry.policy.to_string()
        } else {
            "off".to_string()
        };
        table.add_row([
            entry.descriptor.name.as_str(),
            entry.descriptor.source.as_str(),
            &policy,
            &summary(&entry.descriptor.description),
        ]);
    }
    emit(&table.to_string())?;
    Ok(OK)
}

/// The first sentence or line of a description, at most 80 characters.
fn summary(description: &str) -> String {
    let line = description.lines().next().unwrap_or_default().trim();
    if line.chars().count() <= 80 {
        return line.to_string();
    }
    let cut: String = line.chars().take(79).collect();
    format!("{cut}…")
}

fn show(project: &Assembly, name: &str, json: bool) -> Result<u8, Failure> {
    let catalog = project.hub.catalog();
    // The host's own view: internal tools are shown, everything else as a call would see it.
    let entry = catalog
        .resolve(name, &CallContext::new(Channel::Cli).trusted())
        .map_err(|e| Failure::Refused(e.to_string()))?;
    if json {
        emit(&pretty(entry)?)?;
        return Ok(OK);
    }
    let d = &entry.descriptor;
    let mut out = vec![format!("{}  ({})", d.name, d.source)];
    if d.original_name != d.name {
        out.push(format!("original name: {}", d.original_name));
    }
    if let Some(title) = &d.title {
        out.push(format!("title: {title}"));
    }
    out.push(format!(
        "policy: {} ({})",
        entry.policy, entry.policy_origin
    ));
    out.push(format!("timeout: {}ms", entry.timeout.as_millis()));
    if let Some(limit) = &entry.rate_limit {
        out.push(format!(
            "rate limit: {} per {}ms",
            limit.requests,
            limit.period.as_millis()
        ));
    }
    let mut flags = Vec::new();
    if d.internal {
        flags.push("internal");
    }
    if d.parallel {
        flags.push("parallel");
    }
    let hints = [
        (d.annotations.read_only_hint, "read-only"),
        (d.annotations.destructive_hint, "destructive"),
        (d.annotations.idempotent_hint, "idempotent"),
        (d.annotations.open_world_hint, "open-world"),
    ];
    flags.extend(
        hints
            .iter()
            .filter(|(h, _)| *h == Some(true))
            .map(|(_, n)| *n),
    );
    if !flags.is_empty() {
        out.push(format!("flags: {}", flags.join(", ")));
    }
    out.push(String::new());
    out.push(d.description.clone());
    out.push(String::new());
    out.push(format!("input schema:\n{}", pretty(&d.input_schema)?));
    if let Some(schema) = &d.output_schema {
        out.push(format!("output schema:\n{}", pretty(schema)?));
    }
    emit(&out.join("\n"))?;
    Ok(OK)
}

async fn call(project: &Assembly, args: CallArgs) -> Result<u8, Failure> {
    // A session the call starts would end with this process: a running `serve` takes it.
    project.hand_sessions_to_serve();
    let arguments = parse_arguments(&args)?;
    let result = cli_call::call(project, &args.name, arguments).await?;
    // The result (a session's id) is printed first; a session the call started runs to its
    // end before this process exits, which would kill it.
    let shown = show_result(&result, args.json);
    project.finish_sessions().await;
    shown?;
    Ok(if result.is_error {
        Failure::from_tool_error(&result).code()
    } else {
        OK
    })
}

/// Prints a call's result: JSON with `--json`, else its text (or structured content).
fn show_result(result: &toolmux_core::ToolResult, json: bool) -> Result<(), Failure> {
    if json {
        emit(&pretty(&result)?)?;
    } else if result.is_error {
        eprintln!("{}", result.text_content());
    } else {
        let text = result.text_content();
        match (&result.structured_content, text.is_empty()) {
            (Some(structured), true) => emit(&pretty(structured)?)?,
            _ => emit(&text)?,
        }
    }
    Ok(())
}

/// Builds the arguments object from `--args` and `-a key=value` pairs.
fn parse_arguments(args: &CallArgs) -> Result<Value, Failure> {
    let mut object = match &args.args {
        None => Map::new(),
        Some(text) => match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(map)) => map,
            Ok(_) => return Err(Failure::Usage("--args must be a JSON object".to_string())),
            Err(e) => return Err(Failure::Usage(format!("--args is not valid JSON: {e}"))),
        },
    };
    for pair in &args.pairs {
        let Some((key, raw)) = pair.split_once('=') else {
            return Err(Failure::Usage(format!(
                "-a expects key=value, got `{pair}`"
            )));
        };
        if key.is_empty() {
            return Err(Failure::Usage(format!("-a `{pair}` has an empty key")));
        }
        let value = serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.to_string()));
        object.insert(key.to_string(), value);
    }
    Ok(Value::Object(object))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn args(json: Option<&str>, pairs: &[&str]) -> CallArgs {
        CallArgs {
            name: "t".into(),
            args: json.map(String::from),
            pairs: pairs.iter().map(|p| p.to_string()).collect(),
            json: false,
        }
    }

    #[test]
    fn pairs_are_read_as_json_when_they_parse_and_as_strings_otherwise() {
        let value = parse_arguments(&args(
            Some(r#"{"a": 1}"#),
            &[
                "n=5",
                "flag=true",
                "s=hello world",
                "list=[1,2]",
                "quoted=\"7\"",
            ],
        ))
        .expect("parses");
        assert_eq!(
            value,
            json!({"a": 1, "n": 5, "flag": true, "s": "hello world", "list": [1, 2], "quoted": "7"})
        );
    }

    #[test]
    fn bad_pairs_and_json_are_usage_errors() {
        for (json, pairs, message) in [
            (Some("[1]"), vec![], "--args must be a JSON object"),
            (
                Some("{"),
                vec![],
                "--args is not valid JSON: EOF while parsing an object at line 1 column 1",
            ),
            (None, vec!["novalue"], "-a expects key=value, got `novalue`"),
            (None, vec!["=x"], "-a `=x` has an empty key"),
        ] {
            let Err(Failure::Usage(m)) = parse_arguments(&args(json, &pairs)) else {
                panic!("expected a usage error");
            };
            assert_eq!(m, message);
        }
    }
}
