//! The means of [`Mode::Repetitions`](super::Mode::Repetitions) for the
//! parts of a class that are structures of their own: latency summaries,
//! per-second rates, CPU, memory and TLS. Every numeric figure is the mean over
//! the repetitions; an optional figure is present only when every
//! repetition has it; what describes the setup (CPU sets, methods) is the
//! first repetition's, as it is the same in every one.

use stackbench_record::{
    ClassResult, CpuBreakdown, CpuFigures, DiskIo, HandshakeCpuUs, KtlsCounters, KtlsFigures,
    LatencyUs, MemoryFigures, ProcessCpu, SideCpu, SideMemory, TlsFigures,
};

/// The figures of one value across repetitions; never empty.
pub(super) struct Of<'a, T>(pub(super) Vec<&'a T>);

impl<'a, T> Of<'a, T> {
    pub(super) fn first(&self) -> &'a T {
        self.0[0]
    }

    /// The mean.
    pub(super) fn f(&self, get: impl Fn(&T) -> f64) -> f64 {
        self.0.iter().map(|x| get(x)).sum::<f64>() / self.0.len() as f64
    }

    /// The mean of a count, rounded to the nearest whole number.
    pub(super) fn u(&self, get: impl Fn(&T) -> u64) -> u64 {
        let n = self.0.len() as u128;
        let sum: u128 = self.0.iter().map(|x| u128::from(get(x))).sum();
        ((sum + n / 2) / n) as u64
    }

    /// The mean, when every repetition has the figure.
    pub(super) fn opt(&self, get: impl Fn(&T) -> Option<f64>) -> Option<f64> {
        let values: Option<Vec<f64>> = self.0.iter().map(|x| get(x)).collect();
        values.map(|v| v.iter().sum::<f64>() / v.len() as f64)
    }

    fn opt_u(&self, get: impl Fn(&T) -> Option<u64>) -> Option<u64> {
        let all: Option<Vec<u64>> = self.0.iter().map(|x| get(x)).collect();
        all.map(|v| Of(v.iter().collect()).u(|x| *x))
    }

    /// The same part of every repetition, when every repetition has it.
    pub(super) fn each<U>(&self, get: impl Fn(&'a T) -> Option<&'a U>) -> Option<Of<'a, U>> {
        self.0.iter().map(|x| get(x)).collect::<Option<_>>().map(Of)
    }

    fn all<U>(&self, get: impl Fn(&'a T) -> &'a U) -> Of<'a, U> {
        Of(self.0.iter().map(|x| get(x)).collect())
    }

    /// The largest.
    pub(super) fn max(&self, get: impl Fn(&T) -> f64) -> f64 {
        self.0
            .iter()
            .map(|x| get(x))
            .fold(f64::NEG_INFINITY, f64::max)
    }

    /// The smallest.
    pub(super) fn min(&self, get: impl Fn(&T) -> f64) -> f64 {
        self.0.iter().map(|x| get(x)).fold(f64::INFINITY, f64::min)
    }
}

/// The mean of each repetition's mean, percentiles and standard deviation
/// (the per-run histograms are not kept, so percentiles of the pooled
/// transactions cannot be computed; the mean of per-run percentiles is the
/// usual summary); `min` and `max` the extremes over all repetitions.
pub(super) fn latency(runs: &Of<LatencyUs>) -> LatencyUs {
    LatencyUs {
        mean: runs.f(|l| l.mean),
        min: runs.min(|l| l.min),
        p50: runs.f(|l| l.p50),
        p90: runs.f(|l| l.p90),
        p99: runs.f(|l| l.p99),
        p999: runs.f(|l| l.p999),
        max: runs.max(|l| l.max),
        stdev: runs.f(|l| l.stdev),
    }
}

/// The mean of each second over the seconds every repetition has.
pub(super) fn per_second(runs: &Of<ClassResult>) -> Vec<f64> {
    let seconds = runs.0.iter().map(|c| c.per_second_tps.len()).min();
    (0..seconds.unwrap_or(0))
        .map(|s| runs.f(|c| c.per_second_tps[s]))
        .collect()
}

pub(super) fn cpu_figures(runs: &Of<CpuFigures>) -> CpuFigures {
    CpuFigures {
        client: runs.each(|c| c.client.as_ref()).map(|s| side_cpu(&s)),
        server: runs.each(|c| c.server.as_ref()).map(|s| side_cpu(&s)),
        separable: runs.first().separable,
        shared: runs.each(|c| c.shared.as_ref()).map(|s| side_cpu(&s)),
        application: runs.each(|c| c.application.as_ref()).map(|s| side_cpu(&s)),
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
        disk: runs.each(|s| s.disk.as_ref()).map(|d| DiskIo {
            read_bytes: d.u(|x| x.read_bytes),
            write_bytes: d.u(|x| x.write_bytes),
            write_bytes_per_tran: d.opt(|x| x.write_bytes_per_tran),
        }),
    }
}

pub(super) fn memory(runs: &Of<MemoryFigures>) -> MemoryFigures {
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

/// The TLS figures of the repetitions: what was negotiated is the first's
/// (every repetition asks for the same), each count and µs figure the mean
/// over the repetitions, as the class's transactions are; the handshake
/// latency and each side's handshake CPU only where every repetition has it.
pub(super) fn tls(runs: &Of<TlsFigures>) -> TlsFigures {
    let first = runs.first();
    TlsFigures {
        version: first.version.clone(),
        cipher: first.cipher.clone(),
        cipher_code: first.cipher_code.clone(),
        full_handshakes: runs.u(|t| t.full_handshakes),
        resumed_handshakes: runs.u(|t| t.resumed_handshakes),
        handshake_latency_us: runs
            .each(|t| t.handshake_latency_us.as_ref())
            .map(|l| latency(&l)),
        rekeys: runs.u(|t| t.rekeys),
        server_rekeys: runs.u(|t| t.server_rekeys),
        handshake_cpu_us: runs
            .each(|t| t.handshake_cpu_us.as_ref())
            .map(|c| HandshakeCpuUs {
                client_full: c.opt(|x| x.client_full),
                client_resumed: c.opt(|x| x.client_resumed),
                server_full: c.opt(|x| x.server_full),
                server_resumed: c.opt(|x| x.server_resumed),
            }),
        ktls: runs.each(|t| t.ktls.as_ref()).map(|k| KtlsFigures {
            connections: k.u(|x| x.connections),
            server_connections: k.u(|x| x.server_connections),
            client: k.each(|x| x.client.as_ref()).map(|c| ktls_counters(&c)),
            server: k.each(|x| x.server.as_ref()).map(|c| ktls_counters(&c)),
        }),
        alpn: first.alpn.clone(),
        server_verified: super::verified::verified_by_all(runs.0.iter().map(|t| t.server_verified)),
    }
}

fn ktls_counters(runs: &Of<KtlsCounters>) -> KtlsCounters {
    KtlsCounters {
        tx_sw: runs.u(|c| c.tx_sw),
        rx_sw: runs.u(|c| c.rx_sw),
        tx_device: runs.u(|c| c.tx_device),
        rx_device: runs.u(|c| c.rx_device),
        decrypt_errors: runs.u(|c| c.decrypt_errors),
        decrypt_retries: runs.u(|c| c.decrypt_retries),
        rx_no_pad_violations: runs.u(|c| c.rx_no_pad_violations),
    }
}
