//! The table `study` prints on stdout when it ends (progress and warnings
//! stay on stderr): one row per class of every step it ran, with the step,
//! variant, repetition, stored run id and whether the run was complete, then
//! the run table's columns ([`crate::run_table`]), fitted to the terminal.

use stackbench_record::{ClassResult, RunRecord};

use crate::run_table::{self, Column, Layout};

/// One step that ran: where it sits in the plan and what it measured.
pub struct StepRun {
    /// Position in the plan, from 1.
    pub step: usize,
    pub variant: String,
    pub repetition: u32,
    /// The stored run's id (`None` with `--no-store`).
    pub run_id: Option<i64>,
    pub record: RunRecord,
}

/// A class of a step, the table's row.
struct Row<'a> {
    run: &'a StepRun,
    class: &'a ClassResult,
}

/// The summary table of the steps that ran; empty when none did.
pub fn study_summary(runs: &[StepRun], layout: Layout) -> String {
    let rows: Vec<Row<'_>> = runs
        .iter()
        .flat_map(|run| {
            run.record
                .classes
                .iter()
                .map(move |class| Row { run, class })
        })
        .collect();
    if rows.is_empty() {
        return String::new();
    }
    fn col<'a>(
        header: &'a str,
        key: bool,
        cell: impl Fn(&Row) -> String + 'a,
    ) -> Column<'a, Row<'a>> {
        let left = matches!(header, "variant" | "complete" | "class");
        Column {
            header,
            key,
            left,
            cell: Box::new(cell),
        }
    }
    let mut columns = vec![
        col("step", true, |r| r.run.step.to_string()),
        col("variant", true, |r| r.run.variant.clone()),
        col("rep", false, |r| r.run.repetition.to_string()),
        col("run", false, |r| {
            r.run.run_id.map_or("-".to_string(), |id| id.to_string())
        }),
        // Incomplete runs are kept out of every aggregate: say which.
        col("complete", true, |r| {
            if r.run.record.complete { "yes" } else { "NO" }.to_string()
        }),
    ];
    for c in run_table::class_columns() {
        // The study's rows are many: the clients are in the notation.
        let key = c.key && c.header != "clients";
        let cell = c.cell;
        columns.push(col(c.header, key, move |r| cell(r.class)));
    }
    run_table::fit(&columns, &rows, layout)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures;

    fn runs() -> Vec<StepRun> {
        let mut incomplete = fixtures::record("RR10(4kB/4kB)", 12_000.0, 60.0, 180.0, 1e9);
        incomplete.complete = false;
        vec![
            StepRun {
                step: 1,
                variant: "A".into(),
                repetition: 1,
                run_id: Some(7),
                record: fixtures::record("RR10(4kB/4kB)", 12_345.6, 61.0, 180.0, 1e9),
            },
            StepRun {
                step: 2,
                variant: "B".into(),
                repetition: 1,
                run_id: None,
                record: incomplete,
            },
        ]
    }

    #[test]
    fn one_row_per_step_class_marking_incomplete_runs() {
        let text = study_summary(&runs(), Layout::NOT_A_TERMINAL);
        let rows: Vec<Vec<&str>> = text
            .lines()
            .filter(|l| l.contains("RR10(4kB/4kB)"))
            .map(|l| l.split(['│', '┆']).map(str::trim).collect())
            .collect();
        assert_eq!(rows.len(), 2, "{text}");
        assert_eq!(rows[0][1..5], ["1", "A", "yes", "RR10(4kB/4kB)"], "{text}");
        assert_eq!(rows[1][1..5], ["2", "B", "NO", "RR10(4kB/4kB)"], "{text}");
        assert!(text.lines().all(|l| l.chars().count() <= 100), "{text}");
        assert_eq!(study_summary(&[], Layout::NOT_A_TERMINAL), "");
    }
}
