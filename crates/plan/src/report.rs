//! What every plan prints: a title, tables of rows (the first one usually
//! "quantity | formula with the numbers substituted | value"), notes and
//! warnings; plus the number formatting those rows share. Pure data: the binary
//! draws the tables and serialises the JSON envelope.

use serde::Serialize;

/// Version of every `stackbench plan ... --json` layout. Adding a field is not
/// a change; renaming or changing the meaning of one bumps it.
pub const PLAN_SCHEMA_VERSION: u32 = 1;

/// The JSON document of one plan: version, which plan, its own fields, then
/// the report's notes and warnings.
#[derive(Debug, Serialize)]
pub struct Envelope<'a, T: Serialize> {
    pub schema_version: u32,
    /// The subcommand, e.g. `"cpu"`.
    pub plan: &'a str,
    #[serde(flatten)]
    pub body: &'a T,
    pub notes: &'a [String],
    pub warnings: &'a [String],
}

impl<'a, T: Serialize> Envelope<'a, T> {
    pub fn new(plan: &'a str, body: &'a T, report: &'a Report) -> Self {
        Envelope {
            schema_version: PLAN_SCHEMA_VERSION,
            plan,
            body,
            notes: &report.notes,
            warnings: &report.warnings,
        }
    }
}

/// One table of the human output.
#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    /// Printed above the table, when present.
    pub caption: Option<String>,
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with the given column names.
    pub fn new(header: &[&str]) -> Self {
        Table {
            caption: None,
            header: header.iter().map(|h| h.to_string()).collect(),
            rows: Vec::new(),
        }
    }

    /// The usual "quantity | formula | value" table.
    pub fn steps() -> Self {
        Table::new(&["quantity", "formula", "value"])
    }

    pub fn with_caption(mut self, caption: impl Into<String>) -> Self {
        self.caption = Some(caption.into());
        self
    }

    /// Appends a row; its cells are converted to strings.
    pub fn row<S: Into<String>>(&mut self, cells: impl IntoIterator<Item = S>) {
        self.rows.push(cells.into_iter().map(Into::into).collect());
    }
}

/// The human form of one plan.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Report {
    pub title: String,
    pub tables: Vec<Table>,
    /// Conclusions and reminders, printed after the tables.
    pub notes: Vec<String>,
    /// Things about the input or the fit the reader should act on.
    pub warnings: Vec<String>,
}

/// Rounds `x` to `digits` significant digits and prints it without trailing
/// zeros; numbers with more integer digits than that print as whole numbers
/// (`sig(1884.2, 3)` = `1884`, `sig(0.0532443, 3)` = `0.0532`).
pub fn sig(x: f64, digits: usize) -> String {
    if !x.is_finite() {
        return if x.is_nan() {
            "n/a".into()
        } else if x > 0.0 {
            "∞".into()
        } else {
            "-∞".into()
        };
    }
    if x == 0.0 {
        return "0".into();
    }
    let magnitude = x.abs().log10().floor() as i64;
    let decimals = (digits as i64 - 1 - magnitude).max(0) as usize;
    let text = format!("{x:.decimals$}");
    let text = if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        text
    };
    if text == "-0" {
        "0".into()
    } else {
        text
    }
}

/// A number as typed in a formula: up to 9 significant digits, so inputs such
/// as 0.000199666 print back unchanged.
pub fn num(x: f64) -> String {
    sig(x, 9)
}

/// A percentage with `digits` significant digits and a `%` sign.
pub fn pct(x: f64, digits: usize) -> String {
    format!("{}%", sig(x, digits))
}

/// A duration in seconds in the largest unit that keeps it ≥ 1 (s, ms, us, ns).
pub fn duration(seconds: f64, digits: usize) -> String {
    let abs = seconds.abs();
    let (scale, unit) = if abs >= 1.0 || abs == 0.0 {
        (1.0, "s")
    } else if abs >= 1e-3 {
        (1e3, "ms")
    } else if abs >= 1e-6 {
        (1e6, "us")
    } else {
        (1e9, "ns")
    };
    format!("{}{unit}", sig(seconds * scale, digits))
}

/// Bytes in the largest binary unit that keeps the number ≥ 1 (B, kB, MB, GB).
pub fn bytes(b: f64, digits: usize) -> String {
    const UNITS: [(f64, &str); 4] = [
        (1_073_741_824.0, "GB"),
        (1_048_576.0, "MB"),
        (1024.0, "kB"),
        (1.0, "B"),
    ];
    let (scale, unit) = UNITS
        .iter()
        .find(|(s, _)| b.abs() >= *s)
        .copied()
        .unwrap_or((1.0, "B"));
    format!("{}{unit}", sig(b / scale, digits))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn significant_digits() {
        assert_eq!(sig(0.053244267, 3), "0.0532");
        assert_eq!(sig(1.331106, 3), "1.33");
        assert_eq!(sig(1884.2, 3), "1884");
        assert_eq!(sig(52.585, 4), "52.59");
        assert_eq!(sig(2.0, 3), "2");
        assert_eq!(sig(0.0, 3), "0");
        assert_eq!(sig(-0.0001, 2), "-0.0001");
        assert_eq!(num(0.000199666), "0.000199666");
        assert_eq!(sig(f64::INFINITY, 3), "∞");
    }

    #[test]
    fn units() {
        assert_eq!(duration(0.000176, 3), "176us");
        assert_eq!(duration(0.273208, 4), "273.2ms");
        assert_eq!(duration(30.0, 3), "30s");
        assert_eq!(bytes(4096.0, 3), "4kB");
        assert_eq!(bytes(1.07 * 1_073_741_824.0, 3), "1.07GB");
        assert_eq!(bytes(12.0, 3), "12B");
    }
}
