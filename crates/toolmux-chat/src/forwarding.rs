//! Bringing what waits on the person — approvals and questions, whichever source asked them —
//! into the turn's event stream while the turn runs.

use std::collections::HashSet;
use std::sync::Arc;

use tokio::sync::{broadcast, mpsc};
use toolmux_core::{ApprovalQueue, PendingApproval};

use crate::events::TurnEvent;
use crate::human_input::{HumanInputs, InputRequest};

/// Aborts a task when dropped.
pub(crate) struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Forwards the approvals and questions of `conversation` into its turn's `events` for as long
/// as the returned guard lives: each queue with the receiver of its announcements.
///
/// A broadcast receiver that falls behind loses the oldest announcements (`Lagged`). The
/// queues still hold every request that waits, so a lagged receiver re-reads them from there
/// rather than skip a prompt the turn is blocked on; `shown` keeps a request that is both
/// re-read and announced from being shown twice.
pub(crate) fn forward_requests(
    conversation: String,
    events: mpsc::Sender<TurnEvent>,
    (approval_queue, mut approvals): (Arc<ApprovalQueue>, broadcast::Receiver<PendingApproval>),
    (input_queue, mut inputs): (Arc<HumanInputs>, broadcast::Receiver<InputRequest>),
) -> AbortOnDrop {
    AbortOnDrop(tokio::spawn(async move {
        let mut shown: HashSet<uuid::Uuid> = HashSet::new();
        loop {
            let batch: Vec<TurnEvent> = tokio::select! {
                got = approvals.recv() => {
                    let waiting = || approval_queue.pending(Some(&conversation));
                    let Some(list) = or_waiting(got, waiting) else { return };
                    list.into_iter()
                        .filter(|a| a.request.session.as_deref() == Some(conversation.as_str()))
                        .filter(|a| shown.insert(a.id))
                        .map(TurnEvent::ApprovalRequested)
                        .collect()
                }
                got = inputs.recv() => {
                    let waiting = || input_queue.pending(&conversation);
                    let Some(list) = or_waiting(got, waiting) else { return };
                    list.into_iter()
                        .filter(|i| i.conversation == conversation && shown.insert(i.id))
                        .map(TurnEvent::InputRequested)
                        .collect()
                }
            };
            for event in batch {
                if events.send(event).await.is_err() {
                    return;
                }
            }
        }
    }))
}

/// What one broadcast receive yields: the announced request, or after a lag every request
/// that still waits (from `waiting`, oldest first); `None` when the queue is gone.
fn or_waiting<T>(
    received: Result<T, broadcast::error::RecvError>,
    waiting: impl FnOnce() -> Vec<T>,
) -> Option<Vec<T>> {
    match received {
        Ok(request) => Some(vec![request]),
        Err(broadcast::error::RecvError::Lagged(_)) => Some(waiting()),
        Err(broadcast::error::RecvError::Closed) => None,
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn a_forwarder_that_fell_behind_still_shows_every_waiting_question_once() {
        const ASKED: usize = 80;
        let approvals = Arc::new(ApprovalQueue::new());
        let inputs = Arc::new(HumanInputs::default());
        let (approvals_rx, inputs_rx) = (approvals.subscribe(), inputs.subscribe());
        // More questions than the announcement channel holds, all asked before the forwarder
        // reads one: its receiver lags and loses the oldest announcements.
        for n in 0..ASKED {
            let inputs = Arc::clone(&inputs);
            tokio::spawn(async move { inputs.ask("c", &format!("question {n}")).await });
        }
        while inputs.pending("c").len() < ASKED {
            tokio::task::yield_now().await;
        }
        let (tx, mut rx) = mpsc::channel(2 * ASKED);
        let _forward = forward_requests(
            "c".into(),
            tx,
            (approvals, approvals_rx),
            (Arc::clone(&inputs), inputs_rx),
        );
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
}
