//! How a class's clients pace their transactions: closed loop (the next
//! request as soon as the response is in), a think time between a response and
//! the next request (a user population: constant, exponential or uniform), or
//! an open-loop rate (requests at scheduled times, constant or Poisson
//! arrivals, whatever the responses do).
//!
//! One text grammar serves the settings (`think = "exp:30s"`, `rate =
//! "50000/s"`) and the notation's per-class suffix (`RR8K(100B/800B)@30s`,
//! `RR100(1kB/1kB)@5000/s`); every value has a canonical text that parses back
//! to itself. Durations and rates use the unit grammars of [`crate::units`].

use std::fmt;
use std::hash::{Hash, Hasher};
use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::units;

/// The think-time distribution of a user: drawn afresh after every response.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ThinkTime {
    /// Always the same, e.g. `30s` (the TN3270 capacity studies'
    /// simulated terminal users, each thinking 30 s between transactions).
    Constant(Duration),
    /// Exponentially distributed with this mean, e.g. `exp:30s`: arrivals of a
    /// large population then look like a Poisson process.
    Exponential(Duration),
    /// Uniform between two bounds, e.g. `uniform:10s..50s`.
    Uniform(Duration, Duration),
}

impl ThinkTime {
    /// The mean think time.
    pub fn mean(&self) -> Duration {
        match *self {
            ThinkTime::Constant(d) | ThinkTime::Exponential(d) => d,
            ThinkTime::Uniform(lo, hi) => (lo + hi) / 2,
        }
    }

    /// Whether a client never thinks (`0s`): the closed loop.
    pub fn is_zero(&self) -> bool {
        self.mean().is_zero() && !matches!(self, ThinkTime::Uniform(_, hi) if !hi.is_zero())
    }

    /// Parses `30s`, `exp:30s` or `uniform:10s..50s`; the error says the fix.
    pub fn parse(text: &str) -> Result<ThinkTime, String> {
        const FIX: &str = "write a duration (30s), exp:MEAN (exp:30s) or uniform:MIN..MAX \
                           (uniform:10s..50s)";
        let duration = |t: &str| {
            units::parse_duration(t).map_err(|e| format!("think time '{text}': {e}; {FIX}"))
        };
        let t = text.trim();
        if let Some(mean) = t.strip_prefix("exp:") {
            return Ok(ThinkTime::Exponential(duration(mean)?));
        }
        if let Some(range) = t.strip_prefix("uniform:") {
            let (lo, hi) = range
                .split_once("..")
                .ok_or_else(|| format!("think time '{text}': no range; {FIX}"))?;
            let (lo, hi) = (duration(lo)?, duration(hi)?);
            if lo > hi {
                return Err(format!(
                    "think time '{text}': MIN is above MAX; write uniform:MIN..MAX with MIN ≤ MAX, \
                     e.g. uniform:10s..50s"
                ));
            }
            return Ok(ThinkTime::Uniform(lo, hi));
        }
        if let Some((kind, _)) = t.split_once(':') {
            return Err(format!(
                "think time '{text}': unknown distribution '{kind}'; {FIX}"
            ));
        }
        duration(t).map(ThinkTime::Constant)
    }
}

impl fmt::Display for ThinkTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let d = units::format_duration;
        match *self {
            ThinkTime::Constant(t) => f.write_str(&d(t)),
            ThinkTime::Exponential(t) => write!(f, "exp:{}", d(t)),
            ThinkTime::Uniform(lo, hi) => write!(f, "uniform:{}..{}", d(lo), d(hi)),
        }
    }
}

/// A rate in events per second, more than 0 and finite: an open-loop class's
/// offered transactions, or the connection ramp. Written as [`units::parse_rate`]
/// reads it (`50000/s`, `2/min`, `1/30s`); its canonical text is `N/s`,
/// `N/min` or `N/h` when N is whole, else the exact per-second figure.
#[derive(Debug, Clone, Copy, PartialOrd)]
pub struct PerSecond(f64);

impl PerSecond {
    /// Events per second.
    pub fn per_s(&self) -> f64 {
        self.0
    }

    /// A rate from events per second; `None` unless more than 0 and finite.
    pub fn new(per_s: f64) -> Option<PerSecond> {
        (per_s.is_finite() && per_s > 0.0).then_some(PerSecond(per_s))
    }

    /// Parses `COUNT/INTERVAL`; zero and negative rates are refused.
    pub fn parse(text: &str) -> Result<PerSecond, String> {
        let rate = units::parse_rate(text).map_err(|e| e.to_string())?;
        PerSecond::new(rate.per_s()).ok_or_else(|| {
            format!(
                "rate '{}' is zero: give more than 0, e.g. 5000/s or 2/min",
                text.trim()
            )
        })
    }
}

// Values are finite and positive, so equality of bits is equality of values.
impl PartialEq for PerSecond {
    fn eq(&self, other: &Self) -> bool {
        self.0.to_bits() == other.0.to_bits()
    }
}

impl Eq for PerSecond {}

impl Hash for PerSecond {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.0.to_bits().hash(state);
    }
}

impl fmt::Display for PerSecond {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (unit, seconds) in [("s", 1.0), ("min", 60.0), ("h", 3600.0)] {
            let n = (self.0 * seconds).round();
            if (1.0..1e15).contains(&n) && n / seconds == self.0 {
                return write!(f, "{n}/{unit}");
            }
        }
        // Rust prints the shortest text that reads back as the same f64.
        write!(f, "{}/s", self.0)
    }
}

/// How open-loop sends are spaced on each connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Arrivals {
    /// Evenly spaced (wrk2's constant throughput).
    #[default]
    Constant,
    /// Exponential gaps: each connection is a Poisson process.
    Poisson,
}

impl Arrivals {
    pub fn name(self) -> &'static str {
        match self {
            Arrivals::Constant => "constant",
            Arrivals::Poisson => "poisson",
        }
    }
}

/// A class's pacing written in the notation (`@30s`, `@exp:30s`, `@5000/s`);
/// it wins over the `think` and `rate` settings for that class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Pacing {
    /// Think time between a response and the next request (`@0s`: none).
    Think(ThinkTime),
    /// Open loop at this rate for the class, spread over its connections.
    Rate(PerSecond),
}

impl Pacing {
    /// A rate holds a `/`, a think time never does.
    pub fn parse(text: &str) -> Result<Pacing, String> {
        if text.contains('/') {
            PerSecond::parse(text).map(Pacing::Rate)
        } else {
            ThinkTime::parse(text).map(Pacing::Think)
        }
    }

    /// The pacing a class runs with: its own (notation), else the `rate` or
    /// `think` setting, else `None` (closed loop). A zero think time is the
    /// closed loop.
    pub fn effective(
        own: Option<Pacing>,
        think: Option<ThinkTime>,
        rate: Option<PerSecond>,
    ) -> Option<Pacing> {
        own.or(rate.map(Pacing::Rate))
            .or(think.map(Pacing::Think))
            .filter(|p| !matches!(p, Pacing::Think(t) if t.is_zero()))
    }
}

impl fmt::Display for Pacing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Pacing::Think(t) => write!(f, "{t}"),
            Pacing::Rate(r) => write!(f, "{r}"),
        }
    }
}

/// Stored as its notation text (`"exp:30s"`, `"5000/s"`).
impl Serialize for Pacing {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl<'de> Deserialize<'de> for Pacing {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Pacing::parse(&text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(s: u64) -> Duration {
        Duration::from_secs(s)
    }

    #[test]
    fn think_times_parse_and_print_canonically() {
        let cases = [
            ("30s", ThinkTime::Constant(secs(30)), "30s"),
            (
                "0.5s",
                ThinkTime::Constant(Duration::from_millis(500)),
                "500ms",
            ),
            ("exp:30s", ThinkTime::Exponential(secs(30)), "exp:30s"),
            (
                "uniform:10s..50s",
                ThinkTime::Uniform(secs(10), secs(50)),
                "uniform:10s..50s",
            ),
            (
                " uniform: 1m .. 2m ",
                ThinkTime::Uniform(secs(60), secs(120)),
                "uniform:1m..2m",
            ),
        ];
        for (text, value, canonical) in cases {
            assert_eq!(ThinkTime::parse(text), Ok(value), "{text}");
            assert_eq!(value.to_string(), canonical);
            assert_eq!(ThinkTime::parse(canonical), Ok(value));
        }
        assert_eq!(ThinkTime::Uniform(secs(10), secs(50)).mean(), secs(30));
        assert!(ThinkTime::Constant(Duration::ZERO).is_zero());
        assert!(!ThinkTime::Uniform(Duration::ZERO, secs(1)).is_zero());
    }

    #[test]
    fn bad_think_times_say_the_fix() {
        for (text, want) in [
            ("-1s", "negative"),
            ("30", "no unit"),
            ("gauss:3s", "unknown distribution 'gauss'"),
            ("uniform:5s", "no range"),
            ("uniform:5s..1s", "MIN is above MAX"),
            ("exp:", "missing"),
        ] {
            let e = ThinkTime::parse(text).unwrap_err();
            assert!(e.contains(want), "{text}: {e}");
            assert!(!e.contains('\n'));
        }
    }

    #[test]
    fn rates_refuse_zero_and_round_trip() {
        assert!(PerSecond::parse("0/s").unwrap_err().contains("zero"));
        assert!(PerSecond::parse("-5/s").is_err());
        assert!(PerSecond::parse("5000").is_err());
        for (text, canonical) in [
            ("50000/s", "50000/s"),
            ("2/min", "2/min"),
            ("1/30s", "2/min"),
            ("3/h", "3/h"),
            ("0.5/s", "30/min"),
            ("1/7s", "0.14285714285714285/s"),
        ] {
            let r = PerSecond::parse(text).unwrap();
            assert_eq!(r.to_string(), canonical, "{text}");
            assert_eq!(PerSecond::parse(canonical).unwrap(), r, "{text}");
        }
    }

    #[test]
    fn notation_pacing_wins_and_zero_think_is_closed() {
        let rate = PerSecond::parse("100/s").ok();
        let think = Some(ThinkTime::Constant(secs(1)));
        let own = Pacing::parse("exp:2s").ok();
        assert_eq!(Pacing::effective(own, think, rate), own);
        assert_eq!(Pacing::effective(None, think, rate), rate.map(Pacing::Rate));
        assert_eq!(
            Pacing::effective(None, think, None),
            think.map(Pacing::Think)
        );
        let zero = Pacing::parse("0s").ok();
        assert_eq!(Pacing::effective(zero, think, None), None);
        assert!(matches!(Pacing::parse("5000/s"), Ok(Pacing::Rate(_))));
    }
}
