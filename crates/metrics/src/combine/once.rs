//! Figures that are views of something several parts share: kept once per
//! what they describe. A host's `/proc/stat` CPU set, its sockstat and its
//! kTLS counters (one set per network namespace) are seen alike by every
//! part on that host, and a process's own CPU and RSS by every part it
//! served (a responder driven by several agents reports its own figures to
//! each); summing every part's view would count them once per part. The
//! CPU and memory merges of a run over agents (`runner::agents::merge`) and
//! the kTLS counters of [`Mode::Parts`](super::Mode::Parts) all keep one view
//! per key with this one rule.

use std::collections::HashMap;
use std::hash::Hash;

/// One item per key, in first-seen order: the first seen, replaced by a
/// later one when `prefer(later, kept)` (e.g. the view with the longer
/// window, which covers the others').
pub fn once_per<T, K: Eq + Hash>(
    items: impl IntoIterator<Item = T>,
    key: impl Fn(&T) -> K,
    prefer: impl Fn(&T, &T) -> bool,
) -> Vec<T> {
    let mut slot: HashMap<K, usize> = HashMap::new();
    let mut kept: Vec<T> = Vec::new();
    for item in items {
        match slot.get(&key(&item)) {
            Some(&i) if prefer(&item, &kept[i]) => kept[i] = item,
            Some(_) => {}
            None => {
                slot.insert(key(&item), kept.len());
                kept.push(item);
            }
        }
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_per_key_in_first_seen_order_the_preferred_kept() {
        let views = [("a", 1.0), ("b", 5.0), ("a", 3.0), ("a", 2.0), ("c", 1.0)];
        let longest = once_per(views, |v| v.0, |new, kept| new.1 > kept.1);
        assert_eq!(longest, vec![("a", 3.0), ("b", 5.0), ("c", 1.0)]);
        let first = once_per(views, |v| v.0, |_, _| false);
        assert_eq!(first, vec![("a", 1.0), ("b", 5.0), ("c", 1.0)]);
    }
}
