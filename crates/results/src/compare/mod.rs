//! Comparing two sets of runs: per workload and metric, the ratio B/A with its
//! 90% confidence interval from Welch's t on log values, and an equivalence
//! verdict against a margin:
//!
//! 1. y = ln(value); d = ȳ_B − ȳ_A; SE = √(s_A²/n_A + s_B²/n_B);
//! 2. Welch's ν = SE⁴ / [(s_A²/n_A)²/(n_A−1) + (s_B²/n_B)²/(n_B−1)];
//! 3. ratio = e^d, CI = [e^(d − t₀.₉₅,ν·SE), e^(d + t₀.₉₅,ν·SE)];
//! 4. EQUIVALENT if the CI lies within [1−δ, 1+δ]; BETTER or WORSE if it lies
//!    wholly beyond one end (the metric's direction decides which);
//!    INCONCLUSIVE otherwise. A 90% CI inside the margin is the two one-sided
//!    tests (TOST) at α = 0.05. TOO_COARSE instead of EQUIVALENT when the
//!    interval has no width: every run of each side gave the same value,
//!    which says the measure is quantised (e.g. exactly 10 transfers in every
//!    window), not that it is known to within the margin. (A zero-width
//!    interval wholly beyond the margin still gives BETTER or WORSE: the
//!    sides differ by more than the margin in every run.)
//!
//! What is compared: only complete runs (an interrupted run is listed as left
//! out, never counted); per class, except CPU per transaction of a mix whose
//! classes shared worker threads, which is compared for the mix as a whole;
//! and, above the verdicts, every setting, kernel and lab path that differs
//! between the sides or among one side's runs ([`crate::compare::diff`]).
//!
//! Log values make the interval a ratio (scale-free) and Welch's form tolerates
//! unequal variances; it works from n = 2 per side, though the interval is then
//! wide, which is why rows with fewer than 5 runs per side carry a note.

pub mod diff;
pub mod output;
pub mod select;

use serde::Serialize;
use stackbench_model::settings::GuestAccel;
use stackbench_record::{RunRecord, EMULATED_NOTE};
use statrs::distribution::{ContinuousCDF, StudentsT};

use crate::env::Environment;
use crate::metric::{class_key, MarginKind, Metric, Samples, MIX_METRICS};
pub use diff::RunInput;
use diff::{differences, Difference};

/// Runs per side below which a row carries a note.
pub const RECOMMENDED_RUNS: usize = 5;

/// Equivalence margins, in percent.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Margins {
    pub rate_pct: f64,
    pub latency_pct: f64,
    pub cpu_pct: f64,
}

impl Margins {
    /// The margins `--margin` (rate and CPU) and `--latency-margin` give;
    /// each must be a percentage strictly between 0 and 100.
    pub fn from_flags(margin_pct: f64, latency_margin_pct: f64) -> Result<Margins, String> {
        for (flag, v) in [
            ("--margin", margin_pct),
            ("--latency-margin", latency_margin_pct),
        ] {
            if !(v > 0.0 && v < 100.0) {
                return Err(format!(
                    "{flag} {v}: give a percentage above 0 and below 100, e.g. 2.5"
                ));
            }
        }
        Ok(Margins {
            rate_pct: margin_pct,
            latency_pct: latency_margin_pct,
            cpu_pct: margin_pct,
        })
    }
}

impl Default for Margins {
    /// ±2.5% for rate and CPU (netperf's default width), ±5% for latency.
    fn default() -> Margins {
        Margins {
            rate_pct: 2.5,
            latency_pct: 5.0,
            cpu_pct: 2.5,
        }
    }
}

impl Margins {
    pub fn for_metric(&self, m: Metric) -> f64 {
        match m.margin_kind() {
            MarginKind::Rate => self.rate_pct,
            MarginKind::Latency => self.latency_pct,
            MarginKind::Cpu => self.cpu_pct,
        }
    }
}

/// The outcome for one metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Verdict {
    Equivalent,
    Better,
    Worse,
    Inconclusive,
    /// No verdict: a side was measured in a TCG-emulated guest, whose
    /// timings are functional only (the figures are still shown).
    Emulated,
    /// No verdict: the interval has no width because every run of each side
    /// gave the same value — the measure is quantised, too coarse to judge.
    TooCoarse,
}

impl Verdict {
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Equivalent => "EQUIVALENT",
            Verdict::Better => "BETTER",
            Verdict::Worse => "WORSE",
            Verdict::Inconclusive => "INCONCLUSIVE",
            Verdict::Emulated => "emulated",
            Verdict::TooCoarse => "TOO COARSE",
        }
    }
}

/// The ratio B/A of geometric means and its confidence interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Estimate {
    pub ratio: f64,
    pub ci_low: f64,
    pub ci_high: f64,
    /// Welch's degrees of freedom (infinite when both sides have no spread).
    pub df: f64,
}

/// Welch's t on log values at two-sided `confidence` (0.90 for the verdict).
/// `None` when a side has fewer than 2 values or a value is not positive.
pub fn welch_log_ratio(a: &[f64], b: &[f64], confidence: f64) -> Option<Estimate> {
    if a.len() < 2 || b.len() < 2 || a.iter().chain(b).any(|v| !v.is_finite() || *v <= 0.0) {
        return None;
    }
    let stats = |xs: &[f64]| {
        let n = xs.len() as f64;
        let logs: Vec<f64> = xs.iter().map(|v| v.ln()).collect();
        let mean = logs.iter().sum::<f64>() / n;
        let var = logs.iter().map(|y| (y - mean).powi(2)).sum::<f64>() / (n - 1.0);
        (mean, var / n, n)
    };
    let (mean_a, va, na) = stats(a);
    let (mean_b, vb, nb) = stats(b);
    let d = mean_b - mean_a;
    let se = (va + vb).sqrt();
    if se == 0.0 {
        let r = d.exp();
        return Some(Estimate {
            ratio: r,
            ci_low: r,
            ci_high: r,
            df: f64::INFINITY,
        });
    }
    let df = se.powi(4) / (va.powi(2) / (na - 1.0) + vb.powi(2) / (nb - 1.0));
    let t = StudentsT::new(0.0, 1.0, df)
        .expect("df is positive and finite here")
        .inverse_cdf(1.0 - (1.0 - confidence) / 2.0);
    Some(Estimate {
        ratio: d.exp(),
        ci_low: (d - t * se).exp(),
        ci_high: (d + t * se).exp(),
        df,
    })
}

/// True when an estimate's interval has no width (to rounding): both sides'
/// values were each all the same, so there is no spread to judge by.
pub fn zero_width(est: &Estimate) -> bool {
    est.ci_high - est.ci_low <= 1e-12 * est.ratio.abs()
}

/// The verdict of an estimate against a ±`margin_pct` margin.
pub fn verdict(est: &Estimate, margin_pct: f64, higher_is_better: bool) -> Verdict {
    let (lo, hi) = (1.0 - margin_pct / 100.0, 1.0 + margin_pct / 100.0);
    if zero_width(est) && est.ratio >= lo && est.ratio <= hi {
        return Verdict::TooCoarse;
    }
    let (lo, hi) = (1.0 - margin_pct / 100.0, 1.0 + margin_pct / 100.0);
    let (up, down) = if higher_is_better {
        (Verdict::Better, Verdict::Worse)
    } else {
        (Verdict::Worse, Verdict::Better)
    };
    if est.ci_low >= lo && est.ci_high <= hi {
        Verdict::Equivalent
    } else if est.ci_low > hi {
        up
    } else if est.ci_high < lo {
        down
    } else {
        Verdict::Inconclusive
    }
}

/// One workload × metric line of a comparison.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    pub workload: String,
    pub metric: Metric,
    pub n_a: usize,
    pub n_b: usize,
    /// Geometric means of each side (arithmetic would overweight outliers).
    pub mean_a: Option<f64>,
    pub mean_b: Option<f64>,
    /// (B/A − 1) × 100, with its 90% CI; `None` when it cannot be estimated.
    pub change_pct: Option<f64>,
    pub ci_low_pct: Option<f64>,
    pub ci_high_pct: Option<f64>,
    pub margin_pct: f64,
    pub verdict: Verdict,
    pub note: Option<String>,
    /// True for a mix's figure as a whole (`workload` is then the mix's
    /// notation): its CPU over every class's transactions.
    pub whole_mix: bool,
    /// Some compared run behind this row carries a warning that concerns it
    /// (see [`Comparison::warned`]): the verdict rests on figures their own
    /// run called untrustworthy.
    pub warned: bool,
}

impl Row {
    /// Whether the row carries a verdict: an estimate (at least 2 runs a
    /// side, positive values) not too coarse to judge. Only such rows enter
    /// averages. (Emulated rows stay in them: every row of such a comparison
    /// is emulated, and its note says the figures are functional only.)
    pub fn has_verdict(&self) -> bool {
        self.change_pct.is_some() && self.verdict != Verdict::TooCoarse
    }
}

/// Geometric-mean changes across workloads (the "on average" line of z/OS
/// performance summaries), over the workloads whose row has a verdict
/// ([`Row::has_verdict`]): a workload a side measured once (the table's
/// "-") would move the average by a figure the comparison cannot judge.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    /// Workloads whose throughput is in the average.
    pub workloads: usize,
    /// Workloads left out of the throughput average (no verdict), in table
    /// order.
    pub left_out: Vec<String>,
    /// Workloads in each CPU average.
    pub cpu_client_workloads: usize,
    pub cpu_server_workloads: usize,
    pub throughput_change_pct: Option<f64>,
    pub cpu_client_change_pct: Option<f64>,
    pub cpu_server_change_pct: Option<f64>,
    /// Mixes left out of both CPU averages because their make-up changed
    /// between the sides ([`MakeUp`]): no CPU per transaction of theirs is
    /// compared, and the headline says so instead of averaging one.
    pub cpu_left_out: Vec<MakeUp>,
}

/// A mix whose classes shared their CPU and whose make-up — each class's
/// share of the mix's transactions — differs between A and B by more than
/// the CPU margin. Its CPU per transaction is then the mix's CPU over a
/// different set of transactions on each side: `RR1+STR10` whose RR class
/// ran 130 times as many transactions in B divides B's CPU by a count the
/// cheap class inflated, and "reduces CPU per transaction by 96%" would be
/// said of a mix whose CPU-seconds rose 172%. Only the CPU-seconds are
/// compared for it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MakeUp {
    /// The mix's notation.
    pub mix: String,
    /// Each class with its transactions per run on A and on B.
    pub classes: Vec<ClassCount>,
    /// Change of the mix's CPU-seconds in the window (B's geometric mean
    /// over A's, minus 1, in %), per side, when both sides measured it.
    pub cpu_client_seconds_change_pct: Option<f64>,
    pub cpu_server_seconds_change_pct: Option<f64>,
}

/// One class of a mix: its transactions per run on each side.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClassCount {
    pub class: String,
    pub transactions_per_run_a: f64,
    pub transactions_per_run_b: f64,
}

impl MakeUp {
    /// The make-up of `mix` when it changed between `a` and `b` by more
    /// than `margin_pct` in some class's share of the transactions; `None`
    /// when it held (or a side has no transactions to share).
    fn of(mix: &str, a: &Samples, b: &Samples, margin_pct: f64) -> Option<MakeUp> {
        let (ta, tb) = (
            a.mix_transactions_per_run(mix),
            b.mix_transactions_per_run(mix),
        );
        let (sum_a, sum_b): (f64, f64) = (
            ta.iter().map(|(_, n)| n).sum(),
            tb.iter().map(|(_, n)| n).sum(),
        );
        let classes: Vec<ClassCount> = ta
            .iter()
            .filter_map(|(class, na)| {
                let nb = tb.iter().find(|(c, _)| c == class)?.1;
                Some(ClassCount {
                    class: class.clone(),
                    transactions_per_run_a: *na,
                    transactions_per_run_b: nb,
                })
            })
            .collect();
        if sum_a <= 0.0 || sum_b <= 0.0 || classes.len() < 2 {
            return None;
        }
        let margin = margin_pct / 100.0;
        let changed = classes.iter().any(|c| {
            let (share_a, share_b) = (
                c.transactions_per_run_a / sum_a,
                c.transactions_per_run_b / sum_b,
            );
            share_a <= 0.0 || (share_b / share_a - 1.0).abs() > margin
        });
        changed.then(|| MakeUp {
            mix: mix.to_string(),
            classes,
            cpu_client_seconds_change_pct: None,
            cpu_server_seconds_change_pct: None,
        })
    }

    /// With the change of the mix's CPU-seconds per side, from its rows.
    fn with_cpu_seconds(mut self, rows: &[Row]) -> MakeUp {
        let change = |m: Metric| {
            let r = rows
                .iter()
                .find(|r| r.whole_mix && r.workload == self.mix && r.metric == m)?;
            Some(pct(r.mean_b? / r.mean_a?))
        };
        self.cpu_client_seconds_change_pct = change(Metric::CpuClientSeconds);
        self.cpu_server_seconds_change_pct = change(Metric::CpuServerSeconds);
        self
    }
}

/// A whole comparison of set B against set A.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    pub a_name: String,
    pub b_name: String,
    pub runs_a: usize,
    pub runs_b: usize,
    pub margins: Margins,
    pub confidence_pct: f64,
    pub rows: Vec<Row>,
    pub summary: Summary,
    pub notes: Vec<String>,
    /// Why the rows carry no performance verdict (`verdict` = `EMULATED`):
    /// absent when the verdicts stand.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub no_verdict_reason: Option<String>,
    /// Runs given but not compared (incomplete), with why.
    pub left_out: Vec<LeftOut>,
    /// Settings, kernel and lab path that differ between A and B, or among
    /// one side's runs; empty when every compared run agrees.
    pub differences: Vec<Difference>,
    /// Mixes whose per-class CPU per transaction is not compared
    /// ([`CPU_NOT_ATTRIBUTABLE`]); their whole-mix CPU is.
    pub cpu_not_attributable: Vec<CpuRefusal>,
    /// The warnings the compared runs carry, per side and code; empty when
    /// none does.
    pub warned: Vec<Warned>,
}

/// One warning code carried by compared runs of one side.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Warned {
    /// The side's name (A's or B's).
    pub side: String,
    /// The warning's code (`background_load`, `delayed_ack_stall`, …).
    pub code: String,
    /// How many of the side's compared runs carry it.
    pub runs: usize,
    /// The rows' workloads it concerns (a class's own warning: its class;
    /// a run's: every class of the run).
    pub workloads: Vec<String>,
}

/// The warnings of `side`'s compared runs, per code.
fn warned_of(side: &str, runs: &[RunInput]) -> Vec<Warned> {
    use std::collections::{BTreeMap, BTreeSet};
    let mut by_code: BTreeMap<&str, (usize, BTreeSet<String>)> = BTreeMap::new();
    for r in runs {
        let keys: Vec<String> = r.record.classes.iter().map(class_key).collect();
        let mut codes = BTreeSet::new();
        for w in &r.record.warnings {
            let entry = by_code.entry(w.code.as_str()).or_default();
            let concerns = |k: &&String| match &w.class {
                None => true,
                Some(c) => *k == c || k.ends_with(&format!(": {c}")),
            };
            entry.1.extend(keys.iter().filter(concerns).cloned());
            codes.insert(w.code.as_str());
        }
        for code in codes {
            by_code.get_mut(code).expect("entered above").0 += 1;
        }
    }
    by_code
        .into_iter()
        .map(|(code, (runs, workloads))| Warned {
            side: side.to_string(),
            code: code.to_string(),
            runs,
            workloads: workloads.into_iter().collect(),
        })
        .collect()
}

/// Whether a warning listed in `warned` concerns `row` (a whole-mix row:
/// any class of its mix).
fn row_warned(row: &Row, warned: &[Warned]) -> bool {
    let mix_prefix = format!("{}: ", row.workload);
    warned.iter().any(|w| {
        w.workloads
            .iter()
            .any(|k| *k == row.workload || (row.whole_mix && k.starts_with(&mix_prefix)))
    })
}

/// The note under the table for each warning the compared runs carry.
fn warned_notes(warned: &[Warned], runs_a: (&str, usize), runs_b: (&str, usize)) -> Vec<String> {
    warned
        .iter()
        .map(|w| {
            let of = if w.side == runs_a.0 { runs_a.1 } else { runs_b.1 };
            format!(
                "warning {} in {} of {of} compared runs of {} ({}): the rows marked ⚠ rest on figures those runs called untrustworthy; see each run's warnings",
                w.code,
                w.runs,
                w.side,
                w.workloads.join(", ")
            )
        })
        .collect()
}

/// Why a mix gets no per-class CPU verdict.
pub const CPU_NOT_ATTRIBUTABLE: &str = "CPU per transaction: not attributable per class in a mix (classes share worker threads) — compare the mix as a whole, or run classes on separate workers";

/// A mix whose classes' CPU per transaction is not compared.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CpuRefusal {
    pub workload: String,
    pub reason: String,
}

/// A run given to a comparison but kept out of every count, mean and verdict.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LeftOut {
    /// The side's name (A's or B's).
    pub side: String,
    /// How a reader finds the run: `run 7`, `a.json #2`.
    pub run: String,
    pub reason: String,
}

impl Row {
    /// The verdict as printed: its name, marked ⚠ when a run behind the row
    /// carries a warning (the table, Markdown and HTML report alike).
    pub fn verdict_label(&self) -> String {
        if self.warned {
            format!("{} ⚠", self.verdict.name())
        } else {
            self.verdict.name().to_string()
        }
    }
}

impl Comparison {
    /// True when any verdict is WORSE (exit status 1).
    pub fn any_worse(&self) -> bool {
        self.rows.iter().any(|r| r.verdict == Verdict::Worse)
    }

    /// Withdraws every verdict (each becomes [`Verdict::Emulated`]) because
    /// `side` was measured in a TCG-emulated guest; the figures stay, and
    /// the reason becomes a note under the table.
    pub fn refuse_verdicts(&mut self, side: &str) {
        for r in &mut self.rows {
            r.verdict = Verdict::Emulated;
        }
        let reason = format!("{side} {EMULATED_NOTE}");
        self.notes.push(reason.clone());
        self.no_verdict_reason = Some(reason);
    }

    /// The row of one workload and metric.
    pub fn row(&self, workload: &str, metric: Metric) -> Option<&Row> {
        self.rows
            .iter()
            .find(|r| r.workload == workload && r.metric == metric)
    }
}

fn geo_mean(xs: &[f64]) -> Option<f64> {
    let pos: Vec<f64> = xs.iter().copied().filter(|v| *v > 0.0).collect();
    (!pos.is_empty() && pos.len() == xs.len())
        .then(|| (pos.iter().map(|v| v.ln()).sum::<f64>() / pos.len() as f64).exp())
}

fn pct(ratio: f64) -> f64 {
    (ratio - 1.0) * 100.0
}

/// Why a zero-width interval gives no verdict, in the metric's terms (the
/// verdict, TOO COARSE, says the rest).
fn too_coarse_note(m: Metric) -> String {
    match m {
        Metric::RateTps => "no spread: quantised, too few transactions per window — run longer windows or more repetitions",
        Metric::LatencyP50Us | Metric::LatencyP99Us => {
            "no spread: every run gave the same latency bucket — run more transactions or repetitions"
        }
        _ => "no spread: every run gave the same figure — run longer or more repetitions",
    }
    .to_string()
}

fn row_for(key: &str, m: Metric, a: &[f64], b: &[f64], margins: &Margins) -> Row {
    let est = welch_log_ratio(a, b, 0.90);
    let margin_pct = margins.for_metric(m);
    let note = if a.len() < 2 || b.len() < 2 {
        Some("needs at least 2 runs per side".to_string())
    } else if est.is_none() {
        Some("a value is zero or negative: no log ratio".to_string())
    } else if est.is_some_and(|e| verdict(&e, margin_pct, true) == Verdict::TooCoarse) {
        Some(too_coarse_note(m))
    } else if a.len() < RECOMMENDED_RUNS || b.len() < RECOMMENDED_RUNS {
        Some(format!(
            "fewer than {RECOMMENDED_RUNS} runs per side: wide interval"
        ))
    } else {
        None
    };
    Row {
        workload: key.to_string(),
        metric: m,
        n_a: a.len(),
        n_b: b.len(),
        mean_a: geo_mean(a),
        mean_b: geo_mean(b),
        change_pct: est.map(|e| pct(e.ratio)),
        ci_low_pct: est.map(|e| pct(e.ci_low)),
        ci_high_pct: est.map(|e| pct(e.ci_high)),
        margin_pct,
        verdict: est.map_or(Verdict::Inconclusive, |e| {
            verdict(&e, margin_pct, m.higher_is_better())
        }),
        note,
        whole_mix: false,
        warned: false,
    }
}

/// Compares run set B (`b`) against A (`a`); runs are named `A #1`, `A #2`…
/// and carry no environment (see [`compare_runs`] for stored runs).
pub fn compare(
    a_name: &str,
    a: &[RunRecord],
    b_name: &str,
    b: &[RunRecord],
    margins: Margins,
) -> Comparison {
    let (na, nb) = (run_names(a_name, a.len()), run_names(b_name, b.len()));
    let (ia, ib) = (unstored(&na, a), unstored(&nb, b));
    compare_runs(a_name, &ia, b_name, &ib, margins)
}

/// `A #1`, `A #2`, … for the runs of a side given without ids.
fn run_names(side: &str, n: usize) -> Vec<String> {
    (1..=n).map(|i| format!("{side} #{i}")).collect()
}

/// Runs without a stored environment, named by `names`.
fn unstored<'a>(names: &'a [String], runs: &'a [RunRecord]) -> Vec<RunInput<'a>> {
    names
        .iter()
        .zip(runs)
        .map(|(name, record)| RunInput {
            name: name.as_str(),
            record,
            env: None,
        })
        .collect()
}

/// Splits a side into its complete runs and the left-out incomplete ones.
fn complete_runs<'a>(side: &str, runs: &[RunInput<'a>]) -> (Vec<RunInput<'a>>, Vec<LeftOut>) {
    let (kept, dropped): (Vec<RunInput>, Vec<RunInput>) =
        runs.iter().partition(|r| r.record.complete);
    let left_out = dropped
        .into_iter()
        .map(|r| LeftOut {
            side: side.to_string(),
            run: r.name.to_string(),
            reason: crate::complete::reason_of(r.record),
        })
        .collect();
    (kept, left_out)
}

/// The note saying how many runs were left out and why.
fn left_out_note(left_out: &[LeftOut]) -> Option<String> {
    if left_out.is_empty() {
        return None;
    }
    let n = left_out.len();
    let runs = if n == 1 { "run" } else { "runs" };
    let each: Vec<String> = left_out
        .iter()
        .map(|l| format!("{} of {}: {}", l.run, l.side, l.reason))
        .collect();
    Some(format!(
        "left out {n} incomplete {runs} ({}): runs that did not finish are kept out of every count, mean and verdict",
        each.join("; ")
    ))
}

/// Compares run set B (`b`) against A (`a`): complete runs only.
pub fn compare_runs(
    a_name: &str,
    a: &[RunInput],
    b_name: &str,
    b: &[RunInput],
    margins: Margins,
) -> Comparison {
    let (a, mut left_out) = complete_runs(a_name, a);
    let (b, left_b) = complete_runs(b_name, b);
    left_out.extend(left_b);
    let (sa, sb) = (
        Samples::collect(a.iter().map(|r| r.record)),
        Samples::collect(b.iter().map(|r| r.record)),
    );
    let keys: Vec<String> = sa
        .keys
        .iter()
        .filter(|k| sb.keys.contains(k))
        .cloned()
        .collect();
    let mut rows = Vec::new();
    for key in &keys {
        // Per-class CPU of a mix that shared its CPU is no figure of the
        // class's: neither side's value, if any, is compared.
        let shared = sa.shared_cpu.contains(key) || sb.shared_cpu.contains(key);
        for m in Metric::ALL {
            if shared && m.margin_kind() == MarginKind::Cpu {
                continue;
            }
            let (va, vb) = (sa.get(key, m), sb.get(key, m));
            if va.is_empty() && vb.is_empty() {
                continue;
            }
            rows.push(row_for(key, m, va, vb, &margins));
        }
    }
    let mut cpu_not_attributable = Vec::new();
    for mix in sa.mixes.iter().filter(|m| sb.mixes.contains(m)) {
        let prefix = format!("{mix}: ");
        let refused = sa
            .shared_cpu
            .iter()
            .chain(&sb.shared_cpu)
            .any(|k| k.starts_with(&prefix) && keys.contains(k));
        // A mix whose classes each have CPU of their own keeps its
        // per-class verdicts and needs no whole-mix row.
        if !refused {
            continue;
        }
        cpu_not_attributable.push(CpuRefusal {
            workload: mix.clone(),
            reason: CPU_NOT_ATTRIBUTABLE.to_string(),
        });
        // Said in the summary ([`Summary::cpu_left_out`]).
        let make_up = MakeUp::of(mix, &sa, &sb, margins.cpu_pct);
        for m in MIX_METRICS {
            // Over transactions of another make-up, the mix's CPU per
            // transaction moves with the make-up, not with any cost.
            let per_tran = matches!(m, Metric::CpuClientUsPerTran | Metric::CpuServerUsPerTran);
            if per_tran && make_up.is_some() {
                continue;
            }
            let (va, vb) = (sa.get(mix, m), sb.get(mix, m));
            if va.is_empty() && vb.is_empty() {
                continue;
            }
            rows.push(Row {
                whole_mix: true,
                ..row_for(mix, m, va, vb, &margins)
            });
        }
    }
    let mut notes: Vec<String> = left_out_note(&left_out).into_iter().collect();
    let only = |from: &Samples, other: &Samples| -> Vec<String> {
        from.keys
            .iter()
            .filter(|k| !other.keys.contains(k))
            .cloned()
            .collect()
    };
    for (side, missing) in [(a_name, only(&sa, &sb)), (b_name, only(&sb, &sa))] {
        if !missing.is_empty() {
            notes.push(format!(
                "only in {side}, not compared: {}",
                missing.join(", ")
            ));
        }
    }
    if rows
        .iter()
        .any(|r| r.n_a < RECOMMENDED_RUNS || r.n_b < RECOMMENDED_RUNS)
    {
        notes.push(format!(
            "fewer than {RECOMMENDED_RUNS} runs per side for some rows: the intervals are wide and verdicts lean INCONCLUSIVE; run 5 or more per side"
        ));
    }
    let mut summary = summarize(&rows);
    summary.cpu_left_out = sa
        .mixes
        .iter()
        .filter(|m| sb.mixes.contains(m))
        .filter_map(|mix| MakeUp::of(mix, &sa, &sb, margins.cpu_pct))
        .filter(|m| cpu_not_attributable.iter().any(|r| r.workload == m.mix))
        .map(|m| m.with_cpu_seconds(&rows))
        .collect();
    let mut warned = warned_of(a_name, &a);
    warned.extend(warned_of(b_name, &b));
    for r in &mut rows {
        r.warned = row_warned(r, &warned);
    }
    notes.extend(warned_notes(&warned, (a_name, a.len()), (b_name, b.len())));
    Comparison {
        a_name: a_name.to_string(),
        b_name: b_name.to_string(),
        runs_a: sa.runs,
        runs_b: sb.runs,
        margins,
        confidence_pct: 90.0,
        rows,
        summary,
        notes,
        no_verdict_reason: None,
        left_out,
        differences: differences(&a, &b),
        cpu_not_attributable,
        warned,
    }
}

/// True when a run was measured in a TCG-emulated guest: its stored
/// environment says `guest.emulated`, or (a record without its environment,
/// e.g. a JSON file) its settings ran a guest kernel with `guest_accel = tcg`.
pub fn is_emulated(record: &RunRecord, env: Option<&Environment>) -> bool {
    if let Some(g) = env.and_then(|e| e.guest.as_ref()) {
        return g.emulated;
    }
    let s = &record.settings;
    s.kernel.is_guest() && s.guest_accel == GuestAccel::Tcg
}

/// Which of two sides were emulated, as the subject of the refusal note
/// (`"A"`, `"A and B"`); `None` when neither was.
pub fn emulated_sides(a_name: &str, a: bool, b_name: &str, b: bool) -> Option<String> {
    match (a, b) {
        (true, true) => Some(format!("{a_name} and {b_name} were")),
        (true, false) => Some(format!("{a_name} was")),
        (false, true) => Some(format!("{b_name} was")),
        (false, false) => None,
    }
}

fn summarize(rows: &[Row]) -> Summary {
    let averaged = |m: Metric| {
        rows.iter()
            .filter(move |r| r.metric == m && r.has_verdict())
    };
    let change = |m: Metric| {
        let ratios: Vec<f64> = averaged(m)
            .filter_map(|r| Some(r.mean_b? / r.mean_a?))
            .collect();
        geo_mean(&ratios).map(pct)
    };
    let left_out = rows
        .iter()
        .filter(|r| r.metric == Metric::RateTps && !r.has_verdict())
        .map(|r| r.workload.clone())
        .collect();
    Summary {
        workloads: averaged(Metric::RateTps).count(),
        left_out,
        cpu_client_workloads: averaged(Metric::CpuClientUsPerTran).count(),
        cpu_server_workloads: averaged(Metric::CpuServerUsPerTran).count(),
        throughput_change_pct: change(Metric::RateTps),
        cpu_client_change_pct: change(Metric::CpuClientUsPerTran),
        cpu_server_change_pct: change(Metric::CpuServerUsPerTran),
        cpu_left_out: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    fn margin_est(lo: f64, hi: f64) -> Estimate {
        Estimate {
            ratio: (lo + hi) / 2.0,
            ci_low: lo,
            ci_high: hi,
            df: 8.0,
        }
    }

    #[test]
    fn margins_are_percentages_between_0_and_100() {
        let m = Margins::from_flags(1.0, 7.0).unwrap();
        assert_eq!((m.rate_pct, m.latency_pct, m.cpu_pct), (1.0, 7.0, 1.0));
        assert_eq!(
            Margins::from_flags(0.0, 5.0).unwrap_err(),
            "--margin 0: give a percentage above 0 and below 100, e.g. 2.5"
        );
        assert!(Margins::from_flags(2.5, 100.0)
            .unwrap_err()
            .starts_with("--latency-margin 100:"));
        assert!(Margins::from_flags(f64::NAN, 5.0).is_err());
    }

    #[test]
    fn verdict_regions_for_rate_and_cpu() {
        assert_eq!(
            verdict(&margin_est(0.99, 1.01), 2.5, true),
            Verdict::Equivalent
        );
        assert_eq!(verdict(&margin_est(1.03, 1.05), 2.5, true), Verdict::Better);
        assert_eq!(verdict(&margin_est(0.90, 0.97), 2.5, true), Verdict::Worse);
        assert_eq!(
            verdict(&margin_est(0.99, 1.04), 2.5, true),
            Verdict::Inconclusive
        );
        // Lower is better for CPU and latency: a higher ratio is WORSE.
        assert_eq!(verdict(&margin_est(1.03, 1.05), 2.5, false), Verdict::Worse);
        assert_eq!(
            verdict(&margin_est(0.90, 0.97), 2.5, false),
            Verdict::Better
        );
    }

    #[test]
    fn welch_matches_hand_computation_equal_n() {
        // Logs of A: ln 100 + {-2,-1,0,1,2}/100; B the same shifted by ln 1.01.
        // s² = 0.00025 each, SE = sqrt(2 · 0.00025/5) = 0.01, ν = 8,
        // t(0.95, 8) = 1.859548; CI = 1.01 · e^(±0.01859548).
        let a: Vec<f64> = [-2.0, -1.0, 0.0, 1.0, 2.0]
            .iter()
            .map(|k| 100.0 * (k / 100.0f64).exp())
            .collect();
        let b: Vec<f64> = a.iter().map(|v| v * 1.01).collect();
        let e = welch_log_ratio(&a, &b, 0.90).unwrap();
        assert!(close(e.df, 8.0, 1e-9), "{e:?}");
        assert!(close(e.ratio, 1.01, 1e-12));
        assert!(
            close(e.ci_low, 1.01 * (-0.018_595_48f64).exp(), 1e-6),
            "{e:?}"
        );
        assert!(
            close(e.ci_high, 1.01 * 0.018_595_48f64.exp(), 1e-6),
            "{e:?}"
        );
        // 0.9914 … 1.0290: crosses +2.5%, so not equivalent at ±2.5% …
        assert_eq!(verdict(&e, 2.5, true), Verdict::Inconclusive);
        // … but equivalent at ±3%.
        assert_eq!(verdict(&e, 3.0, true), Verdict::Equivalent);
    }

    #[test]
    fn n2_versus_n10_uses_welch_df() {
        // A: 2 runs with spread, B: 10 identical runs. s_B = 0 so ν = n_A − 1 = 1,
        // t(0.95, 1) = 6.313752; logs of A differ by 0.02: s_A² = 0.0002,
        // SE = sqrt(0.0002/2) = 0.01; CI half-width 0.06313752.
        let a = [100.0 * (-0.01f64).exp(), 100.0 * 0.01f64.exp()];
        let b = [100.0; 10];
        let e = welch_log_ratio(&a, &b, 0.90).unwrap();
        assert!(close(e.df, 1.0, 1e-9));
        assert!(close(e.ratio, 1.0, 1e-12));
        assert!(close(e.ci_low, (-0.063_137_52f64).exp(), 1e-6), "{e:?}");
        assert!(close(e.ci_high, 0.063_137_52f64.exp(), 1e-6), "{e:?}");
        assert_eq!(verdict(&e, 2.5, true), Verdict::Inconclusive);
    }

    #[test]
    fn degenerate_inputs() {
        assert!(welch_log_ratio(&[1.0], &[1.0, 2.0], 0.9).is_none());
        assert!(welch_log_ratio(&[0.0, 1.0], &[1.0, 2.0], 0.9).is_none());
        let e = welch_log_ratio(&[5.0, 5.0], &[6.0, 6.0], 0.9).unwrap();
        assert_eq!((e.ci_low, e.ci_high), (e.ratio, e.ratio));
        assert!(close(e.ratio, 1.2, 1e-12));
        // No spread and 20% apart in every run: wholly beyond the margin …
        assert_eq!(verdict(&e, 2.5, true), Verdict::Better);
        // … but no spread within it is no evidence of equivalence.
        let same = welch_log_ratio(&[10.0, 10.0, 10.0], &[10.0, 10.0], 0.9).unwrap();
        assert_eq!(verdict(&same, 2.5, true), Verdict::TooCoarse);
        let near = welch_log_ratio(&[10.0, 10.0], &[10.1, 10.1], 0.9).unwrap();
        assert_eq!(verdict(&near, 2.5, false), Verdict::TooCoarse);
    }

    #[test]
    fn geometric_mean_summary() {
        assert!(close(geo_mean(&[1.1, 1.0 / 1.1]).unwrap(), 1.0, 1e-12));
        assert!(close(geo_mean(&[2.0, 8.0]).unwrap(), 4.0, 1e-12));
        assert_eq!(geo_mean(&[]), None);
    }
}
