//! Reading a file someone else chose. A cloned repository chooses its configuration, registries,
//! specs and state documents, so none is buffered whole before its size is known to be sane
//! (THREATS.md, rule 1): each reader gives its cap, and this is the one loop that keeps to it.

use std::io::{self, Read};

/// Everything `source` holds when that is at most `cap` bytes; `Ok(None)` when it holds more,
/// having read no further than one byte past the cap.
pub fn read_capped(source: impl Read, cap: u64) -> io::Result<Option<Vec<u8>>> {
    let mut bytes = Vec::new();
    source.take(cap.saturating_add(1)).read_to_end(&mut bytes)?;
    Ok((bytes.len() as u64 <= cap).then_some(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_up_to_the_cap_and_refuses_one_byte_more() {
        assert_eq!(
            read_capped(&b"four"[..], 4).expect("read"),
            Some(b"four".to_vec())
        );
        assert_eq!(read_capped(&b"five!"[..], 4).expect("read"), None);
        assert_eq!(read_capped(&b""[..], 0).expect("read"), Some(Vec::new()));
    }

    /// An endless source is refused after `cap + 1` bytes, not read to its end.
    #[test]
    fn an_endless_source_is_read_no_further_than_past_the_cap() {
        let mut endless = io::repeat(b'x');
        assert_eq!(read_capped(&mut endless, 1024).expect("read"), None);
    }
}
