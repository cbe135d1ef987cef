//! Tool-selection evaluation: a gold set of prompts, each with the tool a good model should call
//! first (or none, where a good model answers in words), sent to a provider with the live
//! catalog's tools and system prompt; scored as accuracy per tool. Nothing runs: only the model's
//! first choice is read.

use std::collections::BTreeMap;

use futures::StreamExt;
use serde::{Deserialize, Serialize};
use toolmux_config::ProviderKind;
use toolmux_core::Catalog;

use crate::prompt::system_prompt;
use crate::provider::{ChatProvider, Message, ModelRequest, ProviderEvent};
use crate::rendering::tool_specs;

/// One prompt and the tool it should lead to.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EvalCase {
    /// What the person writes.
    pub prompt: String,
    /// The registry name of the tool a good model calls first; `null` where a good model calls
    /// none (small talk, what it knows by itself): a model that reaches for a tool at every
    /// prompt must not score well.
    pub tool: Option<String>,
}

/// How a report names the expected "no tool" in its per-tool scores.
pub const NO_TOOL: &str = "(no tool)";

/// A gold set.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GoldSet {
    /// What it covers.
    #[serde(default)]
    pub description: String,
    /// The cases.
    pub cases: Vec<EvalCase>,
}

impl GoldSet {
    /// The gold set shipped with toolmux, over the built-in tools (workspace, code mode, chat).
    pub fn builtin() -> Self {
        serde_json::from_str(include_str!("../eval/gold.json"))
            .expect("the built-in gold set is valid JSON (checked by a test)")
    }
}

/// What the model did with one case.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CaseResult {
    /// The prompt.
    pub prompt: String,
    /// The expected tool; `None` where no tool was expected.
    pub expected: Option<String>,
    /// The tool the model called first, if any.
    pub chosen: Option<String>,
    /// Why the case has no answer (the provider failed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl CaseResult {
    /// The model answered, and chose what was expected (a tool, or none).
    pub fn is_correct(&self) -> bool {
        self.error.is_none() && self.chosen == self.expected
    }
}

/// The score of one expected tool.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolScore {
    /// The tool, or [`NO_TOOL`].
    pub tool: String,
    /// Cases expecting it.
    pub cases: usize,
    /// Cases where the model chose it.
    pub correct: usize,
    /// `correct / cases`.
    pub accuracy: f64,
}

/// The outcome of an evaluation.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EvalReport {
    /// The provider's name.
    pub provider: String,
    /// The model.
    pub model: String,
    /// Cases run.
    pub cases: usize,
    /// Cases answered with the expected tool.
    pub correct: usize,
    /// `correct / cases`.
    pub accuracy: f64,
    /// Per expected tool, by name.
    pub per_tool: Vec<ToolScore>,
    /// Every case.
    pub results: Vec<CaseResult>,
    /// Cases left out because their tool is not offered in this catalog.
    pub skipped: Vec<EvalCase>,
}

fn ratio(correct: usize, cases: usize) -> f64 {
    if cases == 0 {
        0.0
    } else {
        correct as f64 / cases as f64
    }
}

/// Runs every case whose tool the catalog offers, `concurrency` at a time.
pub async fn evaluate(
    provider: &dyn ChatProvider,
    kind: ProviderKind,
    model: &str,
    catalog: &Catalog,
    project_name: &str,
    gold: &GoldSet,
    concurrency: usize,
) -> EvalReport {
    let tools: std::sync::Arc<[crate::provider::ToolSpec]> = tool_specs(catalog, kind).into();
    let system = system_prompt(catalog, project_name, &[]);
    let (runnable, skipped): (Vec<_>, Vec<_>) = gold.cases.iter().cloned().partition(|c| {
        c.tool
            .as_ref()
            .is_none_or(|tool| tools.iter().any(|t| &t.name == tool))
    });
    let results: Vec<CaseResult> = futures::stream::iter(runnable.into_iter().map(|case| {
        let request = ModelRequest {
            model: model.to_string(),
            system: system.clone(),
            messages: vec![Message::User {
                text: case.prompt.clone(),
            }],
            tools: tools.clone(),
            max_tokens: None,
        };
        async move {
            let (chosen, error) = first_tool(provider, request).await;
            CaseResult {
                prompt: case.prompt,
                expected: case.tool,
                chosen,
                error,
            }
        }
    }))
    .buffered(concurrency.max(1))
    .collect()
    .await;
    let mut per_tool: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    for r in &results {
        let score = per_tool
            .entry(r.expected.as_deref().unwrap_or(NO_TOOL))
            .or_default();
        score.0 += 1;
        score.1 += usize::from(r.is_correct());
    }
    let correct = per_tool.values().map(|(_, c)| c).sum();
    EvalReport {
        provider: provider.name().to_string(),
        model: model.to_string(),
        cases: results.len(),
        correct,
        accuracy: ratio(correct, results.len()),
        per_tool: per_tool
            .into_iter()
            .map(|(tool, (cases, correct))| ToolScore {
                tool: tool.to_string(),
                cases,
                correct,
                accuracy: ratio(correct, cases),
            })
            .collect(),
        results,
        skipped,
    }
}

/// The first tool the model calls in answer to a request, or the error that stopped it.
async fn first_tool(
    provider: &dyn ChatProvider,
    request: ModelRequest,
) -> (Option<String>, Option<String>) {
    let mut stream = match provider.stream(request).await {
        Ok(stream) => stream,
        Err(e) => return (None, Some(e.to_string())),
    };
    while let Some(event) = stream.next().await {
        match event {
            Ok(ProviderEvent::ToolCallDelta { name, .. }) if !name.is_empty() => {
                return (Some(name), None);
            }
            Ok(ProviderEvent::ToolCall(call)) => return (Some(call.name), None),
            Ok(ProviderEvent::Finish { .. }) => return (None, None),
            Ok(_) => {}
            Err(e) => return (None, Some(e.to_string())),
        }
    }
    (None, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_builtin_gold_set_has_at_least_fifty_distinct_prompts() {
        let gold = GoldSet::builtin();
        assert!(gold.cases.len() >= 50);
        let mut prompts: Vec<&str> = gold.cases.iter().map(|c| c.prompt.as_str()).collect();
        prompts.sort_unstable();
        prompts.dedup();
        assert_eq!(prompts.len(), gold.cases.len());
    }

    #[test]
    fn the_builtin_gold_set_has_web_search_and_no_tool_cases() {
        let gold = GoldSet::builtin();
        let count = |tool: Option<&str>| {
            gold.cases
                .iter()
                .filter(|c| c.tool.as_deref() == tool)
                .count()
        };
        assert!(count(Some("web_search")) >= 10);
        assert!(count(None) >= 10);
    }
}
