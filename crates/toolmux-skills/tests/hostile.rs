//! Skills a cloned repository brings, against discovery: a frontmatter nested deep enough to
//! stall the YAML parser or too long to be one (finding D31's surface in `SKILL.md`) is
//! refused quickly, with its file and line, and the other skills still load.

use std::fs;
use std::path::Path;

use toolmux_core::{MAX_YAML_BYTES, MAX_YAML_DEPTH};
use toolmux_skills::{Origin, SkillRoot, discover, parse};

fn write(path: &Path, text: &str) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

fn deep_skill(name: &str, levels: usize) -> String {
    format!(
        "---\nname: {name}\ndescription: d\nx: {}{}\n---\n\n# {name}\n",
        "[".repeat(levels),
        "]".repeat(levels)
    )
}

fn messages(root: &Path) -> (Vec<String>, Vec<String>) {
    let found = discover(&[SkillRoot {
        path: root.to_path_buf(),
        origin: Origin::Project,
    }])
    .expect("discovers");
    (
        found.skills.iter().map(|s| s.name.clone()).collect(),
        found.invalid.iter().map(ToString::to_string).collect(),
    )
}

/// With `deep/SKILL.md` under `root` nested `levels` deep, only `fine` loads and the deep one
/// is refused with its path followed by `why`.
fn assert_only_fine_loads(root: &Path, levels: usize, why: &str) {
    let deep = root.join("deep/SKILL.md");
    write(&deep, &deep_skill("deep", levels));
    let (skills, invalid) = messages(root);
    assert_eq!(skills, ["fine"]);
    assert_eq!(invalid, [format!("{}{why}", deep.display())]);
}

#[test]
fn a_skill_nested_a_hundred_thousand_deep_is_refused_with_its_file_and_the_rest_load() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("skills");
    // 100,000 levels (200 KB: under the SKILL.md cap, over the frontmatter's).
    write(&root.join("fine/SKILL.md"), &deep_skill("fine", 2));
    assert_only_fine_loads(
        &root,
        100_000,
        ":1: frontmatter is not accepted: it is longer than 64 KiB",
    );
    // Within the size but too deep: refused by depth, on the line where it passes the limit.
    assert_only_fine_loads(
        &root,
        20_000,
        ":4: frontmatter is not accepted: the YAML nests deeper than 64 levels",
    );
    // As deep as allowed loads (the top-level mapping is one level).
    write(
        &root.join("deep/SKILL.md"),
        &deep_skill("deep", MAX_YAML_DEPTH - 1),
    );
    let (skills, invalid) = messages(&root);
    assert_eq!(skills, ["deep", "fine"]);
    assert!(invalid.is_empty(), "{invalid:?}");
}

#[test]
fn generated_nesting_and_sizes_never_panic_and_are_refused_past_the_limits() {
    let dir = Path::new("/p/skills/gen");
    let shapes = ["[", "{a: ", "- "];
    for depth in (0..=150).chain([1_000, 20_000, 60_000]) {
        for (i, open) in shapes.iter().enumerate() {
            let yaml = match i {
                0 => format!("x: {}v{}\n", open.repeat(depth), "]".repeat(depth)),
                1 => format!("x: {}v{}\n", open.repeat(depth), "}".repeat(depth)),
                _ => format!("x:\n{}v\n", open.repeat(depth.max(1))),
            };
            let text = format!("---\nname: gen\ndescription: d\n{yaml}---\nbody\n");
            // The top-level mapping is a level; a block sequence at its key's own column is
            // not one more in the scanner's count (YAML's "indentless" sequence).
            let levels = if i == 2 { depth.max(1) } else { depth + 1 };
            let fits = yaml.len() + "name: gen\ndescription: d\n".len() <= MAX_YAML_BYTES
                && levels <= MAX_YAML_DEPTH;
            let parsed = parse(dir, Origin::Project, &text);
            assert_eq!(
                parsed.is_ok(),
                fits,
                "depth {depth}, shape {open:?}: {parsed:?}"
            );
        }
    }
    // Sizes around the frontmatter cap, flat: only the size decides.
    for size in [MAX_YAML_BYTES - 100, MAX_YAML_BYTES + 1, 3 * MAX_YAML_BYTES] {
        let text = format!(
            "---\nname: gen\ndescription: d\nlong: {}\n---\nbody\n",
            "a".repeat(size)
        );
        let parsed = parse(dir, Origin::Project, &text).map(|skill| skill.name);
        if size < MAX_YAML_BYTES - 50 {
            assert_eq!(parsed.map_err(|e| e.to_string()), Ok("gen".to_string()));
        } else {
            assert_eq!(
                parsed.map_err(|e| e.to_string()),
                Err("/p/skills/gen/SKILL.md:1: frontmatter is not accepted: it is longer than 64 KiB".to_string()),
                "{size}"
            );
        }
    }
}
