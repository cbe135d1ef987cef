//! Compressed copies of the embedded files, made on a file's first request in each encoding and
//! kept for the process's life: the bundle is compressed once, at the best ratio, instead of on
//! every request, and a server that nobody opens in a browser compresses nothing.

use std::collections::HashMap;
use std::io::Write;
use std::sync::{Arc, LazyLock, Mutex, OnceLock, PoisonError};

use axum::body::Bytes;
use axum::http::{HeaderMap, header};

/// A content coding the server sends.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Encoding {
    Brotli,
    Gzip,
}

impl Encoding {
    /// Its `Content-Encoding` token.
    pub(crate) fn token(self) -> &'static str {
        match self {
            Encoding::Brotli => "br",
            Encoding::Gzip => "gzip",
        }
    }
}

/// Smaller files gain less than the header costs.
const MIN_SIZE: usize = 512;

/// Text compresses; images, fonts and archives already are.
pub(crate) fn worth_compressing(mime: &str, size: usize) -> bool {
    size >= MIN_SIZE
        && (mime.starts_with("text/")
            || ["javascript", "json", "xml", "svg", "wasm"]
                .iter()
                .any(|kind| mime.contains(kind)))
}

/// The codings `Accept-Encoding` allows (a `q=0` refuses one).
pub(crate) fn accepted(headers: &HeaderMap) -> Accepted {
    let mut accepted = Vec::new();
    for value in headers.get_all(header::ACCEPT_ENCODING) {
        let Ok(value) = value.to_str() else { continue };
        for item in value.split(',') {
            let mut parts = item.split(';');
            let coding = parts.next().unwrap_or("").trim().to_ascii_lowercase();
            let refused = parts.any(|p| {
                p.trim()
                    .strip_prefix("q=")
                    .and_then(|q| q.trim().parse::<f32>().ok())
                    .is_some_and(|q| q <= 0.0)
            });
            if !refused {
                accepted.push(coding);
            }
        }
    }
    let takes = |token: &str| accepted.iter().any(|c| c == token || c == "*");
    Accepted {
        brotli: takes("br"),
        gzip: takes("gzip"),
    }
}

/// The codings a request accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Accepted {
    pub brotli: bool,
    pub gzip: bool,
}

/// One file's compressed copy in one coding; `None` once made when it came out no smaller.
type Slot = Arc<OnceLock<Option<Bytes>>>;

static CACHE: LazyLock<Mutex<HashMap<(String, Encoding), Slot>>> = LazyLock::new(Mutex::default);

fn slot(name: &str, encoding: Encoding) -> Slot {
    let mut cache = CACHE.lock().unwrap_or_else(PoisonError::into_inner);
    cache
        .entry((name.to_string(), encoding))
        .or_default()
        .clone()
}

/// The files whose brotli copy is being made in the background.
static MAKING: LazyLock<Mutex<std::collections::HashSet<String>>> = LazyLock::new(Mutex::default);

/// The brotli copy of `name` if it is made; otherwise `None`, and it is made in the background.
/// Brotli at its best ratio takes a while for a large bundle (seconds in a debug build), which
/// the first page load should not wait for: it gets gzip, the next ones brotli. It is made on a
/// thread of its own, not tokio's blocking pool, because the runtime waits for that pool's
/// tasks when it shuts down: a server stopped just after a first page load would otherwise
/// stop only once the bundle is compressed, for nobody.
pub(crate) fn brotli_if_ready(name: &str, data: &'static [u8]) -> Option<Option<Bytes>> {
    let slot = slot(name, Encoding::Brotli);
    if let Some(done) = slot.get() {
        return Some(done.clone());
    }
    let mut making = MAKING.lock().unwrap_or_else(PoisonError::into_inner);
    if making.insert(name.to_string()) {
        let owned = name.to_string();
        let started = std::thread::Builder::new()
            .name("toolmux-brotli".into())
            .spawn(move || {
                slot.get_or_init(|| smaller(data, Encoding::Brotli));
                MAKING
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .remove(&owned);
            });
        if let Err(e) = started {
            // Gzip goes on serving; the next request tries again.
            tracing::warn!(error = %e, "cannot start compressing the web app with brotli");
            making.remove(name);
        }
    }
    None
}

fn smaller(data: &[u8], encoding: Encoding) -> Option<Bytes> {
    let bytes = compress(data, encoding)?;
    (bytes.len() < data.len()).then(|| Bytes::from(bytes))
}

/// `data` (the file `name`) in `encoding`, compressed on the blocking pool the first time and
/// cached; `None` when compressing does not make it smaller (or the pool is gone).
pub(crate) async fn compressed(name: &str, data: &[u8], encoding: Encoding) -> Option<Bytes> {
    let slot = slot(name, encoding);
    if let Some(done) = slot.get() {
        return done.clone();
    }
    let data = data.to_vec();
    let filled = slot.clone();
    // Two first requests at once compress once: the second waits on the same cell.
    tokio::task::spawn_blocking(move || filled.get_or_init(|| smaller(&data, encoding)).clone())
        .await
        .ok()
        .flatten()
}

fn compress(data: &[u8], encoding: Encoding) -> Option<Vec<u8>> {
    match encoding {
        Encoding::Brotli => {
            let mut out = Vec::with_capacity(data.len() / 3);
            // Quality 11, window 2^22: the smallest output; it is made once per file.
            let mut writer = brotli::CompressorWriter::new(&mut out, 64 * 1024, 11, 22);
            writer.write_all(data).ok()?;
            drop(writer);
            Some(out)
        }
        Encoding::Gzip => {
            let mut encoder = flate2::write::GzEncoder::new(
                Vec::with_capacity(data.len() / 3),
                flate2::Compression::best(),
            );
            encoder.write_all(data).ok()?;
            encoder.finish().ok()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn accepting(value: &'static str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(header::ACCEPT_ENCODING, HeaderValue::from_static(value));
        headers
    }

    #[test]
    fn accepted_codings_are_read_and_q_zero_refuses() {
        let both = Accepted {
            brotli: true,
            gzip: true,
        };
        assert_eq!(accepted(&accepting("gzip, deflate, br")), both);
        let gzip = Accepted {
            brotli: false,
            gzip: true,
        };
        assert_eq!(accepted(&accepting("gzip, br;q=0")), gzip);
        let none = Accepted {
            brotli: false,
            gzip: false,
        };
        assert_eq!(accepted(&accepting("identity")), none);
        assert_eq!(accepted(&HeaderMap::new()), none);
    }

    #[tokio::test]
    async fn a_compressed_copy_decompresses_to_the_file() {
        let data = "toolmux ".repeat(200).into_bytes();
        let gz = compressed("test.txt", &data, Encoding::Gzip)
            .await
            .expect("smaller");
        let mut back = Vec::new();
        std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&gz[..]), &mut back)
            .expect("gunzip");
        assert_eq!(back, data);
        let br = compressed("test.txt", &data, Encoding::Brotli)
            .await
            .expect("smaller");
        let mut back = Vec::new();
        std::io::Read::read_to_end(&mut brotli::Decompressor::new(&br[..], 4096), &mut back)
            .expect("unbrotli");
        assert_eq!(back, data);
    }
}
