//! `/api/skills`: the Agent Skills over GET. Each route is a call of its `skills` tool through
//! the pipeline ([`ToolRoute`]), answering with the tool's structured result.

use toolmux_http::OpenApiRouter;

use crate::ApiState;
use crate::tool_routes::{Takes, ToolRoute, Verb};

pub(crate) fn routes() -> OpenApiRouter<ApiState> {
    crate::tool_routes::router(TOOL_ROUTES)
}

/// The routes of this module, each its tool's arguments as its query; a skill the path names
/// is its `name`.
pub(crate) const TOOL_ROUTES: &[ToolRoute] = &[
    ToolRoute::new(
        Verb::Get,
        "/api/skills",
        "skill_list",
        Takes::Query,
        "skills",
        "Every skill's name, description, allowed tools and folder, the `SKILL.md` files that \
         break the format (with file, line and field), and the skills hidden by one of the same \
         name (the `skill_list` tool).",
        "`skill_list`'s structured result: `count`, `skills`, `invalid`, `shadowed`",
    ),
    ToolRoute::new(
        Verb::Get,
        "/api/skills/{name}",
        "skill_load",
        Takes::Query,
        "skills",
        "One skill: its instructions and the files it bundles (the `skill_load` tool).",
        "`skill_load`'s structured result",
    )
    .path_gives(&["name"]),
];
