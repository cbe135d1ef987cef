//! Token benchmark: how much a model has to read to do a multi-step task with plain tool calls
//! and with one code-mode script. Run: `cargo bench -p toolmux-codemode --bench tokens`.
//!
//! Three tasks over this repository's own tree, served by the real `workspace` pack through a
//! real hub, each done twice:
//!
//! - **plain**: the calls a model would make, executed through `Hub::call`. The transcript is
//!   what the model reads: the definitions of every offered tool (name, description, input
//!   schema, as a provider sends them), the question, every call's name and arguments JSON,
//!   every result's text content exactly as returned, and the final answer. It is counted two
//!   ways: reading each file whole to count its lines (what the tool description suggests),
//!   and the cheapest way a model could know of, `file_read` with `limit: 1`, whose note gives
//!   the line count. The second is a lower bound for plain calls, not what models usually do.
//! - **code mode**: the definitions of `run_code` and `search_tools`, the question, one real
//!   `search_tools` call and its result, the script (as `run_code`'s arguments JSON), the
//!   `run_code` result, and the same final answer. The script's answer must equal the answer
//!   computed from the plain calls.
//!
//! Everything is tokenised with cl100k (`tiktoken-rs`). Per-message framing tokens are left
//! out; plain calls have far more messages, so that favours them. Set `TOOLMUX_TOKENS_DUMP` to
//! a directory to have every transcript written there for inspection.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use serde_json::{Map, Value, json};
use tiktoken_rs::CoreBPE;
use toolmux_codemode::{CODEMODE_SOURCE, CodeModeSource, Limits, RUN_CODE, SEARCH_TOOLS};
use toolmux_core::{CallContext, Channel, Hub, HubSettings, NullSink, ToolResult};
use toolmux_workspace::{WorkspaceLimits, WorkspacePack};

/// What a model has read so far in one conversation.
#[derive(Default)]
struct Transcript {
    parts: Vec<String>,
    calls: usize,
}

impl Transcript {
    fn push(&mut self, text: impl Into<String>) {
        self.parts.push(text.into());
    }

    fn text(&self) -> String {
        self.parts.join("\n")
    }

    fn tokens(&self, bpe: &CoreBPE) -> usize {
        bpe.encode_ordinary(&self.text()).len()
    }

    /// The tokens of each part, for the code-mode breakdown.
    fn part_tokens(&self, bpe: &CoreBPE) -> Vec<usize> {
        self.parts
            .iter()
            .map(|p| bpe.encode_ordinary(p).len())
            .collect()
    }
}

/// How the plain version learns a file's line count.
#[derive(Clone, Copy)]
enum Reads {
    /// Reads the whole file, following the continuation note when there is one.
    Whole,
    /// One line (`limit: 1`): the note says how many lines the file has.
    FirstLine,
}

struct Bench {
    hub: Hub,
    context: CallContext,
    bpe: CoreBPE,
}

impl Bench {
    /// The definitions a provider sends for the tools offered: in plain mode every catalog
    /// tool but code mode's, in code mode only code mode's.
    fn definitions(&self, code_mode: bool) -> String {
        let catalog = self.hub.catalog();
        let tools: Vec<Value> = catalog
            .tools()
            .filter(|e| (e.descriptor.source == CODEMODE_SOURCE) == code_mode)
            .map(|e| {
                json!({
                    "name": e.descriptor.name,
                    "description": e.descriptor.description,
                    "input_schema": *e.descriptor.input_schema,
                })
            })
            .collect();
        assert!(!tools.is_empty(), "no tools offered");
        serde_json::to_string(&tools).expect("definitions serialize")
    }

    fn start(&self, question: &str, code_mode: bool) -> Transcript {
        let mut transcript = Transcript::default();
        transcript.push(self.definitions(code_mode));
        transcript.push(question);
        transcript
    }

    /// One call as the model makes it, recorded with its whole result text.
    async fn call(&self, transcript: &mut Transcript, tool: &str, arguments: Value) -> ToolResult {
        transcript.push(format!("{tool} {arguments}"));
        transcript.calls += 1;
        let result = self
            .hub
            .call(tool, arguments, &self.context)
            .await
            .unwrap_or_else(|e| panic!("`{tool}` fails: {e}"));
        assert!(
            !result.is_error,
            "`{tool}` reports an error: {}",
            result.text_content()
        );
        transcript.push(result.text_content());
        result
    }

    /// A file's line count through `file_read`.
    async fn line_count(&self, transcript: &mut Transcript, path: &str, reads: Reads) -> u64 {
        let mut offset = 1;
        loop {
            let arguments = match (reads, offset) {
                (Reads::FirstLine, _) => json!({"path": path, "limit": 1}),
                (Reads::Whole, 1) => json!({"path": path}),
                (Reads::Whole, _) => json!({"path": path, "offset": offset}),
            };
            let read = self.call(transcript, "file_read", arguments).await;
            let read = structured(&read);
            let total = read["totalLines"].as_u64().expect("totalLines");
            let end = read["endLine"].as_u64().expect("endLine");
            if matches!(reads, Reads::FirstLine) || end >= total {
                return total;
            }
            offset = end + 1;
        }
    }

    /// The code-mode conversation: one search, one script. Returns the script's result.
    async fn code_mode(
        &self,
        question: &str,
        query: &str,
        script: &str,
        needs: &[&str],
    ) -> (Transcript, Value, u64) {
        let mut transcript = self.start(question, true);
        let found = self
            .call(
                &mut transcript,
                SEARCH_TOOLS,
                json!({"query": query, "limit": 3}),
            )
            .await;
        let declarations = found.text_content();
        for function in needs {
            assert!(
                declarations.contains(&format!("  {function}(input")),
                "search_tools `{query}` does not offer `{function}`:\n{declarations}"
            );
        }
        let ran = self
            .call(&mut transcript, RUN_CODE, json!({"code": script}))
            .await;
        let ran = structured(&ran);
        let calls = ran["calls"].as_u64().expect("calls");
        (transcript, ran["result"].clone(), calls)
    }
}

fn structured(result: &ToolResult) -> &Value {
    result
        .structured_content
        .as_ref()
        .expect("structured content")
}

/// `crates/<name>/…` belongs to crate `<name>`; anything else to the workspace root.
fn crate_of(path: &str) -> String {
    let parts: Vec<&str> = path.split('/').collect();
    if parts.len() > 2 && parts[0] == "crates" {
        parts[1].to_string()
    } else {
        "(root)".to_string()
    }
}

/// The measured figures of one task.
struct Row {
    task: &'static str,
    plain_whole: (usize, usize),
    plain_first_line: (usize, usize),
    code: (usize, usize),
    script_calls: u64,
    /// Definitions, question, search call, search result, script, run result, answer.
    code_parts: Vec<usize>,
}

// (a) Which files under crates/ mention `CallContext`, grouped by crate, with line counts.

const QUESTION_A: &str = "Which files under crates/ mention `CallContext`? Group them by crate \
and give each file's line count.";

const SCRIPT_A: &str = r#"import { workspace } from '@capabilities/workspace';
const found = await workspace.grep({ pattern: 'CallContext', literal: true, path: 'crates' });
if (found.truncated) throw new Error('more matches than returned');
const files = [...new Set(found.matches.map((m) => m.path))].sort();
const read = await Promise.all(files.map((path) => workspace.fileRead({ path })));
const byCrate: Record<string, { path: string; lines: number }[]> = {};
files.forEach((path, i) => {
  const parts = path.split('/');
  const crate = parts.length > 2 && parts[0] === 'crates' ? parts[1] : '(root)';
  (byCrate[crate] = byCrate[crate] ?? []).push({ path, lines: read[i].totalLines });
});
return byCrate;"#;

async fn plain_a(bench: &Bench, transcript: &mut Transcript, reads: Reads) -> Value {
    let found = bench
        .call(
            transcript,
            "grep",
            json!({"pattern": "CallContext", "literal": true, "path": "crates"}),
        )
        .await;
    let found = structured(&found);
    assert_eq!(found["truncated"], json!(false), "grep stopped early");
    let mut files: Vec<String> = found["matches"]
        .as_array()
        .expect("matches")
        .iter()
        .map(|m| m["path"].as_str().expect("path").to_string())
        .collect();
    files.sort();
    files.dedup();
    let mut by_crate: Map<String, Value> = Map::new();
    for path in files {
        let lines = bench.line_count(transcript, &path, reads).await;
        let entry = by_crate.entry(crate_of(&path)).or_insert_with(|| json!([]));
        entry
            .as_array_mut()
            .expect("array")
            .push(json!({"path": path, "lines": lines}));
    }
    Value::Object(by_crate)
}

fn answer_a(answer: &Value) -> String {
    let mut out = String::new();
    for (krate, files) in answer.as_object().expect("object") {
        out.push_str(&format!("{krate}:\n"));
        for file in files.as_array().expect("files") {
            out.push_str(&format!(
                "- {} ({} lines)\n",
                file["path"].as_str().expect("path"),
                file["lines"]
            ));
        }
    }
    out
}

// (b) Every Rust file over 300 lines with its line count, largest first.

const QUESTION_B: &str =
    "List every Rust file in the project over 300 lines with its line count, largest first.";

const SCRIPT_B: &str = r#"import { workspace } from '@capabilities/workspace';
const { files, truncated } = await workspace.fileSearch({ pattern: '**/*.rs', limit: 1000 });
if (truncated) throw new Error('more files than returned');
const read = await Promise.all(files.map((path) => workspace.fileRead({ path })));
return files
  .map((path, i) => ({ path, lines: read[i].totalLines }))
  .filter((f) => f.lines > 300)
  .sort((a, b) => b.lines - a.lines || (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));"#;

async fn plain_b(bench: &Bench, transcript: &mut Transcript, reads: Reads) -> Value {
    let found = bench
        .call(
            transcript,
            "file_search",
            json!({"pattern": "**/*.rs", "limit": 1000}),
        )
        .await;
    let found = structured(&found);
    assert_eq!(
        found["truncated"],
        json!(false),
        "file_search stopped early"
    );
    let mut big = Vec::new();
    for path in found["files"].as_array().expect("files") {
        let path = path.as_str().expect("path");
        let lines = bench.line_count(transcript, path, reads).await;
        if lines > 300 {
            big.push((lines, path.to_string()));
        }
    }
    big.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    Value::Array(
        big.into_iter()
            .map(|(lines, path)| json!({"path": path, "lines": lines}))
            .collect(),
    )
}

fn answer_b(answer: &Value) -> String {
    answer
        .as_array()
        .expect("array")
        .iter()
        .enumerate()
        .map(|(i, f)| {
            format!(
                "{}. {} — {} lines\n",
                i + 1,
                f["path"].as_str().expect("path"),
                f["lines"]
            )
        })
        .collect()
}

// (c) Every test function, counted per crate, and the test names used more than once.

const QUESTION_C: &str = "Find every test function (`#[test]` or `#[tokio::test]`) in the \
workspace, count them per crate, and list the test names that are used in more than one place.";

/// A whole line that is a test attribute; the function's name follows within two lines.
const TEST_ATTRIBUTE: &str = r"^\s*#\[(tokio::)?test(\(.*\))?\]\s*$";

const SCRIPT_C: &str = r#"import { workspace } from '@capabilities/workspace';
const found = await workspace.grep({
  pattern: '^\\s*#\\[(tokio::)?test(\\(.*\\))?\\]\\s*$', glob: '*.rs', context: 2, limit: 1000,
});
if (found.truncated) throw new Error('more matches than returned');
const perCrate: Record<string, number> = {};
const places = new Map<string, string[]>();
let total = 0;
for (const m of found.matches) {
  let name: string | undefined;
  for (const line of m.after ?? []) {
    const words = line.trim().split(/\s+/);
    const at = words.indexOf('fn');
    if (at >= 0 && at + 1 < words.length) { name = words[at + 1].split(/[(<]/)[0]; break; }
  }
  if (name === undefined) continue;
  const parts = m.path.split('/');
  const crate = parts.length > 2 && parts[0] === 'crates' ? parts[1] : '(root)';
  perCrate[crate] = (perCrate[crate] ?? 0) + 1;
  total += 1;
  places.set(name, [...(places.get(name) ?? []), m.path]);
}
const reused = [...places.keys()].filter((n) => places.get(n)!.length > 1).sort()
  .map((name) => ({ name, places: places.get(name)! }));
return { perCrate, total, reused };"#;

/// The name of the function declared on the first of `after` that declares one.
fn function_name(after: &[Value]) -> Option<String> {
    after.iter().find_map(|line| {
        let words: Vec<&str> = line.as_str()?.split_whitespace().collect();
        let at = words.iter().position(|w| *w == "fn")?;
        let name = words.get(at + 1)?.split(['(', '<']).next()?;
        Some(name.to_string())
    })
}

async fn plain_c(bench: &Bench, transcript: &mut Transcript, _reads: Reads) -> Value {
    let found = bench
        .call(
            transcript,
            "grep",
            json!({"pattern": TEST_ATTRIBUTE, "glob": "*.rs", "context": 2, "limit": 1000}),
        )
        .await;
    let found = structured(&found);
    assert_eq!(found["truncated"], json!(false), "grep stopped early");
    let mut per_crate: BTreeMap<String, u64> = BTreeMap::new();
    let mut places: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut total = 0;
    for m in found["matches"].as_array().expect("matches") {
        let after = m["after"].as_array().map(Vec::as_slice).unwrap_or_default();
        let Some(name) = function_name(after) else {
            continue;
        };
        let path = m["path"].as_str().expect("path");
        *per_crate.entry(crate_of(path)).or_default() += 1;
        total += 1;
        places.entry(name).or_default().push(path.to_string());
    }
    let reused: Vec<Value> = places
        .into_iter()
        .filter(|(_, p)| p.len() > 1)
        .map(|(name, places)| json!({"name": name, "places": places}))
        .collect();
    json!({"perCrate": per_crate, "total": total, "reused": reused})
}

fn answer_c(answer: &Value) -> String {
    let mut out = format!("{} test functions:\n", answer["total"]);
    for (krate, count) in answer["perCrate"].as_object().expect("perCrate") {
        out.push_str(&format!("- {krate}: {count}\n"));
    }
    out.push_str("Names used in more than one place:");
    let reused = answer["reused"].as_array().expect("reused");
    if reused.is_empty() {
        out.push_str(" none.\n");
    } else {
        out.push('\n');
    }
    for reused in reused {
        let places: Vec<&str> = reused["places"]
            .as_array()
            .expect("places")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        out.push_str(&format!(
            "- {}: {}\n",
            reused["name"].as_str().expect("name"),
            places.join(", ")
        ));
    }
    out
}

/// Runs one task both ways and checks that they agree.
macro_rules! task {
    ($bench:expr, $name:expr, $question:expr, $plain:ident, $answer:ident, $query:expr, $script:expr, $needs:expr) => {{
        let bench: &Bench = $bench;
        let mut whole = bench.start($question, false);
        let answer = $plain(bench, &mut whole, Reads::Whole).await;
        let mut first_line = bench.start($question, false);
        let answer_again = $plain(bench, &mut first_line, Reads::FirstLine).await;
        assert_eq!(
            answer, answer_again,
            "{}: the two plain runs disagree",
            $name
        );
        let (mut code, result, script_calls) =
            bench.code_mode($question, $query, $script, $needs).await;
        assert_eq!(
            result, answer,
            "{}: the script's answer differs from the plain calls' answer",
            $name
        );
        let final_answer = $answer(&answer);
        for transcript in [&mut whole, &mut first_line, &mut code] {
            transcript.push(final_answer.clone());
        }
        if let Some(dir) = std::env::var_os("TOOLMUX_TOKENS_DUMP") {
            let dir = Path::new(&dir);
            std::fs::create_dir_all(dir).expect("dump directory");
            let stem = &$name[1..2];
            for (kind, transcript) in [
                ("plain-whole", &whole),
                ("plain-limit-1", &first_line),
                ("code", &code),
            ] {
                std::fs::write(dir.join(format!("{stem}-{kind}.txt")), transcript.text())
                    .expect("write transcript");
            }
        }
        Row {
            task: $name,
            plain_whole: (whole.tokens(&bench.bpe), whole.calls),
            plain_first_line: (first_line.tokens(&bench.bpe), first_line.calls),
            code: (code.tokens(&bench.bpe), code.calls),
            script_calls,
            code_parts: code.part_tokens(&bench.bpe),
        }
    }};
}

fn reduction(plain: usize, code: usize) -> f64 {
    100.0 * (1.0 - code as f64 / plain as f64)
}

#[tokio::main]
async fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let hub = Hub::new(HubSettings::default(), Arc::new(NullSink));
    hub.add_source(Arc::new(
        WorkspacePack::new(&root, WorkspaceLimits::default()).expect("workspace pack"),
    ));
    hub.add_source(Arc::new(CodeModeSource::new(
        hub.downgrade(),
        Limits::default(),
    )));
    let bench = Bench {
        hub,
        context: CallContext::new(Channel::Mcp),
        bpe: tiktoken_rs::cl100k_base().expect("cl100k encoding"),
    };

    let rows = vec![
        task!(
            &bench,
            "(a) files mentioning CallContext, by crate, with line counts",
            QUESTION_A,
            plain_a,
            answer_a,
            "search file contents read file",
            SCRIPT_A,
            &["grep", "fileRead"]
        ),
        task!(
            &bench,
            "(b) Rust files over 300 lines, largest first",
            QUESTION_B,
            plain_b,
            answer_b,
            "find files read file",
            SCRIPT_B,
            &["fileSearch", "fileRead"]
        ),
        task!(
            &bench,
            "(c) test functions per crate, reused test names",
            QUESTION_C,
            plain_c,
            answer_c,
            "search file contents",
            SCRIPT_C,
            &["grep"]
        ),
    ];

    println!(
        "tokens a model reads (cl100k), plain tool calls vs one code-mode script, on {}",
        root.canonicalize().expect("root").display()
    );
    println!(
        "| task | plain, whole files (calls) | plain, `limit: 1` reads (calls) | code mode (calls; script's calls) | reduction vs whole | reduction vs `limit: 1` |"
    );
    println!("|---|---:|---:|---:|---:|---:|");
    let (mut whole, mut first_line, mut code) = (0, 0, 0);
    for row in &rows {
        println!(
            "| {} | {} ({}) | {} ({}) | {} ({}; {}) | {:.1}% | {:.1}% |",
            row.task,
            row.plain_whole.0,
            row.plain_whole.1,
            row.plain_first_line.0,
            row.plain_first_line.1,
            row.code.0,
            row.code.1,
            row.script_calls,
            reduction(row.plain_whole.0, row.code.0),
            reduction(row.plain_first_line.0, row.code.0),
        );
        whole += row.plain_whole.0;
        first_line += row.plain_first_line.0;
        code += row.code.0;
    }
    println!(
        "| **total** | {whole} | {first_line} | {code} | {:.1}% | {:.1}% |",
        reduction(whole, code),
        reduction(first_line, code)
    );
    println!();
    println!("code-mode transcripts, tokens per part (parts tokenised alone):");
    for row in &rows {
        let labels = [
            "definitions",
            "question",
            "search_tools call",
            "its result",
            "run_code call (the script)",
            "its result",
            "final answer",
        ];
        assert_eq!(row.code_parts.len(), labels.len(), "code-mode parts");
        let parts: Vec<String> = labels
            .iter()
            .zip(&row.code_parts)
            .map(|(label, tokens)| format!("{label} {tokens}"))
            .collect();
        println!("{}: {}", &row.task[..3], parts.join(", "));
    }
}
