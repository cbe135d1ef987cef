//! `toolmux secrets list | set | get | delete`: the secret store from the command line, each
//! subcommand one call of an internal `secrets_*` tool through the pipeline (the CLI is a
//! trusted caller; see `cli_call`), so the execution log records it with the value redacted.

use std::io::{IsTerminal, Read};
use std::path::Path;

use clap::{Args, Subcommand};
use serde_json::json;

use crate::assembly::Assembly;
use crate::cli_call;
use crate::exit::{Failure, OK};
use crate::output::{emit, pretty};

/// `toolmux secrets`.
#[derive(Debug, Args)]
pub struct SecretsArgs {
    /// Print the tool's structured result as JSON.
    #[arg(long, global = true)]
    pub json: bool,
    #[command(subcommand)]
    pub command: SecretsCommand,
}

#[derive(Debug, Subcommand)]
pub enum SecretsCommand {
    /// The stored secrets' names (never their values).
    List {
        /// Only names starting with this (`oauth/github/`).
        #[arg(long, default_value = "")]
        prefix: String,
    },
    /// Store a secret: the value is read from stdin (up to its end, one trailing newline
    /// dropped), or asked for without echo when stdin is a terminal.
    Set {
        /// The secret's name (`GITHUB_TOKEN`, `oauth/github/refresh`).
        name: String,
    },
    /// Print a secret's value.
    Get {
        /// The secret's name.
        name: String,
    },
    /// Remove a secret.
    Delete {
        /// The secret's name.
        name: String,
    },
}

pub async fn run(project: Option<&Path>, args: SecretsArgs) -> Result<u8, Failure> {
    // Setting a secret the configuration refers to is how a person fixes a configuration
    // that does not load for want of it.
    toolmux_secrets::tolerate_unset_in_config();
    let assembly = Assembly::open(project)?;
    let (tool, arguments) = match args.command {
        SecretsCommand::List { prefix } => ("secrets_list", json!({ "prefix": prefix })),
        SecretsCommand::Set { name } => {
            let value = read_value(&name)?;
            ("secrets_set", json!({ "name": name, "secret": value }))
        }
        SecretsCommand::Get { name } => ("secrets_get", json!({ "name": name })),
        SecretsCommand::Delete { name } => ("secrets_delete", json!({ "name": name })),
    };
    let result = cli_call::call_structured(&assembly, tool, arguments).await?;
    if args.json {
        emit(&pretty(&result)?)?;
        return Ok(OK);
    }
    let text = match tool {
        "secrets_list" => result["names"]
            .as_array()
            .map(|names| {
                names
                    .iter()
                    .filter_map(|n| n.as_str())
                    .collect::<Vec<_>>()
                    .join("\n")
            })
            .unwrap_or_default(),
        "secrets_get" => result["secret"].as_str().unwrap_or_default().to_string(),
        "secrets_set" => format!("stored `{}`", result["name"].as_str().unwrap_or_default()),
        _ => format!("deleted `{}`", result["name"].as_str().unwrap_or_default()),
    };
    if !text.is_empty() {
        emit(&text)?;
    }
    Ok(OK)
}

/// The value to store: asked for without echo on a terminal, else all of stdin, so that
/// `printf %s "$TOKEN" | toolmux secrets set NAME` never puts it on a command line.
fn read_value(name: &str) -> Result<String, Failure> {
    if std::io::stdin().is_terminal() {
        return dialoguer::Password::new()
            .with_prompt(format!("value of `{name}`"))
            .interact()
            .map_err(|e| Failure::Runtime(e.into()));
    }
    let mut value = String::new();
    std::io::stdin()
        .read_to_string(&mut value)
        .map_err(|e| Failure::Runtime(e.into()))?;
    if value.ends_with('\n') {
        value.pop();
        if value.ends_with('\r') {
            value.pop();
        }
    }
    Ok(value)
}
