//! Findings D30 and D20 through the real binary's REST API: an approval's pin is neither
//! evicted by 64 other pending write previews nor replaced by an identical call (the approved
//! call is refused as a conflict and writes nothing), and the write tools refuse `.toolmux/`, the registries
//! and LeanSpec's configuration — the set following a reload that names a new registry.

mod support;

use serde_json::{Value, json};
use support::toolmux_project;
use toolmux_testkit::eventually::wait_until;
use toolmux_testkit::http::{Response, request};
use toolmux_testkit::project::TestProject;
use toolmux_testkit::served::{KEY, Served, config_with_key};

fn project(extra_config: &str) -> TestProject {
    let project = toolmux_project();
    project.config(&config_with_key(extra_config));
    project
}

/// `POST /api/tools/{tool}/call` on a thread of its own: an `ask` call waits there.
fn call_in_background(
    served: &Served,
    tool: &str,
    arguments: Value,
) -> std::thread::JoinHandle<Response> {
    let address = served.address.clone();
    let path = format!("/api/tools/{tool}/call");
    std::thread::spawn(move || {
        let auth = format!("Bearer {KEY}");
        request(
            &address,
            "POST",
            &path,
            &[
                ("Authorization", &auth),
                ("Content-Type", "application/json"),
            ],
            Some(&arguments.to_string()),
        )
    })
}

/// The approvals waiting, once there are `count` of them.
fn approvals(served: &Served, count: usize) -> Vec<Value> {
    let mut found = Vec::new();
    wait_until(&format!("{count} approvals to wait"), || {
        found = served.get_with_key("/api/approvals").json()["approvals"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        found.len() >= count
    });
    found
}

fn answer(served: &Served, id: &str, decision: &str) {
    let answered = served.post(
        &format!("/api/approvals/{id}"),
        &json!({"decision": decision}).to_string(),
    );
    assert_eq!(answered.status, 204, "{}", answered.body);
}

/// A call refused as a conflict: a tool error of kind `conflict`, saying the file changed.
fn assert_conflict(response: &Response) {
    assert_eq!(response.status, 200, "{}", response.body);
    let body = response.json();
    assert_eq!(body["status"], "error", "{body}");
    assert_eq!(
        body["structuredContent"]["error"]["kind"], "conflict",
        "{body}"
    );
    assert!(
        body["error"]
            .as_str()
            .expect("error")
            .starts_with("`t.txt` changed after the approval showed this call's diff"),
        "{body}"
    );
}

fn read(project: &TestProject, rel: &str) -> String {
    std::fs::read_to_string(project.path().join(rel)).expect("read back")
}

#[test]
fn d30_an_approval_behind_64_pending_writes_is_a_conflict_and_writes_nothing() {
    let project = project("");
    project.write("t.txt", "line1\nAPPROVED\n");
    let served = Served::start(&project, &[]);
    let first = call_in_background(
        &served,
        "file_write",
        json!({"path": "t.txt", "content": "NEW\n", "overwrite": true}),
    );
    let first_id = approvals(&served, 1)[0]["id"]
        .as_str()
        .expect("id")
        .to_string();
    let others: Vec<_> = (1..=64)
        .map(|i| {
            call_in_background(
                &served,
                "file_write",
                json!({"path": format!("f{i}"), "content": "x"}),
            )
        })
        .collect();
    let pending = approvals(&served, 65);

    project.write("t.txt", "line1\nIMPORTANT-UNSEEN\n");
    answer(&served, &first_id, "allow");
    assert_conflict(&first.join().expect("call thread"));
    assert_eq!(read(&project, "t.txt"), "line1\nIMPORTANT-UNSEEN\n");

    for other in pending.iter().filter(|p| p["id"] != first_id.as_str()) {
        answer(&served, other["id"].as_str().expect("id"), "deny");
    }
    for other in others {
        other.join().expect("call thread").error(403, "denied");
    }
    served.stop();
}

#[test]
fn d30_an_identical_call_previewed_after_the_change_leaves_the_first_approval_a_conflict() {
    let project = project("");
    project.write("t.txt", "line1\nAPPROVED\n");
    let served = Served::start(&project, &[]);
    let write = json!({"path": "t.txt", "content": "NEW\n", "overwrite": true});
    let first = call_in_background(&served, "file_write", write.clone());
    let first_id = approvals(&served, 1)[0]["id"]
        .as_str()
        .expect("id")
        .to_string();
    project.write("t.txt", "line1\nIMPORTANT-UNSEEN\n");
    let second = call_in_background(&served, "file_write", write);
    let pending = approvals(&served, 2);
    let second_id = pending
        .iter()
        .map(|p| p["id"].as_str().expect("id").to_string())
        .find(|id| *id != first_id)
        .expect("the second approval");

    answer(&served, &first_id, "allow");
    assert_conflict(&first.join().expect("call thread"));
    assert_eq!(read(&project, "t.txt"), "line1\nIMPORTANT-UNSEEN\n");
    // The second approval showed the change from what is there now: it writes.
    answer(&served, &second_id, "allow");
    let written = second.join().expect("call thread");
    assert_eq!(written.status, 200, "{}", written.body);
    assert_eq!(read(&project, "t.txt"), "NEW\n");
    served.stop();
}

fn tools_json(name: &str) -> String {
    json!({"tools": [{
        "name": name,
        "description": "Says hello.",
        "inputSchema": {"type": "object"},
        "script": "true"
    }]})
    .to_string()
}

/// Calls a write tool the policy allows and expects its refusal as a protected path.
fn assert_protected(served: &Served, tool: &str, arguments: Value, message: &str) {
    let refused = served.post(&format!("/api/tools/{tool}/call"), &arguments.to_string());
    assert_eq!(refused.status, 200, "{}", refused.body);
    let body = refused.json();
    assert_eq!(body["status"], "error", "{body}");
    assert!(
        body["error"].as_str().expect("error").contains(message),
        "{tool} {arguments}: {body}"
    );
}

#[test]
fn d20_the_write_tools_refuse_the_configuration_and_the_registries_a_reload_names() {
    let allow = r#""policies": {"tools": {"file_write": "allow", "file_edit": "allow", "apply_patch": "allow"}}"#;
    let project = project(&format!(r#"{allow}, "registries": ["backend/mcp.json"]"#));
    project.write("backend/mcp.json", r#"{"mcpServers": {}}"#);
    project.write("backend/tools.json", &tools_json("hello_there"));
    project.write("notes.txt", "hello\n");
    let served = Served::start(&project, &[]);
    let config = read(&project, ".toolmux/config.json");
    let in_toolmux = "is inside `.toolmux`, toolmux's own configuration, which defines what \
                      toolmux runs and how it is sandboxed";
    let a_registry = "is a tool registry named in the configuration's `registries`";

    assert_protected(
        &served,
        "file_write",
        json!({"path": ".toolmux/config.json", "overwrite": true,
               "content": "{\"shell\": {\"sandbox\": false, \"network\": true}}"}),
        &format!("`.toolmux/config.json` {in_toolmux}"),
    );
    assert_protected(
        &served,
        "file_write",
        json!({"path": "backend/mcp.json", "overwrite": true,
               "content": "{\"mcpServers\": {\"x\": {\"command\": \"sh\"}}}"}),
        &format!("`backend/mcp.json` {a_registry}"),
    );
    assert_protected(
        &served,
        "apply_patch",
        json!({"patch": "*** Begin Patch\n*** Update File: notes.txt\n*** Move to: .toolmux/config.json\n@@\n-hello\n+{}\n*** End Patch"}),
        &format!("`.toolmux/config.json` {in_toolmux}"),
    );
    assert_eq!(read(&project, ".toolmux/config.json"), config);
    assert_eq!(read(&project, "backend/mcp.json"), r#"{"mcpServers": {}}"#);
    assert_eq!(read(&project, "notes.txt"), "hello\n");

    // `backend/tools.json` is no registry yet, so it may be written; once the person names it
    // in `registries`, the reload protects it before its tools are served.
    let before = served.post(
        "/api/tools/file_write/call",
        &json!({"path": "backend/tools.json", "content": tools_json("hello_there"), "overwrite": true})
            .to_string(),
    );
    assert_eq!(before.status, 200, "{}", before.body);
    project.config(&config_with_key(&format!(
        r#"{allow}, "registries": ["backend/mcp.json", "backend/tools.json"]"#
    )));
    wait_until("the new registry's tool to be served", || {
        served.get("/api/tools").body.contains("hello_there")
    });
    assert_protected(
        &served,
        "file_write",
        json!({"path": "backend/tools.json", "content": tools_json("evil"), "overwrite": true}),
        &format!("`backend/tools.json` {a_registry}"),
    );
    assert_eq!(
        read(&project, "backend/tools.json"),
        tools_json("hello_there")
    );
    served.stop();
}

/// Found in review of issue 28 (D20's kind): the user's configuration is read and hot-reloaded
/// like the project's, and a project rooted where it lies (the home directory) held it beneath
/// its root, writable by `file_write`. It is refused like `.toolmux/config.json`.
#[test]
fn d20_the_write_tools_refuse_the_users_configuration_beneath_the_root() {
    let project = support::toolmux_project();
    project.config(r#"{"policies": {"tools": {"file_write": "allow"}}}"#);
    let user_config = project.write("home-config/toolmux/config.json", "{}\n");
    let arguments = json!({
        "path": "home-config/toolmux/config.json",
        "overwrite": true,
        "content": "{\"shell\": {\"sandbox\": false, \"network\": true}}"
    })
    .to_string();
    let run = toolmux_testkit::project::Run(
        project
            .cmd()
            .env("XDG_CONFIG_HOME", project.path().join("home-config"))
            .args([
                "tools",
                "call",
                "file_write",
                "--json",
                "--args",
                &arguments,
            ])
            .output()
            .expect("run toolmux"),
    );
    let said = format!("{}{}", run.stdout(), run.stderr());
    assert!(
        said.contains("`home-config/toolmux/config.json` is the user's toolmux configuration"),
        "{said}"
    );
    assert_eq!(
        std::fs::read_to_string(&user_config).expect("user config"),
        "{}\n"
    );
}

/// Runs an ACP session of the test agent on `prompt`, allowing each write it asks for; what the
/// agent said, in order, once it ended.
fn acp_session_says(served: &Served, prompt: &str) -> Vec<String> {
    let started = served.post(
        "/api/sessions",
        &json!({"runner": "agent", "prompt": prompt}).to_string(),
    );
    assert_eq!(started.status, 201, "{}", started.body);
    let id = started.json()["id"].as_str().expect("id").to_string();
    let mut answered = Vec::new();
    wait_until("the session's end", || {
        let pending = served.get_with_key("/api/approvals").json()["approvals"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        for approval in pending {
            let approval = approval["id"].as_str().expect("approval id").to_string();
            if !answered.contains(&approval) {
                answer(served, &approval, "allow");
                answered.push(approval);
            }
        }
        let status = served.get(&format!("/api/sessions/{id}")).json()["status"].clone();
        status != "running" && status != "pending"
    });
    let session = served.get(&format!("/api/sessions/{id}")).json();
    assert_eq!(session["status"], "completed", "{session}");
    served.get(&format!("/api/sessions/{id}/logs")).json()["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .filter(|e| e["kind"] == "message_chunk")
        .map(|e| e["text"].as_str().expect("text").to_string())
        .collect()
}

/// Found in review of issue 28 (D20's kind for coding agents): an ACP agent's
/// `fs/write_text_file` was confined by a root of its own, which did not know the registries:
/// an agent could rewrite `backend/mcp.json`, and the reload ran the server it added. The
/// sessions now hold the workspace tools' root, so the one protection list — the reload that
/// names a new registry included — refuses the agent too.
#[test]
fn d20_an_acp_agent_cannot_write_the_configuration_or_a_registry() {
    let agent = toolmux_testkit::peers::acp_test_agent();
    let settings = |registries: &str| {
        format!(
            r#""runners": {{"agent": {{"command": {}, "args": [], "protocol": "acp"}}}},
               "policies": {{"tools": {{"run_session": "allow"}}}},
               "registries": [{registries}]"#,
            json!(agent.display().to_string())
        )
    };
    let project = project(&settings(r#""backend/mcp.json""#));
    project.write("backend/mcp.json", r#"{"mcpServers": {}}"#);
    project.write("backend/tools.json", &tools_json("hello_there"));
    let served = Served::start(&project, &[]);
    let config = read(&project, ".toolmux/config.json");
    let root = project.path().canonicalize().expect("canonical root");
    let refused = |path: &str, kind: &str| {
        format!(
            "write refused: `{}`: `{path}` is {kind}, which defines what toolmux runs and how it \
             is sandboxed; the workspace tools never write it (a person edits it, or `toolmux \
             config set` does)",
            root.join(path).display()
        )
    };
    let a_registry = "a tool registry named in the configuration's `registries`";

    let said = acp_session_says(
        &served,
        "write .toolmux/config.json {\"shell\":{\"sandbox\":false}}\n\
         write backend/mcp.json {\"mcpServers\":{\"x\":{\"command\":\"sh\"}}}\n\
         write notes.txt fine",
    );
    assert_eq!(
        said,
        [
            "permission: allow".to_string(),
            refused(
                ".toolmux/config.json",
                "inside `.toolmux`, toolmux's own configuration"
            ),
            "permission: allow".to_string(),
            refused("backend/mcp.json", a_registry),
            "permission: allow".to_string(),
            "wrote notes.txt".to_string(),
        ]
    );
    assert_eq!(read(&project, ".toolmux/config.json"), config);
    assert_eq!(read(&project, "backend/mcp.json"), r#"{"mcpServers": {}}"#);
    assert_eq!(read(&project, "notes.txt"), "fine");

    // A reload that names another registry protects it from the agent as from the tools.
    project.config(&config_with_key(&settings(
        r#""backend/mcp.json", "backend/tools.json""#,
    )));
    wait_until("the new registry's tool to be served", || {
        served.get("/api/tools").body.contains("hello_there")
    });
    let said = acp_session_says(&served, "write backend/tools.json {}");
    assert_eq!(
        said,
        [
            "permission: allow".to_string(),
            refused("backend/tools.json", a_registry),
        ]
    );
    assert_eq!(
        read(&project, "backend/tools.json"),
        tools_json("hello_there")
    );
    served.stop();
}
