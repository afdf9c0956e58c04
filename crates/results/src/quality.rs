//! Measurement quality in the report: which runs of a study carry warnings
//! (`warnings[]` of the record: background_load, driver_saturated,
//! run_too_short, delayed_ack_stall, …) or ended early, numbered as notes.
//! The same numbers appear on the figures' marks ([`RunMark`]), in the
//! captions, and in the "Measurement quality" table of each variant, so a
//! reader can go from a suspicious point to the message saying what to change.

use stackbench_record::{ClassResult, WarningRecord};

use crate::complete::{incomplete_reason, variant_of};
use crate::doc::Block;
use crate::figure::RunMark;
use crate::metric::{class_key, Metric};
use crate::store::StoredRun;
use crate::sweep::figure::SweepMark;
use crate::sweep::{is_swept, Axis};

/// One run worth a note: warned, incomplete or both.
struct Note<'a> {
    number: usize,
    run: &'a StoredRun,
}

impl Note<'_> {
    /// The warnings that concern class `key` (a class's own, or the run's).
    fn warnings_for(&self, key: &str) -> Vec<&WarningRecord> {
        let classes = &self.run.record.classes;
        self.run
            .record
            .warnings
            .iter()
            .filter(|w| match &w.class {
                None => true,
                Some(c) => classes
                    .iter()
                    .any(|k| &k.notation == c && class_key(k) == key),
            })
            .collect()
    }

    /// The run drawn as a point on the figure of `class` (one of its
    /// classes); `None` when nothing concerns that class.
    fn mark(&self, class: &ClassResult) -> Option<RunMark> {
        let what = self.what(&class_key(class));
        if what.is_empty() {
            return None;
        }
        Some(RunMark {
            title: format!(
                "run {} ({}): {} — note [{}]",
                self.run.id,
                variant_of(self.run),
                what.join(", "),
                self.number
            ),
            footnote: self.number,
            incomplete: !self.run.record.complete,
            values: Metric::ALL
                .iter()
                .filter_map(|m| Some((*m, m.value(class)?)))
                .collect(),
        })
    }

    /// "incomplete: reason" and/or the warning codes, for a tooltip.
    fn what(&self, key: &str) -> Vec<String> {
        let mut what = Vec::new();
        if !self.run.record.complete {
            what.push(format!("incomplete: {}", incomplete_reason(self.run)));
        }
        let mut codes: Vec<&str> = Vec::new();
        for w in self.warnings_for(key) {
            if !codes.contains(&w.code.as_str()) {
                codes.push(&w.code);
            }
        }
        what.extend(codes.into_iter().map(String::from));
        what
    }
}

/// The noted runs of one study, numbered in the order given.
pub struct Quality<'a> {
    notes: Vec<Note<'a>>,
}

impl<'a> Quality<'a> {
    /// Numbers every run of `runs` that is incomplete or carries a warning.
    pub fn of(runs: impl IntoIterator<Item = &'a StoredRun>) -> Quality<'a> {
        let notes = runs
            .into_iter()
            .filter(|r| !r.record.complete || !r.record.warnings.is_empty())
            .enumerate()
            .map(|(i, run)| Note { number: i + 1, run })
            .collect();
        Quality { notes }
    }

    /// The marks of `variant`'s noted runs on the figure of class `key`.
    pub fn marks(&self, variant: &str, key: &str) -> Vec<RunMark> {
        self.notes
            .iter()
            .filter(|n| variant_of(n.run) == variant && !is_swept(&n.run.labels))
            .filter_map(|n| {
                let class = n.run.record.classes.iter().find(|c| class_key(c) == key)?;
                n.mark(class)
            })
            .collect()
    }

    /// The marks on the sweep figure of class number `class` of base
    /// workload `workload`: each noted swept run at its value of the axis.
    pub fn sweep_marks(&self, axis: &Axis, workload: &str, class: usize) -> Vec<SweepMark> {
        let dimension = format!("sweep.{}", axis.dimension);
        self.notes
            .iter()
            .filter(|n| is_swept(&n.run.labels))
            .filter(|n| n.run.labels.get("workload").map(String::as_str) == Some(workload))
            .filter_map(|n| {
                let x = axis.position(n.run.labels.get(&dimension)?)?;
                let mark = n.mark(n.run.record.classes.get(class)?)?;
                Some(SweepMark { x, mark })
            })
            .collect()
    }

    /// What the caption of class `key`'s figure says about warnings, given
    /// the complete runs the figure's bars are made of: that every one of
    /// them is warned (with the codes), or how warned runs are marked.
    pub fn caption(&self, key: &str, complete: &[&StoredRun]) -> Option<String> {
        let shown: Vec<&StoredRun> = complete
            .iter()
            .copied()
            .filter(|r| r.record.classes.iter().any(|c| class_key(c) == key))
            .collect();
        self.caption_of(&shown, Some(key)).map(|(all, codes)| {
            if all {
                all_warned(&codes)
            } else {
                format!(
                    "Warned runs ({}) are marked with a triangle and their note number.",
                    codes.join(", ")
                )
            }
        })
    }

    /// The caption's sentence for a figure drawn from `shown` (every class of
    /// them, as a sweep figure is) when every one of them is warned.
    pub fn all_warned_caption(&self, shown: &[&StoredRun]) -> Option<String> {
        match self.caption_of(shown, None)? {
            (true, codes) => Some(all_warned(&codes)),
            (false, _) => None,
        }
    }

    /// Whether every run of `shown` is noted, and the codes of those that
    /// are; `None` when none is.
    fn caption_of(&self, shown: &[&StoredRun], key: Option<&str>) -> Option<(bool, Vec<String>)> {
        let mut codes: Vec<String> = Vec::new();
        let mut all = !shown.is_empty();
        for r in shown {
            let what = self
                .notes
                .iter()
                .find(|n| n.run.id == r.id)
                .map(|n| match key {
                    Some(k) => n.what(k),
                    None => n
                        .run
                        .record
                        .warnings
                        .iter()
                        .map(|w| w.code.clone())
                        .collect(),
                })
                .unwrap_or_default();
            all &= !what.is_empty();
            for c in what {
                if !codes.contains(&c) {
                    codes.push(c);
                }
            }
        }
        (!codes.is_empty()).then_some((all, codes))
    }

    /// The "Measurement quality" blocks: per variant, a table of its noted
    /// runs (note, run id, class, warning code, message); a sentence when no
    /// run of the study was warned or incomplete.
    pub fn blocks(&self, variants: &[String]) -> Vec<Block> {
        if self.notes.is_empty() {
            return vec![Block::Paragraph(
                "Every run of this study finished and none carries a measurement-quality warning."
                    .into(),
            )];
        }
        let header = ["Note", "Run", "Class", "Warning", "Message"]
            .map(String::from)
            .to_vec();
        let mut out = Vec::new();
        for variant in variants {
            let rows: Vec<Vec<String>> = self
                .notes
                .iter()
                .filter(|n| variant_of(n.run) == variant)
                .flat_map(|n| rows_of(n))
                .collect();
            let text = if rows.is_empty() {
                format!("Variant {variant}: no warnings, every run finished.")
            } else {
                format!("Variant {variant}:")
            };
            out.push(Block::Paragraph(text));
            if !rows.is_empty() {
                out.push(Block::Table {
                    header: header.clone(),
                    rows,
                });
            }
        }
        out
    }
}

/// The table rows of one noted run: its incomplete reason, then each warning.
fn rows_of(n: &Note) -> Vec<Vec<String>> {
    let note = format!("[{}]", n.number);
    let id = n.run.id.to_string();
    let whole = || "whole run".to_string();
    let mut rows = Vec::new();
    if !n.run.record.complete {
        rows.push(vec![
            note.clone(),
            id.clone(),
            whole(),
            "incomplete".into(),
            format!(
                "incomplete: {} — left out of every aggregate",
                incomplete_reason(n.run)
            ),
        ]);
    }
    for w in &n.run.record.warnings {
        rows.push(vec![
            note.clone(),
            id.clone(),
            w.class.clone().unwrap_or_else(whole),
            w.code.clone(),
            // Messages are built for a terminal; runs of spaces add nothing here.
            w.message.split_whitespace().collect::<Vec<_>>().join(" "),
        ]);
    }
    rows
}

fn all_warned(codes: &[String]) -> String {
    format!(
        "Every run in this figure carries a warning: {} — read the figure with the measurement-quality table below.",
        codes.join(", ")
    )
}
