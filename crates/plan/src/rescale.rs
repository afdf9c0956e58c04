//! Moving a CPU cost measured on one machine to another (LSPR-style
//! adjustment): D_target = D_source × (rating_source ÷ engines_source) ÷
//! (rating_target ÷ engines_target), i.e. by per-engine capacity ratings; and the
//! internal throughput rate ITR = rate ÷ CPU utilisation × 100% of a measured run.
//!
//! Ratings are user-supplied (a TOML table, see `examples/ratings.toml`): they
//! are whole-machine ratings (they include the n-way effect), divided by the
//! engines to get a per-engine figure.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::error::PlanError;
use crate::report::{duration, num, pct, sig, Report, Table};

/// One machine (or LPAR) in a ratings table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Machine {
    /// Capacity rating of the whole machine/LPAR (MIPS, PCI, a measured ITR…).
    pub rating: f64,
    /// Engines (processors) the rating is for.
    pub engines: f64,
    /// Free text: where the number comes from.
    #[serde(default)]
    pub description: Option<String>,
    /// Earlier names of this machine, which `--source` and `--target` (and a
    /// plan file's `source`, `target`) still accept, so that scripts and plan
    /// files written before a rename keep running.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub aliases: Vec<String>,
}

impl Machine {
    /// Rating of one engine.
    pub fn per_engine(&self) -> f64 {
        self.rating / self.engines
    }
}

/// A ratings file: a unit and named machines.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RatingsTable {
    /// Unit of every `rating` in the file, e.g. `"MIPS"`.
    #[serde(default = "default_unit")]
    pub unit: String,
    #[serde(default)]
    pub machines: BTreeMap<String, Machine>,
}

fn default_unit() -> String {
    "MIPS".into()
}

impl RatingsTable {
    /// Parses a ratings file; `path` names it in errors.
    pub fn parse(path: &str, text: &str) -> Result<Self, PlanError> {
        let table: RatingsTable = toml::from_str(text).map_err(|e| {
            PlanError::file(
                path,
                format!(
                    "not a ratings table ({}); see examples/ratings.toml",
                    one_line(&e.to_string())
                ),
            )
        })?;
        for (name, m) in &table.machines {
            if !(m.rating > 0.0 && m.engines > 0.0) {
                return Err(PlanError::file(
                    path,
                    format!("machine '{name}' needs rating > 0 and engines > 0"),
                ));
            }
        }
        Ok(table)
    }

    /// Looks a machine up by name or by one of its earlier names
    /// (`aliases`); `flag` names the input in the error.
    pub fn machine(&self, flag: &str, name: &str) -> Result<&Machine, PlanError> {
        let by_alias = || {
            self.machines
                .values()
                .find(|m| m.aliases.iter().any(|a| a == name))
        };
        self.machines.get(name).or_else(by_alias).ok_or_else(|| {
            let known: Vec<&str> = self.machines.keys().map(String::as_str).collect();
            PlanError::bad(
                flag,
                name,
                "no such machine in the ratings table",
                format!("use one of: {}", known.join(", ")),
            )
        })
    }
}

/// Collapses a multi-line parser message into one line.
pub(crate) fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A measured run for the ITR: its rate and CPU utilisation of the machine.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Measured {
    pub rate_tps: f64,
    pub util_pct: f64,
}

/// Inputs of `plan rescale`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RescaleInput {
    /// CPU seconds per transaction measured on the source machine.
    pub cpu_s_per_tran: Option<f64>,
    pub source_name: String,
    pub source: Machine,
    pub target_name: String,
    pub target: Machine,
    pub unit: String,
    /// A measured run on the source machine, for its ITR.
    pub measured: Option<Measured>,
    /// A planned rate on the target, for its utilisation.
    pub planned_rate_tps: Option<f64>,
}

/// Result of `plan rescale`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RescalePlan {
    pub inputs: RescaleInput,
    pub source_per_engine_rating: f64,
    pub target_per_engine_rating: f64,
    /// `source_per_engine / target_per_engine`: multiply CPU/tran by this.
    pub cpu_factor: f64,
    pub target_cpu_s_per_tran: Option<f64>,
    /// Internal throughput rate of the source run: rate ÷ util × 100%.
    pub source_itr_tps: Option<f64>,
    /// The source ITR scaled by the whole-machine ratings.
    pub target_itr_tps: Option<f64>,
    /// Utilisation of the target at the planned rate.
    pub target_util_pct: Option<f64>,
}

/// Applies the ratings.
pub fn plan(input: &RescaleInput) -> Result<RescalePlan, PlanError> {
    if input.cpu_s_per_tran.is_none() && input.measured.is_none() {
        return Err(PlanError::missing(
            "cpu-per-tran",
            "give the CPU per transaction measured on the source (e.g. --cpu-per-tran 0.176ms), or --measured-rate with --measured-util for the ITR",
        ));
    }
    let src = input.source.per_engine();
    let tgt = input.target.per_engine();
    let cpu_factor = src / tgt;
    let target_cpu_s_per_tran = input.cpu_s_per_tran.map(|d| d * cpu_factor);
    let source_itr_tps = input.measured.map(|m| m.rate_tps / m.util_pct * 100.0);
    let whole = input.target.rating / input.source.rating;
    let target_util_pct = match (input.planned_rate_tps, target_cpu_s_per_tran) {
        (Some(rate), Some(d)) => Some(rate * d / input.target.engines * 100.0),
        _ => None,
    };
    Ok(RescalePlan {
        inputs: input.clone(),
        source_per_engine_rating: src,
        target_per_engine_rating: tgt,
        cpu_factor,
        target_cpu_s_per_tran,
        source_itr_tps,
        target_itr_tps: source_itr_tps.map(|itr| itr * whole),
        target_util_pct,
    })
}

impl RescalePlan {
    /// The human table.
    pub fn report(&self, digits: usize) -> Report {
        let u = &self.inputs.unit;
        let mut t = Table::steps();
        self.rating_rows(&mut t, digits);
        self.itr_rows(&mut t, digits);
        Report {
            title: "Rescale CPU per transaction by capacity ratings: D_target = D_source × (R_src/n_src) ÷ (R_tgt/n_tgt)".into(),
            tables: vec![t],
            notes: vec![format!(
                "ratings are user-supplied whole-machine figures in {u}; a rating ratio is only as good as its match to this workload (prefer ITRs you measured on both machines)"
            )],
            warnings: Vec::new(),
        }
    }

    /// Per-engine ratings, the CPU factor and the rescaled CPU per transaction.
    fn rating_rows(&self, t: &mut Table, digits: usize) {
        let i = &self.inputs;
        let u = &i.unit;
        let (src, tgt) = (
            sig(self.source_per_engine_rating, digits),
            sig(self.target_per_engine_rating, digits),
        );
        for (label, name, m, per) in [
            ("source", &i.source_name, &i.source, &src),
            ("target", &i.target_name, &i.target, &tgt),
        ] {
            let named = if name.as_str() == label {
                String::new()
            } else {
                format!(" ({name})")
            };
            t.row([
                format!("{label} rating per engine{named}"),
                format!("{} {u} ÷ {} engines", num(m.rating), num(m.engines)),
                format!("{per} {u}"),
            ]);
        }
        t.row([
            "CPU factor".to_string(),
            format!("{src} ÷ {tgt}"),
            sig(self.cpu_factor, digits),
        ]);
        if let (Some(d), Some(dt)) = (i.cpu_s_per_tran, self.target_cpu_s_per_tran) {
            t.row([
                "CPU per transaction on target".to_string(),
                format!("{} × {}", duration(d, 9), sig(self.cpu_factor, digits)),
                duration(dt, digits),
            ]);
        }
    }

    /// The ITR of the measured run, its projection, and the target's utilisation.
    fn itr_rows(&self, t: &mut Table, digits: usize) {
        let i = &self.inputs;
        if let (Some(m), Some(itr)) = (i.measured, self.source_itr_tps) {
            t.row([
                "ITR of the measured run".to_string(),
                format!("{} tr/s ÷ {} × 100%", num(m.rate_tps), pct(m.util_pct, 9)),
                format!("{} tr/s", sig(itr, digits)),
            ]);
        }
        if let (Some(itr), Some(titr)) = (self.source_itr_tps, self.target_itr_tps) {
            t.row([
                "ITR projected on target".to_string(),
                format!(
                    "{} tr/s × {} ÷ {} {}",
                    sig(itr, digits),
                    num(i.target.rating),
                    num(i.source.rating),
                    i.unit
                ),
                format!("{} tr/s", sig(titr, digits)),
            ]);
        }
        if let (Some(rate), Some(dt), Some(util)) = (
            i.planned_rate_tps,
            self.target_cpu_s_per_tran,
            self.target_util_pct,
        ) {
            t.row([
                "target utilisation at the planned rate".to_string(),
                format!(
                    "{} tr/s × {} ÷ {} engines × 100%",
                    num(rate),
                    duration(dt, digits),
                    num(i.target.engines)
                ),
                pct(util, digits),
            ]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RATINGS: &str = r#"
unit = "MIPS"
[machines.small-4way]
rating = 1592
engines = 4
aliases = ["old-4way"]
[machines.big-8way]
rating = 3600
engines = 8
description = "made up"
"#;

    fn input() -> RescaleInput {
        let table = RatingsTable::parse("r.toml", RATINGS).unwrap();
        RescaleInput {
            cpu_s_per_tran: Some(0.000176),
            source_name: "small-4way".into(),
            source: table.machine("source", "small-4way").unwrap().clone(),
            target_name: "big-8way".into(),
            target: table.machine("target", "big-8way").unwrap().clone(),
            unit: table.unit.clone(),
            measured: Some(Measured {
                rate_tps: 8275.0,
                util_pct: 36.3,
            }),
            planned_rate_tps: Some(8275.0),
        }
    }

    #[test]
    fn per_engine_ratings_scale_cpu() {
        let p = plan(&input()).unwrap();
        assert_eq!(p.source_per_engine_rating, 398.0);
        assert_eq!(p.target_per_engine_rating, 450.0);
        let d = p.target_cpu_s_per_tran.unwrap();
        assert!((d - 0.000176 * 398.0 / 450.0).abs() < 1e-15);
        // ITR = 8275 / 36.3% = 22796 tr/s; the target has 3600/1592 of it.
        let itr = p.source_itr_tps.unwrap();
        assert!((itr - 22796.143).abs() < 0.01, "{itr}");
        assert!((p.target_itr_tps.unwrap() - itr * 3600.0 / 1592.0).abs() < 1e-6);
        assert!((p.target_util_pct.unwrap() - 8275.0 * d / 8.0 * 100.0).abs() < 1e-9);
        assert!(p.report(3).tables[0].rows.len() >= 6);
    }

    #[test]
    fn same_machine_is_identity() {
        let mut i = input();
        i.target = i.source.clone();
        let p = plan(&i).unwrap();
        assert_eq!(p.cpu_factor, 1.0);
        assert_eq!(p.target_cpu_s_per_tran, Some(0.000176));
    }

    #[test]
    fn ratings_errors_name_the_file_and_machine() {
        let e = RatingsTable::parse("r.toml", "unit = 3")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("r.toml: not a ratings table"), "{e}");
        assert!(!e.contains('\n'));
        let bad = "[machines.x]\nrating = 0\nengines = 4\n";
        assert!(RatingsTable::parse("r.toml", bad).is_err());
        let table = RatingsTable::parse("r.toml", RATINGS).unwrap();
        let e = table.machine("source", "nope").unwrap_err().to_string();
        assert!(e.contains("big-8way, small-4way"), "{e}");
    }

    /// A machine renamed in a ratings file still answers to its old name.
    #[test]
    fn a_machine_is_found_by_an_earlier_name() {
        let table = RatingsTable::parse("r.toml", RATINGS).unwrap();
        let old = table.machine("source", "old-4way").unwrap();
        assert_eq!(old, table.machine("source", "small-4way").unwrap());
        assert!(table.machine("source", "big").is_err());
    }

    #[test]
    fn needs_a_cost_or_a_run() {
        let mut i = input();
        i.cpu_s_per_tran = None;
        i.measured = None;
        assert!(plan(&i)
            .unwrap_err()
            .to_string()
            .starts_with("--cpu-per-tran is required"));
    }
}
