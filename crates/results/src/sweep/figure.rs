//! Sweep figures drawn with plotters' SVG backend, in the style of
//! [`crate::figure`]: for one class of a swept workload, line charts of the
//! transaction rate (with the fitted USL curve, dashed, on a client sweep),
//! latency (p50 solid, p99 dashed) and, when measured, CPU µs per transaction
//! on each side against the swept value — one colour per series, points at
//! the means, error bars the 95% Student-t intervals.
//!
//! The x axis is log2 when the values are powers of two spanning ≥ 8×
//! ([`Axis::log2`]; positions are log2 of the value, ticks labelled with the
//! value), categorical for non-numeric values, else linear.

use plotters::prelude::*;
use stackbench_plan::usl::Coefficients;

use super::{Axis, ClassSweep, Point, Stat, XKind};
use crate::figure::{short, FigureError, FONT, PANEL_H, PANEL_W, VARIANT_COLOURS};
use crate::figure_marks::{with_marks, Placed, RunMark};
use crate::metric::Metric;

type Area<'a> = DrawingArea<SVGBackend<'a>, plotters::coord::Shift>;

/// Samples of each fitted curve.
const CURVE_SAMPLES: usize = 120;
/// Legend text of the fitted curve.
pub const FIT_LEGEND: &str = "USL fit";

fn err(e: &dyn std::fmt::Display) -> FigureError {
    FigureError(e.to_string())
}

/// Where values sit on the x axis.
struct XScale<'a> {
    axis: &'a Axis,
    log2: bool,
    /// Ticks only at whole positions (categories, log2, small integer ranges).
    whole_ticks: bool,
}

impl<'a> XScale<'a> {
    fn new(axis: &'a Axis) -> XScale<'a> {
        let log2 = axis.log2();
        let (lo, hi) = bounds(axis.values.iter().map(|v| v.x));
        let integral = axis.values.iter().all(|v| v.x.fract() == 0.0);
        XScale {
            axis,
            log2,
            whole_ticks: axis.kind == XKind::Category || log2 || (integral && hi - lo <= 12.0),
        }
    }

    fn coord(&self, x: f64) -> f64 {
        if self.log2 {
            x.log2()
        } else {
            x
        }
    }

    /// The plotted range and how many tick labels to ask for.
    fn range(&self) -> (f64, f64, usize) {
        let (lo, hi) = bounds(self.axis.values.iter().map(|v| self.coord(v.x)));
        if self.whole_ticks {
            let (lo, hi) = (lo.floor(), hi.ceil());
            // With ±0.5 around whole ends and one label per whole position,
            // plotters' tick search lands on the whole positions.
            (lo - 0.5, hi + 0.5, (hi - lo) as usize + 1)
        } else {
            let pad = ((hi - lo) * 0.06).max(hi.abs() * 0.02).max(1e-9);
            (lo - pad, hi + pad, 6)
        }
    }

    fn label(&self, c: f64) -> String {
        if self.whole_ticks && (c - c.round()).abs() > 1e-6 {
            return String::new();
        }
        let c = if self.whole_ticks { c.round() } else { c };
        self.axis.format(if self.log2 { c.exp2() } else { c })
    }

    fn description(&self) -> String {
        let scale = if self.log2 { ", log₂ scale" } else { "" };
        format!("{}{scale}", self.axis.description())
    }
}

fn bounds(values: impl Iterator<Item = f64>) -> (f64, f64) {
    let (lo, hi) = values.fold((f64::MAX, f64::MIN), |(lo, hi), v| (lo.min(v), hi.max(v)));
    if lo > hi {
        (0.0, 1.0)
    } else {
        (lo, hi)
    }
}

/// One plotted line: a series' values of one metric.
struct Line<'a> {
    label: &'a str,
    colour: RGBColor,
    points: Vec<(f64, &'a Stat)>,
    dashed: bool,
}

/// What a panel's legend lists.
#[derive(Clone, Copy, PartialEq)]
enum Legend {
    None,
    /// Series names, and the fitted curve when drawn.
    Series,
    /// p50 solid, p99 dashed.
    Percentiles,
}

struct Panel<'a> {
    title: &'static str,
    y_desc: &'static str,
    /// The metrics its lines show (where run marks are placed).
    metrics: Vec<Metric>,
    lines: Vec<Line<'a>>,
    /// Fitted curves: colour and (coordinate, rate) samples.
    curves: Vec<(RGBColor, Vec<(f64, f64)>)>,
    legend: Legend,
}

/// A dashed legend glyph (two strokes) at a legend position.
macro_rules! dashed_glyph {
    ($at:expr, $style:expr) => {
        EmptyElement::at($at)
            + PathElement::new(vec![(0, 0), (6, 0)], $style)
            + PathElement::new(vec![(10, 0), (16, 0)], $style)
    };
}

fn draw_line<DB: DrawingBackend>(
    chart: &mut ChartContext<
        DB,
        Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
    >,
    line: &Line,
    legend: bool,
) -> Result<(), FigureError>
where
    DB::ErrorType: 'static,
{
    let c = line.colour;
    let style = c.stroke_width(2);
    let pts: Vec<(f64, f64)> = line.points.iter().map(|(x, s)| (*x, s.mean)).collect();
    let drawn = if line.dashed {
        chart.draw_series(DashedLineSeries::new(pts.clone(), 6, 4, style))
    } else {
        chart.draw_series(LineSeries::new(pts.clone(), style))
    }
    .map_err(|e| err(&e))?;
    if legend {
        drawn
            .label(line.label)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], c.stroke_width(2)));
    }
    chart
        .draw_series(pts.iter().map(|&p| Circle::new(p, 3, c.filled())))
        .map_err(|e| err(&e))?;
    chart
        .draw_series(
            line.points
                .iter()
                .filter(|(_, s)| s.half.is_some())
                .map(|(x, s)| {
                    ErrorBar::new_vertical(
                        *x,
                        s.low().max(0.0),
                        s.mean,
                        s.high(),
                        c.stroke_width(1),
                        8,
                    )
                }),
        )
        .map_err(|e| err(&e))?;
    Ok(())
}

/// The panel's legend: series names, or the p50/p99 line styles.
fn draw_legend<'a, DB: DrawingBackend + 'a>(
    chart: &mut ChartContext<
        'a,
        DB,
        Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
    >,
    legend: Legend,
) -> Result<(), FigureError> {
    if legend == Legend::Percentiles {
        let solid = BLACK.stroke_width(2);
        chart
            .draw_series(std::iter::empty::<Circle<(f64, f64), i32>>())
            .map_err(|e| err(&e))?
            .label("p50")
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], solid));
        chart
            .draw_series(std::iter::empty::<Circle<(f64, f64), i32>>())
            .map_err(|e| err(&e))?
            .label("p99")
            .legend(move |p| dashed_glyph!(p, solid));
    }
    if legend != Legend::None {
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK.mix(0.4))
            .label_font((FONT, 13))
            .draw()
            .map_err(|e| err(&e))?;
    }
    Ok(())
}

/// A run drawn over a sweep figure at its point of the swept dimension
/// (incomplete or warned; see [`RunMark`]).
#[derive(Debug, Clone, PartialEq)]
pub struct SweepMark {
    /// The run's place on the axis ([`Axis::position`] of its value).
    pub x: f64,
    pub mark: RunMark,
}

/// The marks' values of a panel's metrics, with their axis positions.
fn mark_points<'m>(
    panel: &'m Panel,
    marks: &'m [SweepMark],
) -> impl Iterator<Item = (f64, f64, &'m RunMark)> + 'm {
    marks.iter().flat_map(move |m| {
        m.mark
            .values
            .iter()
            .filter(|(k, _)| panel.metrics.contains(k))
            .map(move |(_, v)| (m.x, *v, &m.mark))
    })
}

fn draw_panel(
    area: &Area,
    scale: &XScale,
    panel: &Panel,
    marks: &[SweepMark],
) -> Result<Vec<Placed>, FigureError> {
    let (x0, x1, labels) = scale.range();
    let y_top = panel
        .lines
        .iter()
        .flat_map(|l| l.points.iter().map(|(_, s)| s.high()))
        .chain(panel.curves.iter().flat_map(|(_, c)| c.iter().map(|p| p.1)))
        .chain(mark_points(panel, marks).map(|(_, v, _)| v))
        .fold(0.0f64, f64::max);
    let headroom = if panel.legend == Legend::None {
        1.15
    } else {
        1.45
    };
    let y_top = if y_top > 0.0 { y_top * headroom } else { 1.0 };
    let mut chart = ChartBuilder::on(area)
        .caption(panel.title, (FONT, 17))
        .margin(12)
        .x_label_area_size(48)
        .y_label_area_size(62)
        .build_cartesian_2d(x0..x1, 0f64..y_top)
        .map_err(|e| err(&e))?;
    chart
        .configure_mesh()
        .light_line_style(TRANSPARENT)
        .bold_line_style(BLACK.mix(0.12))
        .x_labels(labels)
        .x_label_formatter(&|c| scale.label(*c))
        .y_label_formatter(&|y| short(*y))
        .x_desc(scale.description())
        .y_desc(panel.y_desc)
        .label_style((FONT, 13))
        .axis_desc_style((FONT, 14))
        .draw()
        .map_err(|e| err(&e))?;
    for (i, (colour, curve)) in panel.curves.iter().enumerate() {
        let style = colour.mix(0.7).stroke_width(2);
        let drawn = chart
            .draw_series(DashedLineSeries::new(curve.clone(), 7, 5, style))
            .map_err(|e| err(&e))?;
        if i == 0 && panel.legend == Legend::Series {
            let grey = BLACK.mix(0.6).stroke_width(2);
            drawn
                .label(FIT_LEGEND)
                .legend(move |p| dashed_glyph!(p, grey));
        }
    }
    for line in &panel.lines {
        draw_line(&mut chart, line, panel.legend == Legend::Series)?;
    }
    draw_legend(&mut chart, panel.legend)?;
    Ok(mark_points(panel, marks)
        .map(|(x, v, mark)| {
            let (x, y) = chart.backend_coord(&(scale.coord(x), v));
            Placed {
                x,
                y,
                mark: mark.clone(),
            }
        })
        .collect())
}

/// The fitted curve's samples over the measured range, in plot coordinates.
fn curve(scale: &XScale, c: &Coefficients) -> Vec<(f64, f64)> {
    let (lo, hi) = bounds(scale.axis.values.iter().map(|v| scale.coord(v.x)));
    (0..=CURVE_SAMPLES)
        .map(|i| {
            let at = lo + (hi - lo) * i as f64 / CURVE_SAMPLES as f64;
            let n = if scale.log2 { at.exp2() } else { at };
            (at, c.throughput(n))
        })
        .collect()
}

/// Reads one metric of a point.
type Getter = fn(&Point) -> Option<&Stat>;

fn colour(i: usize) -> RGBColor {
    VARIANT_COLOURS[i % VARIANT_COLOURS.len()]
}

/// One line per series of `class` for the metric `get`.
fn lines<'a>(class: &'a ClassSweep, scale: &XScale, get: Getter, dashed: bool) -> Vec<Line<'a>> {
    class
        .series
        .iter()
        .enumerate()
        .map(|(i, s)| Line {
            label: &s.label,
            colour: colour(i),
            points: s
                .points
                .iter()
                .filter_map(|p| Some((scale.coord(p.x), get(p)?)))
                .collect(),
            dashed,
        })
        .filter(|l| !l.points.is_empty())
        .collect()
}

/// Draws the figure of one class of a swept workload as a standalone SVG
/// document. `fits[i]` is series `i`'s fitted USL, drawn on the rate panel;
/// `marks` are runs drawn as single points (incomplete or warned).
pub fn sweep_figure(
    axis: &Axis,
    class: &ClassSweep,
    fits: &[Option<Coefficients>],
    marks: &[SweepMark],
) -> Result<String, FigureError> {
    let scale = XScale::new(axis);
    let lines = |get: Getter, dashed: bool| lines(class, &scale, get, dashed);
    let curves = fits
        .iter()
        .enumerate()
        .filter_map(|(i, f)| Some((colour(i), curve(&scale, f.as_ref()?))))
        .collect();
    let mut latency = lines(|p| Some(&p.latency_p50_us), false);
    latency.extend(lines(|p| Some(&p.latency_p99_us), true));
    let mut panels = vec![
        Panel {
            title: "Transaction rate",
            y_desc: "transactions/s [tr/s]",
            metrics: vec![Metric::RateTps],
            lines: lines(|p| Some(&p.rate_tps), false),
            curves,
            legend: Legend::Series,
        },
        Panel {
            title: "Latency",
            y_desc: "latency [µs]",
            metrics: vec![Metric::LatencyP50Us, Metric::LatencyP99Us],
            lines: latency,
            curves: Vec::new(),
            legend: Legend::Percentiles,
        },
    ];
    let cpu: [(&'static str, Metric, Getter); 2] = [
        (
            "Client CPU per transaction",
            Metric::CpuClientUsPerTran,
            |p| p.cpu_client_us_per_tran.as_ref(),
        ),
        (
            "Server CPU per transaction",
            Metric::CpuServerUsPerTran,
            |p| p.cpu_server_us_per_tran.as_ref(),
        ),
    ];
    for (title, metric, get) in cpu {
        let l = lines(get, false);
        if !l.is_empty() {
            panels.push(Panel {
                title,
                y_desc: "CPU [µs/tr]",
                metrics: vec![metric],
                lines: l,
                curves: Vec::new(),
                legend: Legend::None,
            });
        }
    }
    let rows = panels.len().div_ceil(2);
    let mut svg = String::new();
    let mut placed = Vec::new();
    {
        let root = SVGBackend::with_string(&mut svg, (PANEL_W * 2, PANEL_H * rows as u32))
            .into_drawing_area();
        root.fill(&WHITE).map_err(|e| err(&e))?;
        for (area, panel) in root.split_evenly((rows, 2)).iter().zip(&panels) {
            placed.extend(draw_panel(area, &scale, panel, marks)?);
        }
        root.present().map_err(|e| err(&e))?;
    }
    Ok(with_marks(svg, &placed))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::record;
    use crate::store::Labels;
    use crate::sweep::group;
    use stackbench_record::RunRecord;

    /// Runs of a sweep over `dims` at each of `points` (the values per
    /// dimension), two repetitions, variants `a` and `b`.
    fn sweep_runs(dims: &[&str], points: &[Vec<&str>]) -> Vec<(Labels, RunRecord)> {
        let mut out = Vec::new();
        for rep in 0..2 {
            for (vi, variant) in ["a", "b"].iter().enumerate() {
                for (pi, values) in points.iter().enumerate() {
                    let mut labels: Labels = [
                        ("variant", variant.to_string()),
                        ("workload", "RR1(1B/1B)".to_string()),
                        ("sweep", dims.join(",")),
                    ]
                    .into_iter()
                    .map(|(k, v)| (k.to_string(), v))
                    .collect();
                    for (d, v) in dims.iter().zip(values) {
                        labels.insert(format!("sweep.{d}"), v.to_string());
                    }
                    let rate =
                        1000.0 * (1.0 + pi as f64) * (1.0 + 0.1 * vi as f64) + rep as f64 * 20.0;
                    out.push((labels, record("RR1(1B/1B)", rate, 50.0, 90.0, 0.0)));
                }
            }
        }
        out
    }

    fn figure(runs: &[(Labels, RunRecord)], name: &str) -> String {
        let refs: Vec<(&Labels, &RunRecord)> = runs.iter().map(|(l, r)| (l, r)).collect();
        let sweep = group(&refs).unwrap();
        let class = &sweep.workloads[0].classes[0];
        let svg = sweep_figure(&sweep.x, class, &vec![None; class.series.len()], &[]).unwrap();
        // Kept for a person to look at (rsvg-convert FILE -o FILE.png).
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target");
        let _ = std::fs::write(dir.join(format!("sweep-figure-{name}.svg")), &svg);
        svg
    }

    #[test]
    fn categorical_axis_keeps_study_order() {
        let points = vec![vec!["true"], vec!["false"]];
        let svg = figure(&sweep_runs(&["nodelay"], &points), "nodelay");
        assert!(svg.starts_with("<svg"));
        let (t, f) = (
            svg.find("\ntrue\n").unwrap(),
            svg.find("\nfalse\n").unwrap(),
        );
        assert!(t < f, "true is drawn first");
        assert!(svg.contains("\nnodelay\n"), "the axis title");
        assert!(!svg.contains(FIT_LEGEND), "no fit outside a client sweep");
        assert!(
            !svg.contains("CPU per transaction"),
            "no CPU measured, no CPU panel"
        );
    }

    #[test]
    fn crossed_dimensions_give_one_line_per_variant_and_value() {
        let mut points = Vec::new();
        for c in ["1", "2", "4"] {
            for cpus in ["1", "0-1"] {
                points.push(vec![c, cpus]);
            }
        }
        let svg = figure(&sweep_runs(&["clients", "server_cpus"], &points), "crossed");
        for legend in [
            "a, server_cpus = 1",
            "b, server_cpus = 0-1",
            "clients [count]",
            "p50",
            "p99",
        ] {
            assert!(svg.contains(legend), "missing {legend}");
        }
        assert!(!svg.contains("log₂"), "1 … 4 spans less than 8×: linear");
    }

    #[test]
    fn sizes_on_a_log2_axis_are_labelled_as_sizes() {
        let points = vec![vec!["64B"], vec!["1kB"], vec!["16kB"]];
        let svg = figure(&sweep_runs(&["request"], &points), "request");
        for text in ["request [bytes], log₂ scale", "64B", "1kB", "16kB", "256B"] {
            assert!(svg.contains(&format!("\n{text}\n")), "missing {text}");
        }
    }
}
