//! The chat loop against aimock, which replays fixture responses in the providers' exact
//! streaming formats (`tests/peers/chat/fixtures/chat.json`), over a real hub with the workspace
//! pack on a temporary project.

mod common;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use common::{Harness, collect, last, outputs, text};
use serde_json::json;
use toolmux_chat::{FinishReason, Message, TurnEvent, TurnRequest};
use toolmux_config::ProviderKind;
use toolmux_core::{
    Approval, HubSettings, NamePattern, PersonEvent, Policy, Source, SourceCall, SourceError,
    SourceKind, ToolDescriptor, ToolResult, Watched,
};
use toolmux_testkit::aimock::Aimock;
use toolmux_testkit::project::write_file;

fn ask(text: &str) -> TurnRequest {
    TurnRequest {
        text: text.into(),
        ..Default::default()
    }
}

#[tokio::test]
async fn the_model_greps_then_reads_and_the_answer_quotes_the_file_and_survives_a_restart() {
    let aimock = Aimock::start("chat.json");
    let harness = Harness::with_release_notes(&aimock);
    let root = harness.dir.path().to_path_buf();
    let (conversation, events) = harness
        .turn(None, "Where is the release codename defined?")
        .await;
    let outs = outputs(&events);
    assert_eq!(
        outs.iter().map(|o| o.name.as_str()).collect::<Vec<_>>(),
        ["grep", "file_read"]
    );
    assert!(outs.iter().all(|o| !o.is_error), "{outs:?}");
    assert!(
        text(&events).contains("\"The codename is Bluefin.\""),
        "{}",
        text(&events)
    );
    assert!(matches!(
        last(&events),
        TurnEvent::Finished {
            reason: FinishReason::Stop,
            steps: 3,
            ..
        }
    ));

    // A restart: everything in memory goes; the project folder and its database stay.
    let Harness { dir, engine, hub } = harness;
    drop(engine);
    drop(hub);
    assert_eq!(dir.path(), root);
    let reopened =
        toolmux_chat::SqliteStore::open(&root.join(toolmux_chat::DATABASE_PATH)).expect("reopen");
    let messages =
        toolmux_chat::ConversationStore::messages(&reopened, &conversation).expect("messages");
    // user, assistant(grep), tool, assistant(file_read), tool, assistant(answer)
    assert_eq!(messages.len(), 6, "{messages:?}");
    // Each result keeps what its live card showed (issue 30: a reopened conversation showed
    // "unknown source", no duration and no grouped result).
    let Message::Assistant { tool_calls, .. } = &messages[1].message else {
        panic!("not the model's call: {:?}", messages[1]);
    };
    assert_eq!(tool_calls[0].source.as_deref(), Some("workspace"));
    let Message::Tool {
        name,
        duration_ms,
        structured,
        ..
    } = &messages[2].message
    else {
        panic!("not a tool result: {:?}", messages[2]);
    };
    assert_eq!(name, "grep");
    assert_eq!(*duration_ms, Some(outs[0].duration_ms));
    assert!(outs[0].structured.is_some(), "{outs:?}");
    assert_eq!(structured, &outs[0].structured);
}

#[tokio::test]
async fn a_resumed_conversation_sends_its_whole_history_to_the_model() {
    let aimock = Aimock::start("chat.json");
    let harness = Harness::with_release_notes(&aimock);
    let path = harness.dir.path().to_path_buf();
    let (conversation, _) = harness
        .turn(None, "Where is the release codename defined?")
        .await;
    // Restart: drop the engine and its hub, open everything again on the same project.
    let Harness { dir, engine, hub } = harness;
    drop(engine);
    drop(hub);
    let harness = Harness::in_dir(
        dir,
        &aimock,
        HubSettings::default(),
        25,
        ProviderKind::Openai,
    );
    assert_eq!(harness.dir.path(), path);
    let (same, events) = harness
        .turn(Some(&conversation), "Who chose the codename?")
        .await;
    assert_eq!(same, conversation);
    assert_eq!(text(&events), "The notes do not say who chose Bluefin.");
    let journal = aimock.journal();
    let last_request = journal
        .as_array()
        .and_then(|entries| entries.last())
        .expect("aimock saw requests");
    let sent = last_request["body"]["messages"].to_string();
    for earlier in [
        "Where is the release codename defined?",
        "call_grep_1",
        "The codename is Bluefin.",
        "Who chose the codename?",
    ] {
        assert!(sent.contains(earlier), "{earlier} missing from {sent}");
    }
}

/// A parallel tool that returns only once two calls of it are running at the same time.
struct Probe {
    barrier: Arc<tokio::sync::Barrier>,
}

#[async_trait]
impl Source for Probe {
    fn id(&self) -> &str {
        "probe"
    }
    fn kind(&self) -> SourceKind {
        SourceKind::Builtin
    }
    fn tools(&self) -> Vec<ToolDescriptor> {
        let mut d = ToolDescriptor::new(
            "probe",
            "probe",
            "Waits for a partner call.",
            json!({"type": "object", "properties": {"label": {"type": "string"}}}),
        );
        d.parallel = true;
        vec![d]
    }
    async fn call(&self, call: SourceCall<'_>) -> Result<ToolResult, SourceError> {
        let label = call.arguments["label"].as_str().unwrap_or("?").to_string();
        match tokio::time::timeout(Duration::from_secs(5), self.barrier.wait()).await {
            Ok(_) => Ok(ToolResult::text(format!("probe {label} met its partner"))),
            Err(_) => Ok(ToolResult::error(format!("probe {label} ran alone"))),
        }
    }
}

#[tokio::test]
async fn parallel_tool_calls_of_one_step_run_at_the_same_time() {
    let aimock = Aimock::start("chat.json");
    let harness = Harness::new(&aimock, HubSettings::default(), 25);
    harness.hub.add_source(Arc::new(Probe {
        barrier: Arc::new(tokio::sync::Barrier::new(2)),
    }));
    let (_, events) = harness.turn(None, "Compare both probes").await;
    let outs = outputs(&events);
    assert_eq!(outs.len(), 2);
    assert!(
        outs.iter().all(|o| o.content.contains("met its partner")),
        "{outs:?}"
    );
    assert_eq!(text(&events), "Both probes ran at the same time.");
}

/// Also: the approval names the model's call it is for (issue 30: a page puts it on that call's
/// card by id, not by guessing from the tool and arguments), and once the turn is over the
/// queue's event stream says so, with the turn no longer running.
#[tokio::test]
async fn a_denied_approval_becomes_a_tool_error_the_model_reads() {
    let aimock = Aimock::start("chat.json");
    let mut settings = HubSettings::default();
    settings
        .policies
        .tools
        .push((NamePattern::new("file_read").expect("pattern"), Policy::Ask));
    let harness = Harness::new(&aimock, settings, 25);
    write_file(harness.dir.path(), "plan.txt", "secret");
    let mut watched = harness.engine.approvals().watch();
    let (conversation, mut events, _) = harness
        .engine
        .start_turn(ask("Read the secret plan"))
        .await
        .expect("turn starts");
    let mut seen = Vec::new();
    while let Some(event) = events.recv().await {
        if let TurnEvent::ApprovalRequested(pending) = &event {
            assert_eq!(pending.request.tool, "file_read");
            assert_eq!(
                pending.request.session.as_deref(),
                Some(conversation.as_str())
            );
            assert_eq!(pending.request.tool_call_id.as_deref(), Some("call_secret"));
            harness
                .engine
                .approvals()
                .answer(
                    pending.id,
                    Approval::Deny {
                        reason: "not today".into(),
                    },
                )
                .expect("answer");
        }
        seen.push(event);
    }
    assert!(
        seen.iter()
            .any(|e| matches!(e, TurnEvent::ApprovalRequested(_)))
    );
    let outs = outputs(&seen);
    assert_eq!(outs.len(), 1);
    assert!(outs[0].is_error);
    assert_eq!(outs[0].error_code.as_deref(), Some("denied"));
    assert!(outs[0].content.contains("not today"), "{}", outs[0].content);
    assert_eq!(text(&seen), "I was not allowed to read plan.txt.");

    // The approval came and went; then the turn's end, once it no longer counts as running.
    let mut kinds = Vec::new();
    loop {
        let next = tokio::time::timeout(Duration::from_secs(30), watched.next())
            .await
            .expect("the queue's events within 30 s");
        match next.expect("the stream is open") {
            Watched::Event(PersonEvent::Pending(_)) => kinds.push("pending".to_string()),
            Watched::Event(PersonEvent::Resolved(r)) => kinds.push(format!("{:?}", r.outcome)),
            Watched::Event(PersonEvent::TurnEnded(ended)) => {
                assert_eq!(ended.session, conversation);
                assert!(!harness.engine.is_running(&conversation));
                break;
            }
            Watched::Missed => panic!("missed events"),
        }
    }
    assert_eq!(kinds, ["pending", "Denied"]);
}

/// Runs the fixture's turn in which the model asks the person for a colour, answering its
/// question with `answer`; returns the turn's events.
async fn colour_turn(
    answer: impl Fn(&toolmux_chat::ChatEngine, &str, &toolmux_chat::InputRequest),
) -> Vec<TurnEvent> {
    let aimock = Aimock::start("chat.json");
    let harness = Harness::new(&aimock, HubSettings::default(), 25);
    let (conversation, mut events, _) = harness
        .engine
        .start_turn(ask("Pick a colour for me"))
        .await
        .expect("turn starts");
    let mut seen = Vec::new();
    while let Some(event) = events.recv().await {
        if let TurnEvent::InputRequested(request) = &event {
            answer(&harness.engine, &conversation, request);
        }
        seen.push(event);
    }
    seen
}

#[tokio::test]
async fn request_human_input_asks_the_person_and_feeds_back_the_answer() {
    let seen = colour_turn(|engine, conversation, request| {
        assert_eq!(request.question, "Which colour do you like?");
        engine
            .answer_input_text(conversation, Some(request.id), "teal, please")
            .expect("answer");
    })
    .await;
    assert!(
        seen.iter()
            .any(|e| matches!(e, TurnEvent::InputRequested(_)))
    );
    assert_eq!(outputs(&seen)[0].content, "teal, please");
    assert_eq!(text(&seen), "Teal it is.");
}

/// The one rule, in the chat: an answer that does not fit the question's form is refused with
/// the field and why, and the question stays open for an answer that does (as over REST's
/// `/api/inputs` and an MCP client's elicitation form).
#[tokio::test]
async fn an_answer_that_does_not_fit_is_refused_in_the_chat_and_the_question_stays_open() {
    let seen = colour_turn(|engine, conversation, request| {
        let misfit = engine.answer_input(
            conversation,
            Some(request.id),
            toolmux_core::HumanAnswer::Accept(json!({"answer": 5})),
        );
        let Err(toolmux_chat::ReplyError::DoesNotFit(why)) = &misfit else {
            panic!("a misfit was taken: {misfit:?}");
        };
        assert!(why.contains("/answer"), "{why}");
        let waiting: Vec<uuid::Uuid> = engine
            .pending_inputs(conversation)
            .iter()
            .map(|r| r.id)
            .collect();
        assert_eq!(waiting, [request.id], "the question stays open");
        engine
            .answer_input_text(conversation, Some(request.id), "teal, please")
            .expect("a fitting answer is taken");
    })
    .await;
    assert_eq!(outputs(&seen)[0].content, "teal, please");
    assert_eq!(text(&seen), "Teal it is.");
}

#[tokio::test]
async fn the_step_limit_ends_the_turn_with_a_visible_message() {
    let aimock = Aimock::start("chat.json");
    let harness = Harness::new(&aimock, HubSettings::default(), 3);
    let (conversation, events) = harness.turn(None, "Keep listing forever").await;
    assert_eq!(outputs(&events).len(), 3);
    assert!(
        text(&events).contains("I stopped after 3 steps"),
        "{}",
        text(&events)
    );
    assert!(matches!(
        last(&events),
        TurnEvent::Finished {
            reason: FinishReason::StepLimit,
            ..
        }
    ));
    let stored = harness
        .engine
        .store()
        .messages(&conversation)
        .expect("messages");
    assert!(matches!(
        &stored.last().expect("messages").message,
        Message::Assistant { text, .. } if text.contains("chat.maxSteps")
    ));
}

#[tokio::test]
async fn a_cancelled_turn_stops_streaming_and_keeps_what_arrived() {
    let aimock = Aimock::start("chat.json");
    let harness = Harness::new(&aimock, HubSettings::default(), 25);
    let (conversation, mut events, cancel) = harness
        .engine
        .start_turn(ask("Tell me a long story"))
        .await
        .expect("turn starts");
    let mut seen = Vec::new();
    while let Some(event) = events.recv().await {
        if matches!(event, TurnEvent::TextDelta(_)) {
            cancel.cancel();
        }
        seen.push(event);
    }
    assert!(matches!(
        last(&seen),
        TurnEvent::Finished {
            reason: FinishReason::Cancelled,
            ..
        }
    ));
    let partial = text(&seen);
    assert!(
        !partial.is_empty() && partial.len() < 40,
        "expected a cut answer, got {partial:?}"
    );
    // The conversation stays usable.
    let (_, events, _) = harness
        .engine
        .start_turn(TurnRequest {
            conversation: Some(conversation),
            text: "Say hello".into(),
            ..Default::default()
        })
        .await
        .expect("next turn starts");
    assert_eq!(text(&collect(events).await), "Hello from the mock model.");
}

#[tokio::test]
async fn a_rate_limited_provider_ends_the_turn_with_a_clear_error() {
    let aimock = Aimock::start("chat.json");
    let harness = Harness::new(&aimock, HubSettings::default(), 25);
    let (_, events) = harness.turn(None, "Are you rate limited?").await;
    let TurnEvent::Error { message } = last(&events) else {
        panic!("expected an error, got {:?}", last(&events));
    };
    assert!(message.contains("HTTP 429"), "{message}");
    assert!(message.contains("Rate limit exceeded"), "{message}");
}

#[tokio::test]
async fn a_dropped_stream_ends_the_turn_with_a_clear_error() {
    let aimock = Aimock::start("chat.json");
    let harness = Harness::new(&aimock, HubSettings::default(), 25);
    let (_, events) = harness.turn(None, "Drop the line halfway").await;
    let TurnEvent::Error { message } = last(&events) else {
        panic!("expected an error, got {:?}", last(&events));
    };
    assert!(message.contains("connection dropped"), "{message}");
}

#[tokio::test]
async fn anthropic_and_gemini_wire_formats_stream_through_the_same_loop() {
    let aimock = Aimock::start("chat.json");
    for kind in [ProviderKind::Anthropic, ProviderKind::Gemini] {
        let dir = tempfile::tempdir().expect("temp");
        let harness = Harness::in_dir(dir, &aimock, HubSettings::default(), 25, kind);
        let (_, events) = harness.turn(None, "Say hello").await;
        assert_eq!(
            text(&events),
            "Hello from the mock model.",
            "{kind:?}: {events:?}"
        );
    }
}

#[tokio::test]
async fn a_loaded_skill_narrows_the_turn_to_its_allowed_tools() {
    let aimock = Aimock::start("chat.json");
    let harness = Harness::new(&aimock, HubSettings::default(), 25);
    let root = harness.dir.path();
    write_file(
        root,
        ".toolmux/skills/csv-summary/SKILL.md",
        "---\nname: csv-summary\ndescription: Summarise a CSV file.\nallowed-tools: file_read\n---\n\n# CSV summary\n\nRead the file, count its rows.\n",
    );
    harness
        .hub
        .add_source(Arc::new(toolmux_skills::SkillsSource::new(
            root,
            vec![toolmux_skills::SkillRoot {
                path: root.join(".toolmux/skills"),
                origin: toolmux_skills::Origin::Project,
            }],
        )));
    let (_, events) = harness
        .turn(None, "Summarise data.csv with the csv skill")
        .await;
    let outs = outputs(&events);
    assert_eq!(
        outs.iter().map(|o| o.name.as_str()).collect::<Vec<_>>(),
        ["skill_load", "grep"]
    );
    assert!(!outs[0].is_error, "{:?}", outs[0]);
    // The model named grep anyway: the hub refused it, naming the skill.
    assert!(outs[1].is_error);
    assert_eq!(outs[1].error_code.as_deref(), Some("not_served"));
    assert!(
        outs[1]
            .content
            .contains("is not served by the skill `csv-summary`, which allows only file_read"),
        "{}",
        outs[1].content
    );
    assert_eq!(
        text(&events),
        "The csv-summary skill does not let me use grep."
    );
    // What the model was offered: everything before the skill, its allowed tools (and the
    // skill and human-input tools) after.
    let journal = aimock.journal();
    let offered: Vec<Vec<String>> = journal
        .as_array()
        .expect("a journal")
        .iter()
        .filter(|r| {
            r["body"]["messages"]
                .to_string()
                .contains("Summarise data.csv with the csv skill")
        })
        .map(|r| {
            let mut names: Vec<String> = r["body"]["tools"]
                .as_array()
                .map(Vec::as_slice)
                .unwrap_or_default()
                .iter()
                .filter_map(|t| t["function"]["name"].as_str().map(str::to_string))
                .collect();
            names.sort();
            names
        })
        .collect();
    assert_eq!(offered.len(), 3, "{offered:?}");
    assert!(offered[0].contains(&"grep".to_string()), "{offered:?}");
    for later in &offered[1..] {
        assert_eq!(
            later,
            &[
                "file_read",
                "request_human_input",
                "skill_list",
                "skill_load"
            ],
        );
    }
}

/// A turn outlives its client, so the engine bounds how many run at once: past
/// `MAX_RUNNING_TURNS` (each here waiting on its question) a new turn is refused with why, and
/// one cancelled makes room again.
#[tokio::test]
async fn the_engine_runs_a_bounded_number_of_turns_at_once() {
    let aimock = Aimock::start("chat.json");
    let harness = Harness::new(&aimock, HubSettings::default(), 25);
    let mut started = Vec::new();
    for _ in 0..toolmux_chat::MAX_RUNNING_TURNS {
        let (conversation, mut events, cancel) = harness
            .engine
            .start_turn(ask("Pick a colour for me"))
            .await
            .expect("turn starts");
        // Running: its question is asked.
        loop {
            match events.recv().await {
                Some(TurnEvent::InputRequested(_)) => break,
                Some(_) => continue,
                None => panic!("the turn of {conversation} ended before it asked"),
            }
        }
        started.push((conversation, events, cancel));
    }
    let refused = harness.engine.start_turn(ask("Pick a colour for me")).await;
    match refused {
        Err(e) => assert_eq!(
            e.to_string(),
            format!(
                "{} turns are running already, the most this server runs at once; wait for one \
                 to end or cancel one",
                toolmux_chat::MAX_RUNNING_TURNS
            )
        ),
        Ok((conversation, ..)) => panic!("a turn past the bound started: {conversation}"),
    }
    let (conversation, mut events, _) = started.pop().expect("a started turn");
    assert!(harness.engine.cancel(&conversation));
    while events.recv().await.is_some() {}
    harness
        .engine
        .start_turn(ask("Pick a colour for me"))
        .await
        .expect("a turn starts once one has ended");
}

/// A `replaceTurn` request whose client goes away while the earlier turns are being dropped
/// (the web app reloaded mid-request: hyper drops the handler's future) leaves no turn running:
/// the conversation takes its next turn instead of answering `busy` until a restart.
#[tokio::test]
async fn a_turn_taken_again_whose_request_is_dropped_midway_leaves_no_turn_running() {
    let aimock = Aimock::start("chat.json");
    let harness = Harness::new(&aimock, HubSettings::default(), 25);
    let (id, _) = harness.turn(None, "Say hello").await;
    let request = TurnRequest {
        conversation: Some(id.clone()),
        text: "Say hello".into(),
        replace_turn: Some(0),
        ..Default::default()
    };
    // Polled by hand until, right after a poll that left it pending, the conversation is among
    // the running turns: the request is then waiting on the store's drop of the earlier turns
    // (the only wait between taking its place and returning). The store may finish before the
    // first poll of that wait; then the turn runs, is let end, and the request is made again.
    let mut dropped_midway = false;
    for _ in 0..100 {
        let mut starting = Box::pin(harness.engine.start_turn(request.clone()));
        let finished = loop {
            let polled =
                std::future::poll_fn(|cx| std::task::Poll::Ready(starting.as_mut().poll(cx))).await;
            if let std::task::Poll::Ready(started) = polled {
                break Some(started.expect("the turn is taken again"));
            }
            if harness.engine.is_running(&id) {
                break None;
            }
            tokio::task::yield_now().await;
        };
        match finished {
            Some((_, events, _)) => {
                collect(events).await;
            }
            None => {
                drop(starting);
                dropped_midway = true;
                break;
            }
        }
    }
    assert!(
        dropped_midway,
        "the request was never seen waiting on the store"
    );
    assert!(
        !harness.engine.is_running(&id),
        "a dropped request left its conversation running"
    );
    let (_, events, _) = harness
        .engine
        .start_turn(TurnRequest {
            conversation: Some(id.clone()),
            text: "Say hello".into(),
            ..Default::default()
        })
        .await
        .expect("the conversation takes its next turn");
    collect(events).await;
}

/// Edit and resend (issue 30): a turn taken again replaces it and everything after it, and the
/// model sees the new message; a turn past the conversation's next is refused before anything
/// is dropped, and leaves no turn running.
#[tokio::test]
async fn a_turn_taken_again_replaces_it_and_what_followed() {
    let aimock = Aimock::start("chat.json");
    let harness = Harness::new(&aimock, HubSettings::default(), 25);
    let (id, _) = harness.turn(None, "Say hello").await;
    harness.turn(Some(&id), "Say hello").await;
    let again = |turn: usize| TurnRequest {
        conversation: Some(id.clone()),
        text: "Who chose the codename?".into(),
        replace_turn: Some(turn),
        ..Default::default()
    };
    let refused = harness
        .engine
        .start_turn(again(3))
        .await
        .expect_err("turn 2 is the next; there is no turn 3");
    assert_eq!(
        refused.to_string(),
        format!(
            "conversation `{id}` has 2 turns; turn 3 cannot be taken again (turns count from 0)"
        )
    );
    assert!(!harness.engine.is_running(&id));
    let (_, events, _) = harness
        .engine
        .start_turn(again(0))
        .await
        .expect("the first turn again");
    collect(events).await;
    let kept: Vec<Message> = harness
        .engine
        .store()
        .messages(&id)
        .expect("messages")
        .into_iter()
        .map(|m| m.message)
        .collect();
    assert_eq!(
        kept,
        [
            Message::User {
                text: "Who chose the codename?".into()
            },
            Message::Assistant {
                text: "The notes do not say who chose Bluefin.".into(),
                tool_calls: vec![]
            }
        ]
    );
}
