//! Code mode over real MCP servers: the declarations generated from the cached schemas of
//! `server-everything`, `server-filesystem`, `server-memory` (npm) and `mcp-server-git`,
//! `mcp-server-time` (PyPI) pass `tsc --strict`, and a script using all of them type-checks and
//! runs through the real binary.

mod support;

use std::process::Command;

use serde_json::{Value, json};
use support::toolmux_project;
use toolmux_testkit::peers::{node_peer, venv_script};

const SCRIPT: &str = r#"import { everything } from '@capabilities/everything';
import { filesystem } from '@capabilities/filesystem';
import { git } from '@capabilities/git';
import { memory } from '@capabilities/memory';
import { time } from '@capabilities/time';

declare const FILES: string;
declare const REPO: string;

const now = await time.getCurrentTime({ timezone: 'Etc/UTC' });
const sum = await everything.getSum({ a: 2, b: 40 });
const file = await filesystem.readTextFile({ path: FILES + '/a.txt' });
await memory.createEntities({
  entities: [{ name: 'toolmux', entityType: 'project', observations: ['one registry'] }],
});
const graph = await memory.readGraph({});
const status = await git.gitStatus({ repo_path: REPO });
return {
  timezone: now.timezone,
  sumMentions42: JSON.stringify(sum).includes('42'),
  file: file.content.trim(),
  entities: graph.entities.map((e) => `${e.name}:${e.entityType}`),
  statusMentionsBranch: JSON.stringify(status).includes('branch'),
};
"#;

#[test]
fn declarations_of_real_servers_pass_tsc_strict_and_a_script_using_them_runs() {
    let project = toolmux_project();
    let root = project.path().canonicalize().expect("canonical project");
    project.write("files/a.txt", "hello from a file\n");
    let git_ok = Command::new("git")
        .args(["init", "-q", "."])
        .current_dir(&root)
        .status()
        .expect("git runs");
    assert!(git_ok.success());

    let npm_bin = |name: &str| node_peer("upstream", name).display().to_string();
    let files = root.join("files").display().to_string();
    let memory_file = format!("MEMORY_FILE_PATH={}", root.join("memory.jsonl").display());
    let repo = root.display().to_string();
    let servers: [(&str, Vec<String>); 5] = [
        ("everything", vec![npm_bin("mcp-server-everything")]),
        (
            "filesystem",
            vec![npm_bin("mcp-server-filesystem"), files.clone()],
        ),
        ("memory", vec![npm_bin("mcp-server-memory")]),
        (
            "git",
            vec![
                venv_script("mcp-server-git").display().to_string(),
                "--repository".into(),
                repo.clone(),
            ],
        ),
        (
            "time",
            vec![venv_script("mcp-server-time").display().to_string()],
        ),
    ];
    for (name, command) in &servers {
        let mut args = vec!["mcp", "add", name];
        if *name == "memory" {
            args.extend(["--env", memory_file.as_str()]);
        }
        args.push("--");
        args.extend(command.iter().map(String::as_str));
        let out = project.run(&args).ok();
        assert!(out.contains(&format!("{name}: ")), "{out}");
    }

    let built = project.run(&["capabilities", "build"]).ok();
    assert!(built.contains("from 15 sources"), "{built}");
    let capabilities = root.join(".toolmux/capabilities");
    for (name, _) in &servers {
        let dts = std::fs::read_to_string(capabilities.join(name).join("index.d.ts"))
            .expect("declarations written");
        assert!(!dts.contains(": any"), "{name} declares `any`");
    }

    // The script as a model would write it, with the two paths it needs declared.
    let check = root.join("check");
    std::fs::create_dir(&check).expect("mkdir");
    std::fs::write(
        check.join("script.ts"),
        format!(
            "export {{}};\n{}",
            SCRIPT.replace("return {", "const answer = {")
        ),
    )
    .expect("write");
    std::fs::write(
        check.join("tsconfig.json"),
        json!({
            "compilerOptions": {
                "strict": true, "noEmit": true, "target": "es2022", "module": "es2022",
                "moduleResolution": "bundler", "lib": ["es2022"], "types": []
            },
            "include": ["../.toolmux/capabilities/**/*.d.ts", "script.ts"]
        })
        .to_string(),
    )
    .expect("write");
    let tsc = Command::new(node_peer("codemode", "tsc"))
        .arg("-p")
        .arg(&check)
        .output()
        .expect("tsc runs");
    assert!(
        tsc.status.success(),
        "tsc --strict --noEmit failed:\n{}{}",
        String::from_utf8_lossy(&tsc.stdout),
        String::from_utf8_lossy(&tsc.stderr)
    );

    // The same script runs in the sandbox, every call going through the pipeline.
    let runnable = SCRIPT
        .replace(
            "declare const FILES: string;",
            &format!("const FILES = {};", json!(files)),
        )
        .replace(
            "declare const REPO: string;",
            &format!("const REPO = {};", json!(repo)),
        );
    project.write("script.ts", &runnable);
    let run = project.run(&["run", "script.ts", "--json"]);
    let output: Value = serde_json::from_str(&run.ok()).expect("json");
    assert_eq!(
        output["result"],
        json!({
            "timezone": "Etc/UTC",
            "sumMentions42": true,
            "file": "hello from a file",
            "entities": ["toolmux:project"],
            "statusMentionsBranch": true
        }),
        "{output}"
    );
    assert_eq!(output["calls"], 6, "{output}");
}
