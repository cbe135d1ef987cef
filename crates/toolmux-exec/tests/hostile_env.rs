//! A command's environment: only the allowlist every child gets and what `shell.env` names —
//! never a secret, whatever it is called (D19: `MYSQL_PWD`, `DATABASE_URL`, `GITHUB_PAT` and
//! `SLACK_WEBHOOK_URL` passed the old name heuristic) — and not toolmux's own environment
//! through `/proc` either. One test in its own binary, because it sets variables in the test
//! process.

use serde_json::json;
use toolmux_core::{CallContext, Channel, Source, SourceCall};
use toolmux_exec::{ExecPack, ExecSettings};
use toolmux_workspace::ProjectRoot;

#[test]
fn only_allowlisted_and_named_variables_reach_a_command() {
    let secrets = [
        ("OPENAI_API_KEY", "sk-test-openai"),
        ("ANTHROPIC_API_KEY", "sk-test-anthropic"),
        ("TOOLMUX_TEST_KEY", "test-key-0123456789"),
        ("GITHUB_TOKEN", "ghp_test"),
        ("DB_PASSWORD", "hunter2"),
        ("MYSQL_PWD", "mysql-pw-secret"),
        ("DATABASE_URL", "postgres://user:pg-pass-secret@db/x"),
        ("GITHUB_PAT", "github-pat-secret"),
        ("SLACK_WEBHOOK_URL", "https://hooks.example/slack-secret"),
    ];
    // SAFETY: set before any other thread of this test binary exists (its only test, and the
    // runtime is built afterwards), so nothing reads the environment concurrently.
    #[allow(unsafe_code)]
    unsafe {
        for (name, value) in secrets {
            std::env::set_var(name, value);
        }
        std::env::set_var("PROJECT_FLAVOUR", "plain-value");
    }
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let dir = tempfile::tempdir().expect("dir");
    let pack = ExecPack::new(
        ProjectRoot::new(dir.path()).expect("root"),
        ExecSettings {
            env: vec![
                "PROJECT_FLAVOUR".to_string(),
                "NOT_SET_ANYWHERE".to_string(),
            ],
            ..ExecSettings::default()
        },
        None,
    );
    let tool = pack
        .tools()
        .into_iter()
        .find(|t| t.name == "shell")
        .expect("shell");
    let context = CallContext::new(Channel::Cli);
    let us = std::process::id();
    let result = runtime
        .block_on(
            pack.call(SourceCall {
                tool: &tool,
                // The variables, then toolmux's own environment (this test process) and its
                // fork's (the command's parent, its PID namespace's init) as `/proc` shows them.
                arguments: json!({"command": format!("env; echo ---; \
                    cat /proc/{us}/environ /proc/$PPID/environ 2>&1 | tr '\\0' '\\n'")})
                .as_object()
                .cloned()
                .expect("object"),
                context: &context,
            }),
        )
        .expect("call");
    if result.is_error {
        // This system cannot give the sandbox: the call must have been refused for it, and
        // only where the system really cannot.
        let text = result.text_content();
        assert!(text.contains("requireSandbox"), "{text}");
        assert!(
            !toolmux_testkit::sandbox::system_can_sandbox(),
            "this system makes the sandbox's namespaces, but the call was refused: {text}"
        );
        return;
    }
    let out = result.structured_content.expect("structured");
    let stdout = out["stdout"].as_str().expect("stdout");
    let (env, proc) = stdout.split_once("---\n").expect("both halves");
    // Nothing of toolmux is in the command's own `/proc`; its init's entry is refused.
    let toolmux =
        toolmux_testkit::sandbox::toolmux_proc_refusal(&out["sandbox"]["notes"].to_string());
    assert_eq!(
        proc,
        format!("cat: /proc/{us}/environ: {toolmux}\ncat: /proc/1/environ: Permission denied\n"),
        "{out}"
    );
    for (name, value) in secrets {
        assert!(
            !env.contains(value),
            "{name}'s value reached the command:\n{env}"
        );
        assert!(
            !env.contains(&format!("{name}=")),
            "{name} reached the command"
        );
    }
    for kept in ["PATH=", "HOME=", "PROJECT_FLAVOUR=plain-value", "TMPDIR="] {
        assert!(env.contains(kept), "{kept} is missing:\n{env}");
    }
    assert!(!env.contains("NOT_SET_ANYWHERE"), "{env}");
}
