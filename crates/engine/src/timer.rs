//! Per-connection timers: a hashed timing wheel (Varghese & Lauck) for
//! reconnect back-off, the connection ramp, think times and open-loop send
//! times, and a `timerfd` that wakes the worker's epoll at the wheel's next
//! deadline — so a worker sleeps until something is due instead of waking
//! every millisecond, and an idle population costs next to no CPU.
//!
//! Design notes: deadlines are exact nanoseconds (since the run's epoch);
//! slots are [`TICK_NS`] (≈1.05 ms) wide, [`SLOTS`] of them (≈4.3 s per
//! revolution). A timer lives in slot `tick(deadline) % SLOTS` and stays there
//! across revolutions until due, so scheduling is O(1) and advancing costs
//! O(timers in the visited slots); the current tick's slot is revisited until
//! its timers are due, which is what gives sub-millisecond firing. Each slot
//! keeps the minimum deadline of its timers, and the wheel caches the minimum
//! over all of them ([`TimerWheel::next_deadline`]): scheduling lowers the
//! cache, firing invalidates it, and recomputing walks the slots from now
//! until no later slot can hold anything earlier — a slot or two when timers
//! are dense, one revolution (4096 compares) when they are far apart. Each
//! timer is 16 bytes (a u32 key and a u64 deadline), so 256K pending
//! think-time timers take 4 MiB plus `Vec` slack. Cancellation is lazy: the
//! owner ignores a fired key whose connection moved on, which keeps the wheel
//! free of back-pointers.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// Number of slots.
pub const SLOTS: usize = 4096;
/// log2 of a slot's width in ns.
const TICK_SHIFT: u32 = 20;
/// Width of a slot: 2^20 ns ≈ 1.05 ms.
pub const TICK_NS: u64 = 1 << TICK_SHIFT;

#[derive(Debug, Clone, Copy)]
struct Timer {
    key: u32,
    deadline_ns: u64,
}

/// The wheel. Time is whatever nanosecond count the owner feeds to
/// [`TimerWheel::advance`] (the engine uses ns since the run's epoch).
#[derive(Debug)]
pub struct TimerWheel {
    slots: Vec<Vec<Timer>>,
    /// Earliest deadline in each slot (`u64::MAX`: empty).
    slot_min: Vec<u64>,
    /// Time of the last `advance`.
    now_ns: u64,
    len: usize,
    /// The earliest pending deadline, when known.
    next: Option<u64>,
}

impl Default for TimerWheel {
    fn default() -> Self {
        Self::new()
    }
}

fn tick(ns: u64) -> u64 {
    ns >> TICK_SHIFT
}

fn slot_of(tick: u64) -> usize {
    (tick as usize) % SLOTS
}

impl TimerWheel {
    pub fn new() -> TimerWheel {
        TimerWheel {
            slots: vec![Vec::new(); SLOTS],
            slot_min: vec![u64::MAX; SLOTS],
            now_ns: 0,
            len: 0,
            next: None,
        }
    }

    /// Pending timers.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Arms a timer for `key` at `deadline_ns`. A deadline already past fires
    /// on the next `advance`.
    pub fn schedule(&mut self, key: u32, deadline_ns: u64) {
        // A past deadline goes to the current slot, which `advance` revisits.
        let slot = slot_of(tick(deadline_ns).max(tick(self.now_ns)));
        self.slots[slot].push(Timer { key, deadline_ns });
        self.slot_min[slot] = self.slot_min[slot].min(deadline_ns);
        self.next = match (self.len, self.next) {
            (0, _) => Some(deadline_ns),
            (_, Some(n)) => Some(n.min(deadline_ns)),
            (_, None) => None,
        };
        self.len += 1;
    }

    /// The earliest pending deadline (exact), `None` when no timer is pending.
    pub fn next_deadline(&mut self) -> Option<u64> {
        if self.len == 0 {
            return None;
        }
        if self.next.is_none() {
            self.next = Some(self.scan_min());
        }
        self.next
    }

    /// Walks the slots from the current tick until no later slot can hold an
    /// earlier deadline: a slot `d` ticks ahead holds only deadlines of its
    /// own tick or later revolutions, all ≥ the start of that tick.
    fn scan_min(&self) -> u64 {
        let now_tick = tick(self.now_ns);
        let mut best = u64::MAX;
        for d in 0..SLOTS as u64 {
            if best <= (now_tick + d) << TICK_SHIFT {
                break;
            }
            best = best.min(self.slot_min[slot_of(now_tick + d)]);
        }
        best
    }

    /// Moves time forward to `now_ns`, appending every key whose deadline is
    /// ≤ `now_ns` to `fired` (in no particular order).
    pub fn advance(&mut self, now_ns: u64, fired: &mut Vec<u32>) {
        if now_ns < self.now_ns {
            return;
        }
        let due = self.len > 0 && self.next.is_none_or(|n| n <= now_ns);
        if !due {
            self.now_ns = now_ns;
            return;
        }
        let (from, to) = (tick(self.now_ns), tick(now_ns));
        let ticks = (to - from + 1).min(SLOTS as u64);
        let before = fired.len();
        for t in 0..ticks {
            let slot = slot_of(from + t);
            let timers = &mut self.slots[slot];
            let mut min = u64::MAX;
            let mut i = 0;
            while i < timers.len() {
                if timers[i].deadline_ns <= now_ns {
                    fired.push(timers.swap_remove(i).key);
                } else {
                    min = min.min(timers[i].deadline_ns);
                    i += 1;
                }
            }
            self.slot_min[slot] = min;
        }
        self.len -= fired.len() - before;
        if fired.len() > before {
            self.next = None;
        }
        self.now_ns = now_ns;
    }
}

/// A `timerfd` (CLOCK_MONOTONIC) the worker registers with its epoll, armed
/// at the wheel's next deadline: epoll then sleeps exactly until something is
/// due (hrtimer precision, not epoll_wait's milliseconds). Re-armed only when
/// the deadline changes.
#[derive(Debug)]
pub struct WakeTimer {
    fd: OwnedFd,
    /// CLOCK_MONOTONIC at the run's epoch, ns.
    epoch_mono_ns: u64,
    /// The deadline armed now (ns since the epoch), if any.
    armed: Option<u64>,
}

fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out-pointer; CLOCK_MONOTONIC always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

impl WakeTimer {
    /// A disarmed timer; `elapsed_ns` is the run clock's reading now, which
    /// ties the run's epoch to CLOCK_MONOTONIC (Rust's `Instant` on Linux).
    pub fn new(elapsed_ns: u64) -> io::Result<WakeTimer> {
        // SAFETY: plain syscall; the result is checked before use.
        let fd = unsafe {
            libc::timerfd_create(
                libc::CLOCK_MONOTONIC,
                libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(WakeTimer {
            // SAFETY: `fd` is a fresh descriptor owned by nothing else.
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
            epoch_mono_ns: monotonic_ns().saturating_sub(elapsed_ns),
            armed: None,
        })
    }

    /// Arms the timer at `deadline_ns` (since the epoch), or disarms it with
    /// `None`; nothing happens when that is what is armed already.
    pub fn arm(&mut self, deadline_ns: Option<u64>) -> io::Result<()> {
        if deadline_ns == self.armed {
            return Ok(());
        }
        // An all-zero it_value disarms; an absolute time of 0 would too, so
        // a deadline at the epoch itself is moved by 1 ns.
        let at = deadline_ns.map_or(0, |d| self.epoch_mono_ns + d.max(1));
        let spec = libc::itimerspec {
            it_interval: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: libc::timespec {
                tv_sec: (at / 1_000_000_000) as libc::time_t,
                tv_nsec: (at % 1_000_000_000) as libc::c_long,
            },
        };
        // SAFETY: valid fd and spec; the old value is not wanted.
        let rc = unsafe {
            libc::timerfd_settime(
                self.fd.as_raw_fd(),
                libc::TFD_TIMER_ABSTIME,
                &spec,
                std::ptr::null_mut(),
            )
        };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        self.armed = deadline_ns;
        Ok(())
    }

    /// After the timer fired: forgets the armed deadline, so the next `arm`
    /// sets it again. The expiry count is not read: the worker's epoll
    /// registration is edge-triggered (mio's), every expiry wakes the
    /// timerfd's wait queue and so gives a new edge whether or not the
    /// count was read, and `timerfd_settime` zeroes the count when the
    /// next deadline is armed. That saves one `read` per timer wake-up, a
    /// syscall per transaction of a think-time or open-loop population.
    /// (A level-triggered or one-shot poll of this fd would need the read.)
    pub fn fired(&mut self) {
        self.armed = None;
    }

    pub fn raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn fire(w: &mut TimerWheel, now_ns: u64) -> Vec<u32> {
        let mut v = Vec::new();
        w.advance(now_ns, &mut v);
        v.sort_unstable();
        v
    }

    #[test]
    fn fires_at_deadline_not_before() {
        let mut w = TimerWheel::new();
        w.schedule(1, 10 * MS);
        w.schedule(2, 10 * MS);
        w.schedule(3, 11 * MS);
        assert!(fire(&mut w, 9 * MS).is_empty());
        assert_eq!(fire(&mut w, 10 * MS), vec![1, 2]);
        assert_eq!(fire(&mut w, 11 * MS), vec![3]);
        assert!(w.is_empty());
    }

    #[test]
    fn fires_within_a_tick_at_the_exact_nanosecond() {
        let mut w = TimerWheel::new();
        w.schedule(1, 5 * MS + 300_000);
        w.schedule(2, 5 * MS + 700_000);
        assert!(fire(&mut w, 5 * MS + 299_999).is_empty());
        assert_eq!(fire(&mut w, 5 * MS + 300_000), vec![1]);
        assert_eq!(w.next_deadline(), Some(5 * MS + 700_000));
        assert!(fire(&mut w, 5 * MS + 500_000).is_empty());
        assert_eq!(fire(&mut w, 5 * MS + 700_001), vec![2]);
        assert_eq!(w.next_deadline(), None);
    }

    #[test]
    fn long_timers_survive_revolutions() {
        let mut w = TimerWheel::new();
        w.schedule(7, 30_000 * MS);
        w.schedule(8, 5 * MS);
        let mut now = 0;
        let mut fired_at = None;
        while now < 40_000 * MS {
            now += 3 * MS;
            if fire(&mut w, now).contains(&7) {
                fired_at = Some(now);
            }
        }
        assert_eq!(fired_at, Some(30_000 * MS));
    }

    #[test]
    fn big_jumps_and_past_deadlines() {
        let mut w = TimerWheel::new();
        for k in 0..1000u32 {
            w.schedule(k, u64::from(k) * 17 * MS);
        }
        assert_eq!(fire(&mut w, 1_000_000 * MS).len(), 1000);
        w.schedule(5, 3 * MS); // in the past
        assert_eq!(w.next_deadline(), Some(3 * MS));
        assert_eq!(fire(&mut w, 1_000_000 * MS + 1), vec![5]);
    }

    #[test]
    fn next_deadline_is_the_exact_minimum() {
        let mut w = TimerWheel::new();
        assert_eq!(w.next_deadline(), None);
        // Far timers in every slot: the minimum is still exact.
        for k in 0..10_000u32 {
            w.schedule(k, 3_600_000 * MS + u64::from(k) * 7_919 * 1000);
        }
        assert_eq!(w.next_deadline(), Some(3_600_000 * MS));
        w.schedule(99_999, 42 * MS + 5);
        assert_eq!(w.next_deadline(), Some(42 * MS + 5));
        assert_eq!(fire(&mut w, 43 * MS), vec![99_999]);
        // Recomputed after firing, by walking the slots.
        assert_eq!(w.next_deadline(), Some(3_600_000 * MS));
        // A timer in a later revolution of a near slot does not hide an
        // earlier one in a farther slot.
        let mut w = TimerWheel::new();
        w.schedule(1, (SLOTS as u64 + 1) * TICK_NS);
        w.schedule(2, 100 * TICK_NS);
        let mut v = Vec::new();
        w.advance(1, &mut v);
        w.next = None;
        assert_eq!(w.next_deadline(), Some(100 * TICK_NS));
    }

    #[test]
    fn next_deadline_matches_a_brute_force_minimum() {
        // A deterministic pseudo-random mix of schedules and advances.
        let mut w = TimerWheel::new();
        let mut pending: Vec<(u32, u64)> = Vec::new();
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut now = 0u64;
        for step in 0..5_000u32 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            if x % 3 == 0 {
                now += x % (20 * MS);
                let mut v = Vec::new();
                w.advance(now, &mut v);
                let mut want: Vec<u32> =
                    pending.iter().filter(|p| p.1 <= now).map(|p| p.0).collect();
                pending.retain(|p| p.1 > now);
                v.sort_unstable();
                want.sort_unstable();
                assert_eq!(v, want, "step {step}");
            } else {
                let deadline = now + (x >> 8) % (10_000 * MS);
                w.schedule(step, deadline);
                pending.push((step, deadline));
            }
            assert_eq!(w.next_deadline(), pending.iter().map(|p| p.1).min());
            assert_eq!(w.len(), pending.len());
        }
    }

    #[test]
    fn wake_timer_arms_once_per_deadline() {
        let mut t = WakeTimer::new(0).unwrap();
        t.arm(Some(1)).unwrap();
        t.arm(Some(1)).unwrap();
        assert_eq!(t.armed, Some(1));
        t.fired();
        assert_eq!(t.armed, None);
        t.arm(None).unwrap();
        assert!(t.raw_fd() >= 0);
    }
}
