//! `toolmux tools list | show | call`.

use std::path::Path;
use std::sync::Arc;

use comfy_table::{ContentArrangement, Table, presets};
use serde_json::{Map, Value};
use toolmux_core::{CallContext, CallError, Channel, ToolEntry};

use crate::approve::TerminalApprover;
use crate::cli::{CallArgs, ToolsCommand};
use crate::commands::{emit, pretty};
use crate::exit::{Failure, OK, TOOL_FAILED};
use crate::project::Project;

pub async fn run(project: Option<&Path>, cmd: ToolsCommand) -> Result<u8, Failure> {
    let project = Project::open(project)?;
    match cmd {
        ToolsCommand::List { source, all, json } => list(&project, source.as_deref(), all, json),
        ToolsCommand::Show { name, json } => show(&project, &name, json),
        ToolsCommand::Call(args) => call(&project, args).await,
    }
}

fn list(project: &Project, source: Option<&str>, all: bool, json: bool) -> Result<u8, Failure> {
    let catalog = project.hub.catalog();
    let tools: Vec<&Arc<ToolEntry>> = catalog
        .all_tools()
        .iter()
        .filter(|e| all || !e.descriptor.internal)
        .filter(|e| source.is_none_or(|s| e.descriptor.source == s))
        .collect();
    if json {
        emit(&pretty(&tools)?)?;
        return Ok(OK);
    }
    let mut table = Table::new();
    table
        .load_preset(presets::NOTHING)
        .set_content_arrangement(ContentArrangement::Dynamic)
        .set_header(["NAME", "SOURCE", "POLICY", "DESCRIPTION"]);
    for entry in &tools {
        table.add_row([
            entry.descriptor.name.as_str(),
            entry.descriptor.source.as_str(),
            &entry.policy.to_string(),
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

fn show(project: &Project, name: &str, json: bool) -> Result<u8, Failure> {
    let catalog = project.hub.catalog();
    let Some(entry) = catalog.get(name) else {
        let err = match catalog.hidden_reason(name) {
            Some(reason) => format!("tool `{name}` is not in the catalog: {reason}"),
            None => CallError::NotFound {
                name: name.to_string(),
                suggestion: catalog.suggest(name),
            }
            .to_string(),
        };
        return Err(Failure::Refused(err));
    };
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

async fn call(project: &Project, args: CallArgs) -> Result<u8, Failure> {
    let arguments = parse_arguments(&args)?;
    let mut context = CallContext::new(Channel::Cli).trusted();
    if let Some(approver) = TerminalApprover::if_interactive() {
        context = context.with_approver(Arc::new(approver));
    }
    let outcome = project.hub.call(&args.name, arguments, &context).await;
    project.log.flush();
    let result = match outcome {
        Ok(result) => result,
        Err(
            e @ (CallError::NotFound { .. }
            | CallError::Disabled { .. }
            | CallError::Denied { .. }
            | CallError::InvalidArguments { .. }
            | CallError::RateLimited { .. }),
        ) => return Err(Failure::Refused(e.to_string())),
        Err(e) => return Err(Failure::ToolFailed(e.to_string())),
    };
    if args.json {
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
    Ok(if result.is_error { TOOL_FAILED } else { OK })
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
