//! Script tools registered from the command line (`toolmux tools add | remove`), and the one
//! config editor behind every write: a bad definition changes nothing, a CLI write and a running
//! server's write never lose each other's change, and a writer killed at any moment leaves the
//! old file or the new one, never a broken one.

mod support;

use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::toolmux_project;
use toolmux_testkit::eventually::wait_until;
use toolmux_testkit::peers::python;
use toolmux_testkit::served::{Served, config_with_key, run_with_key};

const ADD_PY: &str = "import json, sys\nargs = json.load(sys.stdin)\nprint(json.dumps({'sum': args['a'] + args['b']}))\n";

const ADD_SCHEMA: &str = r#"{"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]}"#;

#[test]
fn a_script_tool_added_from_the_cli_is_callable_and_removed() {
    let project = toolmux_project();
    project.config(r#"{"logs": {"retentionDays": 7}}"#);
    project.write("add.py", ADD_PY);
    let python = python().display().to_string();
    let out = project
        .run(&[
            "tools",
            "add",
            "add",
            "--description",
            "Adds two numbers.",
            "--input-schema",
            ADD_SCHEMA,
            "--",
            &python,
            "add.py",
        ])
        .ok();
    assert!(out.contains("added script tool `add`"), "{out}");
    // The user's own key stays, first, as written.
    let file = project.saved_config();
    let keys: Vec<&String> = file.as_object().expect("object").keys().collect();
    assert_eq!(keys, ["logs", "tools"]);
    assert_eq!(file["tools"]["add"]["command"], json!([python, "add.py"]));

    let called = project
        .run(&["tools", "call", "add", "-a", "a=2", "-a", "b=3", "--json"])
        .json();
    assert_eq!(called["structuredContent"], json!({"sum": 5}));

    // Adding it again needs --force; replacing keeps it callable.
    let again = project.run(&["tools", "add", "add", "-d", "x", "--", "true"]);
    assert_eq!(again.code(), 2, "{}", again.stderr());
    assert!(again.stderr().contains("--force"), "{}", again.stderr());

    let out = project.run(&["tools", "remove", "add"]).ok();
    assert!(out.contains("removed script tool `add`"), "{out}");
    assert_eq!(
        project.saved_config(),
        json!({"logs": {"retentionDays": 7}})
    );
    let gone = project.run(&["tools", "call", "add", "-a", "a=1", "-a", "b=1"]);
    assert_eq!(gone.code(), 4, "{}", gone.stderr());
    let missing = project.run(&["tools", "remove", "add"]);
    assert_eq!(missing.code(), 2, "{}", missing.stderr());
}

#[test]
fn a_definition_file_registers_a_tool() {
    let project = toolmux_project();
    project.write("add.py", ADD_PY);
    let definition = json!({
        "description": "Adds two numbers.",
        "inputSchema": serde_json::from_str::<Value>(ADD_SCHEMA).expect("schema"),
        "command": [python(), "add.py"],
        "timeoutMs": 5000,
    });
    let def = project.write("def.json", &definition.to_string());
    project
        .run(&["tools", "add", "add", "--file", &def.display().to_string()])
        .ok();
    assert_eq!(project.saved_config()["tools"]["add"]["timeoutMs"], 5000);
    let called = project
        .run(&[
            "tools",
            "call",
            "add",
            "--args",
            r#"{"a": 40, "b": 2}"#,
            "--json",
        ])
        .json();
    assert_eq!(called["structuredContent"], json!({"sum": 42}));
}

#[test]
fn a_bad_definition_exits_with_the_config_code_and_leaves_the_file_byte_identical() {
    let project = toolmux_project();
    let seed = "{\n    \"logs\": {\"retentionDays\": 7},\n    \"tools\": {}\n}\n";
    project.config(seed);
    for (args, expected) in [
        (
            vec!["tools", "add", "x", "--description", "no command"],
            "missing field `command`",
        ),
        (
            vec![
                "tools",
                "add",
                "x",
                "-d",
                "d",
                "--input-schema",
                "{not json",
                "--",
                "true",
            ],
            "--input-schema: not valid JSON",
        ),
        (
            vec![
                "tools",
                "add",
                "x",
                "-d",
                "d",
                "--policy",
                "sometimes",
                "--",
                "true",
            ],
            "sometimes",
        ),
        (
            vec!["tools", "add", "no spaces", "-d", "d", "--", "true"],
            "invalid tool name",
        ),
        (
            vec![
                "tools",
                "add",
                "x",
                "-d",
                "d",
                "--timeout-ms",
                "0",
                "--",
                "true",
            ],
            "timeoutMs",
        ),
    ] {
        let run = project.run(&args);
        assert_eq!(run.code(), 3, "{args:?}: {}", run.stderr());
        assert!(
            run.stderr().contains(expected),
            "{args:?}: expected {expected:?} in {}",
            run.stderr()
        );
        assert_eq!(
            std::fs::read_to_string(project.config_file()).expect("read"),
            seed,
            "{args:?} changed the file"
        );
    }
    // A name of another source's tool is refused before anything is written.
    let taken = project.run(&["tools", "add", "grep", "-d", "d", "--", "true"]);
    assert_eq!(taken.code(), 2, "{}", taken.stderr());
    assert_eq!(
        std::fs::read_to_string(project.config_file()).expect("read"),
        seed
    );
}

#[test]
fn cli_writes_and_a_running_servers_writes_never_lose_each_other() {
    let project = toolmux_project();
    project.config(&config_with_key(""));
    let served = Served::start(&project, &[]);
    std::thread::scope(|writers| {
        for i in 0..16 {
            let (project, served) = (&project, &served);
            writers.spawn(move || {
                if i % 2 == 0 {
                    let name = format!("cli{i}");
                    run_with_key(
                        project,
                        &["tools", "add", &name, "-d", "from the CLI", "--", "true"],
                    )
                    .ok();
                } else {
                    let body = json!({"name": format!("api{i}"), "description": "from the API", "command": ["true"]});
                    let response = served.send("POST", "/api/tools", Some(&body.to_string()));
                    assert_eq!(response.status, 201, "{}", response.body);
                }
            });
        }
    });
    let mut expected: Vec<String> = (0..16)
        .map(|i| {
            if i % 2 == 0 {
                format!("cli{i}")
            } else {
                format!("api{i}")
            }
        })
        .collect();
    expected.sort();
    assert_eq!(project.saved_tool_names(), expected);
    // The server picks up the CLI's writes through its watcher.
    wait_until(&format!("the server to list {expected:?}"), || {
        served.tool_names("scripts") == expected
    });
    served.stop();
}

/// A crash between the temporary file's write and its rename is simulated the only honest way:
/// by killing a real `toolmux tools add` / `tools remove` with SIGKILL (nothing of toolmux runs
/// after it) while its temporary file exists, at moments spread over the time between the
/// temporary file's creation and the rename, measured on an undisturbed run. The definition is
/// large (8 MiB) so that writing and flushing the temporary file takes a while. No test hook in
/// the binary: what is tested is the code that ships. After every kill the config file must
/// load and be exactly the old content or the new, and a leftover temporary file must never be
/// read as the config.
#[cfg(unix)]
#[test]
fn killing_a_writer_between_write_and_rename_leaves_the_old_config() {
    use std::os::unix::fs::MetadataExt;

    let project = toolmux_project();
    let seed = "{\"logs\": {\"retentionDays\": 7}}\n";
    let config = project.config(seed);
    let big = json!({
        "description": "x".repeat(8 << 20),
        "command": ["true"],
    });
    let def = project.write("big.json", &big.to_string());
    let def = def.display().to_string();
    let without: Value = serde_json::from_str(seed).expect("seed");
    let mut with = without.clone();
    with["tools"] = json!({"big": big});
    let dir = project.path().join(".toolmux");
    let temp_files = || {
        std::fs::read_dir(&dir)
            .expect("ls")
            .filter_map(Result::ok)
            .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
            .count()
    };
    let inode = || std::fs::metadata(&config).expect("stat").ino();
    let start = |has_big: bool| {
        let mut cmd = project.cmd();
        if has_big {
            cmd.args(["tools", "remove", "big"]);
        } else {
            cmd.args(["tools", "add", "big", "--file", &def]);
        }
        cmd.stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start toolmux")
    };
    // Waits until the writer's temporary file exists (or the writer is done); when.
    let wait_for_temp = |child: &mut std::process::Child| {
        loop {
            if temp_files() > 0 || child.try_wait().expect("poll").is_some() {
                return Instant::now();
            }
            std::thread::sleep(Duration::from_micros(200));
        }
    };

    // An undisturbed run: how long from the temporary file's creation to the rename.
    let before = inode();
    let mut child = start(false);
    let created = wait_for_temp(&mut child);
    while inode() == before {
        std::thread::sleep(Duration::from_micros(200));
    }
    let window = created.elapsed();
    assert!(child.wait().expect("wait").success());
    assert_eq!(project.saved_config(), with);
    assert!(start(true).wait().expect("wait").success());
    assert_eq!(project.saved_config(), without);

    // A cheap, fixed pseudo-random sequence (no dependency, the same run every time).
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let (mut killed_mid_write, mut old_kept, mut new_whole) = (0, 0, 0);
    let rounds = 30;
    for _ in 0..rounds {
        let has_big = project.saved_config().get("tools").is_some();
        let mut child = start(has_big);
        wait_for_temp(&mut child);
        std::thread::sleep(window.mul_f64((next() % 1000) as f64 / 1000.0));
        let _ = child.kill();
        let _ = child.wait();

        let now = project.saved_config();
        assert!(
            now == without || now == with,
            "the config file is neither the old nor the new content"
        );
        if (now == with) == has_big {
            old_kept += 1;
        } else {
            new_whole += 1;
        }
        let left = temp_files();
        if left > 0 {
            killed_mid_write += 1;
            // Killed between write and rename: the old content, exactly.
            assert_eq!(now == with, has_big, "a killed write changed the file");
        }
        // What toolmux reads loads, whatever temporary file lies beside it.
        let check = project.run(&["config", "check"]);
        assert_eq!(check.code(), 0, "{}", check.stderr());
    }
    eprintln!(
        "{rounds} kills in a {window:?} window: {killed_mid_write} between write and rename, \
         {old_kept} left the old file, {new_whole} the new one"
    );
    // Most kills really landed between the temporary file's creation and the rename.
    assert!(
        killed_mid_write * 2 >= rounds,
        "only {killed_mid_write} of {rounds} kills landed between write and rename"
    );
    // The next edit, under the lock, clears what killed writers left.
    let _ = project.run(&["tools", "remove", "big"]);
    project
        .run(&["tools", "add", "small", "-d", "d", "--", "true"])
        .ok();
    assert_eq!(temp_files(), 0);
}
