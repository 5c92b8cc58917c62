//! The list's height index: every row's height in pixels, as measured when
//! it was last on the page or estimated until then (`estimate`), with the
//! running sum that says where each row begins and which row is at a given
//! pixel. Plain arithmetic: it knows nothing of rows or widgets.

/// Row heights in pixels, with the running sum that places them: rows
/// before the first changed one keep their places, the rest are summed
/// again only when asked for.
#[derive(Default)]
pub struct Heights {
    heights: Vec<i32>,
    /// `starts[i]` is where row `i` begins; valid up to `valid`.
    starts: Vec<i64>,
    valid: usize,
}

impl Heights {
    pub fn len(&self) -> usize {
        self.heights.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heights.is_empty()
    }

    /// Rows `at..at + removed` replaced by rows of the `added` heights.
    pub fn splice(&mut self, at: usize, removed: usize, added: impl IntoIterator<Item = i32>) {
        let at = at.min(self.heights.len());
        let end = (at + removed).min(self.heights.len());
        let added: Vec<i32> = added.into_iter().collect();
        self.heights.splice(at..end, added);
        self.starts.resize(self.heights.len() + 1, 0);
        self.valid = self.valid.min(at);
    }

    pub fn set(&mut self, i: usize, height: i32) {
        if let Some(h) = self.heights.get_mut(i) {
            if *h != height {
                *h = height;
                self.valid = self.valid.min(i);
            }
        }
    }

    pub fn get(&self, i: usize) -> i32 {
        self.heights.get(i).copied().unwrap_or(0)
    }

    fn sum_up_to(&mut self, i: usize) {
        let i = i.min(self.heights.len());
        if self.starts.is_empty() {
            self.starts.push(0);
        }
        while self.valid < i {
            self.starts[self.valid + 1] = self.starts[self.valid] + i64::from(self.heights[self.valid]);
            self.valid += 1;
        }
    }

    /// Where row `i` begins (`len()`: the end of the last).
    pub fn start(&mut self, i: usize) -> i64 {
        self.sum_up_to(i);
        self.starts[i.min(self.heights.len())]
    }

    pub fn total(&mut self) -> i64 {
        self.start(self.heights.len())
    }

    /// The row at `y` and how far into it `y` is.
    pub fn row_at(&mut self, y: i64) -> (usize, i64) {
        let n = self.heights.len();
        if n == 0 {
            return (0, 0);
        }
        self.sum_up_to(n);
        let y = y.clamp(0, self.starts[n].max(1) - 1);
        // The last row starting at or before `y`.
        let i = self.starts[..n].partition_point(|&s| s <= y).saturating_sub(1);
        (i, y - self.starts[i])
    }
}

#[cfg(test)]
mod tests {
    use super::Heights;

    #[test]
    fn heights_place_rows_and_find_them() {
        let mut h = Heights::default();
        h.splice(0, 0, [10, 20, 30]);
        assert_eq!(h.total(), 60);
        assert_eq!(h.start(2), 30);
        assert_eq!(h.row_at(0), (0, 0));
        assert_eq!(h.row_at(29), (1, 19));
        assert_eq!(h.row_at(30), (2, 0));
        assert_eq!(h.row_at(1000), (2, 29));
        // A measure before the end moves what follows, not what precedes.
        h.set(1, 5);
        assert_eq!(h.start(1), 10);
        assert_eq!(h.start(2), 15);
        // Rows inserted in the middle and removed at the start.
        h.splice(1, 0, [100]);
        assert_eq!(h.total(), 145);
        h.splice(0, 2, []);
        assert_eq!((h.len(), h.total()), (2, 35));
        assert_eq!(h.row_at(4), (0, 4));
        h.splice(0, 2, []);
        assert!(h.is_empty());
        assert_eq!(h.row_at(10), (0, 0));
        assert_eq!(h.total(), 0);
    }
}
