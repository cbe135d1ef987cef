//! `url_fetch`: one GET through the guarded client, read under a byte cap and a time cap, and
//! turned into something a model can read: HTML as Markdown of its main content, JSON and
//! text as they are, anything else described (type and size) rather than shown.

use std::error::Error as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, LazyLock};

use reqwest::Url;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap};
use serde::Serialize;
use serde_json::{Map, Value, json};
use tokio::sync::Semaphore;

use crate::guard::{Allowlist, GuardedResolver, Refused, check_url};
use crate::html::{self, Cancelled, Rendered};
use crate::{FetchSettings, WebError};

/// What a fetch gives back; also the tool's structured content.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Fetched {
    /// The URL finally answered (after redirects).
    pub url: String,
    /// The HTTP status code.
    pub status: u16,
    /// The response's `Content-Type`, when it sent one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content_type: Option<String>,
    /// How `content` was made: `markdown` (from HTML), `json`, `text`, or `binary` (described,
    /// not shown).
    pub format: &'static str,
    /// The page's title, for HTML.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The content.
    pub content: String,
    /// Why an HTML page came back as plain text rather than Markdown (it was over a limit).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The bytes of body read (after decompression).
    pub bytes: usize,
    /// True when the body was longer than the cap and was cut there.
    pub truncated: bool,
    /// The response headers (the first value of each), for code mode's `fetch`.
    pub headers: Map<String, Value>,
}

/// The output schema of `url_fetch`.
pub(crate) fn output_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "url": {"type": "string", "description": "The URL finally answered, after redirects."},
            "status": {"type": "integer"},
            "contentType": {"type": "string"},
            "format": {"enum": ["markdown", "json", "text", "binary"]},
            "title": {"type": "string"},
            "content": {"type": "string"},
            "note": {"type": "string", "description": "Why an HTML page is plain text, not Markdown."},
            "bytes": {"type": "integer", "minimum": 0},
            "truncated": {"type": "boolean"},
            "headers": {"type": "object", "additionalProperties": {"type": "string"}}
        },
        "required": ["url", "status", "format", "content", "bytes", "truncated", "headers"]
    })
}

/// The guarded HTTP client and the caps of one pack.
#[derive(Clone, Debug)]
pub struct Fetcher {
    client: reqwest::Client,
    allow: Arc<Allowlist>,
    settings: FetchSettings,
}

impl Fetcher {
    /// A client whose every hop goes through the guard.
    pub fn new(settings: FetchSettings) -> Result<Self, WebError> {
        let allow = Arc::new(Allowlist::parse(&settings.allow)?);
        let redirect_allow = Arc::clone(&allow);
        let max_redirects = settings.max_redirects;
        let policy = reqwest::redirect::Policy::custom(move |attempt| {
            // `previous` holds the URLs already requested, the first one included.
            if attempt.previous().len() > max_redirects {
                return attempt.error(Refused::TooManyRedirects(max_redirects));
            }
            match check_url(&redirect_allow, attempt.url()) {
                Ok(()) => attempt.follow(),
                Err(refused) => attempt.error(refused),
            }
        });
        let mut headers = HeaderMap::new();
        headers.insert(
            ACCEPT,
            reqwest::header::HeaderValue::from_static(
                "text/html,application/xhtml+xml,application/json;q=0.9,text/*;q=0.8,*/*;q=0.5",
            ),
        );
        let client = reqwest::Client::builder()
            .user_agent(concat!("toolmux-url-fetch/", env!("CARGO_PKG_VERSION")))
            .default_headers(headers)
            .redirect(policy)
            .dns_resolver(Arc::new(GuardedResolver {
                allow: Arc::clone(&allow),
            }))
            .no_proxy()
            .connect_timeout(settings.timeout)
            .build()
            .map_err(|e| WebError::Client(e.to_string()))?;
        Ok(Self {
            client,
            allow,
            settings,
        })
    }

    /// The caps in force.
    pub fn settings(&self) -> &FetchSettings {
        &self.settings
    }

    /// Fetches `url`, reading at most `max_bytes` (never more than the configured cap), all
    /// within the configured time cap: connecting, redirects, the body and turning it into
    /// Markdown.
    pub async fn fetch(&self, url: &str, max_bytes: Option<usize>) -> Result<Fetched, WebError> {
        let url = Url::parse(url).map_err(|e| WebError::BadUrl(format!("`{url}`: {e}")))?;
        check_url(&self.allow, &url)?;
        let cap = max_bytes
            .unwrap_or(self.settings.max_bytes)
            .min(self.settings.max_bytes);
        let limit = self.settings.timeout;
        let work = async {
            let (head, body, truncated) = self.get(url, cap).await?;
            let page = match head.format() {
                "markdown" => Some(render_page(&body, &head.url).await?),
                _ => None,
            };
            Ok(finish(head, body, truncated, page))
        };
        tokio::time::timeout(limit, work)
            .await
            .map_err(|_| WebError::TimedOut(limit))?
    }

    /// Sends the request and reads the body up to `cap` bytes.
    async fn get(&self, url: Url, cap: usize) -> Result<(Head, Vec<u8>, bool), WebError> {
        let mut response = self.client.get(url).send().await.map_err(explain)?;
        let head = Head {
            url: response.url().to_string(),
            status: response.status().as_u16(),
            content_type: response
                .headers()
                .get(CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string),
            length: response.content_length(),
            headers: response
                .headers()
                .keys()
                .filter_map(|name| {
                    let value = response.headers().get(name)?.to_str().ok()?;
                    Some((name.as_str().to_string(), Value::String(value.to_string())))
                })
                .collect(),
        };
        // A binary body is described, not shown: with its length announced, nothing of it
        // needs reading.
        if head.format() == "binary" && head.length.is_some() {
            return Ok((head, Vec::new(), false));
        }
        let (body, truncated) = read_capped(&mut response, cap).await.map_err(explain)?;
        Ok((head, body, truncated))
    }
}

/// Reads a response's body up to `cap` bytes; true when there was more. `chunk` yields
/// decompressed bytes, so the cap bounds what a gzip bomb expands to, and nothing past the cap
/// is ever buffered.
pub(crate) async fn read_capped(
    response: &mut reqwest::Response,
    cap: usize,
) -> Result<(Vec<u8>, bool), reqwest::Error> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        let room = cap.saturating_sub(body.len());
        if chunk.len() > room {
            body.extend_from_slice(&chunk[..room]);
            return Ok((body, true));
        }
        body.extend_from_slice(&chunk);
    }
    Ok((body, false))
}

/// How many pages are rendered at once, whoever is waiting for them: a render outlives a
/// caller that gave up until it reaches its next check, and with this it cannot pile up.
static RENDER_SLOTS: LazyLock<Arc<Semaphore>> = LazyLock::new(|| {
    let cores = std::thread::available_parallelism().map_or(2, std::num::NonZero::get);
    Arc::new(Semaphore::new(cores))
});

/// Sets the render's cancellation flag when the fetch that waits for it is dropped (its time
/// cap passed, or its caller went away).
struct CancelOnDrop(Arc<AtomicBool>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// Renders an HTML body on a thread of its own ([`on_render_thread`]).
async fn render_page(body: &[u8], url: &str) -> Result<Rendered, WebError> {
    let html = String::from_utf8_lossy(body).into_owned();
    let url = url.to_string();
    on_render_thread(move |cancel| html::render_on_this_thread(&html, &url, cancel)).await
}

/// Runs `work` on a thread of its own, with a stack sized for the deepest tree the HTML limits
/// let through ([`html::RENDER_STACK_BYTES`]), in one of the render slots; the async caller
/// only waits, so its time cap covers the work. When the wait is dropped, `work`'s cancel flag
/// is set and it stops at its next check; what runs between two checks is bounded by the HTML
/// limits.
async fn on_render_thread<T: Send + 'static>(
    work: impl FnOnce(&AtomicBool) -> Result<T, Cancelled> + Send + 'static,
) -> Result<T, WebError> {
    let slot = Arc::clone(&RENDER_SLOTS)
        .acquire_owned()
        .await
        .map_err(|e| WebError::Render(format!("no rendering slot: {e}")))?;
    let cancel = Arc::new(AtomicBool::new(false));
    let _cancel_on_drop = CancelOnDrop(Arc::clone(&cancel));
    let (send, receive) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("url-fetch-render".into())
        .stack_size(html::RENDER_STACK_BYTES)
        .spawn(move || {
            let _running = html::Running::start();
            let _slot = slot;
            let done = work(&cancel);
            // The receiver is gone only when the fetch was dropped (its time cap passed):
            // nobody is left to tell.
            let _gone = send.send(done);
        })
        .map_err(|e| WebError::Render(format!("cannot start a thread to render the page: {e}")))?;
    match receive.await {
        Ok(Ok(rendered)) => Ok(rendered),
        Ok(Err(Cancelled)) => Err(WebError::Render("the render was cancelled".into())),
        Err(_) => Err(WebError::Render(
            "the render stopped without an answer".into(),
        )),
    }
}

/// The response before its body.
struct Head {
    url: String,
    status: u16,
    content_type: Option<String>,
    length: Option<u64>,
    headers: Map<String, Value>,
}

impl Head {
    /// The media type, lowercased, without parameters.
    fn media_type(&self) -> String {
        self.content_type
            .as_deref()
            .unwrap_or("")
            .split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase()
    }

    fn format(&self) -> &'static str {
        let media = self.media_type();
        if media == "text/html" || media == "application/xhtml+xml" {
            "markdown"
        } else if media == "application/json" || media.ends_with("+json") {
            "json"
        } else if media.starts_with("text/")
            || media.ends_with("+xml")
            || matches!(
                media.as_str(),
                "application/xml" | "application/javascript" | "application/x-yaml" | ""
            )
        {
            "text"
        } else {
            "binary"
        }
    }
}

/// The result: the rendered page for HTML, the body as it came for JSON and text, a
/// description for anything else.
fn finish(head: Head, body: Vec<u8>, truncated: bool, page: Option<Rendered>) -> Fetched {
    let mut format = head.format();
    let bytes = body.len();
    let mut note = None;
    let (title, content) = match (format, page) {
        ("markdown", Some(page)) => {
            if !page.markdown {
                format = "text";
            }
            note = page.note;
            (page.title, page.content)
        }
        ("binary", _) => {
            let size = match head.length {
                Some(n) => format!("{n} bytes"),
                None if truncated => format!("more than {bytes} bytes"),
                None => format!("{bytes} bytes"),
            };
            let media = head.content_type.as_deref().unwrap_or("unknown type");
            (
                None,
                format!("[binary content: {media}, {size}; not shown]"),
            )
        }
        // JSON and text pass through as they came (a cut JSON document stays cut; the
        // `truncated` flag says so).
        _ => (None, String::from_utf8_lossy(&body).into_owned()),
    };
    Fetched {
        url: head.url,
        status: head.status,
        content_type: head.content_type,
        format,
        title,
        content,
        note,
        bytes,
        truncated,
        headers: head.headers,
    }
}

/// The main content of a page as Markdown, with its title: readability's extraction first
/// (the article, without navigation, sidebars and footers), and the whole page without its
/// chrome when readability finds no article (a short page, a listing). A page over the HTML
/// limits ([`html::MAX_MARKDOWN_HTML_BYTES`], [`html::MAX_DEPTH`], [`html::MAX_ELEMENTS`])
/// comes back as plain text, and says why. Blocks until done, on a thread of its own.
pub fn html_to_markdown(html: &str, url: &str) -> Rendered {
    html::render_html(html, url)
}

/// A client error as the guard's refusal when that is what it is (reqwest wraps the
/// resolver's and the redirect policy's errors), else with its causes spelled out.
fn explain(error: reqwest::Error) -> WebError {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(&error);
    while let Some(e) = source {
        if let Some(refused) = e.downcast_ref::<Refused>() {
            return WebError::Refused(refused.clone());
        }
        source = e.source();
    }
    if error.is_timeout() {
        return WebError::Client(format!("timed out: {}", chain(&error)));
    }
    WebError::Client(chain(&error))
}

/// An error and its causes, `: `-separated.
fn chain(error: &reqwest::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(e) = source {
        let part = e.to_string();
        if !text.contains(&part) {
            text.push_str(": ");
            text.push_str(&part);
        }
        source = e.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_main_content_is_kept_and_the_chrome_dropped() {
        let paragraph = "The quick brown fox jumps over the lazy dog, again and again, \
                         so that the article is long enough to be an article. "
            .repeat(6);
        let html = format!(
            "<html><head><title>Foxes</title></head><body>\
             <nav><a href='/'>Home</a> <a href='/about'>About us</a></nav>\
             <article><h1>All about foxes</h1><p>{paragraph}</p><p>{paragraph}</p></article>\
             <footer>Copyright footer text</footer><script>var tracker = 1;</script>\
             </body></html>"
        );
        let page = html_to_markdown(&html, "http://example.com/foxes");
        assert!(page.markdown, "{page:?}");
        let (title, markdown) = (page.title, page.content);
        assert_eq!(title.as_deref(), Some("Foxes"));
        assert!(markdown.contains("quick brown fox"), "{markdown}");
        assert!(!markdown.contains("About us"), "{markdown}");
        assert!(!markdown.contains("Copyright footer"), "{markdown}");
        assert!(!markdown.contains("tracker"), "{markdown}");
    }

    /// D24: a render that outlives its caller stops. Made deterministic: the work waits at a
    /// gate the test opens only after the wait for it was dropped (what the fetch's time cap
    /// does), so the drop happens during the work on every run, and the work then finds its
    /// cancel flag set.
    #[tokio::test]
    async fn work_whose_wait_is_dropped_is_told_to_stop() {
        let (started, has_started) = std::sync::mpsc::channel();
        let (open_gate, gate) = std::sync::mpsc::channel::<()>();
        let (ended, has_ended) = std::sync::mpsc::channel();
        let work = move |cancel: &AtomicBool| {
            started.send(()).expect("the test waits");
            gate.recv().expect("the test opens the gate");
            let told = cancel.load(Ordering::Relaxed);
            ended.send(told).expect("the test waits");
            if told { Err(Cancelled) } else { Ok(()) }
        };
        let mut waiting = Box::pin(on_render_thread(work));
        // The wait cannot end while the gate is closed; it is dropped once the work runs.
        tokio::select! {
            biased;
            done = &mut waiting => panic!("the wait ended with the gate closed: {done:?}"),
            started = tokio::task::spawn_blocking(move || has_started.recv()) => {
                assert_eq!(started.ok(), Some(Ok(())), "the work never started");
            }
        }
        drop(waiting);
        open_gate.send(()).expect("the work waits at the gate");
        assert_eq!(has_ended.recv(), Ok(true), "the work was not told to stop");
    }
}
