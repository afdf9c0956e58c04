//! A hashed timing wheel (Varghese & Lauck) for per-connection timers: reconnect
//! back-off now, think time for user populations later.
//!
//! Design notes: 1 ms ticks, [`SLOTS`] slots; a timer lives in slot
//! `deadline % SLOTS` and stays there across revolutions until due, so
//! scheduling is O(1) and advancing costs O(timers in the visited slots). Each
//! timer is 16 bytes (a u32 connection key and a u64 deadline), so 256K
//! pending think-time timers take 4 MiB plus `Vec` slack. Cancellation is lazy:
//! the owner ignores a fired key whose connection moved on (a generation check
//! on its side), which keeps the wheel free of back-pointers.

/// Number of slots: 4096 ms per revolution. Long think times (30 s) revisit
/// their slot a few times before firing, which is cheap.
pub const SLOTS: usize = 4096;

#[derive(Debug, Clone, Copy)]
struct Timer {
    key: u32,
    deadline_ms: u64,
}

/// The wheel. Time is whatever millisecond count the owner feeds to
/// [`TimerWheel::advance`] (the engine uses ms since the run's epoch).
#[derive(Debug)]
pub struct TimerWheel {
    slots: Vec<Vec<Timer>>,
    /// Last tick processed by `advance`.
    now_ms: u64,
    len: usize,
}

impl Default for TimerWheel {
    fn default() -> Self {
        Self::new()
    }
}

impl TimerWheel {
    pub fn new() -> TimerWheel {
        TimerWheel {
            slots: vec![Vec::new(); SLOTS],
            now_ms: 0,
            len: 0,
        }
    }

    /// Pending timers.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Arms a timer for `key` at `deadline_ms`. A deadline already past fires
    /// on the next `advance`.
    pub fn schedule(&mut self, key: u32, deadline_ms: u64) {
        let deadline_ms = deadline_ms.max(self.now_ms + 1);
        self.slots[(deadline_ms as usize) % SLOTS].push(Timer { key, deadline_ms });
        self.len += 1;
    }

    /// Moves time forward to `now_ms`, appending every key whose deadline is
    /// ≤ `now_ms` to `fired` (in no particular order).
    pub fn advance(&mut self, now_ms: u64, fired: &mut Vec<u32>) {
        if now_ms <= self.now_ms || self.len == 0 {
            self.now_ms = self.now_ms.max(now_ms);
            return;
        }
        let ticks = (now_ms - self.now_ms).min(SLOTS as u64);
        for t in 1..=ticks {
            let slot = &mut self.slots[((self.now_ms + t) as usize) % SLOTS];
            let mut i = 0;
            while i < slot.len() {
                if slot[i].deadline_ms <= now_ms {
                    fired.push(slot.swap_remove(i).key);
                    self.len -= 1;
                } else {
                    i += 1;
                }
            }
        }
        self.now_ms = now_ms;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fire(w: &mut TimerWheel, now: u64) -> Vec<u32> {
        let mut v = Vec::new();
        w.advance(now, &mut v);
        v.sort_unstable();
        v
    }

    #[test]
    fn fires_at_deadline_not_before() {
        let mut w = TimerWheel::new();
        w.schedule(1, 10);
        w.schedule(2, 10);
        w.schedule(3, 11);
        assert!(fire(&mut w, 9).is_empty());
        assert_eq!(fire(&mut w, 10), vec![1, 2]);
        assert_eq!(fire(&mut w, 11), vec![3]);
        assert!(w.is_empty());
    }

    #[test]
    fn long_timers_survive_revolutions() {
        let mut w = TimerWheel::new();
        w.schedule(7, 30_000);
        w.schedule(8, 5);
        let mut now = 0;
        let mut fired_at = None;
        while now < 40_000 {
            now += 3;
            if fire(&mut w, now).contains(&7) {
                fired_at = Some(now);
            }
        }
        assert_eq!(fired_at, Some(30_000));
    }

    #[test]
    fn big_jumps_and_past_deadlines() {
        let mut w = TimerWheel::new();
        for k in 0..1000u32 {
            w.schedule(k, u64::from(k) * 17);
        }
        assert_eq!(fire(&mut w, 1_000_000).len(), 1000);
        w.schedule(5, 3); // in the past
        assert_eq!(fire(&mut w, 1_000_001), vec![5]);
    }
}
