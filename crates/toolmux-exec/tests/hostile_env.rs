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
    let result = runtime
        .block_on(
            pack.call(SourceCall {
                tool: &tool,
                // The variables, then toolmux's own environment (the command's parent is this
                // test process) as far as `/proc` shows it.
                arguments: json!({"command": "env; echo ---; \
                    cat /proc/$PPID/environ /proc/$PPID/task/*/environ 2>/dev/null | tr '\\0' '\\n'"})
                    .as_object()
                    .cloned()
                    .expect("object"),
                context: &context,
            }),
        )
        .expect("call");
    if result.is_error {
        // This system cannot give the sandbox: the call must have been refused for it.
        assert!(
            result.text_content().contains("requireSandbox"),
            "{}",
            result.text_content()
        );
        return;
    }
    let env = result.structured_content.expect("structured")["stdout"]
        .as_str()
        .expect("stdout")
        .to_string();
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
