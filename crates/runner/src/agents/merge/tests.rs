use stackbench_metrics::LatencyHistogram;
use stackbench_record::{
    ClassResult, CpuFigures, LatencyUs, MemoryFigures, ProcessCpu, SideCpu, SideMemory,
};

use super::*;

/// Latencies in ns from a fixed linear congruential sequence, spread over
/// three decades and scaled by `scale` (so each agent's distribution is its own).
fn samples(n: usize, seed: u64, scale: u64) -> Vec<u64> {
    let mut x = seed;
    (0..n)
        .map(|_| {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let r = (x >> 33) % 1_000_000;
            // 10 µs … ~10 ms, heavy-tailed: most values small, a few large.
            (10_000 + r * r / 100_000) * scale
        })
        .collect()
}

fn histogram(values: &[u64]) -> LatencyHistogram {
    let mut h = LatencyHistogram::new();
    values.iter().for_each(|&v| h.record_ns(v));
    h
}

/// One agent's class as the engine builds it: counts, rate over its own
/// window, and its histogram with the summary taken from it.
fn class(transactions: u64, duration_s: f64, clients: u32, latencies: &[u64]) -> ClassResult {
    let h = histogram(latencies);
    ClassResult {
        notation: "RR10(4kB/4kB)".into(),
        workload: "RR10(4kB/4kB)".into(),
        clients,
        transactions,
        duration_s,
        rate_tps: transactions as f64 / duration_s,
        latency_us: h.summary_us(),
        latency_hdr: (h.count() > 0).then(|| h.to_base64()),
        tx_bytes: transactions * 4096,
        rx_bytes: transactions * 4096,
        tx_bytes_per_s: (transactions * 4096) as f64 / duration_s,
        rx_bytes_per_s: (transactions * 4096) as f64 / duration_s,
        per_second_tps: vec![transactions as f64 / duration_s; duration_s as usize],
        ..ClassResult::sample()
    }
}

fn part(index: u32, host: &str, classes: Vec<ClassResult>) -> AgentPart {
    AgentPart {
        index,
        count: 4,
        pid: 1000 + index,
        host: host.into(),
        responder: "responder:7701".into(),
        responder_host: "responder".into(),
        classes,
        mix_cpu: None,
        complete: true,
        incomplete_reason: None,
        window_start_s: Some(1_700_000_000.0),
        clock_offset_s: 0.0,
        clock_rtt_s: 0.0001,
    }
}

/// Known raw samples split unevenly over 4 agents, each with its own
/// distribution: the merged percentiles, mean, extremes and count are
/// those of one histogram of all the samples (the union), which the mean of
/// the agents' percentiles is not.
#[test]
fn merged_percentiles_are_those_of_the_union_of_samples() {
    let sizes = [7_000, 1_500, 900, 12_345];
    let all: Vec<Vec<u64>> = sizes
        .iter()
        .enumerate()
        .map(|(i, &n)| samples(n, 17 + i as u64, 1 + i as u64 * 3))
        .collect();
    let parts: Vec<AgentPart> = all
        .iter()
        .enumerate()
        .map(|(i, s)| part(i as u32, "a", vec![class(s.len() as u64, 10.0, 3, s)]))
        .collect();
    let merged = merge(&parts, "local");
    let union = histogram(&all.concat());
    let want = union.summary_us().unwrap();
    let got = merged.classes[0].latency_us.unwrap();
    assert_eq!(got, want);
    assert_eq!(
        (got.p50, got.p99, got.p999, got.max),
        (want.p50, want.p99, want.p999, want.max)
    );
    let back =
        LatencyHistogram::from_base64(merged.classes[0].latency_hdr.as_ref().unwrap()).unwrap();
    assert_eq!(back.count(), union.count());
    assert_eq!(back.summary_us(), Some(want));
    // What averaging the agents' P99 (k8s-netperf's way) would have given.
    let averaged = parts
        .iter()
        .map(|p| p.classes[0].latency_us.unwrap().p99)
        .sum::<f64>()
        / 4.0;
    assert!(
        (averaged - want.p99).abs() > 0.05 * want.p99,
        "{averaged} vs {}",
        want.p99
    );
    assert!(
        merged.agents.merge_notes.is_empty(),
        "{:?}",
        merged.agents.merge_notes
    );
}

/// `--transactions 100000` over 4 uneven segments adds up to exactly
/// 100,000; the rate is over the longest window, clients and errors add up,
/// and the seconds add second by second.
#[test]
fn counts_add_up_exactly_and_rates_are_over_the_common_window() {
    let counts = [40_000u64, 30_000, 20_001, 9_999];
    let windows = [10.0, 10.004, 9.998, 10.001];
    let parts: Vec<AgentPart> = (0..4)
        .map(|i| {
            let mut c = class(
                counts[i],
                windows[i],
                2 + i as u32,
                &samples(100, i as u64, 1),
            );
            c.error_counts.reset = i as u64;
            c.errors = i as u64;
            c.per_second_tps = vec![counts[i] as f64 / 10.0; 10 - (i == 2) as usize];
            part(i as u32, "a", vec![c])
        })
        .collect();
    let merged = merge(&parts, "local");
    let c = &merged.classes[0];
    assert_eq!(c.transactions, 100_000);
    assert_eq!(c.duration_s, 10.004);
    assert_eq!(c.rate_tps, 100_000.0 / 10.004);
    assert_eq!(c.tx_bytes, 100_000 * 4096);
    assert_eq!(c.tx_bytes_per_s, 100_000.0 * 4096.0 / 10.004);
    assert_eq!(c.clients, 2 + 3 + 4 + 5);
    assert_eq!((c.errors, c.error_counts.reset), (6, 6));
    // Agent 2's window closed before its 10th whole second: 9 common seconds.
    assert_eq!(c.per_second_tps, vec![10_000.0; 9]);
    assert_eq!(c.repetitions, None);
    assert!(merged.complete);
}

fn side(cpus: usize, window_s: f64, cpu_seconds: f64, process_s: f64) -> SideCpu {
    SideCpu {
        cpus: (0..cpus).collect(),
        window_s,
        cpu_seconds,
        util_pct: 100.0 * cpu_seconds / (window_s * cpus as f64),
        cpu_us_per_tran: Some(1.0),
        tick_busy_s: cpu_seconds,
        tick_coverage: Some(1.0),
        process: Some(ProcessCpu {
            cpu_seconds: process_s,
            user_s: process_s,
            ..ProcessCpu::default()
        }),
        process_cpu_us_per_tran: Some(1.0),
        ..SideCpu::default()
    }
}

fn memory(rss: u64, host_sock: u64, sockets: u64, connections: u64) -> SideMemory {
    SideMemory {
        rss_bytes: rss,
        rss_baseline_bytes: Some(rss / 2),
        kernel_sock_bytes: Some(sockets),
        kernel_sock_sockets: Some(connections),
        host_sock_mem_bytes: host_sock,
        host_sock_mem_baseline_bytes: Some(0),
        connections,
        tcp_inuse: connections,
        ..SideMemory::default()
    }
}

/// Two agents on host A see A's CPU set (4 CPUs) with each other's work in
/// it; one agent on host B sees B's (2 CPUs). The CPU-set figures count A
/// once (the longer window's view) and B once; the process figures add up
/// over the three agents. All drive one responder, whose host view and
/// process are counted once; its sockets are each agent's own.
#[test]
fn cpu_set_views_once_per_host_and_process_figures_summed() {
    let agent = |index: u32, host: &str, client: SideCpu, rss: u64| {
        let mut c = class(10_000, 10.0, 5, &samples(10, 1, 1));
        c.cpu = Some(CpuFigures::combine(
            Some(client),
            Some(side(8, 10.0, 3.0, 2.5)),
            None,
        ));
        c.memory = Some(MemoryFigures {
            client: Some(memory(rss, 1_000_000, 40_000, 5)),
            server: Some(memory(80 << 20, 5_000_000, 30_000, 5)),
        });
        part(index, host, vec![c])
    };
    let parts = vec![
        agent(0, "a", side(4, 10.0, 4.0, 1.0), 10 << 20),
        agent(1, "a", side(4, 10.002, 4.1, 1.5), 12 << 20),
        agent(2, "b", side(2, 10.0, 2.0, 0.5), 14 << 20),
    ];
    let merged = merge(&parts, "slurm");
    let cpu = merged.classes[0].cpu.as_ref().unwrap();
    let client = cpu.client.as_ref().unwrap();
    assert_eq!(
        client.cpu_seconds,
        4.1 + 2.0,
        "host a once, by its longest window"
    );
    assert_eq!(client.cpus.len(), 6);
    assert_eq!(client.util_pct, 100.0 * 6.1 / (10.002 * 4.0 + 10.0 * 2.0));
    assert_eq!(client.process.unwrap().cpu_seconds, 1.0 + 1.5 + 0.5);
    assert_eq!(client.cpu_us_per_tran, Some(6.1e6 / 30_000.0));
    assert_eq!(client.process_cpu_us_per_tran, Some(3.0e6 / 30_000.0));
    let server = cpu.server.as_ref().unwrap();
    assert_eq!(server.cpu_seconds, 3.0, "one responder host");
    assert_eq!(
        server.process.unwrap().cpu_seconds,
        2.5,
        "one responder process"
    );
    assert_eq!(cpu.total_cpu_seconds, Some(6.1 + 3.0));
    assert!(cpu.separable);
    let mem = merged.classes[0].memory.as_ref().unwrap();
    let (cm, sm) = (mem.client.as_ref().unwrap(), mem.server.as_ref().unwrap());
    assert_eq!(cm.rss_bytes, (10 + 12 + 14) << 20, "every agent's process");
    assert_eq!(cm.host_sock_mem_bytes, 2_000_000, "hosts a and b once each");
    assert_eq!(cm.connections, 15);
    assert_eq!(cm.kernel_sock_bytes_per_conn, Some(120_000.0 / 15.0));
    assert_eq!(sm.rss_bytes, 80 << 20, "one responder process");
    assert_eq!(sm.rss_bytes_per_conn, Some((40 << 20) as f64 / 15.0));
    assert_eq!(
        sm.kernel_sock_bytes,
        Some(90_000),
        "each agent's own sockets"
    );
    assert_eq!(sm.host_sock_mem_bytes, 5_000_000);
    // Each agent's own view stays in its row.
    let row = &merged.agents.agents[1].classes[0];
    assert_eq!(row.client_util_pct, Some(100.0 * 4.1 / (10.002 * 4.0)));
    assert_eq!(merged.agents.launcher, "slurm");
}

/// An agent that died makes the run incomplete, named by index, segment
/// and host with its own reason; the other agents' figures and rows stay.
#[test]
fn an_incomplete_agent_is_named_and_the_others_are_kept() {
    let mut parts: Vec<AgentPart> = (0..4)
        .map(|i| part(i, "node1", vec![class(25_000, 10.0, 4, &samples(50, 3, 1))]))
        .collect();
    parts[2].host = "node7".into();
    parts[2].complete = false;
    parts[2].incomplete_reason = Some("control connection lost".into());
    parts[2].classes.clear();
    parts[2].window_start_s = None;
    let merged = merge(&parts, "external");
    assert!(!merged.complete);
    let why = merged.incomplete_reason.unwrap();
    assert_eq!(
        why,
        "agent 2 (segment 2/4, host node7, pid 1002) is incomplete: control connection lost"
    );
    assert_eq!(merged.classes[0].transactions, 75_000);
    assert_eq!(merged.classes[0].clients, 12);
    let rows = &merged.agents.agents;
    assert_eq!(rows.len(), 4);
    assert!(rows[2].classes.is_empty() && !rows[2].complete);
    assert!(rows
        .iter()
        .filter(|r| r.index != 2)
        .all(|r| r.classes.len() == 1));
    // A segment nobody reported is named too.
    let merged = merge(&parts[..3], "external");
    assert!(merged
        .incomplete_reason
        .unwrap()
        .ends_with("agent 3 (segment 3/4) never reported"));
}

/// The start skew is measured on the controller's clock: each agent's own
/// start corrected by its clock offset (agent − controller).
#[test]
fn start_skew_is_on_the_controllers_clock() {
    let base = 1_700_000_000.0;
    let mut parts: Vec<AgentPart> = (0..4)
        .map(|i| part(i, "h", vec![class(10, 1.0, 1, &samples(10, 1, 1))]))
        .collect();
    // Agent 1's clock runs 0.5 s ahead and it started 2.3 ms late; agent
    // 2's runs 2 ms behind and it started 1 ms late; agent 3 never opened.
    parts[0].window_start_s = Some(base);
    (parts[1].window_start_s, parts[1].clock_offset_s) = (Some(base + 0.5 + 0.0023), 0.5);
    (parts[2].window_start_s, parts[2].clock_offset_s) = (Some(base - 0.002 + 0.001), -0.002);
    parts[3].window_start_s = None;
    let merged = merge(&parts, "local");
    let skew = merged.agents.start_skew_s.unwrap();
    assert!((skew - 0.0023).abs() < 1e-6, "{skew}");
    let row = &merged.agents.agents[1];
    assert!((row.window_start_s.unwrap() - (base + 0.0023)).abs() < 1e-6);
    assert_eq!(merged.agents.agents[3].window_start_s, None);
    assert_eq!(merge(&[], "local").agents.start_skew_s, None);
}

/// An agent with transactions but no histogram: no merged latency (never
/// the other agents' alone), and a note that names it.
#[test]
fn an_agent_without_a_histogram_leaves_no_latency_and_says_why() {
    let mut parts: Vec<AgentPart> = (0..2)
        .map(|i| part(i, "h", vec![class(100, 1.0, 1, &samples(100, i as u64, 1))]))
        .collect();
    parts[1].classes[0].latency_hdr = None;
    let merged = merge(&parts, "local");
    assert_eq!(merged.classes[0].latency_us, None);
    assert_eq!(merged.classes[0].latency_hdr, None);
    let note = &merged.agents.merge_notes[0];
    assert!(note.contains("agent 1 (segment 1/4, host h)"), "{note}");
    assert!(note.contains("100 transactions"), "{note}");
    // Without transactions, no histogram is expected.
    parts[1].classes[0].transactions = 0;
    assert!(merge(&parts, "local").classes[0].latency_us.is_some());
}

/// Little's law holds of the merged population when it held of each agent:
/// N and X add up, R is the merged mean, Z the transaction-weighted wait.
#[test]
fn a_population_merges_so_littles_law_still_holds() {
    use stackbench_record::{PacingMode, PopulationFigures};
    let agent = |i: u32, clients: u32, latency_ns: u64| {
        // N = X (R + Z) with Z = 1 s: X = N / (R + Z).
        let r_s = latency_ns as f64 / 1e9;
        let x = f64::from(clients) / (r_s + 1.0);
        let n = (x * 100.0).round() as u64;
        let mut c = class(n, 100.0, clients, &vec![latency_ns; n as usize]);
        c.population = Some(PopulationFigures {
            pacing: PacingMode::Think,
            wait_mean_s: Some(1.0),
            connected: clients,
            ..PopulationFigures::default()
        });
        part(i, "h", vec![c])
    };
    let parts = vec![agent(0, 400, 2_000_000), agent(1, 600, 50_000_000)];
    let merged = merge(&parts, "local");
    let c = &merged.classes[0];
    let p = c.population.as_ref().unwrap();
    assert_eq!((c.clients, p.connected), (1000, 1000));
    let implied = c.rate_tps * (c.latency_us.unwrap().mean / 1e6 + p.wait_mean_s.unwrap());
    assert!(
        (implied / 1000.0 - 1.0).abs() < 0.005,
        "N = X(R+Z) gives {implied}"
    );
    assert!(stackbench_metrics::warnings::check_little_law(c).is_none());
}

/// The generator's lag of a population run over agents is the agents' lag
/// histograms added (protocol 5), not one agent's percentiles: the merged
/// p99 is the p99 of every send, and its share of the merged latency p99
/// says how much of the tail is the generator's, which the
/// `generator_tail` warning reads.
#[test]
fn the_generator_lag_merges_exactly_and_names_its_share_of_the_tail() {
    use stackbench_record::{LagUs, PacingMode, PopulationFigures};
    let agent = |i: u32, seed: u64, lag_scale: u64| {
        let latencies = samples(2_000, seed, 1);
        let lags: Vec<u64> = samples(2_000, seed + 10, lag_scale)
            .iter()
            .map(|v| v / 4)
            .collect();
        let (h, lag) = (histogram(&latencies), histogram(&lags));
        let mut c = class(2_000, 10.0, 100, &latencies);
        c.population = Some(PopulationFigures {
            pacing: PacingMode::Think,
            wait_mean_s: Some(1.0),
            connected: 100,
            generator_lag_us: lag.summary_us().map(LagUs::of),
            generator_lag_hdr: Some(lag.to_base64()),
            generator_lag_p99_share_pct: stackbench_metrics::generator_lag_p99_share_pct(
                lag.summary_us().map(|l| l.p99),
                h.summary_us().map(|l| l.p99),
            ),
            ..PopulationFigures::default()
        });
        (part(i, "h", vec![c]), latencies, lags)
    };
    let (a, la, ga) = agent(0, 1, 1);
    let (b, lb, gb) = agent(1, 2, 8);
    let merged = merge(&[a, b], "local");
    let c = &merged.classes[0];
    let p = c.population.as_ref().unwrap();
    let every_lag = histogram(&[ga, gb].concat());
    let every_latency = histogram(&[la, lb].concat());
    assert_eq!(p.generator_lag_us, every_lag.summary_us().map(LagUs::of));
    assert_eq!(p.generator_lag_hdr, Some(every_lag.to_base64()));
    let share =
        100.0 * every_lag.summary_us().unwrap().p99 / every_latency.summary_us().unwrap().p99;
    assert_eq!(p.generator_lag_p99_share_pct, Some(share.min(100.0)));
    assert_eq!(merged.agents.merge_notes, Vec::<String>::new());
    let tail = stackbench_metrics::warnings::check_generator_tail(c);
    assert_eq!(
        tail.map(|w| w.code()),
        Some("generator_tail"),
        "{share}% of the tail"
    );
}

/// Parts of another workload are not added into this one's classes.
#[test]
fn a_part_with_other_classes_is_left_out_and_named() {
    let mut parts: Vec<AgentPart> = (0..2)
        .map(|i| part(i, "h", vec![class(10, 1.0, 1, &samples(10, 1, 1))]))
        .collect();
    parts[1].classes[0].notation = "RR1(1B/2B)".into();
    parts[1].classes[0].response_bytes += 1;
    let merged = merge(&parts, "local");
    assert_eq!(merged.classes[0].transactions, 10);
    assert!(merged
        .incomplete_reason
        .unwrap()
        .contains("measured RR1(1B/2B) instead of"));
}

/// Agents name their classes by their own share of the clients (262,144
/// users over 15 agents: RR17477 beside RR17476); those are the same class.
#[test]
fn uneven_shares_of_one_class_merge() {
    let mut parts: Vec<AgentPart> = (0..4)
        .map(|i| part(i, "h", vec![class(10, 1.0, 1, &samples(10, 1, 1))]))
        .collect();
    parts[0].classes[0].notation = "RR17477(1B/1B)".into();
    let merged = merge(&parts, "local");
    assert!(merged.complete, "{:?}", merged.incomplete_reason);
    assert_eq!(merged.classes[0].transactions, 40);
}

#[test]
fn one_agent_is_its_own_merge() {
    let one = class(1234, 10.0, 10, &samples(1234, 9, 2));
    let merged = merge(&[part(0, "h", vec![one.clone()])], "local");
    let LatencyUs { p99, .. } = merged.classes[0].latency_us.unwrap();
    assert_eq!(p99, one.latency_us.unwrap().p99);
    assert_eq!(merged.classes[0], one);
}

/// TLS: handshake counts add up, the CPU per handshake is weighted by each
/// agent's handshakes, and the kernel's kTLS counters (one set per network
/// namespace) are counted once per host.
#[test]
fn tls_counts_add_and_per_handshake_means_are_weighted() {
    use stackbench_record::{HandshakeCpuUs, KtlsCounters, KtlsFigures, TlsFigures};
    let agent = |i: u32, host: &str, full: u64, client_full_us: f64| {
        let mut c = class(100, 1.0, 1, &samples(100, 1, 1));
        c.tls = Some(TlsFigures {
            version: "1.3".into(),
            full_handshakes: full,
            rekeys: 2,
            handshake_cpu_us: Some(HandshakeCpuUs {
                client_full: Some(client_full_us),
                ..HandshakeCpuUs::default()
            }),
            ktls: Some(KtlsFigures {
                connections: full,
                client: Some(KtlsCounters {
                    tx_sw: 10,
                    ..KtlsCounters::default()
                }),
                ..KtlsFigures::default()
            }),
            ..TlsFigures::default()
        });
        part(i, host, vec![c])
    };
    let parts = vec![
        agent(0, "a", 100, 500.0),
        agent(1, "a", 300, 900.0),
        agent(2, "b", 0, 0.0),
    ];
    let tls = merge(&parts, "local").classes[0].tls.clone().unwrap();
    assert_eq!((tls.full_handshakes, tls.rekeys), (400, 6));
    let cpu = tls.handshake_cpu_us.unwrap();
    assert_eq!(
        cpu.client_full,
        Some((100.0 * 500.0 + 300.0 * 900.0) / 400.0)
    );
    assert_eq!(cpu.client_resumed, None);
    let ktls = tls.ktls.unwrap();
    assert_eq!(ktls.connections, 400);
    assert_eq!(ktls.client.unwrap().tx_sw, 20, "hosts a and b once each");
}

/// A mix's own CPU is merged like a class's and divided by the transactions
/// of all its classes over every agent.
#[test]
fn a_mix_cpu_is_per_transaction_of_all_its_classes() {
    let mix = |cpu_seconds: f64| {
        let side = SideCpu {
            attribution: stackbench_record::CpuAttribution::Mix,
            ..side(4, 10.0, cpu_seconds, 1.0)
        };
        CpuFigures {
            attribution: stackbench_record::CpuAttribution::Mix,
            ..CpuFigures::combine(Some(side.clone()), Some(side), None)
        }
    };
    let two = |i: u32, host: &str, cpu_seconds: f64| {
        let mut a = class(1000, 10.0, 1, &samples(10, 1, 1));
        let mut b = class(3000, 10.0, 1, &samples(10, 2, 1));
        b.notation = "RR1(1B/1B)".into();
        a.cpu = Some(mix(cpu_seconds).mix_share());
        b.cpu = a.cpu.clone();
        AgentPart {
            mix_cpu: Some(mix(cpu_seconds)),
            ..part(i, host, vec![a, b])
        }
    };
    let merged = merge(&[two(0, "a", 2.0), two(1, "b", 3.0)], "local");
    let cpu = merged.mix_cpu.unwrap();
    let client = cpu.client.as_ref().unwrap();
    assert_eq!(client.cpu_seconds, 5.0);
    assert_eq!(client.cpu_us_per_tran, Some(5.0e6 / 8000.0));
    assert_eq!(cpu.attribution, stackbench_record::CpuAttribution::Mix);
    // Each class holds the mix's CPU, without a per-transaction figure.
    let class_cpu = merged.classes[1].cpu.as_ref().unwrap();
    assert_eq!(class_cpu.client.as_ref().unwrap().cpu_seconds, 5.0);
    assert_eq!(class_cpu.client.as_ref().unwrap().cpu_us_per_tran, None);
    assert_eq!(class_cpu.total_cpu_us_per_tran, None);
}
