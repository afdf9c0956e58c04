//! Whether a foreign server's certificate was verified, over the results
//! a combine joins (exactly or as a mean).

/// Whether a foreign server's certificate was verified in every one of
/// several results (false if any was not; `None` where none says).
pub(super) fn verified_by_all(all: impl Iterator<Item = Option<bool>>) -> Option<bool> {
    all.flatten().reduce(|a, b| a && b)
}
