//! The `skills` source on real skill folders: discovery and precedence, the two tools'
//! results, invalid skills reported and never offered, and a bundled script that runs.

use std::fs;
use std::path::Path;
use std::process::Command;

use serde_json::{Map, Value, json};
use toolmux_core::{Source, ToolErrorKind};
use toolmux_skills::{Audience, Origin, SkillRoot, SkillsSource};

fn write(path: &Path, text: &str) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

fn skill_md(name: &str, description: &str, extra: &str) -> String {
    format!(
        "---\nname: {name}\ndescription: {description}\n{extra}---\n\n# {name}\n\nSteps for {name}.\n"
    )
}

/// A project with skills in both project places and a user place; returns the source.
fn project() -> (tempfile::TempDir, SkillsSource) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        &root.join(".toolmux/skills/csv-summary/SKILL.md"),
        &skill_md(
            "csv-summary",
            "Summarise a CSV file. Use when asked about a CSV.",
            "allowed-tools: file_read run_code\n",
        ),
    );
    write(
        &root.join(".toolmux/skills/csv-summary/scripts/summary.py"),
        "import csv, sys\nrows = list(csv.reader(open(sys.argv[1])))\nprint(f\"{len(rows) - 1} rows, columns: {', '.join(rows[0])}\")\n",
    );
    write(
        &root.join(".toolmux/skills/csv-summary/references/format.md"),
        "# Format\n",
    );
    write(
        &root.join(".claude/skills/release-notes/SKILL.md"),
        &skill_md("release-notes", "Write release notes from git log.", ""),
    );
    // The same name in a later place is hidden by the project's.
    write(
        &root.join("user/skills/csv-summary/SKILL.md"),
        &skill_md("csv-summary", "An older copy.", ""),
    );
    write(
        &root.join("user/skills/broken/SKILL.md"),
        "---\nname: broken\n---\nno description\n",
    );
    let roots = vec![
        SkillRoot {
            path: root.join(".toolmux/skills"),
            origin: Origin::Project,
        },
        SkillRoot {
            path: root.join(".claude/skills"),
            origin: Origin::Project,
        },
        SkillRoot {
            path: root.join("user/skills"),
            origin: Origin::User,
        },
        SkillRoot {
            path: root.join("missing"),
            origin: Origin::Configured,
        },
    ];
    let source = SkillsSource::new(root, roots);
    (dir, source)
}

fn run(source: &SkillsSource, tool: &str, args: Value) -> toolmux_core::ToolResult {
    let Value::Object(args) = args else {
        panic!("arguments must be an object")
    };
    let args: Map<String, Value> = args;
    source.run(tool, &args).expect("a known tool")
}

/// `result` is a refusal of `kind` saying exactly `text`.
fn assert_refused(result: &toolmux_core::ToolResult, kind: ToolErrorKind, text: &str) {
    assert!(result.is_error);
    assert_eq!(result.error_kind(), Some(kind));
    assert_eq!(result.text_content(), text);
}

#[test]
fn skill_list_gives_names_and_descriptions_with_invalid_and_shadowed_ones_apart() {
    let (_dir, source) = project();
    let result = run(&source, "skill_list", json!({}));
    assert!(!result.is_error, "{}", result.text_content());
    assert_eq!(
        result.structured_content,
        Some(json!({
            "count": 2,
            "skills": [
                {"name": "csv-summary", "description": "Summarise a CSV file. Use when asked about a CSV.",
                 "allowedTools": ["file_read", "run_code"], "modelInvocable": true, "origin": "project", "dir": ".toolmux/skills/csv-summary"},
                {"name": "release-notes", "description": "Write release notes from git log.",
                 "allowedTools": [], "modelInvocable": true, "origin": "project", "dir": ".claude/skills/release-notes"},
            ],
            "invalid": [
                {"file": "user/skills/broken/SKILL.md", "line": 2, "field": "description",
                 "message": "`description` is required"},
            ],
            "shadowed": ["user/skills/csv-summary/SKILL.md"],
        }))
    );
    assert_eq!(
        result.text_content(),
        "csv-summary: Summarise a CSV file. Use when asked about a CSV.\n\
         release-notes: Write release notes from git log.\n\
         2 skills\n\
         invalid: user/skills/broken/SKILL.md:2: description: `description` is required"
            .replace(
                "user/skills",
                &format!("{}/user/skills", source_root(&source))
            )
    );
}

/// The project root the source shows paths relative to (text messages name full paths).
fn source_root(source: &SkillsSource) -> String {
    source.roots()[0]
        .path
        .parent()
        .and_then(Path::parent)
        .unwrap()
        .display()
        .to_string()
}

#[test]
fn skill_load_gives_instructions_and_bundled_files_and_the_script_runs() {
    let (dir, source) = project();
    let result = run(&source, "skill_load", json!({"name": "csv-summary"}));
    assert!(!result.is_error, "{}", result.text_content());
    let loaded = result.structured_content.unwrap();
    assert_eq!(
        loaded["instructions"],
        "# csv-summary\n\nSteps for csv-summary.\n"
    );
    assert_eq!(
        loaded["files"],
        json!(["references/format.md", "scripts/summary.py"])
    );
    assert_eq!(loaded["filesCut"], false);
    assert_eq!(loaded["file"], ".toolmux/skills/csv-summary/SKILL.md");
    assert_eq!(loaded["metadata"], json!({}));
    assert_eq!(loaded["license"], Value::Null);
    // The listed script is where the skill says, and does what it says.
    write(&dir.path().join("data.csv"), "a,b\n1,2\n3,4\n");
    let script = dir
        .path()
        .join(loaded["dir"].as_str().unwrap())
        .join("scripts/summary.py");
    let out = Command::new("python3")
        .arg(&script)
        .arg(dir.path().join("data.csv"))
        .output()
        .expect("python3 runs");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "2 rows, columns: a, b\n"
    );
}

#[test]
fn unknown_and_invalid_skills_are_refused_with_their_kind() {
    let (_dir, source) = project();
    let missing = run(&source, "skill_load", json!({"name": "nope"}));
    assert_refused(
        &missing,
        ToolErrorKind::NotFound,
        "no skill named `nope`; skills: csv-summary, release-notes",
    );
    let broken = run(&source, "skill_load", json!({"name": "broken"}));
    assert_eq!(broken.error_kind(), Some(ToolErrorKind::Invalid));
    assert!(
        broken
            .text_content()
            .ends_with("user/skills/broken/SKILL.md:2: description: `description` is required"),
        "{}",
        broken.text_content()
    );
    let empty = SkillsSource::new(Path::new("/nowhere"), Vec::new());
    assert_eq!(
        run(&empty, "skill_load", json!({"name": "x"})).text_content(),
        "no skill named `x`; no skill is installed"
    );
}

#[test]
fn a_project_skill_folder_that_is_a_link_is_not_followed() {
    let (dir, source) = project();
    let elsewhere = dir.path().join("elsewhere/linked");
    write(
        &elsewhere.join("SKILL.md"),
        &skill_md("linked", "Linked in.", ""),
    );
    std::os::unix::fs::symlink(&elsewhere, dir.path().join(".toolmux/skills/linked")).unwrap();
    let names: Vec<String> = source
        .discover()
        .unwrap()
        .skills
        .iter()
        .map(|s| s.name.clone())
        .collect();
    assert_eq!(names, ["csv-summary", "release-notes"]);
}

#[test]
fn the_tools_are_read_only_with_output_schemas() {
    let (_dir, source) = project();
    let tools = source.tools();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["skill_list", "skill_load"]);
    for tool in &tools {
        assert_eq!(tool.annotations.read_only_hint, Some(true), "{}", tool.name);
        assert!(tool.output_schema.is_some(), "{}", tool.name);
    }
}

#[test]
fn a_project_skill_md_that_is_a_link_is_not_read_and_an_oversized_one_is_refused() {
    let (dir, source) = project();
    let outside = tempfile::tempdir().unwrap();
    write(
        &outside.path().join("SKILL.md"),
        &skill_md("linked", "From outside.", ""),
    );
    fs::create_dir_all(dir.path().join(".toolmux/skills/linked")).unwrap();
    std::os::unix::fs::symlink(
        outside.path().join("SKILL.md"),
        dir.path().join(".toolmux/skills/linked/SKILL.md"),
    )
    .unwrap();
    let big = format!(
        "---\nname: big\ndescription: d\n---\n{}",
        "x".repeat(300 * 1024)
    );
    write(&dir.path().join(".toolmux/skills/big/SKILL.md"), &big);
    let found = source.discover().unwrap();
    let names: Vec<&str> = found.skills.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["csv-summary", "release-notes"]);
    let errors: Vec<String> = found.invalid.iter().map(ToString::to_string).collect();
    // The link is left out without a word (a skill is a folder with a real SKILL.md); the
    // fixture's broken user skill is the other error.
    assert_eq!(
        errors,
        [
            format!(
                "{}:1: SKILL.md is larger than 256 KiB",
                dir.path().join(".toolmux/skills/big/SKILL.md").display()
            ),
            format!(
                "{}:2: description: `description` is required",
                dir.path().join("user/skills/broken/SKILL.md").display()
            ),
        ]
    );
}

#[test]
fn a_skill_only_a_person_starts_is_never_offered_to_a_model() {
    let (dir, source) = project();
    write(
        &dir.path().join(".toolmux/skills/deploy/SKILL.md"),
        &skill_md(
            "deploy",
            "Deploy to production.",
            "disable-model-invocation: true\n",
        ),
    );
    let list = run(&source, "skill_list", json!({}));
    let names: Vec<&str> = list.structured_content.as_ref().unwrap()["skills"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["csv-summary", "release-notes"]);
    assert!(
        !list.text_content().contains("deploy"),
        "{}",
        list.text_content()
    );

    let load = run(&source, "skill_load", json!({"name": "deploy"}));
    assert_refused(
        &load,
        ToolErrorKind::Invalid,
        "the skill `deploy` is started by a person, not loaded by a model (its SKILL.md sets `disable-model-invocation: true`)",
    );
    // A person (a trusted caller: the command line, authenticated REST) still lists and
    // loads it.
    let person = |tool: &str, args: Value| {
        let Value::Object(args) = args else { panic!() };
        source
            .run_for(Audience::Person, tool, &args)
            .expect("a known tool")
    };
    let listed = person("skill_list", json!({}));
    assert_eq!(listed.structured_content.as_ref().unwrap()["count"], 3);
    let loaded = person("skill_load", json!({"name": "deploy"}));
    assert!(!loaded.is_error, "{}", loaded.text_content());
    assert_eq!(
        loaded.structured_content.as_ref().unwrap()["modelInvocable"],
        false
    );
}
