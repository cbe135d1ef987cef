//! What is kept of a command's output: the first half of the cap and the last half, with the
//! count of bytes dropped between them. The end of a build log or a test run is usually what
//! says what went wrong, so the tail matters as much as the head; the memory held is the cap,
//! however much the command prints.

use std::collections::VecDeque;

/// One stream's output, capped while it is read.
#[derive(Debug)]
pub struct Capture {
    head: Vec<u8>,
    tail: VecDeque<u8>,
    head_cap: usize,
    tail_cap: usize,
    total: u64,
}

/// A stream's output as the result shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Captured {
    /// The head, a marker naming the bytes dropped (when some were), and the tail, as UTF-8
    /// (invalid sequences replaced).
    pub text: String,
    /// Every byte the command wrote.
    pub total_bytes: u64,
    /// The bytes not kept.
    pub dropped_bytes: u64,
}

impl Capture {
    /// A capture that keeps at most `cap` bytes.
    pub fn new(cap: usize) -> Self {
        let head_cap = cap / 2;
        Self {
            head: Vec::new(),
            tail: VecDeque::new(),
            head_cap,
            tail_cap: cap - head_cap,
            total: 0,
        }
    }

    /// Takes in the next bytes read.
    pub fn push(&mut self, mut bytes: &[u8]) {
        self.total += bytes.len() as u64;
        let room = self.head_cap - self.head.len();
        let into_head = room.min(bytes.len());
        self.head.extend_from_slice(&bytes[..into_head]);
        bytes = &bytes[into_head..];
        if bytes.len() >= self.tail_cap {
            self.tail.clear();
            self.tail.extend(&bytes[bytes.len() - self.tail_cap..]);
        } else {
            let overflow = (self.tail.len() + bytes.len()).saturating_sub(self.tail_cap);
            self.tail.drain(..overflow);
            self.tail.extend(bytes);
        }
    }

    /// What was kept.
    pub fn finish(&self) -> Captured {
        let kept = (self.head.len() + self.tail.len()) as u64;
        let dropped = self.total - kept;
        let mut text = String::from_utf8_lossy(&self.head).into_owned();
        if dropped > 0 {
            text.push_str(&format!(
                "\n[… {dropped} bytes dropped: the output cap (`shell.maxOutputBytes`) keeps \
                 the first and the last part …]\n"
            ));
        }
        let (a, b) = self.tail.as_slices();
        let tail = [a, b].concat();
        text.push_str(&String::from_utf8_lossy(&tail));
        Captured {
            text,
            total_bytes: self.total,
            dropped_bytes: dropped,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_output_is_kept_whole() {
        let mut c = Capture::new(10);
        c.push(b"abc");
        c.push(b"de");
        assert_eq!(c.finish().text, "abcde");
        assert_eq!(c.finish().dropped_bytes, 0);
    }

    #[test]
    fn long_output_keeps_head_and_tail_and_counts_the_rest() {
        let mut c = Capture::new(6);
        for chunk in [&b"123"[..], b"4567", b"89", b"abcdef", b"XYZ"] {
            c.push(chunk);
        }
        let out = c.finish();
        assert!(
            out.text.starts_with("123\n[… 12 bytes dropped"),
            "{}",
            out.text
        );
        assert!(out.text.ends_with("…]\nXYZ"), "{}", out.text);
        assert_eq!(out.total_bytes, 18);
        assert_eq!(out.dropped_bytes, 12);
    }

    #[test]
    fn the_tail_slides_over_small_pushes() {
        let mut c = Capture::new(4);
        for b in b"abcdefgh" {
            c.push(&[*b]);
        }
        let out = c.finish();
        assert!(out.text.starts_with("ab\n"), "{}", out.text);
        assert!(out.text.ends_with("gh"), "{}", out.text);
        assert_eq!(out.dropped_bytes, 4);
    }
}
