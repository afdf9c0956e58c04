//! Runs drawn as single points over a figure (bars or sweep lines): an
//! incomplete run as a hollow red circle at its own value (it is not in the
//! aggregate), a warned run as an orange triangle with its note number.
//! Each carries an SVG `<title>` (the browser's tooltip) with the run id and
//! its warning codes or incomplete reason. plotters has no `<title>`
//! element, so the figures place marks with plotters' coordinate mapping and
//! [`with_marks`] writes them into the finished SVG.

use crate::metric::Metric;

pub(crate) const FONT: &str = "sans-serif";

/// One run drawn as a point over a figure.
#[derive(Debug, Clone, PartialEq)]
pub struct RunMark {
    /// The tooltip: run id, variant, and its warning codes or incomplete reason.
    pub title: String,
    /// The note number the report's measurement-quality table gives the run.
    pub footnote: usize,
    /// Incomplete runs are left out of the bars; warned runs are in them.
    pub incomplete: bool,
    /// The run's own value of each metric of the class drawn.
    pub values: Vec<(Metric, f64)>,
}

/// The colour of an incomplete run's hollow circle (Okabe–Ito vermilion).
pub const INCOMPLETE_COLOUR: &str = "#D55E00";
/// The fill of a warned run's triangle (Okabe–Ito orange, black outline).
pub const WARNED_COLOUR: &str = "#E69F00";

/// A mark placed in backend pixels, written into the SVG after plotters.
pub(crate) struct Placed {
    pub(crate) x: i32,
    pub(crate) y: i32,
    pub(crate) mark: RunMark,
}

/// Marks closer than this in both directions are drawn as one, so runs at
/// the same value do not pile their note numbers into an unreadable blot.
const MERGE_PX: i32 = 6;

/// Marks merged at one place: the first's position, every run's tooltip line
/// and note number.
struct Spot {
    x: i32,
    y: i32,
    incomplete: bool,
    titles: Vec<String>,
    notes: Vec<usize>,
}

impl Spot {
    fn svg(&self) -> String {
        let (x, y) = (self.x, self.y);
        let title = crate::doc::escape(&self.titles.join("\n"));
        let shape = if self.incomplete {
            format!(
                "<circle cx=\"{x}\" cy=\"{y}\" r=\"6\" fill=\"white\" fill-opacity=\"0.6\" stroke=\"{INCOMPLETE_COLOUR}\" stroke-width=\"2.5\"/>"
            )
        } else {
            format!(
                "<path d=\"M{x} {} L{} {} L{} {} Z\" fill=\"{WARNED_COLOUR}\" stroke=\"black\" stroke-width=\"1\"/>",
                y - 6,
                x - 6,
                y + 5,
                x + 6,
                y + 5
            )
        };
        let mut notes: Vec<String> = self.notes.iter().map(usize::to_string).collect();
        if notes.len() > 3 {
            notes.truncate(2);
            notes.push("…".into());
        }
        format!(
            "<g class=\"run-mark\"><title>{title}</title>{shape}<text x=\"{}\" y=\"{}\" font-family=\"{FONT}\" font-size=\"11\">[{}]</text></g>\n",
            x + 8,
            y + 4,
            notes.join(",")
        )
    }
}

/// The placed marks merged into spots (see [`MERGE_PX`]), in order.
fn spots(placed: &[Placed]) -> Vec<Spot> {
    let mut out: Vec<Spot> = Vec::new();
    for p in placed {
        let near = out.iter_mut().find(|s| {
            s.incomplete == p.mark.incomplete
                && (s.x - p.x).abs() <= MERGE_PX
                && (s.y - p.y).abs() <= MERGE_PX
        });
        match near {
            Some(s) => {
                if !s.notes.contains(&p.mark.footnote) {
                    s.titles.push(p.mark.title.clone());
                    s.notes.push(p.mark.footnote);
                }
            }
            None => out.push(Spot {
                x: p.x,
                y: p.y,
                incomplete: p.mark.incomplete,
                titles: vec![p.mark.title.clone()],
                notes: vec![p.mark.footnote],
            }),
        }
    }
    out
}

/// The SVG with the run marks written in before its closing tag.
pub(crate) fn with_marks(mut svg: String, placed: &[Placed]) -> String {
    if let Some(end) = svg.rfind("</svg>") {
        let marks: String = spots(placed).iter().map(Spot::svg).collect();
        svg.insert_str(end, &marks);
    }
    svg
}
