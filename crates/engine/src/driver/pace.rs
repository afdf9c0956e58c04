//! Pacing of one class's clients: when each client sends its next request.
//! One small table over the worker's state machine (style item 2): the
//! closed loop sends at once; a think time waits a drawn time after each
//! response; the open loop sends at scheduled times, each connection on its
//! own schedule (wrk2's design: a class's rate is spread evenly over its
//! connections, so a connection of a class at R tr/s over c connections sends
//! every c/R s, or with exponential gaps of that mean for Poisson arrivals).
//!
//! Policy (documented in the README):
//! - a request sent more than [`LATE_NS`] after its intended time is `late`
//!   (the timer wheel wakes the worker within tens of µs, so 1 ms late means
//!   the connection was still busy or the driver was);
//! - a connection more than [`DROP_BEHIND_NS`] behind its schedule skips the
//!   intended sends older than that and counts them `dropped`: a stall must
//!   not turn into an unbounded burst of catch-up requests, and the corrected
//!   latency of what is sent still shows the whole delay (up to 1 s);
//! - a client's first request waits a random phase (uniform over one mean
//!   think time or one send gap; an exponential draw when those are
//!   exponential), so a population starts spread out, as in steady state,
//!   instead of all at once.
//!
//! Draws use a per-connection SplitMix64 state seeded from the run's `seed`
//! and the client's index, so a run's schedules are reproducible whatever the
//! thread count and event order.

use stackbench_model::{Arrivals, ClassSpec, Pacing, PerSecond, ThinkTime};

/// A send later than this after its intended time counts as late.
pub const LATE_NS: u64 = 1_000_000;
/// A connection further behind its schedule than this drops intended sends.
pub const DROP_BEHIND_NS: u64 = 1_000_000_000;

/// The run-level pacing settings (a class's own `@…` wins over them).
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PacingConfig {
    pub think: Option<ThinkTime>,
    /// Open loop: offered rate per class.
    pub rate: Option<PerSecond>,
    pub arrivals: Arrivals,
    /// Connections opened per second (`None`: all at once).
    pub ramp: Option<PerSecond>,
    pub seed: u64,
}

/// How one class paces its requests, resolved for the worker.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Pace {
    Closed,
    Think(ThinkTime),
    /// Open loop: mean gap between sends on one connection, ns.
    Open {
        gap_ns: f64,
        poisson: bool,
    },
}

impl Pace {
    /// The pacing of `class` under `cfg`.
    pub fn of(class: &ClassSpec, cfg: &PacingConfig) -> Pace {
        match Pacing::effective(class.pacing, cfg.think, cfg.rate) {
            None => Pace::Closed,
            Some(Pacing::Think(t)) => Pace::Think(t),
            Some(Pacing::Rate(r)) => Pace::Open {
                gap_ns: f64::from(class.clients) * 1e9 / r.per_s(),
                poisson: cfg.arrivals == Arrivals::Poisson,
            },
        }
    }

    pub fn is_paced(&self) -> bool {
        !matches!(self, Pace::Closed)
    }

    pub fn is_open(&self) -> bool {
        matches!(self, Pace::Open { .. })
    }

    /// The wait before a client's first request (see the module notes).
    pub fn first_wait_ns(&self, rng: &mut u64) -> u64 {
        match *self {
            Pace::Closed => 0,
            Pace::Think(ThinkTime::Exponential(mean)) => exponential(rng, mean.as_nanos() as f64),
            Pace::Think(t) => (unit(rng) * t.mean().as_nanos() as f64) as u64,
            Pace::Open { gap_ns, poisson } => {
                if poisson {
                    exponential(rng, gap_ns)
                } else {
                    (unit(rng) * gap_ns) as u64
                }
            }
        }
    }

    /// A think time drawn from the class's distribution (0 when not thinking).
    pub fn think_ns(&self, rng: &mut u64) -> u64 {
        match *self {
            Pace::Think(ThinkTime::Constant(d)) => d.as_nanos() as u64,
            Pace::Think(ThinkTime::Exponential(mean)) => exponential(rng, mean.as_nanos() as f64),
            Pace::Think(ThinkTime::Uniform(lo, hi)) => {
                let (lo, hi) = (lo.as_nanos() as f64, hi.as_nanos() as f64);
                (lo + unit(rng) * (hi - lo)) as u64
            }
            _ => 0,
        }
    }

    /// The open-loop send after the one intended at `due_ns`, seen at
    /// `now_ns`: its intended time, and how many intended sends were dropped
    /// because the connection was more than [`DROP_BEHIND_NS`] behind.
    pub fn next_send(&self, due_ns: u64, now_ns: u64, rng: &mut u64) -> (u64, u64) {
        let Pace::Open { gap_ns, poisson } = *self else {
            return (now_ns, 0);
        };
        let gap = if poisson {
            exponential(rng, gap_ns)
        } else {
            gap_ns as u64
        };
        let next = due_ns + gap.max(1);
        let behind = now_ns.saturating_sub(next);
        if behind <= DROP_BEHIND_NS {
            return (next, 0);
        }
        // Skip whole mean gaps until within the bound; with Poisson gaps the
        // skipped sends' exact times do not matter (memoryless).
        let skipped = ((behind - DROP_BEHIND_NS) as f64 / gap_ns).ceil() as u64;
        (next + (skipped as f64 * gap_ns) as u64, skipped)
    }
}

/// The per-connection random state of client `index` of a run seeded `seed`.
pub fn rng_for(seed: u64, index: u64) -> u64 {
    let mut s = seed ^ index.wrapping_mul(0xD1B5_4A32_D192_ED03);
    splitmix(&mut s)
}

/// SplitMix64 (Steele, Lea & Flood): one u64 of state, full period.
pub fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Uniform in [0, 1), 53 random bits.
pub fn unit(state: &mut u64) -> f64 {
    (splitmix(state) >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// Exponential with the given mean (inverse transform of 1 − U, never ln 0).
pub fn exponential(state: &mut u64, mean: f64) -> u64 {
    (-(1.0 - unit(state)).ln() * mean) as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn class(text: &str) -> ClassSpec {
        text.parse::<stackbench_model::Workload>().unwrap().classes[0]
    }

    fn mean_of(n: u32, mut draw: impl FnMut() -> u64) -> f64 {
        (0..n).map(|_| draw() as f64).sum::<f64>() / f64::from(n)
    }

    #[test]
    fn a_class_rate_is_spread_over_its_connections() {
        let cfg = PacingConfig {
            rate: PerSecond::new(50_000.0),
            ..PacingConfig::default()
        };
        assert_eq!(
            Pace::of(&class("RR10(1B/1B)"), &cfg),
            Pace::Open {
                gap_ns: 200_000.0,
                poisson: false
            }
        );
        // The notation's think time wins over the rate setting.
        assert!(matches!(
            Pace::of(&class("RR10(1B/1B)@1s"), &cfg),
            Pace::Think(_)
        ));
        assert_eq!(Pace::of(&class("RR10(1B/1B)@0s"), &cfg), Pace::Closed);
    }

    #[test]
    fn draws_have_the_configured_means() {
        let mut rng = rng_for(7, 3);
        let exp = Pace::Think(ThinkTime::Exponential(Duration::from_millis(30)));
        let m = mean_of(20_000, || exp.think_ns(&mut rng));
        assert!((m / 30e6 - 1.0).abs() < 0.03, "{m}");
        let uni = Pace::Think(ThinkTime::Uniform(
            Duration::from_millis(10),
            Duration::from_millis(50),
        ));
        let m = mean_of(20_000, || uni.think_ns(&mut rng));
        assert!((m / 30e6 - 1.0).abs() < 0.02, "{m}");
        let constant = Pace::Think(ThinkTime::Constant(Duration::from_millis(30)));
        assert_eq!(constant.think_ns(&mut rng), 30_000_000);
        let phase = mean_of(20_000, || constant.first_wait_ns(&mut rng));
        assert!((phase / 15e6 - 1.0).abs() < 0.03, "{phase}");
    }

    #[test]
    fn same_seed_same_schedule() {
        let (mut a, mut b) = (rng_for(42, 9), rng_for(42, 9));
        let mut c = rng_for(42, 10);
        let (x, y, z) = (splitmix(&mut a), splitmix(&mut b), splitmix(&mut c));
        assert_eq!(x, y);
        assert_ne!(x, z);
    }

    #[test]
    fn open_loop_keeps_its_schedule_and_drops_beyond_a_second() {
        let pace = Pace::Open {
            gap_ns: 1e6,
            poisson: false,
        };
        let mut rng = 1;
        // On time: the next slot is one gap after the last intended one.
        assert_eq!(
            pace.next_send(5_000_000, 5_200_000, &mut rng),
            (6_000_000, 0)
        );
        // Half a second behind: keep the schedule, send late.
        assert_eq!(pace.next_send(0, 500_000_000, &mut rng), (1_000_000, 0));
        // 3 s behind: skip ~2 s of intended sends, stay 1 s behind.
        let (next, dropped) = pace.next_send(0, 3_001_000_000, &mut rng);
        assert_eq!(dropped, 2_000);
        assert_eq!(next, 2_001_000_000);
        assert_eq!(3_001_000_000 - next, DROP_BEHIND_NS);
    }
}
