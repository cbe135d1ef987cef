//! Serving a router on a listener, one HTTP/1.1 connection at a time per task, with limits
//! `axum::serve` does not offer: a deadline for each request's head, which also closes a
//! keep-alive connection left idle, a cap on open connections, and a smaller cap on those of
//! one peer.
//!
//! Without them a client that opens connections and never finishes a request (or never closes
//! an idle one) keeps each of them, and their file descriptors, forever: enough of them and the
//! process can accept nobody, keys or not, since a connection is taken before any request is
//! read. The global cap keeps the descriptors; the per-peer cap keeps one client (one address)
//! from taking every slot of it while the others wait.

use std::collections::HashMap;
use std::future::Future;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::Router;
use axum::serve::Listener;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::io::AsyncWriteExt;
use tokio::sync::Semaphore;

/// How long and how many connections the server keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// How long a client has to send a request's head once it starts one, and how long a
    /// keep-alive connection may stay idle waiting for its next request (hyper arms the same
    /// timer for both). A connection past it is closed.
    pub header_timeout: Duration,
    /// How many connections are served at once. Past it, new connections are not accepted but
    /// wait in the listen backlog until one closes, so that the process never runs out of file
    /// descriptors for its own files, logs and MCP servers.
    pub max_connections: usize,
    /// How many of those one peer may hold at once; `None` for a quarter of
    /// `max_connections` ([`ConnectionLimits::per_peer`]). A peer is a source address, an IPv6
    /// one by its /64 (which one host usually holds whole), and every loopback address
    /// (127.0.0.0/8, `::1`, either mapped) is one peer: this host. Past it, the peer's new
    /// connections are answered `503` and closed at once, so that one client cannot take every
    /// slot while the others wait. Unix-socket peers are not counted: the socket's mode admits
    /// only its owner.
    pub max_connections_per_peer: Option<usize>,
    /// How long a stopping server waits for open requests to finish before it closes their
    /// connections anyway. A long-lived stream (an event stream a page keeps open, a chat turn
    /// still thinking) would otherwise hold the stop forever.
    pub shutdown_grace: Duration,
}

/// The most connections served at once by default, when the file-descriptor limit allows it.
const DEFAULT_MAX_CONNECTIONS: usize = 4096;

impl Default for ConnectionLimits {
    /// 20 s for a request's head and an idle connection (slow clients still make it; a
    /// browser's idle keep-alive is simply reopened), and at most 4096 connections, or half the
    /// process's file-descriptor limit when that is lower: the other half stays for files,
    /// the execution log, the conversation store and the MCP servers' pipes.
    fn default() -> Self {
        Self {
            header_timeout: Duration::from_secs(20),
            max_connections: DEFAULT_MAX_CONNECTIONS.min(descriptor_budget()),
            max_connections_per_peer: None,
            shutdown_grace: Duration::from_secs(5),
        }
    }
}

impl ConnectionLimits {
    /// The most connections one peer holds at once: `max_connections_per_peer`, else a quarter
    /// of `max_connections` (1,024 of the default 4,096): far more than a browser (six per
    /// host) or a busy local agent opens, and it leaves three quarters for everyone else. Every
    /// local client shares the loopback address; raise it (`--max-connections-per-peer`)
    /// behind a reverse proxy on the same host.
    pub fn per_peer(&self) -> usize {
        self.max_connections_per_peer
            .unwrap_or(self.max_connections / 4)
            .max(1)
    }
}

/// A listener's peer address, as the per-peer cap counts it.
pub trait PeerAddress {
    /// The peer this connection counts against; `None` for one that is not counted.
    fn peer(&self) -> Option<IpAddr>;
}

impl PeerAddress for SocketAddr {
    fn peer(&self) -> Option<IpAddr> {
        // A dual-stack socket shows IPv4 peers as mapped addresses: the same peer.
        let ip = self.ip().to_canonical();
        // A local process may send from any of 127.0.0.0/8 (and `::1`): counted per address,
        // it would rotate through them past its cap. They are all this host, one peer.
        if ip.is_loopback() {
            return Some(IpAddr::V4(Ipv4Addr::LOCALHOST));
        }
        Some(match ip {
            IpAddr::V4(v4) => IpAddr::V4(v4),
            // One host gets a /64; counting each of its addresses would count nothing.
            IpAddr::V6(v6) => IpAddr::V6(Ipv6Addr::from_bits(v6.to_bits() & !((1u128 << 64) - 1))),
        })
    }
}

#[cfg(unix)]
impl PeerAddress for tokio::net::unix::SocketAddr {
    fn peer(&self) -> Option<IpAddr> {
        None
    }
}

/// The connections each peer holds, and the cap.
struct PeerCounts {
    cap: usize,
    open: Mutex<HashMap<IpAddr, usize>>,
}

impl PeerCounts {
    /// One more connection of `peer`, held until the returned slot drops; `None` when the peer
    /// holds its cap already.
    fn take(self: &Arc<Self>, peer: IpAddr) -> Option<PeerSlot> {
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        let held = open.entry(peer).or_insert(0);
        if *held >= self.cap {
            return None;
        }
        *held += 1;
        Some(PeerSlot {
            counts: Arc::clone(self),
            peer,
        })
    }
}

/// One connection of a peer, counted until it closes.
struct PeerSlot {
    counts: Arc<PeerCounts>,
    peer: IpAddr,
}

impl Drop for PeerSlot {
    fn drop(&mut self) {
        let mut open = self
            .counts
            .open
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(held) = open.get_mut(&self.peer) {
            *held -= 1;
            if *held == 0 {
                // Peers come and go: the map holds only those with a connection open.
                open.remove(&self.peer);
            }
        }
    }
}

/// What a peer past its cap gets before its connection is closed: `503` with the one error
/// body, so that a client sees why rather than a reset.
const PEER_CAP_REFUSAL: &str = "{\"error\":{\"code\":\"unavailable\",\"message\":\"this \
    address holds as many connections as the server gives one client; close one and try \
    again\",\"details\":{}}}";
/// How long writing that refusal may take: it fits a fresh socket's buffer, so only a peer
/// that is gone makes it wait.
const REFUSAL_WRITE_TIMEOUT: Duration = Duration::from_secs(1);

/// Half the soft limit on open file descriptors, at least 16; the default cap when it cannot be
/// read.
fn descriptor_budget() -> usize {
    use nix::sys::resource::{Resource, getrlimit};
    match getrlimit(Resource::RLIMIT_NOFILE) {
        Ok((soft, _hard)) => usize::try_from(soft / 2).unwrap_or(usize::MAX).max(16),
        Err(_) => DEFAULT_MAX_CONNECTIONS,
    }
}

/// Serves `router` on `listener` until `shutdown` resolves, then stops accepting and waits for
/// the open connections to finish their requests (idle ones are closed at once), as
/// `axum::serve(..).with_graceful_shutdown(..)` does, but for at most `limits.shutdown_grace`:
/// the connections still open then are dropped with the process. Works on any listener axum knows (TCP,
/// Unix sockets, one wrapped with `tap_io` to set `TCP_NODELAY`).
pub async fn serve<L>(
    mut listener: L,
    router: Router,
    limits: ConnectionLimits,
    shutdown: impl Future<Output = ()> + Send,
) where
    L: Listener,
    L::Addr: PeerAddress,
{
    let permits = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let peers = Arc::new(PeerCounts {
        cap: limits.per_peer(),
        open: Mutex::default(),
    });
    let graceful = GracefulShutdown::new();
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .keep_alive(true);
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        // A permit first, then a connection: at the cap, connections wait in the backlog
        // instead of being accepted and holding a descriptor with nobody to serve them.
        let permit = tokio::select! {
            permit = Arc::clone(&permits).acquire_owned() => permit,
            () = &mut shutdown => break,
        };
        let Ok(permit) = permit else {
            break;
        };
        // `Listener::accept` retries by itself on errors such as running out of descriptors.
        let (mut io, address) = tokio::select! {
            accepted = listener.accept() => accepted,
            () = &mut shutdown => break,
        };
        let slot = match address.peer() {
            Some(peer) => match peers.take(peer) {
                Some(slot) => Some(slot),
                None => {
                    tracing::debug!(%peer, cap = peers.cap, "a peer past its connection cap was refused");
                    tokio::spawn(async move {
                        let refusal = format!(
                            "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n\
                             Retry-After: 1\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{}",
                            PEER_CAP_REFUSAL.len(),
                            PEER_CAP_REFUSAL
                        );
                        let written = tokio::time::timeout(REFUSAL_WRITE_TIMEOUT, async {
                            io.write_all(refusal.as_bytes()).await?;
                            io.shutdown().await
                        })
                        .await;
                        if let Ok(Err(e)) = written {
                            tracing::debug!(error = %e, "cannot tell a peer past its cap why");
                        }
                        drop(permit);
                    });
                    continue;
                }
            },
            None => None,
        };
        let connection =
            http.serve_connection(TokioIo::new(io), TowerToHyperService::new(router.clone()));
        let connection = graceful.watch(connection);
        tokio::spawn(async move {
            // A client that went away or was too slow for the header deadline is routine.
            if let Err(e) = connection.await {
                tracing::debug!(error = %e, "HTTP connection ended with an error");
            }
            drop(slot);
            drop(permit);
        });
    }
    drop(listener);
    if tokio::time::timeout(limits.shutdown_grace, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!(
            grace = ?limits.shutdown_grace,
            "connections still open after the shutdown grace were closed"
        );
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use axum::routing::get;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpStream;

    use super::*;

    async fn started(
        limits: ConnectionLimits,
    ) -> (std::net::SocketAddr, tokio::sync::oneshot::Sender<()>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let address = listener.local_addr().expect("address");
        let router = Router::new().route("/", get(|| async { "ok" }));
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(serve(listener, router, limits, async {
            let _ = stopped.await;
        }));
        (address, stop)
    }

    /// Reads until the server closes the connection; how long that took.
    async fn closed_after(stream: &mut TcpStream, at_most: Duration) -> Duration {
        let start = Instant::now();
        let mut sink = Vec::new();
        tokio::time::timeout(at_most, stream.read_to_end(&mut sink))
            .await
            .expect("the server closed the connection in time")
            .expect("read");
        start.elapsed()
    }

    async fn get_root(address: std::net::SocketAddr) -> String {
        let mut stream = TcpStream::connect(address).await.expect("connect");
        stream
            .write_all(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .await
            .expect("send");
        let mut answer = String::new();
        stream.read_to_string(&mut answer).await.expect("read");
        answer
    }

    #[tokio::test]
    async fn a_half_sent_request_and_an_idle_connection_are_closed_after_the_header_timeout() {
        let limits = ConnectionLimits {
            header_timeout: Duration::from_millis(300),
            max_connections: 16,
            ..ConnectionLimits::default()
        };
        let (address, _stop) = started(limits).await;
        let mut half = TcpStream::connect(address).await.expect("connect");
        half.write_all(b"GET / HTTP/1.1\r\nHost: x\r\nX: ")
            .await
            .expect("send half a head");
        let mut idle = TcpStream::connect(address).await.expect("connect");
        idle.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .expect("send a whole request");
        let mut first = [0u8; 12];
        idle.read_exact(&mut first).await.expect("an answer");
        assert_eq!(&first, b"HTTP/1.1 200");

        let waited = closed_after(&mut half, Duration::from_secs(5)).await;
        assert!(waited >= Duration::from_millis(200), "{waited:?}");
        closed_after(&mut idle, Duration::from_secs(5)).await;
        assert!(get_root(address).await.starts_with("HTTP/1.1 200"));
    }

    #[tokio::test]
    async fn past_the_cap_a_connection_waits_until_another_one_closes() {
        let limits = ConnectionLimits {
            header_timeout: Duration::from_millis(600),
            max_connections: 2,
            // Every connection here comes from one address: the global cap is under test.
            max_connections_per_peer: Some(2),
            ..ConnectionLimits::default()
        };
        let (address, _stop) = started(limits).await;
        let mut held = Vec::new();
        for _ in 0..2 {
            let mut stream = TcpStream::connect(address).await.expect("connect");
            stream.write_all(b"GET / HTTP/1.1\r\n").await.expect("send");
            held.push(stream);
        }
        // Give the server time to accept both before the third arrives.
        tokio::time::sleep(Duration::from_millis(100)).await;
        let start = Instant::now();
        let answer = get_root(address).await;
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        // Served only once a held connection was closed by its header timeout.
        assert!(
            start.elapsed() >= Duration::from_millis(300),
            "{:?}",
            start.elapsed()
        );
    }

    #[tokio::test]
    async fn shutdown_stops_accepting_and_returns() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let address = listener.local_addr().expect("address");
        let router = Router::new().route("/", get(|| async { "ok" }));
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(serve(
            listener,
            router,
            ConnectionLimits::default(),
            async {
                let _ = stopped.await;
            },
        ));
        assert!(get_root(address).await.starts_with("HTTP/1.1 200"));
        let _ = stop.send(());
        tokio::time::timeout(Duration::from_secs(5), server)
            .await
            .expect("the server stopped")
            .expect("no panic");
        assert!(TcpStream::connect(address).await.is_err());
    }

    #[tokio::test]
    async fn a_stream_that_never_ends_holds_the_stop_only_for_the_grace() {
        let limits = ConnectionLimits {
            shutdown_grace: Duration::from_millis(300),
            ..ConnectionLimits::default()
        };
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let address = listener.local_addr().expect("address");
        let endless = || async {
            axum::body::Body::from_stream(
                futures::stream::pending::<Result<String, std::io::Error>>(),
            )
        };
        let router = Router::new().route("/", get(endless));
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(serve(listener, router, limits, async {
            let _ = stopped.await;
        }));
        let mut stream = TcpStream::connect(address).await.expect("connect");
        stream
            .write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .expect("send");
        let mut head = [0u8; 12];
        stream.read_exact(&mut head).await.expect("the head");
        assert_eq!(&head, b"HTTP/1.1 200");

        let stopping = Instant::now();
        stop.send(()).expect("the server is running");
        tokio::time::timeout(Duration::from_secs(5), server)
            .await
            .expect("the server stopped despite the open stream")
            .expect("the server task");
        let took = stopping.elapsed();
        assert!(
            took >= Duration::from_millis(250),
            "the grace was not given: {took:?}"
        );
    }
}
