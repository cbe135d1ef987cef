//! Bringing what waits on the person — approvals and questions, whichever source asked them —
//! into the turn's event stream while the turn runs.

use std::collections::HashSet;
use std::sync::Arc;

use tokio::sync::mpsc;
use toolmux_core::{ApprovalQueue, PersonEvent, PersonEvents, WaitingItem, Watched};

use crate::events::TurnEvent;
use crate::human_input::InputRequest;

/// Aborts a task when dropped.
pub(crate) struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Forwards the approvals and questions of `conversation` into its turn's `events` for as long
/// as the returned guard lives, from the queue's event stream (`waiting`, made before the turn
/// started).
///
/// A stream that falls behind loses the oldest announcements ([`Watched::Missed`]). The queue
/// still holds everything that waits, so a lagged stream re-reads it from there rather than skip
/// a prompt the turn is blocked on; `shown` keeps what is both re-read and announced from being
/// shown twice.
pub(crate) fn forward_requests(
    conversation: String,
    events: mpsc::Sender<TurnEvent>,
    queue: Arc<ApprovalQueue>,
    mut waiting: PersonEvents,
) -> AbortOnDrop {
    AbortOnDrop(tokio::spawn(async move {
        let mut shown: HashSet<uuid::Uuid> = HashSet::new();
        while let Some(watched) = waiting.next().await {
            let items = match watched {
                Watched::Event(PersonEvent::Pending(item)) => vec![*item],
                Watched::Event(PersonEvent::Resolved(_) | PersonEvent::TurnEnded(_)) => continue,
                Watched::Missed => queue.waiting(),
            };
            let batch: Vec<TurnEvent> = items
                .into_iter()
                .filter_map(|item| turn_event(&conversation, item))
                .filter(|(id, _)| shown.insert(*id))
                .map(|(_, event)| event)
                .collect();
            for event in batch {
                if events.send(event).await.is_err() {
                    return;
                }
            }
        }
    }))
}

/// What the turn of `conversation` shows of something waiting on a person, with its id; `None`
/// for what another conversation or channel waits on.
fn turn_event(conversation: &str, item: WaitingItem) -> Option<(uuid::Uuid, TurnEvent)> {
    match item {
        WaitingItem::Approval(approval) => (approval.request.session.as_deref()
            == Some(conversation))
        .then(|| (approval.id, TurnEvent::ApprovalRequested(approval))),
        WaitingItem::Input(input) => InputRequest::of(&input)
            .filter(|request| request.conversation == conversation)
            .map(|request| (request.id, TurnEvent::InputRequested(request))),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use toolmux_core::Approver;

    use super::*;

    #[tokio::test]
    async fn a_forwarder_that_fell_behind_still_shows_every_waiting_question_once() {
        const ASKED: usize = 300;
        let queue = Arc::new(ApprovalQueue::new());
        let waiting = queue.watch();
        // More questions than the announcement channel holds, all asked before the forwarder
        // reads one: its stream lags and loses the oldest announcements.
        for n in 0..ASKED {
            let queue = Arc::clone(&queue);
            tokio::spawn(async move { queue.ask(&question("c", n)).await });
        }
        while queue.pending_inputs().len() < ASKED {
            tokio::task::yield_now().await;
        }
        let (tx, mut rx) = mpsc::channel(2 * ASKED);
        let _forward = forward_requests("c".into(), tx, Arc::clone(&queue), waiting);
        let mut shown = Vec::new();
        while shown.len() < ASKED {
            let next = tokio::time::timeout(Duration::from_secs(5), rx.recv()).await;
            match next {
                Ok(Some(TurnEvent::InputRequested(request))) => shown.push(request.question),
                Ok(other) => panic!("not a question: {other:?}"),
                Err(_) => panic!("only {} of {ASKED} questions were shown", shown.len()),
            }
        }
        // Re-read and announced, but shown once.
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(rx.try_recv().is_err(), "a question was shown twice");
        shown.sort();
        let mut asked: Vec<String> = (0..ASKED).map(|n| format!("question {n}")).collect();
        asked.sort();
        assert_eq!(shown, asked);
    }

    fn question(conversation: &str, n: usize) -> toolmux_core::HumanQuestion {
        toolmux_core::HumanQuestion {
            session: Some(conversation.into()),
            ..toolmux_core::HumanQuestion::new(
                crate::TOOL_NAME,
                format!("question {n}"),
                toolmux_core::AnswerSchema::free_text(),
                toolmux_core::Channel::Chat,
            )
        }
    }
}
