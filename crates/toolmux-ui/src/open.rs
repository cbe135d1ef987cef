//! `toolmux serve --open`: the web app's URL handed to a browser, through the opener the person
//! chose (`TOOLMUX_BROWSER`) or the system's (`xdg-open`, `open` on macOS).

use std::process::{Command, Stdio};

/// Why the browser could not be started; `serve` reports it and goes on serving.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error("cannot start `{program}` to open the web app: {source}")]
    Spawn {
        program: String,
        source: std::io::Error,
    },
    #[error("TOOLMUX_BROWSER is set but empty")]
    Empty,
}

/// Starts the opener with `url` as its last argument and returns at once; a thread reaps it.
/// `TOOLMUX_BROWSER` is a program with optional arguments, split on whitespace (`firefox
/// --new-window`).
pub fn open_in_browser(url: &str) -> Result<(), OpenError> {
    let chosen = std::env::var("TOOLMUX_BROWSER").ok();
    let mut words: Vec<String> = match &chosen {
        Some(value) => value.split_whitespace().map(str::to_string).collect(),
        None if cfg!(target_os = "macos") => vec!["open".to_string()],
        None => vec!["xdg-open".to_string()],
    };
    if words.is_empty() {
        return Err(OpenError::Empty);
    }
    let program = words.remove(0);
    let mut child = Command::new(&program)
        .args(&words)
        .arg(url)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|source| OpenError::Spawn {
            program: program.clone(),
            source,
        })?;
    // Reaped so it leaves no zombie; what it exits with does not concern the server.
    std::thread::spawn(move || {
        if let Ok(status) = child.wait()
            && !status.success()
        {
            tracing::warn!(%program, %status, "the browser opener failed");
        }
    });
    Ok(())
}
