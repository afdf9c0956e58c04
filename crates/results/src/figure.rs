//! Report figures drawn with plotters' SVG backend: for one workload of a study,
//! a grid of bar charts — transaction rate, latency (p50 and p99) and, when
//! measured, CPU µs per transaction on each side — one bar per variant, with
//! error bars of ±1 standard deviation over the repetitions.
//!
//! Bars are means over complete runs only. Runs worth a second look are drawn
//! on top as single points ([`RunMark`], see [`crate::figure_marks`]).
//!
//! When the bars of one panel differ by 10× or more, the short bars are
//! unreadable on a linear axis, so each bar gets its value and its ratio to
//! the smallest bar printed above it. A log axis was not chosen: a bar's
//! length then no longer says anything (a log axis has no zero to start
//! from), and readers compare bar lengths.

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

pub use crate::figure_marks::RunMark;
pub(crate) use crate::figure_marks::FONT;
use crate::figure_marks::{with_marks, Placed};
use crate::metric::{mean_sd, Metric, Samples};

/// Bar colours per variant (colour-blind-safe Okabe–Ito order).
pub(crate) const VARIANT_COLOURS: [RGBColor; 6] = [
    RGBColor(0, 114, 178),
    RGBColor(230, 159, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(86, 180, 233),
    RGBColor(213, 94, 0),
];
const P50_COLOUR: RGBColor = RGBColor(86, 180, 233);
const P99_COLOUR: RGBColor = RGBColor(0, 90, 150);
/// The generator lag beside the latency (Okabe–Ito vermillion).
const LAG_COLOUR: RGBColor = RGBColor(213, 94, 0);

pub(crate) const PANEL_W: u32 = 480;
pub(crate) const PANEL_H: u32 = 300;

/// Why a figure could not be drawn (plotters' error, as text).
#[derive(Debug, thiserror::Error)]
#[error("cannot draw figure: {0}")]
pub struct FigureError(pub(crate) String);

/// One variant's samples of one workload (complete runs only), and the runs
/// to mark on its bars.
pub struct VariantSamples<'a> {
    pub name: &'a str,
    pub samples: &'a Samples,
    pub marks: Vec<RunMark>,
}

/// Bars differing by this factor or more get their values printed.
pub const LABEL_RATIO: f64 = 10.0;

/// Mean and standard deviation of one metric for each variant (`None` when a
/// variant has no value).
fn stats(workload: &str, variants: &[VariantSamples], m: Metric) -> Vec<Option<(f64, f64)>> {
    variants
        .iter()
        .map(|v| mean_sd(v.samples.get(workload, m)))
        .collect()
}

/// `1.2M`, `45k`, `123`, `1.5`: short tick labels.
pub(crate) fn short(v: f64) -> String {
    let a = v.abs();
    if a >= 1e6 {
        format!("{:.1}M", v / 1e6)
    } else if a >= 1e4 {
        format!("{:.0}k", v / 1e3)
    } else if a >= 1e3 {
        format!("{:.1}k", v / 1e3)
    } else if a >= 10.0 || a == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

type Area<'a> = DrawingArea<SVGBackend<'a>, plotters::coord::Shift>;

/// One bar series: a name for the legend (None: colour by variant), its
/// per-variant (mean, sd), and a colour.
struct Series {
    metric: Metric,
    legend: Option<&'static str>,
    stats: Vec<Option<(f64, f64)>>,
    colour: Option<RGBColor>,
}

/// Whether the bars of a panel differ by [`LABEL_RATIO`] or more (then
/// every bar gets its value printed).
fn needs_labels(series: &[Series]) -> bool {
    let means: Vec<f64> = series.iter().flat_map(positive_means).collect();
    let min = means.iter().copied().fold(f64::INFINITY, f64::min);
    let max = means.iter().copied().fold(0.0, f64::max);
    means.len() > 1 && max >= LABEL_RATIO * min
}

fn positive_means(s: &Series) -> Vec<f64> {
    s.stats
        .iter()
        .flatten()
        .map(|(m, _)| *m)
        .filter(|m| *m > 0.0)
        .collect()
}

/// The smallest bar of a series whose own bars (one per variant) differ by
/// [`LABEL_RATIO`] or more: its bars' ratios are taken to it. Across series
/// (p50 against p99) a ratio would compare different things, so none.
fn ratio_base(s: &Series) -> Option<f64> {
    let means = positive_means(s);
    let min = means.iter().copied().fold(f64::INFINITY, f64::min);
    let max = means.iter().copied().fold(0.0, f64::max);
    (means.len() > 1 && max >= LABEL_RATIO * min).then_some(min)
}

/// The text printed above a bar: its value, and its ratio to the series'
/// smallest bar when `base` is given and the ratio is not 1.
fn bar_label(mean: f64, base: Option<f64>) -> String {
    match base.map(|b| mean / b) {
        Some(r) if (1.005..10.0).contains(&r) => format!("{} ({r:.1}×)", short(mean)),
        Some(r) if r >= 10.0 => format!("{} ({r:.0}×)", short(mean)),
        _ => short(mean),
    }
}

/// Draws one panel; returns the run marks it placed, in backend pixels.
fn panel(
    area: &Area,
    title: &str,
    y_desc: &str,
    variants: &[VariantSamples],
    series: &[Series],
) -> Result<Vec<Placed>, FigureError> {
    let err = |e: &dyn std::fmt::Display| FigureError(e.to_string());
    let names: Vec<&str> = variants.iter().map(|v| v.name).collect();
    let n = names.len();
    let marked = |m: Metric| {
        variants.iter().enumerate().flat_map(move |(i, v)| {
            v.marks.iter().filter_map(move |mark| {
                let value = mark.values.iter().find(|(k, _)| *k == m)?.1;
                Some((i, value, mark))
            })
        })
    };
    let y_max = series
        .iter()
        .flat_map(|s| s.stats.iter().flatten().map(|(m, sd)| m + sd))
        .chain(
            series
                .iter()
                .flat_map(|s| marked(s.metric).map(|(_, v, _)| v)),
        )
        .fold(0.0f64, f64::max);
    let labels = needs_labels(series);
    // Headroom above the tallest error bar; more when a legend or the bar
    // values sit there.
    let headroom = if series.iter().any(|s| s.legend.is_some()) {
        1.45
    } else if labels {
        1.3
    } else {
        1.15
    };
    let y_max = if y_max > 0.0 { y_max * headroom } else { 1.0 };
    // With the range −0.5 … n−0.5 and at most n labels, plotters' tick search
    // lands on the integers, one under each bar group.
    let x_range = -0.5f64..n as f64 - 0.5;
    let mut chart = ChartBuilder::on(area)
        .caption(title, (FONT, 17))
        .margin(12)
        .x_label_area_size(48)
        .y_label_area_size(62)
        .build_cartesian_2d(x_range, 0f64..y_max)
        .map_err(|e| err(&e))?;
    let label_of = |x: &f64| {
        let i = x.round();
        if (x - i).abs() > 1e-6 || i < 0.0 {
            return String::new();
        }
        names
            .get(i as usize)
            .map_or(String::new(), |s| s.to_string())
    };
    chart
        .configure_mesh()
        .disable_x_mesh()
        .light_line_style(TRANSPARENT)
        .bold_line_style(BLACK.mix(0.12))
        .x_labels(n)
        .x_label_formatter(&label_of)
        .y_label_formatter(&|y| short(*y))
        .x_desc("variant")
        .y_desc(y_desc)
        .label_style((FONT, 13))
        .axis_desc_style((FONT, 14))
        .draw()
        .map_err(|e| err(&e))?;
    let width = 0.7 / series.len() as f64;
    let mut placed = Vec::new();
    for (si, s) in series.iter().enumerate() {
        let offset = -0.35 + width * si as f64;
        let bars: Vec<(f64, f64, f64, RGBColor)> = s
            .stats
            .iter()
            .enumerate()
            .filter_map(|(i, st)| {
                let (mean, sd) = (*st)?;
                let colour = s
                    .colour
                    .unwrap_or(VARIANT_COLOURS[i % VARIANT_COLOURS.len()]);
                Some((i as f64 + offset, mean, sd, colour))
            })
            .collect();
        let drawn = chart
            .draw_series(bars.iter().map(|&(x, mean, _, c)| {
                Rectangle::new([(x + 0.02, 0.0), (x + width - 0.02, mean)], c.filled())
            }))
            .map_err(|e| err(&e))?;
        if let (Some(name), Some(c)) = (s.legend, s.colour) {
            drawn
                .label(name)
                .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], c.filled()));
        }
        chart
            .draw_series(bars.iter().map(|&(x, mean, sd, _)| {
                let mid = x + width / 2.0;
                ErrorBar::new_vertical(
                    mid,
                    (mean - sd).max(0.0),
                    mean,
                    mean + sd,
                    BLACK.stroke_width(1),
                    8,
                )
            }))
            .map_err(|e| err(&e))?;
        if labels {
            let base = ratio_base(s);
            let style =
                TextStyle::from((FONT, 12).into_font()).pos(Pos::new(HPos::Center, VPos::Bottom));
            chart
                .draw_series(bars.iter().map(|&(x, mean, sd, _)| {
                    let at = (x + width / 2.0, mean + sd + y_max * 0.02);
                    Text::new(bar_label(mean, base), at, style.clone())
                }))
                .map_err(|e| err(&e))?;
        }
        for (i, value, mark) in marked(s.metric) {
            let (x, y) = chart.backend_coord(&(i as f64 + offset + width / 2.0, value));
            placed.push(Placed {
                x,
                y,
                mark: mark.clone(),
            });
        }
    }
    if series.iter().any(|s| s.legend.is_some()) {
        draw_legend(&mut chart)?;
    }
    Ok(placed)
}

/// The legend of a figure's series, upper right, in the report's style.
pub(crate) fn draw_legend<'a, DB: DrawingBackend + 'a, CT: CoordTranslate>(
    chart: &mut ChartContext<'a, DB, CT>,
) -> Result<(), FigureError> {
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.4))
        .label_font((FONT, 13))
        .draw()
        .map_err(|e| FigureError(e.to_string()))
}

/// Whether any variant has a value of `m` for `workload`.
fn has(workload: &str, variants: &[VariantSamples], m: Metric) -> bool {
    variants
        .iter()
        .any(|v| !v.samples.get(workload, m).is_empty())
}

/// Draws the figure of one workload as a standalone SVG document.
pub fn workload_figure(workload: &str, variants: &[VariantSamples]) -> Result<String, FigureError> {
    let one = |m: Metric| Series {
        metric: m,
        legend: None,
        stats: stats(workload, variants, m),
        colour: None,
    };
    let mut panels: Vec<(&str, &str, Vec<Series>)> = vec![
        (
            "Transaction rate",
            "transactions/s [tr/s]",
            vec![one(Metric::RateTps)],
        ),
        (
            "Latency",
            "latency [µs]",
            vec![
                Series {
                    metric: Metric::LatencyP50Us,
                    legend: Some("p50"),
                    stats: stats(workload, variants, Metric::LatencyP50Us),
                    colour: Some(P50_COLOUR),
                },
                Series {
                    metric: Metric::LatencyP99Us,
                    legend: Some("p99"),
                    stats: stats(workload, variants, Metric::LatencyP99Us),
                    colour: Some(P99_COLOUR),
                },
            ],
        ),
    ];
    // A paced class's generator lag beside its latency: how much of the
    // tail is the generator's reads off one axis.
    if has(workload, variants, Metric::GeneratorLagP99Us) {
        panels[1].2.push(Series {
            metric: Metric::GeneratorLagP99Us,
            legend: Some("generator lag p99"),
            stats: stats(workload, variants, Metric::GeneratorLagP99Us),
            colour: Some(LAG_COLOUR),
        });
    }
    if has(workload, variants, Metric::CpuClientUsPerTran) {
        panels.push((
            "Client CPU per transaction",
            "CPU [µs/tr]",
            vec![one(Metric::CpuClientUsPerTran)],
        ));
    }
    if has(workload, variants, Metric::CpuServerUsPerTran) {
        panels.push((
            "Server CPU per transaction",
            "CPU [µs/tr]",
            vec![one(Metric::CpuServerUsPerTran)],
        ));
    }
    let rows = panels.len().div_ceil(2);
    let mut svg = String::new();
    let mut placed = Vec::new();
    {
        let root = SVGBackend::with_string(&mut svg, (PANEL_W * 2, PANEL_H * rows as u32))
            .into_drawing_area();
        root.fill(&WHITE).map_err(|e| FigureError(e.to_string()))?;
        let areas = root.split_evenly((rows, 2));
        for (area, (title, y_desc, series)) in areas.iter().zip(&panels) {
            placed.extend(panel(area, title, y_desc, variants, series)?);
        }
        root.present().map_err(|e| FigureError(e.to_string()))?;
    }
    Ok(with_marks(svg, &placed))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures;

    #[test]
    fn short_ticks() {
        assert_eq!(short(1_500_000.0), "1.5M");
        assert_eq!(short(45_000.0), "45k");
        assert_eq!(short(1_500.0), "1.5k");
        assert_eq!(short(150.0), "150");
        assert_eq!(short(1.5), "1.5");
    }

    #[test]
    fn figure_has_panels_and_units() {
        let rec = |rate: f64| {
            fixtures::with_cpu(
                &fixtures::record("RR1(1B/1B)", rate, 10.0, 30.0, 0.0),
                4.0,
                3.0,
            )
        };
        let (a, b) = (
            Samples::collect(&[rec(100.0), rec(110.0)]),
            Samples::collect(&[rec(120.0)]),
        );
        let svg = workload_figure(
            "RR1(1B/1B)",
            &[
                VariantSamples {
                    name: "base",
                    samples: &a,
                    marks: Vec::new(),
                },
                VariantSamples {
                    name: "tuned",
                    samples: &b,
                    marks: vec![RunMark {
                        title: "run 7 (tuned): background_load".into(),
                        footnote: 1,
                        incomplete: false,
                        values: vec![(Metric::RateTps, 121.0)],
                    }],
                },
            ],
        )
        .unwrap();
        assert!(svg.starts_with("<svg"), "{}", &svg[..80]);
        for text in [
            "Transaction rate",
            "[tr/s]",
            "[µs]",
            "[µs/tr]",
            "Server CPU",
            "p99",
            "tuned",
            "<title>run 7 (tuned): background_load</title>",
            "[1]",
        ] {
            assert!(svg.contains(text), "missing {text}");
        }
        assert!(svg.trim_end().ends_with("</svg>"));
    }

    #[test]
    fn bars_ten_times_apart_get_their_values() {
        let s = |m: f64| Series {
            metric: Metric::RateTps,
            legend: None,
            stats: vec![Some((m, 0.0)), Some((m * 82.0, 0.0))],
            colour: None,
        };
        assert!(needs_labels(&[s(98.0)]));
        assert_eq!(ratio_base(&s(98.0)), Some(98.0));
        let close = |m: f64| Series {
            stats: vec![Some((m, 0.0)), Some((m * 1.04, 0.0))],
            ..s(1.0)
        };
        assert!(!needs_labels(&[close(98.0)]));
        // p50 and p99 80× apart: values printed, but no ratio across series.
        assert!(needs_labels(&[close(52.0), close(4_100.0)]));
        assert_eq!(ratio_base(&close(52.0)), None);
        assert_eq!(bar_label(98.0, Some(98.0)), "98");
        assert_eq!(bar_label(8036.0, Some(98.0)), "8.0k (82×)");
        assert_eq!(bar_label(4100.0, None), "4.1k");
    }
}
