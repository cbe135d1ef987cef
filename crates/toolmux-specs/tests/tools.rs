//! Each tool on small projects, with exact results: writes byte for byte, refusals, the
//! conflict guard under concurrency, validation findings with lines, tokens, relationships.

mod support;

use std::fs;
use std::path::Path;
use std::sync::{Arc, Barrier};

use serde_json::{Value, json};
use support::{call, open, try_call};
use toolmux_core::{Policy, PolicyOrigin, PolicyRules, Source, ToolAnnotations};
use toolmux_specs::{SpecsSource, TOOL_NAMES};

fn write(path: &Path, text: &str) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

const CRLF_SPEC: &str = "---\r\n# team note\r\nstatus: planned\r\ncreated: '2025-01-02'\r\nowner_team: platform\r\ntags:\r\n  - api\r\n---\r\n\r\n# Alpha\r\n\r\n## Plan\r\n\r\n- [ ] write it\r\n- [x] design it\r\n\r\n## Notes\r\n\r\nold note\r\n";

fn project() -> (tempfile::TempDir, SpecsSource) {
    let dir = tempfile::tempdir().unwrap();
    write(&dir.path().join("specs/001-alpha/README.md"), CRLF_SPEC);
    write(
        &dir.path().join("specs/002-beta/README.md"),
        "---\nstatus: draft\ncreated: 2025-02-03\n---\n\n# Beta\n\nbody\n",
    );
    let pack = open(dir.path());
    (dir, pack)
}

/// The frontmatter lines other than the timestamps and transitions an update adds.
fn without_stamps(text: &str) -> String {
    let mut out = Vec::new();
    let mut skip = false;
    for line in text.split_inclusive('\n') {
        if line.starts_with("updated_at:") || line.starts_with("created_at:") {
            continue;
        }
        if line.starts_with("transitions:") {
            skip = true;
            continue;
        }
        if skip && (line.starts_with("- ") || line.starts_with("  ")) {
            continue;
        }
        skip = false;
        out.push(line);
    }
    out.concat()
}

#[test]
fn descriptors_have_schemas_and_writes_ask_by_default() {
    let (_dir, pack) = project();
    assert_eq!(pack.id(), "specs");
    let tools = pack.tools();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, TOOL_NAMES);
    let rules = PolicyRules::default();
    for tool in &tools {
        assert_eq!(tool.input_schema["type"], "object", "{}", tool.name);
        assert_eq!(
            tool.input_schema["additionalProperties"], false,
            "{}",
            tool.name
        );
        let output = tool.output_schema.as_deref().expect("output schema");
        assert_eq!(output["type"], "object", "{}", tool.name);
        let writes = matches!(
            tool.name.as_str(),
            "spec_create" | "spec_update" | "spec_relationships"
        );
        let expected = if writes { Policy::Ask } else { Policy::Allow };
        assert_eq!(
            rules.resolve(tool),
            (expected, PolicyOrigin::Annotations),
            "{}",
            tool.name
        );
        if !writes {
            assert_eq!(tool.annotations, ToolAnnotations::read_only());
        }
    }
}

#[test]
fn spec_tokens_reads_a_named_file_only_as_the_workspace_tools_would() {
    let (dir, pack) = project();
    write(&dir.path().join("notes.md"), "hello world\n");
    write(&dir.path().join(".toolmux/state/secret.md"), "secret\n");
    let outside = dir.path().parent().unwrap().join("outside.md");
    fs::write(&outside, "outside\n").unwrap();
    std::os::unix::fs::symlink(&outside, dir.path().join("link.md")).unwrap();
    let counted = call(&pack, "spec_tokens", json!({"file": "notes.md"}));
    assert_eq!(counted["items"][0]["file"], "notes.md");
    for (file, refused) in [
        (
            "../outside.md",
            "path `../outside.md` leaves the project root",
        ),
        (
            "link.md",
            "`link.md` is a symbolic link that leads outside the project root",
        ),
        (
            ".toolmux/state/secret.md",
            "`.toolmux/state/secret.md` is inside `.toolmux/state`, toolmux's own state, which \
             the workspace tools do not read",
        ),
        ("specs", "`specs` cannot be read: not a regular file"),
    ] {
        assert_eq!(
            try_call(&pack, "spec_tokens", json!({"file": file})).unwrap_err(),
            refused,
            "{file}"
        );
    }
    fs::remove_file(outside).unwrap();
}

#[test]
fn a_specs_dir_outside_the_project_is_refused() {
    let base = tempfile::tempdir().unwrap();
    let root = base.path().join("project");
    fs::create_dir_all(base.path().join("elsewhere/specs")).unwrap();
    fs::create_dir_all(root.join(".lean-spec")).unwrap();
    std::os::unix::fs::symlink("../elsewhere/specs", root.join("specs")).unwrap();
    let outside = base.path().join("elsewhere/specs").canonicalize().unwrap();
    let refused = format!(
        "{}: the specs directory is outside the project root `{}`",
        outside.display(),
        root.canonicalize().unwrap().display()
    );
    // Through a link, a `..` in the config, and the environment's override.
    let error = SpecsSource::open_with(&root, None).err().unwrap();
    assert_eq!(error.to_string(), refused);
    fs::remove_file(root.join("specs")).unwrap();
    fs::write(
        root.join(".lean-spec/config.json"),
        r#"{"specsDir": "../elsewhere/specs"}"#,
    )
    .unwrap();
    let error = SpecsSource::open_with(&root, None).err().unwrap();
    assert_eq!(error.to_string(), refused);
    let error = SpecsSource::open_with(&root, Some(outside.to_str().unwrap()))
        .err()
        .unwrap();
    assert_eq!(error.to_string(), refused);
}

#[test]
fn open_finds_no_specs_dir_as_none() {
    let dir = tempfile::tempdir().unwrap();
    assert!(SpecsSource::open_with(dir.path(), None).unwrap().is_none());
    fs::create_dir_all(dir.path().join("docs/specs")).unwrap();
    let pack = SpecsSource::open_with(dir.path(), None).unwrap().unwrap();
    assert_eq!(
        pack.specs_dir(),
        dir.path().join("docs/specs").canonicalize().unwrap()
    );
    assert_eq!(call(&pack, "spec_list", json!({}))["count"], 0);
}

#[test]
fn update_edits_only_what_it_is_asked_and_keeps_crlf() {
    let (dir, pack) = project();
    let view = call(&pack, "spec_view", json!({"spec": "1"}));
    assert_eq!(view["frontmatter"]["owner_team"], "platform");
    let hash = view["contentHash"].as_str().unwrap().to_string();
    let updated = call(
        &pack,
        "spec_update",
        json!({
            "spec": "alpha",
            "status": "in_progress",
            "priority": "urgent",
            "assignee": "Carol Smith",
            "addTags": ["needs review"],
            "replacements": [{"oldString": "old note", "newString": "new note\nsecond line"}],
            "sectionUpdates": [{"section": "notes", "content": "appended", "mode": "append"}],
            "checklistToggles": [{"itemText": "WRITE IT", "checked": true}],
            "expectedContentHash": hash,
        }),
    );
    assert_eq!(updated["previousContentHash"], hash);
    let text = fs::read_to_string(dir.path().join("specs/001-alpha/README.md")).unwrap();
    assert_eq!(
        without_stamps(&text),
        "---\r\n# team note\r\nstatus: in-progress\r\ncreated: '2025-01-02'\r\nowner_team: platform\r\ntags:\r\n  - api\r\n  - needs review\r\npriority: critical\r\nassignee: Carol Smith\r\n---\r\n\r\n# Alpha\r\n\r\n## Plan\r\n\r\n- [x] write it\r\n- [x] design it\r\n\r\n## Notes\r\n\r\nnew note\r\nsecond line\r\n\r\nappended\r\n\r\n"
    );
    // One transition, and both timestamps, in RFC 3339.
    assert!(
        text.contains("transitions:\r\n- status: in-progress\r\n  at: "),
        "{text}"
    );
    let view = call(&pack, "spec_view", json!({"spec": "001"}));
    assert_eq!(view["status"], "in-progress");
    assert_eq!(view["priority"], "critical");
    assert_eq!(view["contentHash"], updated["contentHash"]);
    assert!(
        view["frontmatter"]["updated_at"]
            .as_str()
            .unwrap()
            .ends_with('Z')
    );
    // The old hash no longer fits.
    let err = try_call(
        &pack,
        "spec_update",
        json!({"spec": "1", "priority": "low", "expectedContentHash": hash}),
    )
    .unwrap_err();
    let current = call(&pack, "spec_view", json!({"spec": "1"}))["contentHash"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        err,
        format!(
            "content hash mismatch for 001-alpha: expected {hash}, current {current}; the spec \
             was modified since you read it, view it again and redo the change"
        )
    );
}

/// What a spec update says of `tags: [unclosed` on line 4 (the error LeanSpec's YAML parser
/// gives, with the file and the line).
const BROKEN_FRONTMATTER: &str = "004-broken/README.md:5: invalid YAML in frontmatter: did not \
     find expected ',' or ']' at line 5 column 1, while parsing a flow sequence at line 4 column 7";

#[test]
fn completion_and_draft_guards_refuse_unless_forced() {
    let (dir, pack) = project();
    write(
        &dir.path().join("specs/003-child/README.md"),
        "---\nstatus: planned\ncreated: 2025-01-01\nparent: 001-alpha\n---\n# Child\n",
    );
    let err = try_call(
        &pack,
        "spec_update",
        json!({"spec": "1", "status": "complete"}),
    )
    .unwrap_err();
    assert_eq!(
        err,
        "001-alpha has 1 unchecked checklist item(s): line 7: write it; check them or set force"
    );
    let err = try_call(
        &pack,
        "spec_update",
        json!({"spec": "1", "status": "complete", "checklistToggles": [{"itemText": "write it", "checked": true}]}),
    )
    .unwrap_err();
    assert_eq!(
        err,
        "001-alpha has incomplete child spec(s): 003-child (planned); complete them or set force"
    );
    let err = try_call(
        &pack,
        "spec_update",
        json!({"spec": "2", "status": "in-progress"}),
    )
    .unwrap_err();
    assert_eq!(
        err,
        "cannot skip the `planned` stage from draft for 002-beta; set force to override"
    );
    call(
        &pack,
        "spec_update",
        json!({"spec": "2", "status": "complete", "force": true}),
    );
    let text = fs::read_to_string(dir.path().join("specs/002-beta/README.md")).unwrap();
    assert!(text.contains("\ncompleted_at: "), "{text}");
    assert_eq!(
        without_stamps(&text).replace(&completed_line(&text), ""),
        "---\nstatus: complete\ncreated: 2025-02-03\n---\n\n# Beta\n\nbody\n"
    );
    // Nothing was written by the refused calls.
    assert_eq!(
        fs::read_to_string(dir.path().join("specs/001-alpha/README.md")).unwrap(),
        CRLF_SPEC
    );
}

fn completed_line(text: &str) -> String {
    text.lines()
        .find(|l| l.starts_with("completed_at:"))
        .map(|l| format!("{l}\n"))
        .unwrap_or_default()
}

#[test]
fn malformed_frontmatter_is_refused_with_file_and_line_and_never_written() {
    let (dir, pack) = project();
    let bad = "---\nstatus: planned\ncreated: 2025-01-02\ntags: [unclosed\n---\n\n# Broken\n";
    let path = dir.path().join("specs/004-broken/README.md");
    write(&path, bad);
    let err = try_call(
        &pack,
        "spec_update",
        json!({"spec": "4", "priority": "low"}),
    )
    .unwrap_err();
    assert_eq!(err, BROKEN_FRONTMATTER);
    assert_eq!(fs::read_to_string(&path).unwrap(), bad);
    let report = call(&pack, "spec_validate", json!({"spec": "004-broken"}));
    assert_eq!(report["specs"][0]["issues"][0]["line"], 5);
    assert_eq!(report["specs"][0]["issues"][0]["rule"], "frontmatter");
}

#[test]
fn two_updates_with_the_same_hash_exactly_one_wins() {
    for round in 0..20 {
        let (dir, pack) = project();
        let hash = call(&pack, "spec_view", json!({"spec": "1"}))["contentHash"]
            .as_str()
            .unwrap()
            .to_string();
        let barrier = Arc::new(Barrier::new(2));
        let handles: Vec<_> = ["first", "second"]
            .into_iter()
            .map(|who| {
                let pack = pack.clone();
                let hash = hash.clone();
                let barrier = Arc::clone(&barrier);
                std::thread::spawn(move || {
                    barrier.wait();
                    try_call(
                        &pack,
                        "spec_update",
                        json!({
                            "spec": "1",
                            "replacements": [{"oldString": "old note", "newString": format!("{who} note")}],
                            "expectedContentHash": hash,
                        }),
                    )
                })
            })
            .collect();
        let results: Vec<Result<Value, String>> =
            handles.into_iter().map(|h| h.join().unwrap()).collect();
        let wins = results.iter().filter(|r| r.is_ok()).count();
        assert_eq!(wins, 1, "round {round}: {results:?}");
        let loss = results.iter().find_map(|r| r.clone().err()).unwrap();
        assert!(
            loss.starts_with("content hash mismatch for 001-alpha"),
            "{loss}"
        );
        let text = fs::read_to_string(dir.path().join("specs/001-alpha/README.md")).unwrap();
        let winners = ["first note", "second note"]
            .iter()
            .filter(|n| text.contains(*n))
            .count();
        assert_eq!(winners, 1, "{text}");
        assert!(text.ends_with("note\r\n"), "never half-written: {text}");
        // No temporary file is left behind.
        assert_eq!(
            fs::read_dir(dir.path().join("specs/001-alpha"))
                .unwrap()
                .count(),
            1
        );
    }
}

#[test]
fn create_numbers_fills_the_template_and_links() {
    let (dir, pack) = project();
    let created = call(
        &pack,
        "spec_create",
        json!({"name": "007-search-index", "tags": ["api", "needs review"], "parent": "1", "dependsOn": ["beta"]}),
    );
    assert_eq!(created["id"], "003-search-index");
    assert_eq!(created["title"], "Search Index");
    assert_eq!(created["status"], "planned");
    assert_eq!(created["priority"], "medium");
    let text = fs::read_to_string(dir.path().join("specs/003-search-index/README.md")).unwrap();
    let (head, body) = text.split_once("---\n\n").unwrap();
    let today = chrono::Utc::now().format("%Y-%m-%d").to_string();
    assert!(
        head.starts_with(&format!(
            "---\nstatus: planned\ncreated: '{today}'\npriority: medium\ntags: [api, needs review]\nparent: 001-alpha\ndepends_on:\n  - 002-beta\ncreated_at: "
        )),
        "{head}"
    );
    assert!(
        body.starts_with("# Search Index\n\n## Overview\n"),
        "{body}"
    );
    for section in ["## Design", "## Plan", "## Test", "## Notes"] {
        assert!(body.contains(section), "{section}");
    }
    let view = call(&pack, "spec_view", json!({"spec": "search"}));
    assert_eq!(view["parent"], "001-alpha");
    assert_eq!(
        call(&pack, "spec_view", json!({"spec": "1"}))["children"],
        json!(["003-search-index"])
    );
    assert_eq!(
        call(&pack, "spec_view", json!({"spec": "2"}))["requiredBy"],
        json!(["003-search-index"])
    );
    let err = try_call(&pack, "spec_create", json!({"name": "Bad Name"})).unwrap_err();
    assert_eq!(
        err,
        "invalid spec name `Bad Name`: use kebab-case (lowercase letters, digits and `-`)"
    );
}

#[test]
fn relationships_add_remove_and_refuse_cycles() {
    let (dir, pack) = project();
    write(
        &dir.path().join("specs/003-gamma/README.md"),
        "---\nstatus: planned\ncreated: 2025-01-01\ndepends_on: 002-beta\n---\n# Gamma\n",
    );
    call(
        &pack,
        "spec_relationships",
        json!({"spec": "2", "action": "add", "type": "depends_on", "target": "1"}),
    );
    let err = try_call(
        &pack,
        "spec_relationships",
        json!({"spec": "1", "action": "add", "type": "depends_on", "target": "3"}),
    )
    .unwrap_err();
    assert_eq!(
        err,
        "001-alpha depending on 003-gamma would create a cycle: 001-alpha → 003-gamma → 002-beta → 001-alpha"
    );
    call(
        &pack,
        "spec_relationships",
        json!({"spec": "1", "action": "add", "type": "child", "target": "3"}),
    );
    let err = try_call(
        &pack,
        "spec_relationships",
        json!({"spec": "1", "action": "add", "type": "parent", "target": "3"}),
    )
    .unwrap_err();
    assert_eq!(
        err,
        "making 003-gamma the parent of 001-alpha would create a cycle: 003-gamma → 001-alpha"
    );
    let view = call(&pack, "spec_relationships", json!({"spec": "1"}));
    assert_eq!(
        view,
        json!({"id": "001-alpha", "action": "view", "parent": null, "children": ["003-gamma"], "dependsOn": [], "requiredBy": ["002-beta"]})
    );
    call(
        &pack,
        "spec_relationships",
        json!({"spec": "3", "action": "remove", "type": "depends_on", "target": "2"}),
    );
    let gamma = fs::read_to_string(dir.path().join("specs/003-gamma/README.md")).unwrap();
    assert_eq!(
        without_stamps(&gamma),
        "---\nstatus: planned\ncreated: 2025-01-01\nparent: 001-alpha\n---\n# Gamma\n"
    );
}

#[test]
fn validate_reports_leanspec_rules_with_lines() {
    let dir = tempfile::tempdir().unwrap();
    let mut long = String::from(
        "---\nstatus: planned\ncreated: 2025/01/02\ntags: [ok, has space]\ndepends_on: [005-self]\n---\n\n# Self\n\n## Empty\n\n## Full\n\ntext\n\n# Second\n",
    );
    for i in 0..210 {
        long.push_str(&format!("line {i}\n"));
    }
    write(&dir.path().join("specs/005-self/README.md"), &long);
    let pack = open(dir.path());
    let report = call(&pack, "spec_validate", json!({}));
    let issues: Vec<(String, u64, String)> = report["specs"][0]["issues"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["severity"].as_str().unwrap().to_string(),
                i["line"].as_u64().unwrap(),
                i["rule"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let expect = |s: &str, l: u64, r: &str| (s.to_string(), l, r.to_string());
    assert_eq!(
        issues,
        [
            expect("error", 3, "created-format"),
            expect("warning", 4, "tag-spaces"),
            expect("error", 5, "depends-on-self"),
            expect("warning", 8, "warn-lines"),
            expect("warning", 10, "empty-section"),
            expect("warning", 16, "multiple-h1"),
        ]
    );
    assert_eq!(report["errors"], 2);
    assert_eq!(report["warnings"], 4);
}

#[test]
fn tokens_count_specs_and_confined_files() {
    let (dir, pack) = project();
    write(&dir.path().join("notes.txt"), "hello world");
    let file = call(&pack, "spec_tokens", json!({"file": "notes.txt"}));
    assert_eq!(file["total"], 2);
    assert_eq!(file["items"][0]["rating"], "optimal");
    let err = try_call(&pack, "spec_tokens", json!({"file": "../outside"})).unwrap_err();
    assert_eq!(err, "path `../outside` leaves the project root");
    let spec = call(&pack, "spec_tokens", json!({"spec": "2"}));
    assert_eq!(spec["items"][0]["tokens"], spec["items"][0]["readmeTokens"]);
    assert_eq!(spec["items"][0]["id"], "002-beta");
}

#[test]
fn the_cache_sees_changes_and_the_version_moves() {
    let (dir, pack) = project();
    let v1 = pack.version().unwrap();
    assert_eq!(pack.version().unwrap(), v1, "nothing changed");
    let s1 = pack.snapshot().unwrap();
    assert!(
        Arc::ptr_eq(&s1, &pack.snapshot().unwrap()),
        "same snapshot reused"
    );
    write(&dir.path().join("specs/001-alpha/DESIGN.md"), "# Design\n");
    let v2 = pack.version().unwrap();
    assert!(v2 > v1);
    assert_eq!(
        call(&pack, "spec_view", json!({"spec": "1"}))["subSpecs"],
        json!([{"name": "DESIGN.md", "size": 9}])
    );
    let err = try_call(&pack, "spec_view", json!({"spec": "a"})).unwrap_err();
    assert_eq!(err, "`a` is ambiguous: it matches 001-alpha, 002-beta");
    assert_eq!(
        try_call(&pack, "spec_view", json!({"spec": "zzz"})).unwrap_err(),
        "spec not found: `zzz`"
    );
}

#[test]
fn several_tags_match_all_by_default_and_any_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    for (folder, tags) in [
        ("001-api", "[api]"),
        ("002-both", "[api, security]"),
        ("003-security", "[security]"),
    ] {
        write(
            &dir.path().join(format!("specs/{folder}/README.md")),
            &format!("---\nstatus: planned\ncreated: '2025-01-02'\ntags: {tags}\n---\n\n# T\n"),
        );
    }
    let pack = open(dir.path());
    let ids = |args: Value| -> Vec<String> {
        call(&pack, "spec_list", args)["specs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["id"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(ids(json!({"tags": ["api", "security"]})), ["002-both"]);
    assert_eq!(
        ids(json!({"tags": ["api", "security"], "tagMatch": "any"})),
        ["001-api", "002-both", "003-security"]
    );
    assert_eq!(
        ids(json!({"tags": ["security"], "tagMatch": "all"})),
        ["002-both", "003-security"]
    );
}

#[test]
fn refusals_carry_the_kind_a_channel_maps_to_its_status() {
    let (_dir, pack) = project();
    let kind = |tool: &str, args: Value| {
        let Value::Object(args) = args else {
            panic!("arguments must be an object")
        };
        let result = pack.run(tool, &args).expect("known tool");
        assert!(result.is_error, "{tool} should fail");
        result.error_kind()
    };
    use toolmux_core::ToolErrorKind::{Conflict, Invalid, NotFound};
    assert_eq!(kind("spec_view", json!({"spec": "999"})), Some(NotFound));
    assert_eq!(
        kind(
            "spec_update",
            json!({"spec": "1", "priority": "low", "expectedContentHash": "0".repeat(64)})
        ),
        Some(Conflict)
    );
    assert_eq!(kind("spec_update", json!({"spec": "1"})), Some(Invalid));
    assert_eq!(
        kind("spec_search", json!({"query": "auth AND"})),
        Some(Invalid)
    );
}

#[test]
fn concurrent_creates_never_share_a_number() {
    let (dir, pack) = project();
    let threads = 8;
    let barrier = Arc::new(Barrier::new(threads));
    let handles: Vec<_> = (0..threads)
        .map(|i| {
            let pack = pack.clone();
            let barrier = Arc::clone(&barrier);
            std::thread::spawn(move || {
                barrier.wait();
                call(&pack, "spec_create", json!({"name": format!("racer-{i}")}))["number"]
                    .as_u64()
                    .unwrap()
            })
        })
        .collect();
    let mut numbers: Vec<u64> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    numbers.sort_unstable();
    assert_eq!(numbers, (3..3 + threads as u64).collect::<Vec<_>>());
    let folders = fs::read_dir(dir.path().join("specs")).unwrap().count();
    assert_eq!(folders, 2 + threads);
}

#[test]
fn concurrent_links_cannot_close_a_cycle_together() {
    for _ in 0..10 {
        let (_dir, pack) = project();
        // 001 → 002 and 002 → 001 are each fine alone; together they are a cycle.
        let barrier = Arc::new(Barrier::new(2));
        let handles: Vec<_> = [("1", "2"), ("2", "1")]
            .into_iter()
            .map(|(spec, target)| {
                let pack = pack.clone();
                let barrier = Arc::clone(&barrier);
                std::thread::spawn(move || {
                    barrier.wait();
                    try_call(
                        &pack,
                        "spec_relationships",
                        json!({"spec": spec, "action": "add", "type": "depends_on", "target": target}),
                    )
                })
            })
            .collect();
        let outcomes: Vec<Result<Value, String>> =
            handles.into_iter().map(|h| h.join().unwrap()).collect();
        assert_eq!(
            outcomes.iter().filter(|o| o.is_ok()).count(),
            1,
            "{outcomes:?}"
        );
        let refused = outcomes.iter().find_map(|o| o.as_ref().err()).unwrap();
        assert!(refused.contains("cycle"), "{refused}");
    }
}

#[test]
fn two_folders_with_one_id_are_found_as_the_first_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let spec =
        |title: &str| format!("---\nstatus: planned\ncreated: '2025-01-02'\n---\n\n# {title}\n");
    write(&dir.path().join("specs/001-alpha/README.md"), &spec("Live"));
    write(
        &dir.path().join("specs/archived/001-alpha/README.md"),
        &spec("Archived copy"),
    );
    let pack = open(dir.path());
    let snap = pack.snapshot().unwrap();
    let first = snap.specs.iter().find(|s| s.id == "001-alpha").unwrap();
    assert_eq!(snap.get("001-alpha").unwrap().rel_file, first.rel_file);
}

#[test]
fn a_template_is_read_beneath_the_project_only() {
    let (dir, pack) = project();
    let outside = tempfile::tempdir().unwrap();
    fs::write(outside.path().join("secret.md"), "# Secret\n").unwrap();
    fs::create_dir_all(dir.path().join(".lean-spec/templates")).unwrap();
    std::os::unix::fs::symlink(
        outside.path().join("secret.md"),
        dir.path().join(".lean-spec/templates/linked.md"),
    )
    .unwrap();
    let err = try_call(
        &pack,
        "spec_create",
        json!({"name": "leak", "template": "linked.md"}),
    )
    .unwrap_err();
    assert_eq!(
        err,
        "template `linked.md`: `.lean-spec/templates/linked.md` is a symbolic link that leads outside the project root"
    );
    assert!(!dir.path().join("specs/003-leak").exists());
    let missing = try_call(
        &pack,
        "spec_create",
        json!({"name": "none", "template": "nope.md"}),
    )
    .unwrap_err();
    assert_eq!(
        missing,
        "template `nope.md`: `.lean-spec/templates/nope.md` does not exist"
    );
    assert_eq!(
        try_call(
            &pack,
            "spec_create",
            json!({"name": "up", "template": "../x.md"})
        )
        .unwrap_err(),
        "invalid template `../x.md`"
    );
}

/// The findings of one spec as (severity, rule, line, message).
fn findings(report: &Value, id: &str) -> Vec<(String, String, u64, String)> {
    let spec = report["specs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == id)
        .unwrap_or_else(|| panic!("{id} in {report}"));
    spec["issues"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["severity"].as_str().unwrap().to_string(),
                i["rule"].as_str().unwrap().to_string(),
                i["line"].as_u64().unwrap(),
                i["message"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn validate_applies_the_configured_limits_and_the_remaining_rules_with_exact_messages() {
    let dir = tempfile::tempdir().unwrap();
    write(
        &dir.path().join(".lean-spec/config.json"),
        r#"{"validation": {"maxLines": 6, "warnLines": 4, "maxTokens": 60, "warnTokens": 25}}"#,
    );
    // No title, an empty dependency, 7 body lines: over maxLines.
    write(
        &dir.path().join("specs/001-untitled/README.md"),
        "---\nstatus: planned\ncreated: 2025-01-02\ndepends_on: ['']\n---\n\nno heading here\n\n## Plan\n\nstep\n\nmore\n",
    );
    // Five body lines (over warnLines only) and more tokens than warnTokens, fewer than maxTokens.
    write(
        &dir.path().join("specs/002-wordy/README.md"),
        "---\nstatus: planned\ncreated: 2025-01-02\n---\n\n# Wordy\none two three four five six seven\n## Plan\neight nine ten eleven twelve\nthirteen fourteen\n",
    );
    // Far over maxTokens, in the legacy archived folder.
    let mut big = String::from("---\nstatus: complete\ncreated: 2025-01-02\n---\n\n# Big\n\n");
    big.push_str(&"lorem ipsum dolor sit amet ".repeat(20));
    big.push('\n');
    write(&dir.path().join("specs/archived/003-big/README.md"), &big);
    let pack = open(dir.path());
    let report = call(&pack, "spec_validate", json!({}));
    let tokens = |id: &str| {
        call(&pack, "spec_tokens", json!({"spec": id}))["items"][0]["readmeTokens"]
            .as_u64()
            .unwrap()
    };
    let f = |s: &str, r: &str, l: u64, m: &str| (s.to_string(), r.to_string(), l, m.to_string());

    let untitled = tokens("001");
    assert!(untitled > 25 && untitled <= 60, "{untitled}");
    assert_eq!(
        findings(&report, "001-untitled"),
        [
            f(
                "warning",
                "warn-tokens",
                1,
                &format!("the spec has {untitled} tokens, over 25 (maximum 60)")
            ),
            f(
                "error",
                "depends-on-empty",
                4,
                "`depends_on` has an empty entry"
            ),
            f("error", "no-title", 7, "the spec has no `# ` title heading"),
            f(
                "error",
                "max-lines",
                7,
                "the spec has 7 lines, over the maximum of 6; split it"
            ),
        ]
    );
    let wordy = tokens("002");
    assert!(wordy > 25 && wordy <= 60, "{wordy}");
    assert_eq!(
        findings(&report, "002-wordy"),
        [
            f(
                "warning",
                "warn-tokens",
                1,
                &format!("the spec has {wordy} tokens, over 25 (maximum 60)")
            ),
            f(
                "warning",
                "warn-lines",
                6,
                "the spec has 5 lines, over 4 (maximum 6); consider splitting it"
            ),
        ]
    );
    let big = tokens("003");
    assert!(big > 60, "{big}");
    assert_eq!(
        findings(&report, "003-big"),
        [
            f(
                "error",
                "max-tokens",
                1,
                &format!("the spec has {big} tokens, over the maximum of 60; split it")
            ),
            f(
                "warning",
                "legacy-archived",
                1,
                "the spec is in the legacy `archived/` folder; set `status: archived` instead"
            ),
        ]
    );
    assert_eq!(report["valid"], false);
    assert_eq!(report["errors"], 4);
    assert_eq!(report["warnings"], 4);
}

#[test]
fn token_ratings_cover_every_band_on_real_files() {
    let dir = tempfile::tempdir().unwrap();
    write(
        &dir.path().join("specs/001-a/README.md"),
        "---\nstatus: planned\ncreated: 2025-01-02\n---\n\n# A\n",
    );
    // "word " is one cl100k token per repetition, so these land in the warning and excessive bands.
    write(&dir.path().join("warning.md"), &"word ".repeat(4000));
    write(&dir.path().join("excessive.md"), &"word ".repeat(6000));
    let pack = open(dir.path());
    let rating = |file: &str| {
        let out = call(&pack, "spec_tokens", json!({"file": file}));
        (
            out["items"][0]["tokens"].as_u64().unwrap(),
            out["items"][0]["rating"].as_str().unwrap().to_string(),
        )
    };
    let (n, r) = rating("warning.md");
    assert!((3501..=5000).contains(&n), "{n}");
    assert_eq!(r, "warning");
    let (n, r) = rating("excessive.md");
    assert!(n > 5000, "{n}");
    assert_eq!(r, "excessive");
}

/// LeanSpec's written forms are one table: `spec_update`'s schema offers every alias the
/// parser takes (it had left out `inprogress`, so a model's `inprogress` failed the schema),
/// and both writers name the canonical values when refusing one.
#[test]
fn every_alias_leanspec_accepts_is_offered_and_refusals_name_the_canonical_values() {
    let (_dir, pack) = project();
    let tools = pack.tools();
    let update = tools
        .iter()
        .find(|t| t.name == "spec_update")
        .expect("spec_update");
    let offered = |field: &str| -> Vec<String> {
        update.input_schema["properties"][field]["enum"]
            .as_array()
            .unwrap_or_else(|| panic!("{field} has an enum"))
            .iter()
            .map(|v| v.as_str().expect("a string").to_string())
            .collect()
    };
    assert_eq!(
        offered("status"),
        [
            "draft",
            "planned",
            "in-progress",
            "complete",
            "archived",
            "in_progress",
            "inprogress",
            "completed"
        ]
    );
    assert_eq!(
        offered("priority"),
        ["low", "medium", "high", "critical", "med", "urgent"]
    );
    let updated = call(
        &pack,
        "spec_update",
        json!({"spec": "1", "status": "InProgress", "priority": "MED"}),
    );
    assert_eq!(
        updated["changed"],
        json!(["status: planned → in-progress", "priority: medium"]),
        "{updated}"
    );
    let refusal = |tool: &str, args: Value| {
        let Value::Object(args) = args else {
            panic!("arguments must be an object")
        };
        let result = pack.run(tool, &args).expect("known tool");
        assert!(result.is_error, "{tool} should fail");
        result.text_content()
    };
    assert_eq!(
        refusal("spec_update", json!({"spec": "1", "status": "doing"})),
        "invalid status `doing` (valid: draft, planned, in-progress, complete, archived)"
    );
    assert_eq!(
        refusal(
            "spec_create",
            json!({"name": "gamma", "priority": "whenever"})
        ),
        "invalid priority `whenever` (valid: low, medium, high, critical)"
    );
}
