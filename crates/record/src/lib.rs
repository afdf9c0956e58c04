//! The result contract (hyperfine's `BenchmarkResult`, fio's terse version):
//! the run record every `stackbench run` writes, the environment stored
//! beside it (host, lab, guest), and the migrations that read older records.
//! Serializable types and the pure helpers that belong to them only: the
//! measurement that fills them in lives in `stackbench-metrics`, the store
//! and reports that read them in `stackbench-results`.
//!
//! Every reader decodes with [`record_from_json`], which refuses a record
//! from a newer stackbench and migrates an older one; [`flat`] turns records
//! into the one-row-per-class table scripts read instead of the JSON;
//! [`json_schema`] publishes the record's JSON Schema (docs/record.schema.json).

pub mod applicability;
pub mod env;
pub mod flat;
pub mod guest;
pub mod json_schema;
pub mod lab;
pub mod migrate;
pub mod reference;
pub mod run;
pub mod utilisation;

pub use applicability::Applicability;
pub use env::{Environment, InterfaceInfo};
pub use guest::{GuestAdapter, GuestEnvironment, SmcRCounters, EMULATED_NOTE};
pub use lab::{
    LabEnvironment, LabFlowtable, LabInterface, LabIpsec, LabMacvlan, LabNetem, LabPolicy,
    LabRxQueue, LabSa, LabSteering, LabTarget, LabUtilisation, LabVirtualHost,
};
pub use run::*;
pub use utilisation::link_utilisation;
