//! `toolmux runners list | detect`: the coding agents toolmux can start, each subcommand one
//! call of a `sessions` tool through the pipeline (see `cli_call`).

use std::path::Path;

use clap::{Args, Subcommand};
use serde_json::{Value, json};

use crate::assembly::Assembly;
use crate::cli_call;
use crate::exit::{Failure, OK};
use crate::output::{emit, pretty};

/// `toolmux runners`.
#[derive(Debug, Args)]
pub struct RunnersArgs {
    /// Print the tool's structured result as JSON.
    #[arg(long, global = true)]
    pub json: bool,
    #[command(subcommand)]
    pub command: RunnersCommand,
}

#[derive(Debug, Subcommand)]
pub enum RunnersCommand {
    /// Every runner (built in and configured), how it is launched, and what the last detection
    /// found; starts nothing.
    List,
    /// Look for each runner's program on PATH and read its version.
    Detect {
        /// Only these runners.
        names: Vec<String>,
        /// Check again even where the cache is still valid.
        #[arg(long)]
        refresh: bool,
    },
}

pub async fn run(project: Option<&Path>, args: RunnersArgs) -> Result<u8, Failure> {
    let assembly = Assembly::open(project)?;
    let value = match args.command {
        RunnersCommand::List => {
            cli_call::call_structured(&assembly, "list_runners", json!({})).await?
        }
        RunnersCommand::Detect { names, refresh } => {
            cli_call::call_structured(
                &assembly,
                "detect_runners",
                json!({ "names": names, "refresh": refresh }),
            )
            .await?
        }
    };
    if args.json {
        emit(&pretty(&value)?)?;
    } else {
        emit(&table(&value))?;
    }
    Ok(OK)
}

fn table(value: &Value) -> String {
    let runners = value["runners"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    let mut out = String::new();
    for r in runners {
        // `list_runners` nests the detection; `detect_runners` is one.
        let d = if r["detected"].is_null() && r.get("installed").is_some() {
            r
        } else {
            &r["detected"]
        };
        let state = if d.is_null() {
            "not checked".to_string()
        } else if d["installed"] == true {
            format!(
                "{} at {}",
                d["version"].as_str().unwrap_or("version unknown"),
                d["path"].as_str().unwrap_or_default()
            )
        } else {
            "not installed".to_string()
        };
        let mut line = format!("{:<14} {}", r["name"].as_str().unwrap_or_default(), state);
        if let Some(protocol) = r["protocol"].as_str() {
            line = format!("{line}  ({protocol})");
        }
        out.push_str(&line);
        out.push('\n');
    }
    out.trim_end().to_string()
}
