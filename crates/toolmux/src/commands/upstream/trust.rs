//! `toolmux mcp diff | trust | audit`: the tools, prompts and resource templates toolmux holds
//! because their definition changed since they were pinned (a rug pull), appeared as another
//! went away, or are new on a pinned server; what changed; accepting them; and every server's
//! findings, held items and toxic flows at once.

use std::path::Path;
use std::sync::Arc;

use serde_json::{Value, json};
use toolmux_trust::flows::{Classification, ToolTraits, ToxicFlow, classify, toxic_flow};
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

/// `toolmux mcp audit`: every server's findings and held items, each server tool's toxic-flow
/// classes, and the toxic flows (untrusted content, private data and a public sink reachable
/// together) of everything served and of each endpoint that involve a server's tool; exit 1
/// when an item is held or has a high-severity finding (a toxic flow is a warning).
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
    let catalog = project.hub.catalog();
    let classes = classified(&catalog, &report);
    let flows = toxic_flows(&catalog, &classes);
    if json {
        let servers: Vec<Value> = report
            .iter()
            .map(|(server, findings, held)| {
                let classes: serde_json::Map<String, Value> = classes
                    .iter()
                    .filter(|c| c.server.as_deref() == Some(server.as_str()) && !c.class.is_empty())
                    .map(|c| (c.name.clone(), json!(c.class)))
                    .collect();
                json!({"server": server, "findings": findings, "held": held, "classes": classes})
            })
            .collect();
        let flows: Vec<Value> = flows
            .iter()
            .map(|(scope, flow)| json!({"endpoint": scope, "flow": flow, "action": "warn"}))
            .collect();
        emit(&pretty(&json!({"servers": servers, "toxicFlows": flows}))?)?;
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
    for (scope, flow) in &flows {
        let place = scope.as_ref().map_or_else(
            || "everything served".to_string(),
            |e| format!("endpoint `{e}`"),
        );
        lines.push(format!(
            "toxic flow in {place} (warn): untrusted content from `{}`; private data through \
             `{}`; a public sink through `{}`",
            flow.untrusted_content.join("`, `"),
            flow.private_data.join("`, `"),
            flow.public_sink.join("`, `"),
        ));
    }
    emit(&lines.join("\n"))?;
    Ok(code)
}

/// A served tool and its toxic-flow classes.
struct Classified {
    /// Its registry name.
    name: String,
    /// Its MCP server, for a server's tool.
    server: Option<String>,
    class: Classification,
    entry: Arc<toolmux_core::ToolEntry>,
}

/// Every offered tool classified, a server's tool with the scanner's findings in its definition.
fn classified(
    catalog: &toolmux_core::Catalog,
    report: &[(String, Vec<ToolFindings>, Vec<Held>)],
) -> Vec<Classified> {
    catalog
        .offered()
        .map(|entry| {
            let tool = &entry.descriptor;
            let server = report.iter().find(|(name, _, _)| *name == tool.source);
            let findings = server
                .and_then(|(_, findings, _)| {
                    findings
                        .iter()
                        .find(|f| f.item.is_tool() && f.tool == tool.original_name)
                })
                .map_or(&[][..], |f| f.findings.as_slice());
            let class = classify(&ToolTraits {
                name: &tool.name,
                description: &tool.description,
                read_only: tool.annotations.read_only_hint,
                open_world: tool.annotations.open_world_hint,
                findings,
            });
            Classified {
                name: tool.name.clone(),
                server: server.map(|(name, _, _)| name.clone()),
                class,
                entry: Arc::clone(entry),
            }
        })
        .collect()
}

/// The toxic flow of everything served (`None`), then of each endpoint, each only when one of
/// its tools is a server's: toolmux's own tools are governed by its own policies.
fn toxic_flows(
    catalog: &toolmux_core::Catalog,
    classes: &[Classified],
) -> Vec<(Option<String>, ToxicFlow)> {
    let flow_of = |admits: &dyn Fn(&toolmux_core::ToolDescriptor) -> bool| {
        let served: Vec<&Classified> = classes
            .iter()
            .filter(|c| admits(&c.entry.descriptor))
            .collect();
        let flow = toxic_flow(served.iter().map(|c| (c.name.as_str(), &c.class)))?;
        let involves_a_server = served.iter().any(|c| {
            c.server.is_some()
                && [
                    &flow.untrusted_content,
                    &flow.private_data,
                    &flow.public_sink,
                ]
                .iter()
                .any(|names| names.contains(&c.name))
        });
        involves_a_server.then_some(flow)
    };
    let everything = flow_of(&|_| true).map(|flow| (None, flow));
    let endpoints = catalog.endpoints().iter().filter_map(|(name, endpoint)| {
        flow_of(&|tool| endpoint.scope.admits(tool)).map(|flow| (Some(name.clone()), flow))
    });
    everything.into_iter().chain(endpoints).collect()
}
