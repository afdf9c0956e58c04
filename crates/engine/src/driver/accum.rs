//! What one class accumulates on one worker, merged over workers at the end
//! (no locks in the hot path). Histograms that only paced classes need (the
//! uncorrected latency of the open loop, the generator lag) are allocated
//! only for them.

use stackbench_metrics::live::LiveClass;
use stackbench_metrics::LatencyHistogram;
use stackbench_record::{ErrorCounts, HttpStatus, Sessions};

use crate::app::Settled;

use super::seen::Seen;
use crate::transport::tls::Handshake;

/// Everything one class accumulated on one worker.
#[derive(Debug, Clone, Default)]
pub struct ClassAccum {
    /// Latency of counted transactions; for the open loop from the intended
    /// send time (coordinated omission corrected).
    pub hist: LatencyHistogram,
    pub transactions: u64,
    pub tx_bytes: u64,
    pub rx_bytes: u64,
    /// Errors over the whole run, warm-up included.
    pub errors: ErrorCounts,
    /// Transactions completed in each whole second of the window.
    pub per_second: Vec<u64>,
    /// Completion time of the last counted transaction, ns since the epoch.
    pub last_completion_ns: u64,
    /// Open loop: latency from the actual send.
    pub uncorrected: Option<LatencyHistogram>,
    /// Paced classes: actual − intended send time of requests sent in the window.
    pub lag: Option<LatencyHistogram>,
    /// Paced classes: total and number of waits (response → next request)
    /// that ended in the window.
    pub wait_ns: u128,
    pub waits: u64,
    pub late: u64,
    pub dropped: u64,
    /// Clients connected (at least once) so far, and when the last one did.
    pub connected: u64,
    pub last_connected_ns: u64,
    /// Clients connected when this worker saw the window open.
    pub connected_at_window: u64,
    /// Transport `tls`: from the first finished handshake on.
    pub tls: Option<TlsAccum>,
    /// `--rekey`: key updates started in the window (also before the first
    /// handshake was recorded: a request's first send finishes it).
    pub rekeys: u64,
    /// The first response the application protocol refused (one line):
    /// the run is incomplete with it.
    pub fault: Option<String>,
    /// Why clients did not complete transactions: errors by where the
    /// connection was, faults, and where clients still waited at the
    /// window's end (see [`Seen`]), to explain an incomplete run.
    pub seen: Seen,
    /// Responses of the window by status (a protocol whose responses carry
    /// one: `Codec::STATUS`).
    pub status: StatusCounts,
    /// Connections opened (warm-up included) by the io_uring backend and by
    /// the epoll backend, and of the epoll backend's those that entered
    /// direct waiting at least once: evidence of the backend that drove
    /// the class, beside the `io` it asked for.
    pub uring_connections: u64,
    pub epoll_connections: u64,
    pub direct_connections: u64,
    /// Session setups (a protocol whose connections negotiate: `Codec::SETUP`).
    pub sessions: SessionCounts,
    /// A scripted class's steps, in script order (`Codec::scripted`).
    pub steps: Vec<StepAccum>,
}

/// One script step on one worker: its transactions of the window, and its
/// waits that timed out over the whole run with the first screen seen
/// instead.
#[derive(Debug, Clone, Default)]
pub struct StepAccum {
    pub name: &'static str,
    pub key: &'static str,
    pub hist: LatencyHistogram,
    pub transactions: u64,
    pub timeouts: u64,
    pub seen: Option<String>,
}

impl StepAccum {
    fn merge(&mut self, o: &StepAccum) {
        self.hist.merge(&o.hist);
        self.transactions += o.transactions;
        self.timeouts += o.timeouts;
        if self.seen.is_none() {
            self.seen.clone_from(&o.seen);
        }
    }

    /// The record's figure.
    pub fn record(&self) -> stackbench_record::ScriptStep {
        stackbench_record::ScriptStep {
            name: self.name.to_string(),
            key: self.key.to_string(),
            transactions: self.transactions,
            latency_us: self.hist.summary_us(),
            latency_hdr: (self.hist.count() > 0).then(|| self.hist.to_base64()),
            timeouts: self.timeouts,
            seen: self.seen.clone(),
        }
    }
}

/// A class's session setups on one worker, whole run: each counted once
/// per setup (per connection; CRR: per transaction), never per record.
/// Keys are the codec's static names; device types are compared before
/// one is copied, so a setup allocates only for a type not seen before.
#[derive(Debug, Clone, Default)]
pub struct SessionCounts {
    pub attempted: u64,
    pub modes: Vec<(&'static str, u64)>,
    /// Sessions that agreed each TN3270E function, by function code.
    pub functions: [u64; 8],
    pub device_types: Vec<(String, u64)>,
    pub failed: Vec<(&'static str, u64)>,
}

fn bump<K: PartialEq>(list: &mut Vec<(K, u64)>, key: K, n: u64) {
    match list.iter_mut().find(|(k, _)| *k == key) {
        Some((_, count)) => *count += n,
        None => list.push((key, n)),
    }
}

impl SessionCounts {
    /// A setup ended in a session.
    pub fn settled(&mut self, s: &Settled<'_>) {
        bump(&mut self.modes, s.mode, 1);
        for (f, count) in self.functions.iter_mut().enumerate() {
            *count += u64::from(s.functions & (1 << f) != 0);
        }
        if !s.device_type.is_empty() {
            match self
                .device_types
                .iter_mut()
                .find(|(k, _)| k == s.device_type)
            {
                Some((_, count)) => *count += 1,
                None => self.device_types.push((s.device_type.to_string(), 1)),
            }
        }
    }

    /// A setup failed for `reason`.
    pub fn failed(&mut self, reason: &'static str) {
        bump(&mut self.failed, reason, 1);
    }

    fn merge(&mut self, o: &SessionCounts) {
        self.attempted += o.attempted;
        for &(k, n) in &o.modes {
            bump(&mut self.modes, k, n);
        }
        for (a, b) in self.functions.iter_mut().zip(o.functions) {
            *a += b;
        }
        for (k, n) in &o.device_types {
            match self.device_types.iter_mut().find(|(d, _)| d == k) {
                Some((_, count)) => *count += n,
                None => self.device_types.push((k.clone(), *n)),
            }
        }
        for &(k, n) in &o.failed {
            bump(&mut self.failed, k, n);
        }
    }

    /// The record's figure; `None` when no setup began (a protocol without
    /// one). `names`: the function names by code.
    pub fn record(&self, names: &[&str]) -> Option<Sessions> {
        if self.attempted == 0 {
            return None;
        }
        let map = |list: &[(&str, u64)]| list.iter().map(|(k, n)| (k.to_string(), *n)).collect();
        Some(Sessions {
            attempted: self.attempted,
            negotiated: map(&self.modes),
            functions: self
                .functions
                .iter()
                .enumerate()
                .filter(|(_, n)| **n > 0)
                .map(|(f, n)| (names.get(f).copied().unwrap_or("??").to_string(), *n))
                .collect(),
            device_types: self.device_types.iter().cloned().collect(),
            failed: map(&self.failed),
        })
    }
}

/// Responses by status code: (code, count) pairs in the order first seen,
/// looked up linearly, so the usual case (every answer a 200) is one
/// compare and one add per response. Bounded by the three-digit codes.
#[derive(Debug, Clone, Default)]
pub struct StatusCounts(Vec<(u16, u64)>);

impl StatusCounts {
    /// Counts `n` responses of status `code`.
    #[inline]
    pub fn add(&mut self, code: u16, n: u64) {
        match self.0.iter_mut().find(|(c, _)| *c == code) {
            Some((_, count)) => *count += n,
            None => self.0.push((code, n)),
        }
    }

    /// The record's figure (`None` when nothing was counted: a protocol
    /// without statuses, or no response in the window).
    pub fn record(&self) -> Option<HttpStatus> {
        (!self.0.is_empty()).then(|| HttpStatus {
            codes: self.0.iter().copied().collect(),
        })
    }
}

/// A class's TLS handshakes on one worker.
#[derive(Debug, Clone)]
pub struct TlsAccum {
    /// What the first handshake negotiated (every connection of a class is
    /// restricted to the same version and suite).
    pub version: &'static str,
    pub cipher_name: &'static str,
    pub cipher_code: u16,
    /// Handshakes finished in the window, and their latency.
    pub full: u64,
    pub resumed: u64,
    pub hist: LatencyHistogram,
    /// Thread CPU ns of those handshakes, full and resumed.
    pub full_cpu_ns: u64,
    pub resumed_cpu_ns: u64,
    /// Connections switched to kTLS (`tls_mode ktls`), window or not.
    pub ktls: u64,
    /// The ALPN protocol the first handshake settled on.
    pub alpn: Option<&'static str>,
}

impl ClassAccum {
    /// Records a finished handshake (`counted`: in the window).
    pub fn handshake(&mut self, h: &Handshake, counted: bool) {
        let t = self.tls.get_or_insert_with(|| TlsAccum {
            version: h.version,
            cipher_name: h.cipher_name,
            cipher_code: h.cipher,
            full: 0,
            resumed: 0,
            hist: LatencyHistogram::new(),
            full_cpu_ns: 0,
            resumed_cpu_ns: 0,
            ktls: 0,
            alpn: h.alpn,
        });
        t.ktls += u64::from(h.ktls);
        if counted {
            if h.resumed {
                t.resumed += 1;
                t.resumed_cpu_ns += h.cpu_ns;
            } else {
                t.full += 1;
                t.full_cpu_ns += h.cpu_ns;
            }
            t.hist.record_ns(h.ns);
        }
    }
}

impl ClassAccum {
    /// An empty accumulator; `paced` and `open` allocate the extra histograms.
    pub fn new(window_s: usize, paced: bool, open: bool) -> ClassAccum {
        ClassAccum {
            per_second: Vec::with_capacity(window_s + 2),
            uncorrected: open.then(LatencyHistogram::new),
            lag: paced.then(LatencyHistogram::new),
            ..ClassAccum::default()
        }
    }

    pub fn merge(&mut self, o: &ClassAccum) {
        self.hist.merge(&o.hist);
        self.transactions += o.transactions;
        self.tx_bytes += o.tx_bytes;
        self.rx_bytes += o.rx_bytes;
        self.errors.add(&o.errors);
        if self.per_second.len() < o.per_second.len() {
            self.per_second.resize(o.per_second.len(), 0);
        }
        for (a, b) in self.per_second.iter_mut().zip(&o.per_second) {
            *a += b;
        }
        self.last_completion_ns = self.last_completion_ns.max(o.last_completion_ns);
        merge_hist(&mut self.uncorrected, &o.uncorrected);
        merge_hist(&mut self.lag, &o.lag);
        self.wait_ns += o.wait_ns;
        self.waits += o.waits;
        self.late += o.late;
        self.dropped += o.dropped;
        self.connected += o.connected;
        self.last_connected_ns = self.last_connected_ns.max(o.last_connected_ns);
        self.connected_at_window += o.connected_at_window;
        self.rekeys += o.rekeys;
        self.uring_connections += o.uring_connections;
        self.epoll_connections += o.epoll_connections;
        self.direct_connections += o.direct_connections;
        self.sessions.merge(&o.sessions);
        if self.steps.is_empty() {
            self.steps.clone_from(&o.steps);
        } else {
            for (a, b) in self.steps.iter_mut().zip(&o.steps) {
                a.merge(b);
            }
        }
        if self.fault.is_none() {
            self.fault.clone_from(&o.fault);
        }
        self.seen.merge(&o.seen);
        for &(code, n) in &o.status.0 {
            self.status.add(code, n);
        }
        match (self.tls.as_mut(), &o.tls) {
            (Some(a), Some(b)) => {
                a.full += b.full;
                a.resumed += b.resumed;
                a.hist.merge(&b.hist);
                a.full_cpu_ns += b.full_cpu_ns;
                a.resumed_cpu_ns += b.resumed_cpu_ns;
                a.ktls += b.ktls;
            }
            (None, Some(b)) => self.tls = Some(b.clone()),
            _ => {}
        }
    }
}

impl ClassAccum {
    /// Writes this worker's figures of the class into its live copy, reusing
    /// the copy's histograms (no allocation once they exist).
    pub fn copy_live(&self, out: &mut LiveClass) {
        out.transactions = self.transactions;
        out.errors = self.errors;
        out.http_status.clone_from(&self.status.0);
        out.tx_bytes = self.tx_bytes;
        out.rx_bytes = self.rx_bytes;
        out.latency.copy_from(&self.hist);
        match (&mut out.lag, &self.lag) {
            (Some(a), Some(b)) => a.copy_from(b),
            (a, b) => a.clone_from(b),
        }
        out.late = self.late;
        out.dropped = self.dropped;
    }
}

fn merge_hist(into: &mut Option<LatencyHistogram>, from: &Option<LatencyHistogram>) {
    match (into.as_mut(), from) {
        (Some(a), Some(b)) => a.merge(b),
        (None, Some(b)) => *into = Some(b.clone()),
        _ => {}
    }
}
