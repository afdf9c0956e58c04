//! The run's clock and its measurement window. The window is not known when
//! the workers start: the coordinator opens it once every client has
//! connected (after the connection ramp), then the warm-up runs and the
//! window follows. Workers keep a local copy of the window and refresh it
//! from the shared [`Window`] until it is known (one relaxed load per loop
//! turn until then, none after), so the hot path reads no shared memory.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// "Not decided yet" (warm-up end) or "no end" (a count-bounded run).
const UNSET: u64 = u64::MAX;

/// The window as the coordinator decided it, shared with the workers.
#[derive(Debug)]
pub struct Window {
    warmup_end_ns: AtomicU64,
    end_ns: AtomicU64,
}

impl Default for Window {
    fn default() -> Self {
        Window {
            warmup_end_ns: AtomicU64::new(UNSET),
            end_ns: AtomicU64::new(UNSET),
        }
    }
}

impl Window {
    /// Opens the window: warm-up ends at `warmup_end_ns`, measuring ends at
    /// `end_ns` (`None`: when the counts are done).
    pub fn open(&self, warmup_end_ns: u64, end_ns: Option<u64>) {
        self.end_ns
            .store(end_ns.unwrap_or(UNSET), Ordering::Relaxed);
        // Release: a worker that sees the warm-up end sees the end too.
        self.warmup_end_ns.store(warmup_end_ns, Ordering::Release);
    }

    /// `(warm-up end, end)` once opened.
    pub fn get(&self) -> Option<(u64, Option<u64>)> {
        let warmup_end = self.warmup_end_ns.load(Ordering::Acquire);
        if warmup_end == UNSET {
            return None;
        }
        let end = self.end_ns.load(Ordering::Relaxed);
        Some((warmup_end, (end != UNSET).then_some(end)))
    }
}

/// A worker's view of the run's clock: nanoseconds since `epoch`.
#[derive(Debug, Clone, Copy)]
pub struct Timing {
    pub epoch: Instant,
    /// Transactions completing before this are warm-up and not counted
    /// (`u64::MAX` until the window is opened).
    pub warmup_end_ns: u64,
    /// End of the measurement window; `None` when bounded by counts only or
    /// not known yet.
    pub end_ns: Option<u64>,
    known: bool,
}

impl Timing {
    /// A clock whose window is not open yet.
    pub fn new(epoch: Instant) -> Timing {
        Timing {
            epoch,
            warmup_end_ns: UNSET,
            end_ns: None,
            known: false,
        }
    }

    /// Takes the window from `window` if it was opened since; true when it
    /// became known just now.
    #[inline]
    pub fn refresh(&mut self, window: &Window) -> bool {
        if self.known {
            return false;
        }
        let Some((warmup_end, end)) = window.get() else {
            return false;
        };
        (self.warmup_end_ns, self.end_ns, self.known) = (warmup_end, end, true);
        true
    }

    /// Whether the window has been opened (its start is known).
    #[inline]
    pub fn is_known(&self) -> bool {
        self.known
    }

    #[inline]
    pub fn now_ns(&self) -> u64 {
        self.epoch.elapsed().as_nanos() as u64
    }

    #[inline]
    pub fn in_window(&self, t_ns: u64) -> bool {
        t_ns >= self.warmup_end_ns && self.end_ns.is_none_or(|end| t_ns < end)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_worker_counts_nothing_until_the_window_opens() {
        let window = Window::default();
        let mut t = Timing::new(Instant::now());
        assert!(!t.refresh(&window));
        assert!(!t.in_window(0) && !t.in_window(u64::MAX - 1));
        window.open(100, Some(200));
        assert!(t.refresh(&window));
        assert!(!t.refresh(&window));
        assert!(!t.in_window(99) && t.in_window(100) && !t.in_window(200));
        let counted = Window::default();
        counted.open(5, None);
        assert_eq!(counted.get(), Some((5, None)));
    }
}
