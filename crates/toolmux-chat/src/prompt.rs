//! The system prompt, generated from the live catalog: which sources there are, what kinds of
//! tools they bring, and the rules for using them. Tool names and schemas travel in the
//! request's tool list; the prompt describes the surface, so it never goes stale.

use std::collections::BTreeMap;
use std::fmt::Write;

use toolmux_core::{Catalog, Policy, SourceKind};

/// What the prompt says about one source.
#[derive(Default)]
struct SourceSummary {
    tools: usize,
    read_only: usize,
    destructive: usize,
    ask: usize,
    parallel: usize,
}

fn kind_text(kind: SourceKind) -> &'static str {
    match kind {
        SourceKind::Builtin => "built into toolmux",
        SourceKind::Script => "the project's own script tools",
        SourceKind::Mcp => "an external MCP server",
    }
}

/// The system prompt for a catalog snapshot.
pub fn system_prompt(catalog: &Catalog, project: &str) -> String {
    let mut by_source: BTreeMap<&str, SourceSummary> = BTreeMap::new();
    for entry in catalog.offered() {
        let d = &entry.descriptor;
        let s = by_source.entry(d.source.as_str()).or_default();
        s.tools += 1;
        s.read_only += usize::from(d.annotations.read_only_hint == Some(true));
        s.destructive += usize::from(d.annotations.destructive_hint == Some(true));
        s.ask += usize::from(entry.policy == Policy::Ask);
        s.parallel += usize::from(d.parallel);
    }
    let mut out = String::new();
    let _ = writeln!(
        out,
        "You are the assistant of toolmux, working in the project `{project}`. You act through \
         the tools offered with this request; each comes from a source:"
    );
    for info in catalog.sources() {
        let Some(s) = by_source.get(info.id.as_str()) else {
            continue;
        };
        let _ = write!(
            out,
            "- `{}` ({}): {} tool{}",
            info.id,
            kind_text(info.kind),
            s.tools,
            if s.tools == 1 { "" } else { "s" }
        );
        let mut notes = Vec::new();
        if s.read_only > 0 {
            notes.push(format!("{} only read", s.read_only));
        }
        if s.destructive > 0 {
            notes.push(format!("{} may change or delete things", s.destructive));
        }
        if s.ask > 0 {
            notes.push(format!("{} need the person's approval", s.ask));
        }
        if !notes.is_empty() {
            let _ = write!(out, " ({})", notes.join("; "));
        }
        out.push('\n');
    }
    if by_source.is_empty() {
        out.push_str("- no tools are available right now; answer from the conversation.\n");
    }
    out.push_str(
        "\nRules:\n\
         - Prefer a tool over guessing when the answer depends on the project or the outside \
         world; quote what a tool returned rather than paraphrasing it from memory.\n\
         - Independent read-only calls may be made together in one step; calls that depend on \
         an earlier result come after it.\n\
         - A tool result marked as an error explains what went wrong: correct the arguments or \
         choose another tool; do not repeat the same failing call.\n\
         - Some calls wait for the person's approval. A denied call is final for this request: \
         say what you could not do instead of trying to get around it.\n\
         - A long result may be cut; the note at its end says where the full result is kept. \
         Narrow the call (a smaller range, a more specific pattern) if you need the rest.\n",
    );
    if catalog
        .get(crate::human_input::TOOL_NAME)
        .is_some_and(|e| e.is_offered())
    {
        out.push_str(
            "- When only the person can decide or knows a fact, ask with \
             `request_human_input` instead of assuming.\n",
        );
    }
    out.push_str("- Answer concisely, in the language the person writes in.\n");
    out
}
