//! `toolmux eval`: how well a model picks tools. Sends each prompt of a gold set (the built-in
//! one, or `--gold FILE`) to a provider with the live catalog's tools, and reports accuracy per
//! expected tool. Tools are never run.

use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Args;
use comfy_table::Table;
use toolmux_chat::{GoldSet, evaluate};

use crate::assembly::Assembly;
use crate::exit::{Failure, OK, TOOL_FAILED};
use crate::output::{emit, pretty};

#[derive(Debug, Args)]
pub struct EvalArgs {
    /// The provider (a key of `providers`). Default: `chat.defaultProvider`, else the only one.
    #[arg(long)]
    pub provider: Option<String>,
    /// The model. Default: the provider's `defaultModel`.
    #[arg(long)]
    pub model: Option<String>,
    /// A gold set: `{"cases": [{"prompt": "...", "tool": "grep"}, ...]}` (`"tool": null` where
    /// the right answer is no tool). Default: the built-in set over the built-in tools.
    #[arg(long, value_name = "FILE")]
    pub gold: Option<PathBuf>,
    /// Requests in flight at once.
    #[arg(long, default_value_t = 4)]
    pub concurrency: usize,
    /// Exit with code 1 when the overall accuracy is below this percentage.
    #[arg(long, value_name = "PERCENT")]
    pub min_accuracy: Option<f64>,
    /// Print the whole report as JSON, every case included.
    #[arg(long)]
    pub json: bool,
}

pub async fn run(project: Option<&Path>, args: EvalArgs) -> Result<u8, Failure> {
    let project = Assembly::open(project)?;
    let providers = project.providers()?;
    let (kind, provider) = providers
        .resolve(args.provider.as_deref())
        .map_err(|e| Failure::Usage(e.to_string()))?;
    let model = args
        .model
        .clone()
        .or_else(|| provider.default_model().map(str::to_string))
        .ok_or_else(|| {
            Failure::Usage(format!(
                "provider `{}` has no `defaultModel`; pass --model",
                provider.name()
            ))
        })?;
    let gold = match &args.gold {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("cannot read the gold set `{}`", path.display()))?;
            serde_json::from_str::<GoldSet>(&text).map_err(|e| {
                Failure::Usage(format!(
                    "the gold set `{}` is not valid: {e}",
                    path.display()
                ))
            })?
        }
        None => GoldSet::builtin(),
    };
    let report = evaluate(
        provider.as_ref(),
        kind,
        &model,
        &project.hub.catalog(),
        "eval",
        &gold,
        args.concurrency,
    )
    .await;
    if args.json {
        emit(&pretty(&report)?)?;
    } else {
        let mut table = Table::new();
        table.set_header(["tool", "cases", "correct", "accuracy"]);
        for score in &report.per_tool {
            table.add_row([
                score.tool.clone(),
                score.cases.to_string(),
                score.correct.to_string(),
                format!("{:.1}%", score.accuracy * 100.0),
            ]);
        }
        emit(&table.to_string())?;
        emit(&format!(
            "{}/{}: {} of {} cases, {:.1}%",
            report.provider,
            report.model,
            report.correct,
            report.cases,
            report.accuracy * 100.0
        ))?;
        for r in report.results.iter().filter(|r| !r.is_correct()) {
            let got = match (&r.chosen, &r.error) {
                (_, Some(e)) => format!("error: {e}"),
                (Some(tool), None) => tool.clone(),
                (None, None) => "no tool".into(),
            };
            let expected = r.expected.as_deref().unwrap_or("no tool");
            eprintln!("  miss: {:?} expected {expected}, got {got}", r.prompt);
        }
        if !report.skipped.is_empty() {
            eprintln!(
                "toolmux: {} case(s) skipped: their tool is not in this catalog",
                report.skipped.len()
            );
        }
    }
    match args.min_accuracy {
        Some(min) if report.accuracy * 100.0 < min => {
            eprintln!(
                "toolmux: accuracy {:.1}% is below --min-accuracy {min}%",
                report.accuracy * 100.0
            );
            Ok(TOOL_FAILED)
        }
        _ => Ok(OK),
    }
}
