//! The workload notation of z/OS Communications Server performance reports:
//! `NAME x(y/z)` — x clients, each sending y bytes and receiving z bytes per
//! transaction — and mixes joined with `+`. A class may end in `@PACING`: a
//! think time (`RR8K(100B/800B)@30s`, `@exp:30s`, `@uniform:10s..50s`) or an
//! open-loop rate (`RR100(1kB/1kB)@5000/s`), which wins over the `think` and
//! `rate` settings for that class (see [`crate::pacing`]).
//!
//! Parsing is two-stage in the ripgrep sense: the text is checked piece by piece
//! here and resolved into an immutable [`Workload`] holding exact byte counts; the
//! engine never sees the text. `Display` prints the canonical form, which parses
//! back to the same value (a property test checks it).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::error::NotationError;
use crate::pacing::Pacing;
use crate::size::{format_count, format_size, parse_count, parse_size};

/// The transaction shape of a workload class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Kind {
    /// Request/response on one persistent connection per client.
    Rr,
    /// Connect, send the request, receive the response, close: one connection
    /// per transaction.
    Crr,
    /// Streaming: one transaction is one whole transfer on a persistent
    /// connection; the direction follows from which side is larger.
    Str,
}

impl Kind {
    /// The notation's name of the kind.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Rr => "RR",
            Kind::Crr => "CRR",
            Kind::Str => "STR",
        }
    }
}

/// Direction of a stream, from the client's point of view.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum StreamDirection {
    /// Small request, large response (`STR3(1B/20MB)`).
    Get,
    /// Large request, small reply (`STR3(20MB/1B)`).
    Put,
}

/// One workload class: `RR10(4kB/4kB)` resolved to exact numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ClassSpec {
    pub kind: Kind,
    /// Number of concurrent clients (connections for RR/STR, connection slots
    /// for CRR).
    pub clients: u32,
    /// Bytes the client sends per transaction.
    pub request_bytes: u64,
    /// Bytes the server returns per transaction.
    pub response_bytes: u64,
    /// The class's own pacing (`@30s`, `@5000/s`); `None`: the settings decide.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pacing: Option<Pacing>,
}

impl ClassSpec {
    /// For streams, which way the bulk flows; `None` for RR and CRR. A stream
    /// whose two sizes are equal counts as a GET.
    pub fn stream_direction(&self) -> Option<StreamDirection> {
        match self.kind {
            Kind::Str if self.request_bytes > self.response_bytes => Some(StreamDirection::Put),
            Kind::Str => Some(StreamDirection::Get),
            _ => None,
        }
    }

    fn parse(part: &str, whole: &str) -> Result<ClassSpec, NotationError> {
        let (part, pacing) = match part.split_once('@') {
            Some((class, pacing)) => {
                let parsed = Pacing::parse(pacing).map_err(|message| NotationError::BadPacing {
                    pacing: pacing.to_string(),
                    whole: whole.to_string(),
                    message,
                })?;
                (class.trim_end(), Some(parsed))
            }
            None => (part, None),
        };
        let malformed = || NotationError::Malformed {
            part: part.to_string(),
            whole: whole.to_string(),
        };
        let name_end = part
            .find(|c: char| !c.is_ascii_alphabetic())
            .unwrap_or(part.len());
        let kind = match &part[..name_end] {
            "RR" => Kind::Rr,
            "CRR" => Kind::Crr,
            "STR" => Kind::Str,
            _ => {
                return Err(NotationError::UnknownKind {
                    part: part.to_string(),
                    whole: whole.to_string(),
                })
            }
        };
        let rest = &part[name_end..];
        let open = rest.find('(').ok_or_else(malformed)?;
        let inner = rest[open + 1..].strip_suffix(')').ok_or_else(malformed)?;
        // `RR(1B/1B)` is one client: the form a client-count sweep starts from.
        let clients = match &rest[..open] {
            "" => 1,
            count => parse_count(count, whole)?,
        };
        let (req, resp) = inner.split_once('/').ok_or_else(malformed)?;
        Ok(ClassSpec {
            kind,
            clients,
            request_bytes: parse_size(req, whole)?,
            response_bytes: parse_size(resp, whole)?,
            pacing,
        })
    }
}

impl fmt::Display for ClassSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}{}({}/{})",
            self.kind.name(),
            format_count(self.clients),
            format_size(self.request_bytes),
            format_size(self.response_bytes)
        )?;
        match &self.pacing {
            Some(p) => write!(f, "@{p}"),
            None => Ok(()),
        }
    }
}

/// A workload: one class, or a mix of classes that run concurrently with
/// statistics kept per class.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Workload {
    pub classes: Vec<ClassSpec>,
}

impl Workload {
    /// Total connections (or CRR connection slots) the workload holds at once.
    pub fn total_clients(&self) -> u64 {
        self.classes.iter().map(|c| u64::from(c.clients)).sum()
    }
}

impl FromStr for Workload {
    type Err = NotationError;

    fn from_str(text: &str) -> Result<Workload, NotationError> {
        let whole = text.trim();
        if whole.is_empty() {
            return Err(NotationError::Empty);
        }
        let parts: Vec<&str> = whole.split('+').map(str::trim).collect();
        // An empty part is a stray '+', not an unknown kind named ''.
        if let Some(i) = parts.iter().position(|p| p.is_empty()) {
            let place = if i == 0 { "before '+'" } else { "after '+'" };
            return Err(NotationError::EmptyClass {
                place,
                whole: whole.to_string(),
            });
        }
        let classes = parts
            .iter()
            .map(|part| ClassSpec::parse(part, whole))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Workload { classes })
    }
}

impl fmt::Display for Workload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, class) in self.classes.iter().enumerate() {
            if i > 0 {
                f.write_str("+")?;
            }
            write!(f, "{class}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn parse(s: &str) -> Workload {
        s.parse().unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    #[test]
    fn seeds_examples_resolve_to_bytes() {
        let w = parse("RR10(4kB/4kB)");
        assert_eq!(
            w.classes,
            vec![ClassSpec {
                kind: Kind::Rr,
                clients: 10,
                request_bytes: 4096,
                response_bytes: 4096,
                pacing: None,
            }]
        );
        let c = parse("CRR40(64B/8kB)").classes[0];
        assert_eq!(
            (c.kind, c.clients, c.request_bytes, c.response_bytes),
            (Kind::Crr, 40, 64, 8192)
        );
        let get = parse("STR3(1B/20MB)").classes[0];
        assert_eq!(get.stream_direction(), Some(StreamDirection::Get));
        assert_eq!(get.response_bytes, 20 * 1024 * 1024);
        let put = parse("STR3(20MB/1B)").classes[0];
        assert_eq!(put.stream_direction(), Some(StreamDirection::Put));
        assert_eq!(parse("RR1(1B/1B)").classes[0].request_bytes, 1);
        assert_eq!(parse("RR256K(100B/800B)").classes[0].clients, 262_144);
    }

    #[test]
    fn mixes_keep_class_order() {
        let w = parse("RR1(100B/800B)+STR10(1B/20MB)");
        assert_eq!(w.classes.len(), 2);
        assert_eq!(w.classes[0].kind, Kind::Rr);
        assert_eq!(w.classes[1].clients, 10);
        assert_eq!(w.total_clients(), 11);
        assert_eq!(w.to_string(), "RR1(100B/800B)+STR10(1B/20MB)");
    }

    #[test]
    fn display_is_canonical() {
        assert_eq!(parse("RR10(4KiB/4KB)").to_string(), "RR10(4kB/4kB)");
        assert_eq!(parse("RR1024(1B/1024B)").to_string(), "RR1K(1B/1kB)");
        assert_eq!(parse(" STR3(1B/20MiB) ").to_string(), "STR3(1B/20MB)");
        assert_eq!(parse("RR(1B/1B)").to_string(), "RR1(1B/1B)");
    }

    #[test]
    fn pacing_suffix_round_trips_and_mixes_keep_it_per_class() {
        use crate::pacing::{PerSecond, ThinkTime};
        use std::time::Duration;
        let w = parse("RR256K(100B/800B)@30s");
        assert_eq!(
            w.classes[0].pacing,
            Some(Pacing::Think(ThinkTime::Constant(Duration::from_secs(30))))
        );
        assert_eq!(w.to_string(), "RR256K(100B/800B)@30s");
        let mix = parse("RR8K(100B/800B)@exp:30s + RR100(1kB/1kB)@50000/s+RR1(1B/1B)");
        assert_eq!(
            mix.classes[0].pacing,
            Some(Pacing::Think(ThinkTime::Exponential(Duration::from_secs(
                30
            ))))
        );
        assert_eq!(
            mix.classes[1].pacing,
            Some(Pacing::Rate(PerSecond::new(50_000.0).unwrap()))
        );
        assert_eq!(mix.classes[2].pacing, None);
        assert_eq!(
            mix.to_string(),
            "RR8K(100B/800B)@exp:30s+RR100(1kB/1kB)@50000/s+RR1(1B/1B)"
        );
        assert_eq!(
            parse("CRR2(1B/1B)@uniform:1s..3s").to_string(),
            "CRR2(1B/1B)@uniform:1s..3s"
        );
        // Stored records without the field read back; with it, it is text.
        let json = serde_json::to_value(mix.classes[0]).unwrap();
        assert_eq!(json["pacing"], "exp:30s");
        let back: ClassSpec = serde_json::from_value(json).unwrap();
        assert_eq!(back, mix.classes[0]);
        let plain = serde_json::to_value(parse("RR1(1B/1B)").classes[0]).unwrap();
        assert!(plain.get("pacing").is_none());
    }

    #[test]
    fn errors_name_the_bad_part() {
        let cases = [
            ("", "empty workload"),
            ("XX10(1B/1B)", "unknown workload kind in 'XX10(1B/1B)'"),
            ("rr10(1B/1B)", "unknown workload kind"),
            ("RR1x(1B/1B)", "bad client count '1x'"),
            ("RR0(1B/1B)", "bad client count '0'"),
            ("RR10(4kb/4kB)", "unknown size unit 'kb' in 'RR10(4kb/4kB)'"),
            ("RR10(4kB)", "malformed class 'RR10(4kB)'"),
            ("RR10(4kB/4kB", "malformed class"),
            ("RR10(0B/4kB)", "is zero"),
            (
                "RR1(1B/1B)+",
                "empty class after '+' in 'RR1(1B/1B)+': remove the '+' or add a class",
            ),
            ("+RR1(1B/1B)", "empty class before '+'"),
            ("RR1(1B/1B)++RR1(1B/1B)", "empty class after '+'"),
            ("RR10(x/1B)", "bad size 'x'"),
            ("RR10(1B/1B)@", "bad pacing '@'"),
            ("RR10(1B/1B)@-1s", "negative"),
            ("RR10(1B/1B)@0/s", "zero"),
            ("RR10(1B/1B)@fast", "bad pacing '@fast'"),
        ];
        for (input, want) in cases {
            let err = input.parse::<Workload>().unwrap_err().to_string();
            assert!(err.contains(want), "{input:?}: {err}");
            assert!(!err.contains('\n'), "one line: {err}");
        }
    }

    fn arb_pacing() -> impl Strategy<Value = Option<Pacing>> {
        use crate::pacing::{PerSecond, ThinkTime};
        use std::time::Duration;
        let ms = (0u64..3_600_000).prop_map(Duration::from_millis);
        prop_oneof![
            Just(None),
            ms.clone()
                .prop_map(|d| Some(Pacing::Think(ThinkTime::Constant(d)))),
            ms.clone()
                .prop_map(|d| Some(Pacing::Think(ThinkTime::Exponential(d)))),
            (ms.clone(), ms)
                .prop_map(|(a, b)| Some(Pacing::Think(ThinkTime::Uniform(a.min(b), a.max(b))))),
            (1u32..10_000_000)
                .prop_map(|n| Some(Pacing::Rate(PerSecond::new(f64::from(n)).unwrap()))),
            (1e-3f64..1e7).prop_map(|r| Some(Pacing::Rate(PerSecond::new(r).unwrap()))),
        ]
    }

    fn arb_class() -> impl Strategy<Value = ClassSpec> {
        let kind = prop_oneof![Just(Kind::Rr), Just(Kind::Crr), Just(Kind::Str)];
        let size = prop_oneof![
            1u64..100_000,
            (1u64..4096).prop_map(|k| k * 1024),
            (1u64..64).prop_map(|m| m << 20)
        ];
        (
            kind,
            1u32..=crate::MAX_CLIENTS,
            size.clone(),
            size,
            arb_pacing(),
        )
            .prop_map(|(kind, clients, req, resp, pacing)| ClassSpec {
                kind,
                clients,
                request_bytes: req,
                response_bytes: resp,
                pacing,
            })
    }

    proptest! {
        #[test]
        fn display_round_trips(classes in prop::collection::vec(arb_class(), 1..4)) {
            let w = Workload { classes };
            let back: Workload = w.to_string().parse().unwrap();
            prop_assert_eq!(back, w);
        }

        #[test]
        fn parser_never_panics(s in "\\PC{0,40}") {
            let _ = s.parse::<Workload>();
        }

        #[test]
        fn near_valid_strings_never_panic(s in "(RR|CRR|STR|X)[0-9K]{0,4}\\([0-9]{0,3}(B|kB|MB|kb)?/[0-9]{0,3}(B|kB|GB|x)?\\)?(@(exp:|uniform:)?[0-9]{0,3}(s|ms|/s|/min)?(\\.\\.[0-9]s)?)?\\+?") {
            if let Ok(w) = s.parse::<Workload>() {
                prop_assert_eq!(w.to_string().parse::<Workload>().unwrap(), w);
            }
        }
    }
}
