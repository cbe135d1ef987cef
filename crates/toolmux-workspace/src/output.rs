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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budget_refuses_what_it_cannot_pay() {
        let mut b = Budget::new(Budget::RESERVE + 10);
        assert!(b.spend(6));
        assert!(!b.spend(6));
        assert!(b.spend(4));
        assert_eq!(b.left(), 0);
    }
}
