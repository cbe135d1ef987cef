//! The call pipeline, driven through `Hub` with an in-process source.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt;
use serde_json::{Value, json};
use toolmux_core::{
    Approval, ApprovalRequest, Approver, ArgumentOverride, BatchCall, CallContext, CallError,
    ChangeNotifier, Channel, DerivedTool, DescriptionChange, ExecutionRecord, ExecutionSink,
    Filters, Hub, HubSettings, NamePattern, Outcome, Policy, PolicyOrigin, Presentation, RateLimit,
    Source, SourceCall, SourceError, SourceKind, StaleOverride, ToolDescriptor, ToolOverride,
    ToolResult, ToolScope,
};

/// A source whose tools exercise each pipeline stage.
#[derive(Default)]
struct TestSource {
    running: AtomicUsize,
    max_running: AtomicUsize,
    order: Mutex<Vec<String>>,
    cancelled: Arc<AtomicBool>,
    extra: Mutex<Vec<ToolDescriptor>>,
    notifier: Mutex<Option<ChangeNotifier>>,
}

fn descriptor(name: &str, schema: Value) -> ToolDescriptor {
    ToolDescriptor::new("test", name, format!("the {name} tool"), schema)
}

impl TestSource {
    fn add_tool(&self, tool: ToolDescriptor) {
        self.extra.lock().expect("lock").push(tool);
        if let Some(n) = self.notifier.lock().expect("lock").as_ref() {
            n.notify();
        }
    }
}

struct SetOnDrop(Arc<AtomicBool>);
impl Drop for SetOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

#[async_trait]
impl Source for TestSource {
    fn id(&self) -> &str {
        "test"
    }
    fn kind(&self) -> SourceKind {
        SourceKind::Builtin
    }
    fn tools(&self) -> Vec<ToolDescriptor> {
        let mut echo = descriptor(
            "echo",
            json!({"type": "object", "properties": {"text": {"type": "string"}, "count": {"type": "integer", "minimum": 1}}, "required": ["text"], "additionalProperties": false}),
        );
        echo.parallel = true;
        let mut slow = descriptor("slow", json!({"type": "object"}));
        slow.parallel = true;
        let mut sequential = descriptor("sequential", json!({"type": "object"}));
        sequential.parallel = false;
        let mut typed = descriptor("typed", json!({"type": "object"}));
        typed.output_schema = Some(Arc::new(
            json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}),
        ));
        let mut internal = descriptor("secret_config", json!({"type": "object"}));
        internal.internal = true;
        let mut destructive = descriptor("delete_all", json!({"type": "object"}));
        destructive.annotations.destructive_hint = Some(true);
        let mut tools = vec![
            echo,
            slow,
            sequential,
            typed,
            internal,
            destructive,
            descriptor("fail", json!({"type": "object"})),
            descriptor("down", json!({"type": "object"})),
        ];
        tools.extend(self.extra.lock().expect("lock").iter().cloned());
        tools
    }
    async fn call(&self, call: SourceCall<'_>) -> Result<ToolResult, SourceError> {
        let name = call.tool.original_name.as_str();
        self.order.lock().expect("lock").push(name.to_string());
        let now = self.running.fetch_add(1, Ordering::SeqCst) + 1;
        self.max_running.fetch_max(now, Ordering::SeqCst);
        let result = match name {
            "echo" => Ok(ToolResult::text(
                call.arguments["text"].as_str().unwrap_or_default(),
            )),
            "slow" | "sequential" => {
                let ms = call
                    .arguments
                    .get("ms")
                    .and_then(Value::as_u64)
                    .unwrap_or(30);
                let _guard = SetOnDrop(Arc::clone(&self.cancelled));
                tokio::time::sleep(Duration::from_millis(ms)).await;
                self.cancelled.store(false, Ordering::SeqCst);
                Ok(ToolResult::text(name))
            }
            "typed" => Ok(match call.arguments.get("give") {
                Some(v) => ToolResult::structured(v.clone()),
                None => ToolResult::text("no structure"),
            }),
            // Answers with exactly the arguments it received, to show what a call sent.
            "search" => Ok(ToolResult::structured(Value::Object(
                call.arguments.clone(),
            ))),
            "fail" => Ok(ToolResult::error("it broke")),
            "down" => Err(SourceError::Unavailable("server `x` is down".into())),
            _ => Ok(ToolResult::text("ok")),
        };
        self.running.fetch_sub(1, Ordering::SeqCst);
        result
    }
    fn attach(&self, notifier: ChangeNotifier) {
        *self.notifier.lock().expect("lock") = Some(notifier);
    }
}

#[derive(Default)]
struct Records(Mutex<Vec<ExecutionRecord>>);
impl ExecutionSink for Records {
    fn record(&self, record: ExecutionRecord) {
        self.0.lock().expect("lock").push(record);
    }
}
impl Records {
    fn last(&self) -> ExecutionRecord {
        self.0
            .lock()
            .expect("lock")
            .last()
            .cloned()
            .expect("a record")
    }
}

struct Fixed(Approval, AtomicUsize);
#[async_trait]
impl Approver for Fixed {
    async fn approve(&self, _request: &ApprovalRequest) -> Approval {
        self.1.fetch_add(1, Ordering::SeqCst);
        self.0.clone()
    }
}

struct Silent;
#[async_trait]
impl Approver for Silent {
    async fn approve(&self, _request: &ApprovalRequest) -> Approval {
        std::future::pending().await
    }
}

fn hub_with(settings: HubSettings) -> (Hub, Arc<TestSource>, Arc<Records>) {
    let records = Arc::new(Records::default());
    let hub = Hub::new(settings, records.clone());
    let source = Arc::new(TestSource::default());
    hub.add_source(source.clone());
    (hub, source, records)
}

fn hub() -> (Hub, Arc<TestSource>, Arc<Records>) {
    hub_with(HubSettings::default())
}

fn ctx() -> CallContext {
    CallContext::new(Channel::Cli)
}

fn rules(tools: &[(&str, Policy)]) -> HubSettings {
    let mut settings = HubSettings::default();
    settings.policies.tools = tools
        .iter()
        .map(|(p, pol)| (NamePattern::new(p).expect("pattern"), *pol))
        .collect();
    settings
}

#[tokio::test]
async fn a_valid_call_runs_and_is_logged() {
    let (hub, _, records) = hub();
    let result = hub
        .call("echo", json!({"text": "hello"}), &ctx())
        .await
        .expect("runs");
    assert_eq!(result.text_content(), "hello");
    let record = records.last();
    assert_eq!(record.tool, "echo");
    assert_eq!(record.source.as_deref(), Some("test"));
    assert_eq!(record.outcome, Outcome::Ok);
    assert_eq!(record.arguments, json!({"text": "hello"}));
    assert!(record.result.is_some());
}

#[tokio::test]
async fn unknown_tool_suggests_the_closest_name() {
    let (hub, _, records) = hub();
    let err = hub
        .call("ecoh", json!({}), &ctx())
        .await
        .expect_err("unknown");
    assert_eq!(err.to_string(), "unknown tool `ecoh`; did you mean `echo`?");
    assert_eq!(records.last().outcome, Outcome::Invalid);
    let err = hub
        .call("zzzz", json!({}), &ctx())
        .await
        .expect_err("unknown");
    assert_eq!(err.to_string(), "unknown tool `zzzz`");
}

#[tokio::test]
async fn invalid_arguments_list_every_violation_with_its_pointer() {
    let (hub, source, records) = hub();
    let err = hub
        .call("echo", json!({"count": 0, "extra": 1}), &ctx())
        .await
        .expect_err("invalid");
    let CallError::InvalidArguments { violations, .. } = &err else {
        panic!("unexpected {err:?}");
    };
    let mut pointers: Vec<_> = violations.iter().map(|v| v.pointer.as_str()).collect();
    pointers.sort();
    assert_eq!(pointers, ["", "", "/count"]);
    let message = err.to_string();
    assert!(
        message.starts_with("invalid arguments for `echo`: "),
        "{message}"
    );
    assert!(
        message.contains("/count: 0 is less than the minimum of 1"),
        "{message}"
    );
    assert!(
        message.contains("/: \"text\" is a required property"),
        "{message}"
    );
    assert!(source.order.lock().expect("lock").is_empty(), "never ran");
    assert_eq!(records.last().outcome, Outcome::Invalid);

    let err = hub
        .call("echo", json!(["not", "an", "object"]), &ctx())
        .await
        .expect_err("invalid");
    assert_eq!(
        err.to_string(),
        "invalid arguments for `echo`: /: arguments must be a JSON object, not an array"
    );
}

#[tokio::test]
async fn null_arguments_count_as_an_empty_object() {
    let (hub, _, _) = hub();
    let result = hub.call("slow", Value::Null, &ctx()).await.expect("runs");
    assert_eq!(result.text_content(), "slow");
}

#[tokio::test]
async fn deny_policy_refuses_before_running() {
    let (hub, source, records) = hub_with(rules(&[("ech*", Policy::Deny)]));
    let err = hub
        .call("echo", json!({"text": "x"}), &ctx())
        .await
        .expect_err("denied");
    assert_eq!(
        err.to_string(),
        "tool `echo` was denied: its policy is `deny` (pattern `ech*`)"
    );
    assert!(source.order.lock().expect("lock").is_empty());
    assert_eq!(records.last().outcome, Outcome::Denied);
}

#[tokio::test]
async fn ask_without_an_approver_is_denied_with_a_way_out() {
    let (hub, _, _) = hub();
    // `delete_all` is destructive, so it asks by default.
    let err = hub
        .call("delete_all", json!({}), &ctx())
        .await
        .expect_err("denied");
    assert_eq!(
        err.to_string(),
        "tool `delete_all` was denied: its policy is `ask` (tool annotations) and there is no one \
         to ask on the cli channel; to run it without asking, set \"policies\": {\"tools\": \
         {\"delete_all\": \"allow\"}} in .toolmux/config.json"
    );
}

#[tokio::test]
async fn ask_goes_to_the_approver_and_respects_its_answer() {
    let (hub, _, _) = hub();
    let allow = Arc::new(Fixed(Approval::Allow, AtomicUsize::new(0)));
    let result = hub
        .call("delete_all", json!({}), &ctx().with_approver(allow.clone()))
        .await
        .expect("allowed");
    assert_eq!(result.text_content(), "ok");
    assert_eq!(allow.1.load(Ordering::SeqCst), 1);

    let deny = Arc::new(Fixed(
        Approval::Deny {
            reason: "the user said no".into(),
        },
        AtomicUsize::new(0),
    ));
    let err = hub
        .call("delete_all", json!({}), &ctx().with_approver(deny))
        .await
        .expect_err("denied");
    assert_eq!(
        err.to_string(),
        "tool `delete_all` was denied: the user said no"
    );
}

#[tokio::test(start_paused = true)]
async fn an_unanswered_approval_is_denied_not_a_hang() {
    let settings = HubSettings {
        approval_timeout: Duration::from_secs(5),
        ..Default::default()
    };
    let (hub, _, _) = hub_with(settings);
    let err = hub
        .call(
            "delete_all",
            json!({}),
            &ctx().with_approver(Arc::new(Silent)),
        )
        .await
        .expect_err("denied");
    assert_eq!(
        err.to_string(),
        "tool `delete_all` was denied: nobody answered the approval request within 5s"
    );
}

#[tokio::test]
async fn a_timed_out_call_is_cancelled_and_reported() {
    let mut settings = HubSettings::default();
    settings.overrides.insert(
        "slow".into(),
        ToolOverride {
            timeout: Some(Duration::from_millis(50)),
            ..Default::default()
        },
    );
    let (hub, source, records) = hub_with(settings);
    let err = hub
        .call("slow", json!({"ms": 10_000}), &ctx())
        .await
        .expect_err("times out");
    assert_eq!(err.to_string(), "tool `slow` timed out after 50ms");
    assert!(
        source.cancelled.load(Ordering::SeqCst),
        "the tool's future was dropped"
    );
    assert_eq!(records.last().outcome, Outcome::Timeout);
}

#[tokio::test]
async fn output_that_breaks_the_output_schema_is_an_error_never_passed_through() {
    let (hub, _, records) = hub();
    let ok = hub
        .call("typed", json!({"give": {"n": 3}}), &ctx())
        .await
        .expect("valid output");
    assert_eq!(ok.structured_content, Some(json!({"n": 3})));

    let err = hub
        .call("typed", json!({"give": {"n": "three"}}), &ctx())
        .await
        .expect_err("invalid output");
    assert_eq!(
        err.to_string(),
        "tool `typed` returned output that does not match its output schema: /n: \"three\" is not of type \"integer\""
    );
    let record = records.last();
    assert_eq!(record.outcome, Outcome::Invalid);
    assert!(record.result.is_none(), "the bad output is not passed on");

    let err = hub
        .call("typed", json!({}), &ctx())
        .await
        .expect_err("no structure");
    assert_eq!(
        err.to_string(),
        "tool `typed` returned output that does not match its output schema: /: the tool declares an output schema but returned no structured content"
    );
}

#[tokio::test]
async fn tool_errors_and_unavailable_sources_are_told_apart() {
    let (hub, _, records) = hub();
    let result = hub.call("fail", json!({}), &ctx()).await.expect("a result");
    assert!(result.is_error);
    assert_eq!(records.last().outcome, Outcome::Error);
    assert_eq!(records.last().error.as_deref(), Some("it broke"));

    let err = hub.call("down", json!({}), &ctx()).await.expect_err("down");
    assert_eq!(err.code(), "unavailable");
    assert_eq!(
        err.to_string(),
        "tool `down` is unavailable: server `x` is down"
    );
}

#[tokio::test]
async fn rate_limit_refuses_calls_beyond_the_budget() {
    let mut settings = HubSettings::default();
    settings.overrides.insert(
        "echo".into(),
        ToolOverride {
            rate_limit: Some(RateLimit {
                requests: 2,
                period: Duration::from_secs(60),
            }),
            ..Default::default()
        },
    );
    let (hub, _, records) = hub_with(settings);
    for _ in 0..2 {
        hub.call("echo", json!({"text": "x"}), &ctx())
            .await
            .expect("within budget");
    }
    let err = hub
        .call("echo", json!({"text": "x"}), &ctx())
        .await
        .expect_err("over budget");
    let CallError::RateLimited { retry_after, .. } = err else {
        panic!("unexpected {err:?}");
    };
    assert!(retry_after > Duration::from_secs(20) && retry_after <= Duration::from_secs(30));
    assert_eq!(records.last().outcome, Outcome::Denied);
    // Rebuilding the catalog does not reset the budget.
    hub.refresh();
    assert!(
        hub.call("echo", json!({"text": "x"}), &ctx())
            .await
            .is_err()
    );
}

#[tokio::test]
async fn internal_tools_are_never_listed_or_callable_by_untrusted_callers() {
    let (hub, _, _) = hub();
    let catalog = hub.catalog();
    assert!(
        catalog
            .tools()
            .all(|e| e.descriptor.name != "secret_config")
    );
    assert!(
        catalog
            .all_tools()
            .any(|e| e.descriptor.name == "secret_config")
    );
    let err = hub
        .call("secret_config", json!({}), &CallContext::new(Channel::Mcp))
        .await
        .expect_err("hidden");
    assert_eq!(err.to_string(), "unknown tool `secret_config`");
    hub.call(
        "secret_config",
        json!({}),
        &CallContext::new(Channel::Rest).trusted(),
    )
    .await
    .expect("trusted callers may");
}

#[tokio::test]
async fn filters_apply_to_listings_and_calls_alike() {
    let mut settings = HubSettings {
        filters: Filters {
            include: vec![],
            exclude: vec![NamePattern::new("sl*").expect("pattern")],
        },
        ..Default::default()
    };
    settings.overrides.insert(
        "fail".into(),
        ToolOverride {
            enabled: Some(false),
            ..Default::default()
        },
    );
    let (hub, _, _) = hub_with(settings);
    let names: Vec<_> = hub
        .catalog()
        .tools()
        .map(|e| e.descriptor.name.clone())
        .collect();
    assert!(!names.contains(&"slow".to_string()));
    assert!(!names.contains(&"fail".to_string()));
    assert!(names.contains(&"echo".to_string()));
    let err = hub
        .call("slow", json!({}), &ctx())
        .await
        .expect_err("excluded");
    assert_eq!(
        err.to_string(),
        "tool `slow` is disabled: excluded by pattern `sl*`"
    );
    let err = hub
        .call("fail", json!({}), &ctx())
        .await
        .expect_err("disabled");
    assert_eq!(
        err.to_string(),
        "tool `fail` is disabled: switched off in configuration"
    );

    let mut include_only = HubSettings::default();
    include_only.filters.include = vec![NamePattern::new("echo").expect("pattern")];
    hub.configure(include_only);
    let names: Vec<_> = hub
        .catalog()
        .tools()
        .map(|e| e.descriptor.name.clone())
        .collect();
    assert_eq!(names, ["echo"]);

    let mut no_source = HubSettings::default();
    no_source.disabled_sources.insert("test".into());
    hub.configure(no_source);
    assert_eq!(hub.catalog().tools().count(), 0);
    let err = hub
        .call("echo", json!({"text": "x"}), &ctx())
        .await
        .expect_err("off");
    assert_eq!(
        err.to_string(),
        "tool `echo` is disabled: its source `test` is switched off"
    );
}

#[tokio::test]
async fn a_batch_runs_parallel_tools_together_and_the_rest_in_order() {
    let (hub, source, _) = hub();
    let call = |name: &str| BatchCall {
        name: name.into(),
        arguments: json!({"ms": 40}),
        context: ctx(),
    };
    let mut reports: Vec<_> = hub
        .call_batch(vec![
            call("slow"),
            call("slow"),
            call("slow"),
            call("sequential"),
            call("slow"),
        ])
        .collect()
        .await;
    // Reported as they finish: the sequential call after the whole group before it.
    let finished: Vec<usize> = reports.iter().map(|(position, _)| *position).collect();
    assert_eq!(finished[3..], [3, 4]);
    reports.sort_by_key(|(position, _)| *position);
    let texts: Vec<_> = reports
        .iter()
        .map(|(_, r)| r.result.as_ref().expect("ok").text_content())
        .collect();
    assert_eq!(texts, ["slow", "slow", "slow", "sequential", "slow"]);
    assert_eq!(source.max_running.load(Ordering::SeqCst), 3);
    let order = source.order.lock().expect("lock").clone();
    assert_eq!(
        order[3], "sequential",
        "the sequential tool waited for the group"
    );
    assert_eq!(order[4], "slow");
}

#[tokio::test]
async fn subscribers_see_each_new_catalog_version() {
    let (hub, source, _) = hub();
    let mut updates = hub.subscribe();
    let before = hub.catalog().version();
    source.add_tool(descriptor("late", json!({"type": "object"})));
    updates.changed().await.expect("a new snapshot");
    let catalog = updates.borrow_and_update().clone();
    assert!(catalog.version() > before);
    assert!(catalog.get("late").is_some());
    hub.call("late", json!({}), &ctx())
        .await
        .expect("callable at once");
}

#[tokio::test]
async fn a_name_clash_keeps_the_first_source_and_says_why() {
    struct Other;
    #[async_trait]
    impl Source for Other {
        fn id(&self) -> &str {
            "other"
        }
        fn kind(&self) -> SourceKind {
            SourceKind::Script
        }
        fn tools(&self) -> Vec<ToolDescriptor> {
            vec![ToolDescriptor::new("other", "echo", "impostor", json!({}))]
        }
        async fn call(&self, _call: SourceCall<'_>) -> Result<ToolResult, SourceError> {
            Ok(ToolResult::text("impostor"))
        }
    }
    let (hub, _, _) = hub();
    hub.add_source(Arc::new(Other));
    let catalog = hub.catalog();
    assert_eq!(catalog.get("echo").expect("echo").descriptor.source, "test");
    assert_eq!(
        catalog
            .hidden_reason("echo")
            .map(ToString::to_string)
            .as_deref(),
        Some("the name is already taken by source `test`")
    );
    let other = catalog
        .sources()
        .iter()
        .find(|s| s.id == "other")
        .expect("listed");
    assert_eq!(other.tool_count, 0);
}

#[tokio::test]
async fn an_approval_queue_parks_the_call_until_someone_answers() {
    use toolmux_core::ApprovalQueue;
    let (hub, _, _) = hub();
    let queue = Arc::new(ApprovalQueue::new());
    let mut arrivals = queue.subscribe();
    let context = ctx().with_session("conv-1").with_approver(queue.clone());
    let call = tokio::spawn({
        let hub = hub.clone();
        let context = context.clone();
        async move { hub.call("delete_all", json!({"what": "x"}), &context).await }
    });
    let asked = arrivals.recv().await.expect("a request arrives");
    assert_eq!(asked.request.tool, "delete_all");
    assert_eq!(queue.pending(Some("conv-1")).len(), 1);
    assert!(queue.pending(Some("other")).is_empty());
    queue.answer(asked.id, Approval::Allow).expect("waiting");
    assert_eq!(
        call.await.expect("joined").expect("allowed").text_content(),
        "ok"
    );
    assert!(queue.pending(None).is_empty());
    let again = queue
        .answer(asked.id, Approval::Allow)
        .expect_err("answered already");
    assert_eq!(
        again.to_string(),
        format!(
            "no approval `{}` is waiting (it was answered, timed out, or never existed)",
            asked.id
        )
    );
}

#[tokio::test(start_paused = true)]
async fn an_unanswered_queued_approval_times_out_and_leaves_the_queue() {
    use toolmux_core::ApprovalQueue;
    let settings = HubSettings {
        approval_timeout: Duration::from_secs(30),
        ..Default::default()
    };
    let (hub, _, _) = hub_with(settings);
    let queue = Arc::new(ApprovalQueue::new());
    let err = hub
        .call("delete_all", json!({}), &ctx().with_approver(queue.clone()))
        .await
        .expect_err("timed out");
    assert_eq!(
        err.to_string(),
        "tool `delete_all` was denied: nobody answered the approval request within 30s"
    );
    assert!(
        queue.pending(None).is_empty(),
        "withdrawn when the wait ended"
    );
}

#[tokio::test]
async fn a_call_its_caller_drops_is_logged_as_cancelled() {
    let (hub, source, records) = hub();
    let abandoned = tokio::time::timeout(
        Duration::from_millis(30),
        hub.call("slow", json!({"ms": 10_000}), &ctx()),
    )
    .await;
    assert!(abandoned.is_err(), "the caller gave up first");
    assert!(
        source.cancelled.load(Ordering::SeqCst),
        "the tool's future was dropped"
    );
    let record = records.last();
    assert_eq!(record.tool, "slow");
    assert_eq!(record.outcome, Outcome::Error);
    assert_eq!(
        record.error.as_deref(),
        Some("the caller cancelled the call before it finished")
    );
    assert!(record.duration_us >= 30_000, "{}", record.duration_us);
}

#[tokio::test]
async fn arguments_are_validated_before_anyone_is_asked() {
    // `echo` needs `text`; with policy `ask`, a call without it must be refused as invalid
    // without the person ever seeing an approval for it.
    let (hub, _, _) = hub_with(rules(&[("echo", Policy::Ask)]));
    let approver = Arc::new(Fixed(Approval::Allow, AtomicUsize::new(0)));
    let err = hub
        .call(
            "echo",
            json!({"count": 2}),
            &ctx().with_approver(approver.clone()),
        )
        .await
        .expect_err("invalid");
    assert!(matches!(err, CallError::InvalidArguments { .. }), "{err}");
    assert_eq!(approver.1.load(Ordering::SeqCst), 0, "nobody was asked");
    let err = hub
        .call(
            "echo",
            json!("text"),
            &ctx().with_approver(approver.clone()),
        )
        .await
        .expect_err("not an object");
    assert!(matches!(err, CallError::InvalidArguments { .. }), "{err}");
    assert_eq!(approver.1.load(Ordering::SeqCst), 0, "nobody was asked");
}

#[tokio::test]
async fn a_scope_is_the_only_door_a_call_has() {
    let (hub, _, records) = hub();
    let scope = Arc::new(ToolScope {
        exclude: vec![NamePattern::new("ec*").expect("pattern")],
        include: vec![NamePattern::new("*").expect("pattern")],
        source: None,
        sources: Vec::new(),
        entry_points: vec!["sequential".into()],
        served_by: "the test channel".into(),
        rights: None,
    });
    let scoped = ctx().with_scope(scope);
    let err = hub
        .call("echo", json!({"text": "x"}), &scoped)
        .await
        .expect_err("outside the scope");
    assert_eq!(
        err.to_string(),
        "tool `echo` is not served by the test channel"
    );
    assert_eq!(err.code(), "not_served");
    assert_eq!(records.last().outcome, Outcome::Invalid);
    // A typo is not answered with a tool the caller cannot reach.
    let err = hub
        .call("ecoh", json!({}), &scoped)
        .await
        .expect_err("unknown");
    assert_eq!(err.to_string(), "unknown tool `ecoh`");
    hub.call("slow", json!({"ms": 1}), &scoped)
        .await
        .expect("in the scope");
    // Narrowed to another source, only the entry point is reachable.
    let elsewhere = ctx().with_scope(Arc::new(ToolScope {
        source: Some("other".into()),
        entry_points: vec!["sequential".into()],
        ..ToolScope::default()
    }));
    hub.call("sequential", json!({"ms": 1}), &elsewhere)
        .await
        .expect("an entry point");
    assert!(matches!(
        hub.call("slow", json!({}), &elsewhere).await,
        Err(CallError::NotServed { .. })
    ));
}

#[tokio::test]
async fn the_caller_is_recorded() {
    let (hub, _, records) = hub();
    let mut context = ctx();
    context.caller = Some("claude-code".into());
    hub.call("echo", json!({"text": "x"}), &context)
        .await
        .expect("runs");
    assert_eq!(records.last().caller.as_deref(), Some("claude-code"));
}

#[tokio::test]
async fn a_denied_tool_is_denied_before_its_arguments_are_checked() {
    let (hub, _, _) = hub_with(rules(&[("echo", Policy::Deny)]));
    let err = hub
        .call("echo", json!({"count": 2}), &ctx())
        .await
        .expect_err("denied");
    assert!(matches!(err, CallError::Denied { .. }), "{err}");
    // `ask` where nobody can be asked refuses the same way, before validation.
    let (hub, _, _) = hub_with(rules(&[("echo", Policy::Ask)]));
    let err = hub
        .call("echo", json!({"count": 2}), &ctx())
        .await
        .expect_err("denied");
    assert!(matches!(err, CallError::Denied { .. }), "{err}");
}

/// A source that records which approval id its preview and call saw, and which approvals the
/// hub said were over: in the order they happened.
#[derive(Default)]
struct ApprovalWitness(Mutex<Vec<(&'static str, Option<uuid::Uuid>)>>);

#[async_trait]
impl Source for ApprovalWitness {
    fn id(&self) -> &str {
        "witness"
    }
    fn kind(&self) -> SourceKind {
        SourceKind::Builtin
    }
    fn tools(&self) -> Vec<ToolDescriptor> {
        vec![ToolDescriptor::new(
            "witness",
            "write",
            "writes",
            json!({"type": "object"}),
        )]
    }
    async fn call(&self, call: SourceCall<'_>) -> Result<ToolResult, SourceError> {
        self.0
            .lock()
            .expect("lock")
            .push(("call", call.context.approval));
        Ok(ToolResult::text("done"))
    }
    async fn preview(&self, call: SourceCall<'_>) -> Option<String> {
        self.0
            .lock()
            .expect("lock")
            .push(("preview", call.context.approval));
        Some("the diff".into())
    }
    fn approval_ended(&self, approval: uuid::Uuid) {
        self.0.lock().expect("lock").push(("ended", Some(approval)));
    }
}

#[tokio::test]
async fn d30_preview_and_call_share_their_approvals_own_id_and_hear_when_it_is_over() {
    let witness = Arc::new(ApprovalWitness::default());
    let seen = || std::mem::take(&mut *witness.0.lock().expect("lock"));
    let forged = uuid::Uuid::now_v7();

    // Nobody asked: no approval id reaches the source, not even one the caller put there.
    let hub = Hub::new(
        rules(&[("write", Policy::Allow)]),
        Arc::new(toolmux_core::NullSink),
    );
    hub.add_source(witness.clone());
    let mut context = ctx();
    context.approval = Some(forged);
    hub.call("write", json!({}), &context).await.expect("runs");
    assert_eq!(seen(), [("call", None)]);

    // Asked and allowed: the preview and the call see the same, fresh id; then it is over.
    hub.configure(rules(&[("write", Policy::Ask)]));
    let allow = Arc::new(Fixed(Approval::Allow, AtomicUsize::new(0)));
    let asked = context.clone().with_approver(allow);
    let mut ids = Vec::new();
    for _ in 0..2 {
        hub.call("write", json!({}), &asked).await.expect("runs");
        let events = seen();
        let id = events[0].1.expect("an approval id");
        assert_ne!(id, forged);
        assert_eq!(
            events,
            [
                ("preview", Some(id)),
                ("call", Some(id)),
                ("ended", Some(id))
            ]
        );
        ids.push(id);
    }
    assert_ne!(ids[0], ids[1], "an identical call is another approval");

    // Denied: no call, and the approval is over all the same.
    let deny = Arc::new(Fixed(
        Approval::Deny {
            reason: "no".into(),
        },
        AtomicUsize::new(0),
    ));
    let denied = hub
        .call("write", json!({}), &context.clone().with_approver(deny))
        .await;
    assert!(matches!(denied, Err(CallError::Denied { .. })));
    let events = seen();
    let id = events[0].1.expect("an approval id");
    assert_eq!(events, [("preview", Some(id)), ("ended", Some(id))]);
}

/// The `search` tool the override tests reshape: `repo` and `q` required, nothing else allowed.
fn search_tool() -> ToolDescriptor {
    descriptor(
        "search",
        json!({
            "type": "object",
            "properties": {"repo": {"type": "string"}, "q": {"type": "string"}},
            "required": ["repo", "q"],
            "additionalProperties": false
        }),
    )
}

fn fixed_repo() -> ArgumentOverride {
    ArgumentOverride {
        value: Some(json!("org/x")),
        hidden: true,
        ..ArgumentOverride::default()
    }
}

#[tokio::test]
async fn an_override_renames_a_tool_hides_a_fixed_argument_and_the_source_receives_it() {
    let mut settings = HubSettings::default();
    settings.overrides.insert(
        "search".into(),
        ToolOverride {
            presentation: Presentation {
                name: Some("find".into()),
                description: Some(DescriptionChange::Replace("Find in org/x.".into())),
                arguments: [("repo".to_string(), fixed_repo())].into(),
                ..Presentation::default()
            },
            ..ToolOverride::default()
        },
    );
    let (hub, source, records) = hub_with(settings);
    source.add_tool(search_tool());
    let catalog = hub.catalog();
    assert!(catalog.get("search").is_none());
    let shown = &catalog
        .get("find")
        .expect("listed under its new name")
        .descriptor;
    assert_eq!(shown.original_name, "search");
    assert_eq!(shown.description, "Find in org/x.");
    assert_eq!(
        *shown.input_schema,
        json!({
            "type": "object",
            "properties": {"q": {"type": "string"}},
            "required": ["q"],
            "additionalProperties": false
        })
    );
    // The caller cannot change a fixed value: it is injected whatever was sent.
    let result = hub
        .call("find", json!({"q": "crash", "repo": "evil/y"}), &ctx())
        .await
        .expect("runs");
    assert_eq!(
        result.structured_content,
        Some(json!({"q": "crash", "repo": "org/x"}))
    );
    assert_eq!(records.last().tool, "find");
    // The merged arguments are checked against the source's own schema.
    let err = hub
        .call("find", json!({"q": 7}), &ctx())
        .await
        .expect_err("q must be a string");
    assert_eq!(
        err.to_string(),
        "invalid arguments for `find`: /q: 7 is not of type \"string\""
    );
    assert!(
        catalog.stale_overrides().is_empty(),
        "{:?}",
        catalog.stale_overrides()
    );
}

#[tokio::test]
async fn an_annotation_override_changes_the_policy() {
    let mut settings = HubSettings::default();
    settings.overrides.insert(
        "delete_all".into(),
        ToolOverride {
            presentation: Presentation {
                annotations: Some(toolmux_core::ToolAnnotations {
                    read_only_hint: Some(true),
                    ..Default::default()
                }),
                ..Presentation::default()
            },
            ..ToolOverride::default()
        },
    );
    let (overridden, _, _) = hub_with(settings);
    let catalog = overridden.catalog();
    let entry = catalog.get("delete_all").expect("listed");
    assert_eq!(
        (entry.policy, &entry.policy_origin),
        (Policy::Allow, &PolicyOrigin::Annotations)
    );
    // Without the override, its destructive hint asks, and nobody can answer on the CLI.
    let (plain, _, _) = hub();
    assert_eq!(
        plain.catalog().get("delete_all").expect("listed").policy,
        Policy::Ask
    );
    let result = overridden
        .call("delete_all", json!({}), &ctx())
        .await
        .expect("runs without asking");
    assert_eq!(result.text_content(), "ok");
}

#[tokio::test]
async fn a_derived_tool_is_its_base_with_fixed_arguments_and_both_are_listed() {
    let settings = HubSettings {
        derived: vec![DerivedTool {
            name: "search_x".into(),
            from: "search".into(),
            title: Some("Search org/x".into()),
            description: "Search the issues of org/x.".into(),
            arguments: [("repo".to_string(), json!("org/x"))].into_iter().collect(),
        }],
        ..HubSettings::default()
    };
    let (hub, source, _) = hub_with(settings);
    source.add_tool(search_tool());
    let catalog = hub.catalog();
    assert!(catalog.get("search").is_some());
    let derived = &catalog.get("search_x").expect("derived").descriptor;
    assert_eq!(derived.description, "Search the issues of org/x.");
    assert_eq!(derived.title.as_deref(), Some("Search org/x"));
    assert_eq!(
        derived.input_schema["required"],
        json!(["q"]),
        "the fixed argument is not asked for"
    );
    let result = hub
        .call("search_x", json!({"q": "leak"}), &ctx())
        .await
        .expect("runs");
    assert_eq!(
        result.structured_content,
        Some(json!({"q": "leak", "repo": "org/x"}))
    );
}

#[tokio::test]
async fn overrides_that_match_nothing_are_reported_not_dropped() {
    let mut settings = HubSettings {
        derived: vec![DerivedTool {
            name: "old_search".into(),
            from: "renamed_upstream_tool".into(),
            title: None,
            description: "Gone.".into(),
            arguments: serde_json::Map::new(),
        }],
        ..HubSettings::default()
    };
    settings.overrides.insert(
        "vanished".into(),
        ToolOverride {
            presentation: Presentation {
                title: Some("Vanished".into()),
                ..Presentation::default()
            },
            ..ToolOverride::default()
        },
    );
    settings.overrides.insert(
        "echo".into(),
        ToolOverride {
            presentation: Presentation {
                arguments: [("owner".to_string(), fixed_repo())].into(),
                ..Presentation::default()
            },
            ..ToolOverride::default()
        },
    );
    // A timeout alone for a tool that is not there is not an override of how it presents.
    settings.overrides.insert(
        "not_here".into(),
        ToolOverride {
            timeout: Some(Duration::from_secs(1)),
            ..ToolOverride::default()
        },
    );
    let (hub, _, _) = hub_with(settings);
    let stale: Vec<String> = hub
        .catalog()
        .stale_overrides()
        .iter()
        .map(StaleOverride::to_string)
        .collect();
    assert_eq!(
        stale,
        [
            "toolSettings.echo.arguments.owner: the tool `echo` has no argument `owner`",
            "derivedTools.old_search: no source provides the tool `renamed_upstream_tool` it derives from",
            "toolSettings.vanished: no source provides a tool `vanished`",
        ]
    );
}
