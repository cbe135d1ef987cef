//! Cutting a text to a cap in cl100k tokens or bytes, without tokenising all of it: a 5 MB
//! result is measured only as far as the cap reaches.

use std::sync::LazyLock;

use tiktoken_rs::CoreBPE;

use crate::settings::{Cap, Keep, Limit};

/// The encoder is built once (it takes a noticeable fraction of a second) and shared.
static CL100K: LazyLock<Result<CoreBPE, String>> =
    LazyLock::new(|| tiktoken_rs::cl100k_base().map_err(|e| e.to_string()));

/// A cl100k token of ordinary text is a few bytes; a window this many bytes per token nearly
/// always holds enough tokens, and it grows when it does not.
const BYTES_PER_TOKEN_GUESS: usize = 8;

/// What of a text a cap keeps.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cut {
    /// The bytes kept at the beginning (`0..head`).
    pub head: usize,
    /// Where the bytes kept at the end begin (`tail..len`); `len` when none are.
    pub tail: usize,
}

/// Where to cut `text` to fit `cap`, or `None` when it fits whole.
pub fn cut(text: &str, cap: Cap) -> Result<Option<Cut>, String> {
    if text.len() <= cap.limit.bytes_bound() {
        return Ok(None);
    }
    let len = text.len();
    let cut = match cap.keep {
        Keep::Head => prefix(text, cap.limit)?.map(|head| Cut { head, tail: len }),
        Keep::Tail => suffix(text, cap.limit)?.map(|tail| Cut { head: 0, tail }),
        Keep::HeadTail => {
            let half = cap.limit.half();
            match (prefix(text, half)?, suffix(text, half)?) {
                (Some(head), Some(tail)) if head < tail => Some(Cut { head, tail }),
                _ => None,
            }
        }
    };
    Ok(cut)
}

/// The length of the longest prefix within `limit`, or `None` when all of `text` is.
fn prefix(text: &str, limit: Limit) -> Result<Option<usize>, String> {
    match limit {
        Limit::Bytes(n) => Ok((text.len() > n).then(|| text.floor_char_boundary(n))),
        Limit::Tokens(n) => {
            let bpe = encoder()?;
            let mut window = n.saturating_mul(BYTES_PER_TOKEN_GUESS).max(1024);
            loop {
                let end = text.floor_char_boundary(window.min(text.len()));
                let tokens = bpe.encode_with_special_tokens(&text[..end]);
                if tokens.len() > n {
                    let kept = bpe.decode_bytes(&tokens[..n]).map_err(|e| e.to_string())?;
                    return Ok(Some(text.floor_char_boundary(kept.len())));
                }
                if end == text.len() {
                    return Ok(None);
                }
                window = window.saturating_mul(4);
            }
        }
    }
}

/// Where the longest suffix within `limit` begins, or `None` when all of `text` is within it.
fn suffix(text: &str, limit: Limit) -> Result<Option<usize>, String> {
    let len = text.len();
    match limit {
        Limit::Bytes(n) => Ok((len > n).then(|| text.ceil_char_boundary(len - n))),
        Limit::Tokens(n) => {
            let bpe = encoder()?;
            let mut window = n.saturating_mul(BYTES_PER_TOKEN_GUESS).max(1024);
            loop {
                let start = text.ceil_char_boundary(len.saturating_sub(window));
                let tokens = bpe.encode_with_special_tokens(&text[start..]);
                if tokens.len() > n {
                    let kept = bpe
                        .decode_bytes(&tokens[tokens.len() - n..])
                        .map_err(|e| e.to_string())?;
                    return Ok(Some(text.ceil_char_boundary(len - kept.len())));
                }
                if start == 0 {
                    return Ok(None);
                }
                window = window.saturating_mul(4);
            }
        }
    }
}

fn encoder() -> Result<&'static CoreBPE, String> {
    CL100K
        .as_ref()
        .map_err(|e| format!("the cl100k_base encoder cannot be loaded: {e}"))
}

/// The number of cl100k_base tokens in `text`, special tokens counted as such.
pub fn count_tokens(text: &str) -> Result<usize, String> {
    Ok(encoder()?.encode_with_special_tokens(text).len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cap(limit: Limit, keep: Keep) -> Cap {
        Cap { limit, keep }
    }

    #[test]
    fn bytes_cut_on_character_boundaries_at_either_end() {
        let text = "é".repeat(10);
        assert_eq!(
            cut(&text, cap(Limit::Bytes(5), Keep::Head)).unwrap(),
            Some(Cut { head: 4, tail: 20 })
        );
        assert_eq!(
            cut(&text, cap(Limit::Bytes(5), Keep::Tail)).unwrap(),
            Some(Cut { head: 0, tail: 16 })
        );
        assert_eq!(
            cut(&text, cap(Limit::Bytes(8), Keep::HeadTail)).unwrap(),
            Some(Cut { head: 4, tail: 16 })
        );
        assert_eq!(
            cut("short", cap(Limit::Bytes(5), Keep::Head)).unwrap(),
            None
        );
    }

    #[test]
    fn tokens_keep_exactly_the_cap() {
        let text = "word ".repeat(10_000);
        let Some(c) = cut(&text, cap(Limit::Tokens(100), Keep::Head)).unwrap() else {
            panic!("over the cap")
        };
        assert_eq!(count_tokens(&text[..c.head]).unwrap(), 100);
        let Some(c) = cut(&text, cap(Limit::Tokens(100), Keep::Tail)).unwrap() else {
            panic!("over the cap")
        };
        assert_eq!(count_tokens(&text[c.tail..]).unwrap(), 100);
        // Within the cap in tokens although over it in bytes: kept whole.
        assert_eq!(
            cut(&"word ".repeat(50), cap(Limit::Tokens(100), Keep::Head)).unwrap(),
            None
        );
    }
}
