//! Agent Skills through the real binary: `toolmux skills list | show`, the `skills` tools by
//! name, and `/api/skills`, on a scratch project with skills in each place toolmux looks.

mod support;

use serde_json::json;
use support::toolmux_project;
use toolmux_testkit::project::TestProject;
use toolmux_testkit::served::{Served, config_with_key};

const CSV: &str = "---\nname: csv-summary\ndescription: Summarise a CSV file. Use when asked about a CSV.\nallowed-tools: file_read run_code\n---\n\n# CSV summary\n\nRun `scripts/summary.py FILE`.\n";
const NOTES: &str = "---\nname: release-notes\ndescription: Write release notes from git log.\n---\n\n# Release notes\n";
const USER: &str = "---\nname: user-only\ndescription: A skill of the user's own.\n---\n\nbody\n";

/// Skills in `.toolmux/skills/`, `.claude/skills/` and the user's config folder.
fn skills_project() -> TestProject {
    let project = toolmux_project();
    project.write(".toolmux/skills/csv-summary/SKILL.md", CSV);
    project.write(
        ".toolmux/skills/csv-summary/scripts/summary.py",
        "print('ok')\n",
    );
    project.write(".claude/skills/release-notes/SKILL.md", NOTES);
    let user = project.home().join(".config/toolmux/skills/user-only");
    std::fs::create_dir_all(&user).expect("user skills folder");
    std::fs::write(user.join("SKILL.md"), USER).expect("user skill");
    project
}

#[test]
fn skills_list_shows_every_place_and_flags_a_broken_skill() {
    let project = skills_project();
    let out = project.run(&["skills", "list"]).ok();
    let user_dir = project
        .home()
        .join(".config/toolmux/skills/user-only")
        .display()
        .to_string();
    assert_eq!(
        out,
        format!(
            "csv-summary  (project, .toolmux/skills/csv-summary)\n  Summarise a CSV file. Use when asked about a CSV.\n\
             release-notes  (project, .claude/skills/release-notes)\n  Write release notes from git log.\n\
             user-only  (user, {user_dir})\n  A skill of the user's own.\n"
        )
    );
    let listed = project.run(&["skills", "list", "--json"]).json();
    assert_eq!(listed["count"], 3);
    assert_eq!(
        listed["skills"][0]["allowedTools"],
        json!(["file_read", "run_code"])
    );

    // A broken SKILL.md is reported with file, line and field, and the command says so.
    project.write(
        ".toolmux/skills/bad-one/SKILL.md",
        "---\nname: Bad_One\ndescription: x\n---\n",
    );
    let run = project.run(&["skills", "list"]);
    assert_eq!(run.code(), 1, "{}", run.stderr());
    assert!(
        run.stdout().ends_with(
            "invalid: .toolmux/skills/bad-one/SKILL.md:2: name: `name` `Bad_One` may hold only lowercase letters, digits and `-`\n"
        ),
        "{}",
        run.stdout()
    );
}

#[test]
fn skills_show_gives_the_instructions_and_files_and_refuses_an_unknown_name() {
    let project = skills_project();
    assert_eq!(
        project.run(&["skills", "show", "csv-summary"]).ok(),
        "csv-summary  (project, .toolmux/skills/csv-summary)\n\
         Summarise a CSV file. Use when asked about a CSV.\n\
         allowed tools: file_read run_code\n\n\
         # CSV summary\n\nRun `scripts/summary.py FILE`.\n\n\
         files:\n  scripts/summary.py\n"
    );
    let missing = project.run(&["skills", "show", "nope"]);
    assert_eq!(missing.code(), 4, "{}", missing.stdout());
    assert!(
        missing
            .stderr()
            .contains("no skill named `nope`; skills: csv-summary, release-notes, user-only"),
        "{}",
        missing.stderr()
    );
    // The same tool by name, as any channel calls it; the skill's files then read with the
    // workspace tools under the folder it names.
    let loaded = project
        .run(&[
            "tools",
            "call",
            "skill_load",
            "-a",
            "name=csv-summary",
            "--json",
        ])
        .json();
    assert_eq!(
        loaded["structuredContent"]["dir"],
        ".toolmux/skills/csv-summary"
    );
    let script = project
        .run(&[
            "tools",
            "call",
            "file_read",
            "-a",
            "path=.toolmux/skills/csv-summary/scripts/summary.py",
            "--json",
        ])
        .json();
    assert!(
        script["structuredContent"]["content"]
            .as_str()
            .is_some_and(|c| c.contains("print('ok')")),
        "{script}"
    );
}

#[test]
fn the_rest_api_serves_the_same_skills() {
    let project = skills_project();
    project.config(&config_with_key(""));
    let served = Served::start(&project, &[]);
    let list = served.send("GET", "/api/skills", None);
    assert_eq!(list.status, 200, "{}", list.body);
    let names: Vec<String> = list.json()["skills"]
        .as_array()
        .expect("skills")
        .iter()
        .map(|s| s["name"].as_str().expect("a name").to_string())
        .collect();
    assert_eq!(names, ["csv-summary", "release-notes", "user-only"]);
    let one = served.send("GET", "/api/skills/release-notes", None);
    assert_eq!(one.status, 200, "{}", one.body);
    assert_eq!(one.json()["instructions"], "# Release notes\n");
    let missing = served.send("GET", "/api/skills/nope", None);
    let error = missing.error(404, "not_found");
    assert_eq!(
        error["message"],
        "no skill named `nope`; skills: csv-summary, release-notes, user-only"
    );
}

#[test]
fn configured_skill_paths_come_first_and_a_bad_setting_names_the_field() {
    let project = skills_project();
    project.write(
        "team-skills/csv-summary/SKILL.md",
        "---\nname: csv-summary\ndescription: The team's own CSV summary.\n---\n\nteam version\n",
    );
    project.config(r#"{"skills": {"paths": ["team-skills"]}}"#);
    let listed = project.run(&["skills", "list", "--json"]).json();
    assert_eq!(listed["skills"][0]["origin"], "configured");
    assert_eq!(
        listed["skills"][0]["description"],
        "The team's own CSV summary."
    );
    assert_eq!(
        listed["shadowed"],
        json!([".toolmux/skills/csv-summary/SKILL.md"])
    );
    project.config(r#"{"skills": {"path": ["team-skills"]}}"#);
    let bad = project.run(&["skills", "list"]);
    assert_eq!(bad.code(), 3, "{}", bad.stderr());
    assert!(bad.stderr().contains("path"), "{}", bad.stderr());
}
