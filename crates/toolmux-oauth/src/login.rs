//! Signing in: the authorization-code flow with PKCE through a loopback redirect, or the client
//! credentials grant when the configuration asks for it.
//!
//! rmcp runs the protocol (`AuthorizationSession`); it leaves the redirect to its caller, and so
//! does this module's caller only in part: [`start_login`] opens the listener on an ephemeral
//! port of 127.0.0.1 (RFC 8252's loopback redirect), gets the authorization URL, and returns a
//! [`PendingLogin`] whose [`PendingLogin::finish`] waits for the browser to come back, exchanges
//! the code and stores the tokens. The CLI opens the URL and waits; the REST API answers with
//! the URL and lets the flow finish in the background.
//!
//! The listener's port is no secret: any local process or web page may request it. Only a
//! redirect carrying this sign-in's `state` (unguessable, compared in constant time) ends the
//! wait, with its `code` or its `error`; every other request is answered and ignored, so that
//! nobody but the authorization server can end or spoil the sign-in. The browser's page says
//! how the sign-in really ended, once the code has been exchanged (or refused).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, Uri};
use axum::response::Html;
use axum::routing::get;
use rmcp::transport::auth::{
    AuthorizationManager, AuthorizationRequest, AuthorizationSession, ClientCredentialsConfig,
    CredentialStore, WWWAuthenticateParams,
};
use tokio::net::TcpListener;
use tokio::sync::oneshot;

use crate::store::SecretCredentialStore;
use crate::{OAuthError, OAuthGrant, Target, state};

/// The path of the loopback redirect.
const CALLBACK_PATH: &str = "/callback";
/// How long a probe of the server for its 401 challenge may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(15);
/// How long the browser's page waits to say how the sign-in ended (the code's exchange).
const OUTCOME_WAIT: Duration = Duration::from_secs(60);
/// The most of an authorization server's `error_description` repeated in an error.
const MAX_DESCRIPTION_CHARS: usize = 300;
/// How long a finished sign-in waits for its redirect listener to write its last page.
const LISTENER_STOP: Duration = Duration::from_secs(3);

/// A sign-in under way: the URL a person opens, and the flow to finish once they come back.
pub struct PendingLogin {
    server: String,
    /// `None` for the client credentials grant, which needs no person (already finished).
    authorization_url: Option<String>,
    /// Finishes the flow with the redirect, once it comes.
    flow: Option<Flow>,
}

struct Flow {
    session: AuthorizationSession,
    redirect: oneshot::Receiver<Redirect>,
    shutdown: oneshot::Sender<()>,
    listener: ListenerTask,
    target: Target,
}

/// The redirect listener's task, kept until it has ended: a sign-in that finishes (or fails)
/// stops it and waits for it, and one dropped unfinished aborts it, so no sign-in leaves a
/// listening socket behind in a process that goes on (`toolmux serve` signs in from the REST
/// API).
struct ListenerTask(tokio::task::JoinHandle<()>);

impl ListenerTask {
    /// Stops the listener: gracefully, so that the pages in flight (the outcome's among them)
    /// are written, for at most [`LISTENER_STOP`] — a browser that never reads its page cannot
    /// hold the sign-in longer — then by aborting it. Returns once the task has ended and its
    /// socket is closed.
    async fn stop(mut self, shutdown: oneshot::Sender<()>) {
        // The listener may have stopped already; then nobody hears this.
        let _ = shutdown.send(());
        match tokio::time::timeout(LISTENER_STOP, &mut self.0).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::warn!(error = %e, "the sign-in redirect listener failed"),
            Err(_) => {
                tracing::warn!(
                    "the sign-in redirect listener did not stop within {LISTENER_STOP:?}; it is \
                     aborted"
                );
                self.0.abort();
                if let Err(e) = (&mut self.0).await
                    && !e.is_cancelled()
                {
                    tracing::warn!(error = %e, "the sign-in redirect listener failed");
                }
            }
        }
    }
}

impl Drop for ListenerTask {
    fn drop(&mut self) {
        // Ended already after `stop`; else the sign-in was dropped unfinished.
        self.0.abort();
    }
}

/// The redirect that carried this sign-in's `state`, and where its page learns the outcome.
struct Redirect {
    url: String,
    outcome: oneshot::Sender<Result<(), String>>,
}

impl std::fmt::Debug for PendingLogin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PendingLogin")
            .field("server", &self.server)
            .field("authorization_url", &self.authorization_url)
            .finish_non_exhaustive()
    }
}

impl PendingLogin {
    /// The URL to open in a browser; `None` when no person is needed (client credentials).
    pub fn authorization_url(&self) -> Option<&str> {
        self.authorization_url.as_deref()
    }

    /// Waits (at most `wait`) for the browser's redirect with this sign-in's `state`, exchanges
    /// the code for tokens and keeps them in the secret store. A redirect with an `error` ends
    /// the sign-in with that error. Either way the browser's page says how it ended.
    pub async fn finish(self, wait: Duration) -> Result<(), OAuthError> {
        let Some(Flow {
            session,
            redirect,
            shutdown,
            listener,
            target,
        }) = self.flow
        else {
            return Ok(());
        };
        let redirect_error = |message: String| OAuthError::Redirect {
            server: target.server.clone(),
            message,
        };
        let redirected = tokio::time::timeout(wait, redirect).await;
        let redirect = match redirected {
            Ok(Ok(redirect)) => redirect,
            Ok(Err(_)) => {
                listener.stop(shutdown).await;
                return Err(redirect_error("the redirect listener stopped".into()));
            }
            Err(_) => {
                listener.stop(shutdown).await;
                return Err(redirect_error(format!(
                    "nobody finished signing in within {}s; run `toolmux mcp login {}` again",
                    wait.as_secs(),
                    target.server
                )));
            }
        };
        let outcome = complete(&session, &redirect.url, &target).await;
        // The page is waiting for this; a browser closed meanwhile leaves nobody to tell.
        let _ = redirect
            .outcome
            .send(outcome.as_ref().map(|_| ()).map_err(ToString::to_string));
        listener.stop(shutdown).await;
        outcome
    }
}

/// The sign-in's end, from the redirect that carried its `state`: the authorization server's
/// refusal (`error`), or the code exchanged for tokens, which are kept.
async fn complete(
    session: &AuthorizationSession,
    url: &str,
    target: &Target,
) -> Result<(), OAuthError> {
    if let Some(refusal) = refusal(url) {
        let (error, description) = refusal;
        return Err(OAuthError::Refused {
            server: target.server.clone(),
            error,
            description,
        });
    }
    session
        .handle_callback_url(url)
        .await
        .map_err(|e| OAuthError::flow(&target.server, e))?;
    state::signed_in(&target.project_dir, &target.server);
    Ok(())
}

/// The authorization server's `error` and `error_description` (RFC 6749 §4.1.2.1), when the
/// redirect carries one, made fit for a terminal: no control characters, a bounded length.
fn refusal(url: &str) -> Option<(String, Option<String>)> {
    let url = url::Url::parse(url).ok()?;
    let param = |name: &str| {
        url.query_pairs()
            .find(|(key, _)| key == name)
            .map(|(_, value)| crate::printable(&value, MAX_DESCRIPTION_CHARS))
    };
    Some((param("error")?, param("error_description")))
}

/// Starts signing in to `target`: discovery from the server's 401 challenge (or the one it gave
/// last, so a step-up asks for the scopes a 403 named), the client identity the configuration
/// and the authorization server allow, and the authorization URL with a loopback redirect.
/// With `grant: "client_credentials"` the tokens are fetched at once.
pub async fn start_login(target: &Target) -> Result<PendingLogin, OAuthError> {
    let server = target.server.clone();
    let flow_error = |e| OAuthError::flow(&server, e);
    let store = SecretCredentialStore::open(&target.project_dir, &target.server)?;
    let challenge = match state::read(&target.project_dir, &target.server).challenge {
        Some(challenge) => Some(challenge),
        None => probe(&target.url).await,
    };
    let mut manager = AuthorizationManager::new(target.url.as_str())
        .await
        .map_err(flow_error)?;
    manager.set_credential_store(store.clone());
    let resolution = manager
        .resolve_metadata_from_challenge(challenge.as_deref())
        .await
        .map_err(flow_error)?;
    // No metadata anywhere: rmcp guessed the endpoints from the URL (2025-03-26's fallback,
    // which old servers still rely on). If they fail, that is said as such.
    let guessed = resolution.source
        == rmcp::transport::auth::AuthorizationMetadataSource::LegacyEndpointFallback;
    manager.set_metadata(resolution.metadata);
    let settings = &target.settings;

    if settings.grant == OAuthGrant::ClientCredentials {
        client_credentials(&mut manager, target).await?;
        state::signed_in(&target.project_dir, &target.server);
        return Ok(PendingLogin {
            server,
            authorization_url: None,
            flow: None,
        });
    }

    // Bound before the authorization URL exists: the redirect URI names its port.
    let listener = TcpListener::bind(("127.0.0.1", 0))
        .await
        .map_err(|e| OAuthError::Redirect {
            server: server.clone(),
            message: format!("cannot open the loopback redirect listener: {e}"),
        })?;
    let port = listener
        .local_addr()
        .map_err(|e| OAuthError::Redirect {
            server: server.clone(),
            message: format!("cannot read the redirect listener's port: {e}"),
        })?
        .port();
    let base = format!("http://127.0.0.1:{port}");
    let redirect_uri = format!("{base}{CALLBACK_PATH}");

    let mut request = AuthorizationRequest::new(redirect_uri).with_client_name("toolmux");
    if let Some(id) = &settings.client_id {
        request = request.with_preregistered_client(id.clone());
        if let Some(secret) = &settings.client_secret {
            request = request.with_client_secret(secret.clone());
        }
    }
    if let Some(url) = &settings.client_metadata_url {
        request = request.with_client_metadata_url(url.clone());
    }
    // The configured scopes; else, after a 403 `insufficient_scope`, what was granted plus
    // what the server now names (a step-up keeps what the person already allowed); else the
    // spec's initial choice: the 401's scopes, else the resource's `scopes_supported`, else none.
    if !settings.scopes.is_empty() {
        request = request.with_scopes(settings.scopes.clone());
    } else if let Some(scopes) = step_up_scopes(challenge.as_deref(), &target.url, &store).await {
        request = request.with_scopes(scopes);
    } else {
        request = request.with_initial_scope_selection();
    }
    let session = AuthorizationSession::new(manager, request)
        .await
        .map_err(|(_, e)| {
            if guessed {
                OAuthError::no_authorization_server(&server, &target.url, e)
            } else {
                flow_error(e)
            }
        })?;
    let authorization_url = session.get_authorization_url().to_string();

    // rmcp puts the CSRF state it will check in the URL; the listener waits for that one.
    let expected_state = url::Url::parse(&authorization_url)
        .ok()
        .and_then(|url| {
            url.query_pairs()
                .find(|(key, _)| key == "state")
                .map(|(_, value)| value.into_owned())
        })
        .filter(|state| !state.is_empty())
        .ok_or_else(|| OAuthError::Redirect {
            server: server.clone(),
            message: "the authorization URL carries no `state` to recognise the redirect by"
                .to_string(),
        })?;
    let (redirect_tx, redirect) = oneshot::channel();
    let (shutdown, stop) = oneshot::channel::<()>();
    let app = Router::new()
        .route(CALLBACK_PATH, get(callback))
        .with_state(Callback {
            base,
            state: Arc::from(expected_state),
            sender: Arc::new(Mutex::new(Some(redirect_tx))),
        });
    let listener = ListenerTask(tokio::spawn(async move {
        let served = axum::serve(listener, app)
            .with_graceful_shutdown(async {
                let _ = stop.await;
            })
            .await;
        if let Err(e) = served {
            tracing::warn!(error = %e, "the sign-in redirect listener failed");
        }
    }));
    Ok(PendingLogin {
        server,
        authorization_url: Some(authorization_url),
        flow: Some(Flow {
            session,
            redirect,
            shutdown,
            listener,
            target: target.clone(),
        }),
    })
}

/// The redirect listener's state: where it listens, the `state` it waits for, and where that
/// one redirect goes.
#[derive(Clone)]
struct Callback {
    base: String,
    state: Arc<str>,
    sender: Arc<Mutex<Option<oneshot::Sender<Redirect>>>>,
}

/// A request to the redirect listener. Without this sign-in's `state` it is ignored (the
/// sign-in goes on waiting); with it, it ends the wait, and the page says how the sign-in
/// ended: signed in, or the error.
async fn callback(State(callback): State<Callback>, uri: Uri) -> (StatusCode, Html<String>) {
    let state = uri.query().and_then(|query| {
        url::form_urlencoded::parse(query.as_bytes())
            .find(|(key, _)| key == "state")
            .map(|(_, value)| value.into_owned())
    });
    let ours = state.is_some_and(|state| {
        bool::from(subtle::ConstantTimeEq::ct_eq(
            state.as_bytes(),
            callback.state.as_bytes(),
        ))
    });
    if !ours {
        tracing::warn!(
            "a request to the sign-in redirect listener without this sign-in's state was ignored"
        );
        return page(
            StatusCode::BAD_REQUEST,
            "This is not the sign-in toolmux is waiting for; it was ignored.",
        );
    }
    let sender = callback
        .sender
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .take();
    let Some(sender) = sender else {
        return page(StatusCode::OK, "This sign-in has already finished.");
    };
    let (outcome, told) = oneshot::channel();
    let redirect = Redirect {
        url: format!("{}{uri}", callback.base),
        outcome,
    };
    if sender.send(redirect).is_err() {
        return page(
            StatusCode::GONE,
            "toolmux stopped waiting for this sign-in; sign in again from toolmux.",
        );
    }
    match tokio::time::timeout(OUTCOME_WAIT, told).await {
        Ok(Ok(Ok(()))) => page(
            StatusCode::OK,
            "Signed in: you can close this window and return to toolmux.",
        ),
        Ok(Ok(Err(why))) => page(StatusCode::BAD_REQUEST, &format!("Sign-in failed: {why}")),
        Ok(Err(_)) | Err(_) => page(
            StatusCode::GATEWAY_TIMEOUT,
            "toolmux has not said how the sign-in ended; see its output.",
        ),
    }
}

/// The listener's page: one sentence, escaped (it may repeat an authorization server's words).
fn page(status: StatusCode, sentence: &str) -> (StatusCode, Html<String>) {
    let sentence = html_escape::encode_text(sentence);
    (
        status,
        Html(format!(
            "<!doctype html><meta charset=\"utf-8\"><title>toolmux</title><p>{sentence}</p>"
        )),
    )
}

/// The scopes of a step-up: those granted before and those a 403 `insufficient_scope`
/// challenge names. `None` when the challenge is not a step-up.
async fn step_up_scopes(
    challenge: Option<&str>,
    url: &str,
    store: &SecretCredentialStore,
) -> Option<Vec<String>> {
    let base = url::Url::parse(url).ok()?;
    let params = WWWAuthenticateParams::parse(challenge?, &base);
    if !params.is_insufficient_scope() {
        return None;
    }
    let mut scopes = match store.load().await {
        Ok(Some(stored)) => stored.granted_scopes,
        _ => Vec::new(),
    };
    for scope in params
        .scope
        .as_deref()
        .unwrap_or_default()
        .split_whitespace()
    {
        if !scopes.iter().any(|s| s == scope) {
            scopes.push(scope.to_string());
        }
    }
    (!scopes.is_empty()).then_some(scopes)
}

/// The client credentials grant: `clientId` and `clientSecret` for a token, `resource` set to
/// the server (RFC 8707), kept by the manager's credential store.
pub(crate) async fn client_credentials(
    manager: &mut AuthorizationManager,
    target: &Target,
) -> Result<(), OAuthError> {
    let settings = &target.settings;
    let (Some(client_id), Some(client_secret)) = (&settings.client_id, &settings.client_secret)
    else {
        // The configuration's check refuses this combination; a hand-built target may not.
        return Err(OAuthError::Store {
            server: target.server.clone(),
            message: "the client credentials grant needs `oauth.clientId` and \
                      `oauth.clientSecret`"
                .to_string(),
        });
    };
    let config = ClientCredentialsConfig::ClientSecret {
        client_id: client_id.clone(),
        client_secret: client_secret.clone(),
        scopes: settings.scopes.clone(),
        resource: Some(target.url.clone()),
    };
    let flow_error = |e| OAuthError::flow(&target.server, e);
    manager
        .validate_client_credentials_metadata(&config)
        .map_err(flow_error)?;
    manager
        .configure_client_credentials(&config)
        .map_err(flow_error)?;
    manager
        .exchange_client_credentials(&config)
        .await
        .map_err(flow_error)?;
    Ok(())
}

/// The server's `WWW-Authenticate` challenge to a request without a token: an `initialize` POST
/// (streamable HTTP), then a GET (legacy SSE). `None` when neither is refused with 401, or the
/// server cannot be reached; discovery then starts from the well-known paths.
async fn probe(url: &str) -> Option<String> {
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(PROBE_TIMEOUT)
        .build()
        .ok()?;
    let initialize = serde_json::json!({
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "toolmux", "version": env!("CARGO_PKG_VERSION")}
        }
    });
    let attempts = [
        client
            .post(url)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .body(initialize.to_string()),
        client.get(url).header("accept", "text/event-stream"),
    ];
    for attempt in attempts {
        let Ok(response) = attempt.send().await else {
            continue;
        };
        if response.status() == reqwest::StatusCode::UNAUTHORIZED {
            return response
                .headers()
                .get(reqwest::header::WWW_AUTHENTICATE)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_redirect_is_read_and_cleaned_for_a_terminal() {
        assert_eq!(
            refusal("http://127.0.0.1:1/callback?code=c&state=s"),
            None,
            "a code is no refusal"
        );
        assert_eq!(
            refusal("http://127.0.0.1:1/callback?error=access_denied&state=s"),
            Some(("access_denied".to_string(), None))
        );
        let long = "x".repeat(MAX_DESCRIPTION_CHARS + 50);
        let (error, description) = refusal(&format!(
            "http://127.0.0.1:1/callback?error=bad%1b%5B31m&error_description=a%0Ab{long}&state=s"
        ))
        .expect("a refusal");
        assert_eq!(error, "bad[31m", "no escape sequence reaches the terminal");
        let description = description.expect("a description");
        assert!(description.starts_with("ab") && description.ends_with('…'));
        assert_eq!(description.chars().count(), MAX_DESCRIPTION_CHARS + 1);
    }

    #[test]
    fn the_page_escapes_what_it_repeats() {
        let (status, Html(page)) = page(StatusCode::BAD_REQUEST, "Sign-in failed: <script>");
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert!(page.contains("&lt;script&gt;") && !page.contains("<script>"));
    }
}
