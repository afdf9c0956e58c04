//! How the driver's worker threads are scheduled (`gen_sched`): the
//! kernel's default for the user, a time slice of their own under EEVDF
//! (`sched_setattr`'s `sched_runtime` for `SCHED_OTHER`, Linux 6.12 and
//! later: a shorter slice makes a woken thread eligible to preempt sooner
//! without changing its share), or a real-time class (`SCHED_FIFO`,
//! `SCHED_RR`: a woken worker runs at once, ahead of every fair task). The
//! engine applies it (`stackbench_engine::sched`); a kernel that refuses it
//! is named in one line before the run starts.
//!
//! Measured on this project's 6.18 machine as root without
//! CAP_SYS_RESOURCE (`RLIMIT_RTPRIO` 0, `sched_rt_runtime_us` 950000):
//! slices of 100 µs to 100 ms are taken (the kernel clamps below 100 µs,
//! hence the range here), `SCHED_FIFO`/`SCHED_RR` 1–99 are taken through
//! CAP_SYS_NICE, and `SCHED_FLAG_LATENCY_NICE` (never merged) is EINVAL.

use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::value::SettingValue;
use crate::units;

/// The shortest and longest slice the kernel takes (`sched_runtime` of a
/// fair task is clamped to 0.1–100 ms in `__setparam_fair`).
pub const SLICE_MIN: Duration = Duration::from_micros(100);
pub const SLICE_MAX: Duration = Duration::from_millis(100);

/// The scheduling of the driver's (and every agent's) worker threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum GenSched {
    /// Whatever the user's threads get (SCHED_OTHER, the kernel's slice).
    #[default]
    Default,
    /// SCHED_OTHER with this EEVDF slice (`sched_runtime`).
    Slice(Duration),
    /// SCHED_FIFO at this priority (1–99).
    Fifo(u8),
    /// SCHED_RR at this priority (1–99).
    Rr(u8),
}

impl GenSched {
    /// A real-time class (FIFO or RR).
    pub fn real_time(self) -> bool {
        matches!(self, GenSched::Fifo(_) | GenSched::Rr(_))
    }
}

fn priority(kind: &str, text: &str) -> Result<u8, String> {
    match text.trim().parse::<u8>() {
        Ok(p) if (1..=99).contains(&p) => Ok(p),
        _ => Err(format!(
            "bad {kind} priority '{text}': write a whole number from 1 to 99, e.g. {kind}:10"
        )),
    }
}

impl SettingValue for GenSched {
    const VALUE_NAME: &'static str = "SCHED";
    fn parse(text: &str) -> Result<Self, String> {
        let text = text.trim();
        let (kind, arg) = text.split_once(':').unwrap_or((text, ""));
        match (kind, arg) {
            ("default", "") => Ok(GenSched::Default),
            ("slice", d) => {
                let d = units::parse_duration(d).map_err(|e| format!("bad slice: {e}"))?;
                if !(SLICE_MIN..=SLICE_MAX).contains(&d) {
                    return Err(format!(
                        "slice {} is outside what the kernel takes: write 100us to 100ms, \
                         e.g. slice:100us",
                        units::format_duration(d)
                    ));
                }
                Ok(GenSched::Slice(d))
            }
            ("fifo", p) => priority("fifo", p).map(GenSched::Fifo),
            ("rr", p) => priority("rr", p).map(GenSched::Rr),
            _ => Err(format!(
                "unknown scheduling '{text}': use default, slice:DURATION (100us to 100ms), \
                 fifo:PRIORITY or rr:PRIORITY (1 to 99)"
            )),
        }
    }
    fn text(&self) -> String {
        match self {
            GenSched::Default => "default".to_string(),
            GenSched::Slice(d) => format!("slice:{}", units::format_duration(*d)),
            GenSched::Fifo(p) => format!("fifo:{p}"),
            GenSched::Rr(p) => format!("rr:{p}"),
        }
    }
}

impl Serialize for GenSched {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.text())
    }
}

impl<'de> Deserialize<'de> for GenSched {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        GenSched::parse(&String::deserialize(d)?).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings_read_back_as_themselves() {
        for text in ["default", "slice:100us", "slice:3ms", "fifo:1", "rr:99"] {
            let v = GenSched::parse(text).unwrap();
            assert_eq!(v.text(), text);
            assert_eq!(GenSched::parse(&v.text()), Ok(v));
        }
        assert_eq!(
            GenSched::parse("slice:100us"),
            Ok(GenSched::Slice(Duration::from_micros(100)))
        );
        assert!(GenSched::Fifo(5).real_time() && !GenSched::Slice(SLICE_MIN).real_time());
    }

    #[test]
    fn bad_values_name_the_fix() {
        let err = |t: &str| GenSched::parse(t).unwrap_err();
        assert!(
            err("slice:50us").contains("100us to 100ms"),
            "{}",
            err("slice:50us")
        );
        assert!(err("slice:1s").contains("outside"));
        assert!(err("slice:fast").contains("bad slice"));
        assert!(err("fifo:0").contains("1 to 99"));
        assert!(err("rr:100").contains("1 to 99"));
        assert!(err("deadline").contains("use default, slice"));
        assert!(err("default:1").contains("unknown scheduling"));
    }
}
