//! Repetitions of a workload (netperf's `-i max,min -I level,width`):
//! `--repeat N` runs it N times; `--confidence L,W --iterations MIN,MAX` runs
//! it until the Student-t interval at L% of the rate and of the CPU µs/tr of
//! each side is at most W% of its mean (full width), or MAX runs were made.
//! The class figures reported are the mean over the complete repetitions
//! (rate, counts, latency percentiles, CPU and memory figures; errors summed:
//! see [`crate::repeat_mean`] for each field), with every repetition's values
//! and their summary in `classes[].repetitions`. A repetition that ends early
//! stops the series; the mean of those before it is kept (or, if it was the
//! first, what it measured), and the run is incomplete.

use std::sync::atomic::AtomicBool;

use stackbench_engine::{run_workload, ControlClient, Progress, RunConfig, RunOutcome};
use stackbench_metrics::stats::{summarize_repetitions, Iterations, Verdict};
use stackbench_record::RepetitionValues;
use stackbench_record::{ClassResult, CpuFigures};

use crate::observe::Observer;
use crate::repeat_mean::{mean_classes, mean_cpu};

/// What runs one workload once: this process's driver against a responder
/// ([`ControlClient`]), or a controller's agents
/// ([`crate::agents::controller::Controller`]). An `Err` means nothing was measured.
pub trait Execute {
    fn execute(
        &mut self,
        cfg: &RunConfig,
        stop: &AtomicBool,
        on_progress: &mut dyn FnMut(&Progress),
    ) -> Result<RunOutcome, String>;
}

impl Execute for ControlClient {
    fn execute(
        &mut self,
        cfg: &RunConfig,
        stop: &AtomicBool,
        on_progress: &mut dyn FnMut(&Progress),
    ) -> Result<RunOutcome, String> {
        run_workload(self, cfg, stop, on_progress).map_err(|e| e.to_string())
    }
}

impl Execute for crate::agents::controller::Controller {
    fn execute(
        &mut self,
        cfg: &RunConfig,
        stop: &AtomicBool,
        on_progress: &mut dyn FnMut(&Progress),
    ) -> Result<RunOutcome, String> {
        self.run(cfg, stop, on_progress)
    }
}

/// What the repetitions of one workload produced.
pub struct Repeated {
    pub classes: Vec<ClassResult>,
    /// A mix on shared worker threads: the mix's CPU, the mean over the
    /// complete repetitions as for the classes (see [`RunOutcome::mix_cpu`]).
    ///
    /// [`RunOutcome::mix_cpu`]: stackbench_engine::RunOutcome
    pub mix_cpu: Option<CpuFigures>,
    pub complete: bool,
    pub incomplete_reason: Option<String>,
}

/// Runs `cfg` as many times as `it` asks; stops early on an incomplete run,
/// keeping the repetitions completed so far.
pub fn run_repeated(
    control: &mut dyn Execute,
    cfg: &RunConfig,
    it: &Iterations,
    stop: &AtomicBool,
    obs: &mut dyn Observer,
) -> Repeated {
    let mut runs: Vec<Vec<RepetitionValues>> = vec![Vec::new(); cfg.workload.classes.len()];
    let mut done: Vec<Vec<ClassResult>> = Vec::new();
    let mut partial: Vec<ClassResult> = Vec::new();
    let (mut mixes, mut partial_mix) = (Vec::new(), None);
    let (mut complete, mut reason) = (true, None);
    for n in 1..=it.max {
        obs.started(cfg);
        let outcome = control.execute(cfg, stop, &mut |p| obs.progress(p));
        obs.finished();
        let outcome = match outcome {
            Ok(o) => o,
            Err(e) => {
                (complete, reason) = (false, Some(e));
                break;
            }
        };
        if !outcome.complete {
            (complete, reason) = (false, outcome.incomplete_reason);
            partial = outcome.classes;
            partial_mix = outcome.mix_cpu;
            break;
        }
        for (values, class) in runs.iter_mut().zip(&outcome.classes) {
            values.push(values_of(class));
        }
        done.push(outcome.classes);
        mixes.extend(outcome.mix_cpu);
        let measures = measures(&runs);
        let refs: Vec<&[f64]> = measures.iter().map(Vec::as_slice).collect();
        if !matches!(it.verdict(n, &refs), Verdict::RunAnother) {
            break;
        }
    }
    let (mut classes, mix_cpu) = if done.is_empty() {
        (partial, partial_mix)
    } else {
        let mixes: Vec<&CpuFigures> = mixes.iter().collect();
        (mean_classes(&done), mean_cpu(&mixes))
    };
    if it.max > 1 {
        for (class, values) in classes.iter_mut().zip(&runs) {
            if !values.is_empty() {
                class.repetitions = Some(summarize_repetitions(values, it));
            }
        }
    }
    Repeated {
        classes,
        mix_cpu,
        complete,
        incomplete_reason: reason,
    }
}

fn values_of(class: &ClassResult) -> RepetitionValues {
    let cpu = class.cpu.as_ref();
    RepetitionValues {
        rate_tps: class.rate_tps,
        client_cpu_us_per_tran: cpu
            .and_then(|c| c.client.as_ref())
            .and_then(|s| s.cpu_us_per_tran),
        server_cpu_us_per_tran: cpu
            .and_then(|c| c.server.as_ref())
            .and_then(|s| s.cpu_us_per_tran),
    }
}

/// Every measure of every class, as the controller wants them: rate and the
/// two CPU figures per class (a measure missing in any run is left out).
fn measures(runs: &[Vec<RepetitionValues>]) -> Vec<Vec<f64>> {
    let mut out = Vec::new();
    for values in runs {
        out.push(values.iter().map(|v| v.rate_tps).collect());
        for pick in [
            |v: &RepetitionValues| v.client_cpu_us_per_tran,
            |v: &RepetitionValues| v.server_cpu_us_per_tran,
        ] {
            let col: Option<Vec<f64>> = values.iter().map(pick).collect();
            out.push(col.unwrap_or_default());
        }
    }
    out
}
