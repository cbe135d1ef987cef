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

/// A server on every IPv4 address of the host (so that a peer other than loopback can reach
/// it), and the loopback address to reach it by.
async fn started(limits: ConnectionLimits) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("0.0.0.0:0")
        .await
        .expect("bind");
    let address = SocketAddr::from((
        [127, 0, 0, 1],
        listener.local_addr().expect("address").port(),
    ));
    let router = Router::new().route("/", get(|| async { "ok" }));
    tokio::spawn(toolmux_http::serve(
        listener,
        router,
        limits,
        std::future::pending::<()>(),
    ));
    address
}

/// A connection to `server` from the host's address `source` (any of 127.0.0.0/8, or one of
/// its interfaces').
async fn connect_from(source: &str, server: SocketAddr) -> TcpStream {
    let socket = TcpSocket::new_v4().expect("socket");
    socket
        .bind(format!("{source}:0").parse().expect("an address"))
        .expect("bind the source address");
    socket.connect(server).await.expect("connect")
}

/// An IPv4 address of this host that is not loopback: the one its route to the outside leaves
/// from (a UDP "connection" sends nothing; it only picks the source address).
fn interface_address() -> String {
    let socket = std::net::UdpSocket::bind("0.0.0.0:0").expect("a UDP socket");
    socket
        .connect("192.0.2.1:9")
        .expect("this test needs a network interface besides loopback (a route to 192.0.2.1)");
    let address = socket.local_addr().expect("the source address").ip();
    assert!(!address.is_loopback(), "{address}");
    address.to_string()
}

/// Opens a connection from `source` and sends half a request's head, never the rest: a slot
/// held for as long as the header timeout allows (or refused at once past the cap).
async fn hold(source: &str, server: SocketAddr, held: &mut Vec<TcpStream>) {
    let mut stream = connect_from(source, server).await;
    stream
        .write_all(b"GET / HTTP/1.1\r\nHost: x\r\n")
        .await
        .expect("send half a head");
    held.push(stream);
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
        hold("127.0.0.1", server, &mut held).await;
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

    let other = interface_address();
    let served = tokio::time::timeout(HANG, get_root_from(&other, server))
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
    // Loopback, however written, is one peer: this host.
    for loopback in [
        "127.0.0.2:1",
        "127.255.255.254:1",
        "[::1]:1",
        "[::ffff:127.0.0.9]:1",
    ] {
        assert_eq!(peer(loopback), peer("127.0.0.1:7"), "{loopback}");
    }
    assert_ne!(peer("[::2]:1"), peer("127.0.0.1:7"));
}

/// Found in review of issue 28: the cap was keyed by source address, and Linux lets a local
/// process send from any of 127.0.0.0/8, so a flood rotating through 127.0.0.2, 127.0.0.3, …
/// got a fresh cap per address and took every slot. Every loopback address is one peer now.
#[tokio::test]
async fn a_flood_rotating_through_loopback_addresses_is_one_peer() {
    let limits = ConnectionLimits {
        header_timeout: Duration::from_secs(3600),
        max_connections: 16,
        max_connections_per_peer: Some(4),
        ..ConnectionLimits::default()
    };
    let server = started(limits).await;
    let mut held = Vec::new();
    for n in 1..=16 {
        hold(&format!("127.0.0.{n}"), server, &mut held).await;
    }
    // The first four, from 127.0.0.1 to 127.0.0.4, hold the host's share; every later
    // address is refused at once with the cap's own answer.
    for stream in &mut held[4..] {
        let refusal = answer(stream).await;
        assert_eq!(
            refusal,
            "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n\
             Retry-After: 1\r\nConnection: close\r\nContent-Length: 152\r\n\r\n\
             {\"error\":{\"code\":\"unavailable\",\"message\":\"this address holds as many \
             connections as the server gives one client; close one and try again\",\
             \"details\":{}}}"
        );
    }
    let refused = get_root_from("127.0.0.200", server).await;
    assert!(refused.starts_with("HTTP/1.1 503"), "{refused}");
    // Another host still has its own share.
    let other = get_root_from(&interface_address(), server).await;
    assert!(other.starts_with("HTTP/1.1 200"), "{other}");
}
