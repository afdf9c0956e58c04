//! Swept studies: stored runs that carry `sweep` labels, grouped into series
//! over the swept values, with a mean and a 95% Student-t interval over the
//! repetitions at every point.
//!
//! The label contract (written by `run --sweep` and by study files with
//! sweeps): `sweep` = the swept dimension names joined by `,` in order
//! (`clients`, `clients,server_cpus`); `sweep.<name>` = the canonical value
//! text at the run's point (`8`, `4kB`, `0-1`, `true`); `workload` = the base
//! workload as written in the study; `variant`; `repetition`. The record holds
//! the classes actually run.
//!
//! Design notes:
//! - The first dimension is the x axis. Any further dimensions give one
//!   series per value, crossed with the variants.
//! - An x value is numeric where every value of the dimension parses the same
//!   way: counts, sizes (bytes), durations (seconds), CPU lists (number of
//!   processors, chosen by a dimension name containing `cpus`, since `4` is
//!   both a count and CPU 4); otherwise the values are categories in the
//!   order the runs first show them (the study's order: repetitions are
//!   interleaved, so the first pass visits every point in order).
//! - Mixes are kept per class: one series set per class. Summing the rates of
//!   a mix's classes would add RR transactions to 20 MB transfers, a number
//!   with no meaning.
//! - Classes are matched across points by position, not notation: a client
//!   sweep turns `RR1(1B/1B)` into `RR8(1B/1B)` at the point 8.
//! - A record made by `--repeat N` holds the mean of its N repetitions and
//!   each repetition's rate and CPU per transaction: those count as N
//!   observations at the point (a study's repetitions are N records, and the
//!   two must give the same n and interval). Its latency percentiles are only
//!   kept as the mean over the repetitions, so they are one observation.

pub mod figure;
pub mod report;
pub mod text;
pub mod usl;

use stackbench_metrics::stats;
use stackbench_model::size::{format_count, format_size, parse_count, parse_size};
use stackbench_model::Workload;
use stackbench_record::{ClassResult, RunRecord};
use stackbench_record::{PacingMode, RepetitionValues};

use crate::figure::short;
use crate::store::Labels;
use stackbench_model::units::{parse_cpu_list, parse_duration_s};

/// The label naming the swept dimensions.
pub const SWEEP_LABEL: &str = "sweep";
/// Confidence level of every interval shown for a sweep.
pub const LEVEL_PCT: f64 = 95.0;

/// Whether a run belongs to a sweep.
pub fn is_swept(labels: &Labels) -> bool {
    labels.contains_key(SWEEP_LABEL)
}

/// How the values of one dimension are placed on an axis.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum XKind {
    /// Whole counts with an optional `K` (clients, threads).
    Count,
    /// Any other number.
    Number,
    /// Sizes such as `4kB`, placed by bytes.
    Bytes,
    /// Durations such as `500ms`, placed by seconds.
    Seconds,
    /// CPU lists such as `0-1`, placed by the number of CPUs.
    Processors,
    /// Anything else, in study order.
    Category,
}

impl XKind {
    /// The numeric value of `text`, if it has this kind.
    pub fn parse(self, text: &str) -> Option<f64> {
        let v = match self {
            XKind::Count => parse_count(text, text).ok().map(f64::from),
            XKind::Number => text.trim().parse::<f64>().ok(),
            XKind::Bytes => parse_size(text, text).ok().map(|b| b as f64),
            XKind::Seconds => parse_duration_s(text).ok(),
            XKind::Processors => parse_cpu_list(text).ok().map(|c| c.len() as f64),
            XKind::Category => None,
        };
        v.filter(|x| x.is_finite())
    }

    /// The unit shown on the axis, if any.
    pub fn unit(self) -> Option<&'static str> {
        match self {
            XKind::Count => Some("count"),
            XKind::Bytes => Some("bytes"),
            XKind::Seconds => Some("s"),
            XKind::Processors => Some("processors"),
            XKind::Number | XKind::Category => None,
        }
    }

    /// The kind every value of `dimension` has (see the module notes).
    pub fn of(dimension: &str, texts: &[String]) -> XKind {
        let candidates: &[XKind] = if dimension.contains("cpus") {
            &[XKind::Processors]
        } else {
            &[XKind::Count, XKind::Number, XKind::Bytes, XKind::Seconds]
        };
        candidates
            .iter()
            .copied()
            .find(|k| !texts.is_empty() && texts.iter().all(|t| k.parse(t).is_some()))
            .unwrap_or(XKind::Category)
    }
}

/// One value of a dimension: its text and its place (an index for categories).
#[derive(Debug, Clone, PartialEq)]
pub struct AxisValue {
    pub text: String,
    pub x: f64,
}

/// A swept dimension's values in axis order.
#[derive(Debug, Clone, PartialEq)]
pub struct Axis {
    pub dimension: String,
    pub kind: XKind,
    pub values: Vec<AxisValue>,
}

impl Axis {
    /// The axis of `dimension` over `texts` (distinct, in study order).
    pub fn of(dimension: &str, texts: &[String]) -> Axis {
        let kind = XKind::of(dimension, texts);
        let mut values: Vec<AxisValue> = texts
            .iter()
            .enumerate()
            .map(|(i, t)| AxisValue {
                text: t.clone(),
                x: kind.parse(t).unwrap_or(i as f64),
            })
            .collect();
        if kind != XKind::Category {
            values.sort_by(|a, b| a.x.total_cmp(&b.x));
        }
        Axis {
            dimension: dimension.to_string(),
            kind,
            values,
        }
    }

    /// The place of the value written `text`.
    pub fn position(&self, text: &str) -> Option<f64> {
        self.values.iter().find(|v| v.text == text).map(|v| v.x)
    }

    /// Log2 when the values are powers of two spanning at least 8×.
    pub fn log2(&self) -> bool {
        let pow2 = |x: f64| x > 0.0 && x.log2().fract().abs() < 1e-9;
        let (lo, hi) = self
            .values
            .iter()
            .fold((f64::MAX, 0.0f64), |(lo, hi), v| (lo.min(v.x), hi.max(v.x)));
        self.kind != XKind::Category
            && self.values.len() >= 2
            && self.values.iter().all(|v| pow2(v.x))
            && hi >= 8.0 * lo
    }

    /// The axis title with its unit: `clients [count]`.
    pub fn description(&self) -> String {
        match self.kind.unit() {
            Some(u) => format!("{} [{u}]", self.dimension),
            None => self.dimension.clone(),
        }
    }

    /// A tick label for the place `x`.
    pub fn format(&self, x: f64) -> String {
        let whole = (x - x.round()).abs() < 1e-9 && x >= 0.0;
        match self.kind {
            XKind::Category => self
                .values
                .get(x.round().max(0.0) as usize)
                .map_or(String::new(), |v| v.text.clone()),
            XKind::Count if whole && x >= 1.0 && x <= f64::from(u32::MAX) => format_count(x as u32),
            XKind::Bytes if whole && x >= 1.0 => format_size(x as u64),
            XKind::Bytes => format!("{}B", short(x)),
            XKind::Seconds => format!("{}s", short(x)),
            _ => short(x),
        }
    }

    /// `clients = 1, 2, 4`.
    pub fn summary(&self) -> String {
        let texts: Vec<&str> = self.values.iter().map(|v| v.text.as_str()).collect();
        format!("{} = {}", self.dimension, texts.join(", "))
    }
}

/// Mean of one metric over the repetitions at a point, with the half-width
/// of its 95% Student-t interval (`None` for a single run).
#[derive(Debug, Clone, PartialEq)]
pub struct Stat {
    pub mean: f64,
    pub half: Option<f64>,
    /// The values, one per run.
    pub values: Vec<f64>,
}

impl Stat {
    /// The statistic of the finite values; `None` when there are none.
    pub fn of(values: Vec<f64>) -> Option<Stat> {
        let values: Vec<f64> = values.into_iter().filter(|v| v.is_finite()).collect();
        let mean = stats::mean(&values)?;
        let half =
            stats::confidence_interval(&values, LEVEL_PCT).map(|ci| (ci.high - ci.low) / 2.0);
        Some(Stat { mean, half, values })
    }

    /// Lower end of the interval (the mean when there is none).
    pub fn low(&self) -> f64 {
        self.mean - self.half.unwrap_or(0.0)
    }

    /// Upper end of the interval (the mean when there is none).
    pub fn high(&self) -> f64 {
        self.mean + self.half.unwrap_or(0.0)
    }
}

/// One point of a series: the runs at one x value.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    pub x: f64,
    pub x_text: String,
    /// Runs at the point, each repetition of a `--repeat` record counted
    /// (the n of the rate's interval).
    pub runs: usize,
    pub rate_tps: Stat,
    /// Mean response time R, µs (the R of N = X(R+Z)).
    pub latency_mean_us: Stat,
    pub latency_p50_us: Stat,
    pub latency_p99_us: Stat,
    pub cpu_client_us_per_tran: Option<Stat>,
    pub cpu_server_us_per_tran: Option<Stat>,
    /// How the clients paced their requests: think time or an offered rate
    /// when any run at the point did (the USL applies only where a sweep
    /// saturates something, see `usl`).
    pub pacing: PacingMode,
    /// Mean think time Z, seconds, measured (else configured); think-time pacing.
    pub think_s: Option<f64>,
    /// Mean offered rate, tr/s; open-loop pacing.
    pub offered_rate_tps: Option<f64>,
}

impl Point {
    /// The point of the classes measured at `x`; `None` when there are none.
    fn of(value: &AxisValue, classes: &[&ClassResult]) -> Option<Point> {
        let get = |f: &dyn Fn(&ClassResult) -> Option<f64>| {
            Stat::of(classes.iter().filter_map(|c| f(c)).collect())
        };
        let cpu = |client: bool| {
            move |c: &ClassResult| {
                let side = c.cpu.as_ref()?;
                let side = if client { &side.client } else { &side.server };
                side.as_ref()?.cpu_us_per_tran
            }
        };
        let rate_tps = Stat::of(
            classes
                .iter()
                .flat_map(|c| per_run(c, |r| Some(r.rate_tps), Some(c.rate_tps)))
                .collect(),
        )?;
        let cpu_side = |client: bool| {
            let pick = if client {
                |r: &RepetitionValues| r.client_cpu_us_per_tran
            } else {
                |r: &RepetitionValues| r.server_cpu_us_per_tran
            };
            Stat::of(
                classes
                    .iter()
                    .flat_map(|c| per_run(c, pick, cpu(client)(c)))
                    .collect(),
            )
        };
        Some(Point {
            x: value.x,
            x_text: value.text.clone(),
            runs: rate_tps.values.len(),
            rate_tps,
            latency_mean_us: get(&|c| c.latency_us.map(|l| l.mean))?,
            latency_p50_us: get(&|c| c.latency_us.map(|l| l.p50))?,
            latency_p99_us: get(&|c| c.latency_us.map(|l| l.p99))?,
            cpu_client_us_per_tran: cpu_side(true),
            cpu_server_us_per_tran: cpu_side(false),
            pacing: pacing(classes),
            think_s: get(&|c| {
                let p = c.population.as_ref()?;
                p.wait_mean_s.or(p.think_mean_s)
            })
            .map(|s| s.mean),
            offered_rate_tps: get(&|c| c.population.as_ref()?.offered_rate_tps).map(|s| s.mean),
        })
    }

    /// Whether any run at the point is a `--repeat` record, whose latency
    /// percentiles are one mean over its repetitions (see the module notes).
    pub fn latency_from_repeat_means(&self) -> bool {
        self.latency_p50_us.values.len() < self.runs
    }
}

/// The pacing of the classes at a point: paced (think or open) when any is,
/// so a point is never taken for the closed loop it was not.
fn pacing(classes: &[&ClassResult]) -> PacingMode {
    let modes = classes.iter().map(|c| {
        c.population
            .as_ref()
            .map_or(PacingMode::Closed, |p| p.pacing)
    });
    modes
        .clone()
        .find(|m| *m == PacingMode::Think)
        .or_else(|| modes.clone().find(|m| *m == PacingMode::Open))
        .unwrap_or(PacingMode::Closed)
}

/// A class's values of one measure, one per run: each repetition's for a
/// `--repeat` record (see the module notes), else the class's own `single`.
fn per_run(
    class: &ClassResult,
    pick: impl Fn(&RepetitionValues) -> Option<f64>,
    single: Option<f64>,
) -> Vec<f64> {
    match class.repetitions.as_ref().filter(|r| !r.runs.is_empty()) {
        Some(reps) => reps.runs.iter().filter_map(pick).collect(),
        None => single.into_iter().collect(),
    }
}

/// One line of a figure: a variant (and a value of the further dimensions).
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub variant: String,
    /// The value of the further dimensions, when there are any.
    pub second: Option<String>,
    /// The legend text.
    pub label: String,
    /// In axis order; points without runs are left out.
    pub points: Vec<Point>,
}

/// One class of a swept workload (the workload itself unless it is a mix).
#[derive(Debug, Clone, PartialEq)]
pub struct ClassSweep {
    /// The class as the base workload writes it.
    pub class: String,
    pub series: Vec<Series>,
}

/// A base workload's sweep.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkloadSweep {
    pub workload: String,
    pub classes: Vec<ClassSweep>,
}

impl WorkloadSweep {
    /// Whether the workload is a mix (its classes are shown one by one).
    pub fn is_mix(&self) -> bool {
        self.classes.len() > 1
    }
}

/// A study's swept runs, grouped.
#[derive(Debug, Clone, PartialEq)]
pub struct Sweep {
    pub dimensions: Vec<String>,
    /// The first dimension.
    pub x: Axis,
    /// The further dimensions (joined when more than one).
    pub second: Option<Axis>,
    /// Variant names in order of first run.
    pub variants: Vec<String>,
    pub workloads: Vec<WorkloadSweep>,
    /// Swept runs left out: another `sweep` label, or a missing point label.
    pub ignored_runs: usize,
    /// Incomplete runs (`complete: false`) left out of every point, interval
    /// and fit: what they measured stopped early and would pull a mean down.
    pub incomplete_runs: usize,
}

/// Where one run sits in the sweep.
struct Placed<'a> {
    variant: String,
    workload: String,
    x: String,
    second: Option<String>,
    record: &'a RunRecord,
}

fn push_new(list: &mut Vec<String>, value: &str) {
    if !list.iter().any(|v| v == value) {
        list.push(value.to_string());
    }
}

/// The runs of the sweep named by the first swept run, and how many were
/// left out (incomplete runs are counted apart, by [`group`]).
fn place<'a>(runs: &[(&Labels, &'a RunRecord)]) -> Option<(Vec<String>, Vec<Placed<'a>>, usize)> {
    let spec = runs.iter().find_map(|(l, _)| l.get(SWEEP_LABEL))?;
    let dims: Vec<String> = spec
        .split(',')
        .map(|d| d.trim().to_string())
        .filter(|d| !d.is_empty())
        .collect();
    let (mut placed, mut ignored) = (Vec::new(), 0);
    for (labels, record) in runs.iter().filter(|(l, r)| is_swept(l) && r.complete) {
        let values: Option<Vec<&String>> = dims
            .iter()
            .map(|d| labels.get(&format!("{SWEEP_LABEL}.{d}")))
            .collect();
        let workload = labels
            .get("workload")
            .cloned()
            .or_else(|| record.classes.first().map(|c| c.workload.clone()));
        match (values, workload) {
            (Some(values), Some(workload)) if labels.get(SWEEP_LABEL) == Some(spec) => {
                let rest: Vec<&str> = values[1..].iter().map(|v| v.as_str()).collect();
                placed.push(Placed {
                    variant: labels
                        .get("variant")
                        .cloned()
                        .unwrap_or_else(|| "default".into()),
                    workload,
                    x: values[0].clone(),
                    second: (!rest.is_empty()).then(|| rest.join(", ")),
                    record,
                });
            }
            _ => ignored += 1,
        }
    }
    (!dims.is_empty() && !placed.is_empty()).then_some((dims, placed, ignored))
}

/// The class names of a workload: the base notation's classes when it parses
/// into `count` classes, else the first run's notations.
fn class_names(workload: &str, count: usize, runs: &[&Placed]) -> Vec<String> {
    if let Ok(w) = workload.parse::<Workload>() {
        if w.classes.len() == count {
            return w.classes.iter().map(ToString::to_string).collect();
        }
    }
    (0..count)
        .map(|i| {
            runs.iter()
                .find_map(|p| p.record.classes.get(i).map(|c| c.notation.clone()))
                .unwrap_or_else(|| format!("class {}", i + 1))
        })
        .collect()
}

fn series_label(variant: &str, second: Option<(&str, &str)>, variants: usize) -> String {
    match second {
        None => variant.to_string(),
        Some((dim, value)) if variants < 2 => format!("{dim} = {value}"),
        Some((dim, value)) => format!("{variant}, {dim} = {value}"),
    }
}

/// How a sweep's series are laid out.
struct Layout<'s> {
    x: &'s Axis,
    second: Option<&'s Axis>,
    variants: &'s [String],
}

impl Layout<'_> {
    /// Class `i` of a workload's runs, one series per variant × further value.
    fn class(&self, i: usize, class: String, runs: &[&Placed]) -> ClassSweep {
        let seconds: Vec<Option<&str>> = match self.second {
            Some(a) => a.values.iter().map(|v| Some(v.text.as_str())).collect(),
            None => vec![None],
        };
        let dim = self.second.map(|a| a.dimension.as_str());
        let mut series = Vec::new();
        for variant in self.variants {
            for &second in &seconds {
                let points = self.points(i, variant, second, runs);
                if !points.is_empty() {
                    series.push(Series {
                        variant: variant.clone(),
                        second: second.map(String::from),
                        label: series_label(variant, dim.zip(second), self.variants.len()),
                        points,
                    });
                }
            }
        }
        ClassSweep { class, series }
    }

    /// The points of one series, in axis order.
    fn points(
        &self,
        i: usize,
        variant: &str,
        second: Option<&str>,
        runs: &[&Placed],
    ) -> Vec<Point> {
        self.x
            .values
            .iter()
            .filter_map(|xv| {
                let at: Vec<&ClassResult> = runs
                    .iter()
                    .filter(|p| {
                        p.variant == variant && p.x == xv.text && p.second.as_deref() == second
                    })
                    .filter_map(|p| p.record.classes.get(i))
                    .collect();
                Point::of(xv, &at)
            })
            .collect()
    }
}

/// Groups a study's runs (only those with `sweep` labels count) per base
/// workload, class, variant × further-dimension value and x value. `None`
/// when no run carries a sweep.
pub fn group(runs: &[(&Labels, &RunRecord)]) -> Option<Sweep> {
    let incomplete_runs = runs
        .iter()
        .filter(|(l, r)| is_swept(l) && !r.complete)
        .count();
    let (dims, placed, ignored_runs) = place(runs)?;
    let (mut xs, mut seconds, mut variants, mut workloads) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for p in &placed {
        push_new(&mut xs, &p.x);
        if let Some(s) = &p.second {
            push_new(&mut seconds, s);
        }
        push_new(&mut variants, &p.variant);
        push_new(&mut workloads, &p.workload);
    }
    let x = Axis::of(&dims[0], &xs);
    let second = (dims.len() > 1).then(|| Axis::of(&dims[1..].join(", "), &seconds));
    let layout = Layout {
        x: &x,
        second: second.as_ref(),
        variants: &variants,
    };
    let workloads = workloads
        .iter()
        .map(|w| {
            let runs: Vec<&Placed> = placed.iter().filter(|p| &p.workload == w).collect();
            let count = runs
                .iter()
                .map(|p| p.record.classes.len())
                .max()
                .unwrap_or(0);
            let classes = class_names(w, count, &runs)
                .into_iter()
                .enumerate()
                .map(|(i, class)| layout.class(i, class, &runs))
                .collect();
            WorkloadSweep {
                workload: w.clone(),
                classes,
            }
        })
        .collect();
    Some(Sweep {
        dimensions: dims,
        x,
        second,
        variants,
        workloads,
        ignored_runs,
        incomplete_runs,
    })
}

#[cfg(test)]
mod tests;
