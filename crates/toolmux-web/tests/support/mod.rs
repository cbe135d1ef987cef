//! What the web pack's test servers share.

use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;

/// Reads an HTTP request head byte by byte, up to and including its blank line (the body, if
/// any, stays unread); `None` where the client closes the connection or it fails first.
pub async fn read_head(stream: &mut TcpStream) -> Option<Vec<u8>> {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match stream.read(&mut byte).await {
            Ok(1) => head.push(byte[0]),
            _ => return None,
        }
    }
    Some(head)
}
