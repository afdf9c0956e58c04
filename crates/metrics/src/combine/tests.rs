use stackbench_model::Kind;
use stackbench_record::{
    BackendConnections, ClassResult, CpuFigures, ErrorCounts, HandshakeCpuUs, HttpStatus,
    KtlsCounters, KtlsFigures, LagUs, LatencyUs, MemoryFigures, PacingMode, PopulationFigures,
    ServedBy, Sessions, SideCpu, SideMemory, SkMemInfo, StallBand, TlsFigures,
};

use super::*;
use crate::LatencyHistogram;

/// What an agent's part would say of itself; the CPU and memory, which
/// only the caller can merge, are the single part's own (or none).
struct Agents<'a> {
    classes: &'a [&'a ClassResult],
    who: Vec<Who>,
    notes: Vec<String>,
    work: Option<Work>,
}

impl<'a> Agents<'a> {
    fn new(classes: &'a [&'a ClassResult], who: Vec<Who>) -> Agents<'a> {
        Agents {
            classes,
            who,
            notes: Vec::new(),
            work: None,
        }
    }
}

impl Parts for Agents<'_> {
    fn who(&self, i: usize) -> Who {
        self.who[i].clone()
    }

    fn cpu(&mut self, work: Work) -> Option<CpuFigures> {
        self.work = Some(work);
        match self.classes {
            [one] => one.cpu.clone(),
            _ => None,
        }
    }

    fn memory(&mut self) -> Option<MemoryFigures> {
        match self.classes {
            [one] => one.memory.clone(),
            _ => None,
        }
    }

    fn note(&mut self, note: String) {
        self.notes.push(note);
    }
}

fn who(index: u32, host: &str, complete: bool) -> Who {
    Who {
        index,
        count: 2,
        host: host.into(),
        responder_host: "responder".into(),
        complete,
    }
}

fn histogram(n: u64, scale: u64) -> LatencyHistogram {
    let mut h = LatencyHistogram::new();
    (0..n).for_each(|i| h.record_ns((10_000 + (i * 7919) % 90_000) * scale));
    h
}

/// A generator lag of `n` sends, 1–6 µs times `scale`.
fn lag_histogram(n: u64, scale: u64) -> LatencyHistogram {
    let mut h = LatencyHistogram::new();
    (0..n).for_each(|i| h.record_ns((1_000 + (i * 13) % 5_000) * scale));
    h
}

fn latency(p99: f64) -> LatencyUs {
    LatencyUs {
        mean: p99 / 4.0,
        min: p99 / 10.0,
        p50: p99 / 3.0,
        p90: p99 / 2.0,
        p99,
        p999: p99 * 2.0,
        max: p99 * 4.0,
        stdev: p99 / 5.0,
    }
}

/// A class with every figure present and consistent with itself (rates
/// are its counts over its window, its latency is its histogram's), so
/// that one of it combines to itself in either mode. The values are
/// chosen so the weighted means of one part are exact.
fn full(transactions: u64, duration_s: f64, clients: u32, scale: u64) -> ClassResult {
    let h = histogram(transactions, scale);
    let lag = lag_histogram(transactions, scale);
    let bytes = transactions * 4096;
    let side = SideCpu {
        cpus: vec![0, 1],
        window_s: duration_s,
        cpu_seconds: 1.5,
        util_pct: 7.5,
        cpu_us_per_tran: Some(1.5e6 / transactions as f64),
        ..SideCpu::default()
    };
    let memory = SideMemory {
        rss_bytes: 10 << 20,
        rss_baseline_bytes: Some(5 << 20),
        kernel_sock_meminfo: Some(SkMemInfo {
            drops: 1,
            ..SkMemInfo::default()
        }),
        connections: u64::from(clients),
        ..SideMemory::default()
    };
    ClassResult {
        workload: "RR2(4kB/4kB)".into(),
        notation: "RR2(4kB/4kB)".into(),
        kind: Kind::Rr,
        stream_direction: None,
        clients,
        request_bytes: 4096,
        response_bytes: 4096,
        transactions,
        duration_s,
        rate_tps: transactions as f64 / duration_s,
        latency_us: h.summary_us(),
        latency_hdr: Some(h.to_base64()),
        tx_bytes: bytes,
        rx_bytes: bytes,
        tx_bytes_per_s: bytes as f64 / duration_s,
        rx_bytes_per_s: bytes as f64 / duration_s,
        errors: 3,
        error_counts: ErrorCounts {
            reset: 2,
            eof: 1,
            ..ErrorCounts::default()
        },
        per_second_tps: vec![transactions as f64 / duration_s; duration_s as usize],
        cpu: Some(CpuFigures::combine(Some(side.clone()), Some(side), None)),
        memory: Some(MemoryFigures {
            client: Some(memory.clone()),
            server: Some(memory),
        }),
        repetitions: None,
        population: Some(PopulationFigures {
            pacing: PacingMode::Open,
            pacing_text: Some("100/s".into()),
            think_mean_s: Some(0.0),
            wait_mean_s: Some(0.5),
            offered_rate_tps: Some(100.0 * f64::from(clients)),
            arrivals: Some("poisson".into()),
            latency_uncorrected_us: Some(latency(40.0 * scale as f64)),
            late: 1,
            dropped: 2,
            generator_lag_us: lag.summary_us().map(LagUs::of),
            generator_lag_hdr: Some(lag.to_base64()),
            generator_lag_p99_share_pct: crate::generator_lag_p99_share_pct(
                lag.summary_us().map(|l| l.p99),
                h.summary_us().map(|l| l.p99),
            ),
            connected: clients,
            connect_s: 0.25 * scale as f64,
        }),
        tls: Some(TlsFigures {
            version: "TLSv1.3".into(),
            cipher: "TLS_AES_128_GCM_SHA256".into(),
            cipher_code: "1301".into(),
            full_handshakes: 10 * scale,
            resumed_handshakes: 4,
            handshake_latency_us: Some(latency(900.0)),
            rekeys: 1,
            server_rekeys: 2,
            handshake_cpu_us: Some(HandshakeCpuUs {
                client_full: Some(500.0 * scale as f64),
                client_resumed: Some(50.0),
                server_full: Some(400.0),
                server_resumed: Some(40.0),
            }),
            ktls: Some(KtlsFigures {
                connections: u64::from(clients),
                server_connections: u64::from(clients),
                client: Some(KtlsCounters {
                    tx_sw: 10,
                    ..KtlsCounters::default()
                }),
                server: Some(KtlsCounters {
                    rx_sw: 20,
                    ..KtlsCounters::default()
                }),
            }),
            alpn: Some("http/1.1".into()),
            server_verified: Some(true),
        }),
        stall_band: Some(StallBand {
            floor_us: 50.0,
            low_us: 35_050.0,
            high_us: 250_050.0,
            transactions: scale,
            of_transactions: transactions,
            share_pct: 100.0 * scale as f64 / transactions as f64,
        }),
        served_by: Some(ServedBy {
            driver: BackendConnections {
                epoll: u64::from(clients),
                ..BackendConnections::default()
            },
            responder: Some(BackendConnections {
                io_uring: u64::from(clients),
                ..BackendConnections::default()
            }),
        }),
        http_status: Some(HttpStatus {
            codes: [(200, transactions - scale), (404, scale)].into(),
        }),
        sessions: Some(Sessions {
            attempted: u64::from(clients) + scale,
            negotiated: [("tn3270e".to_string(), u64::from(clients))].into(),
            functions: [("RESPONSES".to_string(), u64::from(clients))].into(),
            device_types: [("IBM-3278-2-E".to_string(), u64::from(clients))].into(),
            failed: [("closed".to_string(), scale)].into(),
        }),
        steps: Some(vec![stackbench_record::ScriptStep {
            name: "logon".into(),
            key: "ENTER".into(),
            transactions,
            latency_us: h.summary_us(),
            latency_hdr: Some(h.to_base64()),
            timeouts: scale,
            seen: Some("\"LOGON\"".into()),
        }]),
    }
}

/// A new field of `ClassResult` does not compile in `combine` until it
/// has a rule (its struct literal has no `..`), nor here until the fixture
/// has it; with every optional figure present, a rule that drops a single
/// part's figure, in either mode, fails this test.
#[test]
fn one_is_its_own_combine_in_every_field() {
    let one = full(1000, 10.0, 2, 1);
    let ClassResult {
        latency_us: Some(_),
        latency_hdr: Some(_),
        cpu: Some(_),
        memory: Some(_),
        repetitions: None,
        population: Some(_),
        tls: Some(_),
        stall_band: Some(_),
        served_by: Some(_),
        http_status: Some(_),
        sessions: Some(_),
        steps: Some(_),
        workload: _,
        notation: _,
        kind: _,
        stream_direction: _,
        clients: _,
        request_bytes: _,
        response_bytes: _,
        transactions: _,
        duration_s: _,
        rate_tps: _,
        tx_bytes: _,
        rx_bytes: _,
        tx_bytes_per_s: _,
        rx_bytes_per_s: _,
        errors: _,
        error_counts: _,
        per_second_tps: _,
    } = &one
    else {
        panic!("the fixture must have every optional figure");
    };
    let classes = [&one];
    assert_eq!(combine(Mode::Repetitions, &classes), one);
    let mut agents = Agents::new(&classes, vec![who(0, "a", true)]);
    assert_eq!(combine(Mode::Parts(&mut agents), &classes), one);
    assert_eq!(agents.notes, Vec::<String>::new());
}

/// Two measurements of one class, each field by its rule: summed, the
/// longest or merged exactly as parts of one run; averaged as repetitions.
#[test]
fn every_field_by_its_rule_in_both_modes() {
    let a = full(1000, 10.0, 2, 1);
    let mut b = full(3001, 10.5, 3, 3);
    b.per_second_tps.truncate(9);
    b.population.as_mut().unwrap().wait_mean_s = Some(1.5);
    b.tls.as_mut().unwrap().cipher = "TLS_AES_256_GCM_SHA384".into();
    b.http_status.as_mut().unwrap().codes.insert(500, 3);
    let classes = [&a, &b];

    // Parts of one run: b's agent was cut short.
    let mut agents = Agents::new(&classes, vec![who(0, "a", true), who(1, "b", false)]);
    let m = combine(Mode::Parts(&mut agents), &classes);
    assert_eq!(
        (m.notation.as_str(), m.request_bytes),
        ("RR2(4kB/4kB)", 4096)
    );
    assert_eq!((m.clients, m.transactions), (5, 4001));
    assert_eq!(m.duration_s, 10.5, "the longest window");
    assert_eq!(m.rate_tps, 4001.0 / 10.5);
    assert_eq!(m.tx_bytes, 4001 * 4096);
    assert_eq!(m.rx_bytes_per_s, (4001 * 4096) as f64 / 10.5);
    let mut union = histogram(1000, 1);
    union.merge(&histogram(3001, 3));
    assert_eq!(m.latency_us, union.summary_us(), "the histograms added");
    assert_eq!(m.latency_hdr, Some(union.to_base64()));
    assert_eq!((m.errors, m.error_counts.reset), (6, 4));
    let mut seconds = vec![100.0 + 3001.0 / 10.5; 9];
    seconds.push(100.0);
    assert_eq!(m.per_second_tps, seconds, "a part cut short adds 0");
    assert_eq!(
        agents.work,
        Some(Work {
            transactions: 4001,
            payload_bytes: 2 * 4001 * 4096
        }),
        "CPU per transaction of every part's"
    );
    assert_eq!(m.repetitions, None);
    let p = m.population.as_ref().unwrap();
    assert_eq!(p.wait_mean_s, Some((0.5 * 1000.0 + 1.5 * 3001.0) / 4001.0));
    assert_eq!(p.offered_rate_tps, Some(500.0));
    assert_eq!((p.late, p.dropped, p.connected), (2, 4, 5));
    assert_eq!(p.connect_s, 0.75);
    assert_eq!(
        p.latency_uncorrected_us, None,
        "percentiles without a histogram"
    );
    let mut lags = lag_histogram(1000, 1);
    lags.merge(&lag_histogram(3001, 3));
    assert_eq!(
        p.generator_lag_us,
        lags.summary_us().map(LagUs::of),
        "the lag histograms added"
    );
    assert_eq!(p.generator_lag_hdr, Some(lags.to_base64()));
    assert_eq!(
        p.generator_lag_p99_share_pct,
        crate::generator_lag_p99_share_pct(
            lags.summary_us().map(|l| l.p99),
            union.summary_us().map(|l| l.p99)
        ),
        "of the merged lag and latency"
    );
    assert_eq!(p.pacing_text.as_deref(), Some("100/s"));
    let t = m.tls.as_ref().unwrap();
    assert_eq!(t.cipher, "TLS_AES_128_GCM_SHA256", "the first part's");
    assert_eq!((t.full_handshakes, t.resumed_handshakes), (40, 8));
    assert_eq!((t.rekeys, t.server_rekeys), (2, 4));
    assert_eq!(t.handshake_latency_us, None);
    let cpu = t.handshake_cpu_us.unwrap();
    assert_eq!(cpu.client_full, Some((10.0 * 500.0 + 30.0 * 1500.0) / 40.0));
    assert_eq!(cpu.server_resumed, Some(40.0));
    let ktls = t.ktls.clone().unwrap();
    assert_eq!(ktls.connections, 5);
    assert_eq!(ktls.client.unwrap().tx_sw, 20, "hosts a and b once each");
    assert_eq!(ktls.server.unwrap().rx_sw, 20, "one responder host");
    let band = m.stall_band.unwrap();
    assert_eq!((band.transactions, band.of_transactions), (4, 4001));
    let served = m.served_by.unwrap();
    assert_eq!(served.driver.epoll, 5);
    assert_eq!(served.responder.unwrap().io_uring, 5);
    let codes = &m.http_status.as_ref().unwrap().codes;
    assert_eq!(codes, &[(200, 3997), (404, 4), (500, 3)].into(), "summed");
    assert_eq!(
        agents.notes.len(),
        3,
        "uncorrected latency, cipher, handshake latency: {:?}",
        agents.notes
    );
    assert!(agents.notes[1].contains("agent 1 on b negotiated TLSv1.3 TLS_AES_256"));

    // Repetitions of one run.
    let r = combine(Mode::Repetitions, &classes);
    assert_eq!(
        (r.clients, r.transactions),
        (2, 2001),
        "a rounded mean count"
    );
    assert_eq!(r.duration_s, 10.25);
    assert_eq!(r.rate_tps, (100.0 + 3001.0 / 10.5) / 2.0);
    assert_eq!(r.tx_bytes, 2001 * 4096 - 2048);
    let (la, lb) = (a.latency_us.unwrap(), b.latency_us.unwrap());
    let l = r.latency_us.unwrap();
    assert_eq!(
        l.p99,
        (la.p99 + lb.p99) / 2.0,
        "the mean of per-run percentiles"
    );
    assert_eq!((l.min, l.max), (la.min, lb.max), "the extremes of all runs");
    assert_eq!(r.latency_hdr, None, "no one distribution of its own");
    assert_eq!((r.errors, r.error_counts.reset), (6, 4), "errors add up");
    assert_eq!(r.per_second_tps, vec![(100.0 + 3001.0 / 10.5) / 2.0; 9]);
    assert_eq!(r.memory.unwrap().client.unwrap().kernel_sock_meminfo, None);
    let p = r.population.as_ref().unwrap();
    assert_eq!(p.wait_mean_s, Some(1.0));
    assert_eq!(p.offered_rate_tps, Some(200.0), "the first run's");
    assert_eq!((p.late, p.dropped, p.connected), (2, 4, 2));
    assert_eq!(p.connect_s, 0.5);
    let lag = p.generator_lag_us.unwrap();
    let (ga, gb) = (
        a.population.as_ref().unwrap().generator_lag_us.unwrap(),
        b.population.as_ref().unwrap().generator_lag_us.unwrap(),
    );
    assert_eq!((lag.p99, lag.max), ((ga.p99 + gb.p99) / 2.0, gb.max));
    assert_eq!(p.generator_lag_hdr, None, "no one distribution of its own");
    assert_eq!(p.latency_uncorrected_us.unwrap().p99, 80.0);
    let t = r.tls.as_ref().unwrap();
    assert_eq!(t.cipher, a.tls.as_ref().unwrap().cipher, "the first run's");
    assert_eq!(
        (t.full_handshakes, t.resumed_handshakes, t.rekeys),
        (20, 4, 1),
        "the mean of each run's counts, as its transactions"
    );
    let cpu = t.handshake_cpu_us.unwrap();
    assert_eq!(
        (cpu.client_full, cpu.server_full),
        (Some(1000.0), Some(400.0))
    );
    let ktls = t.ktls.as_ref().unwrap();
    assert_eq!(
        (ktls.connections, ktls.client.unwrap().tx_sw),
        (3, 10),
        "2.5 rounds to 3"
    );
    let band = r.stall_band.unwrap();
    assert_eq!((band.transactions, band.of_transactions), (4, 4001));
    assert_eq!(r.served_by.unwrap().driver.epoll, 5);
    let codes = &r.http_status.as_ref().unwrap().codes;
    assert_eq!(
        codes,
        &[(200, 1999), (404, 2), (500, 2)].into(),
        "each code's rounded mean, a run without it counting 0"
    );
}

#[test]
fn rules_of_counts_and_figures() {
    let all: Vec<&(u64, f64)> = vec![&(1, 1.0), &(2, 4.0), &(4, 2.5)];
    let count = |rule: Rule| rule.count(&all, |x| x.0);
    let figure = |rule: Rule| rule.figure(&all, |x| x.1);
    assert_eq!(
        [Rule::First, Rule::Sum, Rule::Max, Rule::Mean].map(count),
        [1, 7, 4, 2],
        "7 / 3 rounds to 2"
    );
    assert_eq!(
        [Rule::First, Rule::Sum, Rule::Max, Rule::Mean].map(figure),
        [1.0, 7.5, 4.0, 2.5]
    );
    assert_eq!(rate(10, 0.0), 0.0, "an empty window has no rate");
    assert_eq!(rate(10, 4.0), 2.5);
}

/// A part that sent on a schedule without the lag's histogram (it cannot
/// be added) leaves the merged class without a lag, saying so; a part that
/// sent nothing on a schedule adds nothing.
#[test]
fn a_lag_without_its_histogram_is_left_out_with_a_note() {
    let a = full(1000, 10.0, 2, 1);
    let mut b = full(3001, 10.5, 3, 3);
    b.population.as_mut().unwrap().generator_lag_hdr = None;
    let classes = [&a, &b];
    let mut agents = Agents::new(&classes, vec![who(0, "a", true), who(1, "b", true)]);
    let p = combine(Mode::Parts(&mut agents), &classes)
        .population
        .unwrap();
    assert_eq!((p.generator_lag_us, p.generator_lag_hdr), (None, None));
    assert_eq!(p.generator_lag_p99_share_pct, None);
    assert!(
        agents.notes.iter().any(|n| n.contains(
            "agent 1 (segment 1/2, host b) sent no generator lag histogram for its 3001 \
             transactions: the class has no merged generator lag"
        )),
        "{:?}",
        agents.notes
    );
    let p = b.population.as_mut().unwrap();
    (p.generator_lag_us, p.generator_lag_p99_share_pct) = (None, None);
    let classes = [&a, &b];
    let mut agents = Agents::new(&classes, vec![who(0, "a", true), who(1, "b", true)]);
    let p = combine(Mode::Parts(&mut agents), &classes)
        .population
        .unwrap();
    assert_eq!(p.generator_lag_hdr, a.population.unwrap().generator_lag_hdr);
}
