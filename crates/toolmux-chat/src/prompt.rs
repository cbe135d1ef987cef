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

/// A skill as the system prompt shows it: its name and what it is for, nothing more until the
/// model loads it (progressive disclosure).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SkillSummary {
    /// The skill's name, for `skill_load`.
    pub name: String,
    /// What it does and when to use it.
    pub description: String,
}

/// The system prompt for a catalog snapshot and the skills installed now.
pub fn system_prompt(catalog: &Catalog, project: &str, skills: &[SkillSummary]) -> String {
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
        // What the source is for, so the model knows when to turn to it, not only that it is
        // there.
        if let Some(description) = info.description.as_deref().map(str::trim)
            && !description.is_empty()
        {
            let _ = write!(out, " — {}", one_line(description));
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
    // Skills are named here, with what each is for, so the model knows when one applies; their
    // instructions cost tokens only once it loads one.
    if skills_offered(catalog) && !skills.is_empty() {
        out.push_str(
            "\nSkills (instructions for particular tasks): when a request matches one, call \
             `skill_load` with its name first and follow what it says.\n",
        );
        for skill in skills {
            let _ = writeln!(out, "- `{}`: {}", skill.name, skill.description);
        }
    }
    out
}

/// `text` on one line: a server's own description may span several, which would break the
/// list.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The tool that loads a skill's instructions.
const SKILL_LOAD: &str = "skill_load";

/// Whether a model on this catalog can load skills, so that naming them is worth it.
pub(crate) fn skills_offered(catalog: &Catalog) -> bool {
    catalog.get(SKILL_LOAD).is_some_and(|e| e.is_offered())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use toolmux_core::{Hub, HubSettings, NullSink};

    use super::*;

    fn skills() -> Vec<SkillSummary> {
        vec![SkillSummary {
            name: "csv-summary".into(),
            description: "Summarise a CSV file.".into(),
        }]
    }

    #[test]
    fn each_source_is_listed_with_what_it_is_for() {
        let hub = Hub::new(HubSettings::default(), Arc::new(NullSink));
        hub.add_source(Arc::new(toolmux_skills::SkillsSource::new(
            std::path::Path::new("/nowhere"),
            Vec::new(),
        )));
        let prompt = system_prompt(&hub.catalog(), "demo", &[]);
        let line = prompt
            .lines()
            .find(|l| l.starts_with("- `skills`"))
            .unwrap_or_else(|| panic!("no line for the skills source: {prompt}"));
        assert_eq!(
            line,
            "- `skills` (built into toolmux): 2 tools (2 only read) — Loads the instructions of \
             an installed skill for a particular task."
        );
    }

    #[test]
    fn skills_are_named_with_their_descriptions_only_where_skill_load_is_offered() {
        let hub = Hub::new(HubSettings::default(), Arc::new(NullSink));
        let without = system_prompt(&hub.catalog(), "demo", &skills());
        assert!(!without.contains("Skills"), "{without}");

        hub.add_source(Arc::new(toolmux_skills::SkillsSource::new(
            std::path::Path::new("/nowhere"),
            Vec::new(),
        )));
        let with = system_prompt(&hub.catalog(), "demo", &skills());
        assert!(
            with.ends_with(
                "\nSkills (instructions for particular tasks): when a request matches one, call \
                 `skill_load` with its name first and follow what it says.\n\
                 - `csv-summary`: Summarise a CSV file.\n"
            ),
            "{with}"
        );
        // No skills installed: no section.
        let none = system_prompt(&hub.catalog(), "demo", &[]);
        assert!(!none.contains("Skills"), "{none}");
    }
}
