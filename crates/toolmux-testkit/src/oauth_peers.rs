//! A real authorization server (`oauth2-mock-server` run by
//! `tests/peers/upstream/oauth-server.mjs`, which approves at once and records what it did) in
//! front of a real MCP server that checks every token (`tests/peers/upstream/oauth_mcp_server.py`):
//! the peers of the tests of toolmux as an OAuth client of an upstream server.

use std::path::PathBuf;

use serde_json::Value;

use crate::http::request;
use crate::peers::{mcp_python, node_peer, peer_file};
use crate::processes::{Background, free_port};

/// The two peers, started on free ports; both stop when this is dropped.
pub struct OAuthPeers {
    /// The authorization server's issuer URL, `http://127.0.0.1:PORT`.
    pub issuer: String,
    /// The MCP server's URL, `http://127.0.0.1:PORT/mcp`.
    pub mcp_url: String,
    events: PathBuf,
    _auth: Background,
    _mcp: Background,
    _dir: tempfile::TempDir,
}

impl OAuthPeers {
    /// Starts both peers, with the authorization server's default token lifetime.
    pub fn start() -> Self {
        Self::start_with(&[])
    }

    /// Starts both peers; the authorization server's access tokens last `secs` seconds.
    pub fn with_token_ttl(secs: u64) -> Self {
        Self::start_with(&[("TOKEN_TTL", secs.to_string())])
    }

    fn start_with(settings: &[(&str, String)]) -> Self {
        node_peer("upstream", "conformance"); // the npm peers of the area are installed
        let script = peer_file("upstream/oauth-server.mjs");
        peer_file("upstream/node_modules/oauth2-mock-server/package.json");
        let dir = tempfile::tempdir().expect("temp dir");
        let events = dir.path().join("events.jsonl");
        let auth_port = free_port();
        let mut envs = vec![
            ("PORT", auth_port.to_string()),
            ("EVENTS", events.display().to_string()),
        ];
        envs.extend(settings.iter().cloned());
        let mut auth = Background::start("node", &[script.to_str().expect("a UTF-8 path")], &envs);
        auth.wait_for_port(auth_port);
        let issuer = format!("http://127.0.0.1:{auth_port}");
        let mcp_port = free_port();
        let server = peer_file("upstream/oauth_mcp_server.py");
        let mut mcp = Background::start(
            mcp_python(),
            &[
                server.to_str().expect("a UTF-8 path"),
                "--port",
                &mcp_port.to_string(),
                "--issuer",
                &issuer,
            ],
            &[],
        );
        mcp.wait_for_port(mcp_port);
        Self {
            issuer,
            mcp_url: format!("http://127.0.0.1:{mcp_port}/mcp"),
            events,
            _auth: auth,
            _mcp: mcp,
            _dir: dir,
        }
    }

    /// What the authorization server did, one JSON object per event.
    pub fn events(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.events)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).expect("an event is JSON"))
            .collect()
    }

    /// Token responses of one grant that succeeded.
    pub fn granted(&self, grant: &str) -> usize {
        self.events()
            .iter()
            .filter(|e| e["event"] == "token" && e["grant"] == grant && e["status"] == 200)
            .count()
    }

    /// Every access and refresh token the authorization server handed out.
    pub fn tokens(&self) -> Vec<String> {
        self.events()
            .iter()
            .flat_map(|e| [e["access_token"].as_str(), e["refresh_token"].as_str()])
            .flatten()
            .map(str::to_string)
            .collect()
    }

    /// Revokes the grant (RFC 7009's endpoint): the tokens stop working, refreshing is refused.
    pub fn revoke(&self) {
        let address = self.issuer.trim_start_matches("http://");
        let answer = request(
            address,
            "POST",
            "/revoke",
            &[("Content-Type", "application/x-www-form-urlencoded")],
            Some("token=all"),
        );
        assert_eq!(answer.status, 200, "{}", answer.body);
    }
}
