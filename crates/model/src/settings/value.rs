//! The value types run settings are made of, and the one trait that gives each
//! its text grammar (shared by flags, study-file keys and sweeps), its
//! canonical spelling (printed, stored in labels, round-trips through
//! `parse`) and its JSON form (a number with the unit in the key's name).

use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::socket::{CrrClose, IoMode, Transport};
use crate::pacing::{Arrivals, PerSecond, ThinkTime};
use crate::units;

/// What a setting's type provides to the settings table.
pub trait SettingValue: Sized {
    /// Placeholder in `--help`, e.g. `DURATION`.
    const VALUE_NAME: &'static str;
    /// A switch: `--flag` alone means true (also `--flag=false`).
    const SWITCH: bool = false;
    /// The allowed spellings, when the type is a closed set.
    const ALLOWED: &'static [&'static str] = &[];
    /// Parses user text; the error says what is wrong and the fix.
    fn parse(text: &str) -> Result<Self, String>;
    /// Canonical text: `parse(&v.text()) == Ok(v)`.
    fn text(&self) -> String;
    /// A number to check against the setting's range, when it has an order.
    fn ordered(&self) -> Option<f64> {
        None
    }
}

/// An optional setting: `default` (or nothing given) means "not set", which
/// the run resolves (e.g. threads = one per driver CPU).
impl<T: SettingValue> SettingValue for Option<T> {
    const VALUE_NAME: &'static str = T::VALUE_NAME;
    const SWITCH: bool = T::SWITCH;
    const ALLOWED: &'static [&'static str] = T::ALLOWED;
    fn parse(text: &str) -> Result<Self, String> {
        if text.trim() == "default" {
            return Ok(None);
        }
        T::parse(text).map(Some)
    }
    fn text(&self) -> String {
        self.as_ref().map_or_else(|| "default".to_string(), T::text)
    }
    fn ordered(&self) -> Option<f64> {
        self.as_ref().and_then(T::ordered)
    }
}

impl SettingValue for bool {
    const VALUE_NAME: &'static str = "BOOL";
    const SWITCH: bool = true;
    const ALLOWED: &'static [&'static str] = &["true", "false"];
    fn parse(text: &str) -> Result<Self, String> {
        match text.trim() {
            "true" => Ok(true),
            "false" => Ok(false),
            _ => Err("not a boolean: use true or false".to_string()),
        }
    }
    fn text(&self) -> String {
        self.to_string()
    }
}

macro_rules! whole_number {
    ($($t:ty),*) => {$(
        impl SettingValue for $t {
            const VALUE_NAME: &'static str = "N";
            fn parse(text: &str) -> Result<Self, String> {
                let n = units::parse_count(text).map_err(|e| e.to_string())?;
                <$t>::try_from(n).map_err(|_| format!("too large: at most {}", <$t>::MAX))
            }
            fn text(&self) -> String {
                self.to_string()
            }
            fn ordered(&self) -> Option<f64> {
                Some(*self as f64)
            }
        }
    )*};
}
whole_number!(u32, u64);

/// A duration, stored as seconds (`*_s` keys), written `10s`, `500ms`, `2m`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Secs(pub Duration);

impl SettingValue for Secs {
    const VALUE_NAME: &'static str = "DURATION";
    fn parse(text: &str) -> Result<Self, String> {
        units::parse_duration(text)
            .map(Secs)
            .map_err(|e| e.to_string())
    }
    fn text(&self) -> String {
        units::format_duration(self.0)
    }
    fn ordered(&self) -> Option<f64> {
        Some(self.0.as_secs_f64())
    }
}

impl Serialize for Secs {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(self.0.as_secs_f64())
    }
}

impl<'de> Deserialize<'de> for Secs {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = f64::deserialize(d)?;
        Duration::try_from_secs_f64(s)
            .map(Secs)
            .map_err(serde::de::Error::custom)
    }
}

/// A byte count, stored as bytes (`*_bytes` keys), written `256kB`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Bytes(pub u64);

impl SettingValue for Bytes {
    const VALUE_NAME: &'static str = "SIZE";
    fn parse(text: &str) -> Result<Self, String> {
        units::parse_size(text)
            .map(Bytes)
            .map_err(|e| e.to_string())
    }
    fn text(&self) -> String {
        crate::size::format_size(self.0)
    }
    fn ordered(&self) -> Option<f64> {
        Some(self.0 as f64)
    }
}

/// A Linux CPU list, `0-3,8`: sorted, without duplicates.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct CpuList(pub Vec<usize>);

impl SettingValue for CpuList {
    const VALUE_NAME: &'static str = "CPUS";
    fn parse(text: &str) -> Result<Self, String> {
        units::parse_cpu_list(text)
            .map(CpuList)
            .map_err(|e| e.to_string())
    }
    fn text(&self) -> String {
        units::format_cpu_list(&self.0)
    }
}

/// Process ids, `1234,5678`: sorted, without duplicates (the `server_pid`
/// setting's processes).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct PidList(pub Vec<u32>);

/// The largest pid Linux hands out (`PID_MAX_LIMIT` on 64-bit kernels).
pub const PID_MAX: u32 = 4_194_304;

impl SettingValue for PidList {
    const VALUE_NAME: &'static str = "PIDS";
    fn parse(text: &str) -> Result<Self, String> {
        let mut pids = Vec::new();
        for part in text.split(',').map(str::trim) {
            match part.parse::<u32>() {
                Ok(pid) if (1..=PID_MAX).contains(&pid) => pids.push(pid),
                _ => {
                    return Err(format!(
                        "'{part}' is not a process id: give pids from 1 to {PID_MAX}, \
                         comma-separated, e.g. 1234,1240"
                    ))
                }
            }
        }
        pids.sort_unstable();
        pids.dedup();
        Ok(PidList(pids))
    }
    fn text(&self) -> String {
        let pids: Vec<String> = self.0.iter().map(u32::to_string).collect();
        pids.join(",")
    }
}

/// Free text, e.g. a `HOST:PORT`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Text(pub String);

impl SettingValue for Text {
    const VALUE_NAME: &'static str = "TEXT";
    fn parse(text: &str) -> Result<Self, String> {
        let t = text.trim();
        if t.is_empty() {
            return Err("empty: give a value".to_string());
        }
        Ok(Text(t.to_string()))
    }
    fn text(&self) -> String {
        self.0.clone()
    }
}

impl SettingValue for CrrClose {
    const VALUE_NAME: &'static str = "WHO";
    const ALLOWED: &'static [&'static str] = &["server", "client", "abort"];
    fn parse(text: &str) -> Result<Self, String> {
        match text.trim() {
            "server" => Ok(CrrClose::Server),
            "client" => Ok(CrrClose::Client),
            "abort" => Ok(CrrClose::Abort),
            _ => Err("unknown close mode: use server, client or abort".to_string()),
        }
    }
    fn text(&self) -> String {
        self.name().to_string()
    }
}

impl SettingValue for IoMode {
    const VALUE_NAME: &'static str = "IO";
    const ALLOWED: &'static [&'static str] = &["auto", "epoll", "uring"];
    fn parse(text: &str) -> Result<Self, String> {
        match text.trim() {
            "epoll" => Ok(IoMode::Epoll),
            "uring" => Ok(IoMode::Uring),
            "auto" => Ok(IoMode::Auto),
            _ => Err("unknown I/O backend: use auto, epoll or uring".to_string()),
        }
    }
    fn text(&self) -> String {
        self.name().to_string()
    }
}

impl SettingValue for Transport {
    const VALUE_NAME: &'static str = "TRANSPORT";
    const ALLOWED: &'static [&'static str] = Transport::NAMES;
    fn parse(text: &str) -> Result<Self, String> {
        let text = text.trim();
        if let Some(t) = Transport::ALL.iter().find(|t| t.name() == text) {
            return Ok(*t);
        }
        let (last, rest) = Transport::NAMES.split_last().expect("a transport");
        Err(format!(
            "unknown transport: use {} or {last}",
            rest.join(", ")
        ))
    }
    fn text(&self) -> String {
        self.name().to_string()
    }
}

/// A think time, stored as its text (`"exp:30s"`): a distribution and its
/// durations do not fit one number with a unit.
impl SettingValue for ThinkTime {
    const VALUE_NAME: &'static str = "THINK";
    fn parse(text: &str) -> Result<Self, String> {
        ThinkTime::parse(text)
    }
    fn text(&self) -> String {
        self.to_string()
    }
    /// The mean, in seconds, for the range check.
    fn ordered(&self) -> Option<f64> {
        Some(self.mean().as_secs_f64())
    }
}

impl Serialize for ThinkTime {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl<'de> Deserialize<'de> for ThinkTime {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        ThinkTime::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// A rate, stored per second (`*_per_s` keys), written `50000/s`, `2/min`.
impl SettingValue for PerSecond {
    const VALUE_NAME: &'static str = "RATE";
    fn parse(text: &str) -> Result<Self, String> {
        PerSecond::parse(text)
    }
    fn text(&self) -> String {
        self.to_string()
    }
    fn ordered(&self) -> Option<f64> {
        Some(self.per_s())
    }
}

impl Serialize for PerSecond {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(self.per_s())
    }
}

impl<'de> Deserialize<'de> for PerSecond {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let per_s = f64::deserialize(d)?;
        PerSecond::new(per_s).ok_or_else(|| serde::de::Error::custom("a rate must be more than 0"))
    }
}

impl SettingValue for Arrivals {
    const VALUE_NAME: &'static str = "ARRIVALS";
    const ALLOWED: &'static [&'static str] = &["constant", "poisson"];
    fn parse(text: &str) -> Result<Self, String> {
        match text.trim() {
            "constant" => Ok(Arrivals::Constant),
            "poisson" => Ok(Arrivals::Poisson),
            _ => Err("unknown arrivals: use constant or poisson".to_string()),
        }
    }
    fn text(&self) -> String {
        self.name().to_string()
    }
}

impl Serialize for Arrivals {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for Arrivals {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        <Arrivals as SettingValue>::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// Splits `A,B` into two numbers; `example` shows the fix.
fn pair(text: &str, example: &str) -> Result<(f64, f64), String> {
    let bad = || format!("give two numbers separated by a comma, e.g. {example}");
    let (a, b) = text.split_once(',').ok_or_else(bad)?;
    let a: f64 = a.trim().trim_end_matches('%').parse().map_err(|_| bad())?;
    let b: f64 = b.trim().trim_end_matches('%').parse().map_err(|_| bad())?;
    if !(a.is_finite() && b.is_finite()) {
        return Err(bad());
    }
    Ok((a, b))
}

/// Repeat until the `level_pct`% confidence interval's full width is at most
/// `width_pct`% of the mean (netperf `-I level,width`). Written `99,5`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Confidence {
    pub level_pct: f64,
    pub width_pct: f64,
}

impl SettingValue for Confidence {
    const VALUE_NAME: &'static str = "LEVEL,WIDTH";
    fn parse(text: &str) -> Result<Self, String> {
        let (level_pct, width_pct) = pair(text, "99,5")?;
        if !(50.0..=99.9).contains(&level_pct) {
            return Err(format!(
                "confidence level {level_pct}% out of range: use 50 to 99.9, e.g. 99,5"
            ));
        }
        if !(width_pct > 0.0 && width_pct <= 100.0) {
            return Err(format!(
                "interval width {width_pct}% out of range: use more than 0 and at most 100, e.g. 99,5"
            ));
        }
        Ok(Confidence {
            level_pct,
            width_pct,
        })
    }
    fn text(&self) -> String {
        format!("{},{}", self.level_pct, self.width_pct)
    }
}

/// Bounds on repetitions with a confidence target (netperf `-i max,min`),
/// written `MIN,MAX`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct IterationBounds {
    pub min: u32,
    pub max: u32,
}

impl SettingValue for IterationBounds {
    const VALUE_NAME: &'static str = "MIN,MAX";
    fn parse(text: &str) -> Result<Self, String> {
        let (min, max) = pair(text, "3,30")?;
        let whole = |v: f64| v.fract() == 0.0 && (1.0..=1000.0).contains(&v);
        if !(whole(min) && whole(max) && min <= max) {
            return Err(
                "give whole numbers 1 ≤ MIN ≤ MAX ≤ 1000, e.g. 3,30 (2 or more for an interval)"
                    .to_string(),
            );
        }
        Ok(IterationBounds {
            min: min as u32,
            max: max as u32,
        })
    }
    fn text(&self) -> String {
        format!("{},{}", self.min, self.max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip<T: SettingValue + PartialEq + std::fmt::Debug>(text: &str) {
        let v = T::parse(text).unwrap();
        assert_eq!(T::parse(&v.text()).unwrap(), v, "{text} → {}", v.text());
    }

    #[test]
    fn canonical_text_round_trips() {
        round_trip::<Secs>("1.5s");
        round_trip::<Secs>("250us");
        round_trip::<Option<Secs>>("default");
        round_trip::<Bytes>("256kB");
        round_trip::<CpuList>("3,0-1");
        round_trip::<PidList>("40,7,7");
        assert_eq!(PidList::parse("40, 7,7").unwrap().text(), "7,40");
        for bad in ["", "0", "x", "1,,2", "-3", "4194305"] {
            assert!(PidList::parse(bad).is_err(), "{bad}");
        }
        round_trip::<Confidence>("99,5");
        round_trip::<IterationBounds>("3,30");
        round_trip::<CrrClose>("abort");
        round_trip::<Transport>("unix");
        round_trip::<IoMode>("uring");
        round_trip::<IoMode>("auto");
        round_trip::<IoMode>("epoll");
        round_trip::<Transport>("mptcp");
        round_trip::<Transport>("smc");
        for name in Transport::NAMES {
            round_trip::<Transport>(name);
            // The stored spelling is the setting's.
            let json = serde_json::to_string(&Transport::parse(name).unwrap()).unwrap();
            assert_eq!(json, format!("\"{name}\""));
        }
        round_trip::<u32>("4");
        round_trip::<bool>("false");
        round_trip::<ThinkTime>("uniform:10s..50s");
        round_trip::<Option<ThinkTime>>("exp:30s");
        round_trip::<PerSecond>("50000/s");
        round_trip::<PerSecond>("1/30s");
        round_trip::<Arrivals>("poisson");
    }

    #[test]
    fn bad_values_say_the_fix() {
        assert!(Confidence::parse("99").unwrap_err().contains("e.g. 99,5"));
        assert!(IterationBounds::parse("30,3")
            .unwrap_err()
            .contains("MIN ≤ MAX"));
        assert!(bool::parse("yes").unwrap_err().contains("true or false"));
        assert!(CrrClose::parse("rst")
            .unwrap_err()
            .contains("server, client or abort"));
        assert!(Transport::parse("sctp")
            .unwrap_err()
            .contains("tcp, unix, mptcp, tls or smc"));
    }
}
