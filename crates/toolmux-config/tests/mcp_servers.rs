//! `mcpServers`: the pasted Claude Code / Cursor block loads, toolmux's own keys are read, and
//! every mistake is reported with file, line and field.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;
use std::time::Duration;

use toolmux_config::{
    SamplingPolicy, UpstreamTransport, check_config_text, load_with_env, unexpanded_upstreams,
};
use toolmux_core::Policy;

mod common;
use common::Project;

fn env(name: &str) -> Option<String> {
    match name {
        "GITHUB_TOKEN" => Some("ghp_secret".to_string()),
        "PORT" => Some("3001".to_string()),
        _ => None,
    }
}

#[test]
fn a_pasted_claude_code_block_loads_with_inferred_transports() {
    let project = Project::with_env(env);
    project.config(
        r#"{
  "mcpServers": {
    "github": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-github"],
      "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "${GITHUB_TOKEN}"}
    },
    "remote": {"url": "http://127.0.0.1:${PORT}/mcp", "headers": {"Authorization": "Bearer ${GITHUB_TOKEN}"}},
    "typed": {"type": "http", "url": "https://example.com/mcp"},
    "spelt": {"type": "streamable-http", "url": "https://example.com/mcp"},
    "legacy": {"type": "sse", "url": "http://127.0.0.1:3002/sse"},
    "explicit": {"type": "stdio", "command": "python3", "args": ["server.py"], "cwd": "tools"}
  }
}"#,
    );
    let config = project.load(None).expect("loads").config;
    let servers = &config.upstreams;
    assert_eq!(servers.len(), 6);
    let UpstreamTransport::Stdio {
        command,
        args,
        env,
        cwd,
        ..
    } = &servers["github"].transport
    else {
        panic!("github is stdio");
    };
    assert_eq!(command, "npx");
    assert_eq!(args, &["-y", "@modelcontextprotocol/server-github"]);
    assert_eq!(env["GITHUB_PERSONAL_ACCESS_TOKEN"], "ghp_secret");
    assert_eq!(cwd, &None);
    assert_eq!(
        servers["remote"].transport,
        UpstreamTransport::Http {
            url: "http://127.0.0.1:3001/mcp".into(),
            headers: BTreeMap::from([("Authorization".into(), "Bearer ghp_secret".into())]),
        }
    );
    assert_eq!(servers["typed"].transport.kind(), "http");
    assert_eq!(servers["spelt"].transport.kind(), "http");
    assert_eq!(servers["legacy"].transport.kind(), "sse");
    assert_eq!(servers["explicit"].transport.kind(), "stdio");
    let github = &servers["github"];
    assert!(github.enabled);
    assert_eq!(github.discovery_timeout, Duration::from_secs(30));
    assert_eq!(github.startup_timeout, Duration::from_secs(30));
    assert_eq!(github.idle_timeout, Some(Duration::from_secs(600)));
    assert_eq!(github.tool_timeout, None);
}

#[test]
fn toolmux_settings_per_server_are_read() {
    let project = Project::with_env(env);
    project.config(
        r#"{"mcpServers": {"fs": {
            "command": "mcp-server-filesystem",
            "enabled": false,
            "enabledTools": ["read_*", "list_directory"],
            "disabledTools": ["read_media_file"],
            "policy": "ask",
            "toolPolicies": {"read_*": "allow", "read_text_file": "deny"},
            "startupTimeoutMs": 5000,
            "discoveryTimeoutMs": 7000,
            "toolTimeoutMs": 9000,
            "idleTimeoutMs": 0,
            "prefix": "files"
        }}}"#,
    );
    let config = project.load(None).expect("loads").config;
    let fs = &config.upstreams["fs"];
    assert!(!fs.enabled);
    assert!(fs.offers("read_file"));
    assert!(fs.offers("list_directory"));
    assert!(!fs.offers("read_media_file"), "disabledTools wins");
    assert!(!fs.offers("write_file"), "not in enabledTools");
    assert_eq!(
        fs.policy_for("read_text_file"),
        Some(Policy::Deny),
        "exact name first"
    );
    assert_eq!(
        fs.policy_for("read_file"),
        Some(Policy::Allow),
        "then the glob"
    );
    assert_eq!(
        fs.policy_for("write_file"),
        Some(Policy::Ask),
        "then the server"
    );
    assert_eq!(fs.startup_timeout, Duration::from_secs(5));
    assert_eq!(fs.discovery_timeout, Duration::from_secs(7));
    assert_eq!(fs.tool_timeout, Some(Duration::from_secs(9)));
    assert_eq!(fs.idle_timeout, None, "0 keeps it running");
    assert_eq!(fs.prefix.as_ref().map(|p| p.as_str()), Some("files"));
    assert!(
        config.hub_settings().disabled_sources.contains("fs"),
        "a disabled server's tools are hidden"
    );
}

#[test]
fn command_and_url_together_are_reported_at_the_server() {
    let project = Project::with_env(env);
    let (file, err) = project.error(
        "{\n  \"mcpServers\": {\n    \"both\": {\"command\": \"x\", \"url\": \"http://a\"}\n  }\n}\n",
    );
    assert_eq!(
        err.to_string(),
        format!(
            "{}:4:3: at `mcpServers.both`: a server has either `command` (stdio) or `url` (HTTP), not both",
            file.display()
        )
    );
    assert_eq!(err.field, "mcpServers.both");
}

#[test]
fn a_server_without_command_or_url_is_an_error() {
    let project = Project::with_env(env);
    let (file, err) = project.error("{\"mcpServers\": {\"empty\": {\"args\": [\"x\"]}}}");
    assert_eq!(
        err.to_string(),
        format!(
            "{}:1:41: at `mcpServers.empty`: a server needs `command` (a stdio server) or `url` (an HTTP or SSE server)",
            file.display()
        )
    );
}

#[test]
fn an_sse_server_needs_a_url_and_a_stdio_server_a_command() {
    let project = Project::with_env(env);
    let (_, err) = project.error(r#"{"mcpServers": {"s": {"type": "sse", "command": "x"}}}"#);
    assert_eq!(err.message, "an `sse` server needs `url`");
    let (_, err) = project.error(r#"{"mcpServers": {"s": {"type": "stdio", "url": "http://a/"}}}"#);
    assert_eq!(err.message, "a `stdio` server needs `command`");
    let (_, err) =
        project.error(r#"{"mcpServers": {"s": {"url": "http://a/", "env": {"A": "b"}}}}"#);
    assert_eq!(
        err.message,
        "`args`, `env` and `cwd` only apply to stdio servers, not to an `http` server"
    );
    let (_, err) =
        project.error(r#"{"mcpServers": {"s": {"command": "x", "headers": {"A": "b"}}}}"#);
    assert_eq!(
        err.message,
        "`headers` only apply to `http` and `sse` servers; a stdio server takes `env`"
    );
}

#[test]
fn a_bad_url_names_the_server() {
    let project = Project::with_env(env);
    let (_, err) = project.error(r#"{"mcpServers": {"web": {"url": "localhost:3000/mcp"}}}"#);
    assert_eq!(err.field, "mcpServers.web");
    assert_eq!(
        err.message,
        "invalid url `localhost:3000/mcp`: it must start with http:// or https://"
    );
}

#[test]
fn a_misspelt_server_key_gets_a_suggestion() {
    let project = Project::with_env(env);
    let (file, err) = project.error(
        "{\n  \"mcpServers\": {\n    \"gh\": {\n      \"command\": \"x\",\n      \"arg\": []\n    }\n  }\n}\n",
    );
    assert_eq!(
        err.to_string(),
        format!(
            "{}:5:11: at `mcpServers.gh`: unknown field `arg`; did you mean `args`?",
            file.display()
        )
    );
}

#[test]
fn an_unknown_transport_type_lists_the_valid_ones() {
    let project = Project::with_env(env);
    let (_, err) =
        project.error(r#"{"mcpServers": {"w": {"type": "websocket", "url": "http://a/"}}}"#);
    assert_eq!(err.field, "mcpServers.w.type");
    assert_eq!(
        err.message,
        "invalid value `websocket`; expected one of `stdio`, `http`, `streamable-http`, `streamableHttp`, `sse`"
    );
}

#[test]
fn bad_prefix_glob_and_timeout_are_reported_at_their_field() {
    let project = Project::with_env(env);
    let (_, err) = project.error(r#"{"mcpServers": {"w": {"command": "x", "prefix": "a__b"}}}"#);
    assert_eq!(err.field, "mcpServers.w.prefix");
    assert_eq!(
        err.message,
        "invalid prefix `a__b`: a prefix is 1 to 40 letters, digits, `_` or `-`, without `__`"
    );
    let (_, err) =
        project.error(r#"{"mcpServers": {"w": {"command": "x", "enabledTools": ["a["]}}}"#);
    assert_eq!(err.field, "mcpServers.w.enabledTools[0]");
    let (_, err) =
        project.error(r#"{"mcpServers": {"w": {"command": "x", "discoveryTimeoutMs": 0}}}"#);
    assert_eq!(err.field, "mcpServers.w.discoveryTimeoutMs");
    assert_eq!(
        err.message,
        "invalid value: integer `0`, expected a whole number greater than 0"
    );
    let (_, err) =
        project.error(r#"{"mcpServers": {"w": {"command": "x", "toolPolicies": {"t": "maybe"}}}}"#);
    assert_eq!(err.field, "mcpServers.w.toolPolicies.t");
}

#[test]
fn a_blank_server_name_is_an_error() {
    let project = Project::with_env(env);
    let (_, err) = project.error(r#"{"mcpServers": {" ": {"command": "x"}}}"#);
    assert_eq!(
        err.message,
        "invalid server name ` `: a server name is 1 to 100 characters and not blank"
    );
}

#[test]
fn an_unset_secret_reference_names_the_variable_and_the_header() {
    let project = Project::with_env(env);
    let file = project.config(
        r#"{"mcpServers": {"w": {"url": "http://a/", "headers": {"Authorization": "Bearer ${NOPE}"}}}}"#,
    );
    let loaded = project.load(None).expect("loads, without `w`");
    assert!(loaded.config.upstreams.is_empty());
    let waiting = loaded.unavailable_servers.values().next().expect("w waits");
    assert_eq!(
        waiting.reason,
        format!(
            "environment variable `NOPE` is not set (used in `mcpServers.w.headers.Authorization` \
             of `{}`)",
            file.display()
        )
    );
}

#[test]
fn unexpanded_entries_keep_references_and_merge_user_under_project() {
    let project = Project::with_env(env);
    let user = project.path().join("user.json");
    fs::write(
        &user,
        r#"{"mcpServers": {"a": {"command": "x", "env": {"T": "${GITHUB_TOKEN}"}}, "b": {"command": "y"}}}"#,
    )
    .expect("write user");
    project.config(r#"{"mcpServers": {"a": {"command": "x", "args": ["--flag"]}}}"#);
    let loaded = load_with_env(project.path(), Some(&user), &env).expect("loads");
    let raw = unexpanded_upstreams(&loaded);
    assert_eq!(
        raw["a"]["env"]["T"], "${GITHUB_TOKEN}",
        "the reference, not the secret"
    );
    assert_eq!(raw["a"]["args"][0], "--flag");
    assert_eq!(raw["b"]["command"], "y");
    let expanded = &loaded.config.upstreams["a"];
    let UpstreamTransport::Stdio { env, .. } = &expanded.transport else {
        panic!("stdio");
    };
    assert_eq!(env["T"], "ghp_secret");
}

#[test]
fn check_config_text_reports_like_the_loader() {
    let path = Path::new("/p/.toolmux/config.json");
    let err = check_config_text(path, "{\"mcpServers\": {\"x\": {}}}").expect_err("invalid");
    assert_eq!(err.file, path);
    assert_eq!(err.field, "mcpServers.x");
    let config =
        check_config_text(path, r#"{"mcpServers": {"x": {"command": "y"}}}"#).expect("valid");
    assert_eq!(config.upstreams.len(), 1);
}

#[test]
fn servers_serialize_back_to_the_file_shape() {
    let project = Project::with_env(env);
    project.config(
        r#"{"mcpServers": {
            "s": {"type": "sse", "url": "http://a/sse", "idleTimeoutMs": 0},
            "h": {"url": "http://a/mcp", "enabled": false},
            "c": {"command": "x", "args": ["1"], "toolTimeoutMs": 5}
        }}"#,
    );
    let config = project.load(None).expect("loads").config;
    let value = serde_json::to_value(&config.upstreams).expect("serializes");
    assert_eq!(
        value,
        serde_json::json!({
            "c": {"command": "x", "args": ["1"], "toolTimeoutMs": 5},
            "h": {"url": "http://a/mcp", "enabled": false},
            "s": {"type": "sse", "url": "http://a/sse", "idleTimeoutMs": 0}
        })
    );
}

#[test]
fn the_schema_describes_server_entries() {
    let schema = toolmux_config::schema();
    let validator = jsonschema::validator_for(&schema).expect("valid schema");
    assert!(validator.is_valid(&serde_json::json!({"mcpServers": {
        "a": {"command": "npx", "args": ["-y", "x"], "env": {"K": "${K}"}},
        "b": {"type": "sse", "url": "http://127.0.0.1/sse", "toolPolicies": {"x_*": "ask"}}
    }})));
    assert!(!validator.is_valid(&serde_json::json!({"mcpServers": {"a": {"comand": "x"}}})));
    assert!(!validator.is_valid(&serde_json::json!({"mcpServers": {"a": {"type": "ws"}}})));
    let text = schema.to_string();
    assert!(
        text.contains("found on `PATH` unless it is a path"),
        "doc comments become descriptions"
    );
}

#[test]
fn sampling_is_read_for_the_chat_and_for_each_server() {
    let project = Project::with_env(env);
    project.config(
        r#"{
            "chat": {"sampling": "deny"},
            "mcpServers": {
                "trusted": {"command": "a", "sampling": "allow"},
                "other": {"command": "b"}
            }
        }"#,
    );
    let config = project.load(None).expect("loads").config;
    assert_eq!(config.chat.sampling, SamplingPolicy::Deny);
    assert_eq!(
        config.upstreams["trusted"].sampling,
        Some(SamplingPolicy::Allow)
    );
    assert_eq!(
        config.upstreams["other"].sampling, None,
        "unset: chat.sampling applies"
    );
    // Unset everywhere, a server's request asks the person.
    project.config(r#"{"mcpServers": {"x": {"command": "a"}}}"#);
    assert_eq!(
        project.load(None).expect("loads").config.chat.sampling,
        SamplingPolicy::Ask
    );
}

#[test]
fn a_misspelt_sampling_value_is_reported_with_a_suggestion() {
    let project = Project::with_env(env);
    let (file, err) = project.error(
        "{\n  \"mcpServers\": {\n    \"s\": {\"command\": \"a\", \"sampling\": \"alow\"}\n  }\n}\n",
    );
    assert_eq!(
        err.to_string(),
        format!(
            "{}:3:44: at `mcpServers.s.sampling`: invalid value `alow`; did you mean `allow`?",
            file.display()
        )
    );
    assert_eq!(
        (err.line, err.field.as_str()),
        (Some(3), "mcpServers.s.sampling")
    );
    let (file, err) = project.error("{\n  \"chat\": {\"sampling\": \"never\"}\n}\n");
    assert_eq!(
        err.to_string(),
        format!(
            "{}:2:30: at `chat.sampling`: invalid value `never`; expected one of `ask`, \
             `allow`, `deny`",
            file.display()
        )
    );
}

#[test]
fn inherit_env_is_a_stdio_servers_opt_in_and_a_script_tools() {
    let project = Project::with_env(env);
    project.config(
        r#"{"mcpServers": {"a": {"command": "x"}, "b": {"command": "x", "inheritEnv": true}},
            "tools": {"t": {"description": "d", "command": ["sh"], "inheritEnv": true}}}"#,
    );
    let config = project.load(None).expect("loads").config;
    let inherits = |name: &str| match &config.upstreams[name].transport {
        UpstreamTransport::Stdio { inherit_env, .. } => *inherit_env,
        other => panic!("{name} is {}", other.kind()),
    };
    assert!(
        !inherits("a"),
        "the default keeps toolmux's environment to itself"
    );
    assert!(inherits("b"));
    assert!(config.tools.values().all(|t| t.inherit_env));
    let (_, err) =
        project.error(r#"{"mcpServers": {"s": {"url": "http://a/", "inheritEnv": true}}}"#);
    assert_eq!(
        err.message,
        "`inheritEnv` only applies to stdio servers, not to an `http` server"
    );
}

/// Issue 29, item 12: seed 000's own example names `GITHUB_TOKEN`; without it, that server
/// alone waits (with the variable, the field and the file), the others load, and so do the
/// servers of an MCP registry beside one that waits. A reference outside a server's entry is
/// still an error of the whole file.
#[test]
fn an_unset_variable_makes_its_server_alone_unavailable() {
    let project = Project::with_env(env);
    let file = project.config(
        r#"{
  "registries": ["mcp.json"],
  "mcpServers": {
    "github": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"],
               "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "${GH_TOKEN_29}"}},
    "files": {"command": "npx", "args": ["${PORT}"]}
  }
}"#,
    );
    let registry = project.path().join("mcp.json");
    fs::write(
        &registry,
        r#"{"mcpServers": {"search": {"transport": "http", "url": "${SEARCH_URL}"},
            "local": {"command": "python3"}}}"#,
    )
    .expect("registry");
    let loaded = project.load(None).expect("loads");
    let names: Vec<&str> = loaded.config.upstreams.keys().map(|n| n.as_str()).collect();
    assert_eq!(names, ["files", "local"]);
    let waiting: BTreeMap<&str, &str> = loaded
        .unavailable_servers
        .iter()
        .map(|(name, server)| (name.as_str(), server.reason.as_str()))
        .collect();
    assert_eq!(
        waiting,
        BTreeMap::from([
            (
                "github",
                format!(
                    "environment variable `GH_TOKEN_29` is not set (used in \
                     `mcpServers.github.env.GITHUB_PERSONAL_ACCESS_TOKEN` of `{}`)",
                    file.display()
                )
                .as_str()
            ),
            (
                "search",
                format!(
                    "environment variable `SEARCH_URL` is not set (used in \
                     `mcpServers.search.url` of `{}`)",
                    registry.display()
                )
                .as_str()
            ),
        ])
    );
    // The waiting entry is kept as written: nothing of it is expanded, nothing started.
    let github = &loaded
        .unavailable_servers
        .iter()
        .next()
        .expect("github")
        .1
        .server;
    match &github.transport {
        UpstreamTransport::Stdio { env, .. } => assert_eq!(
            env.get("GITHUB_PERSONAL_ACCESS_TOKEN").map(String::as_str),
            Some("${GH_TOKEN_29}")
        ),
        other => panic!("{other:?}"),
    }

    let (_, error) = project.error(r#"{"root": "${NOPE_29}", "mcpServers": {}}"#);
    assert_eq!(
        error.message, "environment variable `NOPE_29` is not set",
        "{error}"
    );
}
