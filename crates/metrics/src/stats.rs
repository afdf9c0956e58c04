//! Statistics over repetitions (netperf `-i max,min -I level,width`): mean,
//! sample standard deviation, Student-t confidence intervals, netperf's
//! acceptance rule, and the [`Iterations`] controller that decides whether to
//! run another repetition. Also the coefficient of variation used by the
//! steadiness warning.
//!
//! netperf's rule (netlib.c `calculate_confidence`): a set of n values is
//! accepted when the full interval width 2·t(level, n−1)·s/√n is at most
//! `width`% of the mean, for every measure asked for.

use statrs::distribution::{ContinuousCDF, StudentsT};

use stackbench_record::{ConfidenceInterval, MeasureSummary, RepetitionValues, Repetitions};

/// Confidence level of the interval reported for a plain `--repeat N`: the
/// conventional 95%. `--confidence L,W` sets its own.
pub const DEFAULT_LEVEL_PCT: f64 = 95.0;

/// Invalid repetition settings.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StatsError {
    #[error("confidence level {0}% is out of range: use a level between 50 and 99.9, e.g. 99")]
    Level(f64),
    #[error("confidence width {0}% is out of range: use a width above 0, e.g. 5 (% of the mean)")]
    Width(f64),
    #[error(
        "iterations {min},{max} are invalid: use MIN,MAX with 2 <= MIN <= MAX, e.g. 3,30 \
         (an interval needs at least 2 values)"
    )]
    Iterations { min: u32, max: u32 },
    #[error("repeat count 0 is invalid: use --repeat 1 or more")]
    Repeat,
}

/// Arithmetic mean; `None` for no values.
pub fn mean(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

/// Sample standard deviation (divisor n − 1); `None` for fewer than 2 values.
pub fn sample_stdev(values: &[f64]) -> Option<f64> {
    if values.len() < 2 {
        return None;
    }
    let m = mean(values)?;
    let ss: f64 = values.iter().map(|v| (v - m) * (v - m)).sum();
    Some((ss / (values.len() - 1) as f64).sqrt())
}

/// Coefficient of variation in percent (sample stdev / mean × 100); `None` for
/// fewer than 2 values or a mean that is not positive.
pub fn cv_pct(values: &[f64]) -> Option<f64> {
    let m = mean(values)?;
    let s = sample_stdev(values)?;
    (m > 0.0).then(|| 100.0 * s / m)
}

/// Two-sided Student-t quantile for `level_pct` with `dof` degrees of freedom,
/// e.g. 2.262157 for 95% and 9; `None` for 0 degrees of freedom or a level
/// outside (0, 100).
pub fn t_quantile(level_pct: f64, dof: u32) -> Option<f64> {
    if dof == 0 || !(level_pct > 0.0 && level_pct < 100.0) {
        return None;
    }
    let dist = StudentsT::new(0.0, 1.0, f64::from(dof)).ok()?;
    let upper = 1.0 - (1.0 - level_pct / 100.0) / 2.0;
    Some(dist.inverse_cdf(upper))
}

/// Student-t interval of the mean at `level_pct`; `None` for fewer than 2 values.
pub fn confidence_interval(values: &[f64], level_pct: f64) -> Option<ConfidenceInterval> {
    let n = values.len();
    let m = mean(values)?;
    let s = sample_stdev(values)?;
    let t = t_quantile(level_pct, u32::try_from(n - 1).ok()?)?;
    let half = t * s / (n as f64).sqrt();
    let width_pct_of_mean = if m != 0.0 {
        Some(100.0 * 2.0 * half / m.abs())
    } else if half == 0.0 {
        Some(0.0)
    } else {
        None
    };
    Some(ConfidenceInterval {
        level_pct,
        low: m - half,
        high: m + half,
        width_pct_of_mean,
    })
}

/// netperf's acceptance rule: full width ≤ `width_pct`% of the mean.
pub fn interval_meets(ci: &ConfidenceInterval, width_pct: f64) -> bool {
    ci.width_pct_of_mean.is_some_and(|w| w <= width_pct)
}

/// Mean, spread and interval of one measure; `None` for no values.
pub fn summarize(values: &[f64], level_pct: f64) -> Option<MeasureSummary> {
    Some(MeasureSummary {
        n: u32::try_from(values.len()).unwrap_or(u32::MAX),
        mean: mean(values)?,
        stdev: sample_stdev(values),
        confidence: confidence_interval(values, level_pct),
    })
}

/// What to do after a repetition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Run another repetition.
    RunAnother,
    /// A fixed `--repeat N` is complete (no width target).
    Finished,
    /// Every measure's interval is within the width.
    Reached,
    /// `max` repetitions ran and some interval is still too wide.
    NotReached,
}

/// Repetition controller: `--repeat N`, or `--confidence L,W --iterations MIN,MAX`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Iterations {
    pub min: u32,
    pub max: u32,
    pub level_pct: f64,
    /// Requested full interval width, % of the mean; `None` for a fixed count.
    pub width_pct: Option<f64>,
}

impl Iterations {
    /// Exactly `n` repetitions, reported at [`DEFAULT_LEVEL_PCT`].
    pub fn repeat(n: u32) -> Result<Iterations, StatsError> {
        if n == 0 {
            return Err(StatsError::Repeat);
        }
        Ok(Iterations {
            min: n,
            max: n,
            level_pct: DEFAULT_LEVEL_PCT,
            width_pct: None,
        })
    }

    /// Repeat until every interval at `level_pct` is at most `width_pct`% of
    /// its mean, with between `min` and `max` repetitions.
    pub fn confidence(
        level_pct: f64,
        width_pct: f64,
        min: u32,
        max: u32,
    ) -> Result<Iterations, StatsError> {
        if !(50.0..=99.9).contains(&level_pct) {
            return Err(StatsError::Level(level_pct));
        }
        if !(width_pct > 0.0 && width_pct.is_finite()) {
            return Err(StatsError::Width(width_pct));
        }
        if min < 2 || min > max {
            return Err(StatsError::Iterations { min, max });
        }
        Ok(Iterations {
            min,
            max,
            level_pct,
            width_pct: Some(width_pct),
        })
    }

    /// Decides after `runs` repetitions. `measures` holds each measure's values
    /// so far (rate, client CPU µs/tr, server CPU µs/tr); an empty slice is a
    /// measure that was not taken and is ignored.
    pub fn verdict(&self, runs: u32, measures: &[&[f64]]) -> Verdict {
        if runs < self.min {
            return Verdict::RunAnother;
        }
        let Some(width) = self.width_pct else {
            return if runs >= self.max {
                Verdict::Finished
            } else {
                Verdict::RunAnother
            };
        };
        if self.all_within(width, measures) {
            Verdict::Reached
        } else if runs >= self.max {
            Verdict::NotReached
        } else {
            Verdict::RunAnother
        }
    }

    fn all_within(&self, width_pct: f64, measures: &[&[f64]]) -> bool {
        measures.iter().filter(|m| !m.is_empty()).all(|m| {
            confidence_interval(m, self.level_pct).is_some_and(|ci| interval_meets(&ci, width_pct))
        })
    }
}

/// The JSON `repetitions` entry from each repetition's values.
pub fn summarize_repetitions(runs: &[RepetitionValues], iterations: &Iterations) -> Repetitions {
    let level = iterations.level_pct;
    let rate: Vec<f64> = runs.iter().map(|r| r.rate_tps).collect();
    let client: Vec<f64> = runs
        .iter()
        .filter_map(|r| r.client_cpu_us_per_tran)
        .collect();
    let server: Vec<f64> = runs
        .iter()
        .filter_map(|r| r.server_cpu_us_per_tran)
        .collect();
    let reached = iterations
        .width_pct
        .map(|w| iterations.all_within(w, &[&rate, &client, &server]));
    Repetitions {
        runs: runs.to_vec(),
        target_width_pct: iterations.width_pct,
        reached,
        rate_tps: summarize(&rate, level).unwrap_or_default(),
        client_cpu_us_per_tran: summarize(&client, level),
        server_cpu_us_per_tran: summarize(&server, level),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn t_quantiles_match_tables() {
        assert!(close(t_quantile(95.0, 9).unwrap(), 2.262157, 1e-6));
        assert!(close(t_quantile(99.0, 2).unwrap(), 9.924843, 1e-5));
        assert!(close(t_quantile(95.0, 1).unwrap(), 12.706205, 1e-5));
        assert!(close(t_quantile(99.0, 29).unwrap(), 2.756386, 1e-6));
        assert_eq!(t_quantile(95.0, 0), None);
        assert_eq!(t_quantile(100.0, 5), None);
    }

    #[test]
    fn mean_stdev_cv() {
        let v = [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0];
        assert_eq!(mean(&v), Some(5.0));
        assert!(close(
            sample_stdev(&v).unwrap(),
            (32.0f64 / 7.0).sqrt(),
            1e-12
        ));
        assert!(close(
            cv_pct(&v).unwrap(),
            100.0 * (32.0f64 / 7.0).sqrt() / 5.0,
            1e-9
        ));
        assert_eq!(mean(&[]), None);
        assert_eq!(sample_stdev(&[1.0]), None);
        assert_eq!(cv_pct(&[0.0, 0.0]), None);
    }

    #[test]
    fn interval_of_ten_values() {
        // Mean 10, s = 1 exactly, n = 10: half width = 2.262157 / √10.
        let v: Vec<f64> = (0..10)
            .map(|i| if i % 2 == 0 { 11.0 } else { 9.0 })
            .collect();
        let s = sample_stdev(&v).unwrap();
        let ci = confidence_interval(&v, 95.0).unwrap();
        let half = 2.262157 * s / 10f64.sqrt();
        assert!(close(ci.low, 10.0 - half, 1e-5));
        assert!(close(ci.high, 10.0 + half, 1e-5));
        let width = ci.width_pct_of_mean.unwrap();
        assert!(close(width, 100.0 * 2.0 * half / 10.0, 1e-4));
        assert!(interval_meets(&ci, width + 0.01));
        assert!(!interval_meets(&ci, width - 0.01));
        assert!(confidence_interval(&[1.0], 95.0).is_none());
    }

    #[test]
    fn identical_values_and_zero_mean() {
        let ci = confidence_interval(&[5.0, 5.0, 5.0], 99.0).unwrap();
        assert_eq!(ci.width_pct_of_mean, Some(0.0));
        let ci = confidence_interval(&[-1.0, 1.0], 99.0).unwrap();
        assert_eq!(ci.width_pct_of_mean, None);
        assert!(!interval_meets(&ci, 5.0));
    }

    #[test]
    fn fixed_repeat() {
        let it = Iterations::repeat(3).unwrap();
        assert_eq!(it.verdict(1, &[&[1.0]]), Verdict::RunAnother);
        assert_eq!(it.verdict(3, &[&[1.0, 9.0, 50.0]]), Verdict::Finished);
        assert_eq!(Iterations::repeat(0), Err(StatsError::Repeat));
    }

    #[test]
    fn confidence_controller() {
        let it = Iterations::confidence(99.0, 5.0, 3, 5).unwrap();
        let steady = [100.0, 100.2, 99.8]; // 99% full width 2.3% of the mean
        let noisy = [100.0, 150.0, 60.0];
        assert_eq!(it.verdict(2, &[&steady[..2]]), Verdict::RunAnother);
        assert_eq!(it.verdict(3, &[&steady, &[]]), Verdict::Reached);
        // Rate is steady but server CPU is not: keep going, then give up at max.
        assert_eq!(it.verdict(3, &[&steady, &[], &noisy]), Verdict::RunAnother);
        let noisy5 = [100.0, 150.0, 60.0, 120.0, 80.0];
        assert_eq!(it.verdict(5, &[&noisy5]), Verdict::NotReached);
    }

    #[test]
    fn confidence_settings_are_validated() {
        assert!(Iterations::confidence(99.0, 5.0, 3, 30).is_ok());
        assert_eq!(
            Iterations::confidence(99.0, 5.0, 1, 30),
            Err(StatsError::Iterations { min: 1, max: 30 })
        );
        assert!(Iterations::confidence(99.0, 5.0, 10, 3).is_err());
        assert!(Iterations::confidence(100.0, 5.0, 3, 30).is_err());
        assert!(Iterations::confidence(99.0, 0.0, 3, 30).is_err());
        let msg = Iterations::confidence(99.0, 5.0, 1, 30)
            .unwrap_err()
            .to_string();
        assert!(msg.contains("3,30"), "{msg}");
    }

    #[test]
    fn repetitions_record() {
        let runs: Vec<RepetitionValues> = [100.0, 100.2, 99.8]
            .iter()
            .map(|&r| RepetitionValues {
                rate_tps: r,
                client_cpu_us_per_tran: Some(10.0),
                server_cpu_us_per_tran: None,
            })
            .collect();
        let it = Iterations::confidence(99.0, 5.0, 3, 30).unwrap();
        let rep = summarize_repetitions(&runs, &it);
        assert_eq!(rep.runs.len(), 3);
        assert_eq!(rep.reached, Some(true));
        assert!(close(rep.rate_tps.mean, 100.0, 1e-9));
        assert_eq!(rep.client_cpu_us_per_tran.unwrap().stdev, Some(0.0));
        assert!(rep.server_cpu_us_per_tran.is_none());
        let fixed = summarize_repetitions(&runs, &Iterations::repeat(3).unwrap());
        assert_eq!(fixed.reached, None);
        assert_eq!(fixed.rate_tps.confidence.unwrap().level_pct, 95.0);
    }
}
