//! The report's subsection on a study's swept runs: per base workload (per
//! class for a mix) a figure against the swept value, the USL sentences of a
//! client sweep, and a table of the points; plus an environment line and
//! observation sentences. [`sweep_section`] is what `report.rs` calls; it
//! returns blocks, and the report numbers the figures.

use stackbench_plan::usl::Coefficients;
use stackbench_record::RunRecord;

use super::figure::{sweep_figure, SweepMark};
use super::usl::{fit_usl, usl_sentences, UslFailure, UslFit};
use super::{group, Axis, ClassSweep, Stat, Sweep, XKind, LEVEL_PCT};
use crate::compare::output::format_value;
use crate::doc::Block;
use crate::figure::FigureError;
use crate::store::Labels;

/// One figure of the subsection and the blocks that follow it.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepFigure {
    /// The base workload swept (the runs' `workload` label).
    pub workload: String,
    pub caption: String,
    pub svg: String,
    /// USL sentences (a client sweep) and the table of the points.
    pub after: Vec<Block>,
}

/// What the report shows of a study's swept runs.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepSection {
    /// Heading of the subsection (level 3).
    pub heading: String,
    /// The base workloads swept, in order.
    pub workloads: Vec<String>,
    /// For the environment list: the swept values, `clients = 1, 2, 4`.
    pub environment: String,
    /// For the observations: one sentence per class and series.
    pub observations: Vec<String>,
    /// Paragraphs before the first figure.
    pub intro: Vec<Block>,
    pub figures: Vec<SweepFigure>,
}

/// Whether the sweep's x axis is the client count (the USL applies).
pub fn is_client_sweep(sweep: &Sweep) -> bool {
    sweep.x.dimension == "clients" && sweep.x.kind == XKind::Count
}

type Fit = Option<Result<UslFit, UslFailure>>;

/// Which runs to mark on the figure of class `class` (an index into the
/// base workload's classes) of base workload `workload`, placed on `axis`.
pub type MarksOf<'a> = dyn Fn(&Axis, &str, usize) -> Vec<SweepMark> + 'a;

/// The subsection for the swept runs among `runs` (a study's complete runs
/// with their labels); `None` when no run carries a `sweep` label. `marks`
/// gives the runs drawn as single points on each figure.
pub fn sweep_section(
    study: &str,
    runs: &[(&Labels, &RunRecord)],
    marks: &MarksOf,
) -> Result<Option<SweepSection>, FigureError> {
    let Some(sweep) = group(runs) else {
        return Ok(None);
    };
    let usl = is_client_sweep(&sweep);
    let (mut figures, mut observations) = (Vec::new(), Vec::new());
    for w in &sweep.workloads {
        for (ci, class) in w.classes.iter().enumerate() {
            let who = if w.is_mix() {
                format!("{} in {}", class.class, w.workload)
            } else {
                w.workload.clone()
            };
            let fits: Vec<Fit> = class
                .series
                .iter()
                .map(|s| usl.then(|| fit_usl(s)))
                .collect();
            let curves: Vec<Option<Coefficients>> = fits
                .iter()
                .map(|f| Some(f.as_ref()?.as_ref().ok()?.coefficients()))
                .collect();
            let svg = sweep_figure(&sweep.x, class, &curves, &marks(&sweep.x, &w.workload, ci))?;
            let sentences: Vec<String> = class
                .series
                .iter()
                .zip(&fits)
                .filter_map(|(s, f)| {
                    Some(usl_sentences(&format!("{who}, {}", s.label), f.as_ref()?))
                })
                .flatten()
                .collect();
            let mut after = Vec::new();
            if !sentences.is_empty() {
                after.push(Block::List(sentences));
            }
            after.push(table(&sweep, class));
            let drawn = curves.iter().any(Option::is_some);
            figures.push(SweepFigure {
                workload: w.workload.clone(),
                caption: caption(study, &sweep, &who, class, drawn),
                svg,
                after,
            });
            observations.extend(peak_sentences(&sweep, &who, class, &fits));
        }
    }
    if sweep.ignored_runs > 0 {
        observations.push(format!(
            "{} swept runs were left out: they name another sweep than {} or lack a sweep.<dimension> label.",
            sweep.ignored_runs,
            sweep.dimensions.join(",")
        ));
    }
    Ok(Some(SweepSection {
        heading: heading(&sweep),
        workloads: sweep.workloads.iter().map(|w| w.workload.clone()).collect(),
        environment: environment(&sweep),
        observations,
        intro: vec![Block::Paragraph(intro(&sweep, usl))],
        figures,
    }))
}

fn heading(sweep: &Sweep) -> String {
    let over = sweep.dimensions.join(" × ");
    if sweep.dimensions[0] == "clients" {
        format!("Scalability: sweep over {over}")
    } else {
        format!("Sweep over {over}")
    }
}

fn environment(sweep: &Sweep) -> String {
    let mut parts = vec![sweep.x.summary()];
    parts.extend(sweep.second.as_ref().map(|a| a.summary()));
    parts.join("; ")
}

fn intro(sweep: &Sweep, usl: bool) -> String {
    let mut text = format!(
        "Each workload ran at every point of the sweep over {}",
        sweep.x.summary()
    );
    if let Some(second) = &sweep.second {
        text.push_str(&format!(", crossed with {}", second.summary()));
    }
    text.push_str(&format!(
        ". A point is the mean of the runs there, with a {LEVEL_PCT:.0}% Student-t interval (n − 1 degrees of freedom; a point with one run has none)."
    ));
    if sweep.x.log2() {
        text.push_str(" The x axis is logarithmic (base 2).");
    }
    if sweep.workloads.iter().any(|w| w.is_mix()) {
        text.push_str(" Mixes are shown class by class: the rates of different classes do not add up to a meaningful figure.");
    }
    if usl {
        text.push_str(" The dashed curve is the Universal Scalability Law X(N) = λN ÷ (1 + σ(N−1) + κN(N−1)) fitted by bounded least squares to every run's rate (not only the means); σ is contention, κ coherency, and N* = √((1−σ)/κ) the client count of peak throughput, with delta-method intervals.");
    }
    text
}

fn caption(study: &str, sweep: &Sweep, who: &str, class: &ClassSweep, usl: bool) -> String {
    let cpu = class
        .series
        .iter()
        .flat_map(|s| &s.points)
        .any(|p| p.cpu_client_us_per_tran.is_some() || p.cpu_server_us_per_tran.is_some());
    let runs: Vec<String> = class
        .series
        .iter()
        .map(|s| {
            format!(
                "{} {}",
                s.label,
                s.points.iter().map(|p| p.runs).sum::<usize>()
            )
        })
        .collect();
    format!(
        "{study}: {who} swept over {} — transaction rate{}, latency (p50 solid, p99 dashed){} against {}; one line per {}; points are means over the repetitions, error bars {LEVEL_PCT:.0}% Student-t intervals (runs: {}).",
        sweep.dimensions.join(" × "),
        if usl { " with the fitted USL curve dashed" } else { "" },
        if cpu { " and CPU per transaction on each side" } else { "" },
        sweep.x.description(),
        if sweep.second.is_some() { "series" } else { "variant" },
        runs.join(", ")
    )
}

/// `95,000 ± 1,200`, or the mean alone for one run.
fn mean_half(s: &Stat) -> String {
    match s.half {
        Some(h) => format!("{} ± {}", format_value(s.mean), format_value(h)),
        None => format_value(s.mean),
    }
}

/// One row per x value and series.
fn table(sweep: &Sweep, class: &ClassSweep) -> Block {
    let cpu = |client: bool| {
        class.series.iter().flat_map(|s| &s.points).any(|p| {
            if client {
                p.cpu_client_us_per_tran.is_some()
            } else {
                p.cpu_server_us_per_tran.is_some()
            }
        })
    };
    let (client, server) = (cpu(true), cpu(false));
    let mut header = vec![sweep.x.dimension.clone()];
    header.extend(sweep.second.as_ref().map(|a| a.dimension.clone()));
    header.extend(
        [
            "Variant".to_string(),
            "Runs".into(),
            format!("Rate tr/s (± {LEVEL_PCT:.0}% CI)"),
            "p50 µs".into(),
            "p99 µs".into(),
        ]
        .into_iter()
        .chain(client.then(|| "Client CPU µs/tr".to_string()))
        .chain(server.then(|| "Server CPU µs/tr".to_string())),
    );
    let mut rows = Vec::new();
    for xv in &sweep.x.values {
        for s in &class.series {
            let Some(p) = s.points.iter().find(|p| p.x_text == xv.text) else {
                continue;
            };
            let opt =
                |st: &Option<Stat>| st.as_ref().map_or("-".into(), |st| format_value(st.mean));
            let mut row = vec![p.x_text.clone()];
            row.extend(
                sweep
                    .second
                    .as_ref()
                    .map(|_| s.second.clone().unwrap_or_default()),
            );
            row.extend([
                s.variant.clone(),
                p.runs.to_string(),
                mean_half(&p.rate_tps),
                format_value(p.latency_p50_us.mean),
                format_value(p.latency_p99_us.mean),
            ]);
            row.extend(client.then(|| opt(&p.cpu_client_us_per_tran)));
            row.extend(server.then(|| opt(&p.cpu_server_us_per_tran)));
            rows.push(row);
        }
    }
    Block::Table { header, rows }
}

/// Per series: where the highest mean rate was measured, and the USL peak.
fn peak_sentences(sweep: &Sweep, who: &str, class: &ClassSweep, fits: &[Fit]) -> Vec<String> {
    class
        .series
        .iter()
        .zip(fits)
        .filter_map(|(s, fit)| {
            let best = s
                .points
                .iter()
                .max_by(|a, b| a.rate_tps.mean.total_cmp(&b.rate_tps.mean))?;
            let usl = match fit {
                // A peak is named only where κ's interval establishes one.
                Some(Ok(f)) => match f.plan.peak_n.filter(|_| f.plan.peak_established) {
                    Some(n) => format!(
                        "; the USL puts the peak at N* = {} clients",
                        stackbench_plan::report::sig(n.value, 3)
                    ),
                    None if f.plan.peak_n.is_some() => {
                        "; the data do not establish a USL peak (κ's interval includes 0)"
                            .to_string()
                    }
                    None => "; the USL finds no peak (κ ≈ 0)".to_string(),
                },
                _ => String::new(),
            };
            Some(format!(
                "{who}, {}: the highest mean rate, {} tr/s, was measured at {} = {}{usl}.",
                s.label,
                format_value(best.rate_tps.mean),
                sweep.x.dimension,
                best.x_text
            ))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::record;

    fn runs(dim: &str, values: &[&str]) -> Vec<(Labels, RunRecord)> {
        values
            .iter()
            .enumerate()
            .map(|(i, v)| {
                let labels: Labels = [
                    ("variant", "base"),
                    ("workload", "RR1(1B/1B)"),
                    ("sweep", dim),
                    (&format!("sweep.{dim}"), v),
                ]
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
                (
                    labels,
                    record("RR1(1B/1B)", 100.0 * (i + 1) as f64, 10.0, 20.0, 0.0),
                )
            })
            .collect()
    }

    fn section(runs: &[(Labels, RunRecord)]) -> SweepSection {
        let refs: Vec<(&Labels, &RunRecord)> = runs.iter().map(|(l, r)| (l, r)).collect();
        sweep_section("s", &refs, &|_, _, _| Vec::new())
            .unwrap()
            .unwrap()
    }

    #[test]
    fn a_client_sweep_too_short_to_fit_says_so_once() {
        let s = section(&runs("clients", &["1", "2"]));
        assert_eq!(s.heading, "Scalability: sweep over clients");
        let Block::List(items) = &s.figures[0].after[0] else {
            panic!("USL sentences first: {:?}", s.figures[0].after);
        };
        assert_eq!(items.len(), 1);
        assert!(
            items[0].starts_with("RR1(1B/1B), base: too few client counts"),
            "{}",
            items[0]
        );
        assert!(!s.figures[0].svg.contains(crate::sweep::figure::FIT_LEGEND));
    }

    #[test]
    fn other_dimensions_get_no_fit_and_a_table() {
        let s = section(&runs("request", &["64B", "1kB", "4kB", "16kB"]));
        assert_eq!(s.heading, "Sweep over request");
        assert_eq!(s.environment, "request = 64B, 1kB, 4kB, 16kB");
        assert_eq!(s.figures.len(), 1);
        let Block::Table { header, rows } = &s.figures[0].after[0] else {
            panic!("only the table: {:?}", s.figures[0].after);
        };
        assert_eq!(
            header[..4],
            ["request", "Variant", "Runs", "Rate tr/s (± 95% CI)"]
        );
        assert_eq!(header.len(), 6, "no CPU columns without CPU figures");
        assert_eq!(rows[1][..4], ["1kB", "base", "1", "200.0"]);
        assert!(
            s.observations[0].contains("at request = 16kB"),
            "{:?}",
            s.observations
        );
        assert!(s.figures[0].caption.contains("against request [bytes]"));
    }
}
