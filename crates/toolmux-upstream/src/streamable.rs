//! The HTTP client under rmcp's streamable-HTTP transport: reqwest, plus one ordering rule.
//!
//! After the handshake rmcp opens the session's standalone GET event stream in a task of its
//! own, so the GET can reach the server *after* the first request. A server that resumes an
//! interrupted response stream on "the next GET" (as the conformance suite's SEP-1699 server
//! does) then sends the response on the standalone stream, and the client never exercises the
//! `retry:` / `Last-Event-ID` resumption; any server-initiated message sent while the GET is
//! still in flight is delivered late. So the first request of a session waits (briefly, at most
//! [`STANDALONE_STREAM_WAIT`]) until the standalone stream has been answered.
//!
//! It is also where a server's OAuth happens: requests go through rmcp's `AuthClient` (a token
//! when one is kept, refreshed before it expires and once on a 401), and a 401 or 403
//! `insufficient_scope` that refreshing could not answer is recorded as "needs sign-in" with
//! its challenge (`toolmux_oauth::record_challenge`), which `toolmux mcp login` starts from.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use futures::stream::BoxStream;
use http::{HeaderName, HeaderValue};
use rmcp::model::{ClientJsonRpcMessage, ClientRequest};
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
};
use sse_stream::Sse;
use tokio::sync::watch;
use toolmux_oauth::{AuthClient, AuthorizationManager};

/// The longest the first request of a session waits for the standalone stream; a server that
/// is slow to answer the GET delays one request by this much, never more.
const STANDALONE_STREAM_WAIT: Duration = Duration::from_millis(500);
/// The most redirects followed for one request (as rmcp's own client).
const MAX_REDIRECTS: usize = 10;

/// reqwest, configured as rmcp configures it, with the first request of a session held until
/// the session's standalone GET stream has been answered (opened or refused).
#[derive(Clone)]
pub(crate) struct OrderedClient {
    inner: Signed,
    /// `true` once the first standalone GET of this transport has been answered.
    standalone_answered: Arc<watch::Sender<bool>>,
    /// Where a refusal (401, 403 `insufficient_scope`) is recorded.
    refusals: Option<Arc<Refusals>>,
}

/// reqwest alone, or under rmcp's `AuthClient` for a server toolmux signs in to.
#[derive(Clone)]
enum Signed {
    Plain(reqwest::Client),
    OAuth(AuthClient<reqwest::Client>),
}

/// The server whose refusals are recorded, and its project.
pub(crate) struct Refusals {
    pub project_dir: PathBuf,
    pub server: String,
}

/// Calls the same method on whichever client signs the requests.
macro_rules! via {
    ($self:ident . $method:ident ( $($arg:expr),* )) => {{
        let result = match &$self.inner {
            Signed::Plain(client) => client.$method($($arg),*).await,
            Signed::OAuth(client) => client.$method($($arg),*).await,
        };
        $self.watch(result)
    }};
}

/// The redirect policy of every HTTP transport toolmux speaks to an upstream with: only
/// same-origin 307/308 redirects (which keep method and body), so neither a session id nor the
/// configured headers (with the secrets in them) are ever handed to another host.
pub(crate) fn same_origin_redirects() -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(|attempt| {
        let keeps_body = matches!(
            attempt.status(),
            reqwest::StatusCode::TEMPORARY_REDIRECT | reqwest::StatusCode::PERMANENT_REDIRECT
        );
        let same_origin = attempt
            .previous()
            .first()
            .is_some_and(|first| first.origin() == attempt.url().origin());
        if !keeps_body || !same_origin {
            attempt.stop()
        } else if attempt.previous().len() > MAX_REDIRECTS {
            attempt.error(format!("exceeded {MAX_REDIRECTS} redirects"))
        } else {
            attempt.follow()
        }
    })
}

impl OrderedClient {
    /// A client that signs its requests with `oauth` (when given) and records refusals for
    /// `refusals` (when given).
    pub(crate) fn new(
        oauth: Option<AuthorizationManager>,
        refusals: Option<Refusals>,
    ) -> reqwest::Result<Self> {
        // As rmcp's default client: no idle pooling (avoids delayed-ACK stalls on reused
        // connections), and only same-origin 307/308 redirects, which keep method and body
        // and do not hand the session id to another host.
        let inner = reqwest::Client::builder()
            .pool_max_idle_per_host(0)
            .redirect(same_origin_redirects())
            .build()?;
        let inner = match oauth {
            Some(manager) => Signed::OAuth(AuthClient::new(inner, manager)),
            None => Signed::Plain(inner),
        };
        Ok(Self {
            inner,
            standalone_answered: Arc::new(watch::channel(false).0),
            refusals: refusals.map(Arc::new),
        })
    }

    /// Records a refusal that signing in (again) can answer, and passes the result on.
    fn watch<T>(
        &self,
        result: Result<T, StreamableHttpError<reqwest::Error>>,
    ) -> Result<T, StreamableHttpError<reqwest::Error>> {
        if let (Err(error), Some(refusals)) = (&result, &self.refusals) {
            let challenge = match error {
                StreamableHttpError::AuthRequired(e) => Some(&e.www_authenticate_header),
                StreamableHttpError::InsufficientScope(e) => Some(&e.www_authenticate_header),
                _ => None,
            };
            if let Some(challenge) = challenge {
                toolmux_oauth::record_challenge(
                    &refusals.project_dir,
                    &refusals.server,
                    Some(challenge),
                );
            }
        }
        result
    }

    /// Waits until the standalone stream has been answered, if `message` is a request of an
    /// established session (the handshake and notifications never wait: rmcp opens the stream
    /// only after them, and a session-less server gets no standalone stream at all).
    async fn hold_first_request(&self, message: &ClientJsonRpcMessage, session: bool) {
        let is_request = matches!(
            message,
            ClientJsonRpcMessage::Request(request)
                if !matches!(request.request, ClientRequest::InitializeRequest(_))
        );
        if !is_request || !session || *self.standalone_answered.borrow() {
            return;
        }
        let mut answered = self.standalone_answered.subscribe();
        let _ = tokio::time::timeout(STANDALONE_STREAM_WAIT, answered.wait_for(|done| *done)).await;
    }

    fn answered(&self) {
        self.standalone_answered.send_replace(true);
    }
}

impl StreamableHttpClient for OrderedClient {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        self.hold_first_request(&message, session_id.is_some())
            .await;
        via!(self.post_message(uri, message, session_id, auth_header, custom_headers))
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        self.hold_first_request(&message, session_id.is_some())
            .await;
        let response = via!(self.post_message_with_max_sse_event_size(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            max_sse_event_size
        ))?;
        Ok(match response {
            StreamableHttpPostResponse::Sse(stream, session) => {
                StreamableHttpPostResponse::Sse(lifted(stream), session)
            }
            // A JSON body reaches toolmux already parsed by rmcp: a top-level `_internal` in
            // it is lost (`internalTools` in the configuration covers such a server).
            other => other,
        })
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), StreamableHttpError<Self::Error>> {
        via!(self.delete_session(uri, session_id, auth_header, custom_headers))
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, StreamableHttpError<Self::Error>> {
        let standalone = last_event_id.is_none();
        let stream =
            via!(self.get_stream(uri, session_id, last_event_id, auth_header, custom_headers));
        if standalone {
            self.answered();
        }
        stream
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, StreamableHttpError<Self::Error>> {
        let standalone = last_event_id.is_none();
        let stream = via!(self.get_stream_with_max_sse_event_size(
            uri,
            session_id,
            last_event_id,
            auth_header,
            custom_headers,
            max_sse_event_size
        ));
        if standalone {
            self.answered();
        }
        stream.map(lifted)
    }
}

/// An SSE stream with every message's data passed through
/// [`crate::wire::lift_internal_marks`] before rmcp parses it.
fn lifted(
    stream: BoxStream<'static, Result<Sse, SseError>>,
) -> BoxStream<'static, Result<Sse, SseError>> {
    use futures::StreamExt;
    stream
        .map(|event| {
            event.map(|mut event| {
                if let Some(data) = event
                    .data
                    .as_deref()
                    .and_then(crate::wire::lift_internal_marks)
                {
                    event.data = Some(data);
                }
                event
            })
        })
        .boxed()
}

/// The client of one connection to the streamable-HTTP server of `endpoint`: signed with the
/// server's OAuth tokens, unless its configured headers carry an `Authorization` of their own
/// (a static key, which OAuth must not replace).
pub(crate) async fn client_for(
    endpoint: &crate::connection::Endpoint,
    url: &str,
    headers: &HashMap<HeaderName, HeaderValue>,
) -> Result<OrderedClient, String> {
    let own_authorization = headers.contains_key(&http::header::AUTHORIZATION);
    let oauth = if own_authorization {
        None
    } else {
        let target = toolmux_oauth::Target::new(
            &endpoint.project_dir,
            &endpoint.server,
            url,
            endpoint.oauth.as_ref(),
        );
        match toolmux_oauth::connection_manager(&target).await {
            Ok(manager) => Some(manager),
            // A server that needs no sign-in must still be reachable when the secret store or
            // the authorization server is not; one that does will answer 401 and say so.
            Err(e) => {
                tracing::warn!(server = %endpoint.server, error = %e, "requests go out without OAuth");
                None
            }
        }
    };
    let refusals = (!own_authorization).then(|| Refusals {
        project_dir: endpoint.project_dir.clone(),
        server: endpoint.server.clone(),
    });
    OrderedClient::new(oauth, refusals).map_err(|e| format!("cannot set up the HTTP client: {e}"))
}

/// Whether a failed handshake was the server refusing toolmux for want of (enough) sign-in: a
/// 401, or a 403 `insufficient_scope`, that the stored tokens could not answer: its status.
pub(crate) fn refused(error: &rmcp::service::ClientInitializeError) -> Option<u16> {
    let rmcp::service::ClientInitializeError::TransportError { error, .. } = error else {
        return None;
    };
    refusal_in(error.error.as_ref())
}

/// Whether a request failed because the server refused toolmux for want of (enough) sign-in —
/// a server may let the handshake through and refuse what follows: the refusal's status.
pub(crate) fn refused_request(error: &rmcp::ServiceError) -> Option<u16> {
    match error {
        rmcp::ServiceError::TransportSend(e) => refusal_in(e.error.as_ref()),
        _ => None,
    }
}

/// Whether a request that failed to go out never reached the server: the connection to it
/// could not be made. Any other failure of a POST may have come after the server read it.
pub(crate) fn never_reached(error: &rmcp::ServiceError) -> bool {
    let rmcp::ServiceError::TransportSend(e) = error else {
        return false;
    };
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(e.error.as_ref());
    while let Some(e) = cause {
        if let Some(StreamableHttpError::Client(client)) =
            e.downcast_ref::<StreamableHttpError<reqwest::Error>>()
        {
            return client.is_connect();
        }
        if let Some(client) = e.downcast_ref::<reqwest::Error>() {
            return client.is_connect();
        }
        cause = e.source();
    }
    false
}

/// The HTTP status of a refusal (401, or 403 `insufficient_scope`) somewhere in `error`'s chain.
fn refusal_in(error: &(dyn std::error::Error + Send + Sync + 'static)) -> Option<u16> {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(e) = cause {
        if let Some(http) = e.downcast_ref::<StreamableHttpError<reqwest::Error>>() {
            return match http {
                StreamableHttpError::AuthRequired(_) => Some(401),
                StreamableHttpError::InsufficientScope(_) => Some(403),
                _ => None,
            };
        }
        cause = e.source();
    }
    None
}

/// Whether `source` reads `needs-sign-in`: its last discovery was refused, or a call was
/// refused since (a revoked token, a step-up), as recorded by [`OrderedClient`].
pub(crate) fn needs_sign_in(project_dir: &std::path::Path, source: &crate::UpstreamSource) -> bool {
    source.record().discovery_status == crate::DiscoveryStatus::NeedsSignIn
        || toolmux_oauth::needs_sign_in(project_dir, source.name())
}

/// What signing in to `source` needs: its name, endpoint and `oauth` settings, and the project
/// that keeps its tokens. `None` for a stdio server, which has no sign-in.
pub(crate) fn sign_in_target(
    project_dir: &std::path::Path,
    source: &crate::UpstreamSource,
) -> Option<toolmux_oauth::Target> {
    let server = source.server();
    let url = match &server.transport {
        toolmux_config::UpstreamTransport::Http { url, .. }
        | toolmux_config::UpstreamTransport::Sse { url, .. } => url,
        toolmux_config::UpstreamTransport::Stdio { .. } => return None,
    };
    Some(toolmux_oauth::Target::new(
        project_dir,
        source.name(),
        url,
        server.oauth.as_ref(),
    ))
}
