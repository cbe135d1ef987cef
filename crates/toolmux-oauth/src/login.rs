//! Signing in: the authorization-code flow with PKCE through a loopback redirect, or the client
//! credentials grant when the configuration asks for it.
//!
//! rmcp runs the protocol (`AuthorizationSession`); it leaves the redirect to its caller, and so
//! does this module's caller only in part: [`start_login`] opens the listener on an ephemeral
//! port of 127.0.0.1 (RFC 8252's loopback redirect), gets the authorization URL, and returns a
//! [`PendingLogin`] whose [`PendingLogin::finish`] waits for the browser to come back, exchanges
//! the code and stores the tokens. The CLI opens the URL and waits; the REST API answers with
//! the URL and lets the flow finish in the background.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::Uri;
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
    redirect: oneshot::Receiver<String>,
    shutdown: oneshot::Sender<()>,
    target: Target,
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

    /// Waits (at most `wait`) for the browser's redirect, exchanges the code for tokens and
    /// keeps them in the secret store.
    pub async fn finish(self, wait: Duration) -> Result<(), OAuthError> {
        let Some(flow) = self.flow else {
            return Ok(());
        };
        let redirect_error = |message: String| OAuthError::Redirect {
            server: flow.target.server.clone(),
            message,
        };
        let redirected = tokio::time::timeout(wait, flow.redirect).await;
        let _ = flow.shutdown.send(());
        let url = match redirected {
            Ok(Ok(url)) => url,
            Ok(Err(_)) => return Err(redirect_error("the redirect listener stopped".into())),
            Err(_) => {
                return Err(redirect_error(format!(
                    "nobody finished signing in within {}s; run `toolmux mcp login {}` again",
                    wait.as_secs(),
                    flow.target.server
                )));
            }
        };
        flow.session
            .handle_callback_url(&url)
            .await
            .map_err(|e| OAuthError::flow(&flow.target.server, e))?;
        state::signed_in(&flow.target.project_dir, &flow.target.server);
        Ok(())
    }
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
        .map_err(|(_, e)| flow_error(e))?;
    let authorization_url = session.get_authorization_url().to_string();

    let (redirect_tx, redirect) = oneshot::channel();
    let (shutdown, stop) = oneshot::channel::<()>();
    let app = Router::new()
        .route(CALLBACK_PATH, get(callback))
        .with_state(Callback {
            base,
            sender: Arc::new(Mutex::new(Some(redirect_tx))),
        });
    tokio::spawn(async move {
        let served = axum::serve(listener, app)
            .with_graceful_shutdown(async {
                let _ = stop.await;
            })
            .await;
        if let Err(e) = served {
            tracing::warn!(error = %e, "the sign-in redirect listener failed");
        }
    });
    Ok(PendingLogin {
        server,
        authorization_url: Some(authorization_url),
        flow: Some(Flow {
            session,
            redirect,
            shutdown,
            target: target.clone(),
        }),
    })
}

/// The redirect listener's state: where it listens, and where the one redirect goes.
#[derive(Clone)]
struct Callback {
    base: String,
    sender: Arc<Mutex<Option<oneshot::Sender<String>>>>,
}

async fn callback(State(callback): State<Callback>, uri: Uri) -> Html<&'static str> {
    let sender = callback
        .sender
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .take();
    match sender {
        Some(sender) => {
            let _ = sender.send(format!("{}{uri}", callback.base));
            Html(
                "<!doctype html><title>toolmux</title><p>Signed in: you can close this window and return to toolmux.</p>",
            )
        }
        None => {
            Html("<!doctype html><title>toolmux</title><p>This sign-in has already finished.</p>")
        }
    }
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
