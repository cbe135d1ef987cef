//! A real OAuth 2 authorization server for the tests of `server.auth` (toolmux as a protected
//! resource): oauth2-mock-server, run by `tests/peers/oauth/issuer.mjs` on loopback, which mints
//! client-credentials tokens shaped by the request (`aud`, `scope`, `sub`, `client_id`,
//! `expires_in`). Killed when dropped.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use serde_json::Value;

use crate::http::request;
use crate::peers::peer_file;

/// The authorization server (and its rogue twin, whose tokens claim the issuer's name and key
/// id but are signed with a key pair of their own).
pub struct Issuer {
    child: Child,
    /// Its issuer URL (`http://127.0.0.1:PORT`), as tokens carry it in `iss`.
    pub url: String,
    /// The rogue server's URL.
    pub rogue: String,
}

impl Issuer {
    /// Starts `issuer.mjs` with a key of `alg` (`RS256`, `ES256` or `EdDSA`); the tokens of its
    /// sign-in flow name `audience`.
    pub fn start(alg: &str, audience: &str) -> Self {
        let mut child = Command::new("node")
            .arg(peer_file("oauth/issuer.mjs"))
            .arg(alg)
            .env("AUDIENCE", audience)
            .current_dir(peer_file("oauth"))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start the authorization server (node tests/peers/oauth/issuer.mjs)");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("read the issuer's first line");
        let started: Value = serde_json::from_str(&line).unwrap_or_else(|e| {
            panic!(
                "the authorization server did not start ({e}): {line:?}; run `npm ci` in \
                 tests/peers/oauth"
            )
        });
        Self {
            child,
            url: started["issuer"].as_str().expect("issuer").to_string(),
            rogue: started["rogue"].as_str().expect("rogue").to_string(),
        }
    }

    /// A client-credentials token from this issuer, shaped by `fields` (`aud`, `scope`, `sub`,
    /// `client_id`, `expires_in`).
    pub fn mint(&self, fields: &[(&str, &str)]) -> String {
        Self::mint_at(&self.url, fields)
    }

    /// A client-credentials token from the server at `url` (the issuer or the rogue).
    pub fn mint_at(url: &str, fields: &[(&str, &str)]) -> String {
        let mut body = String::from("grant_type=client_credentials");
        for (k, v) in fields {
            body.push_str(&format!("&{k}={}", v.replace(' ', "+")));
        }
        let address = url.trim_start_matches("http://");
        let answer = request(
            address,
            "POST",
            "/token",
            &[("Content-Type", "application/x-www-form-urlencoded")],
            Some(&body),
        );
        assert_eq!(answer.status, 200, "{}", answer.body);
        answer.json()["access_token"]
            .as_str()
            .expect("access_token")
            .to_string()
    }
}

impl Drop for Issuer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
