//! `url_fetch` against real HTTP servers on loopback: conversion, caps, and the SSRF guard.
//!
//! The servers are plain sockets speaking HTTP/1.1 by hand, so a test can misbehave the way a
//! hostile server does (drip its headers, send an endless body, redirect forever) and count
//! the connections it received: "refused before connecting" is proved by a server that was
//! never reached. The guard refuses loopback by default, so the tests that need a server
//! allow exactly `127.0.0.1` and nothing else, and the default is proved to refuse it.

mod support;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use support::read_head;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use toolmux_web::{FetchSettings, Fetched, Fetcher, WebError};

/// What a test server does with one connection, after reading the request head.
type Handler = Arc<dyn Fn(String, TcpStream) -> futures_lite::BoxFuture + Send + Sync>;

mod futures_lite {
    pub type BoxFuture = std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>;
}

/// A server on `ip` (port chosen by the system) counting its connections.
struct Server {
    addr: SocketAddr,
    connections: Arc<AtomicUsize>,
}

impl Server {
    async fn start(ip: &str, handler: Handler) -> Self {
        let listener = TcpListener::bind((ip, 0)).await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let connections = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&connections);
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                counted.fetch_add(1, Ordering::SeqCst);
                let handler = Arc::clone(&handler);
                tokio::spawn(async move {
                    let Some(head) = read_head(&mut stream).await else {
                        return;
                    };
                    let head = String::from_utf8_lossy(&head).into_owned();
                    let path = head.split(' ').nth(1).unwrap_or("/").to_string();
                    handler(path, stream).await;
                });
            }
        });
        Self { addr, connections }
    }

    /// A server answering every request with the same status, headers and body.
    async fn answering(
        ip: &str,
        status: &'static str,
        headers: Vec<String>,
        body: Vec<u8>,
    ) -> Self {
        let handler: Handler = Arc::new(move |_path, mut stream| {
            let mut response = format!("HTTP/1.1 {status}\r\nConnection: close\r\n");
            for h in &headers {
                response.push_str(h);
                response.push_str("\r\n");
            }
            response.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
            let mut bytes = response.into_bytes();
            bytes.extend_from_slice(&body);
            Box::pin(async move {
                let _ = stream.write_all(&bytes).await;
                let _ = stream.shutdown().await;
            })
        });
        Self::start(ip, handler).await
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }
}

/// The defaults, allowing only the loopback address the test servers listen on.
fn allowing_test_servers() -> FetchSettings {
    FetchSettings {
        allow: vec!["127.0.0.1".to_string()],
        ..FetchSettings::default()
    }
}

fn fetcher(settings: FetchSettings) -> Fetcher {
    Fetcher::new(settings).expect("a client")
}

fn refusal(result: Result<Fetched, WebError>) -> String {
    match result {
        Err(e @ WebError::Refused(_)) => e.to_string(),
        Err(other) => panic!("expected a refusal, got the error {other}"),
        Ok(fetched) => panic!("expected a refusal, got {}", fetched.content),
    }
}

const ARTICLE: &str = "Foxes are small to medium-sized omnivorous mammals belonging to several genera \
    of the family Canidae. They have a flattened skull, upright triangular ears, a pointed, \
    slightly upturned snout, and a long bushy tail. ";

fn page_with_chrome() -> Vec<u8> {
    format!(
        "<!doctype html><html><head><title>Foxes</title><style>body{{color:red}}</style></head>\
         <body><header><nav><ul><li><a href='/'>Home</a></li><li><a href='/shop'>Shop the \
         merchandise</a></li><li><a href='/login'>Sign in</a></li></ul></nav></header>\
         <main><article><h1>Foxes</h1><p>{a}</p><h2>Habitat</h2><p>{a}{a}</p>\
         <ul><li>red fox</li><li>arctic fox</li></ul></article></main>\
         <aside class='sidebar'>Subscribe to our newsletter</aside>\
         <footer>Copyright 2026 Example Corp. All rights reserved.</footer>\
         <script>window.track('pageview')</script></body></html>",
        a = ARTICLE
    )
    .into_bytes()
}

/// Fetches `path` from a loopback server answering `200 OK` with `body` as `content_type`.
async fn fetch_served(content_type: &str, body: Vec<u8>, path: &str) -> Fetched {
    let server = Server::answering(
        "127.0.0.1",
        "200 OK",
        vec![format!("Content-Type: {content_type}")],
        body,
    )
    .await;
    fetcher(allowing_test_servers())
        .fetch(&server.url(path), None)
        .await
        .expect("fetched")
}

#[tokio::test]
async fn an_html_page_becomes_markdown_of_its_main_content() {
    let fetched = fetch_served("text/html; charset=utf-8", page_with_chrome(), "/foxes").await;
    assert_eq!(fetched.format, "markdown");
    assert_eq!(fetched.status, 200);
    assert_eq!(fetched.title.as_deref(), Some("Foxes"));
    let md = &fetched.content;
    assert!(md.contains("## Habitat"), "{md}");
    assert!(md.contains("omnivorous mammals"), "{md}");
    assert!(md.contains("arctic fox"), "{md}");
    for chrome in [
        "Shop the merchandise",
        "Sign in",
        "newsletter",
        "Copyright",
        "track(",
        "color:red",
    ] {
        assert!(!md.contains(chrome), "`{chrome}` should be gone: {md}");
    }
    assert!(!fetched.truncated);
}

#[tokio::test]
async fn json_and_text_pass_through_and_binary_is_described() {
    let json = br#"{"temperature": 21.5, "city": "Seoul"}"#.to_vec();
    let fetched = fetch_served("application/json", json.clone(), "/weather").await;
    assert_eq!(fetched.format, "json");
    assert_eq!(fetched.content.as_bytes(), json.as_slice());

    let png = [&b"\x89PNG\r\n\x1a\n"[..], &[0u8; 1000]].concat();
    let fetched = fetch_served("image/png", png, "/logo.png").await;
    assert_eq!(fetched.format, "binary");
    assert!(fetched.content.contains("image/png"), "{}", fetched.content);
    assert!(
        fetched.content.contains("1008 bytes"),
        "{}",
        fetched.content
    );
    assert!(!fetched.content.contains("PNG"), "{}", fetched.content);
}

#[tokio::test]
async fn the_default_refuses_loopback_private_and_metadata_addresses_before_connecting() {
    let server = Server::answering("127.0.0.1", "200 OK", vec![], b"secret".to_vec()).await;
    let default = fetcher(FetchSettings::default());
    let message = refusal(default.fetch(&server.url("/"), None).await);
    assert!(
        message.contains("127.0.0.1 is a loopback address"),
        "{message}"
    );
    assert!(message.contains("urlFetch.allow"), "{message}");
    assert_eq!(server.connections(), 0, "the refused server was reached");

    for (url, expected) in [
        ("http://[::1]:9/", "::1 is a loopback address"),
        (
            "http://169.254.169.254/latest/meta-data/",
            "169.254.169.254 is a cloud metadata address",
        ),
        ("http://10.0.0.5/admin", "10.0.0.5 is a private address"),
        (
            "http://[fd00:ec2::254]/",
            "fd00:ec2::254 is a cloud metadata address",
        ),
        ("http://100.64.1.1/", "carrier-grade NAT"),
        ("http://0.0.0.0:9/", "unspecified"),
        ("http://[::ffff:127.0.0.1]:9/", "127.0.0.1"),
        // Other spellings of loopback: a URL parser reads these as 127.0.0.1.
        ("http://2130706433:9/", "127.0.0.1 is a loopback address"),
        ("http://0x7f.1:9/", "127.0.0.1 is a loopback address"),
    ] {
        let message = refusal(default.fetch(url, None).await);
        assert!(message.contains(expected), "{url}: {message}");
    }

    // A name is judged by what it resolves to.
    let message = refusal(
        default
            .fetch(&format!("http://localhost:{}/", server.addr.port()), None)
            .await,
    );
    assert!(message.contains("localhost resolves to"), "{message}");
    assert!(message.contains("loopback"), "{message}");
    assert_eq!(server.connections(), 0);

    // Only http and https.
    let message = refusal(default.fetch("file:///etc/passwd", None).await);
    assert!(message.contains("not an http or https URL"), "{message}");
}

#[tokio::test]
async fn a_redirect_to_a_private_address_is_refused_before_connecting() {
    // The target listens on 127.0.0.2, which the allowlist (127.0.0.1 only) does not cover.
    let target = Server::answering("127.0.0.2", "200 OK", vec![], b"internal".to_vec()).await;
    for location in [
        target.url("/internal"),
        "http://169.254.169.254/latest/meta-data/iam/".to_string(),
        format!("http://[::1]:{}/internal", target.addr.port()),
    ] {
        let redirector = Server::answering(
            "127.0.0.1",
            "302 Found",
            vec![format!("Location: {location}")],
            Vec::new(),
        )
        .await;
        let result = fetcher(allowing_test_servers())
            .fetch(&redirector.url("/go"), None)
            .await;
        let message = refusal(result);
        assert!(message.starts_with("refused: "), "{location}: {message}");
        assert_eq!(redirector.connections(), 1, "the first hop was allowed");
    }
    assert_eq!(target.connections(), 0, "the private target was reached");
}

#[tokio::test]
async fn redirects_are_followed_up_to_the_limit() {
    let handler: Handler = Arc::new(|path: String, mut stream: TcpStream| {
        let n: u32 = path.trim_start_matches("/r").parse().unwrap_or(0);
        let response = if path.starts_with("/loop") {
            "HTTP/1.1 302 Found\r\nLocation: /loop\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_string()
        } else if n < 2 {
            format!(
                "HTTP/1.1 302 Found\r\nLocation: /r{}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                n + 1
            )
        } else {
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 7\r\nConnection: close\r\n\r\narrived".to_string()
        };
        Box::pin(async move {
            let _ = stream.write_all(response.as_bytes()).await;
        })
    });
    let server = Server::start("127.0.0.1", handler).await;
    let settings = FetchSettings {
        max_redirects: 3,
        ..allowing_test_servers()
    };
    let fetched = fetcher(settings.clone())
        .fetch(&server.url("/r0"), None)
        .await
        .expect("two redirects are within the limit");
    assert_eq!(fetched.content, "arrived");
    assert!(fetched.url.ends_with("/r2"), "{}", fetched.url);

    let message = refusal(fetcher(settings).fetch(&server.url("/loop"), None).await);
    assert!(message.contains("more than 3 redirects"), "{message}");
}

#[tokio::test]
async fn an_endless_body_is_cut_at_the_cap() {
    // Announces a gigabyte and sends it as fast as the client reads.
    let handler: Handler = Arc::new(|_path, mut stream: TcpStream| {
        Box::pin(async move {
            let head =
                "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 1073741824\r\n\r\n";
            if stream.write_all(head.as_bytes()).await.is_err() {
                return;
            }
            let block = vec![b'a'; 64 * 1024];
            for _ in 0..(1 << 14) {
                if stream.write_all(&block).await.is_err() {
                    return;
                }
            }
        })
    });
    let server = Server::start("127.0.0.1", handler).await;
    let settings = FetchSettings {
        max_bytes: 1024 * 1024,
        ..allowing_test_servers()
    };
    let started = Instant::now();
    let fetched = fetcher(settings.clone())
        .fetch(&server.url("/huge"), None)
        .await
        .expect("fetched");
    assert!(fetched.truncated);
    assert_eq!(fetched.bytes, 1024 * 1024);
    assert_eq!(fetched.content.len(), 1024 * 1024);
    assert!(started.elapsed() < Duration::from_secs(10));

    // A caller may ask for less, never for more.
    let fetched = fetcher(settings.clone())
        .fetch(&server.url("/huge"), Some(1000))
        .await
        .expect("fetched");
    assert_eq!(fetched.bytes, 1000);
    let fetched = fetcher(settings)
        .fetch(&server.url("/huge"), Some(1 << 30))
        .await
        .expect("fetched");
    assert_eq!(fetched.bytes, 1024 * 1024);
}

#[tokio::test]
async fn a_slow_loris_server_hits_the_time_cap() {
    // Drips its response one byte every 100 ms, headers and body alike, forever.
    let handler: Handler = Arc::new(|_path, mut stream: TcpStream| {
        Box::pin(async move {
            let head =
                b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 100000\r\n\r\n";
            for byte in head.iter().chain(std::iter::repeat(&b'x')) {
                if stream.write_all(&[*byte]).await.is_err() {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        })
    });
    let server = Server::start("127.0.0.1", handler).await;
    let settings = FetchSettings {
        timeout: Duration::from_millis(1500),
        ..allowing_test_servers()
    };
    let started = Instant::now();
    let result = fetcher(settings).fetch(&server.url("/slow"), None).await;
    let elapsed = started.elapsed();
    assert!(matches!(result, Err(WebError::TimedOut(_))), "{result:?}");
    assert!(elapsed >= Duration::from_millis(1400), "{elapsed:?}");
    assert!(elapsed < Duration::from_secs(4), "{elapsed:?}");
}

#[tokio::test]
async fn a_gzip_body_is_decompressed_and_a_gzip_bomb_is_cut_at_the_cap() {
    use std::io::Write as _;
    // 64 MiB of spaces compress to about 64 KiB: the cap must bound what it expands to.
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    let block = vec![b' '; 1024 * 1024];
    for _ in 0..64 {
        encoder.write_all(&block).expect("compress");
    }
    let compressed = encoder.finish().expect("compressed");
    assert!(compressed.len() < 1024 * 1024);
    let server = Server::answering(
        "127.0.0.1",
        "200 OK",
        vec![
            "Content-Type: text/plain".into(),
            "Content-Encoding: gzip".into(),
        ],
        compressed,
    )
    .await;
    let settings = FetchSettings {
        max_bytes: 2 * 1024 * 1024,
        ..allowing_test_servers()
    };
    let fetched = fetcher(settings)
        .fetch(&server.url("/bomb"), None)
        .await
        .expect("fetched");
    assert!(fetched.truncated);
    assert_eq!(fetched.bytes, 2 * 1024 * 1024);
    assert!(fetched.content.bytes().all(|b| b == b' '), "decompressed");
}
