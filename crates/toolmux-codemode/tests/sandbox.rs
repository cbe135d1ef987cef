//! The sandbox against a real hub: results, logs, host calls through the pipeline, approvals,
//! denials, concurrency, and every limit (each followed by a script that still runs).

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use serde_json::{Value, json};
use tokio::sync::Notify;
use toolmux_codemode::{CodeModeError, Limits, RunOutput, Sandbox};
use toolmux_core::{Approval, ApprovalRequest, Approver, CallContext, Channel, Hub};

use common::{Records, hub_with_notes};

fn sandbox(hub: &Hub, limits: Limits) -> Sandbox {
    Sandbox::new(hub.downgrade(), limits)
}

async fn run(sandbox: &Sandbox, script: &str) -> RunOutput {
    sandbox.run(script, &CallContext::new(Channel::Cli)).await
}

/// The host is fine: a trivial script runs and answers.
async fn assert_next_script_runs(sandbox: &Sandbox) {
    let out = run(sandbox, "return 1 + 1;").await;
    assert_eq!(out.result.expect("the next script runs"), json!(2));
}

/// A sandbox under `limits` over a hub serving the notes source; the hub is returned too, as
/// the sandbox holds it only weakly.
fn notes_sandbox(limits: Limits) -> (Hub, Sandbox) {
    let (hub, _) = hub_with_notes();
    let sandbox = sandbox(&hub, limits);
    (hub, sandbox)
}

/// A sandbox with default limits over a hub serving the notes source, and the records of the
/// hub's calls.
fn recorded_notes_sandbox() -> (Hub, Sandbox, Arc<Records>) {
    let (hub, records) = hub_with_notes();
    let sandbox = sandbox(&hub, Limits::default());
    (hub, sandbox, records)
}

/// `script` is stopped with an error `is_expected` accepts, and the same sandbox then runs the
/// next script; returns how long the stopped script took.
async fn assert_stopped(
    sandbox: &Sandbox,
    script: &str,
    is_expected: fn(&CodeModeError) -> bool,
) -> Duration {
    let started = Instant::now();
    let out = run(sandbox, script).await;
    let took = started.elapsed();
    assert!(
        out.result.as_ref().is_err_and(is_expected),
        "{script}: {:?}",
        out.result
    );
    assert_next_script_runs(sandbox).await;
    took
}

fn out_of_memory(e: &CodeModeError) -> bool {
    matches!(e, CodeModeError::OutOfMemory(_))
}

fn stack_overflow(e: &CodeModeError) -> bool {
    matches!(e, CodeModeError::StackOverflow(_))
}

fn cpu_budget(e: &CodeModeError) -> bool {
    matches!(e, CodeModeError::CpuBudget(_))
}

fn timed_out(e: &CodeModeError) -> bool {
    matches!(e, CodeModeError::Timeout(_))
}

fn abandoned_by_the_watchdog(e: &CodeModeError) -> bool {
    matches!(e, CodeModeError::Watchdog { .. })
}

/// `script` returns exactly `expected`.
async fn assert_returns(sandbox: &Sandbox, script: &str, expected: Value) {
    let out = run(sandbox, script).await;
    assert_eq!(out.result.expect(script), expected, "{script}");
}

/// `script` fails with an error whose text contains `part`.
async fn assert_error_contains(sandbox: &Sandbox, script: &str, part: &str) {
    let text = error_text(sandbox, script).await;
    assert!(text.contains(part), "{text}");
}

/// The error `script` fails with, as text.
async fn error_text(sandbox: &Sandbox, script: &str) -> String {
    let out = run(sandbox, script).await;
    out.result.expect_err(script).to_string()
}

#[tokio::test]
async fn script_returns_its_value_and_console_output() {
    let (_hub, sandbox) = notes_sandbox(Limits::default());
    let out = run(
        &sandbox,
        "interface P { n: number }\nconst p: P = { n: 41 };\nconsole.log('n is', p.n, { ok: true });\nconsole.error('careful');\nreturn { answer: p.n + 1 };",
    )
    .await;
    assert_eq!(out.result.expect("runs"), json!({"answer": 42}));
    let logs: Vec<(String, String)> = out.logs.into_iter().map(|l| (l.level, l.message)).collect();
    assert_eq!(
        logs,
        vec![
            ("log".to_string(), "n is 41 {\"ok\":true}".to_string()),
            ("error".to_string(), "careful".to_string()),
        ]
    );
}

#[tokio::test]
async fn a_module_script_returns_its_default_export() {
    let (_hub, sandbox) = notes_sandbox(Limits::default());
    assert_returns(&sandbox, "import { notes } from '@capabilities/notes';\nconst r = await notes.add({ a: 1, b: 2 });\nexport default r.sum;", json!(3)).await;
}

#[tokio::test]
async fn tool_calls_go_through_the_pipeline_on_the_code_channel() {
    let (hub, records) = hub_with_notes();
    let sandbox = sandbox(&hub, Limits::default());
    let context = CallContext::new(Channel::Chat).with_session("s-1");
    let out = sandbox
        .run(
            "import { notes } from '@capabilities/notes';\nconst { sum } = await notes.add({ a: 2, b: 3 });\nconst text = await notes.echo({ text: 'hi' });\nreturn [sum, text];",
            &context,
        )
        .await;
    assert_eq!(out.result.expect("runs"), json!([5, "hi"]));
    assert_eq!(out.calls, 2);
    let records = records.0.lock().expect("records");
    assert_eq!(records.len(), 2);
    for record in records.iter() {
        assert_eq!(record.channel, Channel::Code);
        assert_eq!(record.session.as_deref(), Some("s-1"));
    }
}

#[tokio::test]
async fn invalid_arguments_and_tool_errors_throw_tool_errors_with_codes() {
    let (_hub, sandbox) = notes_sandbox(Limits::default());
    assert_returns(&sandbox, r#"import { notes } from '@capabilities/notes';
const codes: string[] = [];
for (const call of [() => notes.add({ a: 'x' } as any), () => notes.fail(), () => (globalThis as any).__toolmux_call('nope', {})]) {
  try { await call(); } catch (e) { codes.push(`${(e as ToolError).code}:${(e as ToolError).tool}:${e instanceof ToolError}`); }
}
return codes;"#, json!([
            "invalid_arguments:add:true",
            "tool_error:fail:true",
            "not_found:nope:true"
        ])).await;
}

#[tokio::test]
async fn a_denied_tool_is_not_in_the_api_and_calling_it_anyway_throws_the_rule() {
    let (_hub, sandbox) = notes_sandbox(Limits::default());
    // The typed API leaves a denied tool out: it would only cost the model context.
    assert_returns(&sandbox, "import { notes } from '@capabilities/notes';\nreturn [typeof (notes as any).wipe, typeof notes.add];", json!(["undefined", "function"])).await;

    // Reached by name anyway, the hub refuses it and names the rule.
    assert_returns(&sandbox, "try { await (globalThis as any).__toolmux_call('wipe', {}); return 'ran'; } catch (e) { return (e as Error).message; }", json!("tool `wipe` was denied: its policy is `deny` (rule for `wipe`)")).await;
}

#[tokio::test]
async fn an_ask_policy_pauses_the_script_until_the_person_answers() {
    let (hub, records) = hub_with_notes();
    let sandbox = Arc::new(sandbox(&hub, Limits::default()));
    let gate = Gate::new();
    let context = CallContext::new(Channel::Chat).with_approver(gate.clone());
    let script = "import { notes } from '@capabilities/notes';\nconsole.log('before');\nconst r = await notes.deleteNote({ id: 'n1' });\nconsole.log('after');\nreturn r;";
    let running = {
        let sandbox = Arc::clone(&sandbox);
        tokio::spawn(async move { sandbox.run(script, &context).await })
    };
    tokio::time::timeout(Duration::from_secs(5), gate.asked_signal.notified())
        .await
        .expect("the approver is asked");
    // The script is paused: nothing ran the tool yet.
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(!running.is_finished());
    assert!(records.0.lock().expect("records").is_empty());
    gate.answer(Approval::Allow);
    let out = running.await.expect("joins");
    assert_eq!(out.result.expect("runs"), json!("deleted"));
    assert_eq!(gate.asked.load(Ordering::SeqCst), 1);
    let messages: Vec<_> = out.logs.into_iter().map(|l| l.message).collect();
    assert_eq!(messages, vec!["before", "after"]);
}

#[tokio::test]
async fn waiting_for_approval_does_not_count_against_the_wall_clock() {
    let (hub, _) = hub_with_notes();
    let limits = Limits {
        wall_time: Duration::from_millis(300),
        ..Limits::default()
    };
    let sandbox = Arc::new(sandbox(&hub, limits));
    let gate = Gate::new();
    let context = CallContext::new(Channel::Chat).with_approver(gate.clone());
    let running = {
        let sandbox = Arc::clone(&sandbox);
        tokio::spawn(async move {
            sandbox
                .run(
                    "import { notes } from '@capabilities/notes';\nreturn await notes.deleteNote({ id: 'n1' });",
                    &context,
                )
                .await
        })
    };
    gate.asked_signal.notified().await;
    tokio::time::sleep(Duration::from_millis(800)).await;
    gate.answer(Approval::Deny {
        reason: "not today".to_string(),
    });
    let out = running.await.expect("joins");
    let text = out.result.expect_err("denied").to_string();
    assert!(
        text.contains("tool `delete_note` was denied: not today"),
        "{text}"
    );
}

#[tokio::test]
async fn a_thousand_concurrent_calls_with_promise_all_all_resolve() {
    let (_hub, sandbox, records) = recorded_notes_sandbox();
    let out = run(
        &sandbox,
        "import { notes } from '@capabilities/notes';\nconst results = await Promise.all(Array.from({ length: 1000 }, (_, i) => notes.add({ a: i, b: 1 })));\nreturn results.reduce((total, r) => total + r.sum, 0);",
    )
    .await;
    // sum over i of (i + 1) for i in 0..1000
    assert_eq!(out.result.expect("runs"), json!(500500));
    assert_eq!(out.calls, 1000);
    assert_eq!(records.0.lock().expect("records").len(), 1000);
}

/// Tests of one shape: under the limits, the script is stopped with the expected error (within
/// the milliseconds given, where they are), and the same sandbox then runs the next script.
macro_rules! stopped_then_the_next_script_runs {
    ($($name:ident($limits:expr, $script:expr, $expected:expr, $within:expr);)*) => {$(
        #[tokio::test]
        async fn $name() {
            let (_hub, sandbox) = notes_sandbox($limits);
            let took = assert_stopped(&sandbox, $script, $expected).await;
            let within_ms: Option<u64> = $within;
            if let Some(within_ms) = within_ms {
                assert!(took < Duration::from_millis(within_ms), "took {took:?}");
            }
        }
    )*};
}

stopped_then_the_next_script_runs! {
    a_memory_bomb_is_stopped_and_the_next_script_runs(
        Limits::default(),
        "const hoard: number[][] = [];\nwhile (true) { hoard.push(new Array(100000).fill(1)); }",
        out_of_memory,
        None
    );
    a_huge_string_built_by_a_builtin_is_stopped_and_the_next_script_runs(
        Limits::default(),
        "const s = 'x'.repeat(1e9);\nreturn s.length;",
        out_of_memory,
        None
    );
    an_infinite_loop_uses_up_its_cpu_budget_and_the_next_script_runs(
        Limits { cpu_time: Duration::from_millis(200), ..Limits::default() },
        "let i = 0;\nwhile (true) { i++; }",
        cpu_budget,
        Some(5_000)
    );
    deep_recursion_is_a_stack_overflow_and_the_next_script_runs(
        Limits::default(),
        "function down(n: number): number { return down(n + 1) + 1; }\nreturn down(0);",
        stack_overflow,
        None
    );
    a_script_waiting_on_a_slow_tool_hits_the_wall_clock_timeout(
        Limits { wall_time: Duration::from_millis(300), ..Limits::default() },
        "import { notes } from '@capabilities/notes';\nawait notes.slow({ ms: 10000 });",
        timed_out,
        Some(3_000)
    );
    // A big heap so that the built-in (a global regex replace over a 60 MB string, which does
    // not poll the interrupt handler) runs long instead of running out of memory.
    the_watchdog_abandons_a_builtin_that_ignores_the_interrupt_and_the_next_script_runs(
        Limits {
            memory_bytes: 1024 * 1024 * 1024,
            wall_time: Duration::from_millis(100),
            watchdog_grace: Duration::from_millis(100),
            ..Limits::default()
        },
        "return 'ab'.repeat(3e7).replace(/a/g, 'cc').length;",
        abandoned_by_the_watchdog,
        Some(1_500)
    );
    too_many_calls_at_once_run_out_of_memory_cleanly(
        Limits { memory_bytes: 8 * 1024 * 1024, ..Limits::default() },
        "import { notes } from '@capabilities/notes';\nawait Promise.all(Array.from({ length: 9000 }, (_, i) => notes.add({ a: i, b: 1 })));",
        out_of_memory,
        None
    );
}

#[tokio::test]
async fn a_promise_nothing_will_settle_is_reported_instead_of_hanging() {
    let (_hub, sandbox) = notes_sandbox(Limits::default());
    assert_error_contains(
        &sandbox,
        "await new Promise(() => {});",
        "nothing will settle",
    )
    .await;
}

#[tokio::test]
async fn only_capability_modules_can_be_imported() {
    let (_hub, sandbox) = notes_sandbox(Limits::default());
    for (script, refusal) in [
        (
            "import fs from 'fs';\nreturn fs;",
            "cannot import `fs`: code mode has no files, packages or network; only `@capabilities/<source>` modules can be imported (@capabilities/notes)",
        ),
        (
            "import { x } from '@capabilities/nope';\nreturn x;",
            "cannot import `@capabilities/nope`: no such source",
        ),
    ] {
        assert_error_contains(&sandbox, script, refusal).await;
    }
}

#[tokio::test]
async fn there_are_no_file_network_process_or_timer_globals() {
    let (_hub, sandbox) = notes_sandbox(Limits::default());
    assert_returns(&sandbox, "const g = globalThis as any;\nreturn ['setTimeout', 'setInterval', 'XMLHttpRequest', 'require', 'process', 'std', 'os', 'Deno', 'Bun', '__toolmux_native'].filter((name) => g[name] !== undefined);", json!([])).await;
}

#[tokio::test]
async fn errors_carry_the_typescript_line_and_column() {
    let (_hub, sandbox) = notes_sandbox(Limits::default());
    let text = error_text(&sandbox, "type Row = { id: number };\nconst rows: Row[] = [];\n\nfunction first(r: Row[]): Row {\n  return r[0]!;\n}\nconst id: number = first(rows).id;\nreturn id;").await;
    assert!(text.starts_with("TypeError"), "{text}");
    assert!(text.contains("script.ts:7:"), "{text}");

    let text = error_text(
        &sandbox,
        "const a: number = 1;\n\n   throw new Error('boom');",
    )
    .await;
    assert!(text.starts_with("Error: boom"), "{text}");
    assert!(text.contains("script.ts:3:"), "{text}");
}

#[tokio::test]
async fn the_standard_library_hashes_encodes_parses_and_formats() {
    let (_hub, sandbox) = notes_sandbox(Limits::default());
    assert_returns(
        &sandbox,
        r#"const rows = csv.parse("name,n\na,1\nb,2\n", { header: true });
return {
  sha256: hash.sha256("abc"),
  md5: hash.md5(new Uint8Array([97, 98, 99])),
  sha1: hash.sha1("abc"),
  b64: base64.encode("héllo"),
  back: base64.decode(base64.encode("héllo", { url: true })),
  bytes: Array.from(base64.decodeBytes("AAEC")),
  rows,
  csv: csv.format([{ a: 1, b: "x,y" }]),
  date: time.format(Date.UTC(2024, 1, 29, 13, 5), "%Y-%m-%d %H:%M", "+01:00"),
  parsed: time.parse("2024-02-29T12:00:00Z"),
  json: JSON.parse(JSON.stringify({ k: [1, 2] })),
};"#,
        json!({
            "sha256": "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
            "md5": "900150983cd24fb0d6963f7d28e17f72",
            "sha1": "a9993e364706816aba3e25717850c26c9cd0d89d",
            "b64": "aMOpbGxv",
            "back": "héllo",
            "bytes": [0, 1, 2],
            "rows": [{"name": "a", "n": "1"}, {"name": "b", "n": "2"}],
            "csv": "a,b\r\n1,\"x,y\"\r\n",
            "date": "2024-02-29 14:05",
            "parsed": 1709208000000u64,
            "json": {"k": [1, 2]},
        }),
    )
    .await;
}

#[tokio::test]
async fn a_result_that_is_not_json_is_a_clear_error() {
    let (_hub, sandbox) = notes_sandbox(Limits::default());
    let text = error_text(&sandbox, "const a: any = {};\na.self = a;\nreturn a;").await;
    assert!(
        text.starts_with("the script's result cannot be converted to JSON"),
        "{text}"
    );
}

#[tokio::test]
async fn syntax_errors_are_reported_before_anything_runs() {
    let (hub, records) = hub_with_notes();
    let sandbox = sandbox(&hub, Limits::default());
    let out = run(
        &sandbox,
        "import { notes } from '@capabilities/notes';\nawait notes.add({ a: 1, b: 2 });\nconst = 3;",
    )
    .await;
    let err = out.result.expect_err("does not parse");
    assert!(matches!(err, CodeModeError::Syntax(_)), "{err:?}");
    assert!(err.to_string().contains("script.ts:3:"), "{err}");
    assert!(records.0.lock().expect("records").is_empty());
}

#[tokio::test]
async fn a_script_throwing_null_is_not_mistaken_for_running_out_of_memory() {
    let (_hub, sandbox) = notes_sandbox(Limits::default());
    let out = run(&sandbox, "throw null;").await;
    assert_eq!(out.result.expect_err("throws").to_string(), "Uncaught null");
}

#[tokio::test]
async fn d17_a_push_memory_bomb_reports_the_memory_limit_not_uncaught_null() {
    let (_hub, sandbox) = notes_sandbox(Limits::default());
    for script in [
        "const a: string[] = [];\nfor (;;) a.push('x'.repeat(1 << 20));",
        "const a: string[] = [];\nfor (let i = 0; ; i++) a.push('x'.repeat(1 << 20) + i);",
        "const a: number[][] = [];\nfor (;;) a.push([1, 2, 3]);",
    ] {
        let out = run(&sandbox, script).await;
        let error = out.result.expect_err("runs out of memory");
        assert!(
            matches!(error, CodeModeError::OutOfMemory(_)),
            "{script}: {error:?}"
        );
        assert_eq!(
            error.to_string(),
            "the script ran out of memory (limit 64 MB)"
        );
    }
    assert_next_script_runs(&sandbox).await;
}

/// Past the bracket limit (1,000 levels), after the position.
const BRACKETS_TOO_DEEP: &str = "the script nests too deeply: more than 1000 levels of brackets, \
     braces, parentheses, template literals, type arguments or brace-less statements; split it \
     into smaller expressions or statements";

/// Past the token limit (20,000 tokens), after the position.
const TOKENS_TOO_DEEP: &str = "the script nests too deeply: an expression more than 20000 tokens \
     deep without a `,` or `;`; split it into smaller expressions or statements";

/// The script is refused before it parses, as a syntax error naming where it nests too deep.
async fn assert_too_deep(sandbox: &Sandbox, script: &str, position: &str, why: &str) {
    let out = run(sandbox, script).await;
    match out.result {
        Err(error @ CodeModeError::Syntax(_)) => assert_eq!(
            error.to_string(),
            format!("the script does not parse:\nscript.ts:{position}: {why}")
        ),
        other => panic!("{}: {other:?}", &script[..script.len().min(80)]),
    }
}

#[tokio::test]
async fn d1_deeply_nested_scripts_are_syntax_errors_not_an_abort() {
    let (_hub, sandbox) = notes_sandbox(Limits::default());
    let n = 10_000;
    // The issue's script: 10,000 nested arrays.
    let arrays = format!("const x = {}{}; return 1;", "[".repeat(n), "]".repeat(n));
    assert_too_deep(&sandbox, &arrays, "1:1011", BRACKETS_TOO_DEEP).await;
    for (script, position, why) in [
        (
            format!("return {}1{};", "(".repeat(n), ")".repeat(n)),
            "1:1008",
            BRACKETS_TOO_DEEP,
        ),
        (
            format!("return {}{};", "{a:".repeat(n) + "1", "}".repeat(n)),
            "1:3008",
            BRACKETS_TOO_DEEP,
        ),
        (
            format!("return {}1{};", "(() => ".repeat(n), ")".repeat(n)),
            "1:7002",
            BRACKETS_TOO_DEEP,
        ),
        (
            format!("return {}1{};", "`${".repeat(n), "}`".repeat(n)),
            "1:1508",
            BRACKETS_TOO_DEEP,
        ),
        (
            format!("type T = {}1{};\nreturn 1;", "A<".repeat(n), ">".repeat(n)),
            "1:2011",
            BRACKETS_TOO_DEEP,
        ),
        (
            format!("{}return 1;", "if (true) ".repeat(n)),
            "1:9994",
            BRACKETS_TOO_DEEP,
        ),
        // No brackets at all: long chains nest just as deep.
        (
            format!("return 1{};", " + 1".repeat(100_000)),
            "1:40006",
            TOKENS_TOO_DEEP,
        ),
        (
            format!("return {}true;", "!".repeat(100_000)),
            "1:20007",
            TOKENS_TOO_DEEP,
        ),
        (
            format!("return {}1;", "x => ".repeat(100_000)),
            "1:50005",
            TOKENS_TOO_DEEP,
        ),
        (
            format!(
                "const f = (x: any) => x;\nreturn f{};",
                "(f)".repeat(100_000)
            ),
            "2:60001",
            TOKENS_TOO_DEEP,
        ),
    ] {
        assert_too_deep(&sandbox, &script, position, why).await;
    }
    assert_next_script_runs(&sandbox).await;
}

#[tokio::test]
async fn nesting_within_the_limits_still_runs() {
    let (_hub, sandbox) = notes_sandbox(Limits::default());
    let n = 500;
    let script = format!(
        "const x = {}{};\nlet depth = 0;\nfor (let a: any = x; Array.isArray(a) && a.length; a = a[0]) depth++;\nreturn depth + {};",
        "[".repeat(n),
        "]".repeat(n),
        "1 + ".repeat(2000) + "0"
    );
    let out = run(&sandbox, &script).await;
    assert_eq!(out.result.expect("runs"), json!(n - 1 + 2000));
}

#[tokio::test]
async fn runtime_recursion_is_a_catchable_stack_overflow() {
    let (_hub, sandbox) = notes_sandbox(Limits::default());
    let out = run(&sandbox, "function f(): number { return f(); }\nf();").await;
    assert!(
        matches!(out.result, Err(CodeModeError::StackOverflow(_))),
        "{:?}",
        out.result
    );
    // The script itself can catch it, like any RangeError.
    assert_returns(&sandbox, "function f(): number { return f(); }\ntry { f(); } catch (e) { return (e as Error).name; }", json!("RangeError")).await;
    assert_next_script_runs(&sandbox).await;
}

/// An approver that waits until the test answers.
struct Gate {
    asked: AtomicUsize,
    asked_signal: Notify,
    answer: Mutex<Option<Approval>>,
    answered: Notify,
}

impl Gate {
    fn new() -> Arc<Self> {
        Arc::new(Self {
            asked: AtomicUsize::new(0),
            asked_signal: Notify::new(),
            answer: Mutex::new(None),
            answered: Notify::new(),
        })
    }

    fn answer(&self, approval: Approval) {
        *self.answer.lock().expect("gate lock") = Some(approval);
        self.answered.notify_waiters();
    }
}

#[async_trait]
impl Approver for Gate {
    async fn approve(&self, _request: &ApprovalRequest) -> Approval {
        self.asked.fetch_add(1, Ordering::SeqCst);
        self.asked_signal.notify_one();
        loop {
            let answered = self.answered.notified();
            if let Some(answer) = self.answer.lock().expect("gate lock").clone() {
                return answer;
            }
            answered.await;
        }
    }
}
