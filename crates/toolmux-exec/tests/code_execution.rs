//! `code_execution` in its three languages: Python and bash in the shell sandbox with the files
//! they write under `$OUTPUT_DIR` returned, TypeScript through code mode's `run_code` in the
//! same hub.

use std::sync::Arc;

use serde_json::{Value, json};
use toolmux_codemode::CodeModeSource;
use toolmux_core::{CallContext, Channel, Hub, HubSettings, NullSink, Source, SourceCall};
use toolmux_exec::{ExecPack, ExecSettings};
use toolmux_workspace::ProjectRoot;

struct Setup {
    _dir: tempfile::TempDir,
    _hub: Hub,
    pack: ExecPack,
}

fn setup() -> Setup {
    let dir = tempfile::tempdir().expect("dir");
    std::fs::write(dir.path().join("data.csv"), "a,b\n1,2\n3,4\n").expect("csv");
    let hub = Hub::new(HubSettings::default(), Arc::new(NullSink));
    hub.add_source(Arc::new(CodeModeSource::new(
        hub.downgrade(),
        Default::default(),
    )));
    let pack = ExecPack::new(
        ProjectRoot::new(dir.path()).expect("root"),
        ExecSettings::default(),
        Some(hub.downgrade()),
    );
    hub.add_source(Arc::new(pack.clone()));
    Setup {
        _dir: dir,
        _hub: hub,
        pack,
    }
}

/// The call's structured result, after checking that it is flagged an error exactly when the
/// code did not exit with 0.
async fn run(pack: &ExecPack, language: &str, code: &str) -> Value {
    let tool = pack
        .tools()
        .into_iter()
        .find(|t| t.name == "code_execution")
        .expect("code_execution");
    let context = CallContext::new(Channel::Cli);
    let result = pack
        .call(SourceCall {
            tool: &tool,
            arguments: json!({"language": language, "code": code})
                .as_object()
                .cloned()
                .expect("object"),
            context: &context,
        })
        .await
        .expect("call");
    let failed = result.is_error;
    let text = result.text_content();
    let value = result.structured_content.expect("structured");
    assert_eq!(failed, value["exitCode"] != json!(0), "{text}");
    // The result is what the tool's output schema promises.
    let schema = tool.output_schema.expect("output schema");
    let validator = jsonschema::validator_for(&schema).expect("schema compiles");
    assert!(validator.is_valid(&value), "{value}");
    value
}

#[tokio::test]
async fn python_runs_in_the_project_and_returns_the_files_it_wrote() {
    let s = setup();
    let out = run(
        &s.pack,
        "python",
        "import csv, os\n\
         rows = list(csv.DictReader(open('data.csv')))\n\
         total = sum(int(r['b']) for r in rows)\n\
         print(total)\n\
         open(os.path.join(os.environ['OUTPUT_DIR'], 'sum.txt'), 'w').write(f'sum={total}')\n\
         os.makedirs(os.path.join(os.environ['OUTPUT_DIR'], 'deep'))\n\
         open(os.path.join(os.environ['OUTPUT_DIR'], 'deep', 'blob.bin'), 'wb').write(b'\\xff\\x00' * 10)\n",
    )
    .await;
    assert_eq!(out["exitCode"], 0, "{out}");
    assert_eq!(out["stdout"], "6\n");
    assert_eq!(
        out["files"],
        json!([
            {"path": "deep/blob.bin", "size": 20},
            {"path": "sum.txt", "size": 5, "text": "sum=6"}
        ])
    );
    assert_eq!(out["language"], "python");
}

#[tokio::test]
async fn bash_reports_its_exit_code_and_files() {
    let s = setup();
    let out = run(
        &s.pack,
        "bash",
        "wc -l < data.csv; echo note > \"$OUTPUT_DIR/n.txt\"; echo bad >&2; exit 4",
    )
    .await;
    assert_eq!(out["exitCode"], 4);
    assert_eq!(out["stdout"], "3\n");
    assert_eq!(out["stderr"], "bad\n");
    assert_eq!(
        out["files"],
        json!([{"path": "n.txt", "size": 5, "text": "note\n"}])
    );
}

#[tokio::test]
async fn typescript_runs_in_code_mode() {
    let s = setup();
    let out = run(
        &s.pack,
        "typescript",
        "console.log('hello'); console.error('careful'); return [1, 2].map((n: number) => n * 2);",
    )
    .await;
    assert_eq!(out["exitCode"], 0, "{out}");
    assert_eq!(out["stdout"], "hello\n");
    assert_eq!(out["stderr"], "careful\n");
    assert_eq!(out["result"], json!([2, 4]));
    assert_eq!(out["files"], json!([]));

    let out = run(&s.pack, "typescript", "throw new Error('nope')").await;
    assert_eq!(out["exitCode"], 1);
    assert!(
        out["stderr"].as_str().expect("stderr").contains("nope"),
        "{out}"
    );
}
