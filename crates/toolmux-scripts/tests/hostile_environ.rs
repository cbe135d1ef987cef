//! Finding D19: a child read toolmux's secrets from `/proc/$PPID/environ`, and a child that
//! inherits the environment got every secret. `environ::hide_secrets` must leave them in
//! neither place while toolmux's own lookups (`${VAR}` expansion) still find them.
//!
//! `hide_secrets` rewrites the whole process's environment and must run before any other
//! thread exists, so this test has no harness: `main` starts this same executable again with
//! secrets in its environment (placed by the kernel in the original block `/proc` shows, as
//! toolmux's are), and that run scrubs itself first thing and checks.

use std::ffi::OsStr;
use std::process::Command;
use std::sync::LazyLock;

use toolmux_testkit::processes::SHELL_SECRETS;

const CHILD: &str = "TOOLMUX_ENVIRON_TEST_RUN";

/// Secret variables and their values, as a user's shell may hold them, and a token under a
/// name that says nothing of a secret.
static SECRETS: LazyLock<Vec<(&str, &str)>> = LazyLock::new(|| {
    let mut secrets = SHELL_SECRETS.to_vec();
    secrets.push(("INNOCENT_NAME", "ghp_0123456789abcdefghijklmnopqrstuvwxyz"));
    secrets
});

/// A proxy with a password: kept in the process (toolmux's HTTP clients read it) but shown to
/// no child and not in `/proc`.
const PROXY: (&str, &str) = (
    "HTTPS_PROXY",
    "http://proxyuser:proxy-pw-1123@proxy.example:3128",
);

/// A variable the configuration names (`${SERVICE_CREDENTIAL_VAR}`, `--api-key-env`), whose
/// name says nothing, and one that names a basic every program needs.
const NAMED: (&str, &str) = ("SERVE_ACCESS", "named-value-5150");

fn named() -> Vec<String> {
    vec![NAMED.0.to_string(), "HOME".to_string()]
}

/// Plain settings, which stay.
const PLAIN: (&str, &str) = ("PLAIN_SETTING", "plain-value-4242");

fn main() {
    if std::env::var_os(CHILD).is_some() {
        checks();
        return;
    }
    let exe = std::env::current_exe().expect("this test's executable");
    let output = Command::new(exe)
        .env(CHILD, "1")
        .envs(SECRETS.iter().copied())
        .envs([PROXY, PLAIN, NAMED])
        .output()
        .expect("run the test again");
    print!("{}", String::from_utf8_lossy(&output.stdout));
    eprint!("{}", String::from_utf8_lossy(&output.stderr));
    assert!(
        output.status.success(),
        "the scrubbed run failed: {}",
        output.status
    );
}

fn checks() {
    // SAFETY: first thing in `main` of a run without a harness: no other thread exists.
    #[allow(unsafe_code)]
    let hidden = unsafe { toolmux_scripts::environ::hide_secrets(&named()) };
    assert!(hidden.problems.is_empty(), "{:?}", hidden.problems);
    // These, and any secret the environment running the tests holds.
    assert!(hidden.overwritten > SECRETS.len() + 1, "{hidden:?}");

    let own_environ = std::fs::read("/proc/self/environ").expect("read /proc/self/environ");
    let shown = String::from_utf8_lossy(&own_environ);
    for (name, value) in SECRETS.iter().chain([&PROXY, &NAMED]) {
        assert!(!shown.contains(value), "/proc/self/environ shows {name}");
    }
    assert!(shown.contains(&format!("{}={}", PLAIN.0, PLAIN.1)));

    for (name, value) in SECRETS.iter().chain([&NAMED]) {
        assert!(
            std::env::var_os(name).is_none(),
            "{name} is still in the process"
        );
        assert_eq!(
            toolmux_core::process_env::var(name).as_deref(),
            Some(*value),
            "toolmux's own lookup of {name}"
        );
        assert!(toolmux_core::process_env::was_removed(name));
    }
    assert_eq!(std::env::var(PROXY.0).as_deref(), Ok(PROXY.1));
    assert_eq!(std::env::var(PLAIN.0).as_deref(), Ok(PLAIN.1));
    assert!(
        std::env::var_os("HOME").is_some(),
        "a basic named by the configuration stays"
    );

    #[cfg(target_os = "linux")]
    assert_eq!(nix::sys::prctl::get_dumpable(), Ok(false));

    // What children see, allowlisted or inheriting everything: neither toolmux's environ
    // block nor their own environment has a secret.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    for inherit_all in [false, true] {
        let seen = runtime.block_on(child_sees(inherit_all));
        for (name, value) in SECRETS.iter().chain([&PROXY, &NAMED]) {
            assert!(
                !seen.contains(value),
                "a child (inherit_all {inherit_all}) sees {name}:\n{seen}"
            );
        }
        let (_, own) = seen.split_once("---\n").expect("both parts");
        assert_eq!(
            own.contains(PLAIN.1),
            inherit_all,
            "a plain setting reaches only a child that inherits everything"
        );
    }

    // A configuration that names a secret still gives it to its child.
    let given = runtime.block_on(async {
        let value = toolmux_core::process_env::var("OPENAI_API_KEY").expect("kept");
        run("echo \"$GIVEN\"", [("GIVEN", value.as_str())], false).await
    });
    assert_eq!(given.trim(), SECRETS[0].1);
    println!("hostile_environ: secrets hidden from /proc and children, kept for toolmux");
}

async fn child_sees(inherit_all: bool) -> String {
    run(
        "tr '\\0' '\\n' < /proc/$PPID/environ; echo ---; env",
        std::iter::empty::<(&str, &str)>(),
        inherit_all,
    )
    .await
}

async fn run<'a>(
    script: &str,
    env: impl IntoIterator<Item = (&'a str, &'a str)>,
    inherit_all: bool,
) -> String {
    let dir = std::env::temp_dir();
    let (process, mut guard) = toolmux_scripts::child::spawn(
        OsStr::new("sh"),
        &["-c".to_string(), script.to_string()],
        &dir,
        env,
        inherit_all,
    )
    .expect("spawn sh");
    let output = process.wait_with_output().await.expect("wait");
    guard.sweep().await;
    assert!(output.status.success(), "{output:?}");
    String::from_utf8_lossy(&output.stdout).into_owned()
}
