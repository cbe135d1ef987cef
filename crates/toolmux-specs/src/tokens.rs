//! Token counts with OpenAI's cl100k_base encoding (what LeanSpec counts with) and LeanSpec's
//! thresholds: up to 2,000 optimal, 3,500 good, 5,000 warning, above that excessive.

use std::sync::LazyLock;

use tiktoken_rs::CoreBPE;

/// The encoder is built once (it takes a noticeable fraction of a second) and shared.
static CL100K: LazyLock<Result<CoreBPE, String>> =
    LazyLock::new(|| tiktoken_rs::cl100k_base().map_err(|e| e.to_string()));

/// The number of cl100k_base tokens in `text`, special tokens counted as such.
pub fn count(text: &str) -> Result<usize, String> {
    match &*CL100K {
        Ok(bpe) => Ok(bpe.encode_with_special_tokens(text).len()),
        Err(e) => Err(format!("the cl100k_base encoder cannot be loaded: {e}")),
    }
}

/// LeanSpec's verdict on a token count.
pub fn rating(tokens: usize) -> &'static str {
    match tokens {
        0..=2000 => "optimal",
        2001..=3500 => "good",
        3501..=5000 => "warning",
        _ => "excessive",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_ratings() {
        assert_eq!(count("hello world").unwrap(), 2);
        assert_eq!(count("").unwrap(), 0);
        assert_eq!(count("<|endoftext|>").unwrap(), 1);
        assert_eq!(rating(2000), "optimal");
        assert_eq!(rating(2001), "good");
        assert_eq!(rating(5000), "warning");
        assert_eq!(rating(5001), "excessive");
    }
}
