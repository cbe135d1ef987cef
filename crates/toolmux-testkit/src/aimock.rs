//! aimock, the stand-in for hosted LLM APIs that replays fixture conversations in the
//! providers' exact streaming formats (`tests/peers/chat`, run with Node).

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use crate::http::request;
use crate::peers::peers_dir;

/// The chat peers folder (`tests/peers/chat`); fails with instructions when aimock is not
/// installed there.
fn chat_peers() -> PathBuf {
    let chat = peers_dir().join("chat");
    assert!(
        chat.join("node_modules/@copilotkit/aimock/dist/cli.js")
            .is_file(),
        "aimock is not installed in {}: run `(cd tests/peers/chat && npm ci)`",
        chat.display()
    );
    chat
}

/// aimock on a free port, stopped on drop.
pub struct Aimock {
    child: Child,
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    /// The folder of the fixtures file written for [`Aimock::serving`], kept while aimock runs.
    _written: Option<tempfile::TempDir>,
}

impl Aimock {
    /// Starts aimock with `fixtures` from `tests/peers/chat/fixtures` (such as `chat.json`).
    pub fn start(fixtures: &str) -> Self {
        Self::start_with(&chat_peers().join("fixtures").join(fixtures), None)
    }

    /// Starts aimock with `fixtures`, a test's own list of fixtures (written to a file that
    /// lives as long as aimock).
    pub fn serving(fixtures: serde_json::Value) -> Self {
        let dir = tempfile::tempdir().expect("a folder for the fixtures");
        let path = dir.path().join("fixtures.json");
        std::fs::write(
            &path,
            serde_json::json!({ "fixtures": fixtures }).to_string(),
        )
        .expect("write the fixtures");
        Self::start_with(&path, Some(dir))
    }

    fn start_with(fixtures: &std::path::Path, written: Option<tempfile::TempDir>) -> Self {
        let chat = chat_peers();
        let mut child = Command::new("node")
            .arg(chat.join("node_modules/@copilotkit/aimock/dist/cli.js"))
            .args(["-p", "0", "-f"])
            .arg(fixtures)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start aimock with node (Node 20 is required)");
        let mut lines = BufReader::new(child.stdout.take().expect("aimock stdout")).lines();
        let url = loop {
            let line = lines
                .next()
                .expect("aimock exited before it listened")
                .expect("read aimock output");
            if let Some(at) = line.find("http://") {
                break line[at..].trim().to_string();
            }
        };
        // Keep draining its output so it never blocks on a full pipe.
        std::thread::spawn(move || for _ in lines {});
        Self {
            child,
            url,
            _written: written,
        }
    }

    /// An OpenAI-compatible provider entry of toolmux's `providers` for this aimock, with
    /// `gpt-4o` as its default model.
    pub fn openai_provider(&self) -> serde_json::Value {
        serde_json::json!({"kind": "openai", "baseUrl": format!("{}/v1", self.url),
            "apiKey": "not-a-secret", "defaultModel": "gpt-4o"})
    }

    /// The request journal: every request aimock received (up to a thousand), newest last.
    pub fn journal(&self) -> serde_json::Value {
        let address = self.url.trim_start_matches("http://");
        request(address, "GET", "/__aimock/journal?limit=1000", &[], None).json()
    }
}

impl Drop for Aimock {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
