//! Confinement, attacked from every side: each hostile path is refused by all four tools with
//! the exact same message, and nothing from outside the project root (marked by a unique
//! string) ever appears in any output, whether asked for by name or found by searching.

mod support;

use std::os::unix::fs::symlink;
use std::path::Path;

use serde_json::json;
use support::{call, error_text, everything, ok_text, pack, structured, write};
use toolmux_workspace::{PathError, ProjectRoot, WorkspacePack};

/// Written only in files outside the project root.
const MARKER: &str = "MARKER-7f3a9c1e-outside-the-root";
/// A regex that matches the marker without containing it, so that a tool echoing the pattern
/// back does not look like a leak.
const MARKER_REGEX: &str = "MARKER-7f3a9c1e-outside-the-roo[t]";

/// A project with secrets beside it and links inside it that point at them.
///
/// ```text
/// base/
///   secret.txt            MARKER
///   secret_dir/secret     MARKER
///   project/              <- the root
///     src/main.rs, a/b.txt, sub/
///     link_out            -> ../secret_dir       (relative, directory outside)
///     link_file           -> base/secret.txt     (absolute, file outside)
///     dangling_out        -> ../no_such_file     (dangling, outside)
///     dangling_abs        -> /nonexistent/…      (dangling, absolute)
///     link_parent         -> ..                  (the root's parent)
///     link_etc            -> /etc
///     hop1 -> hop2 -> ../secret.txt              (a chain that ends outside)
///     sub/up              -> ../../secret.txt
///     loop_a <-> loop_b                          (a loop)
///     link_in             -> src/main.rs         (inside: allowed)
///     link_abs_in         -> <root>/src          (absolute, inside: allowed)
/// ```
struct Fixture {
    _base: tempfile::TempDir,
    base: std::path::PathBuf,
    root: std::path::PathBuf,
    pack: WorkspacePack,
}

fn fixture() -> Fixture {
    let base_dir = tempfile::tempdir().expect("tempdir");
    let base = base_dir.path().canonicalize().expect("canonical base");
    write(&base, "secret.txt", format!("{MARKER}\n"));
    write(&base, "secret_dir/secret", format!("{MARKER}\n"));
    let root = base.join("project");
    write(&root, "src/main.rs", "fn main() {}\n");
    write(&root, "a/b.txt", "inside\n");
    std::fs::create_dir_all(root.join("sub")).expect("sub");
    symlink("../secret_dir", root.join("link_out")).expect("link_out");
    symlink(base.join("secret.txt"), root.join("link_file")).expect("link_file");
    symlink("../no_such_file", root.join("dangling_out")).expect("dangling_out");
    symlink("/nonexistent/toolmux-test", root.join("dangling_abs")).expect("dangling_abs");
    symlink("..", root.join("link_parent")).expect("link_parent");
    symlink("/etc", root.join("link_etc")).expect("link_etc");
    symlink("hop2", root.join("hop1")).expect("hop1");
    symlink("../secret.txt", root.join("hop2")).expect("hop2");
    symlink("../../secret.txt", root.join("sub/up")).expect("sub/up");
    symlink("loop_b", root.join("loop_a")).expect("loop_a");
    symlink("loop_a", root.join("loop_b")).expect("loop_b");
    symlink("src/main.rs", root.join("link_in")).expect("link_in");
    symlink(root.join("src"), root.join("link_abs_in")).expect("link_abs_in");
    let pack = pack(&root);
    Fixture {
        _base: base_dir,
        base,
        root,
        pack,
    }
}

fn leaves(path: &str) -> String {
    format!("path `{path}` leaves the project root")
}
fn absolute(path: &str) -> String {
    format!("absolute paths are not accepted (`{path}`); give a path relative to the project root")
}
fn tilde(path: &str) -> String {
    format!("`~` is not expanded (`{path}`); give a path relative to the project root")
}
fn percent(path: &str) -> String {
    format!("percent-encoded paths are not accepted (`{path}`); write the characters themselves")
}
fn backslash(path: &str) -> String {
    format!("backslashes are not accepted (`{path}`); separate directories with `/`")
}
fn link_leads_out(link: &str) -> String {
    format!("`{link}` is a symbolic link that leads outside the project root")
}
fn missing(path: &str) -> String {
    format!("`{path}` does not exist")
}

/// Every hostile path with the exact refusal every tool must give.
fn hostile_paths(f: &Fixture) -> Vec<(String, String)> {
    let secret_abs = f.base.join("secret.txt").display().to_string();
    let root_abs = f.root.join("src/main.rs").display().to_string();
    let long = "a".repeat(10_000);
    let deep_climb = format!("{}etc/passwd", "../".repeat(50));
    let mut table: Vec<(String, String)> = vec![
        // Climbing out with `..`, however it is dressed.
        ("..".into(), leaves("..")),
        ("../".into(), leaves("../")),
        ("../secret.txt".into(), leaves("../secret.txt")),
        ("a/../../secret.txt".into(), leaves("a/../../secret.txt")),
        ("./../secret.txt".into(), leaves("./../secret.txt")),
        (".//../secret.txt".into(), leaves(".//../secret.txt")),
        ("src/../..".into(), leaves("src/../..")),
        (
            "src/../../secret.txt".into(),
            leaves("src/../../secret.txt"),
        ),
        (
            "a/b.txt/../../../secret.txt".into(),
            leaves("a/b.txt/../../../secret.txt"),
        ),
        (
            "../project/src/main.rs".into(),
            leaves("../project/src/main.rs"),
        ),
        (deep_climb.clone(), leaves(&deep_climb)),
        // Absolute paths, Unix and Windows.
        ("/etc/passwd".into(), absolute("/etc/passwd")),
        ("/".into(), absolute("/")),
        ("//etc".into(), absolute("//etc")),
        (secret_abs.clone(), absolute(&secret_abs)),
        (root_abs.clone(), absolute(&root_abs)),
        ("C:\\Windows".into(), absolute("C:\\Windows")),
        ("c:/Windows/win.ini".into(), absolute("c:/Windows/win.ini")),
        ("\\\\server\\share".into(), absolute("\\\\server\\share")),
        // Shell expansion we do not do.
        ("~/x".into(), tilde("~/x")),
        ("~root".into(), tilde("~root")),
        ("~".into(), tilde("~")),
        // Bytes that have no place in a path.
        ("a\0b".into(), "path contains a NUL byte".into()),
        ("src/main.rs\0".into(), "path contains a NUL byte".into()),
        (
            long.clone(),
            "path is 10000 bytes long; at most 4096 are accepted".into(),
        ),
        ("..\\secret.txt".into(), backslash("..\\secret.txt")),
        (
            "a\\..\\..\\secret.txt".into(),
            backslash("a\\..\\..\\secret.txt"),
        ),
        // Percent-encoding, which a careless layer might decode after us.
        ("%2e%2e/secret.txt".into(), percent("%2e%2e/secret.txt")),
        ("%2E%2E%2Fsecret.txt".into(), percent("%2E%2E%2Fsecret.txt")),
        ("..%2fsecret.txt".into(), percent("..%2fsecret.txt")),
        (
            "a/%2e%2e/%2e%2e/secret.txt".into(),
            percent("a/%2e%2e/%2e%2e/secret.txt"),
        ),
        ("%00".into(), percent("%00")),
        // Links inside the root that lead out: same answer whether the target exists or not.
        ("link_out".into(), link_leads_out("link_out")),
        ("link_out/secret".into(), link_leads_out("link_out")),
        ("link_out/no_such_file".into(), link_leads_out("link_out")),
        ("./link_out//secret".into(), link_leads_out("link_out")),
        ("link_file".into(), link_leads_out("link_file")),
        ("dangling_out".into(), link_leads_out("dangling_out")),
        ("dangling_abs".into(), link_leads_out("dangling_abs")),
        (
            "link_parent/secret.txt".into(),
            link_leads_out("link_parent"),
        ),
        (
            "link_parent/project/src/main.rs".into(),
            link_leads_out("link_parent"),
        ),
        ("link_etc/passwd".into(), link_leads_out("link_etc")),
        ("hop1".into(), link_leads_out("hop1")),
        ("sub/up".into(), link_leads_out("sub/up")),
        ("sub/../sub/up".into(), link_leads_out("sub/up")),
        (
            "loop_a".into(),
            "`loop_a` has too many levels of symbolic links".into(),
        ),
        // Look-alikes and odd spellings are just names, and no such names exist.
        ("....//secret.txt".into(), missing("....//secret.txt")),
        (".../secret.txt".into(), missing(".../secret.txt")),
        (" ../secret.txt".into(), missing(" ../secret.txt")),
        (
            "\u{FF0E}\u{FF0E}/secret.txt".into(),
            missing("\u{FF0E}\u{FF0E}/secret.txt"),
        ),
        (
            "\u{2024}\u{2024}/secret.txt".into(),
            missing("\u{2024}\u{2024}/secret.txt"),
        ),
        (
            "..\u{2215}secret.txt".into(),
            missing("..\u{2215}secret.txt"),
        ),
        (
            "..\u{FF0F}secret.txt".into(),
            missing("..\u{FF0F}secret.txt"),
        ),
        (
            ".\u{200B}./secret.txt".into(),
            missing(".\u{200B}./secret.txt"),
        ),
        ("file:///etc/passwd".into(), missing("file:///etc/passwd")),
        (
            "src/main.rs/../../secret.txt".into(),
            missing("src/main.rs/../../secret.txt"),
        ),
        ("src/main.rs/x".into(), missing("src/main.rs/x")),
        (
            format!("{}/x", "b".repeat(300)),
            missing(&format!("{}/x", "b".repeat(300))),
        ),
    ];
    table.push(("link_out/secret/..".into(), link_leads_out("link_out")));
    table
}

#[tokio::test]
async fn every_hostile_path_is_refused_by_every_tool_with_the_exact_message() {
    let f = fixture();
    let table = hostile_paths(&f);
    assert!(table.len() >= 30, "only {} hostile paths", table.len());
    for (path, expected) in &table {
        let calls = [
            ("file_read", json!({"path": path})),
            ("file_search", json!({"pattern": "**", "path": path})),
            ("grep", json!({"pattern": "e", "path": path})),
            ("directory_list", json!({"path": path})),
        ];
        for (tool, arguments) in calls {
            let result = call(&f.pack, tool, arguments).await;
            assert_eq!(
                error_text(&result),
                *expected,
                "{tool} with path {:?}",
                path.chars().take(80).collect::<String>()
            );
            assert!(!everything(&result).contains(MARKER));
        }
    }
}

#[test]
fn project_root_resolve_returns_typed_errors() {
    let f = fixture();
    let root = ProjectRoot::new(&f.root).unwrap();
    assert_eq!(
        root.resolve("link_out/secret"),
        Err(PathError::SymlinkEscapes {
            link: "link_out".into()
        })
    );
    assert_eq!(
        root.resolve("../x"),
        Err(PathError::Escapes {
            path: "../x".into()
        })
    );
    assert_eq!(root.resolve("a\0b"), Err(PathError::Nul));
}

#[test]
fn paths_that_stay_inside_resolve_to_canonical_paths_under_the_root() {
    let f = fixture();
    let root = ProjectRoot::new(&f.root).unwrap();
    let main = f.root.join("src/main.rs");
    for ok in [
        "src/main.rs",
        "./src/main.rs",
        "a/../src/main.rs",
        "src//main.rs",
        "link_in",
        "link_abs_in/main.rs",
        "sub/../src/./main.rs",
    ] {
        assert_eq!(root.resolve(ok).as_deref(), Ok(main.as_path()), "{ok}");
    }
    for root_itself in ["", ".", "./", "a/..", "link_out/.."] {
        assert_eq!(root.resolve(root_itself).as_deref(), Ok(f.root.as_path()));
    }
    assert_eq!(root.display(&main), "src/main.rs");
}

#[tokio::test]
async fn a_link_that_stays_inside_can_be_read_and_shows_its_real_path() {
    let f = fixture();
    let result = call(&f.pack, "file_read", json!({"path": "link_in"})).await;
    assert_eq!(ok_text(&result), "1\tfn main() {}\n");
    assert_eq!(structured(&result)["path"], "src/main.rs");
}

#[tokio::test]
async fn searching_the_whole_project_never_reaches_through_links() {
    let f = fixture();
    let pack = &f.pack;

    let by_marker = call(pack, "grep", json!({"pattern": MARKER_REGEX})).await;
    assert_eq!(
        ok_text(&by_marker),
        format!("no matches for `{MARKER_REGEX}` under `.` (2 files searched)\n")
    );
    assert_eq!(structured(&by_marker)["matches"], json!([]));
    assert!(!everything(&by_marker).contains(MARKER));
    let case_blind = call(
        pack,
        "grep",
        json!({"pattern": MARKER_REGEX.to_lowercase(), "caseSensitive": false, "context": 10}),
    )
    .await;
    assert!(!everything(&case_blind).contains(MARKER));

    let everything_grep = call(pack, "grep", json!({"pattern": ".*", "limit": 1000})).await;
    assert!(!everything(&everything_grep).contains(MARKER));
    let paths: Vec<_> = structured(&everything_grep)["matches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["path"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(paths, ["a/b.txt", "src/main.rs"]);

    let files = call(pack, "file_search", json!({"pattern": "**"})).await;
    assert!(!everything(&files).contains(MARKER));
    assert_eq!(
        structured(&files)["files"],
        json!(["a/b.txt", "src/main.rs"])
    );

    let outside_globs = call(pack, "file_search", json!({"pattern": "../**"})).await;
    assert_eq!(structured(&outside_globs)["files"], json!([]));
    let absolute_glob = call(pack, "file_search", json!({"pattern": "/**/secret*"})).await;
    assert_eq!(structured(&absolute_glob)["files"], json!([]));

    let listing = call(
        pack,
        "directory_list",
        json!({"depth": 10, "includeIgnored": true}),
    )
    .await;
    assert!(!everything(&listing).contains(MARKER));
    let entries = structured(&listing)["entries"].as_array().unwrap().clone();
    for entry in &entries {
        let path = entry["path"].as_str().unwrap();
        assert!(
            !path.starts_with("link_out/") && !path.starts_with("link_parent/"),
            "listed through a link: {path}"
        );
        if path.starts_with("link") || path.starts_with("dangling") || path.starts_with("hop") {
            assert_eq!(entry["kind"], "symlink", "{path}");
        }
    }
    // The listing never reveals where a link points.
    assert!(!everything(&listing).contains("secret"));

    // Reading every file the search found reveals nothing either.
    for file in ["a/b.txt", "src/main.rs"] {
        let read = call(pack, "file_read", json!({"path": file})).await;
        assert!(!everything(&read).contains(MARKER));
    }
    // And the grep through an absolute path to the secret is refused, not searched.
    let direct = call(
        pack,
        "grep",
        json!({"pattern": MARKER_REGEX, "path": f.base.join("secret.txt").display().to_string()}),
    )
    .await;
    assert!(!everything(&direct).contains(MARKER));
    assert!(error_text(&direct).starts_with("absolute paths are not accepted"));
}

#[tokio::test]
async fn a_glob_argument_cannot_widen_the_search() {
    let f = fixture();
    for glob in ["../*", "/**", "**/../**", "link_out/**"] {
        let result = call(
            &f.pack,
            "grep",
            json!({"pattern": MARKER_REGEX, "glob": glob}),
        )
        .await;
        assert!(!everything(&result).contains(MARKER), "{glob}");
        assert_eq!(structured(&result)["matches"], json!([]), "{glob}");
    }
}

#[test]
fn the_root_itself_may_be_reached_through_a_link_and_is_canonicalized() {
    let f = fixture();
    let alias = f.base.join("alias");
    symlink(&f.root, &alias).unwrap();
    let root = ProjectRoot::new(&alias).unwrap();
    assert_eq!(root.path(), f.root.as_path());
    assert!(Path::new(root.path()).is_absolute());
}
