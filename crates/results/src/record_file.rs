//! Files of run records, as `compare` and `results export --flat` read them:
//! one JSON value, an array of them, or several one after another; each a
//! run record (`run --json`) or a stored run (`results show N --json`).
//! Every record goes through `record_from_json`, so any schema version reads.

use std::path::Path;

use serde_json::Value;
use stackbench_record::{record_from_json, RunRecord};

/// One run of a record file.
pub struct FileRun {
    /// `run N` for a stored run, else the file (with `(record N)` when it
    /// holds several).
    pub name: String,
    /// Checked and migrated by `record_from_json`.
    pub record: RunRecord,
    /// A stored run's environment, as stored.
    pub env: Option<Value>,
}

/// Why a record file gives no runs.
#[derive(Debug, thiserror::Error)]
pub enum RecordFileError {
    #[error("cannot read {path}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// Not run records, or a record that does not check: one line naming
    /// the file and what to give instead.
    #[error("{0}")]
    Input(String),
}

/// Reads the runs of record file `path`.
pub fn read_runs(path: &Path) -> Result<Vec<FileRun>, RecordFileError> {
    let text = std::fs::read_to_string(path).map_err(|source| RecordFileError::Read {
        path: path.display().to_string(),
        source,
    })?;
    runs_of(path, &text)
}

/// The runs of record file `path` whose text is `text`; a file without run
/// records, or a record that does not check, is one line naming the file.
pub fn runs_of(path: &Path, text: &str) -> Result<Vec<FileRun>, RecordFileError> {
    let input = |m: String| RecordFileError::Input(m);
    let docs = json_documents(path, text)?;
    // A document is a run record if it has classes, or at least a schema
    // version (then `record_from_json` says what is wrong with it, e.g. a
    // version newer than this binary reads).
    let record_like = |v: &Value| {
        let r = if v["record"].is_object() {
            &v["record"]
        } else {
            v
        };
        r["classes"].is_array() || r["schema_version"].is_u64()
    };
    if docs.is_empty() || !docs.iter().all(record_like) {
        return Err(input(format!(
            "{}: not run records (no \"classes\"): give files written by `stackbench run --json` or `stackbench results show N --json`",
            path.display()
        )));
    }
    let count = docs.len();
    docs.into_iter()
        .enumerate()
        .map(|(i, mut doc)| {
            let place = match count {
                1 => path.display().to_string(),
                _ => format!("{} (record {})", path.display(), i + 1),
            };
            let (value, env, name) = if doc["record"].is_object() {
                let name = doc["id"]
                    .as_i64()
                    .map_or_else(|| place.clone(), |id| format!("run {id}"));
                (doc["record"].take(), Some(doc["env"].take()), name)
            } else {
                (doc, None, place.clone())
            };
            let record = record_from_json(value).map_err(|e| input(format!("{place}: {e}")))?;
            Ok(FileRun { name, record, env })
        })
        .collect()
}

/// The JSON documents of a file: one value, an array of them, or several one
/// after another (JSON lines, or the pretty records `run --json` prints one
/// per workload).
fn json_documents(path: &Path, text: &str) -> Result<Vec<Value>, RecordFileError> {
    let docs: Vec<Value> = serde_json::Deserializer::from_str(text)
        .into_iter::<Value>()
        .collect::<Result<_, _>>()
        .map_err(|e| {
            RecordFileError::Input(format!("{}: not JSON run records: {e}", path.display()))
        })?;
    Ok(match <[Value; 1]>::try_from(docs) {
        Ok([Value::Array(items)]) => items,
        Ok([one]) => vec![one],
        Err(docs) => docs,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record() -> String {
        serde_json::to_string(&crate::fixtures::record(
            "RR1(1B/1B)",
            1000.0,
            50.0,
            90.0,
            0.0,
        ))
        .unwrap()
    }

    fn names(text: &str) -> Result<Vec<String>, String> {
        runs_of(Path::new("r.json"), text)
            .map(|runs| runs.into_iter().map(|r| r.name).collect())
            .map_err(|e| e.to_string())
    }

    /// One record, an array, records one after another, and stored runs
    /// (named by their id, their environment kept).
    #[test]
    fn every_file_shape_gives_its_runs_named() {
        let r = record();
        assert_eq!(names(&r).unwrap(), ["r.json"]);
        assert_eq!(
            names(&format!("[{r},{r}]")).unwrap(),
            ["r.json (record 1)", "r.json (record 2)"]
        );
        assert_eq!(names(&format!("{r}\n{r}\n")).unwrap().len(), 2);
        let stored = format!("{{\"id\": 7, \"record\": {r}, \"env\": {{\"kernel\": \"k\"}}}}");
        let runs = runs_of(Path::new("s.json"), &stored).unwrap();
        assert_eq!(runs[0].name, "run 7");
        assert_eq!(runs[0].env.as_ref().unwrap()["kernel"], "k");
    }

    #[test]
    fn files_that_are_not_run_records_are_one_line_naming_the_file() {
        let e = names("{\"a\": 1}").unwrap_err();
        assert!(
            e.starts_with("r.json: not run records (no \"classes\")"),
            "{e}"
        );
        let e = names("{").unwrap_err();
        assert!(e.starts_with("r.json: not JSON run records: "), "{e}");
        let e = names("{\"schema_version\": 999, \"classes\": []}").unwrap_err();
        assert!(e.starts_with("r.json: "), "{e}");
        assert!(names("").is_err());
    }
}
