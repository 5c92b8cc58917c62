//! Placement: which rows sit where. From where the page begins, the rows
//! on the page, each measured, with where their tops are; the rows a page
//! above and below it, bound ahead in idle time so that scrolling finds
//! them drawn.
//!
//! Arithmetic over the height index; the list measures (`measure(i)` binds
//! and measures row `i`, its height from then on, and gives it).

use std::cell::RefCell;

use super::heights::Heights;

/// A row laid out on the page: its index, where its top is relative to
/// the page's, its height.
#[derive(Debug, Clone, Copy)]
pub struct Placed {
    pub index: usize,
    pub top: i64,
    pub height: i32,
}

impl Placed {
    /// Row `i` where its height puts it, relative to a page that begins at
    /// `value` (the focused row, kept where it is even off the page).
    pub fn at(heights: &RefCell<Heights>, i: usize, value: i64) -> Self {
        // One borrow at a time: a temporary's lives to the statement's end.
        let top = heights.borrow_mut().start(i) - value;
        let height = heights.borrow().get(i);
        Placed {
            index: i,
            top,
            height,
        }
    }

    /// Whether any of it shows on a page `page` high.
    pub fn shows(&self, page: i64) -> bool {
        self.top + i64::from(self.height) > 0 && self.top < page
    }
}

/// The rows of the page that begins at `value`, each measured (cheap when
/// it did not change).
pub fn page_rows(
    heights: &RefCell<Heights>,
    value: i64,
    page: i64,
    mut measure: impl FnMut(usize) -> i32,
) -> Vec<Placed> {
    let n = heights.borrow().len();
    let mut rows = Vec::new();
    if n == 0 {
        return rows;
    }
    let (mut index, _) = heights.borrow_mut().row_at(value);
    let mut top = heights.borrow_mut().start(index) - value;
    while index < n && top < page {
        let height = measure(index);
        rows.push(Placed { index, top, height });
        top += i64::from(height);
        index += 1;
    }
    rows
}

/// The rows to bind ahead around `rows`, the page that begins at `value`:
/// from a page above it to a page below it, and the first below it.
pub fn ahead(heights: &mut Heights, value: i64, page: i64, rows: &[Placed]) -> (usize, usize, usize) {
    let from = heights.row_at(value - page).0;
    let to = heights.row_at(value + 2 * page).0;
    let below = rows.last().map_or(0, |r| r.index + 1);
    (from, to, below)
}
