//! What a report is made from: one study's stored runs ([`StudyInput`]) and
//! those runs split by variant ([`Variants`]), with the comparisons and
//! per-variant values the report's sections and its environment items
//! (`report::env`) both take.

use stackbench_record::RunRecord;

use crate::compare::{compare, emulated_sides, is_emulated, Comparison, Margins};
use crate::store::{Labels, Store, StoreError, StoredRun};
use stackbench_model::study::{parse_study, Study};

/// One study's stored runs and what is known about it.
#[derive(Debug, Clone)]
pub struct StudyInput {
    pub name: String,
    /// The study's description (its purpose).
    pub description: String,
    /// The parsed study file, when it was stored (gives variant settings).
    pub study: Option<Study>,
    /// Runs of the study, oldest first.
    pub runs: Vec<StoredRun>,
}

/// Why a report has no input.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    /// Nothing to report on; the message says what to give.
    #[error("{0}")]
    Empty(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The studies `names` (every stored study when empty) as a report reads
/// them from `store`; a study without stored runs is refused by name.
pub fn studies(store: &Store, names: &[String]) -> Result<Vec<StudyInput>, InputError> {
    let names = if names.is_empty() {
        store.study_names()?
    } else {
        names.to_vec()
    };
    if names.is_empty() {
        return Err(InputError::Empty(
            "no stored studies: run `stackbench study FILE` first, or pass --db".into(),
        ));
    }
    names.iter().map(|n| StudyInput::load(store, n)).collect()
}

impl StudyInput {
    /// Study `name`'s stored runs, description and study file.
    pub fn load(store: &Store, name: &str) -> Result<StudyInput, InputError> {
        let filter: Labels = [("study".to_string(), name.to_string())].into();
        let runs = store.select(&filter)?;
        if runs.is_empty() {
            return Err(InputError::Empty(format!(
                "--study {name}: no stored runs of that study (`stackbench results list` shows them)"
            )));
        }
        // A stored study file that no longer parses (renamed keys) still
        // reports, without the variant settings it would add.
        let study = store
            .study_file(name)?
            .and_then(|text| parse_study(&text, name).ok());
        Ok(StudyInput {
            name: name.to_string(),
            description: store.study_description(name)?.unwrap_or_default(),
            study,
            runs,
        })
    }
}

/// A study's runs split by variant, variants in order of first run.
pub(crate) struct Variants<'a> {
    pub(crate) groups: Vec<(String, Vec<&'a StoredRun>)>,
}

impl<'a> Variants<'a> {
    pub(crate) fn of(runs: impl IntoIterator<Item = &'a StoredRun>) -> Variants<'a> {
        let mut groups: Vec<(String, Vec<&StoredRun>)> = Vec::new();
        for run in runs {
            let name = run
                .labels
                .get("variant")
                .cloned()
                .unwrap_or_else(|| "default".into());
            match groups.iter_mut().find(|(n, _)| *n == name) {
                Some((_, g)) => g.push(run),
                None => groups.push((name, vec![run])),
            }
        }
        Variants { groups }
    }

    fn records(&self, i: usize) -> Vec<RunRecord> {
        self.groups[i].1.iter().map(|r| r.record.clone()).collect()
    }

    /// True when any run of variant `i` was measured in a TCG-emulated guest.
    pub(crate) fn emulated(&self, i: usize) -> bool {
        self.groups[i]
            .1
            .iter()
            .any(|r| is_emulated(&r.record, Some(&r.env)))
    }

    /// Variant `i` compared with the baseline (variant 0), verdicts refused
    /// when either side was emulated.
    pub(crate) fn compare_with_baseline(&self, i: usize, margins: Margins) -> Comparison {
        let (a, b) = (&self.groups[0].0, &self.groups[i].0);
        let mut c = compare(a, &self.records(0), b, &self.records(i), margins);
        if let Some(side) = emulated_sides(a, self.emulated(0), b, self.emulated(i)) {
            c.refuse_verdicts(&side);
        }
        c
    }

    /// `value` if every variant gives the same, else `A: x; B: y`. Each
    /// variant's value is taken from every one of its runs: where they
    /// differ it reads `x (runs 1, 2), y (run 3)`, so one run cannot speak
    /// for the others.
    pub(crate) fn per_variant(&self, f: impl Fn(&StoredRun) -> Option<String>) -> Option<String> {
        let vals: Vec<(String, String)> = self
            .groups
            .iter()
            .filter_map(|(n, runs)| Some((n.clone(), of_runs(runs, &f)?)))
            .collect();
        let first = vals.first()?.1.clone();
        if vals.iter().all(|(_, v)| *v == first) {
            Some(first)
        } else {
            Some(
                vals.iter()
                    .map(|(n, v)| format!("{n}: {v}"))
                    .collect::<Vec<_>>()
                    .join("; "),
            )
        }
    }
}

/// `f`'s value over `runs`: the one value they share, or each distinct value
/// with the ids of the runs that gave it; `None` when no run gives one.
fn of_runs(runs: &[&StoredRun], f: &impl Fn(&StoredRun) -> Option<String>) -> Option<String> {
    let mut seen: Vec<(String, Vec<i64>)> = Vec::new();
    for r in runs {
        let Some(v) = f(r) else { continue };
        match seen.iter_mut().find(|(x, _)| *x == v) {
            Some((_, ids)) => ids.push(r.id),
            None => seen.push((v, vec![r.id])),
        }
    }
    if seen.len() <= 1 {
        return seen.pop().map(|(v, _)| v);
    }
    let each: Vec<String> = seen
        .iter()
        .map(|(v, ids)| {
            let ids: Vec<String> = ids.iter().map(i64::to_string).collect();
            let noun = if ids.len() == 1 { "run" } else { "runs" };
            format!("{v} ({noun} {})", ids.join(", "))
        })
        .collect();
    Some(format!("runs differ: {}", each.join(", ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every stored study when none is named, each with its runs and
    /// description; a named study without runs, or no study at all, is
    /// refused with what to do.
    #[test]
    fn studies_come_from_the_store_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(Some(&dir.path().join("r.db"))).unwrap();
        let e = studies(&store, &[]).err().unwrap().to_string();
        assert!(e.starts_with("no stored studies"), "{e}");
        let record = crate::fixtures::record("RR1(1B/1B)", 1000.0, 50.0, 90.0, 0.0);
        let env = crate::fixtures::environment("6.1");
        let labels: Labels = [("study".into(), "q".into())].into();
        store.save(&record, &labels, &env).unwrap();
        store
            .save_study(
                "q",
                "a quick look",
                "name = \"q\"\nworkloads = [\"RR1(1B/1B)\"]\n",
            )
            .unwrap();
        let all = studies(&store, &[]).unwrap();
        assert_eq!(all.len(), 1);
        assert_eq!((all[0].name.as_str(), all[0].runs.len()), ("q", 1));
        assert_eq!(all[0].description, "a quick look");
        assert!(all[0].study.is_some());
        let e = studies(&store, &["other".into()])
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.starts_with("--study other: no stored runs of that study"),
            "{e}"
        );
    }
}
