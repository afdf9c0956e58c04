//! Which stored runs may enter an aggregate. A run that ended early (SIGTERM,
//! responder lost, I/O failure) is stored with `complete: false` and holds
//! what was measured until then — often 0 transactions — so averaging it in
//! halves a bar and stretches its error bar to 0. Every mean, error bar,
//! verdict, sweep point and fit of the report is built from the complete runs
//! only; the incomplete ones are still shown (marked, with their reason), and
//! the report says how many it left out and why ([`left_out_line`]).

use crate::store::StoredRun;

/// The runs of `runs` split into (complete, incomplete), order kept.
pub fn split_complete<'a>(
    runs: impl IntoIterator<Item = &'a StoredRun>,
) -> (Vec<&'a StoredRun>, Vec<&'a StoredRun>) {
    runs.into_iter().partition(|r| r.record.complete)
}

/// Why a run is incomplete, as the record says (or that it did not say);
/// the report and compare word it the same.
pub fn incomplete_reason(run: &StoredRun) -> String {
    reason_of(&run.record)
}

/// [`incomplete_reason`] of a bare record.
pub fn reason_of(record: &stackbench_record::RunRecord) -> String {
    record
        .incomplete_reason
        .clone()
        .unwrap_or_else(|| "no reason recorded".into())
}

/// The run's variant label (`default` when it has none).
pub fn variant_of(run: &StoredRun) -> &str {
    run.labels.get("variant").map_or("default", String::as_str)
}

/// "2 incomplete runs were left out of every mean, error bar, verdict and
/// fit: run 3 (nagle): interrupted by SIGTERM; run 9 (nodelay): …", or `None`
/// when every run finished.
pub fn left_out_line(incomplete: &[&StoredRun]) -> Option<String> {
    if incomplete.is_empty() {
        return None;
    }
    let (n, noun, verb) = match incomplete.len() {
        1 => (1, "run", "was"),
        n => (n, "runs", "were"),
    };
    let each: Vec<String> = incomplete
        .iter()
        .map(|r| format!("run {} ({}): {}", r.id, variant_of(r), incomplete_reason(r)))
        .collect();
    Some(format!(
        "{n} incomplete {noun} {verb} left out of every mean, error bar, verdict and fit: {}.",
        each.join("; ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{environment, record};

    fn run(id: i64, complete: bool) -> StoredRun {
        let mut record = record("RR1(1B/1B)", 10.0, 1.0, 2.0, 0.0);
        record.complete = complete;
        if !complete {
            record.incomplete_reason = Some("interrupted".into());
        }
        StoredRun {
            id,
            stored_unix_s: 0.0,
            labels: [("variant".to_string(), "a".to_string())].into(),
            record,
            env: environment("6.6.0"),
        }
    }

    #[test]
    fn splits_and_says_what_was_left_out() {
        let runs = [run(1, true), run(2, false), run(3, true)];
        let (done, cut) = split_complete(&runs);
        assert_eq!(done.iter().map(|r| r.id).collect::<Vec<_>>(), [1, 3]);
        assert_eq!(cut.len(), 1);
        assert_eq!(
            left_out_line(&cut).unwrap(),
            "1 incomplete run was left out of every mean, error bar, verdict and fit: run 2 (a): interrupted."
        );
        assert_eq!(left_out_line(&done[..0]), None);
    }
}
