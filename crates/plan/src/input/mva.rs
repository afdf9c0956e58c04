//! `stackbench plan mva`: flags → [`crate::mva`].

use serde::{Deserialize, Serialize};

use super::{opt, Ctx, Output};
use crate::mva::{self, MvaInput, Station};
use crate::{units, PlanError};

/// Flags of `plan mva` (also the keys of a plan file's [mva] section).
#[derive(Debug, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
#[serde(rename_all = "kebab-case")]
pub struct MvaArgs {
    /// A station's demand per transaction, NAME=DURATION (repeat for more stations).
    #[cfg_attr(feature = "clap", arg(long, value_name = "NAME=DURATION"))]
    pub demand: Vec<String>,
    /// Think time between a response and the next request [default: 0s].
    #[cfg_attr(feature = "clap", arg(long, value_name = "DURATION"))]
    pub think: Option<String>,
    /// Populations, comma-separated, e.g. 8K,16K,256K [default with --from: the run's clients].
    #[cfg_attr(feature = "clap", arg(long, value_name = "N,..."))]
    pub users: Option<String>,
    /// Servers of the one station: above 1 solves the M/M/m repairman model [default: 1].
    #[cfg_attr(feature = "clap", arg(long, value_name = "M"))]
    pub processors: Option<String>,
    /// A stored run: its CPU per transaction becomes the `cpu` station.
    #[cfg_attr(feature = "clap", arg(long, value_name = "RESULT.json"))]
    pub from: Option<String>,
    /// Side of the stored run: server or client [default: server].
    #[cfg_attr(feature = "clap", arg(long))]
    pub side: Option<String>,
    /// Class of the stored run: index (0 = first) or notation.
    #[cfg_attr(feature = "clap", arg(long))]
    pub class: Option<String>,
}

fn station(text: &str, index: usize) -> Result<Station, PlanError> {
    let (name, value) = match text.split_once('=') {
        Some((n, v)) if !n.trim().is_empty() => (n.trim().to_string(), v),
        Some(_) => {
            return Err(PlanError::bad(
                "demand",
                text,
                "the station has no name",
                "write NAME=DURATION, e.g. cpu=0.176ms",
            ))
        }
        None if index == 0 => ("cpu".to_string(), text),
        None => (format!("station{}", index + 1), text),
    };
    Ok(Station {
        name,
        demand_s: units::parse_duration_s("demand", value)?,
    })
}

/// Resolves the flags and solves.
pub fn compute(args: MvaArgs, ctx: &Ctx<'_>) -> Result<Output, PlanError> {
    let a = ctx.merge(args, "mva")?;
    let mut stations: Vec<Station> = a
        .demand
        .iter()
        .enumerate()
        .map(|(i, t)| station(t, i))
        .collect::<Result<_, _>>()?;
    let mut users = opt(&a.users, "users", units::parse_count_list)?;
    let mut warnings = Vec::new();
    if let Some(path) = &a.from {
        let run = ctx.load_run(path, a.side.as_deref(), a.class.as_deref())?;
        if !stations.iter().any(|s| s.name == "cpu") {
            stations.insert(
                0,
                Station {
                    name: "cpu".into(),
                    demand_s: run.cpu()?.cpu_us_per_tran * 1e-6,
                },
            );
            warnings.extend(run.cpu_warning());
        }
        warnings.extend(run.recorded_warnings());
        users = users.or(Some(vec![run.clients.max(1.0) as u64]));
    }
    let processors = match opt(&a.processors, "processors", units::parse_count)? {
        Some(m) => u32::try_from(m).map_err(|_| {
            PlanError::bad(
                "processors",
                &m.to_string(),
                "too large",
                "give a processor count",
            )
        })?,
        None => 1,
    };
    let input = MvaInput {
        stations,
        think_s: opt(&a.think, "think", units::parse_duration_s)?.unwrap_or(0.0),
        users: users.unwrap_or_default(),
        processors,
    };
    let plan = mva::plan(&input)?;
    let mut report = plan.report(ctx.digits);
    report.warnings.extend(warnings);
    Output::new("mva", &plan, report)
}
