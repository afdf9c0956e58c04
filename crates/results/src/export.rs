//! Views of stored runs for `stackbench results`: the list table, one run in
//! detail, and exports as JSON, CSV (one row per run and class), Markdown and
//! the flat table scripts read (`--flat`). Pure functions from runs to text.

use comfy_table::{presets, Table};
use stackbench_record::{flat, RunRecord};

use crate::metric::{class_key, Metric};
use crate::run_table::{self, Layout};
use crate::store::{Labels, RunSummary, StoredRun};

/// `2024-05-01 12:00:00Z` from seconds since the Unix epoch (UTC).
pub fn format_utc(unix_s: f64) -> String {
    let secs = unix_s.max(0.0) as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Labels other than the ones shown in their own columns.
fn other_labels(labels: &Labels) -> String {
    labels
        .iter()
        .filter(|(k, _)| !matches!(k.as_str(), "study" | "variant" | "workload"))
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The table of `stackbench results list`.
pub fn render_list(runs: &[RunSummary]) -> String {
    if runs.is_empty() {
        return "no stored runs match\n".to_string();
    }
    let mut t = Table::new();
    t.load_style(presets::UTF8_FULL_CONDENSED);
    t.set_header([
        "ID",
        "Started",
        "Study",
        "Variant",
        "Workloads",
        "Complete",
        "Labels",
    ]);
    for r in runs {
        t.add_row([
            r.id.to_string(),
            format_utc(r.started_unix_s),
            r.study.clone().unwrap_or_default(),
            r.variant.clone().unwrap_or_default(),
            r.workloads.clone(),
            match (&r.error, r.complete) {
                (Some(_), _) => "UNREADABLE",
                (None, true) => "yes",
                (None, false) => "NO",
            }
            .to_string(),
            other_labels(&r.labels),
        ]);
    }
    format!("{t}\n")
}

/// One run in detail (`stackbench results show ID`): its labels,
/// environment and settings, and the run table, fitted to `layout` as
/// `run` prints it.
pub fn render_show(run: &StoredRun, layout: Layout) -> String {
    let r = &run.record;
    let mut out = format!(
        "run {}  started {}  stackbench {}  {}\n",
        run.id,
        format_utc(r.started_unix_s),
        r.stackbench_version,
        if r.complete {
            "complete".to_string()
        } else {
            format!(
                "INCOMPLETE: {}",
                r.incomplete_reason.as_deref().unwrap_or("no reason given")
            )
        }
    );
    let labels: Vec<String> = run.labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
    out.push_str(&format!("labels: {}\n", labels.join(" ")));
    out.push_str(&format!("environment: {}\n", run.env.summary()));
    if let Some(g) = &run.env.guest {
        out.push_str(&format!("{}\n", g.summary()));
    }
    out.push_str(&crate::output::settings_block(r, layout.width));
    let mut columns = run_table::class_columns();
    columns[0].cell = Box::new(class_key);
    out.push_str(&run_table::fit(&columns, &r.classes, layout));
    out
}

/// Runs as a JSON array of `{id, labels, record, env}`.
pub fn export_json(runs: &[StoredRun]) -> String {
    serde_json::to_string_pretty(runs).expect("stored runs serialize")
}

const FLAT_HEADER: [&str; 15] = [
    "id",
    "started_utc",
    "study",
    "variant",
    "labels",
    "complete",
    "workload",
    "class",
    "transactions",
    "rate_tps",
    "latency_p50_us",
    "latency_p99_us",
    "cpu_client_us_per_tran",
    "cpu_server_us_per_tran",
    "errors",
];

/// One row per run and class, every value as text (unit in the column name).
fn flat_rows(runs: &[StoredRun]) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    for run in runs {
        let r = &run.record;
        for c in &r.classes {
            let raw = |m: Metric| m.value(c).map_or(String::new(), |v| v.to_string());
            rows.push(vec![
                run.id.to_string(),
                format_utc(r.started_unix_s),
                run.labels.get("study").cloned().unwrap_or_default(),
                run.labels.get("variant").cloned().unwrap_or_default(),
                other_labels(&run.labels),
                r.complete.to_string(),
                c.workload.clone(),
                c.notation.clone(),
                c.transactions.to_string(),
                raw(Metric::RateTps),
                raw(Metric::LatencyP50Us),
                raw(Metric::LatencyP99Us),
                raw(Metric::CpuClientUsPerTran),
                raw(Metric::CpuServerUsPerTran),
                c.errors.to_string(),
            ]);
        }
    }
    rows
}

/// Runs as CSV (RFC 4180 quoting), one row per run and class.
pub fn export_csv(runs: &[StoredRun]) -> String {
    crate::output::csv_document(&FLAT_HEADER, flat_rows(runs))
}

/// Runs as a Markdown table, one row per run and class.
pub fn export_markdown(runs: &[StoredRun]) -> String {
    let mut out = format!(
        "| {} |\n|{}\n",
        FLAT_HEADER.join(" | "),
        "---|".repeat(FLAT_HEADER.len())
    );
    for row in flat_rows(runs) {
        let cells: Vec<String> = row.iter().map(|c| c.replace('|', "\\|")).collect();
        out.push_str(&format!("| {} |\n", cells.join(" | ")));
    }
    out
}

/// `results export --flat` as CSV: the flat table of `stackbench_record::flat`
/// (one row per class per run, units in the column names), a header line
/// first. `runs` pairs each record with the name of its `run` column.
pub fn export_flat_csv(runs: &[(String, &RunRecord)]) -> String {
    let columns = flat::columns();
    let mut w = csv::Writer::from_writer(Vec::new());
    // Writing to a Vec cannot fail.
    let _ = w.write_record(columns.iter().map(|c| c.name.as_str()));
    for (name, record) in runs {
        for row in flat::rows(name, record) {
            let _ = w.write_record(row.iter().map(flat::cell_text));
        }
    }
    String::from_utf8(w.into_inner().unwrap_or_default()).unwrap_or_default()
}

/// `results export --flat --format json`: the same rows as JSON lines, one
/// object per row with the columns as keys (null: not measured).
pub fn export_flat_json_lines(runs: &[(String, &RunRecord)]) -> String {
    let columns = flat::columns();
    let mut out = String::new();
    for (name, record) in runs {
        for row in flat::rows(name, record) {
            out.push_str(&flat::row_json(&columns, &row));
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_dates() {
        assert_eq!(format_utc(0.0), "1970-01-01 00:00:00Z");
        assert_eq!(format_utc(951_782_400.0), "2000-02-29 00:00:00Z");
        assert_eq!(format_utc(1_714_564_800.5), "2024-05-01 12:00:00Z");
    }

    #[test]
    fn csv_quotes_only_when_needed() {
        let rows = [["RR1(1B/1B)", "a,b", "say \"hi\"", "two\nlines"]];
        assert_eq!(
            crate::output::csv_document(&["w", "x", "y", "z"], rows),
            "w,x,y,z\nRR1(1B/1B),\"a,b\",\"say \"\"hi\"\"\",\"two\nlines\"\n"
        );
    }
}
