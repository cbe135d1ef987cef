//! A call of one tool from the command line, the one way every command makes it: the CLI
//! channel's context (trusted; the terminal approver when there is a terminal, else an `ask`
//! tool is refused), through `Hub::call`, with the execution log flushed before the command
//! prints anything.

use std::sync::Arc;

use serde_json::Value;
use toolmux_core::{CallContext, Channel, ToolResult};

use crate::approve::TerminalApprover;
use crate::assembly::Assembly;
use crate::exit::Failure;

/// Calls `tool`; a call the pipeline refused or broke is the command's failure, a tool's own
/// error result is returned for the caller to show.
pub async fn call(
    assembly: &Assembly,
    tool: &str,
    arguments: Value,
) -> Result<ToolResult, Failure> {
    let mut context = CallContext::new(Channel::Cli).trusted();
    if let Some(approver) = TerminalApprover::if_interactive() {
        context = context.with_approver(Arc::new(approver));
    }
    let outcome = assembly.hub.call(tool, arguments, &context).await;
    assembly.log.flush();
    Ok(outcome?)
}

/// Calls a tool that declares an output schema and returns its structured result; its error
/// result is the command's failure too (a refusal of a known kind exits like one).
pub async fn call_structured(
    assembly: &Assembly,
    tool: &str,
    arguments: Value,
) -> Result<Value, Failure> {
    let result = call(assembly, tool, arguments).await?;
    if result.is_error {
        return Err(Failure::from_tool_error(&result));
    }
    // The pipeline has checked the result against the tool's output schema; a result without
    // structured content would be a tool that broke its own declaration.
    result
        .structured_content
        .ok_or_else(|| Failure::ToolFailed(format!("`{tool}` returned no structured content")))
}
