//! Skills a project (or a cloned repository) brings, against the chat loop: a skill must never
//! grant itself tools, and loading one must never lift another's narrowing (finding D33).
//! Driven by aimock replaying `tests/fixtures/skill_scopes.json`, over a real hub with the
//! workspace and skills packs on a temporary project.

// Not every helper of the shared test support is used here.
#[allow(dead_code)]
mod common;

use std::sync::Arc;

use common::{Harness, outputs, text};
use toolmux_core::HubSettings;
use toolmux_testkit::aimock::Aimock;
use toolmux_testkit::project::write_file;

/// This crate's own fixture, by absolute path: `Aimock::start` joins the name to the shared
/// fixtures folder, and joining an absolute path gives that path.
fn fixture() -> String {
    concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/skill_scopes.json"
    )
    .to_string()
}

#[tokio::test]
async fn a_second_skill_never_lifts_the_first_skills_narrowing() {
    let aimock = Aimock::start(&fixture());
    let harness = Harness::new(&aimock, HubSettings::default(), 25);
    let root = harness.dir.path();
    write_file(
        root,
        ".toolmux/skills/narrow/SKILL.md",
        "---\nname: narrow\ndescription: Reads files only.\nallowed-tools: file_read\n---\n\n# Narrow\n\nRead, never search.\n",
    );
    // No `allowed-tools`: on its own it narrows nothing, which must not mean "everything".
    write_file(
        root,
        ".toolmux/skills/wide/SKILL.md",
        "---\nname: wide\ndescription: Says nothing about tools.\n---\n\n# Wide\n\nDo as you like.\n",
    );
    write_file(root, "data.txt", "a line\n");
    harness
        .hub
        .add_source(Arc::new(toolmux_skills::SkillsSource::new(
            root,
            vec![toolmux_skills::SkillRoot {
                path: root.join(".toolmux/skills"),
                origin: toolmux_skills::Origin::Project,
            }],
        )));
    let (_, events) = harness
        .turn(None, "Load the narrow skill, then the wide one, and grep")
        .await;
    let outs = outputs(&events);
    assert_eq!(
        outs.iter().map(|o| o.name.as_str()).collect::<Vec<_>>(),
        ["skill_load", "grep", "skill_load", "grep"]
    );
    assert!(!outs[0].is_error, "{:?}", outs[0]);
    assert!(!outs[2].is_error, "{:?}", outs[2]);
    for grep in [&outs[1], &outs[3]] {
        assert!(grep.is_error, "grep ran: {grep:?}");
        assert_eq!(grep.error_code.as_deref(), Some("not_served"), "{grep:?}");
        assert!(
            grep.content
                .contains("the skill `narrow`, which allows only file_read"),
            "{}",
            grep.content
        );
    }
    assert_eq!(text(&events), "Both skills are loaded.");
    // After the wide skill the model is still offered only what the narrow one allows.
    let journal = aimock.journal();
    let last_offer: Vec<String> = journal
        .as_array()
        .and_then(|requests| requests.last())
        .and_then(|r| r["body"]["tools"].as_array())
        .map(|tools| {
            let mut names: Vec<String> = tools
                .iter()
                .filter_map(|t| t["function"]["name"].as_str().map(str::to_string))
                .collect();
            names.sort();
            names
        })
        .unwrap_or_default();
    assert_eq!(
        last_offer,
        [
            "file_read",
            "request_human_input",
            "skill_list",
            "skill_load"
        ]
    );
}
