//! The per-class table of `run`, `results show` and `study`, fitted to a
//! width. All 17 columns take 186 characters, so at 80 every row wrapped:
//! by default the key columns are shown (class, clients, tr/s, p50, p99, CPU
//! µs/tr per side, errors), then as many of the others as still fit, in the
//! order of [`OPTIONAL`]; a line under the table names those left out.
//! `wide` shows every column whatever the width.

use comfy_table::{presets::UTF8_FULL_CONDENSED, Cell, CellAlignment, Table};
use stackbench_model::size::MIB;
use stackbench_record::ClassResult;
use stackbench_record::CpuAttribution;

/// The width output is fitted to, and whether every column is wanted anyway.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    /// Terminal columns.
    pub width: usize,
    /// `--wide`: every column, even past the width.
    pub wide: bool,
}

impl Layout {
    /// Output that is not going to a terminal (a file, a pipe, a test):
    /// 100 columns hold the key columns of a mix's notation and read well in
    /// a review.
    pub const NOT_A_TERMINAL: Layout = Layout {
        width: 100,
        wide: false,
    };
}

/// One column: its header, whether it is always shown, whether its text is
/// left-aligned (words) rather than right-aligned (figures), and its text
/// for a row.
pub struct Column<'a, R> {
    pub header: &'a str,
    pub key: bool,
    pub left: bool,
    pub cell: Box<dyn Fn(&R) -> String + 'a>,
}

/// `v` with `digits` decimals, "-" when there is none.
pub fn opt(v: Option<f64>, digits: usize) -> String {
    v.map_or_else(|| "-".to_string(), |v| format!("{v:.digits$}"))
}

fn cpu_us_per_tran(c: &ClassResult, client: bool) -> Option<f64> {
    let cpu = c.cpu.as_ref()?;
    let side = if client { &cpu.client } else { &cpu.server };
    side.as_ref()?.cpu_us_per_tran
}

/// A side's CPU µs/tr cell: "mix" when that side's CPU is the whole mix's
/// (there is no per-class figure; the line under the table gives the mix's).
fn cpu_cell(c: &ClassResult, client: bool) -> String {
    let side = c
        .cpu
        .as_ref()
        .and_then(|cpu| if client { &cpu.client } else { &cpu.server }.as_ref());
    match side {
        Some(s) if s.attribution == CpuAttribution::Mix => "mix".to_string(),
        _ => opt(cpu_us_per_tran(c, client), 2),
    }
}

fn util_pct(c: &ClassResult, client: bool) -> Option<f64> {
    let cpu = c.cpu.as_ref()?;
    let side = if client { &cpu.client } else { &cpu.server };
    side.as_ref().map(|s| s.util_pct)
}

fn latency(c: &ClassResult, pick: fn(&stackbench_record::LatencyUs) -> f64) -> String {
    opt(c.latency_us.as_ref().map(pick), 1)
}

/// Headers of the columns that are not key columns, most wanted first: the
/// order in which they are added while the table still fits.
pub const OPTIONAL: [&str; 9] = [
    "trans",
    "p90 µs",
    "mean µs",
    "max µs",
    "p99.9 µs",
    "tx MB/s",
    "rx MB/s",
    "cli util%",
    "srv util%",
];

/// The run table's columns, in the order they are printed.
pub fn class_columns<'a>() -> Vec<Column<'a, ClassResult>> {
    fn col<'a>(
        header: &'a str,
        key: bool,
        cell: impl Fn(&ClassResult) -> String + 'a,
    ) -> Column<'a, ClassResult> {
        Column {
            header,
            key,
            left: header == "class",
            cell: Box::new(cell),
        }
    }
    let mb = |b: f64| format!("{:.2}", b / MIB as f64);
    vec![
        col("class", true, |c| c.notation.clone()),
        col("clients", true, |c| c.clients.to_string()),
        col("trans", false, |c| c.transactions.to_string()),
        col("tr/s", true, |c| format!("{:.1}", c.rate_tps)),
        col("mean µs", false, |c| latency(c, |l| l.mean)),
        col("p50 µs", true, |c| latency(c, |l| l.p50)),
        col("p90 µs", false, |c| latency(c, |l| l.p90)),
        col("p99 µs", true, |c| latency(c, |l| l.p99)),
        col("p99.9 µs", false, |c| latency(c, |l| l.p999)),
        col("max µs", false, |c| latency(c, |l| l.max)),
        col("tx MB/s", false, move |c| mb(c.tx_bytes_per_s)),
        col("rx MB/s", false, move |c| mb(c.rx_bytes_per_s)),
        col("errors", true, |c| c.errors.to_string()),
        col("cli µs/tr", true, |c| cpu_cell(c, true)),
        col("srv µs/tr", true, |c| cpu_cell(c, false)),
        col("cli util%", false, |c| opt(util_pct(c, true), 1)),
        col("srv util%", false, |c| opt(util_pct(c, false), 1)),
    ]
}

/// The table of `rows`, fitted to `layout` (see the module doc), with the
/// line naming the columns left out, if any.
pub fn fit<R>(columns: &[Column<'_, R>], rows: &[R], layout: Layout) -> String {
    let mut shown: Vec<bool> = columns.iter().map(|c| c.key || layout.wide).collect();
    if !layout.wide {
        // OPTIONAL's order first, then any other column in table order.
        let listed = OPTIONAL
            .iter()
            .filter_map(|h| columns.iter().position(|c| c.header == *h));
        let others = (0..columns.len()).filter(|&i| !OPTIONAL.contains(&columns[i].header));
        let order: Vec<usize> = listed.chain(others).filter(|&i| !shown[i]).collect();
        for i in order {
            shown[i] = true;
            if width_of(&render(columns, rows, &shown, false)) > layout.width {
                shown[i] = false;
            }
        }
    }
    // The key columns alone may still be too wide (a long mix): one space
    // less per cell before giving up; cells are never wrapped, as a number
    // split over two lines misreads.
    let mut out = render(columns, rows, &shown, false);
    if !layout.wide && width_of(&out) > layout.width {
        out = render(columns, rows, &shown, true);
    }
    out.push('\n');
    let left_out: Vec<&str> = columns
        .iter()
        .zip(&shown)
        .filter(|(_, s)| !**s)
        .map(|(c, _)| c.header)
        .collect();
    if !left_out.is_empty() {
        let first = format!("left out to fit {} columns:", layout.width);
        // Headers (`p99.9 µs`) are not split over two lines.
        let mut items: Vec<String> = left_out.iter().map(|h| format!("{h},")).collect();
        if let Some(last) = items.last_mut() {
            last.pop();
            last.push(';');
        }
        items.extend(["--wide", "shows", "them"].map(String::from));
        out.push_str(&wrap_words(
            &first,
            items.iter().map(String::as_str),
            layout.width,
            2,
        ));
    }
    out
}

fn render<R>(columns: &[Column<'_, R>], rows: &[R], shown: &[bool], compact: bool) -> String {
    let picked: Vec<&Column<'_, R>> = columns
        .iter()
        .zip(shown)
        .filter(|(_, s)| **s)
        .map(|(c, _)| c)
        .collect();
    let mut table = Table::new();
    table.load_style(UTF8_FULL_CONDENSED);
    table.set_header(picked.iter().map(|c| c.header));
    if compact {
        table.column_iter_mut().for_each(|c| {
            c.set_padding((1, 0));
        });
    }
    for row in rows {
        table.add_row(picked.iter().map(|c| {
            let cell = Cell::new((c.cell)(row));
            if c.left {
                cell
            } else {
                cell.set_alignment(CellAlignment::Right)
            }
        }));
    }
    table.to_string()
}

/// Widest line, in characters (the table's box characters and `µ` are one
/// column each).
fn width_of(text: &str) -> usize {
    text.lines().map(|l| l.chars().count()).max().unwrap_or(0)
}

/// `first`, then `words` separated by spaces, wrapped to `width` columns
/// (a word is never split), each line after the first indented by `indent`
/// spaces: the settings block and the note of columns left out.
pub fn wrap_words<'a>(
    first: &str,
    words: impl IntoIterator<Item = &'a str>,
    width: usize,
    indent: usize,
) -> String {
    let mut out = first.to_string();
    let mut line = first.chars().count();
    for word in words {
        let len = word.chars().count();
        if line > indent && line + 1 + len > width {
            out.push('\n');
            out.push_str(&" ".repeat(indent));
            line = indent;
        } else {
            out.push(' ');
            line += 1;
        }
        out.push_str(word);
        line += len;
    }
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures;

    fn classes() -> Vec<ClassResult> {
        fixtures::record("RR10(4kB/4kB)+STR3(1B/20MB)", 12_345.6, 61.0, 180.0, 1e9).classes
    }

    #[test]
    fn the_table_fits_the_width_and_names_what_it_left_out() {
        for width in [80, 100, 120] {
            let layout = Layout { width, wide: false };
            let text = fit(&class_columns(), &classes(), layout);
            assert!(width_of(&text) <= width, "{width}:\n{text}");
            assert!(text.contains("tr/s"), "{text}");
            for key in ["class", "clients", "tr/s", "p50 µs", "p99 µs", "errors"] {
                assert!(text.contains(key), "{key} at {width}:\n{text}");
            }
            assert!(
                text.contains("cli µs/tr") && text.contains("srv µs/tr"),
                "{text}"
            );
            assert!(text.contains("RR10(4kB/4kB)"), "{text}");
        }
        let narrow = fit(
            &class_columns(),
            &classes(),
            Layout {
                width: 80,
                wide: false,
            },
        );
        assert!(narrow.contains("left out to fit 80 columns: "), "{narrow}");
        assert!(narrow.contains("--wide shows them"), "{narrow}");
    }

    #[test]
    fn wide_shows_every_column_past_the_width() {
        let text = fit(
            &class_columns(),
            &classes(),
            Layout {
                width: 80,
                wide: true,
            },
        );
        for c in class_columns() {
            assert!(text.contains(c.header), "{}:\n{text}", c.header);
        }
        assert!(width_of(&text) > 150, "{text}");
        assert!(!text.contains("left out"), "{text}");
        // A terminal wide enough shows them all without --wide.
        let roomy = fit(
            &class_columns(),
            &classes(),
            Layout {
                width: 250,
                wide: false,
            },
        );
        assert!(!roomy.contains("left out"), "{roomy}");
    }

    #[test]
    fn words_wrap_at_the_width_with_an_indent() {
        let words = ["duration=10s", "warmup=2s", "threads=1", "server_threads=1"];
        let text = wrap_words("settings:", words, 30, 2);
        assert_eq!(
            text,
            "settings: duration=10s\n  warmup=2s threads=1\n  server_threads=1\n"
        );
        assert!(text.lines().all(|l| l.chars().count() <= 30), "{text}");
    }
}
