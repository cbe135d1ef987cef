//! The upstream client against the Python fault server (stdio and streamable HTTP): discovery
//! and its cache, paging, results, crashes, failed starts, timeouts, idling, list changes,
//! forgotten HTTP sessions. After every test, no process of a server is left.

mod support;

use std::time::Duration;

use serde_json::json;
use support::{Project, assert_echoes, call, quick_backoff, shut_down, with_setting};
use toolmux_core::{CallError, ContentBody, Source, SourceState};
use toolmux_testkit::eventually::eventually;
use toolmux_testkit::peers::mcp_python;
use toolmux_testkit::processes::{Background, assert_group_gone, free_port};
use toolmux_testkit::servers::{faults, faults_script};
use toolmux_upstream::{DiscoveryRecord, DiscoveryStatus};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listing_starts_nothing_and_discovery_fills_the_cache() {
    let pid_file = tempfile::NamedTempFile::new().expect("temp file");
    std::fs::remove_file(pid_file.path()).expect("remove");
    let pid_path = pid_file.path().display().to_string();
    let project =
        Project::new(&json!({"mcpServers": {"faults": faults(&["--pid-file", &pid_path])}}));

    let upstreams = project.upstreams();
    let hub = project.hub(&upstreams);
    let server = upstreams.get("faults").expect("configured");
    assert!(
        hub.catalog().tools().next().is_none(),
        "nothing discovered yet"
    );
    assert_eq!(server.status().state, SourceState::Never);
    assert!(
        !pid_file.path().exists(),
        "listing the catalog started the server"
    );

    let outcome = server.discover().await.expect("discovery works");
    assert_eq!(outcome.listed, 9);
    let catalog = hub.catalog();
    let echo = catalog.get("faults__echo").expect("echo is in the catalog");
    assert_eq!(echo.descriptor.original_name, "echo");
    assert_eq!(echo.descriptor.source, "faults");
    // The dialect the server declares is kept (SEP-1613), in the schema the pipeline checks.
    assert_eq!(
        echo.descriptor.input_schema["$schema"],
        "http://json-schema.org/draft-07/schema#"
    );
    assert_eq!(server.status().state, SourceState::Success);

    let record = DiscoveryRecord::read(server.cache_path()).expect("the cache is written");
    assert_eq!(record.discovery_status, DiscoveryStatus::Success);
    assert!(record.config_hash.starts_with("sha256:"));
    assert!(record.last_discovery.is_some());
    assert_eq!(
        record.server_info.as_ref().map(|i| i.version.as_str()),
        Some(""),
        "an empty version is tolerated"
    );
    let pgid = server.pid().await.expect("discovery started the server");
    upstreams.shutdown().await;
    assert_group_gone(pgid);

    // A fresh process reads the cache and lists the tools without starting anything.
    std::fs::remove_file(pid_file.path()).expect("remove pid file");
    let again = project.upstreams();
    let hub = project.hub(&again);
    assert!(hub.catalog().get("faults__huge").is_some());
    assert_eq!(again.get("faults").expect("configured").pid().await, None);
    assert!(
        !pid_file.path().exists(),
        "reading the cache started the server"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn d17_a_changed_configuration_keeps_the_tools_known_and_a_call_rediscovers() {
    let project = Project::new(&json!({"mcpServers": {"faults": faults(&[])}}));
    let (upstreams, _hub, _server) = project.discovered("faults").await;
    upstreams.shutdown().await;

    let changed = Project { dir: project.dir };
    let pid_file = changed.path().join("new.pid");
    let pid_arg = pid_file.display().to_string();
    std::fs::write(
        toolmux_config::project_config_path(changed.path()),
        json!({"mcpServers": {"faults": faults(&["--pid-file", &pid_arg])}}).to_string(),
    )
    .expect("rewrite config");
    let again = changed.upstreams();
    let hub = changed.hub(&again);
    let server = again.get("faults").expect("configured");
    assert_eq!(
        server.tools().len(),
        9,
        "the earlier configuration's tools stay known"
    );
    let status = server.status();
    assert_eq!(status.state, SourceState::Never);
    assert!(
        status
            .error
            .as_deref()
            .is_some_and(|e| e.contains("toolmux mcp refresh faults")),
        "{status:?}"
    );
    assert!(server.needs_discovery());

    assert_echoes(&hub, "faults__echo", "known", "the call starts the server").await;
    assert!(pid_file.exists(), "started with the configuration in force");
    assert_eq!(server.status().state, SourceState::Success);
    assert!(!server.needs_discovery());
    // The cache file is rewritten beside the call's answer, not necessarily before it.
    eventually(
        Duration::from_secs(10),
        "the cache to be written for the configuration in force",
        async || {
            DiscoveryRecord::read(server.cache_path())
                .is_some_and(|record| record.config_hash == server.config_hash())
        },
    )
    .await;
    let pgid = server.pid().await.expect("running");
    again.shutdown().await;
    assert_group_gone(pgid);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paging_reads_every_page_and_an_endless_list_fails_clearly() {
    let project = Project::new(&json!({"mcpServers": {
        "paged": faults(&["--page-size", "2"]),
        "endless": faults(&["--endless-pages"]),
    }}));
    let upstreams = project.upstreams();
    let paged = upstreams.get("paged").expect("configured");
    assert_eq!(paged.discover().await.expect("pages").listed, 9);
    let endless = upstreams.get("endless").expect("configured");
    let err = endless.discover().await.expect_err("never ends");
    assert_eq!(
        err.to_string(),
        "MCP server `endless`: tools/list returned more than 100 pages; stopping"
    );
    let status = endless.status();
    assert_eq!(status.state, SourceState::Failed);
    assert_eq!(status.error.as_deref(), Some(err.to_string().as_str()));
    let pgids = [paged.pid().await, endless.pid().await];
    upstreams.shutdown().await;
    pgids.into_iter().flatten().for_each(assert_group_gone);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn results_pass_through_intact() {
    let project = Project::new(&json!({"mcpServers": {"faults": faults(&[])}}));
    let (upstreams, hub, server) = project.discovered("faults").await;

    let result = call(&hub, "faults__kinds", json!({})).await.expect("calls");
    let wire = serde_json::to_value(&result).expect("serializes");
    assert_eq!(
        wire["content"][0],
        json!({"type": "text", "text": "text", "annotations": {"audience": ["user"]}})
    );
    assert!(
        matches!(&result.content[1].body, ContentBody::Image { mime_type, .. } if mime_type == "image/png")
    );
    assert!(
        matches!(&result.content[2].body, ContentBody::Audio { mime_type, .. } if mime_type == "audio/wav")
    );
    assert_eq!(
        wire["content"][3],
        json!({"type": "resource_link", "uri": "file:///tmp/a.txt", "name": "a.txt", "mimeType": "text/plain"})
    );
    assert_eq!(
        wire["content"][4]["resource"],
        json!({"uri": "file:///tmp/b.txt", "text": "b", "mimeType": "text/plain"})
    );
    assert_eq!(result.structured_content, Some(json!({"ok": true})));
    assert!(!result.is_error);

    let failed = call(&hub, "faults__fail", json!({}))
        .await
        .expect("a tool error is a result");
    assert!(failed.is_error);
    assert_eq!(failed.text_content(), "it went wrong");

    let big = call(&hub, "faults__huge", json!({"bytes": 4_000_000}))
        .await
        .expect("huge result");
    assert_eq!(big.text_content().len(), 4_000_000);

    shut_down(&upstreams, &server).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crashed_upstream_fails_only_its_own_calls_and_restarts_on_the_next_call() {
    let project = Project::new(&json!({"mcpServers": {
        "flaky": faults(&[]),
        "steady": faults(&[]),
    }}));
    let upstreams = project.upstreams();
    let hub = project.hub(&upstreams);
    for server in upstreams.servers() {
        server.discover().await.expect("discovers");
    }
    let flaky = upstreams.get("flaky").expect("configured");
    let first = flaky.pid().await.expect("running");

    let err = call(&hub, "flaky__crash", json!({}))
        .await
        .expect_err("the server dies");
    let CallError::Failed { message, .. } = &err else {
        panic!("expected a failure, got {err:?}");
    };
    assert!(
        message.starts_with("MCP server `flaky` exited during the call"),
        "{message}"
    );
    assert_group_gone(first);

    assert_echoes(&hub, "steady__echo", "still here", "unaffected").await;

    assert_echoes(&hub, "flaky__echo", "back", "restarted").await;
    let second = flaky.pid().await.expect("running");
    assert_ne!(first, second, "a new process");
    let log = std::fs::read_to_string(flaky.log_path()).expect("log");
    assert!(
        log.contains("faults: crashing on purpose"),
        "stderr goes to the log:\n{log}"
    );

    let pgids = [
        second,
        upstreams
            .get("steady")
            .expect("configured")
            .pid()
            .await
            .expect("running"),
    ];
    upstreams.shutdown().await;
    pgids.into_iter().for_each(assert_group_gone);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_cannot_start_is_unavailable_after_three_tries_and_others_keep_working() {
    let project = Project::new(&json!({"mcpServers": {
        "broken": faults(&["--fail-start", "missing API key"]),
        "fine": faults(&[]),
    }}));
    let upstreams = project.upstreams();
    let hub = project.hub(&upstreams);
    let broken = upstreams.get("broken").expect("configured");
    let err = broken.discover().await.expect_err("cannot start");
    let text = err.to_string();
    assert!(
        text.starts_with("MCP server `broken`: cannot start: the MCP handshake failed"),
        "{text}"
    );
    assert!(
        text.ends_with("its stderr ends with: missing API key"),
        "{text}"
    );
    let log = std::fs::read_to_string(broken.log_path()).expect("log");
    assert_eq!(log.matches("--- ").count(), 3, "three tries:\n{log}");

    let status = broken.status();
    assert_eq!(status.state, SourceState::Failed);
    let catalog = hub.catalog();
    let info = catalog
        .sources()
        .iter()
        .find(|s| s.id == "broken")
        .expect("listed");
    assert_eq!(info.status.state, SourceState::Failed);

    // Inside the window, a call fails at once with the server's name and last error.
    let started = std::time::Instant::now();
    let unavailable = broken.discover().await.expect_err("still unavailable");
    assert!(
        started.elapsed() < Duration::from_millis(200),
        "no new tries inside the window"
    );
    let text = unavailable.to_string();
    assert!(text.starts_with("MCP server `broken` is unavailable (service unavailable) after 3 failed starts; last error: MCP server `broken`: cannot start"), "{text}");
    let log = std::fs::read_to_string(broken.log_path()).expect("log");
    assert_eq!(log.matches("--- ").count(), 3, "no start inside the window");

    let fine = upstreams.get("fine").expect("configured");
    fine.discover().await.expect("the other server works");
    assert_echoes(&hub, "fine__echo", "ok", "calls").await;

    // After the window, the next attempt tries again.
    tokio::time::sleep(quick_backoff().window).await;
    broken.discover().await.expect_err("still broken");
    let log = std::fs::read_to_string(broken.log_path()).expect("log");
    assert_eq!(
        log.matches("--- ").count(),
        6,
        "three more tries after the window"
    );

    shut_down(&upstreams, &fine).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_past_its_timeout_is_reported_and_cancelled_upstream() {
    let cancel = tempfile::tempdir().expect("tempdir");
    let cancel_file = cancel.path().join("cancelled");
    let cancel_arg = cancel_file.display().to_string();
    let mut server = faults(&["--cancel-file", &cancel_arg]);
    server["toolTimeoutMs"] = json!(300);
    let project = Project::new(&json!({"mcpServers": {"faults": server}}));
    let (upstreams, hub, faults) = project.discovered("faults").await;

    let err = call(&hub, "faults__hang", json!({}))
        .await
        .expect_err("times out");
    assert!(
        matches!(err, CallError::Timeout { after, .. } if after == Duration::from_millis(300)),
        "{err:?}"
    );
    eventually(
        Duration::from_secs(5),
        "notifications/cancelled to reach the server",
        async || cancel_file.exists(),
    )
    .await;
    assert_echoes(&hub, "faults__echo", "after", "still usable").await;

    shut_down(&upstreams, &faults).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_server_is_stopped_and_started_again_by_the_next_call() {
    let server = with_setting(faults(&[]), "idleTimeoutMs", json!(400));
    let project = Project::new(&json!({"mcpServers": {"faults": server}}));
    let (upstreams, hub, faults) = project.discovered("faults").await;
    let first = faults.pid().await.expect("running");

    // A call longer than the idle limit keeps it running.
    call(&hub, "faults__slow", json!({"ms": 700}))
        .await
        .expect("slow call");
    assert_eq!(faults.pid().await, Some(first), "not stopped during a call");

    eventually(
        Duration::from_secs(5),
        "the idle server to stop",
        async || !faults.is_running().await,
    )
    .await;
    assert_group_gone(first);

    assert_echoes(&hub, "faults__echo", "again", "restarts").await;
    let second = faults.pid().await.expect("running");
    upstreams.shutdown().await;
    assert_group_gone(second);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tools_list_changed_notification_triggers_rediscovery() {
    // `trust: auto`: a tool that appears later is pinned as it comes, not held for a person.
    let mut server = faults(&[]);
    server["trust"] = json!("auto");
    let project = Project::new(&json!({"mcpServers": {"faults": server}}));
    let (upstreams, hub, faults) = project.discovered("faults").await;
    assert!(hub.catalog().get("faults__extra_1").is_none());

    call(&hub, "faults__grow", json!({})).await.expect("grows");
    eventually(
        Duration::from_secs(5),
        "the new tool in the catalog",
        async || hub.catalog().get("faults__extra_1").is_some(),
    )
    .await;
    let record = DiscoveryRecord::read(faults.cache_path()).expect("cache");
    assert!(
        record.tools.iter().any(|t| t.name == "extra_1"),
        "the cache follows"
    );

    shut_down(&upstreams, &faults).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_schema_is_replaced_and_the_tool_still_works() {
    let project = Project::new(&json!({"mcpServers": {"faults": faults(&["--malformed-schema"])}}));
    let (upstreams, hub, faults) = project.discovered("faults").await;
    let catalog = hub.catalog();
    let tool = catalog.get("faults__malformed").expect("kept");
    assert_eq!(*tool.descriptor.input_schema, json!({"type": "object"}));
    let record = faults.record();
    let cached = record
        .tools
        .iter()
        .find(|t| t.name == "malformed")
        .expect("cached");
    let note = cached.note.as_deref().unwrap_or_default();
    assert!(note.starts_with("the schema is invalid"), "{cached:?}");

    shut_down(&upstreams, &faults).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn per_server_filters_prefix_and_policies_shape_the_catalog() {
    let mut server = faults(&[]);
    server["prefix"] = json!("f");
    server["enabledTools"] = json!(["e*", "h*", "kinds"]);
    server["disabledTools"] = json!(["hang"]);
    server["policy"] = json!("ask");
    server["toolPolicies"] = json!({"echo": "allow"});
    server["toolTimeoutMs"] = json!(1234);
    let project = Project::new(&json!({"mcpServers": {"faults": server}}));
    let (upstreams, hub, _server) = project.discovered("faults").await;
    let catalog = hub.catalog();
    let names: Vec<&str> = catalog
        .tools()
        .map(|e| e.descriptor.name.as_str())
        .collect();
    assert_eq!(names, ["f__echo", "f__huge", "f__kinds"]);
    let echo = catalog.get("f__echo").expect("echo");
    assert_eq!(echo.policy, toolmux_core::Policy::Allow);
    assert_eq!(echo.timeout, Duration::from_millis(1234));
    assert_eq!(
        catalog.get("f__huge").expect("huge").policy,
        toolmux_core::Policy::Ask
    );
    upstreams.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forgotten_http_session_is_reestablished_transparently() {
    let port = free_port();
    let python = mcp_python();
    let script = faults_script().display().to_string();
    let port_arg = port.to_string();
    let mut server = Background::start(&python, &[&script, "--http", &port_arg], &[]);
    server.wait_for_port(port);
    let project = Project::new(&json!({"mcpServers": {
        "remote": {"url": format!("http://127.0.0.1:{port}/mcp")}
    }}));
    let upstreams = project.upstreams();
    let hub = project.hub(&upstreams);
    upstreams
        .get("remote")
        .expect("configured")
        .discover()
        .await
        .expect("discovers over HTTP");
    assert_echoes(&hub, "remote__echo", "one", "calls").await;

    // The server restarts and forgets every session.
    server.stop();
    let mut restarted = Background::start(&python, &[&script, "--http", &port_arg], &[]);
    restarted.wait_for_port(port);
    assert_echoes(&hub, "remote__echo", "two", "a new session").await;
    upstreams.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_replaced_by_a_configuration_change_is_never_started_again() {
    let project = Project::new(&json!({"mcpServers": {"faults": faults(&[])}}));
    let (upstreams, hub, old) = project.discovered("faults").await;
    let old_group = old.pid().await.expect("running");

    // A call that took the old server from an older catalog snapshot, racing a reload.
    let stale_catalog = hub.catalog();
    let report = project.reconfigure(
        &json!({"mcpServers": {"faults": faults(&["--page-size", "50"])}}),
        &upstreams,
        &hub,
    );
    assert_eq!(report.changed, ["faults"], "{report:?}");
    assert!(old.retirement().is_cancelled());
    assert_group_gone(old_group);

    let entry = stale_catalog
        .get("faults__echo")
        .expect("in the old snapshot");
    let refused = Source::call(
        &old,
        toolmux_core::SourceCall {
            tool: &entry.descriptor,
            arguments: serde_json::Map::from_iter([("text".into(), json!("hi"))]),
            context: &toolmux_core::CallContext::new(toolmux_core::Channel::Cli),
        },
    )
    .await
    .expect_err("the retired server does not start");
    assert!(refused.to_string().contains("reconfigured"), "{refused}");
    assert!(old.pid().await.is_none(), "nothing was started");

    let new = upstreams.get("faults").expect("replaced");
    assert!(!new.retirement().is_cancelled());
    // Its configuration changed, so its tools are discovered anew before they are listed.
    new.discover().await.expect("the new server discovers");
    let echoed = call(&hub, "faults__echo", json!({"text": "hi"}))
        .await
        .expect("the new server answers");
    assert!(echoed.text_content().contains("hi"), "{echoed:?}");
    upstreams.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_of_filters_or_policy_applies_to_the_running_server_without_a_restart() {
    let project = Project::new(&json!({"mcpServers": {"faults": faults(&[])}}));
    let (upstreams, hub, server) = project.discovered("faults").await;
    let before = call(&hub, "faults__pid", json!({}))
        .await
        .expect("pid works")
        .text_content();

    let mut entry = faults(&[]);
    entry["disabledTools"] = json!(["echo"]);
    entry["toolPolicies"] = json!({"fail": "deny"});
    entry["prefix"] = json!("f");
    let report = project.reconfigure(&json!({"mcpServers": {"faults": entry}}), &upstreams, &hub);
    assert_eq!(report.reconfigured, ["faults"], "{report:?}");
    assert!(report.changed.is_empty(), "{report:?}");
    assert!(
        !server.retirement().is_cancelled(),
        "the same server carries on"
    );

    let catalog = hub.catalog();
    assert!(catalog.get("f__echo").is_none(), "echo is switched off");
    assert!(
        catalog.get("faults__pid").is_none(),
        "renamed with the new prefix"
    );
    assert_eq!(
        catalog.get("f__fail").map(|e| e.policy),
        Some(toolmux_core::Policy::Deny)
    );
    let after = call(&hub, "f__pid", json!({}))
        .await
        .expect("pid works under its new name")
        .text_content();
    assert_eq!(before, after, "the process was not restarted");
    upstreams.shutdown().await;
}
