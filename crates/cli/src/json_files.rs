//! JSON files of run records, as `compare` and `results export` read them:
//! one value, an array of them, or several one after another; each a run
//! record (`run --json`) or a stored run (`results show N --json`).

use std::path::Path;

use anyhow::Context;
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

/// Reads the runs of record file `path`; a file without run records, or a
/// record that does not check, is one line naming the file (exit 2).
pub fn read_runs(path: &Path) -> anyhow::Result<Vec<FileRun>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let docs = json_documents(path, &text)?;
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
        return crate::exit::usage(format!(
            "{}: not run records (no \"classes\"): give files written by `stackbench run --json` or `stackbench results show N --json`",
            path.display()
        ));
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
            let record =
                record_from_json(value).or_else(|e| crate::exit::usage(format!("{place}: {e}")))?;
            Ok(FileRun { name, record, env })
        })
        .collect()
}

/// The JSON documents of a file: one value, an array of them, or several one
/// after another (JSON lines, or the pretty records `run --json` prints one
/// per workload).
fn json_documents(path: &Path, text: &str) -> anyhow::Result<Vec<Value>> {
    let docs: Vec<Value> = serde_json::Deserializer::from_str(text)
        .into_iter::<Value>()
        .collect::<Result<_, _>>()
        .or_else(|e| {
            crate::exit::usage(format!("{}: not JSON run records: {e}", path.display()))
        })?;
    Ok(match <[Value; 1]>::try_from(docs) {
        Ok([Value::Array(items)]) => items,
        Ok([one]) => vec![one],
        Err(docs) => docs,
    })
}
