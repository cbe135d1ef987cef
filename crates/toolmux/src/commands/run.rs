//! `toolmux run script.ts`: a script in the code-mode sandbox, from the terminal.

use std::io::Read;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use serde_json::json;
use toolmux_codemode::{Limits, Sandbox};
use toolmux_core::{CallContext, Channel};

use crate::approve::TerminalApprover;
use crate::assembly::Assembly;
use crate::cli::RunArgs;
use crate::exit::{Failure, OK, TOOL_FAILED};
use crate::output::{emit, pretty};

pub async fn run(project: Option<&Path>, args: RunArgs) -> Result<u8, Failure> {
    let script = read_script(&args.script)?;
    let project = Assembly::open(project)?;
    let limits = Limits {
        wall_time: Duration::from_secs(args.timeout.max(1)),
        cpu_time: Duration::from_secs(args.cpu.max(1)),
        memory_bytes: args.memory.max(1) * 1024 * 1024,
        ..Limits::default()
    };
    let sandbox = Sandbox::new(project.hub.downgrade(), limits);
    // A script sees what a model would see: no internal tools, so the context is not trusted.
    let mut context = CallContext::new(Channel::Cli);
    if let Some(approver) = TerminalApprover::if_interactive() {
        context = context.with_approver(Arc::new(approver));
    }
    let output = sandbox.run(&script, &context).await;

    if args.json {
        let body = match &output.result {
            Ok(result) => json!({"result": result, "logs": output.logs, "calls": output.calls}),
            Err(e) => json!({"error": e.to_string(), "logs": output.logs, "calls": output.calls}),
        };
        emit(&pretty(&body)?)?;
        return Ok(if output.result.is_ok() {
            OK
        } else {
            TOOL_FAILED
        });
    }
    for line in &output.logs {
        if line.level == "log" {
            eprintln!("{}", line.message);
        } else {
            eprintln!("[{}] {}", line.level, line.message);
        }
    }
    match output.result {
        Ok(result) => {
            emit(&pretty(&result)?)?;
            Ok(OK)
        }
        Err(e) => Err(Failure::ToolFailed(e.to_string())),
    }
}

/// The script's text, from a file or (for `-`) stdin.
fn read_script(path: &Path) -> Result<String, Failure> {
    if path == Path::new("-") {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .context("cannot read the script from stdin")?;
        return Ok(text);
    }
    std::fs::read_to_string(path)
        .map_err(|e| Failure::Usage(format!("cannot read the script `{}`: {e}", path.display())))
}
