//! Snapshots of `run`'s output formats (human table, CSV, JSON) for a fixed
//! record, so any change to a column, a unit or a field name shows in review.

use stackbench_results::{fixtures, output};

fn record() -> stackbench_metrics::RunRecord {
    let mut r = fixtures::record(
        "RR10(4kB/4kB)+STR3(1B/20MB)",
        12_345.6,
        61.0,
        180.0,
        1_790_000_000.0,
    );
    r.classes[1].rx_bytes_per_s = 3.5 * 1024.0 * 1024.0 * 1024.0;
    r
}

#[test]
fn human_table() {
    insta::assert_snapshot!(output::human(&record()));
}

#[test]
fn human_table_marks_an_incomplete_run() {
    let mut r = record();
    r.complete = false;
    r.incomplete_reason = Some("interrupted (Ctrl-C)".into());
    let text = output::human(&r);
    assert!(text.contains("INCOMPLETE: interrupted (Ctrl-C)"), "{text}");
}

#[test]
fn csv_rows() {
    insta::assert_snapshot!(output::csv(&record()));
}

#[test]
fn json_document() {
    insta::assert_snapshot!(output::json(&record()));
}
