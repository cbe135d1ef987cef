//! `toolmux keys create | list | revoke`: the keys of configured principals. A key is printed
//! once, when it is made; the project's configuration keeps only its SHA-256, in
//! `principals.<name>.keys`, written by the one configuration editor (under its lock, checked,
//! atomically). The configuration rather than a state file because a running `toolmux serve`
//! already reloads it and puts a changed key list in force before the next request: a revoked
//! key stops working at once. A hash is no secret, so the file may be shared as before.

use std::path::Path;

use clap::{Args, Subcommand};
use serde_json::{Value, json};

use crate::exit::{Failure, OK};
use crate::output::{emit, pretty};
use crate::project::{editor, locate};

/// The configuration's section of principals.
const PRINCIPALS: &str = "principals";

/// `toolmux keys`.
#[derive(Debug, Args)]
pub struct KeysArgs {
    /// Print JSON.
    #[arg(long, global = true)]
    pub json: bool,
    #[command(subcommand)]
    pub command: KeysCommand,
}

#[derive(Debug, Subcommand)]
pub enum KeysCommand {
    /// Make a key for a configured principal and print it (once: only its hash is kept).
    Create {
        /// The principal (`principals.<name>` in the configuration).
        #[arg(long)]
        principal: String,
    },
    /// The principals' keys: principal, id and when each was made (never a key).
    List,
    /// Remove a key by its id (as `keys list` shows it); a running server refuses it from
    /// its next request on.
    Revoke {
        /// The key's id.
        id: String,
    },
}

pub fn run(project: Option<&Path>, args: KeysArgs) -> Result<u8, Failure> {
    let dir = locate(project)?;
    let editor = editor(&dir);
    match args.command {
        KeysCommand::Create { principal } => {
            let created = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
            let (key, stored) = toolmux_config::new_key(created)
                .map_err(|e| Failure::Runtime(anyhow::anyhow!("cannot draw a key: {e}")))?;
            let entry = serde_json::to_value(&stored).map_err(anyhow::Error::from)?;
            editor.edit(|doc| {
                let path = doc.path().display().to_string();
                let principals = doc.section_mut(PRINCIPALS)?;
                let Some(Value::Object(settings)) = principals.get_mut(&principal) else {
                    let known: Vec<&String> = principals.keys().collect();
                    return Err(unknown_principal(&principal, &path, &known));
                };
                match settings.entry("keys").or_insert_with(|| json!([])) {
                    Value::Array(keys) => keys.push(entry),
                    _ => {
                        return Err(Failure::Config(format!(
                            "`principals.{principal}.keys` in {path} is not a list"
                        )));
                    }
                }
                Ok(())
            })?;
            if args.json {
                let shown = json!({"principal": principal, "id": stored.id, "key": key});
                emit(&pretty(&shown)?)?;
            } else {
                emit(&format!(
                    "{key}\n(the key of `{principal}`, id {}: it is not stored and will not be \
                     shown again)",
                    stored.id
                ))?;
            }
        }
        KeysCommand::List => {
            let loaded = editor.load().map_err(|e| Failure::Config(e.to_string()))?;
            let rows: Vec<Value> = (loaded.config.principals.iter())
                .flat_map(|(name, p)| {
                    p.keys.iter().map(move |k| {
                        json!({"principal": name.as_str(), "id": k.id, "created": k.created})
                    })
                })
                .collect();
            if args.json {
                emit(&pretty(&json!({ "keys": rows }))?)?;
            } else if rows.is_empty() {
                emit("no keys: make one with `toolmux keys create --principal NAME`")?;
            } else {
                let lines: Vec<String> = (rows.iter())
                    .map(|r| format!("{}\t{}\t{}", r["principal"], r["id"], r["created"]))
                    .map(|line| line.replace('"', ""))
                    .collect();
                emit(&lines.join("\n"))?;
            }
        }
        KeysCommand::Revoke { id } => {
            let principal = editor.edit(|doc| {
                let path = doc.path().display().to_string();
                let principals = doc.section_mut(PRINCIPALS)?;
                principals
                    .iter_mut()
                    .find_map(|(name, settings)| remove_key(settings, &id).then(|| name.clone()))
                    .ok_or_else(|| {
                        Failure::Usage(format!(
                            "no principal in {path} has a key `{}` (see `toolmux keys list`)",
                            id.escape_debug()
                        ))
                    })
            })?;
            emit(&format!("revoked the key {id} of `{}`", principal.value))?;
        }
    }
    Ok(OK)
}

/// Removes the key `id` from one principal's settings; whether it was there.
fn remove_key(settings: &mut Value, id: &str) -> bool {
    let Some(Value::Array(keys)) = settings.as_object_mut().and_then(|s| s.get_mut("keys")) else {
        return false;
    };
    let before = keys.len();
    keys.retain(|k| k.get("id").and_then(Value::as_str) != Some(id));
    let removed = keys.len() != before;
    if keys.is_empty()
        && let Some(object) = settings.as_object_mut()
    {
        object.remove("keys");
    }
    removed
}

fn unknown_principal(name: &str, path: &str, known: &[&String]) -> Failure {
    let listed = if known.is_empty() {
        "none is configured".to_string()
    } else {
        let names: Vec<&str> = known.iter().map(|n| n.as_str()).collect();
        format!("the principals there are: {}", names.join(", "))
    };
    Failure::Usage(format!(
        "there is no principal `{}` in {path}; {listed} (add `{PRINCIPALS}.{}` first)",
        name.escape_debug(),
        name.escape_debug()
    ))
}
