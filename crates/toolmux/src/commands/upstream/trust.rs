//! `toolmux mcp diff | trust | audit`: the tools toolmux holds because their definition changed
//! since they were pinned (a rug pull), appeared as another went away, or are new on a pinned
//! server; what changed; accepting them; and every server's findings and held tools at once.

use std::path::Path;

use serde_json::{Value, json};
use toolmux_trust::pins::{Held, HoldReason};
use toolmux_trust::{ItemKind, Severity, ToolFindings};

use super::unknown;
use crate::assembly::Assembly;
use crate::exit::{Failure, OK, TOOL_FAILED};
use crate::output::{emit, pretty};

/// `toolmux mcp diff NAME`: each held tool, why, and each changed field before and after.
pub(super) fn diff(project: Option<&Path>, name: &str, json: bool) -> Result<u8, Failure> {
    let project = Assembly::open(project)?;
    let Some(server) = project.upstreams.get(name) else {
        return Err(unknown(&project, name));
    };
    let held = server.held();
    if json {
        emit(&pretty(&held)?)?;
        return Ok(OK);
    }
    if held.is_empty() {
        emit(&format!("{name}: no tool is held"))?;
        return Ok(OK);
    }
    emit(&held_lines(name, &held).join("\n"))?;
    Ok(OK)
}

/// A server's held tools as `mcp diff` and `mcp show` print them: the tool and why, each
/// changed field's value before (`-`) and now (`+`) as JSON (so a server's text cannot carry a
/// terminal escape), and the command that accepts it.
pub(super) fn held_lines(server: &str, held: &[Held]) -> Vec<String> {
    let shown = |value: &Option<Value>| {
        value
            .as_ref()
            .map_or_else(|| "(none)".to_string(), Value::to_string)
    };
    let mut lines = Vec::new();
    for tool in held {
        lines.push(format!("{}: held: {}", shown_item(tool), tool.why()));
        for change in &tool.changes {
            lines.push(format!("  {}:", change.field));
            lines.push(format!("    - {}", shown(&change.before)));
            lines.push(format!("    + {}", shown(&change.after)));
        }
        if tool.reason != HoldReason::Unreadable {
            lines.push(format!(
                "  accept: toolmux mcp trust {server} {}",
                tool.tool
            ));
        }
    }
    lines
}

/// A held item's name as the CLI shows it: a tool's alone, a prompt's or resource template's
/// after its kind (they may share a tool's name).
fn shown_item(held: &Held) -> String {
    match held.item {
        ItemKind::Tool => held.tool.clone(),
        ItemKind::Prompt => format!("prompt {}", held.tool),
        ItemKind::Resource => format!("resource {}", held.tool),
        ItemKind::ResourceTemplate => format!("resource template {}", held.tool),
    }
}

/// `toolmux mcp trust NAME [TOOL…]`: pins the held tools (all of them without TOOL) as the
/// server presents them now.
pub(super) async fn trust(
    project: Option<&Path>,
    name: &str,
    tools: &[String],
) -> Result<u8, Failure> {
    let project = Assembly::open(project)?;
    let Some(server) = project.upstreams.get(name) else {
        return Err(unknown(&project, name));
    };
    let accepted = server
        .trust(tools)
        .await
        .map_err(|e| Failure::Refused(e.to_string()))?;
    emit(&format!(
        "{name}: accepted `{}`; a running `toolmux serve` offers it from its next discovery of \
         `{name}`",
        accepted.join("`, `")
    ))?;
    Ok(OK)
}

/// `toolmux mcp audit`: every server's findings and held tools; exit 1 when a tool is held or
/// has a high-severity finding.
pub(super) fn audit(project: Option<&Path>, json: bool) -> Result<u8, Failure> {
    let project = Assembly::open(project)?;
    let report: Vec<(String, Vec<ToolFindings>, Vec<Held>)> = project
        .upstreams
        .servers()
        .iter()
        .map(|server| {
            let findings = project
                .upstreams
                .findings(server.name())
                .unwrap_or_default();
            (server.name().to_string(), findings, server.held())
        })
        .collect();
    let failing = report.iter().any(|(_, findings, held)| {
        !held.is_empty()
            || findings
                .iter()
                .flat_map(|tool| &tool.findings)
                .any(|f| f.severity == Severity::High)
    });
    let code = if failing { TOOL_FAILED } else { OK };
    if json {
        let rows: Vec<Value> = report
            .iter()
            .map(|(server, findings, held)| {
                json!({"server": server, "findings": findings, "held": held})
            })
            .collect();
        emit(&pretty(&rows)?)?;
        return Ok(code);
    }
    if report.is_empty() {
        emit("no MCP servers configured")?;
        return Ok(code);
    }
    let mut lines = Vec::new();
    for (server, findings, held) in &report {
        if findings.is_empty() && held.is_empty() {
            lines.push(format!("{server}: nothing found, nothing held"));
            continue;
        }
        for tool in findings {
            for f in &tool.findings {
                lines.push(format!(
                    "{server}: {}: {} {} in {}: {} ({})",
                    tool.tool,
                    json!(f.severity).as_str().unwrap_or_default(),
                    json!(f.kind).as_str().unwrap_or_default(),
                    f.field,
                    json!(f.text),
                    json!(tool.action).as_str().unwrap_or_default(),
                ));
            }
        }
        for tool in held {
            lines.push(format!(
                "{server}: {}: held ({}); `toolmux mcp diff {server}` shows what changed",
                shown_item(tool),
                json!(tool.reason).as_str().unwrap_or_default(),
            ));
        }
    }
    emit(&lines.join("\n"))?;
    Ok(code)
}
