//! `url_fetch` of a 2 MB HTML page from a server on loopback: the whole fetch (connect, read,
//! main-content extraction, Markdown) and, apart, the conversion alone, so the figures say
//! where the time goes. The same for a 900 KB page, which is under the Markdown limit
//! (`html::MAX_MARKDOWN_HTML_BYTES`, 1 MiB), where the 2 MB page becomes plain text.
//!
//! `CARGO_TARGET_DIR=/root/.cache/toolmux/rel cargo bench -p toolmux-web --bench fetch_html`

use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use toolmux_web::{FetchSettings, Fetcher, html_to_markdown};

const ROUNDS: usize = 20;

/// A page of about `size` bytes: navigation, a long article of sections, a sidebar and a
/// footer.
fn page(size: usize) -> String {
    let mut html = String::from(
        "<!doctype html><html><head><title>Benchmark article</title></head><body>\
         <header><nav><ul><li><a href='/'>Home</a></li><li><a href='/a'>About</a></li></ul></nav></header>\
         <main><article><h1>Benchmark article</h1>",
    );
    let mut section = 0;
    while html.len() < size {
        section += 1;
        html.push_str(&format!(
            "<h2>Section {section}</h2><p>Paragraph text with <a href='/link/{section}'>a link</a>, \
             <em>emphasis</em> and <code>code</code>, long enough to be read as content by the \
             extraction, which scores paragraphs by their length and their commas, as \
             readability.js does.</p><ul><li>one item</li><li>another item</li></ul>"
        ));
    }
    html.push_str("</article></main><aside>Sidebar</aside><footer>Footer</footer></body></html>");
    html
}

fn stats(name: &str, mut times: Vec<Duration>) {
    times.sort();
    let median = times[times.len() / 2];
    let min = times[0];
    let max = times[times.len() - 1];
    println!(
        "{name:<40} median {median:>9.2?}  min {min:>9.2?}  max {max:>9.2?}  ({} rounds)",
        times.len()
    );
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    for (name, size) in [("2 MB", 2 * 1024 * 1024), ("900 KB", 900 * 1024)] {
        let html = page(size);
        println!("{name} page: {} bytes", html.len());
        measure(&runtime, name, &html);
    }
}

fn measure(runtime: &tokio::runtime::Runtime, name: &str, html: &str) {
    let html = html.to_string();
    runtime.block_on(async {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let body = html.clone();
        let server = tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                let body = body.clone();
                tokio::spawn(async move {
                    let mut buf = [0u8; 4096];
                    let _ = stream.read(&mut buf).await;
                    let head = format!(
                        "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                        body.len()
                    );
                    let _ = stream.write_all(head.as_bytes()).await;
                    let _ = stream.write_all(body.as_bytes()).await;
                });
            }
        });
        let fetcher = Fetcher::new(FetchSettings {
            allow: vec!["127.0.0.1".into()],
            ..FetchSettings::default()
        })
        .expect("a client");
        let url = format!("http://{addr}/article");
        let mut whole = Vec::new();
        let mut out = (0, "");
        for _ in 0..ROUNDS {
            let started = Instant::now();
            let fetched = fetcher.fetch(&url, None).await.expect("fetched");
            whole.push(started.elapsed());
            assert!(!fetched.truncated);
            out = (fetched.content.len(), fetched.format);
        }
        server.abort();
        println!("result: {} bytes of {}", out.0, out.1);
        stats(&format!("url_fetch {name} HTML (whole fetch)"), whole);
    });
    let mut convert = Vec::new();
    for _ in 0..ROUNDS {
        let started = Instant::now();
        let page = html_to_markdown(&html, "http://127.0.0.1/article");
        convert.push(started.elapsed());
        assert!(page.content.contains("Section 1"));
    }
    stats("rendering only (limits, extraction, Markdown)", convert);
    let mut markdown_only = Vec::new();
    for _ in 0..ROUNDS {
        let started = Instant::now();
        let markdown = htmd::convert(&html).expect("converts");
        markdown_only.push(started.elapsed());
        assert!(markdown.contains("Section 1"));
    }
    stats("htmd alone (whole page, no extraction)", markdown_only);
}
