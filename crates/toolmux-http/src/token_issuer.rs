//! JWT access tokens from one issuer (`server.auth`): toolmux as an OAuth protected resource.
//!
//! A token is accepted when its signature checks against one of the issuer's published keys
//! (its JWK Set, found through the issuer's RFC 8414 metadata, then OpenID Connect discovery,
//! unless `jwksUrl` names it), and its `iss`, `aud`, `exp` and `nbf` (with [`LEEWAY`]) and scopes
//! are what the configuration asks. The algorithm is the key's, never the token's choice: a key
//! of type RSA checks RS*/PS*, P-256 ES256, P-384 ES384, Ed25519 EdDSA; `none` does not parse
//! and a symmetric (HS*) token is refused outright, since a public key must never serve as an
//! HMAC secret.
//!
//! The key set is cached: fetched on first use, again after [`MAX_KEY_AGE`], and when a token
//! names a key id the cache does not know (a rotation), at most once per
//! [`UNKNOWN_KID_REFRESH`] so that tokens with made-up key ids cannot make toolmux hammer the
//! issuer.
//!
//! A refresh never runs under the cache's lock, and only one runs at a time: it is a task of its
//! own, whose end the tokens that need it wait for (at most [`REFRESH_TIMEOUT`]). A token whose
//! key is cached never waits for it: a slow or unreachable issuer, or a stream of tokens with
//! made-up key ids, delays no valid token. A stale key set is refreshed in the background while
//! its keys go on checking tokens, and a failed refresh is not retried sooner than the same
//! interval, whatever the number of requests.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::Deserialize;
use serde_json::Value;
use tokio::sync::watch;
use toolmux_config::ServerAuth;

/// Clock skew tolerated on `exp` and `nbf`.
pub const LEEWAY: Duration = Duration::from_secs(30);
/// A cached key set older than this is fetched again before it checks a token.
pub const MAX_KEY_AGE: Duration = Duration::from_secs(60 * 60);
/// The shortest time between two fetches of the key set caused by an unknown key id.
pub const UNKNOWN_KID_REFRESH: Duration = Duration::from_secs(30);
/// How long one fetch of metadata or keys may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(10);
/// How long one refresh (discovery and the key set) may take in all: the longest a token whose
/// key is not cached waits.
pub const REFRESH_TIMEOUT: Duration = Duration::from_secs(20);
/// While no key set was ever fetched, the shortest time between two attempts: every token is
/// refused until one succeeds, and a down issuer is not asked once per request.
const RETRY_WITHOUT_KEYS: Duration = Duration::from_secs(2);
/// The largest metadata document or key set read: real ones are a few KiB.
const MAX_DOCUMENT_BYTES: usize = 1 << 20;

/// Who a token speaks for: its `sub`, and the client it was issued to (`client_id`, or `azp`)
/// when it says. Never the token itself.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Principal {
    /// The token's `sub`; absent in a client-credentials token of some issuers.
    pub subject: Option<String>,
    /// The OAuth client the token was issued to.
    pub client_id: Option<String>,
    /// The scopes the token grants (its `scope` and `scp` claims), read once when it was
    /// verified: what decides whether its holder is the owner's equal ([`Principal::grants_any`]).
    pub scopes: Vec<String>,
    /// The configured principal (`principals.<name>`) the credential matched: by one of its
    /// keys, or by the token's subject.
    pub name: Option<String>,
    /// The credential is the owner's (an access token granting one of `server.adminScopes`):
    /// no principal's rights narrow it.
    pub owner: bool,
}

impl Principal {
    /// The principal a configured principal's key stands for.
    pub fn of_key(name: &str) -> Self {
        Self {
            name: Some(name.to_string()),
            ..Self::default()
        }
    }

    /// How the execution log names this caller: its configured principal's name, else
    /// `alice (client my-app)`, `alice`, or `client my-app` for a machine token without a
    /// subject.
    pub fn caller(&self) -> String {
        if let Some(name) = &self.name {
            return name.clone();
        }
        match (&self.subject, &self.client_id) {
            (Some(sub), Some(client)) => format!("{sub} (client {client})"),
            (Some(sub), None) => sub.clone(),
            (None, Some(client)) => format!("client {client}"),
            (None, None) => "an unnamed token holder".to_string(),
        }
    }

    /// Whether the token grants one of `scopes` (`server.adminScopes`); with none configured,
    /// no token does.
    pub fn grants_any(&self, scopes: &[String]) -> bool {
        scopes.iter().any(|wanted| self.scopes.contains(wanted))
    }

    /// The principal of the request being served, when it was authenticated by a token: what
    /// the guard put in scope for the rest of the request's handling (a REST handler's calls
    /// name it as their caller).
    pub fn current() -> Option<Principal> {
        CURRENT.try_with(Clone::clone).ok().flatten()
    }

    /// Runs `work` with `principal` as [`Principal::current`].
    pub(crate) async fn scope<F: Future>(principal: Option<Principal>, work: F) -> F::Output {
        CURRENT.scope(principal, work).await
    }
}

tokio::task_local! {
    // A task-local rather than a parameter: every REST handler builds its calls' context from
    // the `Caller` extension alone, and the principal reaches them without changing each one.
    static CURRENT: Option<Principal>;
}

/// Why a token was refused, as the `WWW-Authenticate` challenge says it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TokenRefusal {
    /// `401 invalid_token`: malformed, badly signed, expired, or for another issuer or audience.
    #[error("the access token is not valid: {0}")]
    Invalid(String),
    /// `403 insufficient_scope`: valid, but without every required scope.
    #[error("the access token lacks the scope this server requires: {}", .0.join(" "))]
    InsufficientScope(Vec<String>),
    /// The issuer's keys could not be had, so no token can be checked now (`503`).
    #[error("cannot check access tokens now: {0}")]
    KeysUnavailable(String),
}

/// The issuer whose tokens the server accepts, with its cached keys. One per `server.auth`
/// setting; kept across reloads that leave that setting as it was.
#[derive(Debug)]
pub struct TokenIssuer {
    /// Shared with the refresh task, which outlives the request that started it.
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    settings: ServerAuth,
    client: reqwest::Client,
    /// Held only to read or update the cache, never across a fetch.
    cache: Mutex<KeyCache>,
    /// [`UNKNOWN_KID_REFRESH`]; shorter in tests.
    refresh_interval: Duration,
    /// [`MAX_KEY_AGE`]; shorter in tests.
    max_key_age: Duration,
    /// [`RETRY_WITHOUT_KEYS`]; longer in tests.
    retry_without_keys: Duration,
}

#[derive(Debug, Default)]
struct KeyCache {
    /// Where the keys are, once known (configured or discovered).
    jwks_uri: Option<String>,
    keys: Arc<Vec<Jwk>>,
    fetched: Option<Instant>,
    /// When the last refresh started, successful or not: the rate limit.
    attempted: Option<Instant>,
    /// Why the last refresh failed, until one succeeds.
    failure: Option<String>,
    /// The refresh under way, which says `true` when it has ended.
    refreshing: Option<watch::Receiver<bool>>,
}

/// What a token's key lookup does next.
enum Lookup {
    Found(Jwk),
    /// Waits for the refresh under way, then looks again.
    Wait(watch::Receiver<bool>),
    Refused(TokenRefusal),
}

/// Marks the refresh as over when its task ends, however it ends (even cancelled at the
/// runtime's shutdown), so that waiting tokens look again and a later refresh may start.
struct InFlight {
    inner: Arc<Inner>,
    done: watch::Sender<bool>,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.inner.lock().refreshing = None;
        self.done.send_replace(true);
    }
}

/// The claims toolmux reads beside the ones `jsonwebtoken` validates.
#[derive(Deserialize)]
struct Claims {
    sub: Option<String>,
    client_id: Option<String>,
    azp: Option<String>,
    scope: Option<String>,
    scp: Option<Value>,
}

impl TokenIssuer {
    /// An issuer from its settings; nothing is fetched until the first token arrives.
    pub fn new(settings: ServerAuth) -> Self {
        Self::with_intervals(settings, UNKNOWN_KID_REFRESH, MAX_KEY_AGE)
    }

    /// An issuer whose keys are refreshed for an unknown key id at most once per `interval`
    /// (rather than [`UNKNOWN_KID_REFRESH`]).
    pub fn with_unknown_kid_refresh(settings: ServerAuth, interval: Duration) -> Self {
        Self::with_intervals(settings, interval, MAX_KEY_AGE)
    }

    fn with_intervals(
        settings: ServerAuth,
        refresh_interval: Duration,
        max_key_age: Duration,
    ) -> Self {
        install_crypto();
        let client = reqwest::Client::builder()
            .timeout(FETCH_TIMEOUT)
            .redirect(reqwest::redirect::Policy::limited(3))
            .build()
            // Building fails only when the TLS backend cannot start; a default client then
            // fails each fetch with the reason, which the refusal reports.
            .unwrap_or_default();
        Self {
            inner: Arc::new(Inner {
                cache: Mutex::new(KeyCache {
                    jwks_uri: settings.jwks_url.clone(),
                    ..KeyCache::default()
                }),
                settings,
                client,
                refresh_interval,
                max_key_age,
                retry_without_keys: RETRY_WITHOUT_KEYS,
            }),
        }
    }

    /// The settings it was made from.
    pub fn settings(&self) -> &ServerAuth {
        &self.inner.settings
    }

    /// Checks `token`; the principal it names, or why it is refused.
    pub async fn verify(&self, token: &str) -> Result<Principal, TokenRefusal> {
        let settings = self.settings();
        let header = jsonwebtoken::decode_header(token)
            .map_err(|e| TokenRefusal::Invalid(format!("not a signed JWT ({e})")))?;
        if matches!(
            header.alg,
            Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512
        ) {
            return Err(TokenRefusal::Invalid(format!(
                "`{:?}` is a shared-secret algorithm; this server accepts only tokens signed \
                 with the issuer's published keys",
                header.alg
            )));
        }
        let jwk = self.key_for(header.kid.as_deref()).await?;
        let (key, algorithms) = decoding_key(&jwk)?;
        if !algorithms.contains(&header.alg) {
            return Err(TokenRefusal::Invalid(format!(
                "the token says `{:?}`, which its key (`{}`) is not for",
                header.alg,
                jwk.common.key_id.as_deref().unwrap_or("without an id")
            )));
        }
        let mut validation = Validation::new(header.alg);
        validation.leeway = LEEWAY.as_secs();
        validation.validate_nbf = true;
        validation.set_issuer(&[&settings.issuer]);
        validation.set_audience(&[&settings.audience]);
        validation.set_required_spec_claims(&["exp", "iss", "aud"]);
        let claims = jsonwebtoken::decode::<Claims>(token, &key, &validation)
            .map_err(|e| TokenRefusal::Invalid(describe(&e, settings)))?
            .claims;
        let granted = granted_scopes(&claims);
        let missing: Vec<String> = settings
            .required_scopes
            .iter()
            .filter(|s| !granted.iter().any(|g| g == *s))
            .cloned()
            .collect();
        if !missing.is_empty() {
            return Err(TokenRefusal::InsufficientScope(missing));
        }
        Ok(Principal {
            name: None,
            owner: false,
            subject: claims.sub,
            client_id: claims.client_id.or(claims.azp),
            scopes: granted,
        })
    }

    /// The key a token names: from the cache; else, when nothing is cached or the id is
    /// unknown, after the one refresh under way or a new one (rate-limited). The wait is for a
    /// refresh that ends within [`REFRESH_TIMEOUT`], and happens at most once per token.
    async fn key_for(&self, kid: Option<&str>) -> Result<Jwk, TokenRefusal> {
        let mut waited = false;
        loop {
            match self.lookup(kid, waited) {
                Lookup::Found(jwk) => return Ok(jwk),
                Lookup::Refused(refusal) => return Err(refusal),
                Lookup::Wait(mut refreshing) => {
                    // An error means the refresh's task is gone without saying so, which its
                    // guard rules out; either way the refresh is over and the cache says how.
                    if refreshing.wait_for(|done| *done).await.is_err() {
                        tracing::debug!("the key refresh ended without a word");
                    }
                    waited = true;
                }
            }
        }
    }

    /// Decides, under the cache's lock and without waiting for anything, what a token with key
    /// id `kid` gets now; starts a refresh when one is due.
    fn lookup(&self, kid: Option<&str>, waited: bool) -> Lookup {
        let inner = &self.inner;
        let mut cache = inner.lock();
        let since_attempt = |cache: &KeyCache| cache.attempted.map(|at| at.elapsed());
        if cache.fetched.is_none() {
            if waited {
                return Lookup::Refused(keys_unavailable(&cache));
            }
            if let Some(refreshing) = &cache.refreshing {
                return Lookup::Wait(refreshing.clone());
            }
            if since_attempt(&cache).is_some_and(|since| since < inner.retry_without_keys) {
                return Lookup::Refused(keys_unavailable(&cache));
            }
            return Lookup::Wait(inner.start_refresh(&mut cache));
        }
        let may_refresh = cache.refreshing.is_none()
            && since_attempt(&cache).is_none_or(|since| since >= inner.refresh_interval);
        let stale = cache
            .fetched
            .is_some_and(|at| at.elapsed() >= inner.max_key_age);
        if stale && may_refresh {
            // In the background: the keys the issuer published last still vouch meanwhile.
            drop(inner.start_refresh(&mut cache));
        }
        if let Some(jwk) = find(&cache.keys, kid) {
            return Lookup::Found(jwk);
        }
        if kid.is_some() && !waited {
            if let Some(refreshing) = &cache.refreshing {
                return Lookup::Wait(refreshing.clone());
            }
            if may_refresh {
                return Lookup::Wait(inner.start_refresh(&mut cache));
            }
        }
        Lookup::Refused(TokenRefusal::Invalid(match kid {
            Some(kid) => format!("its key id `{kid}` is not one of the issuer's keys"),
            None => "it names no key id, and the issuer has more than one key".to_string(),
        }))
    }
}

/// `503`: no key set was ever fetched, with why the last attempt failed.
fn keys_unavailable(cache: &KeyCache) -> TokenRefusal {
    TokenRefusal::KeysUnavailable(
        cache
            .failure
            .clone()
            .unwrap_or_else(|| "the issuer's keys were not fetched yet".to_string()),
    )
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, KeyCache> {
        // The cache is consistent between statements: a panic elsewhere leaves it usable.
        self.cache.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Starts the one refresh (the caller checked none is under way) in a task of its own, so
    /// that it ends, and is recorded, even when the request that started it is gone.
    fn start_refresh(self: &Arc<Self>, cache: &mut KeyCache) -> watch::Receiver<bool> {
        let (done, refreshing) = watch::channel(false);
        cache.attempted = Some(Instant::now());
        cache.refreshing = Some(refreshing.clone());
        let jwks_uri = cache.jwks_uri.clone();
        let inner = Arc::clone(self);
        tokio::spawn(async move {
            let in_flight = InFlight {
                inner: Arc::clone(&inner),
                done,
            };
            let fetched =
                match tokio::time::timeout(REFRESH_TIMEOUT, inner.fetch_keys(jwks_uri)).await {
                    Ok(fetched) => fetched,
                    Err(_) => Err(format!(
                        "the issuer's keys did not arrive within {}s",
                        REFRESH_TIMEOUT.as_secs()
                    )),
                };
            {
                let mut cache = inner.lock();
                match fetched {
                    Ok((uri, keys)) => {
                        tracing::debug!(keys = keys.len(), %uri, "fetched the token issuer's keys");
                        cache.jwks_uri = Some(uri);
                        cache.keys = Arc::new(keys);
                        cache.fetched = Some(Instant::now());
                        cache.failure = None;
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "cannot refresh the token issuer's keys");
                        cache.failure = Some(e);
                    }
                }
            }
            drop(in_flight);
        });
        refreshing
    }

    /// The key set, and where it is (discovered first when not known yet).
    async fn fetch_keys(&self, jwks_uri: Option<String>) -> Result<(String, Vec<Jwk>), String> {
        let uri = match jwks_uri {
            Some(uri) => uri,
            None => self.discover_jwks_uri().await?,
        };
        let set = self.fetch_json(&uri).await?;
        let keys: Vec<Jwk> = set
            .get("keys")
            .and_then(Value::as_array)
            .ok_or_else(|| format!("`{uri}` is not a JWK Set (no `keys`)"))?
            .iter()
            // A key of a type this server does not know is skipped, not the whole set.
            .filter_map(|key| serde_json::from_value(key.clone()).ok())
            .collect();
        Ok((uri, keys))
    }

    /// The issuer's `jwks_uri`, from its metadata: RFC 8414 first, then OpenID Connect
    /// discovery (both the appended and the RFC 8414-style inserted form for an issuer with a
    /// path). The metadata must name this very issuer (RFC 8414 §3.3).
    async fn discover_jwks_uri(&self) -> Result<String, String> {
        let mut tried = Vec::new();
        for url in metadata_urls(&self.settings.issuer) {
            match self.fetch_json(&url).await {
                Ok(metadata) => {
                    let issuer = metadata.get("issuer").and_then(Value::as_str);
                    if issuer.map(|i| i.trim_end_matches('/'))
                        != Some(self.settings.issuer.trim_end_matches('/'))
                    {
                        tried.push(format!("{url}: names issuer {issuer:?}"));
                        continue;
                    }
                    if let Some(uri) = metadata.get("jwks_uri").and_then(Value::as_str) {
                        return Ok(uri.to_string());
                    }
                    tried.push(format!("{url}: has no `jwks_uri`"));
                }
                Err(e) => tried.push(e),
            }
        }
        Err(format!(
            "no metadata with a `jwks_uri` found for issuer `{}` (set `server.auth.jwksUrl`): {}",
            self.settings.issuer,
            tried.join("; ")
        ))
    }

    async fn fetch_json(&self, url: &str) -> Result<Value, String> {
        let mut response = self
            .client
            .get(url)
            .header(reqwest::header::ACCEPT, "application/json")
            .send()
            .await
            .map_err(|e| format!("{url}: {e}"))?;
        if !response.status().is_success() {
            return Err(format!("{url}: HTTP {}", response.status()));
        }
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|e| format!("{url}: {e}"))? {
            if body.len() + chunk.len() > MAX_DOCUMENT_BYTES {
                return Err(format!("{url}: larger than {MAX_DOCUMENT_BYTES} bytes"));
            }
            body.extend_from_slice(&chunk);
        }
        serde_json::from_slice(&body).map_err(|e| format!("{url}: not JSON ({e})"))
    }
}

/// The places an issuer's metadata may be, in the order MCP's authorization spec gives.
fn metadata_urls(issuer: &str) -> Vec<String> {
    let issuer = issuer.trim_end_matches('/');
    let (origin, path) = match issuer.split_once("://") {
        Some((scheme, rest)) => match rest.find('/') {
            Some(at) => (format!("{scheme}://{}", &rest[..at]), &rest[at..]),
            None => (issuer.to_string(), ""),
        },
        None => (issuer.to_string(), ""),
    };
    if path.is_empty() {
        vec![
            format!("{origin}/.well-known/oauth-authorization-server"),
            format!("{origin}/.well-known/openid-configuration"),
        ]
    } else {
        vec![
            format!("{origin}/.well-known/oauth-authorization-server{path}"),
            format!("{origin}/.well-known/openid-configuration{path}"),
            format!("{origin}{path}/.well-known/openid-configuration"),
        ]
    }
}

/// The key with id `kid`; without one, the only signing key.
fn find(keys: &[Jwk], kid: Option<&str>) -> Option<Jwk> {
    let mut signing = keys
        .iter()
        .filter(|k| k.common.public_key_use != Some(PublicKeyUse::Encryption));
    match kid {
        Some(kid) => signing
            .find(|k| k.common.key_id.as_deref() == Some(kid))
            .cloned(),
        None => {
            let mut all = signing;
            let only = all.next()?;
            all.next().is_none().then(|| only.clone())
        }
    }
}

/// The key and the algorithms it may check: those of its type and curve, narrowed to its own
/// `alg` when it states one.
fn decoding_key(jwk: &Jwk) -> Result<(DecodingKey, Vec<Algorithm>), TokenRefusal> {
    use Algorithm::*;
    let by_type: &[Algorithm] = match &jwk.algorithm {
        AlgorithmParameters::RSA(_) => &[RS256, RS384, RS512, PS256, PS384, PS512],
        AlgorithmParameters::EllipticCurve(ec) => match ec.curve {
            EllipticCurve::P256 => &[ES256],
            EllipticCurve::P384 => &[ES384],
            _ => &[],
        },
        AlgorithmParameters::OctetKeyPair(okp) if okp.curve == EllipticCurve::Ed25519 => &[EdDSA],
        // A symmetric key in a public key set would let anyone who reads the set sign tokens.
        _ => &[],
    };
    let mut algorithms = by_type.to_vec();
    if let Some(stated) = jwk.common.key_algorithm {
        let stated = Algorithm::try_from(stated).ok();
        algorithms.retain(|a| Some(*a) == stated);
    }
    if algorithms.is_empty() {
        return Err(TokenRefusal::Invalid(
            "its key is of a kind this server does not check tokens with".to_string(),
        ));
    }
    let key = DecodingKey::from_jwk(jwk)
        .map_err(|e| TokenRefusal::Invalid(format!("the issuer's key is unusable ({e})")))?;
    Ok((key, algorithms))
}

/// Every scope the token grants: `scope` (space-separated), and `scp` (a list, or a string).
fn granted_scopes(claims: &Claims) -> Vec<String> {
    let mut granted: Vec<String> = claims
        .scope
        .iter()
        .flat_map(|s| s.split_whitespace())
        .map(str::to_string)
        .collect();
    match &claims.scp {
        Some(Value::String(s)) => granted.extend(s.split_whitespace().map(str::to_string)),
        Some(Value::Array(items)) => {
            granted.extend(items.iter().filter_map(Value::as_str).map(str::to_string));
        }
        _ => {}
    }
    granted
}

/// What is wrong with a token, in words a client's log can show (never the token).
fn describe(error: &jsonwebtoken::errors::Error, settings: &ServerAuth) -> String {
    use jsonwebtoken::errors::ErrorKind;
    match error.kind() {
        ErrorKind::ExpiredSignature => "it has expired".to_string(),
        ErrorKind::ImmatureSignature => "it is not valid yet (`nbf`)".to_string(),
        ErrorKind::InvalidSignature => "its signature does not check".to_string(),
        ErrorKind::InvalidIssuer => format!("it was not issued by `{}`", settings.issuer),
        ErrorKind::InvalidAudience => format!("it is not for audience `{}`", settings.audience),
        ErrorKind::MissingRequiredClaim(claim) => format!("it has no `{claim}` claim"),
        ErrorKind::InvalidAlgorithm => "its algorithm does not match its key".to_string(),
        other => format!("{other:?}"),
    }
}

/// `jsonwebtoken` picks its crypto backend from its features, and panics on first use when
/// another crate of the build turns on the second one; installing aws-lc-rs (rustls's) here
/// makes the choice explicit.
fn install_crypto() {
    static INSTALLED: std::sync::Once = std::sync::Once::new();
    INSTALLED.call_once(|| {
        let _ = jsonwebtoken::crypto::aws_lc::DEFAULT_PROVIDER.install_default();
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_is_looked_for_where_the_spec_says_in_its_order() {
        assert_eq!(
            metadata_urls("https://login.example.com/"),
            [
                "https://login.example.com/.well-known/oauth-authorization-server",
                "https://login.example.com/.well-known/openid-configuration",
            ]
        );
        assert_eq!(
            metadata_urls("https://login.example.com/realms/team"),
            [
                "https://login.example.com/.well-known/oauth-authorization-server/realms/team",
                "https://login.example.com/.well-known/openid-configuration/realms/team",
                "https://login.example.com/realms/team/.well-known/openid-configuration",
            ]
        );
    }

    #[test]
    fn scopes_are_read_from_scope_and_scp() {
        let claims: Claims = serde_json::from_value(serde_json::json!({
            "scope": "a b", "scp": ["c"]
        }))
        .expect("claims");
        assert_eq!(granted_scopes(&claims), ["a", "b", "c"]);
        let claims: Claims =
            serde_json::from_value(serde_json::json!({"scp": "d e"})).expect("claims");
        assert_eq!(granted_scopes(&claims), ["d", "e"]);
    }

    /// The admin scope is read from the scopes the verified token grants, whole words only.
    #[test]
    fn an_admin_scope_is_granted_by_a_whole_scope_only() {
        let holder = |scopes: &[&str]| Principal {
            subject: None,
            client_id: None,
            scopes: scopes.iter().map(|s| s.to_string()).collect(),
            ..Principal::default()
        };
        let admin = ["toolmux:admin".to_string()];
        assert!(holder(&["tools", "toolmux:admin"]).grants_any(&admin));
        assert!(!holder(&["tools", "toolmux:administrator"]).grants_any(&admin));
        assert!(!holder(&["toolmux:admin"]).grants_any(&[]));
    }

    #[test]
    fn a_symmetric_key_never_checks_a_token() {
        let jwk: Jwk = serde_json::from_value(serde_json::json!({
            "kty": "oct", "k": "c2VjcmV0", "kid": "k"
        }))
        .expect("jwk");
        assert!(decoding_key(&jwk).is_err());
    }

    #[tokio::test]
    async fn unsigned_and_shared_secret_tokens_are_refused_before_any_key_is_fetched() {
        use base64::Engine as _;
        let b64 = |v: serde_json::Value| {
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string())
        };
        let issuer = TokenIssuer::new(ServerAuth {
            // Nothing listens here: a fetch would fail as `KeysUnavailable`, not `Invalid`.
            issuer: "http://127.0.0.1:9".into(),
            audience: "a".into(),
            required_scopes: Vec::new(),
            jwks_url: None,
        });
        let claims =
            b64(serde_json::json!({"iss": "http://127.0.0.1:9", "aud": "a", "exp": 9999999999u64}));
        let none = format!("{}.{claims}.", b64(serde_json::json!({"alg": "none"})));
        let hs = format!("{}.{claims}.c2ln", b64(serde_json::json!({"alg": "HS256"})));
        for token in [none, hs, "not-a-jwt".to_string()] {
            let refused = issuer.verify(&token).await;
            assert!(
                matches!(refused, Err(TokenRefusal::Invalid(_))),
                "{token}: {refused:?}"
            );
        }
    }

    /// An issuer on loopback that publishes RFC 8414 metadata and an empty key set, counting
    /// the fetches of the key set.
    /// The first `answered` fetches of the key set get it; the later ones `500`.
    async fn counting_issuer(answered: usize) -> (String, Arc<std::sync::atomic::AtomicUsize>) {
        use axum::routing::get;
        use std::sync::atomic::{AtomicUsize, Ordering};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let base = format!("http://{}", listener.local_addr().expect("address"));
        let fetches = Arc::new(AtomicUsize::new(0));
        let metadata = serde_json::json!({"issuer": base, "jwks_uri": format!("{base}/keys")});
        let counter = Arc::clone(&fetches);
        let app = axum::Router::new()
            .route(
                "/.well-known/oauth-authorization-server",
                get(move || async move { axum::Json(metadata) }),
            )
            .route(
                "/keys",
                get(move || async move {
                    let earlier = counter.fetch_add(1, Ordering::SeqCst);
                    if earlier >= answered {
                        return Err(axum::http::StatusCode::INTERNAL_SERVER_ERROR);
                    }
                    Ok(axum::Json(serde_json::json!({"keys": []})))
                }),
            );
        tokio::spawn(async move { axum::serve(listener, app).await });
        (base, fetches)
    }

    fn unknown_kid_token() -> String {
        use base64::Engine as _;
        let b64 = |v: serde_json::Value| {
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string())
        };
        format!(
            "{}.{}.c2ln",
            b64(serde_json::json!({"alg": "RS256", "kid": "rotated"})),
            b64(serde_json::json!({"sub": "x"}))
        )
    }

    #[tokio::test]
    async fn an_unknown_key_id_refreshes_the_keys_at_most_once_per_interval() {
        use std::sync::atomic::Ordering;
        let (base, fetches) = counting_issuer(usize::MAX).await;
        let settings = settings(&base);
        let issuer = TokenIssuer::new(settings.clone());
        for _ in 0..3 {
            let refused = issuer.verify(&unknown_kid_token()).await;
            assert!(
                matches!(refused, Err(TokenRefusal::Invalid(_))),
                "{refused:?}"
            );
        }
        assert_eq!(
            fetches.load(Ordering::SeqCst),
            1,
            "found through RFC 8414 metadata, fetched once, and not again within the interval"
        );
        let eager = TokenIssuer::with_intervals(settings, Duration::ZERO, MAX_KEY_AGE);
        for _ in 0..2 {
            let _ = eager.verify(&unknown_kid_token()).await;
        }
        assert_eq!(
            fetches.load(Ordering::SeqCst),
            3,
            "the first fetch (which the first token waited for, once), then one more for the \
             second token's unknown key id"
        );
    }

    fn settings(base: &str) -> ServerAuth {
        ServerAuth {
            issuer: base.to_string(),
            audience: "a".into(),
            required_scopes: Vec::new(),
            jwks_url: None,
        }
    }

    /// Issue 28, D28: with a stale key set and an issuer that fails, every request tried the
    /// refresh again, in turn, under the cache's lock. Now a failed refresh is retried once per
    /// interval, and the tokens are checked against the cached keys meanwhile.
    #[tokio::test]
    async fn a_stale_key_set_whose_issuer_fails_is_refreshed_once_per_interval_not_per_request() {
        use std::sync::atomic::Ordering;
        let (base, fetches) = counting_issuer(1).await;
        // Every key set is stale at once; a failed refresh waits the usual interval.
        let issuer =
            TokenIssuer::with_intervals(settings(&base), UNKNOWN_KID_REFRESH, Duration::ZERO);
        let first = issuer.verify(&unknown_kid_token()).await;
        assert!(matches!(first, Err(TokenRefusal::Invalid(_))), "{first:?}");
        assert_eq!(
            fetches.load(Ordering::SeqCst),
            1,
            "the first fetch succeeds"
        );
        // As if that fetch were an interval ago: the next request may refresh.
        issuer.inner.lock().attempted = Instant::now().checked_sub(UNKNOWN_KID_REFRESH);
        for _ in 0..10 {
            let refused = issuer.verify(&unknown_kid_token()).await;
            // Checked against the cached (empty) set: refused as a token, not as `503`.
            assert!(
                matches!(refused, Err(TokenRefusal::Invalid(_))),
                "{refused:?}"
            );
        }
        // The one refresh the second request started in the background has failed (or is
        // failing); no request after it started another.
        let refreshing = issuer.inner.lock().refreshing.clone();
        if let Some(mut refreshing) = refreshing {
            let _ = refreshing.wait_for(|done| *done).await;
        }
        assert_eq!(fetches.load(Ordering::SeqCst), 2);
        assert!(issuer.inner.lock().failure.is_some(), "the failure is kept");
    }

    /// With no key set ever fetched and an issuer that fails, a token is refused with `503`
    /// and why, without asking the issuer again before [`RETRY_WITHOUT_KEYS`].
    #[tokio::test]
    async fn without_keys_a_failing_issuer_is_not_asked_once_per_request() {
        use std::sync::atomic::Ordering;
        let (base, fetches) = counting_issuer(0).await;
        let issuer = TokenIssuer {
            inner: Arc::new(Inner {
                retry_without_keys: Duration::from_secs(3600),
                ..Arc::into_inner(TokenIssuer::new(settings(&base)).inner).expect("one owner")
            }),
        };
        for _ in 0..5 {
            let refused = issuer.verify(&unknown_kid_token()).await;
            assert!(
                matches!(&refused, Err(TokenRefusal::KeysUnavailable(why)) if why.contains("HTTP 500")),
                "{refused:?}"
            );
        }
        assert_eq!(fetches.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn a_caller_is_named_by_subject_and_client() {
        let p = Principal {
            subject: Some("alice".into()),
            client_id: Some("app".into()),
            scopes: Vec::new(),
            ..Principal::default()
        };
        assert_eq!(p.caller(), "alice (client app)");
        assert_eq!(Principal::of_key("ci-bot").caller(), "ci-bot");
    }
}
