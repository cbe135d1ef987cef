//! The `results` pack: `result_read`, a window of lines of a kept result, and the
//! `toolmux://results/<id>` resources the same results are read as.

use std::sync::Arc;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use toolmux_core::{
    Policy, ResourceContents, ResourceError, ResourceInfo, ResourceProvider, Source, SourceCall,
    SourceError, SourceKind, ToolAnnotations, ToolDescriptor, ToolErrorKind, ToolResult,
    input_schema, parse_arguments, run_blocking,
};

use crate::RESULT_READ;
use crate::shaper::id_of_uri;
use crate::spill::{SpillError, SpillStore, format_expiry};

/// The source id.
pub const SOURCE_ID: &str = "results";
/// Lines in a page when `limit` is left out.
pub const DEFAULT_LINES: usize = 500;
/// The most lines in a page.
pub const MAX_LINES: usize = 5_000;
/// The most bytes in a page: a page stops before the line that would go past it.
pub const MAX_PAGE_BYTES: usize = 64 * 1024;

/// `result_read`'s arguments: its input schema is derived from this struct.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ReadArgs {
    /// The kept result's id (the end of its `toolmux://results/<id>` URI).
    #[schemars(length(min = 1, max = 64))]
    id: String,
    /// The first line to read, from 1.
    #[serde(default = "first_line")]
    #[schemars(range(min = 1))]
    offset: usize,
    /// How many lines at most (500 when left out); a page also stops at 64 KiB.
    #[serde(default = "default_lines")]
    #[schemars(range(min = 1, max = MAX_LINES))]
    limit: usize,
}

fn first_line() -> usize {
    1
}

fn default_lines() -> usize {
    DEFAULT_LINES
}

/// `result_read` and the `toolmux://results/` resources over one store.
pub struct ResultsPack {
    store: Arc<SpillStore>,
    tools: Vec<ToolDescriptor>,
}

impl ResultsPack {
    /// The pack over `store` (the one the [`crate::Shaper`] keeps results in).
    pub fn new(store: Arc<SpillStore>) -> Self {
        let mut d = ToolDescriptor::new(
            SOURCE_ID,
            RESULT_READ,
            "Read a window of lines of a result toolmux cut and kept whole \
             (`toolmux://results/<id>`): the cut result's note says the id and the line to go on \
             from; each page says where the next begins (`nextOffset`).",
            input_schema::<ReadArgs>(),
        );
        d.annotations = ToolAnnotations::read_only();
        d.parallel = true;
        // It reads only what toolmux kept of results its caller was already shown part of.
        d.policy = Some(Policy::Allow);
        Self {
            store,
            tools: vec![d],
        }
    }
}

/// A window of lines of `text`: from line `offset` (1-based), at most `limit` lines and
/// [`MAX_PAGE_BYTES`] bytes; a first line longer than that alone is cut to it.
pub fn window(id: &str, text: &str, offset: usize, limit: usize) -> ToolResult {
    let limit = limit.clamp(1, MAX_LINES);
    // Counted as bytes: this runs on every page of a result of megabytes.
    let total = text.as_bytes().iter().filter(|&&b| b == b'\n').count()
        + usize::from(!text.is_empty() && !text.ends_with('\n'));
    let mut page = String::new();
    let mut lines = 0;
    let mut line_cut = false;
    for line in text.lines().skip(offset.saturating_sub(1)).take(limit) {
        if page.len() + line.len() + 1 > MAX_PAGE_BYTES {
            if lines == 0 {
                page.push_str(&line[..line.floor_char_boundary(MAX_PAGE_BYTES)]);
                lines = 1;
                line_cut = true;
            }
            break;
        }
        page.push_str(line);
        page.push('\n');
        lines += 1;
    }
    let next = offset.saturating_add(lines);
    let mut meta = json!({
        "id": id, "offset": offset, "lines": lines, "totalLines": total,
    });
    if next <= total {
        meta["nextOffset"] = json!(next);
    }
    if line_cut {
        meta["lineCut"] = json!(format!(
            "line {offset} is longer than a page ({MAX_PAGE_BYTES} bytes): read the whole \
             result with resources/read"
        ));
    }
    ToolResult::structured_with_text(meta, page)
}

fn read_page(store: &SpillStore, args: &serde_json::Map<String, serde_json::Value>) -> ToolResult {
    let args: ReadArgs = match parse_arguments(args) {
        Ok(args) => args,
        Err(e) => return ToolResult::kind_error(ToolErrorKind::Invalid, e),
    };
    match store.read(&args.id) {
        Ok(kept) => window(&kept.id, &kept.text, args.offset, args.limit),
        Err(e @ SpillError::InvalidId(_)) => {
            ToolResult::kind_error(ToolErrorKind::Invalid, e.to_string())
        }
        Err(e @ SpillError::NotFound(_)) => {
            ToolResult::kind_error(ToolErrorKind::NotFound, e.to_string())
        }
        Err(e) => ToolResult::error(e.to_string()),
    }
}

#[async_trait]
impl Source for ResultsPack {
    fn id(&self) -> &str {
        SOURCE_ID
    }

    fn kind(&self) -> SourceKind {
        SourceKind::Builtin
    }

    fn description(&self) -> Option<String> {
        Some("Reading results toolmux cut to fit and kept whole.".to_string())
    }

    fn tools(&self) -> Vec<ToolDescriptor> {
        self.tools.clone()
    }

    async fn call(&self, call: SourceCall<'_>) -> Result<ToolResult, SourceError> {
        let store = Arc::clone(&self.store);
        let tool = call.tool.name.clone();
        let arguments = call.arguments;
        run_blocking(SOURCE_ID, &tool.clone(), move || {
            (tool == RESULT_READ).then(|| read_page(&store, &arguments))
        })
        .await
    }
}

impl ResourceProvider for ResultsPack {
    fn source(&self) -> &str {
        SOURCE_ID
    }

    fn scheme(&self) -> &str {
        "toolmux"
    }

    fn read_tool(&self) -> &str {
        RESULT_READ
    }

    /// None are listed: a kept result is its caller's, found only by the id it was given.
    fn resources(&self) -> Result<Vec<ResourceInfo>, ResourceError> {
        Ok(Vec::new())
    }

    fn read(&self, uri: &str) -> Result<Vec<ResourceContents>, ResourceError> {
        let Some(id) = id_of_uri(uri) else {
            return Err(ResourceError::NotFound(format!(
                "no resource `{uri}`: toolmux's own are toolmux://results/<id>"
            )));
        };
        match self.store.read(id) {
            Ok(kept) => Ok(vec![ResourceContents {
                uri: uri.to_string(),
                mime_type: Some(kept.mime_type.to_string()),
                text: kept.text,
            }]),
            Err(e @ (SpillError::InvalidId(_) | SpillError::NotFound(_))) => {
                Err(ResourceError::NotFound(e.to_string()))
            }
            Err(e) => Err(ResourceError::Failed(e.to_string())),
        }
    }

    fn version(&self) -> Result<u64, ResourceError> {
        Ok(0)
    }
}

/// A kept result as REST answers it.
pub fn describe_kept(kept: &crate::Spilled) -> serde_json::Value {
    json!({
        "id": kept.id,
        "mimeType": kept.mime_type,
        "expires": format_expiry(kept.expires),
        "text": kept.text,
    })
}
