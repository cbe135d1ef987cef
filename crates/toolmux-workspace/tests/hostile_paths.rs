//! Confinement, attacked from every side: each hostile path is refused by all four tools with
//! the exact same message, and nothing from outside the project root (marked by a unique
//! string) ever appears in any output, whether asked for by name or found by searching.

mod results;
mod support;

use std::os::unix::fs::symlink;
use std::path::Path;

use results::{error_text, ok_text, structured};
use serde_json::json;
use support::{call, pack};
use toolmux_testkit::fifo::mkfifo;
use toolmux_testkit::project::write_file;
use toolmux_workspace::{PathError, ProjectRoot, WorkspacePack};

/// Everything a result shows anyone: its text and its structured content.
fn everything(result: &toolmux_core::ToolResult) -> String {
    let mut all = result.text_content();
    if let Some(s) = &result.structured_content {
        all.push('\n');
        all.push_str(&s.to_string());
    }
    all
}

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
    write_file(&base, "secret.txt", format!("{MARKER}\n"));
    write_file(&base, "secret_dir/secret", format!("{MARKER}\n"));
    let root = base.join("project");
    write_file(&root, "src/main.rs", "fn main() {}\n");
    write_file(&root, "a/b.txt", "inside\n");
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

/// Every hostile path with the exact refusal every tool must give.
fn hostile_paths(f: &Fixture) -> Vec<(String, String)> {
    let secret_abs = f.base.join("secret.txt").display().to_string();
    let root_abs = f.root.join("src/main.rs").display().to_string();
    let deep_climb = format!("{}etc/passwd", "../".repeat(50));
    let long_dir = format!("{}/x", "b".repeat(300));
    let mut table: Vec<(String, String)> = Vec::new();
    // Each path with the refusal that names it.
    let mut refused = |paths: &[&str], why: fn(&str) -> String| {
        table.extend(paths.iter().map(|path| (path.to_string(), why(path))));
    };
    // Climbing out with `..`, however it is dressed.
    refused(
        &[
            "..",
            "../",
            "../secret.txt",
            "a/../../secret.txt",
            "./../secret.txt",
            ".//../secret.txt",
            "src/../..",
            "src/../../secret.txt",
            "a/b.txt/../../../secret.txt",
            "../project/src/main.rs",
            &deep_climb,
        ],
        |p| format!("path `{p}` leaves the project root"),
    );
    // Absolute paths, Unix and Windows.
    refused(
        &[
            "/etc/passwd",
            "/",
            "//etc",
            &secret_abs,
            &root_abs,
            "C:\\Windows",
            "c:/Windows/win.ini",
            "\\\\server\\share",
        ],
        |p| {
            format!(
                "absolute paths are not accepted (`{p}`); give a path relative to the project root"
            )
        },
    );
    // Shell expansion we do not do.
    refused(&["~/x", "~root", "~"], |p| {
        format!("`~` is not expanded (`{p}`); give a path relative to the project root")
    });
    // Bytes that have no place in a path.
    refused(&["..\\secret.txt", "a\\..\\..\\secret.txt"], |p| {
        format!("backslashes are not accepted (`{p}`); separate directories with `/`")
    });
    // Percent-encoding, which a careless layer might decode after us.
    refused(
        &[
            "%2e%2e/secret.txt",
            "%2E%2E%2Fsecret.txt",
            "..%2fsecret.txt",
            "a/%2e%2e/%2e%2e/secret.txt",
            "%00",
        ],
        |p| {
            format!(
                "percent-encoded paths are not accepted (`{p}`); write the characters themselves"
            )
        },
    );
    // Look-alikes and odd spellings are just names, and no such names exist.
    refused(
        &[
            "....//secret.txt",
            ".../secret.txt",
            " ../secret.txt",
            "\u{FF0E}\u{FF0E}/secret.txt",
            "\u{2024}\u{2024}/secret.txt",
            "..\u{2215}secret.txt",
            "..\u{FF0F}secret.txt",
            ".\u{200B}./secret.txt",
            "file:///etc/passwd",
            "src/main.rs/../../secret.txt",
            "src/main.rs/x",
            &long_dir,
        ],
        |p| format!("`{p}` does not exist"),
    );
    // Links inside the root that lead out: same answer whether the target exists or not, and
    // the refusal names the link, not the path asked for.
    for (path, link) in [
        ("link_out", "link_out"),
        ("link_out/secret", "link_out"),
        ("link_out/no_such_file", "link_out"),
        ("./link_out//secret", "link_out"),
        ("link_file", "link_file"),
        ("dangling_out", "dangling_out"),
        ("dangling_abs", "dangling_abs"),
        ("link_parent/secret.txt", "link_parent"),
        ("link_parent/project/src/main.rs", "link_parent"),
        ("link_etc/passwd", "link_etc"),
        ("hop1", "hop1"),
        ("sub/up", "sub/up"),
        ("sub/../sub/up", "sub/up"),
        ("link_out/secret/..", "link_out"),
    ] {
        table.push((
            path.into(),
            format!("`{link}` is a symbolic link that leads outside the project root"),
        ));
    }
    // Refusals that do not quote the path.
    for (path, why) in [
        ("a\0b".to_string(), "path contains a NUL byte"),
        ("src/main.rs\0".to_string(), "path contains a NUL byte"),
        (
            "a".repeat(10_000),
            "path is 10000 bytes long; at most 4096 are accepted",
        ),
        (
            "loop_a".to_string(),
            "`loop_a` has too many levels of symbolic links",
        ),
    ] {
        table.push((path, why.into()));
    }
    table
}

/// Each of `calls` (a tool and its arguments) refuses `path` with exactly `expected`, and shows
/// nothing from outside the root.
async fn assert_refused(
    f: &Fixture,
    path: &str,
    expected: &str,
    calls: impl IntoIterator<Item = (&str, serde_json::Value)>,
) {
    for (tool, arguments) in calls {
        let result = call(&f.pack, tool, arguments).await;
        assert_eq!(
            error_text(&result),
            expected,
            "{tool} with path {:?}",
            path.chars().take(80).collect::<String>()
        );
        assert!(!everything(&result).contains(MARKER));
    }
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
        assert_refused(&f, path, expected, calls).await;
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

/// Swaps `race/d` (a directory inside) with `race/alt` (a link to a directory outside) with
/// `renameat2(RENAME_EXCHANGE)`, as fast as it can, until dropped; counts the swaps.
struct Swapper {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<usize>>,
}

impl Swapper {
    fn start(race: &Path) -> Self {
        use std::sync::atomic::Ordering;
        let dir = std::fs::File::open(race).expect("open race/");
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut swaps = 0;
            while !flag.load(Ordering::Relaxed) {
                rustix::fs::renameat_with(
                    &dir,
                    "d",
                    &dir,
                    "alt",
                    rustix::fs::RenameFlags::EXCHANGE,
                )
                .expect("renameat2(RENAME_EXCHANGE)");
                swaps += 1;
            }
            swaps
        });
        Self {
            stop,
            thread: Some(thread),
        }
    }

    fn finish(mut self) -> usize {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        self.thread
            .take()
            .map_or(0, |t| t.join().expect("the swapper ran"))
    }
}

impl Drop for Swapper {
    fn drop(&mut self) {
        // A failing assertion must not leave the thread spinning.
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[tokio::test]
async fn d6_a_directory_swapped_for_a_link_during_calls_never_leaks_the_outside() {
    let f = fixture();
    let outside = f.base.join("outside");
    write_file(&outside, "f.txt", format!("{MARKER}\n"));
    // An outside name that has no twin inside: listing it would leak it.
    write_file(&outside, &format!("{MARKER}.txt"), "x\n");
    let race = f.root.join("race");
    write_file(&race, "d/f.txt", "inside\n");
    symlink(&outside, race.join("alt")).unwrap();

    const ROUNDS: usize = 300;
    let swapper = Swapper::start(&race);
    let mut leaks = Vec::new();
    let mut inside_reads = 0;
    let mut file_read_errors = std::collections::BTreeSet::new();
    let started = std::time::Instant::now();
    for round in 0..ROUNDS {
        let calls = [
            ("file_read", json!({"path": "race/d/f.txt"})),
            (
                "grep",
                json!({"pattern": format!("{MARKER_REGEX}|inside"), "path": "race"}),
            ),
            (
                "directory_list",
                json!({"path": if round % 2 == 0 { "race/d" } else { "race" }, "depth": 2}),
            ),
            ("file_search", json!({"pattern": "**", "path": "race"})),
        ];
        for (tool, arguments) in calls {
            let result = call(&f.pack, tool, arguments.clone()).await;
            let shown = everything(&result);
            if shown.contains(MARKER) {
                leaks.push(format!("{tool} {arguments}: {shown}"));
            } else if tool == "file_read" && !result.is_error {
                assert_eq!(structured(&result)["content"], "inside\n");
                inside_reads += 1;
            } else if tool == "file_read" {
                file_read_errors.insert(error_text(&result));
            }
        }
    }
    let swaps = swapper.finish();
    assert!(swaps > 0, "the swapper never ran");
    assert!(
        leaks.is_empty(),
        "{} of {} calls leaked the outside ({swaps} swaps, {:?}); first: {}",
        leaks.len(),
        ROUNDS * 4,
        started.elapsed(),
        leaks[0]
    );
    // A file_read that fails says why, in one of the ways a swap can show: the directory was
    // a link out when the walk looked at it, or became one between the walk and the open.
    let expected = [
        "`race/d/f.txt` changed while it was being opened; try again",
        "`race/d` is a symbolic link that leads outside the project root",
    ];
    for error in &file_read_errors {
        assert!(
            expected.contains(&error.as_str()),
            "unexpected file_read error: {error}"
        );
    }
    eprintln!(
        "{} rounds, {swaps} swaps, {inside_reads} file_reads succeeded, {:?}, errors {file_read_errors:?}",
        ROUNDS,
        started.elapsed()
    );
}

/// Writes a state directory with a call log holding `SECRET` under `state`.
const SECRET: &str = "SECRET-b41d-call-argument";
const SECRET_REGEX: &str = "SECRET-b41d-call-argumen[t]";

fn write_state(state: &Path) {
    write_file(
        state,
        "logs/calls-2026-01-01.jsonl",
        format!("{{\"a\":\"{SECRET}\"}}\n"),
    );
}

/// Asserts that no tool shows the call log of a state directory reached as `state_rel`.
async fn assert_state_hidden(pack: &WorkspacePack, state_rel: &str, parent_rel: &str) {
    let log = format!("{state_rel}/logs/calls-2026-01-01.jsonl");
    let read = call(pack, "file_read", json!({"path": log})).await;
    assert_eq!(
        error_text(&read),
        format!(
            "`{log}` is inside `.toolmux/state`, toolmux's own state, which the workspace tools do not read"
        )
    );
    let list = call(pack, "directory_list", json!({"path": state_rel})).await;
    assert!(
        error_text(&list).contains("toolmux's own state"),
        "{state_rel}"
    );
    for path in [".", parent_rel] {
        let listing = call(
            pack,
            "directory_list",
            json!({"path": path, "depth": 10, "includeIgnored": true}),
        )
        .await;
        assert!(
            !everything(&listing).contains("calls-2026"),
            "{}",
            everything(&listing)
        );
        let grep = call(pack, "grep", json!({"pattern": SECRET_REGEX, "path": path})).await;
        assert!(!everything(&grep).contains(SECRET), "{}", everything(&grep));
        let files = call(
            pack,
            "file_search",
            json!({"pattern": "**/*.jsonl", "path": path}),
        )
        .await;
        assert_eq!(structured(&files)["files"], json!([]));
    }
}

#[tokio::test]
async fn d7_the_state_dir_of_a_project_below_the_root_is_hidden() {
    // `"root": ".."`: the root is the project directory's parent, so the state directory is
    // `<root>/proj/.toolmux/state`, not `<root>/.toolmux/state`.
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let project = root.join("proj");
    write_file(&project, "src/main.rs", "fn main() {}\n");
    write_state(&project.join(".toolmux/state"));
    let pack =
        WorkspacePack::with_state_dir(root, project.join(".toolmux/state"), Default::default())
            .unwrap();
    assert_state_hidden(&pack, "proj/.toolmux/state", "proj").await;
    // The rest of `.toolmux` and the project stay visible.
    let read = call(&pack, "file_read", json!({"path": "proj/src/main.rs"})).await;
    assert_eq!(ok_text(&read), "1\tfn main() {}\n");
}

#[tokio::test]
async fn d7_a_symlinked_toolmux_dir_does_not_hide_the_state_from_the_guard() {
    // `.toolmux` is a link to `real-toolmux` inside the root: the state directory's canonical
    // path is `<root>/real-toolmux/state`, reachable by either name.
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write_file(root, "src/main.rs", "fn main() {}\n");
    write_state(&root.join("real-toolmux/state"));
    write_file(root, "real-toolmux/config.json", "{}\n");
    symlink("real-toolmux", root.join(".toolmux")).unwrap();
    for pack in [
        pack(root),
        WorkspacePack::with_state_dir(root, root.join(".toolmux/state"), Default::default())
            .unwrap(),
    ] {
        assert_state_hidden(&pack, ".toolmux/state", "real-toolmux").await;
        assert_state_hidden(&pack, "real-toolmux/state", "real-toolmux").await;
        let config = call(&pack, "file_read", json!({"path": ".toolmux/config.json"})).await;
        assert_eq!(ok_text(&config), "1\t{}\n");
    }
}

#[tokio::test]
async fn d6_an_ignore_file_that_is_a_fifo_a_device_or_huge_never_blocks_a_walk() {
    // The walkers read `.gitignore`, `.ignore` and `.git/info/exclude` themselves (the
    // `ignore` crate opens them by name, blocking, and reads them whole): a FIFO there would
    // hang the thread (and hold a turn of the pack) forever, and a link to `/dev/zero` or a
    // sparse file of gigabytes is read into one string until the OOM killer ends the process.
    let f = fixture();
    write_file(&f.root, "fifo_dir/found.txt", "needle\n");
    mkfifo(&f.root.join("fifo_dir/.gitignore"));
    // A link to a device: `/dev/null` here, and a sparse file of only 4 MiB (over the 1 MiB
    // cap), since with `/dev/zero` or gigabytes a regression would not fail but take the
    // test process (already at 256 MiB: an 8 GiB allocation) and the host's memory with it.
    write_file(&f.root, "zero_dir/found.txt", "needle\n");
    symlink("/dev/null", f.root.join("zero_dir/.ignore")).unwrap();
    write_file(&f.root, "huge_dir/found.txt", "needle\n");
    let huge = std::fs::File::create(f.root.join("huge_dir/.gitignore")).unwrap();
    huge.set_len(4 << 20).unwrap();
    write_file(&f.root, "git_dir/found.txt", "needle\n");
    std::fs::create_dir_all(f.root.join("git_dir/.git/info")).unwrap();
    mkfifo(&f.root.join("git_dir/.git/info/exclude"));
    let fifos = [
        f.root.join("fifo_dir/.gitignore"),
        f.root.join("git_dir/.git/info/exclude"),
    ];
    let calls = [
        ("grep", json!({"pattern": "needle"})),
        ("file_search", json!({"pattern": "**/found.txt"})),
        ("directory_list", json!({"depth": 3})),
        ("grep", json!({"pattern": "needle", "path": "fifo_dir"})),
        (
            "grep",
            json!({"pattern": "needle", "path": "fifo_dir/found.txt"}),
        ),
        ("file_search", json!({"pattern": "*", "path": "zero_dir"})),
        ("directory_list", json!({"path": "huge_dir"})),
        ("directory_list", json!({"path": "git_dir"})),
    ];
    for (tool, arguments) in calls {
        let outcome = tokio::time::timeout(
            std::time::Duration::from_secs(10),
            call(&f.pack, tool, arguments.clone()),
        )
        .await;
        if outcome.is_err() {
            // Unblock the reader (a writer that opens and closes gives it end-of-file), so
            // that the runtime can shut down and the test fails instead of hanging.
            use std::os::unix::fs::OpenOptionsExt;
            for fifo in &fifos {
                let _ = std::fs::OpenOptions::new()
                    .write(true)
                    .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
                    .open(fifo);
            }
            panic!("{tool} {arguments} blocked on an ignore file");
        }
        let result = outcome.unwrap();
        // The call answers: either without the directory whose ignore file cannot be read,
        // or, when asked for that directory, with an error that says which file.
        let shown = everything(&result);
        if result.is_error {
            assert!(
                shown.contains("is not a regular file of at most"),
                "{tool} {arguments}: {shown}"
            );
        }
    }
    // A directory with an ordinary ignore file is still searched.
    write_file(&f.root, "ok_dir/.gitignore", "skipped.txt\n");
    write_file(&f.root, "ok_dir/found.txt", "needle\n");
    write_file(&f.root, "ok_dir/skipped.txt", "needle\n");
    let grep = call(
        &f.pack,
        "grep",
        json!({"pattern": "needle", "path": "ok_dir"}),
    )
    .await;
    assert_eq!(ok_text(&grep), "ok_dir/found.txt:1: needle\n");
    // Asked for by name, a directory whose ignore file cannot be read says so.
    assert_refused(
        &f,
        "fifo_dir",
        "`fifo_dir/.gitignore` is not a regular file of at most 1 MiB, so the ignore rules of \
         `fifo_dir` cannot be read; remove or replace it",
        [("grep", json!({"pattern": "needle", "path": "fifo_dir"}))],
    )
    .await;
}

#[tokio::test]
async fn an_ignore_file_that_links_out_of_the_root_is_never_followed() {
    // A `.gitignore` that is a link to a file outside: following it would look (stat) and
    // read outside the root. It is refused like a FIFO, by what it is (a link), so the
    // outside file's rules (`skipped.txt`) are never applied.
    let f = fixture();
    write_file(&f.base, "outside.gitignore", "skipped.txt\n");
    write_file(&f.root, "link_dir/found.txt", "needle\n");
    write_file(&f.root, "link_dir/skipped.txt", "needle\n");
    symlink(
        f.base.join("outside.gitignore"),
        f.root.join("link_dir/.gitignore"),
    )
    .unwrap();
    // Even one that stays inside is a link, and not followed.
    write_file(&f.root, "inner_dir/found.txt", "needle\n");
    write_file(&f.root, "inner_dir/rules", "skipped.txt\n");
    symlink("rules", f.root.join("inner_dir/.gitignore")).unwrap();
    for dir in ["link_dir", "inner_dir"] {
        let grep = call(&f.pack, "grep", json!({"pattern": "needle", "path": dir})).await;
        assert_eq!(
            error_text(&grep),
            format!(
                "`{dir}/.gitignore` is not a regular file of at most 1 MiB, so the ignore rules of \
                 `{dir}` cannot be read; remove or replace it"
            )
        );
    }
    // A walk of the whole project completes and skips both directories: had the link been
    // followed, `link_dir/found.txt` would be found and `link_dir/skipped.txt` hidden.
    for (tool, arguments) in [
        ("grep", json!({"pattern": "needle"})),
        ("file_search", json!({"pattern": "**/*.txt"})),
        ("directory_list", json!({"depth": 3})),
    ] {
        let result = call(&f.pack, tool, arguments.clone()).await;
        let shown = everything(&result);
        assert!(!result.is_error, "{tool} {arguments}: {shown}");
        assert!(!shown.contains("link_dir/"), "{tool} {arguments}: {shown}");
        assert!(!shown.contains("inner_dir/"), "{tool} {arguments}: {shown}");
    }
    // Listed with ignore files off, the directory is there, its link shown as a link.
    let listed = call(
        &f.pack,
        "directory_list",
        json!({"path": "link_dir", "includeIgnored": true}),
    )
    .await;
    assert_eq!(
        ok_text(&listed),
        "link_dir/.gitignore  [symlink]\nlink_dir/found.txt  7 bytes\nlink_dir/skipped.txt  7 bytes\n"
    );
}

/// The three write tools, each asked to change `path`.
fn write_calls(path: &str) -> [(&'static str, serde_json::Value); 3] {
    [
        (
            "file_write",
            json!({"path": path, "content": "pwned\n", "overwrite": true}),
        ),
        (
            "file_edit",
            json!({"path": path, "oldString": MARKER, "newString": "pwned"}),
        ),
        (
            "apply_patch",
            json!({"patch": format!(
                "*** Begin Patch\n*** Update File: {path}\n@@\n-{MARKER}\n+pwned\n*** End Patch"
            )}),
        ),
    ]
}

/// Every file under `dir`, with its content: to prove a write changed nothing there.
fn snapshot(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).expect("list") {
            let entry = entry.expect("entry");
            let kind = entry.file_type().expect("type");
            if kind.is_dir() {
                stack.push(entry.path());
            } else if kind.is_file() {
                files.push((
                    entry.path().display().to_string(),
                    std::fs::read(entry.path()).expect("read"),
                ));
            }
        }
    }
    files.sort();
    files
}

#[tokio::test]
async fn every_hostile_path_is_refused_by_every_write_tool_with_the_same_message() {
    let f = fixture();
    let outside_before = snapshot(&f.base.join("secret_dir"));
    let secret_before = std::fs::read(f.base.join("secret.txt")).unwrap();
    let table = hostile_paths(&f);
    let mut checked = 0;
    for (path, expected) in &table {
        // A look-alike that names nothing is a name a file may be created with.
        if expected.ends_with("does not exist") {
            continue;
        }
        assert_refused(&f, path, expected, write_calls(path)).await;
        checked += 1;
    }
    assert!(checked >= 40, "only {checked} hostile paths");
    assert_eq!(snapshot(&f.base.join("secret_dir")), outside_before);
    assert_eq!(
        std::fs::read(f.base.join("secret.txt")).unwrap(),
        secret_before
    );
    assert!(!f.base.join("no_such_file").exists());
}

#[tokio::test]
async fn writes_never_reach_into_git_or_toolmux_state() {
    let f = fixture();
    write_file(&f.root, ".git/config", "[core]\n");
    write_file(
        &f.root,
        "vendor/lib/.git",
        "gitdir: ../../.git/modules/lib\n",
    );
    write_state(&f.root.join(".toolmux/state"));
    symlink(".git", f.root.join("gitlink")).unwrap();
    let git = |p: &str| format!("`{p}` is inside `.git`, which the workspace tools never write");
    for (path, expected) in [
        (".git/config", git(".git/config")),
        (".git/hooks/pre-commit", git(".git/hooks/pre-commit")),
        ("./.git/new", git("./.git/new")),
        ("src/../.git/HEAD", git("src/../.git/HEAD")),
        ("gitlink/config", git("gitlink/config")),
        ("vendor/lib/.git", git("vendor/lib/.git")),
        (".GIT/config", git(".GIT/config")),
        (
            ".toolmux/state/logs/calls-2026-01-01.jsonl",
            "`.toolmux/state/logs/calls-2026-01-01.jsonl` is inside `.toolmux/state`, toolmux's own state, which the workspace tools do not read".to_string(),
        ),
        (
            ".toolmux/state/new.json",
            "`.toolmux/state/new.json` is inside `.toolmux/state`, toolmux's own state, which the workspace tools do not read".to_string(),
        ),
    ] {
        for (tool, arguments) in write_calls(path) {
            let result = call(&f.pack, tool, arguments).await;
            assert_eq!(error_text(&result), expected, "{tool} {path}");
        }
    }
    assert_eq!(
        std::fs::read_to_string(f.root.join(".git/config")).unwrap(),
        "[core]\n"
    );
    assert!(!f.root.join(".git/hooks").exists());
    assert!(!f.root.join(".toolmux/state/new.json").exists());
    // The rest of `.toolmux` defines what toolmux runs and how it sandboxes it (finding D20):
    // refused as well, nothing written.
    assert_refused(
        &f,
        ".toolmux/config.json",
        "`.toolmux/config.json` is inside `.toolmux`, toolmux's own configuration, which defines \
         what toolmux runs and how it is sandboxed; the workspace tools never write it (a person \
         edits it, or `toolmux config set` does)",
        [(
            "file_write",
            json!({"path": ".toolmux/config.json", "content": "{}\n"}),
        )],
    )
    .await;
    assert!(!f.root.join(".toolmux/config.json").exists());
}

#[tokio::test]
async fn a_write_through_a_link_inside_the_root_changes_its_target_and_keeps_the_link() {
    let f = fixture();
    let result = call(
        &f.pack,
        "file_edit",
        json!({"path": "link_in", "oldString": "fn main() {}", "newString": "fn main() { run() }"}),
    )
    .await;
    assert_eq!(structured(&result)["files"][0]["path"], "src/main.rs");
    assert!(
        std::fs::symlink_metadata(f.root.join("link_in"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(
        std::fs::read_to_string(f.root.join("src/main.rs")).unwrap(),
        "fn main() { run() }\n"
    );
}

/// The fixture with a directory `outside` beside the root holding the marker in
/// `outside_file`, and `race` in the root holding `inside_file` and a link `race/alt` to
/// `outside/<link_to>` (to `outside` itself where there is no `link_to`), for a swapper to race.
fn race_fixture(
    outside_file: &str,
    inside_file: &str,
    link_to: Option<&str>,
) -> (Fixture, std::path::PathBuf, std::path::PathBuf) {
    let f = fixture();
    let outside = f.base.join("outside");
    write_file(&outside, outside_file, format!("{MARKER}\n"));
    let race = f.root.join("race");
    write_file(&race, inside_file, "inside\n");
    let target = link_to.map_or_else(|| outside.clone(), |name| outside.join(name));
    symlink(target, race.join("alt")).unwrap();
    (f, outside, race)
}

#[tokio::test]
async fn d6_a_directory_swapped_for_a_link_during_writes_never_writes_outside() {
    let (f, outside, race) = race_fixture("f.txt", "d/f.txt", None);
    let before = snapshot(&outside);

    const ROUNDS: usize = 300;
    let swapper = Swapper::start(&race);
    let mut written = 0;
    let mut errors = std::collections::BTreeSet::new();
    for round in 0..ROUNDS {
        let calls = [
            json!({"path": "race/d/f.txt", "content": format!("round {round}\n"), "overwrite": true}),
            json!({"path": format!("race/d/new{round}/g.txt"), "content": "new\n"}),
        ];
        for arguments in calls {
            let result = call(&f.pack, "file_write", arguments).await;
            if result.is_error {
                errors.insert(result.text_content());
            } else {
                written += 1;
            }
        }
    }
    let swaps = swapper.finish();
    assert!(swaps > 0, "the swapper never ran");
    assert_eq!(
        snapshot(&outside),
        before,
        "a write reached outside the root"
    );
    for error in &errors {
        assert!(
            error.ends_with("changed while it was being opened; try again")
                || error.ends_with("is a symbolic link that leads outside the project root")
                || error.contains("changed on disk while the call ran"),
            "unexpected error: {error}"
        );
    }
    eprintln!("{ROUNDS} rounds, {swaps} swaps, {written} writes, errors {errors:?}");
}

#[tokio::test]
async fn d6_a_file_swapped_for_a_link_during_writes_never_writes_through_it() {
    let (f, outside, race) = race_fixture("target.txt", "d", Some("target.txt"));
    let before = snapshot(&outside);
    let swapper = Swapper::start(&race);
    for round in 0..300 {
        let result = call(
            &f.pack,
            "file_write",
            json!({"path": "race/d", "content": format!("round {round}\n"), "overwrite": true}),
        )
        .await;
        assert!(!everything(&result).contains(MARKER));
    }
    let swaps = swapper.finish();
    assert!(swaps > 0, "the swapper never ran");
    assert_eq!(snapshot(&outside), before, "a write went through the link");
}
