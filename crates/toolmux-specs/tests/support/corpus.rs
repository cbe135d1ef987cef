//! The comparison corpus: 70 specs in LeanSpec's layout that exercise every rule the pack
//! reads — statuses and their aliases, priorities and theirs, tags as lists, JSON strings and
//! comma strings (some with spaces), `depends_on` in all three shapes, parents given by full
//! name or number, nested child folders, sub-spec files, the legacy `archived/` folder, unknown
//! keys, CRLF files, specs over the line and token limits, a duplicate number, folders that are
//! not specs, and one spec too deep to be found. It is generated rather than committed so CRLF
//! line endings survive any git setting.
//!
//! `write_malformed` adds one spec whose frontmatter does not parse: LeanSpec then refuses to
//! list anything, so it is kept apart from the main corpus.

#![allow(dead_code)]

use std::fs;
use std::path::Path;

/// Title topics; words in them recur across specs so search has ties and partial matches.
const TOPICS: [&str; 12] = [
    "User Authentication",
    "API Gateway",
    "Search Index",
    "Token Refresh",
    "Cache Layer",
    "CLI Refactor",
    "Frontend Polish",
    "Database Migration",
    "Rate Limiting",
    "Audit Logging",
    "Search Ranking",
    "Auth Tokens",
];

/// Body vocabulary.
const WORDS: [&str; 16] = [
    "login",
    "session",
    "latency",
    "index",
    "refresh",
    "gateway",
    "schema",
    "migration",
    "throttle",
    "audit",
    "ranking",
    "cache",
    "security",
    "parser",
    "dashboard",
    "webhook",
];

/// Statuses as written, aliases and case included.
const STATUSES: [&str; 9] = [
    "planned",
    "draft",
    "in-progress",
    "complete",
    "in_progress",
    "completed",
    "inprogress",
    "Planned",
    "archived",
];

/// Priorities as written; `None` leaves the key out.
const PRIORITIES: [Option<&str>; 7] = [
    Some("high"),
    Some("low"),
    Some("medium"),
    Some("critical"),
    Some("med"),
    Some("urgent"),
    None,
];

const TAG_POOL: [&str; 8] = [
    "api",
    "security",
    "ui",
    "backend",
    "user experience",
    "performance",
    "search",
    "data model",
];

fn slug(text: &str) -> String {
    text.to_ascii_lowercase().replace(' ', "-")
}

/// The folder name of generated spec `i` (1..=60).
pub fn spec_id(i: usize) -> String {
    let topic = TOPICS[i % TOPICS.len()];
    format!("{i:03}-{}-{}", slug(topic), WORDS[i % WORDS.len()])
}

fn tags_yaml(i: usize) -> Option<String> {
    let a = TAG_POOL[i % TAG_POOL.len()];
    let b = TAG_POOL[(i * 3 + 1) % TAG_POOL.len()];
    match i % 6 {
        0 => Some(format!("tags:\n  - {a}\n  - {b}\n")),
        1 => Some(format!("tags: [{a}, {b}]\n")),
        2 => Some(format!("tags: '[\"{a}\", \"{b}\"]'\n")),
        3 => Some(format!("tags: \"{a}, {b}\"\n")),
        4 => Some(format!("tags:\n- {a}\n")),
        _ => None,
    }
}

fn depends_yaml(i: usize) -> Option<String> {
    if i < 3 {
        return None;
    }
    let prev = spec_id(i - 1);
    let prev2 = spec_id(i - 2);
    if i.is_multiple_of(5) {
        Some(format!("depends_on:\n  - {prev}\n"))
    } else if i.is_multiple_of(7) {
        Some(format!("depends_on: '[\"{prev}\", \"{prev2}\"]'\n"))
    } else if i.is_multiple_of(11) {
        Some(format!("depends_on: {prev}, {prev2}\n"))
    } else if i == 13 {
        Some("depends_on: [999-missing-spec]\n".to_string())
    } else {
        None
    }
}

fn created(i: usize) -> String {
    let year = if i.is_multiple_of(3) { 2024 } else { 2025 };
    let month = i % 12 + 1;
    let day = (i * 7) % 28 + 1;
    format!("{year}-{month:02}-{day:02}")
}

fn body(i: usize, title: &str) -> String {
    let w1 = WORDS[i % WORDS.len()];
    let w2 = WORDS[(i * 5 + 3) % WORDS.len()];
    let w3 = WORDS[(i * 11 + 7) % WORDS.len()];
    let mut out = format!("# {title}\n\n## Overview\n\n");
    out.push_str(&format!(
        "This spec covers the {w1} work and the {w2} path. The {w1} step matters.\n"
    ));
    if i.is_multiple_of(4) {
        out.push_str("Users need token refresh without a new login.\n");
    }
    if i % 6 == 1 {
        out.push_str(&format!("Mentions {w3} {w3} {w3} {w3} {w3} {w3} times.\n"));
    }
    out.push_str("\n## Design\n\n");
    out.push_str(&format!("Keep the {w3} module small.\n"));
    out.push_str("\n## Plan\n\n");
    if i.is_multiple_of(3) {
        out.push_str("- [x] write the parser\n- [x] add tests\n");
    } else {
        out.push_str("- [x] write the parser\n- [ ] add tests\n");
    }
    out.push_str("\n## Test\n\nRun the suite.\n");
    out
}

/// Writes the corpus under `root/specs`.
pub fn write_corpus(root: &Path) {
    let specs = root.join("specs");
    fs::create_dir_all(&specs).unwrap();
    // Not specs: the index file and a folder that does not start with a digit.
    write(&specs.join("README.md"), "# Specs index\n");
    write(
        &specs.join("notes/README.md"),
        "---\nstatus: planned\ncreated: 2025-01-01\n---\n# Notes\n",
    );
    for i in 1..=60 {
        let id = spec_id(i);
        let title = format!("{} {}", TOPICS[i % TOPICS.len()], capitalise(WORDS[i % 16]));
        let mut fm = String::from("---\n");
        fm.push_str(&format!("status: {}\n", STATUSES[i % STATUSES.len()]));
        fm.push_str(&format!("created: '{}'\n", created(i)));
        if let Some(p) = PRIORITIES[i % PRIORITIES.len()] {
            fm.push_str(&format!("priority: {p}\n"));
        }
        if let Some(tags) = tags_yaml(i) {
            fm.push_str(&tags);
        }
        if let Some(deps) = depends_yaml(i) {
            fm.push_str(&deps);
        }
        match i % 4 {
            0 => fm.push_str("assignee: alice\n"),
            1 if i % 8 == 1 => fm.push_str("assignee: Carol Smith\n"),
            1 => fm.push_str("assignee: bob\n"),
            _ => {}
        }
        // Children of 020 (by full name) and of 040 (by number, which LeanSpec resolves).
        if (21..=24).contains(&i) {
            fm.push_str(&format!("parent: {}\n", spec_id(20)));
        }
        if (41..=43).contains(&i) {
            fm.push_str("parent: '040'\n");
        }
        if i % 8 == 0 {
            fm.push_str("owner_team: platform\nnested_custom:\n  level: 2\n  flags: [a, b]\n");
        }
        if i % 9 == 2 {
            fm.push_str(
                "created_at: 2025-03-01T10:00:00Z\ntransitions:\n- status: planned\n  at: 2025-03-01T10:00:00Z\n",
            );
        }
        fm.push_str("---\n\n");
        let mut text = fm + &body(i, &title);
        if i == 17 {
            // Over the line limit (400) and the warning (200).
            for n in 0..450 {
                text.push_str(&format!("- line {n} about the {} plan\n", WORDS[n % 16]));
            }
        }
        if i == 29 {
            // Over the token limit: ~6,000+ tokens of varied words.
            for n in 0..1200 {
                text.push_str(&format!(
                    "{} {} {} {} {}. ",
                    WORDS[n % 16],
                    WORDS[(n * 3) % 16],
                    n,
                    WORDS[(n * 7) % 16],
                    n * 13
                ));
            }
            text.push('\n');
        }
        if i % 10 == 3 {
            text = text.replace('\n', "\r\n");
        }
        write(&specs.join(&id).join("README.md"), &text);
        if i % 9 == 4 {
            write(
                &specs.join(&id).join("DESIGN.md"),
                "# Design notes\n\nThe gateway design.\n",
            );
            write(
                &specs.join(&id).join("TESTING.md"),
                "# Testing\n\nHow we test.\n",
            );
        }
    }
    // A child folder nested inside its parent's folder.
    write(
        &specs
            .join(spec_id(60))
            .join("061-nested-child-widget/README.md"),
        &format!(
            "---\nstatus: planned\ncreated: 2025-06-01\npriority: low\ntags: [ui]\nparent: {}\n---\n\n# Nested Child Widget\n\nA widget inside the dashboard.\n",
            spec_id(60)
        ),
    );
    // Legacy archived folder.
    write(
        &specs.join("archived/062-old-search-prototype/README.md"),
        "---\nstatus: archived\ncreated: 2023-05-05\npriority: low\ntags: [search]\n---\n\n# Old Search Prototype\n\nThe first search index prototype.\n",
    );
    write(
        &specs.join("archived/063-legacy-auth/README.md"),
        "---\nstatus: complete\ncreated: 2023-07-07\ntags: [security, api]\n---\n\n# Legacy Auth\n\nOld login flow with session cookies.\n",
    );
    // Duplicate number: both are listed, ordered by folder name.
    write(
        &specs.join("064-dup-b-webhook/README.md"),
        "---\nstatus: planned\ncreated: 2025-08-08\n---\n\n# Webhook Delivery B\n\nwebhook retries\n",
    );
    write(
        &specs.join("064-dup-a-webhook/README.md"),
        "---\nstatus: in-progress\ncreated: 2025-08-09\npriority: high\n---\n\n# Webhook Delivery A\n\nwebhook signing\n",
    );
    // Too deep (4 levels below specs/): never found.
    write(
        &specs.join("archived/2024/065-too-deep/README.md"),
        "---\nstatus: planned\ncreated: 2024-01-01\n---\n\n# Too Deep\n",
    );
    // No H1: the title falls back to the folder name. Two H1s: the first wins.
    write(
        &specs.join("066-untitled-notes/README.md"),
        "---\nstatus: draft\ncreated: 2025-09-09\ntags: [docs]\n---\n\nJust notes, no heading.\n\n## Overview\n\n",
    );
    write(
        &specs.join("067-two-headings/README.md"),
        "---\nstatus: planned\ncreated: 2025-09-10\npriority: medium\n---\n\n# First Heading\n\ntext\n\n# Second Heading\n\nmore text\n",
    );
    // Unquoted date, unknown keys in odd shapes, a comment.
    write(
        &specs.join("068-unknown-keys/README.md"),
        "---\n# a comment kept as is\nstatus: complete\ncreated: 2025-10-01\ncustom_list:\n- one\n- two\nweird: {x: 1, y: [2, 3]}\nmultiline: |\n  line one\n  line two\npriority: critical\n---\n\n# Unknown Keys Kept\n\nSearch ranking tweaks.\n",
    );
    // A tag with a space inside a comma string, and a bad created date (validate errors).
    write(
        &specs.join("069-bad-date/README.md"),
        "---\nstatus: planned\ncreated: 2025/10/02\ntags: user experience, ux\n---\n\n# Bad Date Spec\n\nThe created date uses slashes.\n",
    );
    // Self dependency and an empty depends_on entry.
    write(
        &specs.join("070-self-dependency/README.md"),
        "---\nstatus: planned\ncreated: 2025-10-03\ndepends_on: [070-self-dependency]\n---\n\n# Self Dependency\n\nDepends on itself.\n",
    );
}

/// Adds a spec whose frontmatter is malformed YAML (an unclosed flow sequence on line 4).
pub fn write_malformed(root: &Path) {
    write(
        &root.join("specs/071-broken-frontmatter/README.md"),
        "---\nstatus: planned\ncreated: 2025-01-02\ntags: [unclosed\n---\n\n# Broken\n",
    );
}

fn capitalise(word: &str) -> String {
    let mut chars = word.chars();
    match chars.next() {
        Some(c) => c.to_ascii_uppercase().to_string() + chars.as_str(),
        None => String::new(),
    }
}

fn write(path: &Path, text: &str) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}
