//! The headline figures of a repeated workload (`--repeat`, `--confidence`):
//! the mean over its complete repetitions of each class's figures, so that
//! `rate_tps` is the mean `repetitions.rate_tps` summarises, not whichever
//! run came last. Each field is combined by its rule for repetitions in
//! [`stackbench_metrics::combine`] (the one combine of class results, whose
//! table gives every field's rule beside the agents' exact merge): rates
//! and per-second figures the mean, counts the rounded mean, latency the
//! mean of the per-run figures with `min` and `max` the extremes, errors
//! (and a population's `late` and `dropped`) summed so an error in any run
//! stays visible, CPU and memory figures averaged, and the identity of the
//! class the first run's; `repetitions` is left for the caller to fill.

use stackbench_metrics::combine::{combine, Mode};
use stackbench_record::{ClassResult, CpuFigures};

pub use stackbench_metrics::combine::served_by;

#[cfg(test)]
use stackbench_record::{
    ErrorCounts, LatencyUs, MemoryFigures, ProcessCpu, ServedBy, SideCpu, SideMemory,
};

/// Per class (by position), the mean of the classes of every run in `runs`
/// (each run lists its classes in the same order). Empty when `runs` is.
pub fn mean_classes(runs: &[Vec<ClassResult>]) -> Vec<ClassResult> {
    let classes = runs.iter().map(Vec::len).min().unwrap_or(0);
    (0..classes)
        .map(|i| {
            let of: Vec<&ClassResult> = runs.iter().map(|run| &run[i]).collect();
            combine(Mode::Repetitions, &of)
        })
        .collect()
}

/// The mean of a mix's CPU figures over its repetitions (as a class's CPU
/// is averaged); `None` when `runs` is empty.
pub fn mean_cpu(runs: &[&CpuFigures]) -> Option<CpuFigures> {
    stackbench_metrics::combine::mean_cpu(runs)
}

#[cfg(test)]
mod tests {

    use super::*;

    /// Repetitions' (or agents') connection counts add up, so one that ran
    /// off its backend shows in the sum; one without counts makes it unknown.
    #[test]
    fn served_by_adds_up_and_an_uncounted_part_is_unknown() {
        use stackbench_record::BackendConnections;
        let one = ServedBy {
            driver: BackendConnections {
                io_uring: 2,
                ..BackendConnections::default()
            },
            responder: Some(BackendConnections {
                epoll: 2,
                ..BackendConnections::default()
            }),
        };
        let sum = served_by([Some(one), Some(one)].into_iter()).unwrap();
        assert_eq!(sum.driver.io_uring, 4);
        assert_eq!(sum.responder.map(|r| r.epoll), Some(4));
        assert_eq!(served_by([Some(one), None].into_iter()), None);
        assert_eq!(served_by(std::iter::empty()), None);
    }

    /// A class as one repetition might have measured it.
    fn run(rate_tps: f64, p99: f64, max: f64, errors: u64, cpu_us: Option<f64>) -> ClassResult {
        let side = SideCpu {
            cpus: vec![0],
            util_pct: rate_tps / 100.0,
            cpu_us_per_tran: cpu_us,
            process: Some(ProcessCpu {
                cpu_seconds: rate_tps / 1000.0,
                ..ProcessCpu::default()
            }),
            ..SideCpu::default()
        };
        ClassResult {
            transactions: rate_tps as u64,
            duration_s: 1.0,
            rate_tps,
            latency_us: Some(LatencyUs {
                min: p99 / 10.0,
                p99,
                max,
                ..LatencyUs::default()
            }),
            tx_bytes: rate_tps as u64,
            rx_bytes: rate_tps as u64,
            tx_bytes_per_s: rate_tps,
            rx_bytes_per_s: rate_tps,
            errors,
            error_counts: ErrorCounts {
                reset: errors,
                ..ErrorCounts::default()
            },
            per_second_tps: vec![rate_tps; rate_tps as usize / 1000],
            cpu: Some(CpuFigures {
                client: Some(side),
                ..CpuFigures::default()
            }),
            memory: Some(MemoryFigures {
                client: Some(SideMemory {
                    rss_bytes: rate_tps as u64,
                    ..SideMemory::default()
                }),
                server: None,
            }),
            ..ClassResult::sample()
        }
    }

    #[test]
    fn headline_figures_are_the_mean_of_the_repetitions() {
        let runs = vec![
            vec![run(1000.0, 50.0, 900.0, 0, Some(10.0))],
            vec![run(2000.0, 70.0, 300.0, 1, Some(20.0))],
            vec![run(3001.0, 90.0, 500.0, 0, Some(30.0))],
        ];
        let mean = &mean_classes(&runs)[0];
        assert_eq!(mean.notation, "RR1(1B/1B)");
        assert_eq!(mean.rate_tps, 2000.3333333333333);
        assert_eq!(mean.transactions, 2000, "a rounded mean count");
        assert_eq!(mean.tx_bytes_per_s, mean.rate_tps);
        let latency = mean.latency_us.unwrap();
        assert_eq!(latency.p99, 70.0, "the mean of per-run percentiles");
        assert_eq!(latency.min, 5.0, "the smallest of all runs");
        assert_eq!(latency.max, 900.0, "the largest of all runs");
        assert_eq!(mean.errors, 1, "errors of every run add up");
        assert_eq!(mean.error_counts.reset, 1);
        assert_eq!(
            mean.per_second_tps,
            vec![2000.3333333333333],
            "common seconds"
        );
        let client = mean.cpu.as_ref().unwrap().client.as_ref().unwrap();
        assert_eq!(client.cpu_us_per_tran, Some(20.0));
        assert_eq!(client.util_pct, 20.003333333333334);
        assert_eq!(client.cpus, vec![0]);
        assert_eq!(
            client.process.unwrap().cpu_seconds,
            (1.0 + 2.0 + 3.001) / 3.0
        );
        let memory = mean.memory.clone().unwrap();
        assert_eq!(memory.client.unwrap().rss_bytes, 2000);
        assert_eq!(memory.server, None);
        assert_eq!(mean.repetitions, None);
    }

    #[test]
    fn a_figure_missing_in_any_run_is_left_out() {
        let runs = vec![
            vec![run(1000.0, 50.0, 90.0, 0, Some(10.0))],
            vec![run(1000.0, 50.0, 90.0, 0, None)],
        ];
        let mean = &mean_classes(&runs)[0];
        let client = mean.cpu.as_ref().unwrap().client.as_ref().unwrap();
        assert_eq!(client.cpu_us_per_tran, None);
        let mut no_cpu = run(1000.0, 50.0, 90.0, 0, None);
        no_cpu.cpu = None;
        let runs = vec![vec![run(1000.0, 50.0, 90.0, 0, Some(1.0))], vec![no_cpu]];
        assert_eq!(mean_classes(&runs)[0].cpu, None);
    }

    #[test]
    fn one_run_is_its_own_mean() {
        let one = run(1234.0, 60.0, 700.0, 2, Some(12.5));
        assert_eq!(mean_classes(&[vec![one.clone()]]), vec![one]);
        assert!(mean_classes(&[]).is_empty());
    }
}
