//! `stackbench plan storage`: flags → [`crate::storage`].

use serde::{Deserialize, Serialize};

use super::{opt, parse_side, Ctx, Output};
use crate::runfile::{MemoryFigures, RunClass};
use crate::storage::{self, Component, Kind, Side, StorageInput};
use crate::units;
use crate::PlanError;

/// Flags of `plan storage` (also the keys of a plan file's [storage] section).
#[derive(Debug, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
#[serde(rename_all = "kebab-case")]
pub struct StorageArgs {
    /// Users (connections) to plan for, e.g. 256K [default with --from: the run's clients].
    #[cfg_attr(feature = "clap", arg(long))]
    pub users: Option<String>,
    /// Server process memory independent of connections, e.g. 64MB.
    #[cfg_attr(feature = "clap", arg(long, value_name = "SIZE"))]
    pub server_user_fixed: Option<String>,
    /// Server process memory per connection, e.g. 4.1kB.
    #[cfg_attr(feature = "clap", arg(long, value_name = "SIZE"))]
    pub server_user_per_conn: Option<String>,
    /// Server kernel socket memory independent of connections.
    #[cfg_attr(feature = "clap", arg(long, value_name = "SIZE"))]
    pub server_kernel_fixed: Option<String>,
    /// Server kernel socket memory per connection.
    #[cfg_attr(feature = "clap", arg(long, value_name = "SIZE"))]
    pub server_kernel_per_conn: Option<String>,
    /// Client process memory independent of connections.
    #[cfg_attr(feature = "clap", arg(long, value_name = "SIZE"))]
    pub client_user_fixed: Option<String>,
    /// Client process memory per connection.
    #[cfg_attr(feature = "clap", arg(long, value_name = "SIZE"))]
    pub client_user_per_conn: Option<String>,
    /// Client kernel socket memory independent of connections.
    #[cfg_attr(feature = "clap", arg(long, value_name = "SIZE"))]
    pub client_kernel_fixed: Option<String>,
    /// Client kernel socket memory per connection.
    #[cfg_attr(feature = "clap", arg(long, value_name = "SIZE"))]
    pub client_kernel_per_conn: Option<String>,
    /// A stored run: its memory figures for --side fill that side's components.
    #[cfg_attr(feature = "clap", arg(long, value_name = "RESULT.json"))]
    pub from: Option<String>,
    /// Side of the stored run: server or client [default: server].
    #[cfg_attr(feature = "clap", arg(long))]
    pub side: Option<String>,
    /// Class of the stored run: index (0 = first) or notation.
    #[cfg_attr(feature = "clap", arg(long))]
    pub class: Option<String>,
}

/// A component from its two flags, when either is given.
fn component(
    side: Side,
    kind: Kind,
    fixed: (&str, &Option<String>),
    per_conn: (&str, &Option<String>),
) -> Result<Option<Component>, PlanError> {
    let fixed_bytes = opt(fixed.1, fixed.0, units::parse_bytes)?;
    let bytes_per_conn = opt(per_conn.1, per_conn.0, units::parse_bytes)?;
    Ok(
        (fixed_bytes.is_some() || bytes_per_conn.is_some()).then(|| Component {
            side,
            kind,
            fixed_bytes: fixed_bytes.unwrap_or(0.0),
            bytes_per_conn: bytes_per_conn.unwrap_or(0.0),
        }),
    )
}

/// The components the flags give.
fn flag_components(a: &StorageArgs) -> Result<Vec<Component>, PlanError> {
    let flags = [
        (
            Side::Server,
            Kind::UserSpace,
            ("server-user-fixed", &a.server_user_fixed),
            ("server-user-per-conn", &a.server_user_per_conn),
        ),
        (
            Side::Server,
            Kind::KernelSocket,
            ("server-kernel-fixed", &a.server_kernel_fixed),
            ("server-kernel-per-conn", &a.server_kernel_per_conn),
        ),
        (
            Side::Client,
            Kind::UserSpace,
            ("client-user-fixed", &a.client_user_fixed),
            ("client-user-per-conn", &a.client_user_per_conn),
        ),
        (
            Side::Client,
            Kind::KernelSocket,
            ("client-kernel-fixed", &a.client_kernel_fixed),
            ("client-kernel-per-conn", &a.client_kernel_per_conn),
        ),
    ];
    let mut components = Vec::new();
    for (side, kind, fixed, per_conn) in flags {
        components.extend(component(side, kind, fixed, per_conn)?);
    }
    Ok(components)
}

/// Adds the stored run's components for `side` that the flags left out;
/// refuses a kernel socket figure that is missing or 0 B
/// ([`RunClass::kernel_per_conn`]).
fn add_run_components(
    components: &mut Vec<Component>,
    side: Side,
    run: &RunClass,
    mem: &MemoryFigures,
) -> Result<(), PlanError> {
    let given = |components: &Vec<Component>, kind| {
        components.iter().any(|c| c.side == side && c.kind == kind)
    };
    let mut figures = Vec::new();
    if !given(components, Kind::UserSpace) {
        let Some(per_conn) = mem.rss_bytes_per_conn else {
            let side = side.name();
            return Err(PlanError::Invalid(format!(
                "{}: the {side} side's rss_bytes_per_conn is null (its RSS fell below the \
                 baseline, so the figure is unknown; the record's memory notes say why): \
                 give --{side}-user-per-conn",
                run.path()
            )));
        };
        figures.push((Kind::UserSpace, mem.rss_bytes, per_conn));
    }
    if !given(components, Kind::KernelSocket) {
        let per_conn = run.kernel_per_conn(mem)?;
        let total = mem.kernel_sock_bytes.unwrap_or(per_conn * mem.connections);
        figures.push((Kind::KernelSocket, total, per_conn));
    }
    // The record's totals were sampled with `connections` open: the part the
    // per-connection figures do not explain is the fixed part (zero when the
    // record's per-connection figure is the plain average).
    for (kind, total, per_conn) in figures {
        if !given(components, kind) {
            components.push(Component {
                side,
                kind,
                fixed_bytes: (total - per_conn * mem.connections).max(0.0),
                bytes_per_conn: per_conn,
            });
        }
    }
    Ok(())
}

/// Resolves the flags and the run, then applies the model.
pub fn compute(args: StorageArgs, ctx: &Ctx<'_>) -> Result<Output, PlanError> {
    let a = ctx.merge(args, "storage")?;
    let mut components = flag_components(&a)?;
    let mut users = opt(&a.users, "users", units::parse_count)?;
    let mut warnings = Vec::new();
    if let Some(path) = &a.from {
        let run = ctx.load_run(path, a.side.as_deref(), a.class.as_deref())?;
        let mem = run.memory()?;
        add_run_components(&mut components, parse_side(a.side.as_deref())?, &run, &mem)?;
        warnings = run.population_warnings(&mem);
        warnings.extend(run.recorded_warnings());
        users = users.or(Some(run.clients.max(1.0) as u64));
    }
    let users = users.ok_or_else(|| {
        PlanError::missing(
            "users",
            "give the population to plan for, e.g. --users 256K",
        )
    })?;
    let plan = storage::plan(&StorageInput { users, components })?;
    let mut report = plan.report(ctx.digits);
    report.warnings.extend(warnings);
    Output::new("storage", &plan, report)
}
