//! CPU requirement (the formula of the appendix to IBM's TN3270 capacity
//! planning): transactions per second times CPU
//! seconds per transaction gives CPU seconds per elapsed second; divided by the
//! processors it is the utilisation; times the rating of the whole machine it is
//! the rating ("MIPS") required. This is the utilisation law U = X·D / m.

use serde::Serialize;

use crate::error::PlanError;
use crate::exact::Ratio;
use crate::report::{num, pct, sig, Report, Table};
use crate::units::Rate;

/// Where the transaction rate comes from.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "mode", rename_all = "snake_case")]
pub enum Load {
    /// A population: `users` each doing `per_user.count` transactions every
    /// `per_user.interval_s` seconds (e.g. TN3270's "2 tr/min/user").
    Users {
        users: f64,
        trans_per_user: f64,
        interval_s: f64,
    },
    /// A total rate (`--rate 8275/s`).
    Rate { rate_tps: f64 },
}

impl Load {
    /// A population from a per-user rate.
    pub fn users(users: f64, per_user: Rate) -> Self {
        Load::Users {
            users,
            trans_per_user: per_user.count,
            interval_s: per_user.interval_s,
        }
    }

    /// Transactions per second.
    pub fn rate_tps(&self) -> f64 {
        match *self {
            Load::Users {
                users,
                trans_per_user,
                interval_s,
            } => trans_per_user * users / interval_s,
            Load::Rate { rate_tps } => rate_tps,
        }
    }

    /// [`Load::rate_tps`] as an exact rational of the typed inputs.
    fn rate_exact(&self) -> Option<Ratio> {
        match *self {
            Load::Users {
                users,
                trans_per_user,
                interval_s,
            } => Ratio::from_f64(trans_per_user)?
                .checked_mul(Ratio::from_f64(users)?)?
                .checked_div(Ratio::from_f64(interval_s)?),
            Load::Rate { rate_tps } => Ratio::from_f64(rate_tps),
        }
    }
}

/// The capacity rating of the whole machine or LPAR, in any unit (MIPS, ITR).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Rating {
    pub value: f64,
    pub unit: String,
}

/// Inputs of `plan cpu`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CpuInput {
    pub load: Load,
    /// CPU seconds per transaction (all address spaces / processes counted).
    pub cpu_s_per_tran: f64,
    /// Processors of the machine or LPAR.
    pub processors: f64,
    /// Utilisation the processors may run at when sizing, in percent.
    pub target_util_pct: f64,
    pub rating: Option<Rating>,
}

/// Result of `plan cpu`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CpuPlan {
    pub inputs: CpuInput,
    pub rate_tps: f64,
    /// CPU seconds consumed per elapsed second (= processors' worth of CPU).
    pub cpu_s_per_elapsed_s: f64,
    /// `cpu_s_per_elapsed_s / processors × 100`.
    pub util_pct: f64,
    /// Smallest whole number of processors that keeps utilisation at or below
    /// the target.
    pub processors_needed: u64,
    /// True when CPU-s per elapsed-s exceeds 1: one processor is not enough.
    pub more_than_one_processor_required: bool,
    /// `util_pct / 100 × rating`, in the rating's unit.
    pub rating_required: Option<f64>,
}

/// Applies the utilisation law U = X·D / m.
pub fn plan(input: &CpuInput) -> Result<CpuPlan, PlanError> {
    if input.processors.is_nan() || input.processors <= 0.0 {
        return Err(PlanError::bad(
            "processors",
            &num(input.processors),
            "must be greater than 0",
            "give the processors of the machine or LPAR, e.g. 4",
        ));
    }
    let rate_tps = input.load.rate_tps();
    let cpu_s_per_elapsed_s = rate_tps * input.cpu_s_per_tran;
    let util_pct = cpu_s_per_elapsed_s / input.processors * 100.0;
    let processors_needed = match exact_processors(input) {
        Some(n) => u64::try_from(n.max(1)).unwrap_or(u64::MAX),
        None => {
            // Inputs too fine for u128 rationals: the small tolerance keeps
            // 2.0000000000000004 processors at 2.
            let per_processor = input.target_util_pct / 100.0;
            ((cpu_s_per_elapsed_s / per_processor) * (1.0 - 1e-12))
                .ceil()
                .max(1.0) as u64
        }
    };
    Ok(CpuPlan {
        inputs: input.clone(),
        rate_tps,
        cpu_s_per_elapsed_s,
        util_pct,
        processors_needed,
        more_than_one_processor_required: cpu_s_per_elapsed_s > 1.0,
        rating_required: input.rating.as_ref().map(|r| util_pct / 100.0 * r.value),
    })
}

/// CPU-s per elapsed s (X × D) as an exact rational of the typed inputs.
fn demand_exact(input: &CpuInput) -> Option<Ratio> {
    input
        .load
        .rate_exact()?
        .checked_mul(Ratio::from_f64(input.cpu_s_per_tran)?)
}

/// ⌈X × D ÷ target⌉ computed exactly (see [`crate::exact`]); `None` when the
/// inputs overflow the rationals.
fn exact_processors(input: &CpuInput) -> Option<u128> {
    let per_processor = Ratio::from_f64(input.target_util_pct)?.checked_div(Ratio::new(100, 1)?)?;
    Some(demand_exact(input)?.checked_div(per_processor)?.ceil())
}

impl CpuPlan {
    /// CPU-s per elapsed s for the report: every digit when it is a whole
    /// number (an `f64` above 2⁵³ would print digits that are not there),
    /// else `digits` significant digits.
    fn demand_text(&self, digits: usize) -> String {
        match demand_exact(&self.inputs).and_then(Ratio::whole) {
            Some(n) => n.to_string(),
            None => sig(self.cpu_s_per_elapsed_s, digits),
        }
    }

    /// The human table: each step with its numbers substituted.
    pub fn report(&self, digits: usize) -> Report {
        let i = &self.inputs;
        let ratio = self.demand_text(digits);
        let mut notes = Vec::new();
        if self.more_than_one_processor_required {
            notes.push(format!(
                "CPU-s per elapsed s is {ratio}, greater than 1: more than one processor is required"
            ));
        }
        if self.util_pct > i.target_util_pct {
            notes.push(format!(
                "utilisation {} exceeds the target {}: {} processors are needed",
                pct(self.util_pct, digits),
                pct(i.target_util_pct, 6),
                self.processors_needed
            ));
        }
        Report {
            title: "CPU requirement (TN3270 capacity method): U = X × D ÷ m".into(),
            tables: vec![self.steps_table(digits)],
            notes,
            warnings: Vec::new(),
        }
    }

    /// The demand formula as TN3270 capacity planning writes it.
    fn demand_formula(&self) -> String {
        let d = num(self.inputs.cpu_s_per_tran);
        match self.inputs.load {
            Load::Users {
                users,
                trans_per_user,
                interval_s,
            } => format!(
                "{} tr/user × {} users × {d} CPU-s/tr ÷ {} elapsed s",
                num(trans_per_user),
                num(users),
                num(interval_s)
            ),
            Load::Rate { rate_tps } => format!("{} tr/s × {d} CPU-s/tr", num(rate_tps)),
        }
    }

    fn steps_table(&self, digits: usize) -> Table {
        let i = &self.inputs;
        let ratio = self.demand_text(digits);
        let mut t = Table::steps();
        if let Load::Users { .. } = i.load {
            t.row([
                "transaction rate".to_string(),
                "tr/user × users ÷ interval".to_string(),
                format!("{} tr/s", sig(self.rate_tps, digits)),
            ]);
        }
        t.row([
            "CPU-s per elapsed s".to_string(),
            self.demand_formula(),
            ratio.clone(),
        ]);
        t.row([
            "CPU utilisation".to_string(),
            format!("{ratio} ÷ {} processors × 100%", num(i.processors)),
            pct(self.util_pct, digits),
        ]);
        t.row([
            "processors needed".to_string(),
            format!(
                "⌈{ratio} ÷ {}⌉ (target utilisation)",
                pct(i.target_util_pct, 6)
            ),
            self.processors_needed.to_string(),
        ]);
        if let (Some(r), Some(req)) = (&i.rating, self.rating_required) {
            t.row([
                format!("{} required", r.unit),
                format!(
                    "{} × {} {}",
                    pct(self.util_pct, digits),
                    num(r.value),
                    r.unit
                ),
                format!("{} {}", sig(req, digits), r.unit),
            ]);
        }
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round(x: f64, decimals: i32) -> f64 {
        let f = 10f64.powi(decimals);
        (x * f).round() / f
    }

    fn tn3270_appendix() -> CpuInput {
        CpuInput {
            load: Load::users(
                8000.0,
                Rate {
                    count: 2.0,
                    interval_s: 60.0,
                },
            ),
            cpu_s_per_tran: 0.000199666,
            processors: 4.0,
            target_util_pct: 100.0,
            rating: None,
        }
    }

    /// The TN3270 capacity-planning appendix's example: 2 × 8000 × 0.000199666
    /// ÷ 60 = 0.0532 CPU-s per elapsed s; ÷ 4 processors = 1.3%.
    #[test]
    fn tn3270_appendix_example() {
        let p = plan(&tn3270_appendix()).unwrap();
        assert_eq!(round(p.cpu_s_per_elapsed_s, 4), 0.0532);
        assert_eq!(round(p.util_pct, 1), 1.3);
        assert!((p.cpu_s_per_elapsed_s - 0.053244266667).abs() < 1e-12);
        assert_eq!(p.processors_needed, 1);
        assert!(!p.more_than_one_processor_required);
        let text = format!("{:?}", p.report(3).tables[0].rows);
        assert!(text.contains("2 tr/user × 8000 users × 0.000199666 CPU-s/tr ÷ 60 elapsed s"));
        assert!(text.contains("0.0532"), "{text}");
        assert!(text.contains("1.33%"), "{text}");
    }

    /// IBM's TN3270 performance table, one server with one port, 256K users:
    /// 8275 tr/s × .176 ms/tr on 4 CPs; the table prints 36.3% and 578 MIPS
    /// from unrounded CPU/tr, which .176 ms reproduces to within 0.2 points.
    #[test]
    fn tn3270_table_rate_and_rating() {
        let mut input = tn3270_appendix();
        input.load = Load::Rate { rate_tps: 8275.0 };
        input.cpu_s_per_tran = 0.000176;
        input.rating = Some(Rating {
            value: 1592.0,
            unit: "MIPS".into(),
        });
        let p = plan(&input).unwrap();
        assert!((p.cpu_s_per_elapsed_s - 1.4564).abs() < 1e-12);
        assert!((p.util_pct - 36.3).abs() < 0.2);
        assert!((p.rating_required.unwrap() - 578.0).abs() < 3.0);
        assert!(p.more_than_one_processor_required);
        assert_eq!(p.processors_needed, 2);
        let notes = p.report(3).notes.join("\n");
        assert!(
            notes.contains("more than one processor is required"),
            "{notes}"
        );
    }

    #[test]
    fn target_utilisation_sizes_processors() {
        let mut input = tn3270_appendix();
        input.load = Load::Rate { rate_tps: 10_000.0 };
        input.cpu_s_per_tran = 0.0002; // 2 CPU-s per s
        input.target_util_pct = 80.0;
        assert_eq!(plan(&input).unwrap().processors_needed, 3);
        input.target_util_pct = 100.0;
        assert_eq!(plan(&input).unwrap().processors_needed, 2);
    }

    /// 1M users × 10⁶ tr/s × 1 h of CPU each: 3,774,873,600,000,000 CPU-s
    /// per s, and as many processors, not the 3774873599996225 that an
    /// `f64` ceiling with a tolerance gave.
    #[test]
    fn huge_whole_requirements_are_exact() {
        let mut input = tn3270_appendix();
        input.load = Load::users(
            1_048_576.0,
            Rate {
                count: 1_000_000.0,
                interval_s: 1.0,
            },
        );
        input.cpu_s_per_tran = 3600.0;
        let p = plan(&input).unwrap();
        assert_eq!(p.processors_needed, 3_774_873_600_000_000);
        let text = format!("{:?}", p.report(3).tables[0].rows);
        assert!(text.contains("⌈3774873600000000 ÷ 100%⌉"), "{text}");
        // Ceilings of decimals that f64 cannot hold: 3 × 0.1 s ÷ 30% = 1.
        input.load = Load::Rate { rate_tps: 3.0 };
        input.cpu_s_per_tran = 0.1;
        input.target_util_pct = 30.0;
        assert_eq!(plan(&input).unwrap().processors_needed, 1);
    }

    #[test]
    fn zero_processors_is_an_input_error() {
        let mut input = tn3270_appendix();
        input.processors = 0.0;
        let e = plan(&input).unwrap_err().to_string();
        assert!(e.starts_with("--processors"), "{e}");
    }
}
