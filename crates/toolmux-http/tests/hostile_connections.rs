//! A flood of connections from one peer against `toolmux_http::serve`.

use std::net::SocketAddr;
use std::time::Duration;

use axum::Router;
use axum::routing::get;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};
use toolmux_http::ConnectionLimits;

/// How long a test waits for an answer that should come at once before it calls it a hang
/// (the old behaviour); not a measure of anything.
const HANG: Duration = Duration::from_secs(10);

async fn started(limits: ConnectionLimits) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let address = listener.local_addr().expect("address");
    let router = Router::new().route("/", get(|| async { "ok" }));
    tokio::spawn(toolmux_http::serve(
        listener,
        router,
        limits,
        std::future::pending::<()>(),
    ));
    address
}

/// A connection to `server` from the loopback address `source` (any of 127.0.0.0/8).
async fn connect_from(source: &str, server: SocketAddr) -> TcpStream {
    let socket = TcpSocket::new_v4().expect("socket");
    socket
        .bind(format!("{source}:0").parse().expect("an address"))
        .expect("bind the source address");
    socket.connect(server).await.expect("connect")
}

/// Everything the server sends until it closes the connection (or resets it).
async fn answer(stream: &mut TcpStream) -> String {
    let mut answer = Vec::new();
    let read = tokio::time::timeout(HANG, stream.read_to_end(&mut answer))
        .await
        .expect("an answer, not a hang");
    if let Err(e) = read {
        assert!(!answer.is_empty(), "nothing read before {e}");
    }
    String::from_utf8_lossy(&answer).into_owned()
}

async fn get_root_from(source: &str, server: SocketAddr) -> String {
    let mut stream = connect_from(source, server).await;
    stream
        .write_all(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .await
        .expect("send");
    answer(&mut stream).await
}

/// Issue 28: one peer's flood of connections (≈4,096, each holding a half-sent request) took
/// every slot, and nobody else was served while it lasted. Now a peer gets at most its share;
/// past it, its connections are answered `503` at once, and another peer is served.
#[tokio::test]
async fn one_peer_holding_its_cap_leaves_the_other_slots_to_other_peers() {
    let limits = ConnectionLimits {
        // Long enough that the flood's half-sent requests hold their slots for the whole test.
        header_timeout: Duration::from_secs(3600),
        max_connections: 16,
        max_connections_per_peer: Some(4),
        ..ConnectionLimits::default()
    };
    let server = started(limits).await;
    let mut held = Vec::new();
    let mut refused = 0;
    // As many connections as the whole server takes, each with a request never finished.
    for _ in 0..16 {
        let mut stream = connect_from("127.0.0.1", server).await;
        stream
            .write_all(b"GET / HTTP/1.1\r\nHost: x\r\n")
            .await
            .expect("send half a head");
        held.push(stream);
    }
    // The flood's connections past its cap are answered at once; the first four are held.
    for stream in &mut held[4..] {
        let refusal = answer(stream).await;
        assert!(
            refusal.starts_with("HTTP/1.1 503"),
            "past the cap: {refusal:?}"
        );
        assert!(refusal.contains("\"code\":\"unavailable\""), "{refusal}");
        refused += 1;
    }
    assert_eq!(refused, 12);

    let served = tokio::time::timeout(HANG, get_root_from("127.0.0.2", server))
        .await
        .expect("another peer is served while the flood holds its connections");
    assert!(served.starts_with("HTTP/1.1 200"), "{served}");

    // A slot the flooding peer gives back is its own again.
    held.truncate(3);
    let mut again = String::new();
    for _ in 0..100 {
        again = get_root_from("127.0.0.1", server).await;
        if again.starts_with("HTTP/1.1 200") {
            break;
        }
        // The server has not seen the close yet.
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(again.starts_with("HTTP/1.1 200"), "{again}");
}

#[test]
fn a_peer_gets_a_quarter_of_the_connections_unless_configured() {
    let limits = ConnectionLimits {
        max_connections: 4096,
        ..ConnectionLimits::default()
    };
    assert_eq!(limits.per_peer(), 1024);
    let tiny = ConnectionLimits {
        max_connections: 2,
        ..ConnectionLimits::default()
    };
    assert_eq!(tiny.per_peer(), 1, "never zero");
    let set = ConnectionLimits {
        max_connections_per_peer: Some(7),
        ..ConnectionLimits::default()
    };
    assert_eq!(set.per_peer(), 7);
}

#[test]
fn an_ipv6_peer_is_its_slash_64_and_a_mapped_ipv4_peer_its_ipv4_address() {
    use toolmux_http::PeerAddress;
    let peer = |text: &str| text.parse::<SocketAddr>().expect("an address").peer();
    assert_eq!(
        peer("[2001:db8:1:2::1]:1"),
        peer("[2001:db8:1:2:ffff::9]:2")
    );
    assert_ne!(peer("[2001:db8:1:2::1]:1"), peer("[2001:db8:1:3::1]:1"));
    assert_eq!(peer("[::ffff:192.0.2.7]:1"), peer("192.0.2.7:9"));
    assert_ne!(peer("192.0.2.7:1"), peer("192.0.2.8:1"));
}
