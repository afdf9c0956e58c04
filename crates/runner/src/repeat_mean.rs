//! The headline figures of a repeated workload (`--repeat`, `--confidence`):
//! the mean over its complete repetitions of each class's figures, so that
//! `rate_tps` is the mean `repetitions.rate_tps` summarises, not whichever
//! run came last. What is averaged, and how:
//!
//! - rates and per-second figures (`rate_tps`, `duration_s`, `*_bytes_per_s`):
//!   the arithmetic mean; counts (`transactions`, `tx_bytes`, `rx_bytes`): the
//!   mean rounded to a whole number;
//! - latency: the mean of each repetition's mean, percentiles and standard
//!   deviation (the per-run histograms are not kept, so percentiles of the
//!   pooled transactions cannot be computed; the mean of per-run percentiles
//!   is the usual summary); `min` and `max` are the extremes over all runs;
//! - errors: the sum over all repetitions, so that an error in any run stays
//!   visible (a mean would round one error in three runs away);
//! - `per_second_tps`: the mean of each second over the seconds every run has;
//! - CPU and memory: every numeric figure (CPU-seconds, utilisation, µs per
//!   transaction and per MiB, breakdown, process figures; RSS and socket
//!   memory, per connection too) is the mean; an optional figure is present
//!   only when every run has it; CPU sets and methods are those of the first
//!   run (they are the same in every run of a workload);
//! - population figures (think time, open loop): waits, offered rate,
//!   connect time and lag/uncorrected percentiles the mean, `late` and
//!   `dropped` summed (as errors), `connected` the fewest of any run, the
//!   pacing as written the first run's;
//! - the identity of the class (workload, notation, clients, sizes) is the
//!   first run's; `repetitions` is left for the caller to fill.

use stackbench_record::{ClassResult, ErrorCounts, ServedBy};
use stackbench_record::{
    CpuBreakdown, CpuFigures, LagUs, LatencyUs, MemoryFigures, PopulationFigures, ProcessCpu,
    SideCpu, SideMemory,
};

/// Per class (by position), the mean of the classes of every run in `runs`
/// (each run lists its classes in the same order). Empty when `runs` is.
pub fn mean_classes(runs: &[Vec<ClassResult>]) -> Vec<ClassResult> {
    let classes = runs.iter().map(Vec::len).min().unwrap_or(0);
    (0..classes)
        .map(|i| mean_class(&Of(runs.iter().map(|run| &run[i]).collect())))
        .collect()
}

/// The mean of a mix's CPU figures over its repetitions (as a class's CPU
/// is averaged); `None` when `runs` is empty.
pub fn mean_cpu(runs: &[&CpuFigures]) -> Option<CpuFigures> {
    (!runs.is_empty()).then(|| cpu_figures(&Of(runs.to_vec())))
}

/// The figures of one value across runs; never empty.
struct Of<'a, T>(Vec<&'a T>);

impl<'a, T> Of<'a, T> {
    fn first(&self) -> &'a T {
        self.0[0]
    }

    fn f(&self, get: impl Fn(&T) -> f64) -> f64 {
        self.0.iter().map(|x| get(x)).sum::<f64>() / self.0.len() as f64
    }

    /// The mean of a count, rounded to the nearest whole number.
    fn u(&self, get: impl Fn(&T) -> u64) -> u64 {
        let n = self.0.len() as u128;
        let sum: u128 = self.0.iter().map(|x| u128::from(get(x))).sum();
        ((sum + n / 2) / n) as u64
    }

    /// The mean, when every run has the figure.
    fn opt(&self, get: impl Fn(&T) -> Option<f64>) -> Option<f64> {
        let values: Option<Vec<f64>> = self.0.iter().map(|x| get(x)).collect();
        values.map(|v| v.iter().sum::<f64>() / v.len() as f64)
    }

    fn opt_u(&self, get: impl Fn(&T) -> Option<u64>) -> Option<u64> {
        let all: Option<Vec<u64>> = self.0.iter().map(|x| get(x)).collect();
        all.map(|v| Of(v.iter().collect()).u(|x| *x))
    }

    /// The same part of every run, when every run has it.
    fn each<U>(&self, get: impl Fn(&'a T) -> Option<&'a U>) -> Option<Of<'a, U>> {
        self.0.iter().map(|x| get(x)).collect::<Option<_>>().map(Of)
    }

    fn all<U>(&self, get: impl Fn(&'a T) -> &'a U) -> Of<'a, U> {
        Of(self.0.iter().map(|x| get(x)).collect())
    }
}

fn mean_class(runs: &Of<ClassResult>) -> ClassResult {
    let first = runs.first();
    let mut errors = ErrorCounts::default();
    runs.0.iter().for_each(|c| errors.add(&c.error_counts));
    ClassResult {
        workload: first.workload.clone(),
        notation: first.notation.clone(),
        kind: first.kind,
        stream_direction: first.stream_direction,
        clients: first.clients,
        request_bytes: first.request_bytes,
        response_bytes: first.response_bytes,
        transactions: runs.u(|c| c.transactions),
        duration_s: runs.f(|c| c.duration_s),
        rate_tps: runs.f(|c| c.rate_tps),
        latency_us: runs.each(|c| c.latency_us.as_ref()).map(|l| latency(&l)),
        // A mean over repetitions has no one distribution of its own; a
        // single repetition keeps its own.
        latency_hdr: match runs.0.as_slice() {
            [one] => one.latency_hdr.clone(),
            _ => None,
        },
        tx_bytes: runs.u(|c| c.tx_bytes),
        rx_bytes: runs.u(|c| c.rx_bytes),
        tx_bytes_per_s: runs.f(|c| c.tx_bytes_per_s),
        rx_bytes_per_s: runs.f(|c| c.rx_bytes_per_s),
        errors: errors.total(),
        error_counts: errors,
        per_second_tps: per_second(runs),
        cpu: runs.each(|c| c.cpu.as_ref()).map(|cpu| cpu_figures(&cpu)),
        memory: runs.each(|c| c.memory.as_ref()).map(|m| memory(&m)),
        repetitions: None,
        population: runs.each(|c| c.population.as_ref()).map(|p| population(&p)),
        // What was negotiated is the same in every repetition; the counts
        // and handshake latency are the first repetition's.
        tls: first.tls.clone(),
        // Bands add up: a stall in any repetition is counted.
        stall_band: runs
            .0
            .iter()
            .filter_map(|c| c.stall_band)
            .reduce(|a, b| a.add(&b)),
        // Connections add up: one repetition off its backend shows.
        served_by: served_by(runs.0.iter().map(|c| c.served_by)),
    }
}

/// The backends' connection counts of several runs of one class (its
/// repetitions, or its agents' shares) added up; `None` when one of them
/// has none (a part counted by nobody is unknown).
pub fn served_by(all: impl Iterator<Item = Option<ServedBy>>) -> Option<ServedBy> {
    all.reduce(|a, b| a.zip(b).map(|(a, b)| a.add(&b)))
        .flatten()
}

fn population(runs: &Of<PopulationFigures>) -> PopulationFigures {
    let first = runs.first();
    PopulationFigures {
        pacing: first.pacing,
        pacing_text: first.pacing_text.clone(),
        think_mean_s: first.think_mean_s,
        wait_mean_s: runs.opt(|p| p.wait_mean_s),
        offered_rate_tps: first.offered_rate_tps,
        arrivals: first.arrivals.clone(),
        latency_uncorrected_us: runs
            .each(|p| p.latency_uncorrected_us.as_ref())
            .map(|l| latency(&l)),
        late: runs.0.iter().map(|p| p.late).sum(),
        dropped: runs.0.iter().map(|p| p.dropped).sum(),
        generator_lag_us: runs.each(|p| p.generator_lag_us.as_ref()).map(|l| LagUs {
            p50: l.f(|l| l.p50),
            p99: l.f(|l| l.p99),
            max: l.0.iter().map(|l| l.max).fold(f64::NEG_INFINITY, f64::max),
        }),
        connected: runs.0.iter().map(|p| p.connected).min().unwrap_or(0),
        connect_s: runs.f(|p| p.connect_s),
    }
}

fn latency(runs: &Of<LatencyUs>) -> LatencyUs {
    LatencyUs {
        mean: runs.f(|l| l.mean),
        min: runs.0.iter().map(|l| l.min).fold(f64::INFINITY, f64::min),
        p50: runs.f(|l| l.p50),
        p90: runs.f(|l| l.p90),
        p99: runs.f(|l| l.p99),
        p999: runs.f(|l| l.p999),
        max: runs
            .0
            .iter()
            .map(|l| l.max)
            .fold(f64::NEG_INFINITY, f64::max),
        stdev: runs.f(|l| l.stdev),
    }
}

fn per_second(runs: &Of<ClassResult>) -> Vec<f64> {
    let seconds = runs.0.iter().map(|c| c.per_second_tps.len()).min();
    (0..seconds.unwrap_or(0))
        .map(|s| runs.f(|c| c.per_second_tps[s]))
        .collect()
}

fn cpu_figures(runs: &Of<CpuFigures>) -> CpuFigures {
    CpuFigures {
        client: runs.each(|c| c.client.as_ref()).map(|s| side_cpu(&s)),
        server: runs.each(|c| c.server.as_ref()).map(|s| side_cpu(&s)),
        separable: runs.first().separable,
        shared: runs.each(|c| c.shared.as_ref()).map(|s| side_cpu(&s)),
        total_cpu_seconds: runs.opt(|c| c.total_cpu_seconds),
        total_cpu_us_per_tran: runs.opt(|c| c.total_cpu_us_per_tran),
        attribution: runs.first().attribution,
    }
}

fn side_cpu(runs: &Of<SideCpu>) -> SideCpu {
    let first = runs.first();
    let b = runs.all(|s| &s.breakdown);
    SideCpu {
        cpus: first.cpus.clone(),
        method: first.method,
        window_s: runs.f(|s| s.window_s),
        cpu_seconds: runs.f(|s| s.cpu_seconds),
        util_pct: runs.f(|s| s.util_pct),
        cpu_us_per_tran: runs.opt(|s| s.cpu_us_per_tran),
        cpu_us_per_mb: runs.opt(|s| s.cpu_us_per_mb),
        breakdown: CpuBreakdown {
            user: b.f(|x| x.user),
            nice: b.f(|x| x.nice),
            system: b.f(|x| x.system),
            irq: b.f(|x| x.irq),
            softirq: b.f(|x| x.softirq),
            steal: b.f(|x| x.steal),
            iowait: b.f(|x| x.iowait),
            idle: b.f(|x| x.idle),
        },
        tick_busy_s: runs.f(|s| s.tick_busy_s),
        tick_util_pct: runs.f(|s| s.tick_util_pct),
        tick_coverage: runs.opt(|s| s.tick_coverage),
        process: runs.each(|s| s.process.as_ref()).map(|p| ProcessCpu {
            method: p.first().method,
            user_s: p.f(|x| x.user_s),
            system_s: p.f(|x| x.system_s),
            cpu_seconds: p.f(|x| x.cpu_seconds),
        }),
        process_cpu_us_per_tran: runs.opt(|s| s.process_cpu_us_per_tran),
        attribution: first.attribution,
    }
}

fn memory(runs: &Of<MemoryFigures>) -> MemoryFigures {
    MemoryFigures {
        client: runs.each(|m| m.client.as_ref()).map(|s| side_memory(&s)),
        server: runs.each(|m| m.server.as_ref()).map(|s| side_memory(&s)),
    }
}

fn side_memory(runs: &Of<SideMemory>) -> SideMemory {
    SideMemory {
        rss_bytes: runs.u(|m| m.rss_bytes),
        rss_baseline_bytes: runs.opt_u(|m| m.rss_baseline_bytes),
        rss_bytes_per_conn: runs.opt(|m| m.rss_bytes_per_conn),
        kernel_sock_bytes: runs.opt_u(|m| m.kernel_sock_bytes),
        kernel_sock_bytes_per_conn: runs.opt(|m| m.kernel_sock_bytes_per_conn),
        kernel_sock_sockets: runs.opt_u(|m| m.kernel_sock_sockets),
        // How and what was summed is the same in every repetition of a run.
        kernel_sock_method: runs.0[0].kernel_sock_method.clone(),
        kernel_sock_fields: runs.0[0].kernel_sock_fields.clone(),
        // Per-field sums are a repetition's own: kept for a single one.
        kernel_sock_meminfo: match runs.0[..] {
            [one] => one.kernel_sock_meminfo,
            _ => None,
        },
        kernel_sock_object_bytes_per_socket: runs.opt_u(|m| m.kernel_sock_object_bytes_per_socket),
        host_sock_mem_bytes: runs.u(|m| m.host_sock_mem_bytes),
        host_sock_mem_baseline_bytes: runs.opt_u(|m| m.host_sock_mem_baseline_bytes),
        host_sock_mem_bytes_per_conn: runs.opt(|m| m.host_sock_mem_bytes_per_conn),
        connections: runs.u(|m| m.connections),
        tcp_inuse: runs.u(|m| m.tcp_inuse),
        tcp_orphan: runs.u(|m| m.tcp_orphan),
        tcp_tw: runs.u(|m| m.tcp_tw),
        // Every repetition's note, once.
        notes: runs.0.iter().flat_map(|m| m.notes.iter().cloned()).fold(
            Vec::new(),
            |mut all, n| {
                if !all.contains(&n) {
                    all.push(n);
                }
                all
            },
        ),
    }
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
