//! Steps on another kernel, the guest's side: the guest VM's init runs the
//! hidden `__guest-step FILE` subcommand, which resolves and executes the
//! step here with `kernel = host` and hands back the record and the
//! environment it measured (see [`crate::guest_step`] for the host's side).

use stackbench_model::{Transport, Workload};

use crate::error::{input, RunError};
use crate::guest_pair::{read_adapter, PairStep};
use crate::guest_step::{StepFile, StepResult, STEP_SUBCOMMAND};
use crate::resolve::resolve;
use crate::session::{environment_of, Runner};

/// The guest side of `stackbench __guest-step FILE`: resolves and executes
/// the step as `run` does and returns `{record, environment}` as one line of
/// JSON for the binary to print on stdout.
pub fn step_main(args: &[String], runner: &mut Runner) -> Result<String, RunError> {
    let [path] = args else {
        return input(format!("{STEP_SUBCOMMAND}: expected one step file"));
    };
    let text = std::fs::read_to_string(path)?;
    let step: StepFile = serde_json::from_str(&text)?;
    let workloads = step
        .workloads
        .iter()
        .map(|w| {
            w.parse::<Workload>()
                .or_else(|e| input(format!("{w}: {e}")))
        })
        .collect::<Result<Vec<_>, RunError>>()?;
    let run = resolve(step.settings, workloads, false, true)?;
    let (record, adapter) = match &step.pair {
        None => (runner.execute(&run)?, None),
        Some(pair) => {
            // The goodbye whatever the step's outcome: the responder's guest
            // then reports its adapter and powers off.
            let _bye = Goodbye(pair);
            let smc = run.connections.transport == Transport::Smc;
            if smc {
                crate::smc_r::prepare(stackbench_guest::WIRE_IFNAME).or_else(input)?;
            }
            pair.wait_for_responder()?;
            let record = runner.execute(&run)?;
            let address = stackbench_guest::DRIVER_ADDRESS;
            let mut adapter = read_adapter(stackbench_guest::WIRE_IFNAME, address);
            if smc {
                adapter.smc_r = Some(crate::smc_r::counters().or_else(input)?);
            }
            (record, Some(adapter))
        }
    };
    let environment = environment_of(&record);
    let result = StepResult {
        record: serde_json::from_str(&stackbench_results::output::json(&record))?,
        environment,
        adapter,
    };
    Ok(serde_json::to_string(&result)?)
}

/// Says goodbye to the responder's guest when dropped.
struct Goodbye<'a>(&'a PairStep);

impl Drop for Goodbye<'_> {
    fn drop(&mut self) {
        self.0.say_goodbye();
    }
}
