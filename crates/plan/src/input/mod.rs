//! From what `stackbench plan` was given to a computed plan: each
//! subcommand's flags (also the keys of a plan file's section, one
//! definition for both), merged with the plan file, parsed and checked into
//! the planner's typed input, planned, and rendered as a report and its JSON
//! document. Files (the plan file, `--from` runs, CSVs, ratings tables) are
//! read through a reader the caller injects, so this stays free of I/O and
//! testable with files that exist only in the test.
//!
//! The flag structs derive clap's `Args` with this crate's `clap` feature
//! (the binary turns it on): their field names are the long flags and the
//! plan-file keys, their doc comments the help.

pub mod cpu;
mod ctx;
pub mod mva;
pub mod normalize;
pub mod offload;
pub mod rescale;
pub mod storage;
pub mod usl;

pub use ctx::{opt, parse_side, required, Ctx, Env, Output, Paced, StoredClass};

use crate::PlanError;

/// One subcommand's flags: what `plan SUBCOMMAND` computes.
pub enum Section {
    Cpu(cpu::CpuArgs),
    Rescale(rescale::RescaleArgs),
    Storage(storage::StorageArgs),
    Offload(offload::OffloadArgs),
    Normalize(normalize::NormalizeArgs),
    Mva(mva::MvaArgs),
    Usl(usl::UslArgs),
}

/// Computes one subcommand from its flags merged over the plan file's section.
pub fn compute(section: Section, ctx: &Ctx<'_>) -> Result<Output, PlanError> {
    match section {
        Section::Cpu(a) => cpu::compute(a, ctx),
        Section::Rescale(a) => rescale::compute(a, ctx),
        Section::Storage(a) => storage::compute(a, ctx),
        Section::Offload(a) => offload::compute(a, ctx),
        Section::Normalize(a) => normalize::compute(a, ctx),
        Section::Mva(a) => mva::compute(a, ctx),
        Section::Usl(a) => usl::compute(a, ctx),
    }
}

/// Every section of the plan file, each computed from its keys alone, in
/// the order of [`crate::planfile::SECTIONS`].
pub fn all(ctx: &Ctx<'_>) -> Result<Vec<Output>, PlanError> {
    let Some(file) = ctx.file() else {
        return Err(PlanError::Invalid(
            "plan all needs a plan file: give -f PLAN.toml".into(),
        ));
    };
    file.section_names()
        .into_iter()
        .map(|name| {
            let section = match name {
                "cpu" => Section::Cpu(Default::default()),
                "rescale" => Section::Rescale(Default::default()),
                "storage" => Section::Storage(Default::default()),
                "offload" => Section::Offload(Default::default()),
                "normalize" => Section::Normalize(Default::default()),
                "mva" => Section::Mva(Default::default()),
                _ => Section::Usl(Default::default()),
            };
            compute(section, ctx)
        })
        .collect()
}

#[cfg(test)]
mod tests;
