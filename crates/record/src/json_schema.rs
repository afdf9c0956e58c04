//! The published JSON Schema of the run record, `docs/record.schema.json`:
//! generated (schemars) from the same types and doc comments as
//! docs/record.md, so other tools can validate and read records without this
//! code. It describes records of the current [`SCHEMA_VERSION`] only (its
//! `schema_version` is a `const`; readers migrate older records with
//! `record_from_json` first). The hidden `stackbench __docs schema` prints it
//! and a test compares it with the checked-in file.

use schemars::schema_for;
use serde_json::{json, Value};

use crate::{RunRecord, SCHEMA_VERSION};

/// The command that regenerates the file.
pub const REGENERATE: &str = "cargo run -q -- __docs schema > docs/record.schema.json";

/// The run record's schema, as a JSON value.
pub fn record_schema() -> Value {
    let mut schema = schema_for!(RunRecord).to_value();
    schema["title"] = json!(format!(
        "stackbench run record, schema_version {SCHEMA_VERSION}"
    ));
    schema["description"] = json!(format!(
        "One `stackbench run` (`run --json`; `record` in `results show N --json` \
         and `results export`). Generated from crates/record/src; regenerate with \
         `{REGENERATE}`. Field units and meanings: docs/record.md."
    ));
    schema["properties"]["schema_version"]["const"] = json!(SCHEMA_VERSION);
    schema
}

/// The file's text: the schema, pretty-printed, with a final newline.
pub fn record_schema_text() -> String {
    serde_json::to_string_pretty(&record_schema()).expect("a schema serializes") + "\n"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schema_names_its_version_and_requires_the_core_fields() {
        let s = record_schema();
        assert_eq!(s["properties"]["schema_version"]["const"], SCHEMA_VERSION);
        let required: Vec<&str> = s["required"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .collect();
        for field in ["schema_version", "complete", "settings", "classes"] {
            assert!(
                required.contains(&field),
                "{field} not required: {required:?}"
            );
        }
    }
}
