//! A problem found in the configuration, as validation and `config:changed`
//! tell it.

use serde::Serialize;

/// One problem or warning, 1-based line and column.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Problem {
    pub line: usize,
    pub column: usize,
    pub message: String,
    pub warning: bool,
}
