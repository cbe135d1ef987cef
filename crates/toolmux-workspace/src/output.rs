//! What every tool's output has in common: a byte budget and sizes written for people.

/// Spending against the output cap (`max_output_bytes`). Each item costs what it adds to the
/// text block plus what it adds to the structured content, so the whole result stays within
/// the cap.
pub(crate) struct Budget {
    left: usize,
}

impl Budget {
    /// Room left for the notes and the JSON punctuation around the items.
    const RESERVE: usize = 512;

    pub(crate) fn new(max_output_bytes: usize) -> Self {
        Self {
            left: max_output_bytes.saturating_sub(Self::RESERVE),
        }
    }

    /// Takes `cost` bytes if they are left; false (taking nothing) otherwise.
    pub(crate) fn spend(&mut self, cost: usize) -> bool {
        match self.left.checked_sub(cost) {
            Some(left) => {
                self.left = left;
                true
            }
            None => false,
        }
    }

    pub(crate) fn left(&self) -> usize {
        self.left
    }
}

/// Bytes for people: `812 bytes`, `14.2 KiB`, `256 KiB`, `1 MiB`.
pub(crate) fn human_bytes(n: u64) -> String {
    const KIB: u64 = 1024;
    const MIB: u64 = 1024 * 1024;
    const GIB: u64 = 1024 * 1024 * 1024;
    let (unit, name) = match n {
        _ if n >= GIB => (GIB, "GiB"),
        _ if n >= MIB => (MIB, "MiB"),
        _ if n >= KIB => (KIB, "KiB"),
        _ => return format!("{n} bytes"),
    };
    if n.is_multiple_of(unit) {
        format!("{} {name}", n / unit)
    } else {
        format!("{:.1} {name}", n as f64 / unit as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_naturally() {
        assert_eq!(human_bytes(812), "812 bytes");
        assert_eq!(human_bytes(14_540), "14.2 KiB");
        assert_eq!(human_bytes(256 * 1024), "256 KiB");
        assert_eq!(human_bytes(1024 * 1024), "1 MiB");
        assert_eq!(human_bytes(3 * 1024 * 1024 * 1024 / 2), "1.5 GiB");
    }

    #[test]
    fn budget_refuses_what_it_cannot_pay() {
        let mut b = Budget::new(Budget::RESERVE + 10);
        assert!(b.spend(6));
        assert!(!b.spend(6));
        assert!(b.spend(4));
        assert_eq!(b.left(), 0);
    }
}
