//! Loading real files from a temporary project, and the exact messages a user sees.

use std::fs;
use std::path::Path;
use std::time::Duration;

use std::sync::Arc;

use toolmux_config::{
    Config, ConfigEditor, LoadedConfig, SecretLookup, UpstreamTransport, find_project_dir, load,
    load_with_env, load_with_secrets,
};
use toolmux_core::{
    ArgumentOverride, DerivedTool, DescriptionChange, Policy, RateLimit, ToolAnnotations,
    ToolOverride,
};

mod common;
use common::Project;

#[test]
fn missing_files_give_the_defaults() {
    let project = Project::new();
    let loaded = load(project.path(), Some(&project.path().join("nope.json"))).expect("loads");
    assert_eq!(loaded.config, Config::default());
    assert!(loaded.files.is_empty());
    assert_eq!(loaded.project_dir, project.path());
    assert_eq!(
        loaded.root,
        fs::canonicalize(project.path()).expect("canonical")
    );
}

#[test]
fn comments_and_trailing_commas_are_accepted_and_errors_keep_their_position() {
    // JSON with comments, as `toolmux init` writes it: comments and trailing commas are blanked
    // out, so a mistake after them is still reported where it is in the file.
    let project = Project::new();
    let (file, err) = project.error(
        "// the project's settings\n{\n  /* limits */ \"defaults\": {\"timeoutMs\": 5,},\n  \"logs\": {\"retentionDays\": \"x\"}\n}\n",
    );
    assert_eq!((err.line, err.column), (Some(4), Some(31)), "{err}");
    assert_eq!(err.field, "logs.retentionDays");
    assert!(
        err.to_string()
            .starts_with(&format!("{}:4:31: ", file.display()))
    );
}

#[test]
fn missing_brace_is_reported_with_file_line_and_column() {
    let project = Project::new();
    let (file, err) = project.error("{\n  \"defaults\": {\"timeoutMs\": 5}\n");
    assert_eq!(
        err.to_string(),
        format!("{}:3: EOF while parsing an object", file.display())
    );
}

#[test]
fn text_after_the_object_is_an_error() {
    let project = Project::new();
    let (file, err) = project.error("{}\n}\n");
    assert_eq!(
        err.to_string(),
        format!("{}:2:1: trailing characters", file.display())
    );
}

#[test]
fn wrong_type_names_the_field() {
    let project = Project::new();
    let (file, err) = project.error("{\n  \"defaults\": {\n    \"timeoutMs\": \"fast\"\n  }\n}\n");
    assert_eq!(
        err.to_string(),
        format!(
            "{}:3:23: at `defaults.timeoutMs`: invalid type: string \"fast\", expected a whole number greater than 0",
            file.display()
        )
    );
    assert_eq!(err.field, "defaults.timeoutMs");
}

#[test]
fn wrong_section_type_says_an_object_is_expected() {
    let project = Project::new();
    let (file, err) = project.error(r#"{"logs": 5}"#);
    assert_eq!(
        err.to_string(),
        format!(
            "{}:1:10: at `logs`: invalid type: integer `5`, expected an object with \
             `retentionDays`, `resultCapBytes`, `argumentCapBytes`, `wholeFileCapBytes` and `maxDayBytes`",
            file.display()
        )
    );
}

#[test]
fn unknown_key_suggests_the_closest_field() {
    let project = Project::new();
    let (file, err) = project.error("{\n  \"defaults\": {\n    \"tiemoutMs\": 5\n  }\n}\n");
    assert_eq!(
        err.to_string(),
        format!(
            "{}:3:15: at `defaults`: unknown field `tiemoutMs`; did you mean `timeoutMs`?",
            file.display()
        )
    );
}

#[test]
fn unknown_top_level_key_lists_the_valid_fields_when_none_is_close() {
    let project = Project::new();
    let (file, err) = project.error(r#"{"zzz": 1}"#);
    assert_eq!(
        err.to_string(),
        format!(
            "{}:1:6: unknown field `zzz`; valid fields are `$schema`, `root`, `defaults`, \
             `policies`, `toolSettings`, `derivedTools`, `filters`, `endpoints`, `sources`, `workspace`, `logs`, \
             `mcpServers`, `providers`, `chat`, `server`, `principals`, `roles`, `tools`, `urlFetch`, `webSearch`, \
             `skills`, `shell`, `runners`, `registries`",
            file.display()
        )
    );
}

#[test]
fn invalid_policy_value_is_reported_at_its_position() {
    let project = Project::new();
    let (file, err) =
        project.error("{\n  \"policies\": {\n    \"tools\": {\"grep\": \"maybe\"}\n  }\n}\n");
    assert_eq!(
        err.to_string(),
        format!(
            "{}:3:29: at `policies.tools.grep`: invalid value `maybe`; expected one of \
             `allow`, `ask`, `deny`",
            file.display()
        )
    );
}

#[test]
fn misspelt_policy_value_gets_a_suggestion() {
    let project = Project::new();
    let (file, err) = project.error(r#"{"policies": {"default": "alow"}}"#);
    assert_eq!(
        err.to_string(),
        format!(
            "{}:1:31: at `policies.default`: invalid value `alow`; did you mean `allow`?",
            file.display()
        )
    );
}

#[test]
fn invalid_glob_in_a_filter_is_reported_at_its_position() {
    let project = Project::new();
    let (file, err) = project.error("{\n  \"filters\": {\"include\": [\"file_*\", \"a[\"]}\n}\n");
    assert_eq!(
        err.to_string(),
        format!(
            "{}:2:41: at `filters.include[1]`: invalid tool-name pattern `a[`: \
             unclosed character class; missing ']'",
            file.display()
        )
    );
}

#[test]
fn invalid_glob_as_a_policy_key_is_reported_at_its_position() {
    let project = Project::new();
    let (file, err) = project.error(r#"{"policies": {"tools": {"a[": "ask"}}}"#);
    assert_eq!(
        err.to_string(),
        format!(
            "{}:1:28: at `policies.tools.a[`: invalid tool-name pattern `a[`: \
             unclosed character class; missing ']'",
            file.display()
        )
    );
}

#[test]
fn tool_settings_take_exact_names_not_patterns() {
    let project = Project::new();
    let (file, err) = project.error(r#"{"toolSettings": {"github__*": {"enabled": false}}}"#);
    assert_eq!(
        err.to_string(),
        format!(
            "{}:1:29: at `toolSettings.github__*`: invalid tool name `github__*`: a tool name is 1 to 64 \
             letters, digits, `_` or `-` (patterns belong in `policies.tools` and `filters`)",
            file.display()
        )
    );
}

#[test]
fn output_settings_errors_name_file_line_and_field() {
    let project = Project::new();
    let (file, err) = project.error(
        r#"{"toolSettings": {"grep": {"output": {"maxTokens": 100, "projection": "repeat(.)"}}}}"#,
    );
    assert_eq!(
        err.to_string(),
        format!(
            "{}:1:82: at `toolSettings.grep.output.projection`: the jq expression `repeat(.)` is \
             refused: `repeat` may make unbounded work, which a projection may not",
            file.display()
        )
    );
    let (file, err) = project
        .error(r#"{"toolSettings": {"grep": {"output": {"maxTokens": 100, "maxBytes": 10}}}}"#);
    assert_eq!(
        err.to_string(),
        format!(
            "{}:1:72: at `toolSettings.grep.output`: set `maxTokens` or `maxBytes`, not both",
            file.display()
        )
    );
    let (file, err) =
        project.error(r#"{"toolSettings": {"grep": {"output": {"keep": "middle"}}}}"#);
    assert_eq!(
        err.to_string(),
        format!(
            "{}:1:54: at `toolSettings.grep.output.keep`: invalid value `middle`; expected one \
             of `head`, `tail`, `headTail`",
            file.display()
        )
    );
}

#[test]
fn invalid_rate_limit_period_is_reported_at_its_position() {
    let project = Project::new();
    let (file, err) = project.error(
        r#"{"toolSettings": {"grep": {"rateLimit": {"requests": 10, "period": "1 minute"}}}}"#,
    );
    assert_eq!(
        err.to_string(),
        format!(
            "{}:1:78: at `toolSettings.grep.rateLimit.period`: invalid duration `1 minute`: \
             expected a number followed by ms, s, m, h or d (e.g. \"30s\"), or one of \
             `second`, `minute`, `hour`, `day`",
            file.display()
        )
    );
}

#[test]
fn unset_variable_names_the_variable_and_the_field() {
    let project = Project::new();
    let (file, err) = project.error("{\n  \"root\": \"${PROJECT_ROOT}/src\"\n}\n");
    assert_eq!(
        err.to_string(),
        format!(
            "{}:2:31: at `root`: environment variable `PROJECT_ROOT` is not set",
            file.display()
        )
    );
    assert_eq!(err.field, "root");
}

#[test]
fn references_are_expanded_in_every_string_before_checking() {
    let project = Project::new();
    fs::create_dir(project.path().join("src")).expect("mkdir src");
    project.config(
        r#"{
          "$schema": "$${not a reference}",
          "root": "${SUBDIR}",
          "policies": {"default": "${DEFAULT_POLICY:-deny}", "tools": {"grep": "${GREP_POLICY}"}},
          "toolSettings": {"grep": {"rateLimit": {"requests": 2, "period": "${PERIOD:-1m}"}}}
        }"#,
    );
    let env = |name: &str| match name {
        "SUBDIR" => Some("src".to_string()),
        "GREP_POLICY" => Some("ask".to_string()),
        _ => None,
    };
    let loaded = load_with_env(project.path(), None, &env).expect("loads");
    let config = &loaded.config;
    assert_eq!(config.schema.as_deref(), Some("${not a reference}"));
    assert_eq!(config.root.as_deref(), Some(Path::new("src")));
    assert_eq!(
        loaded.root,
        fs::canonicalize(project.path().join("src")).expect("canonical")
    );
    assert_eq!(config.policies.default, Some(Policy::Deny));
    let settings = config.hub_settings();
    assert_eq!(
        settings.policies.tools[0].0.as_str(),
        "grep",
        "one rule for grep"
    );
    assert_eq!(settings.policies.tools[0].1, Policy::Ask);
    assert_eq!(
        settings.overrides["grep"].rate_limit,
        Some(RateLimit {
            requests: 2,
            period: Duration::from_secs(60)
        })
    );
}

#[test]
fn a_reference_that_expands_to_an_invalid_value_is_reported_at_its_position() {
    let project = Project::new();
    let file = project.config(r#"{"policies": {"default": "${POLICY}"}}"#);
    let env = |name: &str| (name == "POLICY").then(|| "sometimes".to_string());
    let err = load_with_env(project.path(), None, &env).expect_err("invalid after expansion");
    assert_eq!(
        err.to_string(),
        format!(
            "{}:1:36: at `policies.default`: invalid value `sometimes`; expected one of \
             `allow`, `ask`, `deny`",
            file.display()
        )
    );
}

#[test]
fn the_project_file_wins_over_the_user_file_key_by_key() {
    let project = Project::new();
    let user = project.user(
        r#"{
          "defaults": {"timeoutMs": 1000, "approvalTimeoutMs": 2000},
          "policies": {"default": "deny", "tools": {"grep": "deny", "git__*": "ask"}},
          "filters": {"include": ["file_*", "grep"]},
          "logs": {"retentionDays": 7}
        }"#,
    );
    let project_file = project.config(
        r#"{
          "defaults": {"timeoutMs": 5000},
          "policies": {"tools": {"grep": "allow"}},
          "filters": {"include": ["grep"]}
        }"#,
    );
    let loaded = project.load(Some(&user)).expect("loads");
    assert_eq!(loaded.files, [user, project_file]);
    let config = loaded.config;
    assert_eq!(config.defaults.timeout_ms.get(), 5000);
    assert_eq!(config.defaults.approval_timeout_ms.get(), 2000);
    assert_eq!(config.policies.default, Some(Policy::Deny));
    let tools: Vec<(&str, Policy)> = config
        .policies
        .tools
        .iter()
        .map(|(p, pol)| (p.as_str(), *pol))
        .collect();
    assert_eq!(tools, [("git__*", Policy::Ask), ("grep", Policy::Allow)]);
    let include: Vec<&str> = config.filters.include.iter().map(|p| p.as_str()).collect();
    assert_eq!(include, ["grep"], "arrays are replaced, not merged");
    assert_eq!(config.logs.retention_days, 7);
    assert_eq!(config.logs.result_cap_bytes, 16 * 1024, "default kept");
}

#[test]
fn an_error_in_the_user_file_names_the_user_file() {
    let project = Project::new();
    let user = project.user(r#"{"logs": {"retentionDays": -1}}"#);
    project.config("{}");
    let err = project.load(Some(&user)).expect_err("invalid user file");
    assert_eq!(
        err.to_string(),
        format!(
            "{}:1:29: at `logs.retentionDays`: invalid value: integer `-1`, expected a whole number, 0 or more",
            user.display()
        )
    );
}

#[test]
fn each_file_must_be_valid_alone() {
    // A rate limit is complete in each file; the user's period does not complete the project's.
    let project = Project::new();
    let user = project
        .user(r#"{"toolSettings": {"grep": {"rateLimit": {"requests": 1, "period": "1s"}}}}"#);
    let file = project.config(r#"{"toolSettings": {"grep": {"rateLimit": {"requests": 5}}}}"#);
    let err = project
        .load(Some(&user))
        .expect_err("incomplete rate limit");
    assert_eq!(
        err.to_string(),
        format!(
            "{}:1:55: at `toolSettings.grep.rateLimit`: missing field `period`",
            file.display()
        )
    );
}

#[test]
fn root_is_resolved_against_the_project_directory() {
    let project = Project::new();
    fs::create_dir_all(project.path().join("a/b")).expect("mkdir");
    project.config(r#"{"root": "a/../a/b"}"#);
    let loaded = project.load(None).expect("loads");
    assert_eq!(
        loaded.root,
        fs::canonicalize(project.path().join("a/b")).expect("canonical")
    );
}

#[test]
fn a_missing_root_is_an_error() {
    let project = Project::new();
    let file = project.config(r#"{"root": "nope"}"#);
    let err = project.load(None).expect_err("missing root");
    assert_eq!(
        err.to_string(),
        format!(
            "{}: at `root`: the project root `nope` does not exist (looked for `{}`)",
            file.display(),
            project.path().join("nope").display()
        )
    );
}

#[test]
fn a_root_that_is_a_file_is_an_error() {
    let project = Project::new();
    fs::write(project.path().join("README"), "hi").expect("write");
    let file = project.config(r#"{"root": "README"}"#);
    let err = project.load(None).expect_err("root is a file");
    assert_eq!(
        err.to_string(),
        format!(
            "{}: at `root`: the project root `README` is not a directory (`{}`)",
            file.display(),
            fs::canonicalize(project.path().join("README"))
                .expect("canonical")
                .display()
        )
    );
}

#[test]
fn find_project_dir_walks_up_to_the_first_config() {
    let project = Project::new();
    project.config("{}");
    let deep = project.path().join("a/b/c");
    fs::create_dir_all(&deep).expect("mkdir");
    assert_eq!(find_project_dir(&deep).as_deref(), Some(project.path()));
    // A `.toolmux` folder without a config file does not count.
    fs::create_dir_all(project.path().join("a/.toolmux")).expect("mkdir");
    assert_eq!(find_project_dir(&deep).as_deref(), Some(project.path()));
    let elsewhere = tempfile::tempdir().expect("tempdir");
    assert_eq!(find_project_dir(elsewhere.path()), None);
}

#[test]
fn hub_settings_carry_every_section() {
    let project = Project::new();
    project.config(
        r#"{
          "defaults": {"timeoutMs": 1500, "approvalTimeoutMs": 30000},
          "policies": {"default": "ask", "tools": {"grep": "allow", "github__*": "ask"},
                       "sources": {"workspace": "allow"}},
          "toolSettings": {"grep": {"timeoutMs": 5000, "rateLimit": {"requests": 10, "period": "1m"},
                                    "enabled": false}},
          "filters": {"include": ["file_*"], "exclude": ["*__delete_*"]},
          "sources": {"workspace": {"enabled": true}, "github": {"enabled": false}},
          "workspace": {"maxReadBytes": 1, "maxResults": 2, "maxOutputBytes": 3}
        }"#,
    );
    let config = project.load(None).expect("loads").config;
    let settings = config.hub_settings();
    assert_eq!(settings.default_timeout, Duration::from_millis(1500));
    assert_eq!(settings.approval_timeout, Duration::from_secs(30));
    assert_eq!(settings.policies.default, Some(Policy::Ask));
    let rules: Vec<(&str, Policy)> = settings
        .policies
        .tools
        .iter()
        .map(|(p, pol)| (p.as_str(), *pol))
        .collect();
    assert_eq!(rules, [("github__*", Policy::Ask), ("grep", Policy::Allow)]);
    assert_eq!(settings.policies.sources["workspace"], Policy::Allow);
    assert_eq!(
        settings.overrides["grep"],
        ToolOverride {
            timeout: Some(Duration::from_secs(5)),
            rate_limit: Some(RateLimit {
                requests: 10,
                period: Duration::from_secs(60)
            }),
            enabled: Some(false),
            approval_message: None,
            presentation: toolmux_core::Presentation::default(),
        }
    );
    assert!(settings.filters.include[0].matches("file_read"));
    assert!(settings.filters.exclude[0].matches("github__delete_repo"));
    assert_eq!(
        settings.disabled_sources.iter().collect::<Vec<_>>(),
        ["github"]
    );
    let limits = config.workspace_limits();
    assert_eq!(
        (
            limits.max_read_bytes,
            limits.max_results,
            limits.max_output_bytes
        ),
        (1, 2, 3)
    );
}

#[test]
fn zero_timeout_is_rejected() {
    let project = Project::new();
    let (file, err) = project.error(r#"{"defaults": {"timeoutMs": 0}}"#);
    assert_eq!(
        err.to_string(),
        format!(
            "{}:1:28: at `defaults.timeoutMs`: invalid value: integer `0`, expected a whole number greater than 0",
            file.display()
        )
    );
}

#[test]
fn keys_are_names_and_are_not_expanded() {
    let project = Project::new();
    project.config(r#"{"sources": {"${X}": {"enabled": false}}}"#);
    let config = project.load(None).expect("loads").config;
    assert!(config.sources.contains_key("${X}"));
}

#[test]
fn mcp_servers_as_a_list_of_named_servers_load_as_the_object_form() {
    let project = Project::new();
    // Seed 000's example, as written there.
    project.config(
        r#"{
  "mcpServers": [
    {
      "name": "github",
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-github"],
      "env": { "GITHUB_TOKEN": "${GITHUB_TOKEN:-unset}" }
    },
    {
      "name": "postgres",
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-postgres"],
      "env": { "DATABASE_URL": "${DATABASE_URL:-postgres://localhost/db}" }
    }
  ]
}
"#,
    );
    let listed = project.load(None).expect("the list form loads").config;
    let object = Project::new();
    object.config(
        r#"{"mcpServers": {
  "github": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"], "env": {"GITHUB_TOKEN": "${GITHUB_TOKEN:-unset}"}},
  "postgres": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-postgres"], "env": {"DATABASE_URL": "${DATABASE_URL:-postgres://localhost/db}"}}
}}"#,
    );
    let keyed = object.load(None).expect("the object form loads").config;
    assert_eq!(listed.upstreams, keyed.upstreams);
    let names: Vec<String> = listed.upstreams.keys().map(ToString::to_string).collect();
    assert_eq!(names, ["github", "postgres"]);
}

#[test]
fn a_listed_server_without_a_name_or_with_a_name_used_twice_is_an_error_at_its_place() {
    let project = Project::new();
    let (file, err) = project.error("{\"mcpServers\": [\n  {\"command\": \"a\"}\n]}\n");
    assert_eq!(
        err.to_string(),
        format!(
            "{}:2:18: at `mcpServers[0]`: missing field `name`",
            file.display()
        )
    );
    let (file, err) = project.error(
        "{\"mcpServers\": [\n  {\"name\": \"a\", \"command\": \"x\"},\n  {\"name\": \"a\", \"command\": \"y\"}\n]}\n",
    );
    assert_eq!(
        err.to_string(),
        format!(
            "{}:4:1: at `mcpServers`: two servers are named `a`; each needs its own name",
            file.display()
        )
    );
    let (file, err) =
        project.error("{\"mcpServers\": [\n  {\"name\": \"a\", \"comand\": \"x\"}\n]}\n");
    assert!(
        err.to_string().starts_with(&format!(
            "{}:2:30: at `mcpServers[0]`: server `a`: unknown field `comand`, expected one of `type`, `command`, ",
            file.display()
        )),
        "{err}"
    );
}

/// Issue 26: the secret store was a process global the binary installed, so a load could not
/// say which store it read. Now each load is given its own, as it is given the environment:
/// two loads in one process read two stores, and a load given none refuses the reference.
#[test]
fn each_load_reads_the_secret_store_it_is_given() {
    let project = Project::new();
    let file = project.config(
        r#"{"mcpServers": {"docs": {"url": "https://docs.example/mcp",
            "headers": {"Authorization": "Bearer ${secret:DOCS_TOKEN}"}}}}"#,
    );
    let token = |loaded: &LoadedConfig| match &loaded.config.upstreams["docs"].transport {
        UpstreamTransport::Http { headers, .. } => headers["Authorization"].clone(),
        other => panic!("docs is http: {other:?}"),
    };
    let first = |name: &str| Ok((name == "DOCS_TOKEN").then(|| "one".to_string()));
    let second = |name: &str| Ok((name == "DOCS_TOKEN").then(|| "two".to_string()));
    let loaded = load_with_secrets(project.path(), None, Some(&first)).expect("loads");
    assert_eq!(token(&loaded), "Bearer one");
    let loaded = load_with_secrets(project.path(), None, Some(&second)).expect("loads");
    assert_eq!(token(&loaded), "Bearer two");

    let err = load(project.path(), None).expect_err("no store was given");
    assert_eq!(
        err.to_string(),
        format!(
            "{}:2:70: at `mcpServers.docs.headers.Authorization`: secret `DOCS_TOKEN` could \
             not be read: no secret store was given to this load",
            file.display()
        )
    );

    // The editor checks an edit against the store it was given, too.
    let editor = ConfigEditor::new(project.path(), None);
    assert!(
        editor.load().is_err(),
        "no store: the reference does not load"
    );
    let store: Arc<dyn SecretLookup> = Arc::new(second);
    let editor = editor.with_secrets(Some(store));
    assert_eq!(token(&editor.load().expect("loads")), "Bearer two");
}

#[test]
fn tool_overrides_and_derived_tools_reach_the_hub_settings() {
    let project = Project::new();
    project.config(
        r#"{
          "toolSettings": {"tracker__search": {
            "name": "search_issues",
            "title": "Search issues",
            "description": {"append": "Only org/x."},
            "annotations": {"readOnlyHint": true},
            "arguments": {"repo": {"value": "org/x", "hidden": true},
                          "q": {"rename": "query"}, "state": {"default": "open"}}
          }},
          "derivedTools": {"get_open_bugs": {"from": "tracker__search",
            "description": "Open bugs.", "arguments": {"state": "open", "label": "bug"}}}
        }"#,
    );
    let settings = project.load(None).expect("loads").config.hub_settings();
    let presentation = &settings.overrides["tracker__search"].presentation;
    assert_eq!(presentation.name.as_deref(), Some("search_issues"));
    assert_eq!(presentation.title.as_deref(), Some("Search issues"));
    assert_eq!(
        presentation.description,
        Some(DescriptionChange::Append("Only org/x.".into()))
    );
    assert_eq!(
        presentation.annotations,
        Some(ToolAnnotations {
            read_only_hint: Some(true),
            ..ToolAnnotations::default()
        })
    );
    assert_eq!(
        presentation.arguments["repo"],
        ArgumentOverride {
            value: Some(serde_json::json!("org/x")),
            hidden: true,
            ..ArgumentOverride::default()
        }
    );
    assert_eq!(presentation.arguments["q"].rename.as_deref(), Some("query"));
    assert_eq!(
        presentation.arguments["state"].default,
        Some(serde_json::json!("open"))
    );
    assert_eq!(
        settings.derived,
        [DerivedTool {
            name: "get_open_bugs".into(),
            from: "tracker__search".into(),
            title: None,
            description: "Open bugs.".into(),
            arguments: serde_json::from_value(serde_json::json!({"state": "open", "label": "bug"}))
                .expect("an object"),
        }]
    );
}

#[test]
fn a_misspelt_argument_override_is_reported_at_its_position() {
    let project = Project::new();
    let (file, err) = project
        .error("{\"toolSettings\": {\"a__b\": {\"arguments\": {\"repo\": {\"hiden\": true}}}}}");
    assert_eq!(
        err.to_string(),
        format!(
            "{}:1:57: at `toolSettings.a__b.arguments.repo`: unknown field `hiden`; did you mean `hidden`?",
            file.display()
        )
    );
}

#[test]
fn a_description_override_is_a_string_or_an_append() {
    let project = Project::new();
    let (file, err) =
        project.error("{\"toolSettings\": {\"a__b\": {\"description\": {\"prepend\": \"x\"}}}}");
    assert_eq!(
        err.to_string(),
        format!(
            "{}:1:59: at `toolSettings.a__b.description`: a string (replaces the description) or an object with `append`",
            file.display()
        )
    );
}

#[test]
fn a_derived_tool_names_what_it_derives_from() {
    let project = Project::new();
    let (file, err) =
        project.error("{\"derivedTools\": {\"open_bugs\": {\"description\": \"Open bugs.\"}}}");
    assert_eq!(
        err.to_string(),
        format!(
            "{}:1:60: at `derivedTools.open_bugs`: missing field `from`",
            file.display()
        )
    );
}
