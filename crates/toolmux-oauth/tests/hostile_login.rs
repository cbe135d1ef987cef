//! The sign-in's loopback redirect listener in a process that goes on after the sign-in
//! (`toolmux serve` signs in from the REST API): whichever way a sign-in ends, its listener is
//! stopped and its port closed by the time `finish` returns, so nothing on the machine can reach
//! a listener of a sign-in that is over.
//!
//! The MCP server here has no OAuth metadata at all, as servers of 2025-03-26 that rely on the
//! endpoints derived from their URL: the sign-in starts without asking it anything it answers,
//! and its token endpoint refuses the code.

use std::time::Duration;

use toolmux_oauth::{OAuthSettings, Target, start_login};

/// A server on loopback that answers every request with 404; its MCP URL.
async fn server_without_metadata() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}/mcp", listener.local_addr().expect("address"));
    tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, axum::Router::new()).await {
            panic!("the test server failed: {e}");
        }
    });
    url
}

/// The sign-in of `remote` at `url` with a client id registered beforehand.
fn target(project: &std::path::Path, url: &str) -> Target {
    let settings = OAuthSettings {
        client_id: Some("toolmux-test".into()),
        ..OAuthSettings::default()
    };
    Target::new(project, "remote", url, Some(&settings))
}

/// The value of `name` in the query of `url`.
fn query_value(url: &str, name: &str) -> String {
    url::Url::parse(url)
        .expect("a URL")
        .query_pairs()
        .find(|(key, _)| key == name)
        .map(|(_, value)| value.into_owned())
        .unwrap_or_else(|| panic!("`{name}` is in {url}"))
}

/// Whether something listens on `port` of 127.0.0.1. A connection reset counts: the socket was
/// listening when the connection was made, and closed with it still in its backlog.
async fn listening(port: u16) -> bool {
    match tokio::net::TcpStream::connect(("127.0.0.1", port)).await {
        Ok(_) => true,
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => true,
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => false,
        Err(e) => panic!("connecting to port {port} failed otherwise: {e}"),
    }
}

/// Found in review of issue 28: a sign-in that ran out of time only signalled its listener to
/// stop and returned, and one that finished waited 3 s for it and then left it running,
/// detached. On a single-threaded runtime nothing had run the listener's task by the time
/// `finish` returned, so its port still took connections. Now the port is closed when `finish`
/// returns, whether nobody came back or the redirect came and the code was refused.
#[tokio::test(flavor = "current_thread")]
async fn the_redirect_port_is_closed_when_a_sign_in_fails_or_finishes() {
    let url = server_without_metadata().await;
    let project = tempfile::tempdir().expect("temp dir");

    // Nobody comes back.
    let pending = start_login(&target(project.path(), &url))
        .await
        .expect("the sign-in starts");
    let authorization = pending.authorization_url().expect("a person signs in");
    let redirect_uri = query_value(authorization, "redirect_uri");
    let port = url::Url::parse(&redirect_uri)
        .expect("a URL")
        .port()
        .expect("a port");
    assert!(listening(port).await, "the listener waits for the redirect");
    let err = pending
        .finish(Duration::ZERO)
        .await
        .expect_err("nobody came back");
    assert_eq!(
        err.to_string(),
        "MCP server `remote`: nobody finished signing in within 0s; run `toolmux mcp login \
         remote` again"
    );
    assert!(!listening(port).await, "port {port} is closed");

    // The redirect comes back with this sign-in's state; the token endpoint refuses the code.
    let pending = start_login(&target(project.path(), &url))
        .await
        .expect("the sign-in starts");
    let authorization = pending.authorization_url().expect("a person signs in");
    let redirect_uri = query_value(authorization, "redirect_uri");
    let state = query_value(authorization, "state");
    let port = url::Url::parse(&redirect_uri)
        .expect("a URL")
        .port()
        .expect("a port");
    let browser = tokio::spawn(async move {
        let page = reqwest::get(format!("{redirect_uri}?code=c0de&state={state}"))
            .await
            .expect("the listener answers");
        (page.status().as_u16(), page.text().await.expect("a page"))
    });
    let err = pending
        .finish(Duration::from_secs(60))
        .await
        .expect_err("the code is refused");
    let (status, page) = browser.await.expect("the browser ran");
    assert!(
        err.to_string()
            .starts_with("MCP server `remote`: sign-in failed: "),
        "{err}"
    );
    assert_eq!(status, 400, "{page}");
    assert!(!listening(port).await, "port {port} is closed");
}
