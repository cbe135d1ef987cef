//! What an approval showed of a write, so that the write carries out that and nothing else.
//!
//! An `ask` write is planned twice: once for the approval (`Source::preview`: the diff the
//! person reads) and once when it runs. Between the two the person takes their time, and a
//! file may change; carried out as planned then, the call would write a change nobody saw. So
//! the preview pins what it planned from — every file's stamp and the diff shown — under the
//! call's session, tool and arguments, and the run compares: the same files, the same diff, or
//! nothing is written and the call fails with a conflict that says to look again.
//!
//! A call that was never previewed (its policy is `allow`) has no pin and runs as planned. Pins
//! of previews whose call never came (a denial) are forgotten oldest first beyond
//! [`MAX_PINS`].

use std::collections::VecDeque;
use std::sync::Mutex;

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::reads::Stamp;

/// How many previews wait for their call at most.
const MAX_PINS: usize = 64;

/// What one preview planned from.
#[derive(Debug)]
struct Pin {
    key: [u8; 32],
    files: Vec<(String, Option<Stamp>)>,
    shown: String,
}

/// The previews waiting for their call.
#[derive(Debug, Default)]
pub(crate) struct Pins {
    waiting: Mutex<VecDeque<Pin>>,
}

/// A call's identity: its session, its tool and its arguments, as the hub passes them to the
/// preview and then to the call.
pub(crate) fn key(session: Option<&str>, tool: &str, arguments: &Map<String, Value>) -> [u8; 32] {
    let mut hash = Sha256::new();
    hash.update(session.unwrap_or_default().as_bytes());
    hash.update([0]);
    hash.update(tool.as_bytes());
    hash.update([0]);
    // Serialising a map cannot fail; an empty hash part would only make pins coarser.
    hash.update(serde_json::to_vec(arguments).unwrap_or_default());
    hash.finalize().into()
}

impl Pins {
    /// Remembers what a preview planned from and showed.
    pub(crate) fn pin(&self, key: [u8; 32], files: Vec<(String, Option<Stamp>)>, shown: String) {
        let mut waiting = self.waiting.lock().unwrap_or_else(|p| p.into_inner());
        waiting.retain(|p| p.key != key);
        if waiting.len() == MAX_PINS {
            waiting.pop_front();
        }
        waiting.push_back(Pin { key, files, shown });
    }

    /// Takes the pin of a call about to run, and says whether the call's plan is still what
    /// its preview showed: `Err` with the reason when it is not. No pin, no check.
    pub(crate) fn check(
        &self,
        key: [u8; 32],
        files: &[(String, Option<Stamp>)],
        shown: impl FnOnce() -> String,
    ) -> Result<(), String> {
        let pin = {
            let mut waiting = self.waiting.lock().unwrap_or_else(|p| p.into_inner());
            let Some(at) = waiting.iter().position(|p| p.key == key) else {
                return Ok(());
            };
            waiting.remove(at)
        };
        let Some(pin) = pin else {
            return Ok(());
        };
        let moved: Vec<&str> = files
            .iter()
            .filter(|(path, stamp)| !pin.files.iter().any(|(p, s)| p == path && s == stamp))
            .map(|(path, _)| path.as_str())
            .collect();
        if moved.is_empty() && pin.files.len() == files.len() && pin.shown == shown() {
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
