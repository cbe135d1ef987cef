//! Hostile tokens against the JWT check of `server.auth`, with a real (slow) issuer on loopback.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::routing::get;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::json;
use tokio::sync::{mpsc, watch};
use toolmux_config::ServerAuth;
use toolmux_http::{TokenIssuer, TokenRefusal};

/// A throwaway Ed25519 key made for this test (PKCS#8, base64 DER), and the public half the
/// issuer publishes.
const PRIVATE_KEY: &str = "MC4CAQAwBQYDK2VwBCIEIBA3Q7MtnkSsDfL4rPj6ryKYam2LTYrv7iodULpMLw0g";
const PUBLIC_X: &str = "aV3_aAvPPQVstx2Dc3LP579xd70cqACVKtN9uczGxXE";
const KID: &str = "k1";
const AUDIENCE: &str = "toolmux-test";
/// How long a step may take before the test calls it a hang; not a measure of anything.
const HANG: Duration = Duration::from_secs(30);

/// An issuer on loopback whose first key-set fetch is answered at once; every later one says it
/// arrived, then is held until the test opens the gate.
struct SlowIssuer {
    base: String,
    fetches: Arc<AtomicUsize>,
    arrived: mpsc::UnboundedReceiver<()>,
    gate: watch::Sender<bool>,
}

impl SlowIssuer {
    async fn start() -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let base = format!("http://{}", listener.local_addr().expect("address"));
        let fetches = Arc::new(AtomicUsize::new(0));
        let (arrival, arrived) = mpsc::unbounded_channel();
        let (gate, opened) = watch::channel(false);
        let metadata = json!({"issuer": base, "jwks_uri": format!("{base}/keys")});
        let counter = Arc::clone(&fetches);
        let keys = move || {
            let counter = Arc::clone(&counter);
            let arrival = arrival.clone();
            let mut opened = opened.clone();
            async move {
                if counter.fetch_add(1, Ordering::SeqCst) > 0 {
                    arrival.send(()).expect("the test listens");
                    opened
                        .wait_for(|open| *open)
                        .await
                        .expect("the test opens the gate");
                }
                axum::Json(json!({"keys": [{
                    "kty": "OKP", "crv": "Ed25519", "x": PUBLIC_X, "kid": KID,
                    "alg": "EdDSA", "use": "sig"
                }]}))
            }
        };
        let app = axum::Router::new()
            .route(
                "/.well-known/oauth-authorization-server",
                get(move || async move { axum::Json(metadata) }),
            )
            .route("/keys", get(keys));
        tokio::spawn(async move { axum::serve(listener, app).await });
        Self {
            base,
            fetches,
            arrived,
            gate,
        }
    }

    fn settings(&self) -> ServerAuth {
        ServerAuth {
            issuer: self.base.clone(),
            audience: AUDIENCE.into(),
            required_scopes: Vec::new(),
            jwks_url: None,
        }
    }

    /// A token signed with the published key, or naming key id `kid` (signed all the same).
    fn token(&self, kid: &str) -> String {
        let mut header = Header::new(Algorithm::EdDSA);
        header.kid = Some(kid.to_string());
        let claims = json!({
            "iss": self.base, "aud": AUDIENCE, "sub": "alice",
            "exp": 4_102_444_800u64, // 2100
        });
        use base64::Engine as _;
        let der = base64::engine::general_purpose::STANDARD
            .decode(PRIVATE_KEY)
            .expect("the test key");
        let key = EncodingKey::from_ed_der(&der);
        jsonwebtoken::encode(&header, &claims, &key).expect("signed")
    }
}

/// Issue 28, D28: a token with a made-up key id made the verifier refresh the key set while
/// holding the cache's lock, so every valid token waited for the issuer (5 s observed, up to
/// the fetch timeout). Now the valid token is checked while that refresh is still held at the
/// issuer: on one thread, so the made-up token's task cannot finish unseen in between.
#[tokio::test(flavor = "current_thread")]
async fn d28_a_valid_token_is_not_held_up_by_an_unknown_key_ids_refresh() {
    let mut issuer = SlowIssuer::start().await;
    // Any unknown key id may refresh (not only one per 30 s), as the first one after a while.
    let verifier = Arc::new(TokenIssuer::with_unknown_kid_refresh(
        issuer.settings(),
        Duration::ZERO,
    ));
    let valid = issuer.token(KID);
    let principal = verifier.verify(&valid).await.expect("the first fetch");
    assert_eq!(principal.subject.as_deref(), Some("alice"));

    let made_up: Vec<_> = (0..8)
        .map(|i| {
            let verifier = Arc::clone(&verifier);
            let token = issuer.token(&format!("made-up-{i}"));
            tokio::spawn(async move { verifier.verify(&token).await })
        })
        .collect();
    tokio::time::timeout(HANG, issuer.arrived.recv())
        .await
        .expect("the refresh reached the issuer, not a hang")
        .expect("the issuer runs");

    let principal = verifier
        .verify(&valid)
        .await
        .expect("checked against the cached key");
    assert_eq!(principal.subject.as_deref(), Some("alice"));
    assert!(
        made_up.iter().all(|task| !task.is_finished()),
        "the valid token was answered while the refresh was still held at the issuer"
    );

    issuer.gate.send_replace(true);
    for task in made_up {
        let refused = task.await.expect("no panic");
        assert!(
            matches!(&refused, Err(TokenRefusal::Invalid(why)) if why.contains("made-up")),
            "{refused:?}"
        );
    }
    assert_eq!(
        issuer.fetches.load(Ordering::SeqCst),
        2,
        "one refresh for all the made-up key ids"
    );
}
