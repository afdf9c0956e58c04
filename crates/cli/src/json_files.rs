//! JSON files of run records, as `compare` and `results export` read them:
//! one value, an array of them, or several one after another.

use std::path::Path;

use serde_json::Value;

/// The JSON documents of a file: one value, an array of them, or several one
/// after another (JSON lines, or the pretty records `run --json` prints one
/// per workload).
pub fn json_documents(path: &Path, text: &str) -> anyhow::Result<Vec<Value>> {
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
