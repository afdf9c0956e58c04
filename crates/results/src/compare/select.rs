//! The two sides of `stackbench compare A B`: each a JSON file of run
//! records (`run --json`, `results show N --json`), stored run ids (`6`,
//! `2,3,4`, `2-4`) or a label selector (`variant=A`), the latter narrowed by
//! the labels both sides must carry (`--where`). Whether a side was measured
//! in a TCG-emulated guest is decided here too: from the stored environment,
//! or from the settings for record files.

use std::path::Path;

use stackbench_record::RunRecord;

use super::{is_emulated, RunInput};
use crate::env::Environment;
use crate::record_file::{read_runs, RecordFileError};
use crate::store::{parse_labels, Labels, RunId, Store, StoreError};

/// Widest id range one side may give (`2-4`).
const MAX_ID_RANGE: RunId = 100_000;

/// One run of a side: how a reader finds it, its record, and its stored
/// environment when the input carried one.
pub struct SideRun {
    pub name: String,
    pub record: RunRecord,
    pub env: Option<Environment>,
}

/// One side's runs.
pub struct Side {
    pub runs: Vec<SideRun>,
    /// A run was measured in a TCG-emulated guest.
    pub emulated: bool,
}

impl Side {
    /// The inputs [`crate::compare::compare_runs`] reads.
    pub fn inputs(&self) -> Vec<RunInput<'_>> {
        self.runs
            .iter()
            .map(|r| RunInput {
                name: &r.name,
                record: &r.record,
                env: r.env.as_ref(),
            })
            .collect()
    }
}

/// Why a side selects nothing.
#[derive(Debug, thiserror::Error)]
pub enum SelectError {
    /// The spec names nothing usable; the message says what to give.
    #[error("{0}")]
    Input(String),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    File(#[from] RecordFileError),
}

/// Run ids as `compare` takes them: `6`, `2,3,4` or `2-4`; `None` when the
/// text is not a list of ids (a label selector or a file).
pub fn parse_ids(spec: &str) -> Option<Vec<RunId>> {
    let mut ids = Vec::new();
    for part in spec.split(',') {
        let part = part.trim();
        match part.split_once('-') {
            Some((lo, hi)) => {
                let (lo, hi): (RunId, RunId) = (lo.parse().ok()?, hi.parse().ok()?);
                // A range is listed id by id: bound it, so a typo such as
                // 1-99999999999 is not a memory exhaustion.
                if lo > hi || hi - lo >= MAX_ID_RANGE {
                    return None;
                }
                ids.extend(lo..=hi);
            }
            None => ids.push(part.parse().ok()?),
        }
    }
    (!ids.is_empty()).then_some(ids)
}

/// The runs `spec` names. The store is opened with `open` only when a side
/// needs it (a file does not), once for both sides.
pub fn side(
    spec: &str,
    common: &Labels,
    store: &mut Option<Store>,
    open: &dyn Fn() -> Result<Store, StoreError>,
) -> Result<Side, SelectError> {
    let path = Path::new(spec);
    if path.is_file() {
        let runs: Vec<SideRun> = read_runs(path)?
            .into_iter()
            .map(|r| SideRun {
                name: r.name,
                record: r.record,
                env: r.env.and_then(|e| serde_json::from_value(e).ok()),
            })
            .collect();
        let emulated = runs.iter().any(|r| is_emulated(&r.record, r.env.as_ref()));
        return Ok(Side { runs, emulated });
    }
    let ids = parse_ids(spec);
    let mut filter = common.clone();
    if ids.is_none() {
        let own = parse_labels(&spec.split(',').collect::<Vec<_>>()).map_err(|_| {
            SelectError::Input(format!(
                "'{spec}' is neither a JSON file nor a label selector nor run ids: give a file of run records, key=value[,key=value] such as variant=A, or stored run ids such as 6, 2,3 or 2-4 (a range spans fewer than {MAX_ID_RANGE} ids)"
            ))
        })?;
        filter.extend(own);
    }
    let store = match store {
        Some(s) => s,
        None => store.insert(open()?),
    };
    let runs = match ids {
        Some(ids) => ids
            .into_iter()
            .map(|id| store.get(id))
            .collect::<Result<Vec<_>, _>>()?,
        None => store.select(&filter)?,
    };
    if runs.is_empty() {
        return Err(SelectError::Input(format!(
            "no stored runs match {}: `stackbench results list` shows the labels",
            filter
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(",")
        )));
    }
    let emulated = runs.iter().any(|r| is_emulated(&r.record, Some(&r.env)));
    let runs = runs
        .into_iter()
        .map(|r| SideRun {
            name: format!("run {}", r.id),
            record: r.record,
            env: Some(r.env),
        })
        .collect();
    Ok(Side { runs, emulated })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_single_lists_or_bounded_ranges() {
        assert_eq!(parse_ids("6"), Some(vec![6]));
        assert_eq!(parse_ids("2, 3,4"), Some(vec![2, 3, 4]));
        assert_eq!(parse_ids("2-4,9"), Some(vec![2, 3, 4, 9]));
        assert_eq!(parse_ids("variant=A"), None);
        assert_eq!(parse_ids("4-2"), None);
        assert_eq!(parse_ids("1-99999999999"), None);
        assert_eq!(parse_ids(""), None);
    }

    /// A selector that is neither a file, ids nor labels is refused before
    /// any store is opened.
    #[test]
    fn a_spec_of_nothing_names_the_three_forms() {
        let mut store = None;
        let open = || -> Result<Store, StoreError> { panic!("no store wanted") };
        let e = side("no-such-file", &Labels::new(), &mut store, &open)
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.starts_with("'no-such-file' is neither a JSON file nor a label selector nor run ids"),
            "{e}"
        );
    }

    /// Stored sides are selected from one store, opened once: by ids and by
    /// labels narrowed by the common ones.
    #[test]
    fn stored_sides_select_by_ids_or_labels() {
        let dir = tempfile::tempdir().unwrap();
        let mut db = Store::open(Some(&dir.path().join("r.db"))).unwrap();
        let record = crate::fixtures::record("RR1(1B/1B)", 1000.0, 50.0, 90.0, 0.0);
        let env = crate::fixtures::environment("6.1");
        let labels = |v: &str| -> Labels {
            [("variant".into(), v.into()), ("study".into(), "s".into())].into()
        };
        let a = db.save(&record, &labels("A"), &env).unwrap();
        db.save(&record, &labels("B"), &env).unwrap();
        let opened = std::cell::Cell::new(0);
        let path = dir.path().join("r.db");
        let open = || {
            opened.set(opened.get() + 1);
            Store::open_read_only(&path)
        };
        let mut store = None;
        let common: Labels = [("study".into(), "s".into())].into();
        let by_label = side("variant=B", &common, &mut store, &open).ok().unwrap();
        assert_eq!(by_label.runs.len(), 1);
        assert!(!by_label.emulated);
        let by_id = side(&a.to_string(), &common, &mut store, &open)
            .ok()
            .unwrap();
        assert_eq!(by_id.runs[0].name, format!("run {a}"));
        assert_eq!(opened.get(), 1);
        let none: Labels = [("study".into(), "other".into())].into();
        let e = side("variant=A", &none, &mut store, &open).err().unwrap();
        assert!(e.to_string().starts_with("no stored runs match "), "{e}");
    }
}
