//! A command's environment: toolmux's secrets scrubbed, the user's ordinary variables kept.
//! One test in its own binary, because it sets variables in the test process.

use serde_json::json;
use toolmux_core::{CallContext, Channel, Source, SourceCall};
use toolmux_exec::{ExecPack, ExecSettings};
use toolmux_workspace::ProjectRoot;

#[test]
fn secrets_are_scrubbed_and_ordinary_variables_kept() {
    let secrets = [
        ("OPENAI_API_KEY", "sk-test-openai"),
        ("ANTHROPIC_API_KEY", "sk-test-anthropic"),
        ("TOOLMUX_TEST_KEY", "test-key-0123456789"),
        ("GITHUB_TOKEN", "ghp_test"),
        ("DB_PASSWORD", "hunter2"),
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
        ExecSettings::default(),
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
                arguments: json!({"command": "env"})
                    .as_object()
                    .cloned()
                    .expect("object"),
                context: &context,
            }),
        )
        .expect("call");
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
}
