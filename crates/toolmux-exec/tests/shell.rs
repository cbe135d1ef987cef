//! `shell` on real processes: exit codes, the time limit and cancellation stopping the whole
//! group (checked in `/proc`), the output cap keeping the tail, what a command leaves behind,
//! and the sandbox — writes outside the root and the network refused.

mod support;

use std::io::ErrorKind;
use std::net::TcpListener;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::call;
use toolmux_core::{CallContext, Channel, Source, SourceCall};
use toolmux_exec::{ExecPack, ExecSettings};
use toolmux_testkit::processes::{alive, processes_with, unique_sleep};
use toolmux_workspace::ProjectRoot;

fn pack(root: &Path, settings: ExecSettings) -> ExecPack {
    ExecPack::new(ProjectRoot::new(root).expect("root"), settings, None)
}

async fn shell(pack: &ExecPack, arguments: Value) -> Value {
    let result = call(pack, "shell", arguments).await;
    assert!(!result.is_error, "{}", result.text_content());
    result.structured_content.expect("a structured result")
}

/// Waits (at most `limit`) until no live process has `marker` on its command line.
fn assert_none_left(marker: &str, limit: Duration) {
    let deadline = Instant::now() + limit;
    loop {
        let left: Vec<u32> = processes_with(marker)
            .into_iter()
            .filter(|p| alive(*p))
            .collect();
        if left.is_empty() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "processes left running: {left:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[tokio::test]
async fn exit_codes_output_and_signals_are_reported() {
    let dir = tempfile::tempdir().expect("dir");
    let pack = pack(dir.path(), ExecSettings::default());
    let out = shell(&pack, json!({"command": "echo out; echo err >&2; exit 3"})).await;
    assert_eq!(out["exitCode"], 3);
    assert_eq!(out["signal"], Value::Null);
    assert_eq!(out["stdout"], "out\n");
    // Ends with: a login shell's profile may complain first (one that writes under $HOME,
    // like `pyenv rehash`, is refused by the sandbox).
    let stderr = out["stderr"].as_str().expect("stderr");
    assert!(stderr == "err\n" || stderr.ends_with("\nerr\n"), "{stderr}");
    assert_eq!(out["timedOut"], false);

    let out = shell(&pack, json!({"command": "kill -KILL $$"})).await;
    assert_eq!(out["exitCode"], Value::Null);
    assert_eq!(out["signal"], "SIGKILL");

    std::fs::create_dir(dir.path().join("sub")).expect("sub");
    let out = shell(&pack, json!({"command": "pwd", "cwd": "sub"})).await;
    let pwd = out["stdout"].as_str().expect("stdout").trim().to_string();
    assert!(pwd.ends_with("/sub"), "{pwd}");

    for outside in ["..", "/etc", "missing"] {
        let result = call(&pack, "shell", json!({"command": "pwd", "cwd": outside})).await;
        assert!(result.is_error, "cwd {outside} was accepted");
    }
}

#[tokio::test]
async fn the_time_limit_stops_the_whole_group() {
    let dir = tempfile::tempdir().expect("dir");
    let pack = pack(dir.path(), ExecSettings::default());
    let marker = unique_sleep();
    let started = Instant::now();
    let out = shell(
        &pack,
        json!({"command": format!("sleep {marker} & sleep {marker}"), "timeoutMs": 300}),
    )
    .await;
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(out["timedOut"], true);
    assert_eq!(out["exitCode"], Value::Null);
    assert!(out["signal"].is_string(), "{out}");
    assert_none_left(&marker, Duration::from_secs(2));
}

#[tokio::test]
async fn a_background_process_and_a_double_fork_are_stopped_when_the_command_ends() {
    let dir = tempfile::tempdir().expect("dir");
    let pack = pack(dir.path(), ExecSettings::default());
    let marker = unique_sleep();
    let out = shell(
        &pack,
        json!({"command": format!(
            "sleep {marker} & (setsid sleep {marker} &) ; nohup sleep {marker} >/dev/null 2>&1 & echo started"
        )}),
    )
    .await;
    assert_eq!(out["exitCode"], 0);
    assert_eq!(out["stdout"], "started\n");
    assert_none_left(&marker, Duration::from_secs(2));
    let notes = out["notes"].to_string();
    assert!(notes.contains("background"), "{notes}");
}

#[tokio::test]
async fn a_cancelled_call_stops_its_group() {
    let dir = tempfile::tempdir().expect("dir");
    let pack = pack(dir.path(), ExecSettings::default());
    let marker = unique_sleep();
    let pid_file = dir.path().join("pid");
    let command = format!("sleep {marker} & echo $! > pid; wait");
    let task = {
        let pack = pack.clone();
        tokio::spawn(async move { shell(&pack, json!({"command": command})).await })
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    while !pid_file.exists() || processes_with(&marker).is_empty() {
        assert!(Instant::now() < deadline, "the command did not start");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    task.abort();
    assert!(task.await.expect_err("cancelled").is_cancelled());
    // SIGTERM at once, SIGKILL and the sweep a second later.
    assert_none_left(&marker, Duration::from_secs(4));
}

#[tokio::test]
async fn a_gigabyte_of_output_is_read_quickly_and_capped_with_its_tail() {
    let dir = tempfile::tempdir().expect("dir");
    let pack = pack(
        dir.path(),
        ExecSettings {
            max_output_bytes: 1000,
            ..ExecSettings::default()
        },
    );
    let started = Instant::now();
    let out = shell(&pack, json!({"command": "yes | head -c 1G"})).await;
    let took = started.elapsed();
    assert_eq!(out["exitCode"], 0);
    assert_eq!(out["stdoutBytes"], 1u64 << 30);
    assert_eq!(out["stdoutDroppedBytes"], (1u64 << 30) - 1000);
    assert!(out["stdout"].as_str().expect("stdout").len() < 1200);
    assert!(took < Duration::from_secs(30), "1 GiB took {took:?}");
    println!("1 GiB of output read in {took:?}");

    let out = shell(&pack, json!({"command": "seq 1 200000"})).await;
    let text = out["stdout"].as_str().expect("stdout");
    assert!(text.starts_with("1\n2\n3\n"), "{text}");
    assert!(
        text.ends_with("199999\n200000\n"),
        "the tail is lost: {text}"
    );
    assert!(text.contains("bytes dropped"), "{text}");
}

#[tokio::test]
async fn writing_outside_the_root_is_refused_when_landlock_is_available() {
    let dir = tempfile::tempdir().expect("dir");
    let outside = tempfile::tempdir().expect("outside");
    let target = outside.path().join("escaped");
    let pack = pack(dir.path(), ExecSettings::default());
    let out = shell(
        &pack,
        json!({"command": format!(
            "echo inside > inside.txt && echo tmp > \"$TMPDIR/t\" && echo x > /dev/null && echo no > {}",
            target.display()
        )}),
    )
    .await;
    match out["sandbox"]["landlock"].as_str() {
        Some("full" | "partial") => {
            assert_ne!(out["exitCode"], 0, "{out}");
            assert!(!target.exists(), "a write outside the root got through");
            assert!(
                out["stderr"]
                    .as_str()
                    .expect("stderr")
                    .contains("Permission denied"),
                "{out}"
            );
            assert_eq!(
                std::fs::read_to_string(dir.path().join("inside.txt")).expect("inside"),
                "inside\n"
            );
        }
        other => {
            // Never a silent pass: without Landlock the result must say so.
            assert_eq!(other, Some("unavailable"), "{out}");
            eprintln!("skipped: this kernel has no Landlock ({})", out["sandbox"]);
        }
    }
    // With the sandbox off, the same command writes there (the refusal above was Landlock's).
    let open = pack_with_sandbox_off(dir.path());
    let out = shell(
        &open,
        json!({"command": format!("echo yes > {}", target.display())}),
    )
    .await;
    assert_eq!(out["exitCode"], 0, "{out}");
    assert_eq!(out["sandbox"]["landlock"], "off");
    assert!(target.exists());
}

fn pack_with_sandbox_off(root: &Path) -> ExecPack {
    pack(
        root,
        ExecSettings {
            sandbox: false,
            ..ExecSettings::default()
        },
    )
}

#[tokio::test]
async fn the_network_is_blocked_unless_the_configuration_allows_it() {
    let dir = tempfile::tempdir().expect("dir");
    let listener = TcpListener::bind("127.0.0.1:0").expect("listen");
    listener.set_nonblocking(true).expect("non-blocking");
    let port = listener.local_addr().expect("address").port();
    let connect =
        json!({"command": format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected")});

    let blocked = pack(dir.path(), ExecSettings::default());
    let out = shell(&blocked, connect.clone()).await;
    match out["sandbox"]["network"].as_str() {
        Some("blocked") => {
            assert_ne!(out["exitCode"], 0, "{out}");
            assert_eq!(out["stdout"], "", "{out}");
            assert_eq!(
                listener.accept().map(|_| ()).map_err(|e| e.kind()),
                Err(ErrorKind::WouldBlock),
                "the listener saw a connection"
            );
        }
        other => {
            assert_eq!(other, Some("unavailable"), "{out}");
            eprintln!("skipped: no network namespace here ({})", out["sandbox"]);
        }
    }

    // A call may not ask for the network unless the configuration permits it.
    let refused = call(
        &blocked,
        "shell",
        json!({"command": "true", "network": true}),
    )
    .await;
    assert!(refused.is_error);
    assert!(refused.text_content().contains("networkPerCall"));

    let per_call = pack(
        dir.path(),
        ExecSettings {
            network_per_call: true,
            ..ExecSettings::default()
        },
    );
    let mut allowed = connect.clone();
    allowed["network"] = json!(true);
    let out = shell(&per_call, allowed).await;
    assert_eq!(out["sandbox"]["network"], "allowed");
    assert_eq!(out["exitCode"], 0, "{out}");
    assert_eq!(out["stdout"], "connected\n");
    let deadline = Instant::now() + Duration::from_secs(5);
    while listener.accept().is_err() {
        assert!(
            Instant::now() < deadline,
            "the allowed connection never arrived"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[tokio::test]
async fn the_approval_preview_shows_the_command() {
    let dir = tempfile::tempdir().expect("dir");
    let pack = pack(dir.path(), ExecSettings::default());
    let descriptor = pack
        .tools()
        .into_iter()
        .find(|t| t.name == "shell")
        .expect("shell");
    assert_eq!(descriptor.annotations.destructive_hint, Some(true));
    assert!(descriptor.output_schema.is_some());
    let context = CallContext::new(Channel::Cli);
    let preview = pack
        .preview(SourceCall {
            tool: &descriptor,
            arguments: json!({"command": "rm -rf build"})
                .as_object()
                .cloned()
                .expect("object"),
            context: &context,
        })
        .await
        .expect("a preview");
    assert!(preview.starts_with("$ rm -rf build\n"), "{preview}");
    assert!(preview.contains("no network"), "{preview}");
}
