//! `toolmux logs`: query and follow the execution log.

use std::path::Path;
use std::time::Duration;

use chrono::Utc;
use toolmux_core::Outcome;
use toolmux_execlog::{LogEntry, LogQuery};

use crate::cli::LogsArgs;
use crate::exit::{Failure, OK};
use crate::output::emit;
use crate::project::{load_config, locate, log_dir};

/// How often `--follow` looks for new lines. Polling is simpler and more robust than a file
/// watcher here: the file is appended by other processes and rolls over at midnight UTC.
const FOLLOW_INTERVAL: Duration = Duration::from_millis(200);

pub async fn run(project: Option<&Path>, args: LogsArgs) -> Result<u8, Failure> {
    let project_dir = locate(project)?;
    let loaded = load_config(&project_dir)?;
    let dir = log_dir(&loaded.project_dir);
    let outcome = match &args.outcome {
        Some(text) => Some(text.parse::<Outcome>().map_err(Failure::Usage)?),
        None => None,
    };
    let since = match &args.since {
        Some(text) => Some(
            toolmux_execlog::parse_since(text, Utc::now())
                .map_err(|e| Failure::Usage(format!("--since: {e}")))?,
        ),
        None => None,
    };
    let query = LogQuery {
        tool: args.tool.clone(),
        outcome,
        since,
        until: None,
        limit: Some(args.limit),
        session: None,
    };
    if args.follow {
        // Start at the end of the log; show the last few calls first, like `tail -f`.
        let mut follower = toolmux_execlog::follow(&dir, &query);
        print(
            &toolmux_execlog::query(&dir, &query).map_err(|e| Failure::Runtime(e.into()))?,
            args.json,
        )?;
        loop {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => return Ok(OK),
                () = tokio::time::sleep(FOLLOW_INTERVAL) => {}
            }
            let entries = follower.poll().map_err(|e| Failure::Runtime(e.into()))?;
            print(&entries, args.json)?;
        }
    }
    let entries = toolmux_execlog::query(&dir, &query).map_err(|e| Failure::Runtime(e.into()))?;
    print(&entries, args.json)?;
    Ok(OK)
}

fn print(entries: &[LogEntry], json: bool) -> Result<(), Failure> {
    for entry in entries {
        if json {
            emit(&serde_json::to_string(entry).map_err(|e| Failure::Runtime(e.into()))?)?;
        } else {
            emit(&line(entry))?;
        }
    }
    Ok(())
}

/// One call on one line: time, outcome, duration, channel, tool, arguments, error.
fn line(entry: &LogEntry) -> String {
    let mut args = entry.arguments.to_string();
    if args.chars().count() > 80 {
        args = args.chars().take(79).collect::<String>() + "…";
    }
    let ms = entry.duration_us as f64 / 1000.0;
    let mut text = format!(
        "{}  {:<7} {:>9.1}ms  {:<4}  {}  {}",
        entry.timestamp.format("%Y-%m-%dT%H:%M:%S%.3fZ"),
        entry.outcome.to_string(),
        ms,
        entry.channel.to_string(),
        entry.tool,
        args
    );
    if let Some(error) = &entry.error {
        let first = error.lines().next().unwrap_or_default();
        text.push_str("  ! ");
        text.push_str(first);
    }
    text
}
