//! Fabricated run records and environments for tests and demonstrations of the
//! store, compare and report without the engine. Deterministic: the same
//! arguments always give the same record.

use std::collections::BTreeMap;

use stackbench_record::{
    ClassResult, CpuFigures, GuestEnvironment, LatencyUs, RunRecord, RunSettings, SideCpu,
};

/// The settings a fixture record says it ran with.
fn fixture_settings(duration_s: f64) -> RunSettings {
    let mut s = RunSettings::default();
    for (name, text) in [
        ("duration", format!("{duration_s}s")),
        ("warmup", "2s".to_string()),
        ("threads", "1".to_string()),
        ("server_threads", "1".to_string()),
        ("client_cpus", "0".to_string()),
        ("server_cpus", "1".to_string()),
        ("target", "127.0.0.1:7000".to_string()),
        // A run stores the nodelay it applied, never `default`.
        ("nodelay", "false".to_string()),
    ] {
        s.set(name, &text).expect("fixture settings are valid");
    }
    s
}
use stackbench_model::Workload;

use crate::env::{Environment, InterfaceInfo};

/// A complete record of `workload` (every class at the same figures).
pub fn record(
    workload: &str,
    rate_tps: f64,
    p50_us: f64,
    p99_us: f64,
    started_unix_s: f64,
) -> RunRecord {
    let w: Workload = workload
        .parse()
        .expect("fixture workloads are valid notation");
    let duration_s = 10.0;
    let classes = w
        .classes
        .iter()
        .map(|c| {
            let transactions = (rate_tps * duration_s).round() as u64;
            ClassResult {
                workload: w.to_string(),
                notation: c.to_string(),
                kind: c.kind,
                stream_direction: c.stream_direction(),
                clients: c.clients,
                request_bytes: c.request_bytes,
                response_bytes: c.response_bytes,
                transactions,
                duration_s,
                rate_tps,
                latency_us: Some(LatencyUs {
                    mean: p50_us * 1.1,
                    min: p50_us * 0.5,
                    p50: p50_us,
                    p90: (p50_us + p99_us) / 2.0,
                    p99: p99_us,
                    p999: p99_us * 1.5,
                    max: p99_us * 3.0,
                    stdev: p50_us * 0.2,
                }),
                tx_bytes: transactions * c.request_bytes,
                rx_bytes: transactions * c.response_bytes,
                tx_bytes_per_s: rate_tps * c.request_bytes as f64,
                rx_bytes_per_s: rate_tps * c.response_bytes as f64,
                per_second_tps: vec![rate_tps; duration_s as usize],
                // No errors and none of the optional figures.
                ..ClassResult::sample()
            }
        })
        .collect();
    RunRecord {
        schema_version: stackbench_record::SCHEMA_VERSION,
        stackbench_version: "0.1.0".into(),
        complete: true,
        incomplete_reason: None,
        started_unix_s,
        settings: fixture_settings(duration_s),
        responder: "spawned".into(),
        classes,
        warnings: Vec::new(),
        mix_cpu: Vec::new(),
        agents: None,
        refused_peers: None,
        lab: None,
        environment: None,
        server_process: None,
        responder_application: None,
    }
}

/// The record with CPU µs per transaction on each side added to every class
/// (`classes[i].cpu.{client,server}.cpu_us_per_tran`; the other CPU figures
/// stay at zero).
pub fn with_cpu(record: &RunRecord, client_us_per_tran: f64, server_us_per_tran: f64) -> RunRecord {
    let side = |us: f64| SideCpu {
        cpu_us_per_tran: Some(us),
        ..SideCpu::default()
    };
    let mut out = record.clone();
    for class in &mut out.classes {
        class.cpu = Some(CpuFigures {
            client: Some(side(client_us_per_tran)),
            server: Some(side(server_us_per_tran)),
            ..CpuFigures::default()
        });
    }
    out
}

/// Deterministic noise in [-1, 1] for run `i` of series `seed`.
pub fn jitter(seed: u64, i: usize) -> f64 {
    let mut x = seed
        .wrapping_mul(6_364_136_223_846_793_005)
        .wrapping_add((i as u64).wrapping_mul(1_442_695_040_888_963_407))
        .wrapping_add(1);
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    (x % 2001) as f64 / 1000.0 - 1.0
}

/// A fixed environment (a loopback test host).
pub fn environment(kernel: &str) -> Environment {
    let sysctls: BTreeMap<String, String> = [
        ("net.ipv4.tcp_congestion_control", "cubic"),
        ("net.ipv4.tcp_rmem", "4096 131072 6291456"),
        ("net.ipv4.tcp_wmem", "4096 16384 4194304"),
        ("net.core.somaxconn", "4096"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    Environment {
        hostname: Some("testhost".into()),
        kernel_release: Some(kernel.into()),
        cpu_model: Some("Test CPU 3000".into()),
        cpu_count: 4,
        client_cpus: vec![0],
        server_cpus: vec![1],
        governor: Some("performance".into()),
        interface: Some(InterfaceInfo {
            name: "lo".into(),
            mtu_bytes: Some(65536),
            offloads: [
                ("tcp-segmentation-offload", "on"),
                ("generic-receive-offload", "on"),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
            gso_max_size_bytes: Some(65536),
            gro_max_size_bytes: Some(65536),
            offload_source: "ethtool".into(),
        }),
        sysctls,
        lab: None,
        guest: None,
        applicability: None,
    }
}

/// A guest environment: `release` booted from package `linux-image-<release>-unsigned`
/// with 2 vCPUs and 2048 MiB under `accel` (`"tcg"` is emulated).
pub fn guest_environment(release: &str, accel: &str) -> GuestEnvironment {
    GuestEnvironment {
        kernel: format!("linux-image-{release}-unsigned"),
        kernel_release: release.to_string(),
        accel: accel.to_string(),
        emulated: accel == "tcg",
        vcpus: 2,
        memory_mib: 2048,
        qemu_version: "7.2.9".into(),
        host_kernel_release: "6.8.0-test".into(),
        boot_s: 4.0,
        ..GuestEnvironment::default()
    }
}

/// The fixed environment of a run inside a guest (see [`guest_environment`]):
/// the guest's kernel release is the environment's too.
pub fn guest_run_environment(release: &str, accel: &str) -> Environment {
    Environment {
        kernel_release: Some(release.to_string()),
        guest: Some(guest_environment(release, accel)),
        applicability: None,
        ..environment(release)
    }
}

/// The record as run with `kernel` (the setting's text) under `accel`.
pub fn with_kernel(record: &RunRecord, kernel: &str, accel: &str) -> RunRecord {
    let mut out = record.clone();
    out.settings
        .set("kernel", kernel)
        .expect("fixture kernels are valid");
    out.settings
        .set("guest_accel", accel)
        .expect("fixture accelerators are valid");
    out
}
