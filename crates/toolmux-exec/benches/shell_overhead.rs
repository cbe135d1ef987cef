//! Start-to-exit time of `shell` running `true`, sandbox on and off, and of the bare runner
//! (`true` without `bash -lc`), so the sandbox's own cost is the difference.
//! Run with `cargo bench -p toolmux-exec`; prints percentiles.

use std::time::{Duration, Instant};

use serde_json::json;
use toolmux_core::{CallContext, Channel, Source, SourceCall};
use toolmux_exec::{CommandSpec, ExecPack, ExecSettings, SandboxPolicy, run};
use toolmux_workspace::ProjectRoot;

const RUNS: usize = 200;

fn main() {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let dir = tempfile::tempdir().expect("temp dir");
    // A project as `shell` meets it: `.toolmux/` and a registry, both kept read-only.
    std::fs::create_dir(dir.path().join(".toolmux")).expect(".toolmux");
    std::fs::write(dir.path().join(".toolmux/config.json"), "{}").expect("config");
    std::fs::write(dir.path().join("mcp.json"), "{}").expect("registry");
    println!("shell start-to-exit, {RUNS} runs each (after 10 warm-up runs)");
    for sandbox in [false, true] {
        let pack = ExecPack::new(
            ProjectRoot::new(dir.path()).expect("root"),
            ExecSettings {
                sandbox,
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
        let times = runtime.block_on(async {
            let mut times = Vec::new();
            for i in 0..RUNS + 10 {
                let arguments = json!({"command": "true"})
                    .as_object()
                    .cloned()
                    .expect("object");
                let started = Instant::now();
                let result = pack
                    .call(SourceCall {
                        tool: &tool,
                        arguments,
                        context: &context,
                    })
                    .await
                    .expect("call");
                let elapsed = started.elapsed();
                assert_eq!(
                    result.structured_content.as_ref().expect("structured")["exitCode"],
                    0
                );
                if i >= 10 {
                    times.push(elapsed);
                }
            }
            times
        });
        report(
            &format!(
                "shell `true` (bash -lc), sandbox {}",
                if sandbox { "on " } else { "off" }
            ),
            times,
        );
        let times = runtime.block_on(async {
            let mut times = Vec::new();
            for i in 0..RUNS + 10 {
                let spec = CommandSpec {
                    program: "true".into(),
                    args: Vec::new(),
                    cwd: dir.path().to_path_buf(),
                    env: Vec::new(),
                    pass_env: Vec::new(),
                    timeout: Duration::from_secs(10),
                    max_output: 1024,
                    sandbox: SandboxPolicy {
                        enabled: sandbox,
                        network: false,
                        writable: vec![dir.path().to_path_buf()],
                        // As a project has them: `.toolmux/` and one registry read-only.
                        read_only: vec![dir.path().join(".toolmux"), dir.path().join("mcp.json")],
                        hidden: Vec::new(),
                        notes: Vec::new(),
                    },
                    require_sandbox: sandbox,
                };
                let started = Instant::now();
                let finished = run(spec).await.expect("run");
                let elapsed = started.elapsed();
                assert_eq!(finished.exit_code, Some(0));
                if i >= 10 {
                    times.push(elapsed);
                }
            }
            times
        });
        report(
            &format!(
                "runner `true` (no bash), sandbox {}",
                if sandbox { "on " } else { "off" }
            ),
            times,
        );
    }
}

fn report(what: &str, mut times: Vec<Duration>) {
    times.sort();
    let at = |p: f64| {
        let i = ((times.len() as f64 * p) as usize).min(times.len() - 1);
        times[i].as_secs_f64() * 1e3
    };
    println!(
        "{what}: p50 {:.2} ms, p90 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        at(0.5),
        at(0.9),
        at(0.99),
        at(1.0)
    );
}
