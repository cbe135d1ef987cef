//! Specs a cloned repository chooses, against the pack: files larger than it reads (finding
//! D32) and frontmatter nested deep enough to stall the YAML parser (finding D31). Real files
//! in a temporary project, through the pack's tools and resources.

mod support;

use std::fs;
use std::path::Path;

use serde_json::json;
use support::{call, open, try_call};
use toolmux_core::{
    MAX_YAML_BYTES, MAX_YAML_DEPTH, ResourceError, ResourceProvider, check_yaml_bounds,
};

fn write(path: &Path, text: &str) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

/// A file of `size` bytes that starts with `head`: sparse, so a test can afford hundreds of
/// megabytes without writing them.
fn huge(path: &Path, head: &str, size: u64) {
    write(path, head);
    fs::OpenOptions::new()
        .write(true)
        .open(path)
        .and_then(|f| f.set_len(size))
        .unwrap();
}

const OK_SPEC: &str = "---\nstatus: planned\ncreated: 2026-01-01\n---\n\n# Fine\n\nbody\n";
const HEAD: &str = "---\nstatus: planned\ncreated: 2026-01-01\n---\n\n# H\n";
const MIB: u64 = 1024 * 1024;

#[test]
fn a_readme_larger_than_the_pack_reads_is_a_broken_spec_never_read_whole() {
    let dir = tempfile::tempdir().unwrap();
    // The finding's 300 MB README, beside an ordinary spec.
    huge(
        &dir.path().join("specs/001-huge/README.md"),
        HEAD,
        300 * MIB,
    );
    write(&dir.path().join("specs/002-fine/README.md"), OK_SPEC);
    let pack = open(dir.path());

    let list = call(&pack, "spec_list", json!({}));
    assert_eq!(list["count"], 1);
    assert_eq!(list["specs"][0]["id"], "002-fine");
    assert_eq!(
        list["errors"],
        json!([{
            "id": "001-huge",
            "file": "001-huge/README.md",
            "line": 1,
            "message": "the file is 300 MiB, more than the 4 MiB the spec pack reads; split it into sub-spec files",
        }])
    );

    let view = try_call(&pack, "spec_view", json!({"spec": "001"})).unwrap_err();
    assert_eq!(
        view,
        "001-huge/README.md:1: the file is 300 MiB, more than the 4 MiB the spec pack reads; split it into sub-spec files"
    );
    let validate = call(&pack, "spec_validate", json!({"spec": "001"}));
    assert_eq!(validate["valid"], false);
    assert_eq!(validate["specs"][0]["issues"][0]["rule"], "size");
    let tokens = try_call(&pack, "spec_tokens", json!({"spec": "001-huge"})).unwrap_err();
    assert!(tokens.contains("300 MiB"), "{tokens}");
    match pack.read("spec://001-huge") {
        Err(ResourceError::Failed(message)) => assert!(
            message.contains(
                "cannot read `spec://001-huge`: 001-huge/README.md:1: the file is 300 MiB"
            ),
            "{message}"
        ),
        other => panic!("a too-large spec resource: {other:?}"),
    }
    // Just over the cap is over it; at the cap is read.
    huge(
        &dir.path().join("specs/003-edge/README.md"),
        HEAD,
        4 * MIB + 1,
    );
    huge(&dir.path().join("specs/004-max/README.md"), HEAD, 4 * MIB);
    let list = call(&pack, "spec_list", json!({}));
    let broken: Vec<&str> = list["errors"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["id"].as_str())
        .collect();
    assert_eq!(broken, ["001-huge", "003-edge"]);
}

#[test]
fn sub_specs_and_counted_files_are_capped_too() {
    let dir = tempfile::tempdir().unwrap();
    write(&dir.path().join("specs/001-fine/README.md"), OK_SPEC);
    huge(
        &dir.path().join("specs/001-fine/DESIGN.md"),
        "# D\n",
        300 * MIB,
    );
    huge(&dir.path().join("notes/big.md"), "# B\n", 300 * MIB);
    let pack = open(dir.path());
    // The spec itself is fine and says how large its sub-spec is.
    let view = call(&pack, "spec_view", json!({"spec": "001"}));
    assert_eq!(view["subSpecs"][0]["size"], 300 * MIB);
    let tokens = try_call(&pack, "spec_tokens", json!({"spec": "001"})).unwrap_err();
    assert!(
        tokens.ends_with("DESIGN.md: the file is 300 MiB, more than the 4 MiB the spec pack reads; split it into sub-spec files"),
        "{tokens}"
    );
    let file = try_call(&pack, "spec_tokens", json!({"file": "notes/big.md"})).unwrap_err();
    assert!(file.contains("larger than 4 MiB"), "{file}");
    match pack.read("spec://001-fine/DESIGN.md") {
        Err(ResourceError::Failed(message)) => {
            assert!(message.contains("larger than 4 MiB"), "{message}")
        }
        other => panic!("a too-large sub-spec resource: {other:?}"),
    }
}

#[test]
fn a_write_that_would_make_a_spec_too_large_to_read_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    write(&dir.path().join("specs/001-fine/README.md"), OK_SPEC);
    let pack = open(dir.path());
    let body = "x".repeat(5 * MIB as usize);
    let err = try_call(
        &pack,
        "spec_update",
        json!({"spec": "001", "content": body}),
    )
    .unwrap_err();
    assert!(
        err.starts_with("the spec would be 5.0 MiB, more than the 4 MiB the spec pack reads; nothing was written"),
        "{err}"
    );
    let err = try_call(
        &pack,
        "spec_create",
        json!({"name": "big", "content": body}),
    )
    .unwrap_err();
    assert!(err.contains("nothing was written"), "{err}");
    assert_eq!(
        fs::read_to_string(dir.path().join("specs/001-fine/README.md")).unwrap(),
        OK_SPEC
    );
    assert!(!dir.path().join("specs/002-big").exists());
}

fn deep_spec(levels: usize) -> String {
    format!(
        "---\nstatus: planned\ncreated: 2026-01-01\nx: {}{}\n---\n\n# A\n",
        "[".repeat(levels),
        "]".repeat(levels)
    )
}

#[test]
fn a_frontmatter_nested_a_hundred_thousand_deep_is_refused_with_its_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    // The finding's reproduction: 100,000 levels (200 KB), which took 25 s to refuse.
    write(
        &dir.path().join("specs/001-a/README.md"),
        &deep_spec(100_000),
    );
    write(&dir.path().join("specs/002-fine/README.md"), OK_SPEC);
    let pack = open(dir.path());
    let list = call(&pack, "spec_list", json!({}));
    assert_eq!(list["count"], 1);
    assert_eq!(
        list["errors"],
        json!([{
            "id": "001-a",
            "file": "001-a/README.md",
            "line": 1,
            "message": "the frontmatter is longer than 64 KiB (no closing `---` line within it)",
        }])
    );
    // Deep but within the size: refused by depth, at the line where it passes the limit.
    write(
        &dir.path().join("specs/001-a/README.md"),
        &deep_spec(20_000),
    );
    let view = try_call(&pack, "spec_view", json!({"spec": "001-a"})).unwrap_err();
    assert_eq!(
        view,
        "001-a/README.md:4: invalid YAML in frontmatter: the YAML nests deeper than 64 levels"
    );
    // As deep as allowed is parsed as usual (the top-level mapping is one level).
    write(
        &dir.path().join("specs/001-a/README.md"),
        &deep_spec(MAX_YAML_DEPTH - 1),
    );
    assert_eq!(
        call(&pack, "spec_view", json!({"spec": "001-a"}))["title"],
        "A"
    );
}

#[test]
fn the_lean_spec_config_is_bounded_too() {
    let dir = tempfile::tempdir().unwrap();
    write(&dir.path().join("specs/001-fine/README.md"), OK_SPEC);
    write(
        &dir.path().join(".lean-spec/config.yaml"),
        &format!("specs_dir: {}{}\n", "[".repeat(50_000), "]".repeat(50_000)),
    );
    let err = toolmux_specs::SpecsSource::open_with(dir.path(), None).unwrap_err();
    assert!(
        err.to_string()
            .ends_with("config.yaml: larger than the 64 KiB a config may be"),
        "{err}"
    );
    write(
        &dir.path().join(".lean-spec/config.yaml"),
        &format!("specs_dir: {}{}\n", "[".repeat(1_000), "]".repeat(1_000)),
    );
    let err = toolmux_specs::SpecsSource::open_with(dir.path(), None).unwrap_err();
    assert!(
        err.to_string()
            .ends_with("config.yaml: line 1: the YAML nests deeper than 64 levels"),
        "{err}"
    );
}

/// A FIFO at `path`: opening it for reading waits for a writer, which never comes.
fn fifo(path: &Path) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    let made = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("mkfifo");
    assert!(made.success());
}

/// A link at `path` to `/dev/zero`, which never ends.
fn zero(path: &Path) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink("/dev/zero", path).unwrap();
}

const FIFO: &str = "the file is a FIFO, not a regular file; the spec pack reads only regular files and follows no links";
const LINK: &str = "the file is a symbolic link, not a regular file; the spec pack reads only regular files and follows no links";

/// Issue 28 (rule 1, found in review): a FIFO (nobody ever writes to it) or a link to
/// `/dev/zero` in a README's place would hold the pack, or feed it forever. Each is a broken
/// spec, named with what it is, and never opened — also when it takes a listed README's place.
#[test]
fn a_fifo_or_a_link_to_dev_zero_as_a_readme_is_a_broken_spec_never_opened() {
    let dir = tempfile::tempdir().unwrap();
    write(&dir.path().join("specs/001-fine/README.md"), OK_SPEC);
    fifo(&dir.path().join("specs/002-fifo/README.md"));
    zero(&dir.path().join("specs/003-zero/README.md"));
    let pack = open(dir.path());
    let list = call(&pack, "spec_list", json!({}));
    assert_eq!(list["count"], 1);
    assert_eq!(list["specs"][0]["id"], "001-fine");
    assert_eq!(
        list["errors"],
        json!([
            {"id": "002-fifo", "file": "002-fifo/README.md", "line": 1, "message": FIFO},
            {"id": "003-zero", "file": "003-zero/README.md", "line": 1, "message": LINK},
        ])
    );
    assert_eq!(
        try_call(&pack, "spec_view", json!({"spec": "002"})).unwrap_err(),
        format!("002-fifo/README.md:1: {FIFO}")
    );
    assert_eq!(
        try_call(&pack, "spec_view", json!({"spec": "003"})).unwrap_err(),
        format!("003-zero/README.md:1: {LINK}")
    );
    let validate = call(&pack, "spec_validate", json!({"spec": "003"}));
    assert_eq!(validate["valid"], false);
    assert_eq!(validate["specs"][0]["issues"][0]["rule"], "file");
    assert_eq!(validate["specs"][0]["issues"][0]["message"], LINK);
    match pack.read("spec://002-fifo") {
        Err(ResourceError::Failed(message)) => assert_eq!(
            message,
            format!("cannot read `spec://002-fifo`: 002-fifo/README.md:1: {FIFO}")
        ),
        other => panic!("a FIFO spec resource: {other:?}"),
    }
    // A README the pack has read and cached, swapped for a FIFO: the next call sees the swap.
    let readme = dir.path().join("specs/001-fine/README.md");
    fs::remove_file(&readme).unwrap();
    fifo(&readme);
    let list = call(&pack, "spec_list", json!({}));
    assert_eq!(list["count"], 0);
    assert_eq!(
        list["errors"][0],
        json!({"id": "001-fine", "file": "001-fine/README.md", "line": 1, "message": FIFO})
    );
}

/// The same for the LeanSpec config: a FIFO or a link to `/dev/zero` in its place is an error
/// naming it, never read (and never taken for no config).
#[test]
fn a_fifo_or_a_link_to_dev_zero_as_the_lean_spec_config_is_refused_unread() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    write(&root.join("specs/001-fine/README.md"), OK_SPEC);
    let json_config = root.join(".lean-spec/config.json");
    fifo(&json_config);
    let err = toolmux_specs::SpecsSource::open_with(&root, None).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!("{}: a FIFO, not a regular file", json_config.display())
    );
    fs::remove_file(&json_config).unwrap();
    let yaml_config = root.join(".lean-spec/config.yaml");
    zero(&yaml_config);
    let err = toolmux_specs::SpecsSource::open_with(&root, None).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "{}: `.lean-spec/config.yaml` is a symbolic link that leads outside the project root",
            yaml_config.display()
        )
    );
    // A regular config, read as before.
    fs::remove_file(&yaml_config).unwrap();
    write(&yaml_config, "specs_dir: specs\n");
    assert_eq!(call(&open(&root), "spec_list", json!({}))["count"], 1);
}

/// A small deterministic generator (xorshift), so a failure is the same on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
}

/// The pieces YAML's scanner treats specially, for random documents.
const PIECES: &[&str] = &[
    "[",
    "]",
    "{",
    "}",
    ", ",
    ",",
    ": ",
    ":",
    "- ",
    "-",
    "? ",
    "?",
    "\n",
    "\r\n",
    " ",
    "  ",
    "    ",
    "\t",
    "a",
    "key",
    "b c",
    "'",
    "''",
    "\"",
    "\\",
    "\\\"",
    "#",
    " #",
    "|",
    ">",
    "|2",
    "&x ",
    "*x",
    "!t ",
    "!<a[>",
    "\u{2028}",
    "\u{85}",
    "---",
    "...",
    "%Y",
    "@",
    "`",
    "x: ",
    "[[[[",
    "]]]]",
    "{a: [",
    "]}",
    "\n  - ",
    "\n    k: ",
    "é",
    "\u{feff}",
];

/// Nesting of a known depth, in one of the shapes YAML has, with text around it that must not
/// change the count.
fn shaped(rng: &mut Rng, depth: usize) -> (String, usize) {
    let decoration = rng.pick(&["", " # [[[[ a comment", "  ", " # ]]]]"]);
    match rng.below(5) {
        // Flow sequences and mappings under a top-level key: depth + 1 levels.
        0 => (
            format!(
                "k: {}v{}{decoration}\n",
                "[".repeat(depth),
                "]".repeat(depth)
            ),
            depth + 1,
        ),
        1 => (
            format!("k: {}v{}\n", "{a: ".repeat(depth), "}".repeat(depth)),
            depth + 1,
        ),
        // A compact block sequence: `- - - v`.
        2 => (
            format!("{}v{decoration}\n", "- ".repeat(depth.max(1))),
            depth.max(1),
        ),
        // Block mappings, one more column each.
        3 => {
            let mut text: String = (0..depth.max(1))
                .map(|i| format!("{}k{i}:{decoration}\n", " ".repeat(i)))
                .collect();
            text.push_str(&format!("{}v\n", " ".repeat(depth.max(1))));
            (text, depth.max(1))
        }
        // Brackets inside scalars and comments count for nothing.
        _ => (
            format!(
                "k: '{}'\nl: \"{}\"\nm: |\n  {}\n# {}\nn: plain {}\n",
                "[".repeat(depth),
                "{".repeat(depth),
                "[".repeat(depth),
                "[".repeat(depth),
                "[".repeat(depth)
            ),
            1,
        ),
    }
}

#[test]
fn generated_frontmatter_never_panics_and_never_passes_nesting_the_parser_would_refuse() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    // Random documents from the scanner's special pieces: the check never panics, and what it
    // lets through the YAML parser never refuses for depth. (An alias to its own ancestor is
    // refused by the parser with the same words, found at once: not nesting, so left out of
    // that comparison.)
    for _ in 0..20_000 {
        let len = rng.below(300);
        let doc: String = (0..len).map(|_| rng.pick(PIECES)).collect();
        if check_yaml_bounds(&doc).is_ok()
            && !doc.contains('*')
            && let Err(e) = serde_yaml_ng::from_str::<serde_yaml_ng::Value>(&doc)
        {
            assert!(
                !e.to_string().contains("recursion limit exceeded"),
                "passed the check but the parser refused its depth: {doc:?}"
            );
        }
    }
    // Deep nesting after random text: no prefix hides from the check what the parser then
    // reads as nesting past its own limit (a quote, comment or scalar the check took to run on
    // where the parser saw it end).
    let deep = ["[", "{a: ", "- ", "{? "];
    for _ in 0..20_000 {
        let prefix: String = (0..rng.below(40)).map(|_| rng.pick(PIECES)).collect();
        let open = rng.pick(&deep);
        let doc = format!("{prefix}{}x", open.repeat(130 + rng.below(70)));
        if check_yaml_bounds(&doc).is_ok()
            && !doc.contains('*')
            && let Err(e) = serde_yaml_ng::from_str::<serde_yaml_ng::Value>(&doc)
        {
            assert!(
                !e.to_string().contains("recursion limit exceeded"),
                "the check missed nesting the parser refused: {doc:?}"
            );
        }
    }
    // Known shapes at depths around the limit and far past it: refused exactly when deeper
    // than the limit.
    for depth in (0..=200).chain([1_000, 10_000, 30_000]) {
        let (doc, levels) = shaped(&mut rng, depth);
        let checked = check_yaml_bounds(&doc);
        let expected = doc.len() <= MAX_YAML_BYTES && levels <= MAX_YAML_DEPTH;
        assert_eq!(
            checked.is_ok(),
            expected,
            "depth {depth}: {checked:?}\n{doc}"
        );
        if checked.is_ok() {
            let parsed = serde_yaml_ng::from_str::<serde_yaml_ng::Value>(&doc);
            assert!(parsed.is_ok(), "depth {depth}: {parsed:?}\n{doc}");
        }
    }
    // Through the pack: whatever the depth and size, a spec is listed or reported broken with
    // its file, never a panic.
    let dir = tempfile::tempdir().unwrap();
    for (i, levels) in [0, 1, 62, 63, 64, 65, 1_000, 32_000, 100_000]
        .into_iter()
        .enumerate()
    {
        write(
            &dir.path().join(format!("specs/{:03}-d/README.md", i + 1)),
            &deep_spec(levels),
        );
    }
    let pack = open(dir.path());
    let list = call(&pack, "spec_list", json!({}));
    assert_eq!(list["count"], 4, "{list}");
    for error in list["errors"].as_array().unwrap() {
        assert!(error["file"].as_str().unwrap().ends_with("-d/README.md"));
    }
}
