//! The legacy HTTP+SSE transport (protocol 2024-11-05), which rmcp does not ship: the client
//! opens a long-lived `GET` event stream; the server's first event, `endpoint`, names the URL to
//! `POST` JSON-RPC messages to; every later `message` event carries one message from the server.

use std::collections::BTreeMap;
use std::sync::Arc;

use futures::StreamExt;
use http::{HeaderMap, HeaderName, HeaderValue};
use reqwest::Url;
use rmcp::RoleClient;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use sse_stream::SseStream;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// How many server messages may wait unread.
const BUFFER: usize = 64;

/// Why the SSE transport failed.
#[derive(Debug, thiserror::Error)]
pub enum SseError {
    /// A configured header cannot be sent.
    #[error("invalid header `{0}`")]
    Header(String),
    /// The URL is not a valid absolute URL.
    #[error("invalid url `{0}`")]
    Url(String),
    /// The HTTP request failed.
    #[error("{0}")]
    Http(#[from] reqwest::Error),
    /// The server answered with an error status.
    #[error("{method} {url} answered HTTP {status}")]
    Status {
        /// GET or POST.
        method: &'static str,
        /// The URL.
        url: String,
        /// The status.
        status: u16,
    },
    /// The server named a message endpoint on another origin; posting there would send the
    /// configured headers (and the secrets in them) to a host the user never configured.
    #[error("the server's message endpoint `{endpoint}` is not on the origin of `{url}`")]
    ForeignEndpoint {
        /// The configured URL.
        url: String,
        /// The endpoint the server named.
        endpoint: String,
    },
    /// The event stream ended before the server named its message endpoint.
    #[error("the event stream ended before the server sent its `endpoint` event")]
    NoEndpoint,
    /// The server refused the event stream for want of (enough) sign-in: 401, or 403 with a
    /// challenge.
    #[error("the server asks for sign-in")]
    NeedsSignIn,
    /// A message could not be encoded (cannot happen for rmcp's types).
    #[error("cannot encode a message: {0}")]
    Encode(#[from] serde_json::Error),
}

/// A connected legacy-SSE transport.
pub struct SseTransport {
    client: reqwest::Client,
    endpoint: Arc<Url>,
    headers: Arc<HeaderMap>,
    incoming: mpsc::Receiver<RxJsonRpcMessage<RoleClient>>,
    reader: JoinHandle<()>,
}

impl SseTransport {
    /// Opens the event stream at `url` and waits for the `endpoint` event.
    pub async fn connect(url: &str, headers: &BTreeMap<String, String>) -> Result<Self, SseError> {
        Self::connect_signed(url, headers, None).await
    }

    /// [`SseTransport::connect`], signed with the tokens kept for `sign_in` (unless `headers`
    /// carry an `Authorization` of their own). The token is taken (refreshed when it is about
    /// to expire) once, when the stream opens: rmcp's `AuthClient`, which renews it per request,
    /// speaks only streamable HTTP. A refusal is recorded as "needs sign-in".
    pub async fn connect_signed(
        url: &str,
        headers: &BTreeMap<String, String>,
        sign_in: Option<toolmux_oauth::Target>,
    ) -> Result<Self, SseError> {
        let base = Url::parse(url).map_err(|_| SseError::Url(url.to_string()))?;
        let mut headers = header_map(headers)?;
        let sign_in = sign_in.filter(|_| !headers.contains_key(http::header::AUTHORIZATION));
        if let Some(target) = &sign_in {
            match toolmux_oauth::connection_manager(target).await {
                Ok(manager) => {
                    if let Ok(token) = manager.get_access_token().await
                        && let Ok(mut value) = HeaderValue::from_str(&format!("Bearer {token}"))
                    {
                        // Kept out of every Debug print of the request.
                        value.set_sensitive(true);
                        headers.insert(http::header::AUTHORIZATION, value);
                    }
                }
                Err(e) => tracing::warn!(error = %e, "the event stream opens without OAuth"),
            }
        }
        // Redirects could carry the configured headers to another host: only the same origin.
        let client = reqwest::Client::builder()
            .redirect(crate::streamable::same_origin_redirects())
            .build()?;
        let response = client
            .get(base.clone())
            .headers(headers.clone())
            .header(http::header::ACCEPT, "text/event-stream")
            .send()
            .await?;
        let challenge = response
            .headers()
            .get(http::header::WWW_AUTHENTICATE)
            .and_then(|v| v.to_str().ok());
        let refused = response.status() == reqwest::StatusCode::UNAUTHORIZED
            || (response.status() == reqwest::StatusCode::FORBIDDEN && challenge.is_some());
        if refused && let Some(target) = &sign_in {
            toolmux_oauth::record_challenge(&target.project_dir, &target.server, challenge);
            return Err(SseError::NeedsSignIn);
        }
        if !response.status().is_success() {
            return Err(SseError::Status {
                method: "GET",
                url: url.to_string(),
                status: response.status().as_u16(),
            });
        }
        let mut events = SseStream::from_bytes_stream(response.bytes_stream());
        let endpoint = loop {
            match events.next().await {
                Some(Ok(event)) if event.event.as_deref() == Some("endpoint") => {
                    let data = event.data.unwrap_or_default();
                    let data = data.trim();
                    let endpoint = base
                        .join(data)
                        .map_err(|_| SseError::Url(data.to_string()))?;
                    if endpoint.origin() != base.origin() {
                        return Err(SseError::ForeignEndpoint {
                            url: url.to_string(),
                            endpoint: endpoint.to_string(),
                        });
                    }
                    break endpoint;
                }
                Some(Ok(_)) => continue,
                Some(Err(e)) => {
                    tracing::debug!(error = %e, "the SSE stream broke before the endpoint event");
                    return Err(SseError::NoEndpoint);
                }
                None => return Err(SseError::NoEndpoint),
            }
        };
        let (tx, incoming) = mpsc::channel(BUFFER);
        let reader = tokio::spawn(async move {
            while let Some(event) = events.next().await {
                let event = match event {
                    Ok(event) => event,
                    Err(e) => {
                        tracing::debug!(error = %e, "the SSE stream broke");
                        break;
                    }
                };
                if !matches!(event.event.as_deref(), None | Some("message")) {
                    continue;
                }
                let Some(mut data) = event.data else { continue };
                if let Some(lifted) = crate::wire::lift_internal_marks(&data) {
                    data = lifted;
                }
                match serde_json::from_str::<RxJsonRpcMessage<RoleClient>>(&data) {
                    Ok(message) => {
                        if tx.send(message).await.is_err() {
                            break;
                        }
                    }
                    // A malformed message is skipped: the request it answered (if any) times
                    // out, and every other message still gets through.
                    Err(e) => tracing::warn!(error = %e, "skipping a malformed SSE message"),
                }
            }
        });
        Ok(Self {
            client,
            endpoint: Arc::new(endpoint),
            headers: Arc::new(headers),
            incoming,
            reader,
        })
    }

    /// The URL messages are posted to.
    pub fn endpoint(&self) -> &Url {
        &self.endpoint
    }
}

impl Drop for SseTransport {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

impl Transport<RoleClient> for SseTransport {
    type Error = SseError;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let client = self.client.clone();
        let endpoint = Arc::clone(&self.endpoint);
        let headers = Arc::clone(&self.headers);
        async move {
            let body = serde_json::to_vec(&item)?;
            let response = client
                .post((*endpoint).clone())
                .headers((*headers).clone())
                .header(http::header::CONTENT_TYPE, "application/json")
                .body(body)
                .send()
                .await?;
            if !response.status().is_success() {
                return Err(SseError::Status {
                    method: "POST",
                    url: endpoint.to_string(),
                    status: response.status().as_u16(),
                });
            }
            Ok(())
        }
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleClient>>> + Send {
        self.incoming.recv()
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.reader.abort();
        self.incoming.close();
        std::future::ready(Ok(()))
    }
}

/// Configured headers as an HTTP header map.
pub(crate) fn header_map(headers: &BTreeMap<String, String>) -> Result<HeaderMap, SseError> {
    let mut map = HeaderMap::with_capacity(headers.len());
    for (name, value) in headers {
        let key =
            HeaderName::from_bytes(name.as_bytes()).map_err(|_| SseError::Header(name.clone()))?;
        let value = HeaderValue::from_str(value).map_err(|_| SseError::Header(name.clone()))?;
        map.insert(key, value);
    }
    Ok(map)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A one-shot legacy-SSE server on loopback that names `endpoint` as its message endpoint.
    async fn server_naming(endpoint: &'static str) -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let address = listener.local_addr().expect("address");
        tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.expect("accept");
            let mut request = [0u8; 1024];
            let _read = socket.read(&mut request).await.expect("read the request");
            let body = format!("event: endpoint\ndata: {endpoint}\n\n");
            let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\n";
            socket
                .write_all(format!("{head}{body}").as_bytes())
                .await
                .expect("write");
            // Keep the stream open while the client decides.
            tokio::time::sleep(std::time::Duration::from_secs(5)).await;
        });
        format!("http://{address}/sse")
    }

    #[tokio::test]
    async fn an_endpoint_on_another_origin_is_refused_before_any_header_is_sent_there() {
        let url = server_naming("http://attacker.example/messages").await;
        let mut headers = BTreeMap::new();
        headers.insert("Authorization".to_string(), "Bearer secret".to_string());
        let refused = SseTransport::connect(&url, &headers).await;
        let Err(error) = refused else {
            panic!("a foreign endpoint was accepted");
        };
        assert_eq!(
            error.to_string(),
            format!(
                "the server's message endpoint `http://attacker.example/messages` is not on the origin of `{url}`"
            )
        );
    }
}
