//! Property test of the record contract: any run record written as JSON reads
//! back through `record_from_json` unchanged — every class kind, with and
//! without CPU, memory and repetition figures, with warnings.

use proptest::collection::vec;
use proptest::option;
use proptest::prelude::*;
use stackbench_record::{
    record_from_json, ClassResult, ConfidenceInterval, CpuBreakdown, CpuFigures, CpuMethod, DiskIo,
    ErrorCounts, HttpStatus, LagUs, LatencyUs, MeasureSummary, MemoryFigures, PacingMode,
    PopulationFigures, ProcessCpu, ProcessCpuMethod, RepetitionValues, Repetitions, RunRecord,
    RunSettings, SideCpu, SideMemory, SkMemInfo, WarningRecord, SCHEMA_VERSION,
};
use std::time::Duration;

use stackbench_model::settings::{Bytes, CpuList, Secs, Text};
use stackbench_model::{CrrClose, Kind, StreamDirection};

/// Any finite f64, including zero, subnormals and extremes (JSON has no NaN
/// or infinity: serde_json writes them as null).
fn num() -> impl Strategy<Value = f64> {
    use proptest::num::f64::{NEGATIVE, NORMAL, POSITIVE, SUBNORMAL, ZERO};
    POSITIVE | NEGATIVE | NORMAL | SUBNORMAL | ZERO
}

fn text() -> impl Strategy<Value = String> {
    "[ -~µ→\"\\\\]{0,12}"
}

fn latency() -> impl Strategy<Value = LatencyUs> {
    vec(num(), 8).prop_map(|v| LatencyUs {
        mean: v[0],
        min: v[1],
        p50: v[2],
        p90: v[3],
        p99: v[4],
        p999: v[5],
        max: v[6],
        stdev: v[7],
    })
}

fn errors() -> impl Strategy<Value = ErrorCounts> {
    vec(any::<u64>(), 6).prop_map(|v| ErrorCounts {
        refused: v[0],
        reset: v[1],
        eof: v[2],
        timeout: v[3],
        other: v[4],
        http_status: v[5],
    })
}

fn side_cpu() -> impl Strategy<Value = SideCpu> {
    let process = (any::<bool>(), num(), num(), num()).prop_map(|(cg, u, s, t)| ProcessCpu {
        method: if cg {
            ProcessCpuMethod::Cgroup
        } else {
            ProcessCpuMethod::PidStat
        },
        user_s: u,
        system_s: s,
        cpu_seconds: t,
    });
    (
        vec(0usize..512, 0..4),
        any::<bool>(),
        vec(num(), 14),
        vec(option::of(num()), 4),
        option::of(process),
        option::of((any::<u64>(), any::<u64>(), option::of(num()))),
    )
        .prop_map(|(cpus, all, f, o, process, disk)| SideCpu {
            cpus,
            method: if all {
                CpuMethod::ProcStatAllCpus
            } else {
                CpuMethod::ProcStatCpuset
            },
            window_s: f[0],
            cpu_seconds: f[1],
            util_pct: f[2],
            cpu_us_per_tran: o[0],
            cpu_us_per_mb: o[1],
            breakdown: CpuBreakdown {
                user: f[3],
                nice: f[4],
                system: f[5],
                irq: f[6],
                softirq: f[7],
                steal: f[8],
                iowait: f[9],
                idle: f[10],
            },
            tick_busy_s: f[11],
            tick_util_pct: f[12],
            tick_coverage: o[2],
            process,
            process_cpu_us_per_tran: o[3],
            attribution: Default::default(),
            disk: disk.map(|(read_bytes, write_bytes, per_tran)| DiskIo {
                read_bytes,
                write_bytes,
                write_bytes_per_tran: per_tran,
            }),
        })
}

fn cpu() -> impl Strategy<Value = CpuFigures> {
    (
        option::of(side_cpu()),
        option::of(side_cpu()),
        any::<bool>(),
        option::of(side_cpu()),
        option::of(num()),
        option::of(num()),
        option::of(side_cpu()),
    )
        .prop_map(
            |(client, server, separable, shared, total, per_tran, application)| CpuFigures {
                client,
                server,
                separable,
                shared,
                application,
                total_cpu_seconds: total,
                total_cpu_us_per_tran: per_tran,
                attribution: Default::default(),
            },
        )
}

fn side_memory() -> impl Strategy<Value = SideMemory> {
    (
        vec(any::<u64>(), 6),
        vec(option::of(any::<u64>()), 5),
        vec(option::of(num()), 3),
        vec(any::<u64>(), 9),
        any::<bool>(),
    )
        .prop_map(|(u, b, per, mem, measured)| SideMemory {
            rss_bytes: u[0],
            rss_baseline_bytes: b[0],
            rss_bytes_per_conn: per[0],
            kernel_sock_bytes: b[1],
            kernel_sock_bytes_per_conn: per[1],
            kernel_sock_sockets: b[2],
            kernel_sock_method: measured.then(|| "sock_diag".to_string()),
            kernel_sock_fields: if measured {
                vec!["rmem_alloc".into(), "wmem_queued".into()]
            } else {
                Vec::new()
            },
            kernel_sock_meminfo: measured.then_some(SkMemInfo {
                rmem_alloc_bytes: mem[0],
                rcvbuf_bytes: mem[1],
                wmem_alloc_bytes: mem[2],
                sndbuf_bytes: mem[3],
                fwd_alloc_bytes: mem[4],
                wmem_queued_bytes: mem[5],
                optmem_bytes: mem[6],
                backlog_bytes: mem[7],
                drops: mem[8],
            }),
            kernel_sock_object_bytes_per_socket: b[3],
            host_sock_mem_bytes: u[1],
            host_sock_mem_baseline_bytes: b[4],
            host_sock_mem_bytes_per_conn: per[2],
            connections: u[2],
            tcp_inuse: u[3],
            tcp_orphan: u[4],
            tcp_tw: u[5],
            notes: if measured {
                Vec::new()
            } else {
                vec!["the run's own sockets could not be read".into()]
            },
        })
}

fn memory() -> impl Strategy<Value = MemoryFigures> {
    (option::of(side_memory()), option::of(side_memory()))
        .prop_map(|(client, server)| MemoryFigures { client, server })
}

fn summary() -> impl Strategy<Value = MeasureSummary> {
    let ci = (num(), num(), num(), option::of(num())).prop_map(|(level, low, high, w)| {
        ConfidenceInterval {
            level_pct: level,
            low,
            high,
            width_pct_of_mean: w,
        }
    });
    (any::<u32>(), num(), option::of(num()), option::of(ci)).prop_map(|(n, mean, sd, ci)| {
        MeasureSummary {
            n,
            mean,
            stdev: sd,
            confidence: ci,
        }
    })
}

fn repetitions() -> impl Strategy<Value = Repetitions> {
    let run =
        (num(), option::of(num()), option::of(num())).prop_map(|(r, c, s)| RepetitionValues {
            rate_tps: r,
            client_cpu_us_per_tran: c,
            server_cpu_us_per_tran: s,
        });
    (
        vec(run, 0..4),
        option::of(num()),
        option::of(any::<bool>()),
        summary(),
        option::of(summary()),
        option::of(summary()),
    )
        .prop_map(
            |(runs, target, reached, rate, client, server)| Repetitions {
                runs,
                target_width_pct: target,
                reached,
                rate_tps: rate,
                client_cpu_us_per_tran: client,
                server_cpu_us_per_tran: server,
            },
        )
}

fn population() -> impl Strategy<Value = PopulationFigures> {
    let mode = prop_oneof![
        Just(PacingMode::Closed),
        Just(PacingMode::Think),
        Just(PacingMode::Open)
    ];
    let lag = vec(num(), 3).prop_map(|v| LagUs {
        p50: v[0],
        p99: v[1],
        max: v[2],
    });
    (
        (mode, option::of(text()), option::of(text())),
        vec(option::of(num()), 3),
        (
            option::of(latency()),
            option::of(lag),
            option::of(text()),
            option::of(num()),
        ),
        (any::<u64>(), any::<u64>(), any::<u32>(), num()),
    )
        .prop_map(
            |(
                (pacing, pacing_text, arrivals),
                o,
                (uncorrected, lag, lag_hdr, lag_share),
                (late, dropped, n, c),
            )| {
                PopulationFigures {
                    pacing,
                    pacing_text,
                    think_mean_s: o[0],
                    wait_mean_s: o[1],
                    offered_rate_tps: o[2],
                    arrivals,
                    latency_uncorrected_us: uncorrected,
                    late,
                    dropped,
                    generator_lag_us: lag,
                    generator_lag_hdr: lag_hdr,
                    generator_lag_p99_share_pct: lag_share,
                    connected: n,
                    connect_s: c,
                }
            },
        )
}

fn class() -> impl Strategy<Value = ClassResult> {
    let kind = prop_oneof![Just(Kind::Rr), Just(Kind::Crr), Just(Kind::Str)];
    let direction = option::of(prop_oneof![
        Just(StreamDirection::Get),
        Just(StreamDirection::Put)
    ]);
    let shape = (
        text(),
        text(),
        kind,
        direction,
        any::<u32>(),
        vec(any::<u64>(), 6),
    );
    let figures = (
        vec(num(), 4),
        option::of(latency()),
        errors(),
        vec(num(), 0..12),
    );
    let optional = (
        option::of(cpu()),
        option::of(memory()),
        option::of(repetitions()),
        option::of(population()),
        option::of(proptest::collection::btree_map(
            100u16..1000,
            any::<u64>(),
            0..4,
        )),
    );
    (shape, figures, optional).prop_map(
        |(
            (workload, notation, kind, dir, clients, u),
            (f, latency_us, ec, per_s),
            (c, m, r, p, codes),
        )| {
            ClassResult {
                workload,
                notation,
                kind,
                stream_direction: dir,
                clients,
                request_bytes: u[0],
                response_bytes: u[1],
                transactions: u[2],
                duration_s: f[0],
                rate_tps: f[1],
                latency_us,
                latency_hdr: None,
                tx_bytes: u[3],
                rx_bytes: u[4],
                tx_bytes_per_s: f[2],
                rx_bytes_per_s: f[3],
                errors: u[5],
                error_counts: ec,
                per_second_tps: per_s,
                cpu: c,
                memory: m,
                repetitions: r,
                population: p,
                tls: None,
                stall_band: None,
                served_by: None,
                http_status: codes.map(|codes| HttpStatus { codes }),
                sessions: None,
                steps: None,
            }
        },
    )
}

fn warning() -> impl Strategy<Value = WarningRecord> {
    ("[a-z_]{1,20}", text(), option::of(text())).prop_map(|(code, message, class)| WarningRecord {
        code,
        message,
        class,
    })
}

/// Settings with their numbers, switches and lists varied; durations in
/// whole microseconds (what a user can write).
fn settings() -> impl Strategy<Value = RunSettings> {
    (
        (
            option::of(1u64..86_400_000_000),
            option::of(1u64..u64::MAX / 2),
        ),
        (option::of(1u32..1024), any::<bool>(), any::<bool>()),
        (option::of(1u64..1 << 30), 0usize..3),
        option::of(vec(0usize..1024, 1..4)),
    )
        .prop_map(
            |((duration_us, tx), (threads, nodelay, ipv6), (sndbuf, close), cpus)| RunSettings {
                duration: duration_us.map(|us| Secs(Duration::from_micros(us))),
                transactions: tx,
                threads,
                nodelay: Some(nodelay),
                ipv6,
                sndbuf: sndbuf.map(Bytes),
                crr_close: [CrrClose::Server, CrrClose::Client, CrrClose::Abort][close],
                client_cpus: cpus.map(|mut c| {
                    c.sort_unstable();
                    c.dedup();
                    CpuList(c)
                }),
                target: Some(Text("127.0.0.1:12865".into())),
                ..RunSettings::default()
            },
        )
}

fn run_record() -> impl Strategy<Value = RunRecord> {
    (
        any::<bool>(),
        option::of(text()),
        num(),
        settings(),
        vec(class(), 0..4),
        vec(warning(), 0..3),
    )
        .prop_map(
            |(complete, reason, started, settings, classes, warnings)| RunRecord {
                schema_version: SCHEMA_VERSION,
                stackbench_version: "0.1.0".into(),
                complete,
                incomplete_reason: reason,
                started_unix_s: started,
                settings,
                responder: "spawned".into(),
                classes,
                warnings,
                mix_cpu: Vec::new(),
                agents: None,
                refused_peers: None,
                lab: None,
                environment: None,
                server_process: None,
                responder_application: None,
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn any_record_reads_back_from_json(record in run_record()) {
        let text = serde_json::to_string(&record).unwrap();
        let value: serde_json::Value = serde_json::from_str(&text).unwrap();
        prop_assert_eq!(record_from_json(value).unwrap(), record);
    }
}
