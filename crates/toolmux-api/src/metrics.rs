//! `/metrics`: Prometheus text. Calls, errors and latencies per tool and source are counted by
//! [`CallMetrics`], an [`ExecutionSink`] that wraps the execution log, so that calls from every
//! channel count; source status comes from the catalog.

use std::collections::HashMap;
use std::fmt::Write;
use std::sync::{Arc, Mutex, PoisonError};

use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use toolmux_core::{Catalog, ExecutionRecord, ExecutionSink, Outcome, SourceInfo, SourceState};

use crate::ApiState;

/// Upper bounds of the latency histogram's buckets, in seconds.
const BUCKETS: [f64; 11] = [
    0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 30.0,
];
const OUTCOMES: [Outcome; 5] = [
    Outcome::Ok,
    Outcome::Error,
    Outcome::Denied,
    Outcome::Timeout,
    Outcome::Invalid,
];

#[derive(Default)]
struct Stats {
    outcomes: [u64; OUTCOMES.len()],
    /// Calls at or under each bound (not cumulative; summed when rendered).
    buckets: [u64; BUCKETS.len()],
    count: u64,
    sum_us: u64,
}

/// Counts every call by tool and source, then hands the record on to the wrapped sink.
pub struct CallMetrics {
    inner: Arc<dyn ExecutionSink>,
    stats: Mutex<HashMap<(String, String), Stats>>,
}

impl CallMetrics {
    /// Counts calls and passes their records to `inner` (the execution log).
    pub fn new(inner: Arc<dyn ExecutionSink>) -> Self {
        Self {
            inner,
            stats: Mutex::new(HashMap::new()),
        }
    }

    /// The Prometheus text exposition of the counters and of the catalog's sources.
    pub fn render(&self, catalog: &Catalog) -> String {
        let mut out = String::with_capacity(4096);
        let stats = self.stats.lock().unwrap_or_else(PoisonError::into_inner);
        let mut keys: Vec<&(String, String)> = stats.keys().collect();
        keys.sort();

        out.push_str("# HELP toolmux_calls_total Calls by tool, source and outcome.\n");
        out.push_str("# TYPE toolmux_calls_total counter\n");
        for key in &keys {
            let s = &stats[*key];
            for (i, outcome) in OUTCOMES.iter().enumerate() {
                if s.outcomes[i] > 0 {
                    let _ = writeln!(
                        out,
                        "toolmux_calls_total{{tool=\"{}\",source=\"{}\",outcome=\"{outcome}\"}} {}",
                        escape(&key.0),
                        escape(&key.1),
                        s.outcomes[i]
                    );
                }
            }
        }
        out.push_str("# HELP toolmux_call_errors_total Calls that did not end `ok`.\n");
        out.push_str("# TYPE toolmux_call_errors_total counter\n");
        for key in &keys {
            let s = &stats[*key];
            let errors: u64 = s.outcomes[1..].iter().sum();
            let _ = writeln!(
                out,
                "toolmux_call_errors_total{{tool=\"{}\",source=\"{}\"}} {errors}",
                escape(&key.0),
                escape(&key.1)
            );
        }
        out.push_str("# HELP toolmux_call_duration_seconds Wall time of the pipeline per call.\n");
        out.push_str("# TYPE toolmux_call_duration_seconds histogram\n");
        for key in &keys {
            let s = &stats[*key];
            let labels = format!("tool=\"{}\",source=\"{}\"", escape(&key.0), escape(&key.1));
            let mut cumulative = 0;
            for (i, bound) in BUCKETS.iter().enumerate() {
                cumulative += s.buckets[i];
                let _ = writeln!(
                    out,
                    "toolmux_call_duration_seconds_bucket{{{labels},le=\"{bound}\"}} {cumulative}"
                );
            }
            let _ = writeln!(
                out,
                "toolmux_call_duration_seconds_bucket{{{labels},le=\"+Inf\"}} {}",
                s.count
            );
            let _ = writeln!(
                out,
                "toolmux_call_duration_seconds_sum{{{labels}}} {}",
                s.sum_us as f64 / 1e6
            );
            let _ = writeln!(
                out,
                "toolmux_call_duration_seconds_count{{{labels}}} {}",
                s.count
            );
        }
        drop(stats);

        out.push_str(
            "# HELP toolmux_source_up 1 when the source's tool list is known and its last \
             discovery succeeded.\n",
        );
        out.push_str("# TYPE toolmux_source_up gauge\n");
        for source in catalog.sources() {
            let up = u8::from(source.enabled && source.status.state == SourceState::Success);
            let state = serde_json::to_value(source.status.state)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default();
            let kind = serde_json::to_value(source.kind)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "toolmux_source_up{{source=\"{}\",kind=\"{kind}\",state=\"{state}\"}} {up}",
                escape(&source.id)
            );
        }
        source_gauge(
            &mut out,
            catalog,
            "toolmux_source_tools",
            "Tools a source contributes to the catalog.",
            |source| source.tool_count,
        );
        source_gauge(
            &mut out,
            catalog,
            "toolmux_source_held_tools",
            "Tools a source holds until a person accepts them (their definition changed since \
             it was pinned, renamed, or new).",
            |source| source.held_count,
        );
        out.push_str("# HELP toolmux_catalog_version The catalog's version.\n");
        out.push_str("# TYPE toolmux_catalog_version gauge\n");
        let _ = writeln!(out, "toolmux_catalog_version {}", catalog.version());
        out
    }
}

impl ExecutionSink for CallMetrics {
    fn record(&self, record: ExecutionRecord) {
        {
            let mut stats = self.stats.lock().unwrap_or_else(PoisonError::into_inner);
            let key = (
                record.tool.clone(),
                record.source.clone().unwrap_or_default(),
            );
            let s = stats.entry(key).or_default();
            if let Some(i) = OUTCOMES.iter().position(|o| *o == record.outcome) {
                s.outcomes[i] += 1;
            }
            let secs = record.duration_us as f64 / 1e6;
            if let Some(i) = BUCKETS.iter().position(|b| secs <= *b) {
                s.buckets[i] += 1;
            }
            s.count += 1;
            s.sum_us += record.duration_us;
        }
        self.inner.record(record);
    }
}

/// One gauge with a value per source, labelled with the source's id.
fn source_gauge(
    out: &mut String,
    catalog: &Catalog,
    name: &str,
    help: &str,
    value: impl Fn(&SourceInfo) -> usize,
) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} gauge");
    for source in catalog.sources() {
        let _ = writeln!(
            out,
            "{name}{{source=\"{}\"}} {}",
            escape(&source.id),
            value(source)
        );
    }
}

/// A label value with `\`, `"` and newlines escaped, as the text format requires.
fn escape(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// Serves the metrics.
#[utoipa::path(
    get, path = "/metrics", tag = "health",
    responses((status = 200, description = "Prometheus text format 0.0.4", body = String, content_type = "text/plain"))
)]
pub(crate) async fn metrics(State(state): State<ApiState>) -> impl IntoResponse {
    let text = state.inner.metrics.render(&state.inner.hub.catalog());
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        text,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_values_are_escaped() {
        assert_eq!(escape("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
    }
}
