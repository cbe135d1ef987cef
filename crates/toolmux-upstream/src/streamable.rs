//! The HTTP client under rmcp's streamable-HTTP transport: reqwest, plus one ordering rule.
//!
//! After the handshake rmcp opens the session's standalone GET event stream in a task of its
//! own, so the GET can reach the server *after* the first request. A server that resumes an
//! interrupted response stream on "the next GET" (as the conformance suite's SEP-1699 server
//! does) then sends the response on the standalone stream, and the client never exercises the
//! `retry:` / `Last-Event-ID` resumption; any server-initiated message sent while the GET is
//! still in flight is delivered late. So the first request of a session waits (briefly, at most
//! [`STANDALONE_STREAM_WAIT`]) until the standalone stream has been answered.

use std::collections::HashMap;
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

/// The longest the first request of a session waits for the standalone stream; a server that
/// is slow to answer the GET delays one request by this much, never more.
const STANDALONE_STREAM_WAIT: Duration = Duration::from_millis(500);
/// The most redirects followed for one request (as rmcp's own client).
const MAX_REDIRECTS: usize = 10;

/// reqwest, configured as rmcp configures it, with the first request of a session held until
/// the session's standalone GET stream has been answered (opened or refused).
#[derive(Clone)]
pub(crate) struct OrderedClient {
    inner: reqwest::Client,
    /// `true` once the first standalone GET of this transport has been answered.
    standalone_answered: Arc<watch::Sender<bool>>,
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
    pub(crate) fn new() -> reqwest::Result<Self> {
        // As rmcp's default client: no idle pooling (avoids delayed-ACK stalls on reused
        // connections), and only same-origin 307/308 redirects, which keep method and body
        // and do not hand the session id to another host.
        let inner = reqwest::Client::builder()
            .pool_max_idle_per_host(0)
            .redirect(same_origin_redirects())
            .build()?;
        Ok(Self {
            inner,
            standalone_answered: Arc::new(watch::channel(false).0),
        })
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
        self.inner
            .post_message(uri, message, session_id, auth_header, custom_headers)
            .await
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
        self.inner
            .post_message_with_max_sse_event_size(
                uri,
                message,
                session_id,
                auth_header,
                custom_headers,
                max_sse_event_size,
            )
            .await
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), StreamableHttpError<Self::Error>> {
        self.inner
            .delete_session(uri, session_id, auth_header, custom_headers)
            .await
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
        let stream = self
            .inner
            .get_stream(uri, session_id, last_event_id, auth_header, custom_headers)
            .await;
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
        let stream = self
            .inner
            .get_stream_with_max_sse_event_size(
                uri,
                session_id,
                last_event_id,
                auth_header,
                custom_headers,
                max_sse_event_size,
            )
            .await;
        if standalone {
            self.answered();
        }
        stream
    }
}
