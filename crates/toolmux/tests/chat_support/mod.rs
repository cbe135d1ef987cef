//! What the chat tests share: the chat peers (aimock, the AI SDK client) from
//! `tests/peers/chat`, found through `TOOLMUX_PEERS`.

#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

/// The chat peers; fails with instructions when they are not installed.
pub fn peers() -> PathBuf {
    let peers = std::env::var_os("TOOLMUX_PEERS").unwrap_or_else(|| {
        panic!(
            "TOOLMUX_PEERS is not set. Run ./scripts/test, or install the peers by hand: \
             `(cd tests/peers/chat && npm ci)` and `export TOOLMUX_PEERS=$PWD/tests/peers`"
        )
    });
    let chat = PathBuf::from(peers).join("chat");
    assert!(
        chat.join("node_modules/@copilotkit/aimock").is_dir()
            && chat.join("node_modules/ai").is_dir(),
        "the chat peers are not installed in {}: run `(cd tests/peers/chat && npm ci)`",
        chat.display()
    );
    chat
}

/// aimock on a free port, stopped on drop.
pub struct Aimock {
    child: Child,
    pub url: String,
}

impl Aimock {
    /// Starts aimock with `fixtures` from `tests/peers/chat/fixtures`.
    pub fn start(fixtures: &str) -> Self {
        let chat = peers();
        let mut child = Command::new("node")
            .arg(chat.join("node_modules/@copilotkit/aimock/dist/cli.js"))
            .args(["-p", "0", "-f"])
            .arg(chat.join("fixtures").join(fixtures))
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start aimock with node");
        let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
        let url = loop {
            let line = lines
                .next()
                .expect("aimock exited before it listened")
                .expect("read aimock output");
            if let Some(at) = line.find("http://") {
                break line[at..].trim().to_string();
            }
        };
        std::thread::spawn(move || for _ in lines {});
        Self { child, url }
    }
}

impl Drop for Aimock {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
