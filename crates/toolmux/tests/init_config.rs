//! `toolmux init` writes a commented example of every section of the configuration: the file
//! loads as written, names every top-level key of the schema, and loads again with every
//! commented-out example switched on; the config editor still edits it.

mod support;

use support::toolmux_project;
use toolmux_testkit::project::{Run, TestProject};

/// Environment values for the `${VAR}` references of the examples.
const EXAMPLE_ENV: [(&str, &str); 5] = [
    ("GITHUB_TOKEN", "ghp_example"),
    ("DOCS_TOKEN", "docs-example"),
    ("OPENAI_API_KEY", "sk-example"),
    (
        "TOOLMUX_API_KEY",
        "a-long-enough-example-api-key-0123456789",
    ),
    ("BRAVE_API_KEY", "brave-example"),
];

/// The file with the `// ` taken off every line that is JSON (an example), not prose.
fn examples_switched_on(text: &str) -> String {
    text.lines()
        .map(|line| {
            let indent = line.len() - line.trim_start().len();
            match line.trim_start().strip_prefix("// ") {
                Some(rest) if rest.trim_start().starts_with(['"', '{', '}', '[', ']']) => {
                    format!("{}{rest}\n", &line[..indent])
                }
                _ => format!("{line}\n"),
            }
        })
        .collect()
}

/// `toolmux ARGS` with the examples' environment.
fn run(project: &TestProject, args: &[&str]) -> Run {
    let mut cmd = project.cmd();
    cmd.args(args);
    for (name, value) in EXAMPLE_ENV {
        cmd.env(name, value);
    }
    Run(cmd.output().expect("run toolmux config check"))
}

#[test]
fn init_writes_every_section_commented_and_the_file_loads_as_written_and_with_its_examples() {
    let project = toolmux_project();
    project.run(&["init"]).ok();
    let written = std::fs::read_to_string(project.config_file()).expect("the config file");
    assert!(
        written.starts_with("// toolmux's project configuration"),
        "{written}"
    );

    // As written: the same tools as an empty project (every example is commented out).
    let as_written = run(&project, &["config", "check"]).ok();
    let empty = toolmux_project();
    empty.config("{}");
    let plain = empty.run(&["config", "check"]).ok();
    assert_eq!(
        as_written.lines().last(),
        plain.lines().last(),
        "{as_written}\n{plain}"
    );

    // Every top-level key of the schema is in the file, set or as an example.
    let schema = project.run(&["config", "schema"]).json();
    let keys = schema["properties"]
        .as_object()
        .expect("the schema's properties");
    assert!(keys.contains_key("mcpServers"), "{keys:?}");
    let missing: Vec<&String> = keys
        .keys()
        .filter(|key| !written.contains(&format!("\"{key}\":")))
        .collect();
    assert!(
        missing.is_empty(),
        "sections without an example: {missing:?}"
    );

    // Every example switched on still loads: the script tool and the server's tools appear.
    project.write(
        "backend/src/tools/tools.json",
        r#"{"tools": [{"name": "hello", "description": "Say hello.", "script": "hello.py"}]}"#,
    );
    let switched_on = examples_switched_on(&written);
    assert_ne!(switched_on, written, "the file has examples to switch on");
    std::fs::write(project.config_file(), &switched_on).expect("write");
    run(&project, &["config", "check"]).ok();
    let tools = run(&project, &["tools", "list", "--json"]).json();
    let names: Vec<&str> = tools
        .as_array()
        .expect("a list")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(names.contains(&"word_count"), "{names:?}\n{switched_on}");
    assert!(names.contains(&"hello"), "the registry's tool: {names:?}");
    // `sources.web` switched off: its tools are gone.
    assert!(!names.contains(&"url_fetch"), "{names:?}");
    let servers = run(&project, &["mcp", "list", "--json"]).json();
    let servers: Vec<&str> = servers
        .as_array()
        .expect("a list")
        .iter()
        .filter_map(|s| s["name"].as_str())
        .collect();
    assert_eq!(servers, ["docs", "github"], "{switched_on}");
}

#[test]
fn a_commented_config_reports_errors_at_their_line_and_is_still_edited() {
    let project = toolmux_project();
    project.run(&["init"]).ok();
    let written = std::fs::read_to_string(project.config_file()).expect("the config file");

    // A mistake below the comments is reported at its own line: comments become spaces.
    let broken = written.replace("\"maxSteps\": 25", "\"maxSteps\": \"many\"");
    std::fs::write(project.config_file(), &broken).expect("write");
    let line = broken
        .lines()
        .position(|l| l.contains("\"maxSteps\""))
        .expect("the line")
        + 1;
    let failed = project.run(&["config", "check"]);
    assert_eq!(failed.code(), 3, "{}", failed.stdout());
    assert!(
        failed.stderr().contains(&format!("config.json:{line}:")),
        "line {line} expected in: {}",
        failed.stderr()
    );

    // The config editor reads the commented file and writes plain JSON that still loads.
    std::fs::write(project.config_file(), &written).expect("write");
    project.run(&["tools", "disable", "grep"]).ok();
    let saved = project.saved_config();
    assert_eq!(saved["toolSettings"]["grep"]["enabled"], false, "{saved}");
    assert_eq!(saved["policies"]["tools"]["file_read"], "allow", "{saved}");
    project.run(&["config", "check"]).ok();
    let tools = project.run(&["tools", "list", "--json"]).json();
    assert!(
        !tools
            .as_array()
            .expect("a list")
            .iter()
            .any(|t| t["name"] == "grep"),
        "{tools}"
    );
}
