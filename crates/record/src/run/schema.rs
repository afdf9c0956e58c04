//! Reading a record back: the `schema_version` check and the migration chain
//! that brings an older record's JSON up to the current layout before it is
//! decoded into a [`RunRecord`]. Every reader (store rows, files given to
//! `compare`) goes through [`record_from_json`], so a record from a newer
//! stackbench is refused with one line instead of being misread.
//!
//! Design note: migrations work on `serde_json::Value`, not on typed structs,
//! so each step only needs to know the two layouts it bridges; old struct
//! definitions are never kept. After each step the chain itself sets
//! `schema_version` to the version reached, so a step only moves fields.

use serde::de::DeserializeOwned;
use serde_json::Value;
use thiserror::Error;

use super::{RunRecord, SCHEMA_VERSION};

/// One migration step: rewrites a record's JSON from one schema version to the next.
pub type Migration = fn(&mut Value);

/// The migration chain: entry `i` brings a record from version `i + 1` to
/// `i + 2` (index 0 is v1 → v2), so its length is always `SCHEMA_VERSION - 1`.
/// Bumping [`SCHEMA_VERSION`] means appending the step that reads the previous
/// layout.
pub const MIGRATIONS: &[Migration] = &[crate::migrate::v1_to_v2, crate::migrate::v2_to_v3];

// A chain that does not reach SCHEMA_VERSION would decode old records as if
// they were current: refuse to compile instead.
const _: () = assert!(MIGRATIONS.len() + 1 == SCHEMA_VERSION as usize);

/// Why a JSON value could not be read as a run record. Messages are one line
/// and name the fix; callers prefix where the record came from (a run id, a
/// file name). No variant has a `source()`: each message is whole, so an error
/// chain printed as one line does not repeat it.
#[derive(Debug, Error)]
pub enum RecordError {
    #[error("record is not a JSON object: give a run record written by `stackbench run --json`")]
    NotAnObject,
    #[error("record has no schema_version: give a run record written by `stackbench run --json`")]
    MissingVersion,
    #[error("record schema_version {0} is not a version number (1, 2, …): give a run record written by `stackbench run --json`")]
    BadVersion(String),
    #[error("record schema_version {found} is newer than this stackbench reads ({known}): upgrade stackbench")]
    TooNew { found: u64, known: u32 },
    #[error("record (schema_version {version}) does not match the run-record layout: {error}")]
    Invalid {
        version: u32,
        error: serde_json::Error,
    },
}

/// Decodes a run record from JSON, checking `schema_version`: a newer record
/// is refused, an older one is migrated through [`MIGRATIONS`] first, and a
/// mix written before `cpu.attribution` is marked as sharing its CPU
/// ([`crate::migrate::mark_shared_mix_cpu`]).
pub fn record_from_json(mut value: Value) -> Result<RunRecord, RecordError> {
    crate::migrate::mark_shared_mix_cpu(&mut value);
    decode_with(value, SCHEMA_VERSION, MIGRATIONS)
}

/// The `schema_version` of a record's JSON, validated but not compared with
/// any known version.
pub fn schema_version_of(value: &Value) -> Result<u64, RecordError> {
    let version = value
        .as_object()
        .ok_or(RecordError::NotAnObject)?
        .get("schema_version")
        .ok_or(RecordError::MissingVersion)?;
    match version.as_u64() {
        Some(v) if v >= 1 => Ok(v),
        _ => Err(RecordError::BadVersion(version.to_string())),
    }
}

/// [`record_from_json`] with the current version and the chain given, and any
/// target type, so tests can exercise a longer chain than the real one.
pub(crate) fn decode_with<T: DeserializeOwned>(
    mut value: Value,
    current: u32,
    migrations: &[Migration],
) -> Result<T, RecordError> {
    debug_assert_eq!(migrations.len() + 1, current as usize);
    let found = schema_version_of(&value)?;
    if found > u64::from(current) {
        return Err(RecordError::TooNew {
            found,
            known: current,
        });
    }
    // found ≤ current, so it fits in u32.
    let found = found as u32;
    for (i, step) in migrations.iter().enumerate().skip(found as usize - 1) {
        step(&mut value);
        value["schema_version"] = Value::from(i as u32 + 2);
    }
    serde_json::from_value(value).map_err(|error| RecordError::Invalid {
        version: found,
        error,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use serde_json::json;

    /// A made-up layout at version 3: v1 had `rate`, v2 renamed it to
    /// `rate_tps`, v3 added `unit`.
    #[derive(Debug, PartialEq, Deserialize)]
    struct FakeV3 {
        schema_version: u32,
        rate_tps: f64,
        unit: String,
    }

    fn v1_to_v2(v: &mut Value) {
        let rate = v.as_object_mut().unwrap().remove("rate").unwrap();
        v["rate_tps"] = rate;
    }

    fn v2_to_v3(v: &mut Value) {
        v["unit"] = json!("tr/s");
    }

    const FAKE_CHAIN: &[Migration] = &[v1_to_v2, v2_to_v3];

    fn fake(value: Value) -> Result<FakeV3, RecordError> {
        decode_with(value, 3, FAKE_CHAIN)
    }

    #[test]
    fn older_records_run_the_chain_from_their_version() {
        let want = FakeV3 {
            schema_version: 3,
            rate_tps: 5.0,
            unit: "tr/s".into(),
        };
        assert_eq!(
            fake(json!({"schema_version": 1, "rate": 5.0})).unwrap(),
            want
        );
        assert_eq!(
            fake(json!({"schema_version": 2, "rate_tps": 5.0})).unwrap(),
            want
        );
        // A current record skips every step (v1_to_v2 would panic on it).
        let current = json!({"schema_version": 3, "rate_tps": 5.0, "unit": "tr/s"});
        assert_eq!(fake(current).unwrap(), want);
    }

    #[test]
    fn newer_records_are_refused_in_one_line() {
        let err = fake(json!({"schema_version": 4})).unwrap_err().to_string();
        assert_eq!(
            err,
            "record schema_version 4 is newer than this stackbench reads (3): upgrade stackbench"
        );
        let err = record_from_json(json!({"schema_version": SCHEMA_VERSION + 1}))
            .unwrap_err()
            .to_string();
        assert!(err.contains("is newer than this stackbench reads"), "{err}");
    }

    #[test]
    fn missing_or_invalid_versions_are_clear_errors() {
        for (value, want) in [
            (json!([1, 2]), "record is not a JSON object"),
            (json!({"classes": []}), "record has no schema_version"),
            (
                json!({"schema_version": "1"}),
                "schema_version \"1\" is not",
            ),
            (json!({"schema_version": 0}), "schema_version 0 is not"),
            (json!({"schema_version": 1.5}), "schema_version 1.5 is not"),
            (json!({"schema_version": -1}), "schema_version -1 is not"),
        ] {
            let err = fake(value).unwrap_err().to_string();
            assert!(err.contains(want), "{err}");
            assert!(!err.contains('\n'), "{err}");
        }
        let err = fake(json!({"schema_version": 3, "rate_tps": 1.0}))
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "record (schema_version 3) does not match the run-record layout: missing field `unit`"
        );
    }
}
