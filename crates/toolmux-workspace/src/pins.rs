//! What an approval showed of a write, so that the write carries out that and nothing else.
//!
//! An `ask` write is planned twice: once for the approval (`Source::preview`: the diff the
//! person reads) and once when it runs. Between the two the person takes their time, and a
//! file may change; carried out as planned then, the call would write a change nobody saw. So
//! the preview pins what it planned from — every file's stamp and a hash of the diff shown —
//! under the approval's own id (`CallContext::approval`, which the hub gives the preview and,
//! once the approval lets it run, the call), and the run compares: the same files, the same
//! diff, or nothing is written and the call fails with a conflict that says to look again.
//!
//! Keyed by the approval and nothing else, a pin cannot be taken by another call (an
//! identical call made meanwhile is another approval, with a pin of its own), and it is never
//! pushed out by other previews: it lives until its call takes it or the hub says the approval
//! is over (`Source::approval_ended`: denied, unanswered, cancelled). Their number is still
//! bounded ([`MAX_PINS`]); past it a new preview is refused (the person sees why), never an
//! older pin dropped. A call that was asked about but has no pin (its preview was refused, did
//! not finish, or planned a failure that no longer fails) is a conflict too: nobody saw what it
//! would write. A call nobody was asked about (policy `allow`) has no approval and runs as
//! planned.

use std::collections::HashMap;
use std::sync::Mutex;

use sha2::{Digest, Sha256};
use uuid::Uuid;

use crate::reads::Stamp;

/// How many approvals of writes may wait at once with what their previews showed. A pin is a
/// few stamps and a hash, so this is generous; it only keeps a flood of previews from growing
/// memory without bound.
pub(crate) const MAX_PINS: usize = 4096;

/// What one preview planned from.
#[derive(Debug)]
struct Pin {
    files: Vec<(String, Option<Stamp>)>,
    shown: [u8; 32],
}

/// The previews waiting for their call, by approval.
#[derive(Debug, Default)]
pub(crate) struct Pins {
    waiting: Mutex<HashMap<Uuid, Pin>>,
}

/// Why a preview's pin was not kept.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{MAX_PINS} approvals of writes are already waiting; answer (or deny) some of them and make \
     this call again"
)]
pub(crate) struct TooManyPins;

fn digest(shown: &str) -> [u8; 32] {
    Sha256::digest(shown.as_bytes()).into()
}

impl Pins {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Uuid, Pin>> {
        self.waiting
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Remembers what the preview for `approval` planned from and showed; refused, keeping
    /// every pin there is, when [`MAX_PINS`] approvals already wait.
    pub(crate) fn pin(
        &self,
        approval: Uuid,
        files: Vec<(String, Option<Stamp>)>,
        shown: &str,
    ) -> Result<(), TooManyPins> {
        let mut waiting = self.lock();
        if waiting.len() >= MAX_PINS && !waiting.contains_key(&approval) {
            return Err(TooManyPins);
        }
        waiting.insert(
            approval,
            Pin {
                files,
                shown: digest(shown),
            },
        );
        Ok(())
    }

    /// Drops the pin of an approval that is over (its call will not take it).
    pub(crate) fn forget(&self, approval: Uuid) {
        self.lock().remove(&approval);
    }

    /// How many pins wait.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.lock().len()
    }

    /// Takes the pin of a call about to run and says whether the call's plan is still what
    /// its approval showed: `Err` with the reason when it is not, or when the call was asked
    /// about (`approval` is `Some`) and no pin is there. A call nobody was asked about is not
    /// checked.
    pub(crate) fn check(
        &self,
        approval: Option<Uuid>,
        files: &[(String, Option<Stamp>)],
        shown: impl FnOnce() -> String,
    ) -> Result<(), String> {
        let Some(approval) = approval else {
            return Ok(());
        };
        let Some(pin) = self.lock().remove(&approval) else {
            return Err(
                "the approval of this call showed no diff that can be checked now (its preview \
                 was refused or did not finish, or it showed a failure), so nothing was written: \
                 nobody saw what would be written. Make the call again to see (and approve) the \
                 diff"
                    .to_string(),
            );
        };
        let moved: Vec<&str> = files
            .iter()
            .filter(|(path, stamp)| !pin.files.iter().any(|(p, s)| p == path && s == stamp))
            .map(|(path, _)| path.as_str())
            .collect();
        if moved.is_empty() && pin.files.len() == files.len() && pin.shown == digest(&shown()) {
            return Ok(());
        }
        let which = if moved.is_empty() {
            "the files".to_string()
        } else {
            moved
                .iter()
                .map(|p| format!("`{p}`"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        Err(format!(
            "{which} changed after the approval showed this call's diff, so nothing was written: \
             what was approved is not what would be written now. Read the file again and make \
             the call again to see (and approve) the new diff"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_table_refuses_new_pins_and_keeps_every_waiting_one() {
        let pins = Pins::default();
        let first = Uuid::now_v7();
        pins.pin(first, Vec::new(), "shown").unwrap();
        for _ in 1..MAX_PINS {
            pins.pin(Uuid::now_v7(), Vec::new(), "other").unwrap();
        }
        assert_eq!(pins.len(), MAX_PINS);
        let refused = pins.pin(Uuid::now_v7(), Vec::new(), "x");
        assert_eq!(refused, Err(TooManyPins));
        assert_eq!(
            TooManyPins.to_string(),
            "4096 approvals of writes are already waiting; answer (or deny) some of them and \
             make this call again"
        );
        // The first pin is still there and still checks.
        assert_eq!(pins.check(Some(first), &[], || "shown".into()), Ok(()));
        // Taken once: the same approval has no pin any more, which is a conflict.
        assert!(pins.check(Some(first), &[], || "shown".into()).is_err());
        // An approval that is over frees its place.
        pins.pin(Uuid::now_v7(), Vec::new(), "x").unwrap();
        assert_eq!(pins.len(), MAX_PINS);
    }

    #[test]
    fn forgetting_an_approval_drops_its_pin_and_a_call_nobody_asked_about_is_not_checked() {
        let pins = Pins::default();
        let id = Uuid::now_v7();
        pins.pin(id, Vec::new(), "shown").unwrap();
        pins.forget(id);
        assert_eq!(pins.len(), 0);
        assert!(pins.check(Some(id), &[], || "shown".into()).is_err());
        assert_eq!(pins.check(None, &[], || "anything".into()), Ok(()));
    }
}
