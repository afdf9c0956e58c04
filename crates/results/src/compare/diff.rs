//! What differs between the two sides of a comparison, and among one side's
//! own runs: every stored setting (transport, TLS, socket options, lab and
//! link, kernel spec, duration …), the responder, the kernel release the run
//! measured on, and the lab path it crossed. A verdict says that B differs
//! from A; this says how the runs themselves differed, so "transport: tcp |
//! tls" stands above "WORSE" instead of being left for the reader to guess.

use serde::Serialize;
use stackbench_model::settings;
use stackbench_record::RunRecord;

use crate::env::Environment;

/// One run given to [`compare_runs`](crate::compare::compare_runs).
#[derive(Debug, Clone, Copy)]
pub struct RunInput<'a> {
    /// How a reader finds the run: `run 7` (a stored id), `a.json #2`.
    pub name: &'a str,
    pub record: &'a RunRecord,
    /// The stored environment, when known (absent for plain record files).
    pub env: Option<&'a Environment>,
}

/// One key whose value is not the same on every compared run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Difference {
    /// A setting's name (`transport`, `nodelay`), or `responder`,
    /// `kernel_release`, `lab_path`.
    pub key: String,
    /// The distinct values among A's runs, in the order first seen.
    pub a: Vec<String>,
    /// The distinct values among B's runs.
    pub b: Vec<String>,
    /// True when A's values are not B's (false: the sides agree, but the runs
    /// inside a side differ among themselves).
    pub between_sides: bool,
}

impl Difference {
    /// The sides whose runs differ among themselves.
    pub fn mixed_sides<'a>(&self, a_name: &'a str, b_name: &'a str) -> Vec<&'a str> {
        [(a_name, &self.a), (b_name, &self.b)]
            .into_iter()
            .filter(|(_, v)| v.len() > 1)
            .map(|(n, _)| n)
            .collect()
    }
}

/// Settings whose value changes from run to run without being a choice: the
/// address a spawned responder happened to get, and the random seed drawn
/// when none was given. Listing them would bury the differences that are.
const INCIDENTAL: [&str; 2] = ["target", "seed"];

/// A run's compared keys and values, in a fixed order.
fn profile(run: &RunInput) -> Vec<(String, String)> {
    let s = &run.record.settings;
    let mut out: Vec<(String, String)> = settings::names()
        .into_iter()
        .filter(|name| !INCIDENTAL.contains(name))
        .filter_map(|name| Some((name.to_string(), s.text_of(name)?)))
        .collect();
    out.push(("responder".into(), run.record.responder.clone()));
    let unknown = || "unknown (not stored with the run)".to_string();
    let kernel = run.env.map_or_else(unknown, |e| {
        e.kernel_release.clone().unwrap_or_else(|| "unknown".into())
    });
    out.push(("kernel_release".into(), kernel));
    let path = run.env.map_or_else(unknown, |e| {
        e.lab.as_ref().map_or_else(
            || "none (this host)".to_string(),
            |lab| {
                let mut hosts = vec![lab.from.as_str()];
                hosts.extend(lab.hops.iter().map(String::as_str));
                hosts.push(lab.to.as_str());
                format!("{}: {}", lab.name, hosts.join(" → "))
            },
        )
    });
    out.push(("lab_path".into(), path));
    out
}

/// The distinct values of `key` among `profiles`, in the order first seen.
fn values_of(profiles: &[Vec<(String, String)>], i: usize) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for p in profiles {
        if let Some((_, v)) = p.get(i) {
            if !out.contains(v) {
                out.push(v.clone());
            }
        }
    }
    out
}

/// Every key whose value differs between A's and B's runs or among one
/// side's runs.
pub fn differences(a: &[RunInput], b: &[RunInput]) -> Vec<Difference> {
    let (pa, pb): (Vec<_>, Vec<_>) = (
        a.iter().map(profile).collect(),
        b.iter().map(profile).collect(),
    );
    let Some(keys) = pa.first().or(pb.first()) else {
        return Vec::new();
    };
    keys.iter()
        .enumerate()
        .filter_map(|(i, (key, _))| {
            let (va, vb) = (values_of(&pa, i), values_of(&pb, i));
            let mut sa = va.clone();
            let mut sb = vb.clone();
            sa.sort();
            sb.sort();
            let between_sides = !va.is_empty() && !vb.is_empty() && sa != sb;
            (between_sides || va.len() > 1 || vb.len() > 1).then(|| Difference {
                key: key.clone(),
                a: va,
                b: vb,
                between_sides,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures;

    /// Two runs of one configuration differ in the responder address they
    /// happened to get and in the drawn seed: neither is a difference
    /// (bench/ab.sh listed forty of each above its verdicts). A setting that
    /// was chosen is.
    #[test]
    fn incidental_settings_are_not_differences() {
        let mut a = fixtures::record("RR1(1B/1B)", 10.0, 1.0, 2.0, 0.0);
        let mut b = a.clone();
        a.settings.set("seed", "1").unwrap();
        b.settings.set("seed", "2").unwrap();
        b.settings.set("target", "127.0.0.1:7001").unwrap();
        let input = |r| RunInput {
            name: "run",
            record: r,
            env: None,
        };
        assert!(differences(&[input(&a)], &[input(&b)]).is_empty());
        let mut c = b.clone();
        c.settings.set("nodelay", "true").unwrap();
        let d = differences(&[input(&a)], &[input(&c)]);
        assert_eq!(d.len(), 1, "{d:?}");
        assert_eq!(d[0].key, "nodelay");
    }
}
