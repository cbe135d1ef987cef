//! The pipeline's last step ([`toolmux_core::ResultShaper`]): a tool's configured projection,
//! then its cap — or its channel's default cap — with the whole result kept aside when cut.

use std::collections::HashMap;
use std::sync::{Arc, PoisonError, RwLock};

use async_trait::async_trait;
use serde_json::Value;
use toolmux_core::{Channel, Content, ContentBody, ResultShaper, ShapedCall, ToolResult};

use crate::cap::{Cut, cut};
use crate::settings::{Cap, Keep, OutputSettings};
use crate::spill::{RESULTS_URI_PREFIX, SpillStore, format_expiry};
use crate::{MCP_DEFAULT_CAP, RESULT_READ};

/// What shaping applies: per tool (by exact registry name) and per channel when a tool sets no
/// cap.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ShapingRules {
    /// `toolSettings.<name>.output`.
    pub tools: HashMap<String, OutputSettings>,
    /// The cap a channel's callers get when the tool sets none.
    pub channel_caps: HashMap<Channel, Cap>,
}

impl ShapingRules {
    /// The rules with toolmux's default caps: [`MCP_DEFAULT_CAP`] for MCP clients (which cut or
    /// refuse long results themselves, without saying what they dropped) and `chat_max_bytes`
    /// for toolmux's own chat (`chat.maxToolResultBytes`).
    pub fn with_defaults(tools: HashMap<String, OutputSettings>, chat_max_bytes: usize) -> Self {
        let chat = Cap {
            limit: crate::settings::Limit::Bytes(chat_max_bytes),
            keep: Keep::Head,
        };
        Self {
            tools,
            channel_caps: HashMap::from([(Channel::Mcp, MCP_DEFAULT_CAP), (Channel::Chat, chat)]),
        }
    }
}

/// Shapes results by [`ShapingRules`], keeping cut results in a [`SpillStore`].
pub struct Shaper {
    rules: RwLock<Arc<ShapingRules>>,
    store: Arc<SpillStore>,
}

impl Shaper {
    /// A shaper keeping what it cuts in `store`.
    pub fn new(rules: ShapingRules, store: Arc<SpillStore>) -> Self {
        Self {
            rules: RwLock::new(Arc::new(rules)),
            store,
        }
    }

    /// Replaces the rules (a reload).
    pub fn configure(&self, rules: ShapingRules) {
        *self.rules.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(rules);
    }

    /// The store of kept results.
    pub fn store(&self) -> &Arc<SpillStore> {
        &self.store
    }

    fn rules(&self) -> Arc<ShapingRules> {
        Arc::clone(&self.rules.read().unwrap_or_else(PoisonError::into_inner))
    }

    /// What `call`'s caller gets; blocks on CPU and file work (the async entry point moves it
    /// off the workers).
    pub fn shape_now(&self, call: ShapedCall<'_>, result: ToolResult) -> ToolResult {
        match self.plan(call) {
            Some((settings, cap)) => shape(&self.store, &settings, cap, call.output_schema, result),
            None => result,
        }
    }

    /// The tool's settings and the cap in force, or `None` when nothing applies.
    fn plan(&self, call: ShapedCall<'_>) -> Option<(OutputSettings, Option<Cap>)> {
        // A page of a kept result is bounded by `result_read` itself; shaping it would keep it
        // again and again.
        if call.tool == RESULT_READ {
            return None;
        }
        let rules = self.rules();
        let settings = rules.tools.get(call.tool).cloned().unwrap_or_default();
        let cap = settings
            .cap()
            .or_else(|| rules.channel_caps.get(&call.channel).copied());
        (settings.projection.is_some() || cap.is_some()).then_some((settings, cap))
    }
}

#[async_trait]
impl ResultShaper for Shaper {
    async fn shape(&self, call: ShapedCall<'_>, result: ToolResult) -> ToolResult {
        let Some((settings, cap)) = self.plan(call) else {
            return result;
        };
        let contract = call.output_schema;
        if settings.projection.is_none()
            && let Some(cap) = cap
            && within_bytes(&result, cap.limit.bytes_bound(), contract)
        {
            return result;
        }
        let store = Arc::clone(&self.store);
        let kept = result.clone();
        let shaping = move || shape(&store, &settings, cap, contract, result);
        match tokio::task::spawn_blocking(shaping).await {
            Ok(shaped) => shaped,
            Err(e) => {
                tracing::error!("shaping a result failed: {e}");
                with_note(
                    kept,
                    &format!("[toolmux: this result could not be shaped: {e}]"),
                )
            }
        }
    }
}

/// Whether what a cap may cut is no longer than `bytes`: the text, and the structured content
/// unless it is a `contract` (declared by an output schema), which is never cut.
fn within_bytes(result: &ToolResult, bytes: usize, contract: bool) -> bool {
    text_len(result) <= bytes
        && (contract
            || result
                .structured_content
                .as_ref()
                .is_none_or(|v| !toolmux_core::serializes_longer_than(v, bytes)))
}

fn text_len(result: &ToolResult) -> usize {
    result
        .content
        .iter()
        .filter_map(Content::as_text)
        .map(|t| t.len() + 1)
        .sum()
}

/// The text blocks as one text.
fn joined_text(result: &ToolResult) -> String {
    let texts: Vec<&str> = result.content.iter().filter_map(Content::as_text).collect();
    texts.join("\n")
}

/// Projection, then cap; a note about the projection comes after the cap, which must not cut
/// it.
pub(crate) fn shape(
    store: &SpillStore,
    settings: &OutputSettings,
    cap: Option<Cap>,
    contract: bool,
    result: ToolResult,
) -> ToolResult {
    let (result, json, note) = match &settings.projection {
        Some(projection) => project(projection, result, contract),
        None => {
            let json = json_of(&result, contract);
            (result, json, None)
        }
    };
    let shaped = match cap {
        Some(cap) => cap_result(store, cap, result, json, contract),
        None => result,
    };
    match note {
        Some(note) => with_note(shaped, &note),
        None => shaped,
    }
}

/// The result's JSON: its structured content, or its text when that is JSON. When the
/// structured content is a `contract` it stays as it is, so the text is what is shaped: its
/// JSON comes first (an MCP SDK server wraps a text result as `{"result": text}`).
fn json_of(result: &ToolResult, contract: bool) -> Option<Value> {
    let text_json = || {
        let text = joined_text(result);
        let first = text.trim_start().chars().next();
        if matches!(first, Some('{' | '[')) {
            serde_json::from_str(&text).ok()
        } else {
            None
        }
    };
    if contract {
        text_json().or_else(|| result.structured_content.clone())
    } else {
        result.structured_content.clone().or_else(text_json)
    }
}

/// The projected result and its JSON, or the result as it was with a note saying why not.
fn project(
    projection: &crate::Projection,
    result: ToolResult,
    contract: bool,
) -> (ToolResult, Option<Value>, Option<String>) {
    let Some(input) = json_of(&result, contract) else {
        let note = format!(
            "[toolmux: the projection `{}` was not applied: this result is not JSON]",
            projection.as_str()
        );
        return (result, None, Some(note));
    };
    match projection.apply(&input) {
        Ok(projected) => {
            let text = projected.to_string();
            let others = result.content.into_iter().filter(|c| c.as_text().is_none());
            let shaped = ToolResult {
                content: std::iter::once(Content::text(text)).chain(others).collect(),
                structured_content: if contract {
                    result.structured_content
                } else {
                    result.structured_content.map(|_| projected.clone())
                },
                is_error: result.is_error,
            };
            (shaped, Some(projected), None)
        }
        Err(e) => {
            let note = format!(
                "[toolmux: the projection `{}` was not applied: {e}; this is the whole result]",
                projection.as_str()
            );
            (result, Some(input), Some(note))
        }
    }
}

fn with_note(mut result: ToolResult, note: &str) -> ToolResult {
    result.content.push(Content::text(note));
    result
}

fn cap_result(
    store: &SpillStore,
    cap: Cap,
    result: ToolResult,
    json: Option<Value>,
    contract: bool,
) -> ToolResult {
    if within_bytes(&result, cap.limit.bytes_bound(), contract) {
        return result;
    }
    // What is kept, and cut, is the JSON pretty-printed when there is JSON (one value per line
    // can be read a window of lines at a time), else the text.
    let (body, is_json) = match &json {
        Some(value) => match serde_json::to_string_pretty(value) {
            Ok(pretty) => (pretty, true),
            Err(_) => (joined_text(&result), false),
        },
        None => (joined_text(&result), false),
    };
    let found = match cut(&body, cap) {
        Ok(found) => found,
        Err(e) => {
            return with_note(
                result,
                &format!("[toolmux: this result could not be measured: {e}]"),
            );
        }
    };
    let Some(found) = found else {
        // The text is within the cap; only structured content was over it (never a contract's:
        // see `within_bytes`), and the text carries the same.
        return ToolResult {
            structured_content: None,
            ..result
        };
    };
    let others: Vec<Content> = result
        .content
        .into_iter()
        .filter(|c| c.as_text().is_none())
        .collect();
    let (shown, note, link) = describe(store, &body, is_json, cap, &found);
    let mut content = vec![Content::text(format!("{shown}\n{note}"))];
    content.extend(link);
    content.extend(others);
    ToolResult {
        content,
        structured_content: if contract {
            result.structured_content
        } else {
            None
        },
        is_error: result.is_error,
    }
}

/// The text shown, the note saying what was cut and where the rest is, and the link to it.
fn describe(
    store: &SpillStore,
    body: &str,
    is_json: bool,
    cap: Cap,
    found: &Cut,
) -> (String, String, Option<Content>) {
    let total_lines = body.lines().count();
    let line_of = |byte: usize| body[..byte].matches('\n').count() + 1;
    let (shown, kept) = match cap.keep {
        Keep::Head => (
            body[..found.head].to_string(),
            format!(
                "its first {}: bytes 0–{} and lines 1–{}",
                cap.limit,
                found.head,
                line_of(found.head)
            ),
        ),
        Keep::Tail => (
            body[found.tail..].to_string(),
            format!(
                "its last {}: bytes {}–{} and lines {}–{total_lines}",
                cap.limit,
                found.tail,
                body.len(),
                line_of(found.tail)
            ),
        ),
        Keep::HeadTail => (
            format!(
                "{}\n[… bytes {}–{} cut …]\n{}",
                &body[..found.head],
                found.head,
                found.tail,
                &body[found.tail..]
            ),
            format!(
                "its first and last {} each: bytes 0–{} (lines 1–{}) and {}–{} (lines {}–{total_lines})",
                cap.limit.half(),
                found.head,
                line_of(found.head),
                found.tail,
                body.len(),
                line_of(found.tail)
            ),
        ),
    };
    let whole = format!("{} bytes, {total_lines} lines", body.len());
    let next_line = match cap.keep {
        Keep::Tail => 1,
        Keep::Head | Keep::HeadTail => line_of(found.head),
    };
    match store.keep(body, is_json) {
        Ok(kept_at) => {
            let uri = kept_at.uri();
            let note = format!(
                "[toolmux: result cut to {kept} of {whole}. The whole result is kept as {uri} \
                 until {}: read it with MCP resources/read, GET /api/results/{id}, or the \
                 {RESULT_READ} tool with {{\"id\": \"{id}\", \"offset\": {next_line}}} for the \
                 lines from {next_line} on.]",
                format_expiry(kept_at.expires),
                id = kept_at.id,
            );
            let link = Content::from(ContentBody::ResourceLink {
                uri,
                name: format!("result-{}", kept_at.id),
                title: Some("The whole result".to_string()),
                description: Some(format!(
                    "The whole result ({whole}), until {}",
                    format_expiry(kept_at.expires)
                )),
                mime_type: Some(
                    if is_json {
                        "application/json"
                    } else {
                        "text/plain"
                    }
                    .to_string(),
                ),
                size: Some(body.len() as u64),
            });
            (shown, note, Some(link))
        }
        Err(e) => {
            tracing::warn!("a cut result could not be kept: {e}");
            let note = format!(
                "[toolmux: result cut to {kept} of {whole}. The whole result could not be kept \
                 ({e}); ask for less (a narrower query, a smaller page).]"
            );
            (shown, note, None)
        }
    }
}

/// The id in a `toolmux://results/<id>` URI, as written (checked by the store when read).
pub fn id_of_uri(uri: &str) -> Option<&str> {
    uri.strip_prefix(RESULTS_URI_PREFIX)
}
