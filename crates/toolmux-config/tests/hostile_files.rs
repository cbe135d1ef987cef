//! Hostile files for the configuration loader and `toolmux import`: what a cloned repository
//! or another program can put where toolmux reads (THREATS.md, rules 1 and 8). A file past the
//! cap is refused by size without being read whole, a FIFO is refused without waiting for a
//! writer, nesting past the parser's limit is a clear error rather than a stack overflow, and
//! a registry path cannot reach outside the project.

use std::path::Path;

use toolmux_config::{
    ImportError, ImportFormat, MAX_CONFIG_FILE_BYTES, load, project_config_path, read_import,
    referencing_files,
};

fn project() -> tempfile::TempDir {
    tempfile::tempdir().expect("temp dir")
}

fn write_config(project: &Path, text: &str) {
    let path = project_config_path(project);
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, text).expect("write");
}

fn import_error(format: ImportFormat, path: &Path, project: &Path) -> String {
    match read_import(format, path, project) {
        Ok(servers) => panic!("imported {servers:?}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn a_huge_claude_json_is_refused_by_its_size() {
    let home = project();
    let path = home.path().join(".claude.json");
    // Sparse: 4 GiB that take no disk; read whole, it would take 4 GiB of memory.
    std::fs::File::create(&path)
        .and_then(|f| f.set_len(4 << 30))
        .expect("a huge file");
    let error = import_error(ImportFormat::ClaudeCodeUser, &path, home.path());
    assert_eq!(
        error,
        format!(
            "cannot read `{}`: the file is larger than {} MiB, more than any configuration needs",
            path.display(),
            MAX_CONFIG_FILE_BYTES / (1024 * 1024)
        )
    );
}

#[test]
fn a_fifo_in_place_of_claude_json_is_refused_without_waiting() {
    let home = project();
    let path = home.path().join(".claude.json");
    toolmux_testkit::fifo::mkfifo(&path);
    // A writer on the other end: a read that waited gets text and fails the test, not hangs it.
    let error = toolmux_testkit::fifo::read_with_a_writer(&path, b"{}", || {
        import_error(ImportFormat::ClaudeCodeUser, &path, home.path())
    });
    assert_eq!(
        error,
        format!(
            "cannot read `{}`: a FIFO, not a regular file",
            path.display()
        )
    );
}

#[test]
fn a_deeply_nested_claude_json_is_a_clear_error() {
    let home = project();
    let path = home.path().join(".claude.json");
    let depth = 1_000_000;
    let text = format!(
        "{{\"projects\": {}{}}}",
        "[".repeat(depth),
        "]".repeat(depth)
    );
    std::fs::write(&path, text).expect("write");
    let error = import_error(ImportFormat::ClaudeCodeUser, &path, home.path());
    assert_eq!(
        error,
        format!(
            "`{}` is not a Claude Code (user and local scopes) MCP configuration: invalid JSON: \
             recursion limit exceeded at line 1 column 140",
            path.display()
        )
    );
}

#[test]
fn a_deeply_nested_codex_config_is_a_clear_error() {
    let home = project();
    let path = home.path().join("config.toml");
    let depth = 1_000_000;
    let text = format!("x = {}{}\n", "[".repeat(depth), "]".repeat(depth));
    std::fs::write(&path, text).expect("write");
    let error = import_error(ImportFormat::Codex, &path, home.path());
    assert!(
        matches!(
            read_import(ImportFormat::Codex, &path, home.path()),
            Err(ImportError::Format { .. })
        ),
        "{error}"
    );
    assert!(error.contains("invalid TOML"), "{error}");
}

#[test]
fn a_deeply_nested_configuration_file_is_a_clear_error() {
    let dir = project();
    let depth = 1_000_000;
    write_config(
        dir.path(),
        &format!(
            "{{\"tools\": {{\"t\": {{\"description\": \"d\", \"command\": [\"true\"], \
             \"inputSchema\": {{\"a\": {}{}}}}}}}}}",
            "[".repeat(depth),
            "]".repeat(depth)
        ),
    );
    let error = load(dir.path(), None).expect_err("refused");
    assert_eq!(error.message, "recursion limit exceeded", "{error}");
    assert_eq!(error.file, project_config_path(dir.path()));
}

/// A registry names commands to run and servers to start, and a configuration may come with
/// a cloned repository: its registries stay inside the project. An absolute path, a `..` and
/// a symbolic link out are refused with the field that names them, and the start-up scan of
/// the variables the files name does not read them either.
#[test]
fn a_registry_outside_the_project_is_refused_and_never_read() {
    let outside = project();
    let secret = outside.path().join("tools.json");
    std::fs::write(
        &secret,
        r#"{"tools": {"x": {"description": "d", "script": "x.sh", "env": "${OUTSIDE_VAR}"}}}"#,
    )
    .expect("write");
    let dir = project();
    std::os::unix::fs::symlink(&secret, dir.path().join("linked.json")).expect("symlink");
    let climbing = format!(
        "../{}/tools.json",
        outside
            .path()
            .file_name()
            .expect("a name")
            .to_string_lossy()
    );
    let cases = [
        (
            secret.display().to_string(),
            format!(
                "`{}` is an absolute path; a registry is named by a path relative to the \
                 project directory, inside it",
                secret.display()
            ),
        ),
        (
            climbing.clone(),
            format!(
                "`{climbing}` climbs out with `..`; a registry is named by a path relative to \
                 the project directory, inside it"
            ),
        ),
        (
            "linked.json".to_string(),
            format!(
                "`linked.json` leads out of the project directory through a symbolic link (to \
                 `{}`); a registry stays inside the project",
                secret.canonicalize().expect("real path").display()
            ),
        ),
    ];
    for (named, message) in cases {
        let config = serde_json::json!({"registries": ["inside.json", named]}).to_string();
        std::fs::write(dir.path().join("inside.json"), r#"{"tools": []}"#).expect("write");
        write_config(dir.path(), &config);
        let error = load(dir.path(), None).expect_err("refused");
        assert_eq!(error.file, project_config_path(dir.path()), "{error}");
        assert_eq!(error.field, "registries[1]", "{error}");
        assert_eq!(error.message, message);
        let read: Vec<_> = referencing_files(dir.path(), None)
            .into_iter()
            .map(|f| f.path)
            .collect();
        assert_eq!(
            read,
            [
                project_config_path(dir.path()),
                dir.path().join("inside.json")
            ]
        );
    }
}
