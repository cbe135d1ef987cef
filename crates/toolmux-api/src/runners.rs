//! `/api/runners`: the coding agents toolmux can start, and their detection (the
//! `list_runners` and `detect_runners` tools, through the pipeline).

use toolmux_http::OpenApiRouter;

use crate::ApiState;
use crate::tool_routes::{Takes, ToolRoute, Verb};

pub(crate) fn routes() -> OpenApiRouter<ApiState> {
    crate::tool_routes::router(TOOL_ROUTES)
}

/// The routes of this module, each its tool's arguments as its query.
pub(crate) const TOOL_ROUTES: &[ToolRoute] = &[
    ToolRoute::new(
        Verb::Get,
        "/api/runners",
        "list_runners",
        Takes::Query,
        "sessions",
        "Every runner (built in and configured), how it is launched and what the last \
         detection found; starts nothing (the `list_runners` tool).",
        "`list_runners`' structured result: `count`, `runners`",
    ),
    ToolRoute::new(
        Verb::Post,
        "/api/runners/detect",
        "detect_runners",
        Takes::Query,
        "sessions",
        "Looks for every runner's program on PATH and reads its version (the \
         `detect_runners` tool).",
        "`detect_runners`' structured result: `count`, `runners`",
    ),
];
