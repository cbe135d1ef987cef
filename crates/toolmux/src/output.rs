//! What commands print on stdout: one line at a time, and pretty JSON for people.

use std::io::Write;

use crate::exit::Failure;

/// Writes one line to stdout. A closed pipe (`toolmux logs | head`) ends the command quietly.
pub fn emit(text: &str) -> Result<(), Failure> {
    let mut out = std::io::stdout().lock();
    match writeln!(out, "{text}").and_then(|()| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Err(Failure::BrokenPipe),
        Err(e) => Err(e.into()),
    }
}

/// Pretty JSON for people; the error case cannot happen for `serde_json::Value`.
pub fn pretty(value: &impl serde::Serialize) -> Result<String, Failure> {
    serde_json::to_string_pretty(value).map_err(|e| Failure::Runtime(e.into()))
}
