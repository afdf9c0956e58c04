//! The kernel comparison of a study whose variants differ by `kernel` (the z/OS
//! performance reports' release-to-release table, with Linux kernels as the
//! releases): per workload class, the new kernel's throughput and CPU µs per
//! transaction on each side relative to the baseline's (new/old ratios of
//! geometric means over the repetitions), each with compare's verdict (Welch's
//! 90% interval on log values against the margin), then an average row.
//!
//! Averages: the average row is the geometric mean of the ratios, as the
//! report's other averages are. IBM's OSA performance study (2010) averages the
//! signed percentages arithmetically (its "+1.23%" is the plain mean of eleven
//! rows, "Equal" counted as 0); that mean is given beside it in the text. For
//! changes of a few percent the two differ by hundredths of a point.
//!
//! Runs measured in a TCG-emulated guest keep their ratios but get no verdict
//! (the comparison was refused upstream; see [`Comparison::refuse_verdicts`]).

use comfy_table::{presets, Table};
use plotters::prelude::*;

use crate::compare::output::format_pct;
use crate::compare::{Comparison, Verdict};
use crate::doc::Block;
use crate::figure::{draw_legend, FigureError, FONT, VARIANT_COLOURS};
use crate::metric::Metric;
use crate::store::StoredRun;

/// The three relative figures of a row, in column order.
const METRICS: [(Metric, &str); 3] = [
    (Metric::RateTps, "Throughput"),
    (Metric::CpuClientUsPerTran, "CPU/tr client"),
    (Metric::CpuServerUsPerTran, "CPU/tr server"),
];

/// One figure of a row: new/old and compare's verdict.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Relative {
    pub ratio: Option<f64>,
    pub verdict: Option<Verdict>,
}

/// One workload class of the table.
#[derive(Debug, Clone, PartialEq)]
pub struct ReleaseRow {
    pub workload: String,
    /// Throughput, client CPU/tr, server CPU/tr.
    pub figures: [Relative; 3],
}

/// The table of one candidate variant against the baseline.
#[derive(Debug, Clone, PartialEq)]
pub struct ReleaseTable {
    /// The candidate variant (the columns' "new") and its kernel text.
    pub new: String,
    pub new_kernel: String,
    /// The baseline variant ("old") and its kernel text.
    pub old: String,
    pub old_kernel: String,
    pub rows: Vec<ReleaseRow>,
    /// Geometric means of each column's ratios (`None`: no row had it).
    pub average: [Option<f64>; 3],
    /// Arithmetic means of the percentage changes (the average z/OS
    /// performance summaries print, e.g. "Avg= 39.43% higher").
    pub average_pct_arithmetic: [Option<f64>; 3],
    /// Workloads in each average (those with a verdict), and those left out.
    pub averaged: [usize; 3],
    pub left_out: Vec<String>,
    /// Why no verdicts are given (emulated runs).
    pub no_verdict_reason: Option<String>,
}

/// The `kernel` setting of each variant's first run, when the variants do
/// not all have the same one (a kernel-to-kernel study); `None` otherwise.
pub fn variant_kernels(groups: &[(String, Vec<&StoredRun>)]) -> Option<Vec<String>> {
    let kernels: Vec<String> = groups
        .iter()
        .map(|(_, runs)| {
            let run = runs.first()?;
            let mut text = run.record.settings.text_of("kernel")?;
            if run.record.settings.peer_kernel.is_guest() {
                // A pair: the responder's kernel across the wire.
                let peer = run.record.settings.text_of("peer_kernel")?;
                text = format!("{text} ↔ {peer}");
            }
            Some(match run.env.guest.as_ref() {
                Some(g) if !g.kernel_release.is_empty() => {
                    format!("{text}, release {}", g.kernel_release)
                }
                _ => text,
            })
        })
        .collect::<Option<_>>()?;
    let first = kernels.first()?;
    (kernels.len() > 1 && kernels.iter().any(|k| k != first)).then_some(kernels)
}

fn mean_geometric(ratios: &[f64]) -> Option<f64> {
    (!ratios.is_empty())
        .then(|| (ratios.iter().map(|r| r.ln()).sum::<f64>() / ratios.len() as f64).exp())
}

/// The table of comparison `c` (B = new kernel, A = baseline), with each
/// side's kernel text.
pub fn release_table(c: &Comparison, old_kernel: &str, new_kernel: &str) -> ReleaseTable {
    let mut keys: Vec<&str> = Vec::new();
    for r in &c.rows {
        if !keys.contains(&r.workload.as_str()) {
            keys.push(&r.workload);
        }
    }
    let rows: Vec<ReleaseRow> = keys
        .iter()
        .map(|key| ReleaseRow {
            workload: key.to_string(),
            figures: METRICS.map(|(m, _)| match c.row(key, m) {
                Some(r) => Relative {
                    ratio: r.mean_a.zip(r.mean_b).map(|(a, b)| b / a),
                    verdict: r.change_pct.map(|_| r.verdict),
                },
                None => Relative {
                    ratio: None,
                    verdict: None,
                },
            }),
        })
        .collect();
    // Only workloads with a verdict enter the averages (`Row::has_verdict`).
    let judged = |i: usize, key: &str| c.row(key, METRICS[i].0).is_some_and(|r| r.has_verdict());
    let column = |i: usize| -> Vec<f64> {
        rows.iter()
            .filter(|r| judged(i, &r.workload))
            .filter_map(|r| r.figures[i].ratio)
            .filter(|r| *r > 0.0 && r.is_finite())
            .collect()
    };
    let average = [0, 1, 2].map(|i| mean_geometric(&column(i)));
    let average_pct_arithmetic = [0, 1, 2].map(|i| {
        let col = column(i);
        (!col.is_empty())
            .then(|| col.iter().map(|r| (r - 1.0) * 100.0).sum::<f64>() / col.len() as f64)
    });
    let averaged = [0, 1, 2].map(|i| column(i).len());
    ReleaseTable {
        averaged,
        left_out: c.summary.left_out.clone(),
        new: c.b_name.clone(),
        new_kernel: new_kernel.to_string(),
        old: c.a_name.clone(),
        old_kernel: old_kernel.to_string(),
        rows,
        average,
        average_pct_arithmetic,
        no_verdict_reason: c.no_verdict_reason.clone(),
    }
}

fn ratio_text(ratio: Option<f64>) -> String {
    ratio.map_or("-".into(), |r| {
        format!("{r:.3} ({})", format_pct((r - 1.0) * 100.0))
    })
}

fn verdict_text(v: Option<Verdict>) -> String {
    v.map_or("-".into(), |v| v.name().to_string())
}

impl ReleaseTable {
    /// Header: workload, then per figure `X new/old` and `verdict`.
    pub fn header(&self) -> Vec<String> {
        let mut h = vec!["Workload".to_string()];
        for (_, label) in METRICS {
            h.push(format!("{label} new/old"));
            h.push("Verdict".to_string());
        }
        h
    }

    /// Rows as text, the average row last.
    pub fn cells(&self) -> Vec<Vec<String>> {
        let mut out: Vec<Vec<String>> = self
            .rows
            .iter()
            .map(|r| {
                let mut row = vec![r.workload.clone()];
                for f in &r.figures {
                    row.push(ratio_text(f.ratio));
                    row.push(verdict_text(f.verdict));
                }
                row
            })
            .collect();
        let mut avg = vec!["Average (geometric mean)".to_string()];
        for a in self.average {
            avg.push(ratio_text(a));
            avg.push(String::new());
        }
        out.push(avg);
        out
    }

    /// The sentences of a z/OS release-to-release summary: "On average, NEW
    /// increases throughput by …".
    pub fn sentences(&self) -> Vec<String> {
        let mut out = Vec::new();
        for (i, (_, label)) in METRICS.iter().enumerate() {
            let n = self.averaged[i];
            let (Some(g), Some(a)) = (self.average[i], self.average_pct_arithmetic[i]) else {
                continue;
            };
            let pct = (g - 1.0) * 100.0;
            let verb = if pct >= 0.0 { "increases" } else { "reduces" };
            out.push(format!(
                "On average, {} {verb} {} by {:.2}% relative to {} over these {n} workload classes (geometric mean of the ratios; the z/OS release reports' arithmetic mean of the percentages: {}).",
                self.new,
                label.to_lowercase().replace("cpu/tr", "CPU per transaction on the"),
                pct.abs(),
                self.old,
                format_pct(a)
            ));
        }
        if !self.left_out.is_empty() {
            out.push(format!(
                "Left out of these averages, without a verdict: {}.",
                self.left_out.join(", ")
            ));
        }
        out
    }

    /// The table as text (comfy-table), with the notes under it.
    pub fn render_text(&self) -> String {
        let mut t = Table::new();
        t.load_style(presets::UTF8_FULL_CONDENSED);
        t.set_header(self.header());
        for row in self.cells() {
            t.add_row(row);
        }
        let mut out = format!("{}\n{t}\n", self.legend());
        for line in self.sentences().iter().chain(&self.notes()) {
            out.push_str(line);
            out.push('\n');
        }
        out
    }

    /// `new = B (kernel …), old = A (kernel …, the baseline).`
    pub fn legend(&self) -> String {
        format!(
            "new = {} (kernel {}), old = {} (kernel {}, the baseline).",
            self.new, self.new_kernel, self.old, self.old_kernel
        )
    }

    fn notes(&self) -> Vec<String> {
        self.no_verdict_reason
            .iter()
            .map(|r| format!("Note: {r}."))
            .collect()
    }

    /// The report blocks before the figure: intro, table, sentences, note.
    pub fn blocks(&self) -> Vec<Block> {
        let mut out = vec![Block::Paragraph(format!(
            "{} Per workload class: the ratio new/old of the geometric means over the repetitions of throughput and of CPU µs per transaction on each side (above 1 is better for throughput, worse for CPU), with compare's verdict from the 90% interval against the margin.",
            self.legend()
        ))];
        out.push(Block::Table {
            header: self.header(),
            rows: self.cells(),
        });
        let mut items = self.sentences();
        items.extend(self.notes());
        out.push(Block::List(items));
        out
    }

    /// Caption of [`ratio_figure`].
    pub fn figure_caption(&self, study: &str) -> String {
        format!(
            "{study}: {} relative to {} — new/old ratio of throughput and CPU per transaction (client, server) per workload class; the line marks 1 (no change).",
            self.new, self.old
        )
    }
}

type Chart<'a> = ChartContext<
    'a,
    SVGBackend<'a>,
    Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
>;

fn plot_err(e: &dyn std::fmt::Display) -> FigureError {
    FigureError(e.to_string())
}

/// The y range: every ratio and 1, padded, with room for the legend.
fn y_range(t: &ReleaseTable) -> std::ops::Range<f64> {
    let ratios = t
        .rows
        .iter()
        .flat_map(|r| r.figures.iter().filter_map(|f| f.ratio));
    let (lo, hi) = ratios.fold((1.0f64, 1.0f64), |(lo, hi), r| (lo.min(r), hi.max(r)));
    let pad = ((hi - lo) * 0.25).max(0.02);
    (lo - pad).max(0.0)..hi + pad * 2.0
}

/// One bar per figure and workload class, from 1 to the ratio, and the line
/// at 1.
fn draw_bars(chart: &mut Chart, t: &ReleaseTable) -> Result<(), FigureError> {
    let bar_w = 0.7 / 3.0;
    for (si, (_, label)) in METRICS.iter().enumerate() {
        let colour = VARIANT_COLOURS[si];
        let bars = t.rows.iter().enumerate().filter_map(move |(i, r)| {
            let ratio = r.figures[si].ratio?;
            let x = i as f64 - 0.35 + bar_w * si as f64;
            Some(Rectangle::new(
                [(x + 0.02, 1.0), (x + bar_w - 0.02, ratio)],
                colour.filled(),
            ))
        });
        chart
            .draw_series(bars)
            .map_err(|e| plot_err(&e))?
            .label(*label)
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], colour.filled()));
    }
    let n = t.rows.len().max(1) as f64;
    chart
        .draw_series(LineSeries::new(
            [(-0.5, 1.0), (n - 0.5, 1.0)],
            BLACK.stroke_width(1),
        ))
        .map_err(|e| plot_err(&e))?;
    draw_legend(chart)
}

/// One bar chart: per workload class, the three ratios side by side, with a
/// reference line at 1.
pub fn ratio_figure(t: &ReleaseTable) -> Result<String, FigureError> {
    let n = t.rows.len().max(1);
    let width = (160 * n as u32 + 160).clamp(640, 1400);
    let names: Vec<String> = t.rows.iter().map(|r| r.workload.clone()).collect();
    let label_of = |x: &f64| {
        let i = x.round();
        if (x - i).abs() > 1e-6 || i < 0.0 {
            return String::new();
        }
        names.get(i as usize).cloned().unwrap_or_default()
    };
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (width, 380)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| plot_err(&e))?;
        let mut chart = ChartBuilder::on(&root)
            .caption("New kernel relative to old", (FONT, 17))
            .margin(12)
            .x_label_area_size(48)
            .y_label_area_size(62)
            .build_cartesian_2d(-0.5f64..n as f64 - 0.5, y_range(t))
            .map_err(|e| plot_err(&e))?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .light_line_style(TRANSPARENT)
            .bold_line_style(BLACK.mix(0.12))
            .x_labels(n)
            .x_label_formatter(&label_of)
            .y_label_formatter(&|v| format!("{v:.2}"))
            .x_desc("workload class")
            .y_desc("new / old")
            .label_style((FONT, 13))
            .axis_desc_style((FONT, 14))
            .draw()
            .map_err(|e| plot_err(&e))?;
        draw_bars(&mut chart, t)?;
        root.present().map_err(|e| plot_err(&e))?;
    }
    Ok(svg)
}

#[cfg(test)]
mod tests;
