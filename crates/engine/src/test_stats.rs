//! The responder's counters of one test ([`ServerTestStats`]), as the control
//! connection's `stopped` reply carries them (`crate::control` re-exports
//! them with its messages). A leaf: the transport rows count their evidence
//! into it (fallbacks, handshakes) and the control messages carry it, so
//! `control` and `transport` need not import each other for it.

use serde::{Deserialize, Serialize};

/// Distinct SMC fallback reasons a test's statistics keep.
pub const SMC_REASONS: usize = 4;

/// The responder's counters for one test, over the test's whole life
/// (warm-up included): a cross-check of the driver's figures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ServerTestStats {
    pub connections: u64,
    pub transactions: u64,
    pub rx_bytes: u64,
    pub tx_bytes: u64,
    pub errors: u64,
    /// MPTCP connections that fell back to plain TCP (always 0 for others).
    #[serde(default)]
    pub mptcp_fallbacks: u64,
    /// SMC connections that fell back to TCP, of the first ones checked
    /// (`transport::smc::CHECKED_PER_TEST`; always 0 for others).
    #[serde(default)]
    pub smc_fallbacks: u64,
    /// Of those checked, SMC connections whose mode SMC_DIAG did not give
    /// (no smc_diag, or the socket not listed): not known to be SMC.
    #[serde(default)]
    pub smc_unchecked: u64,
    /// Why the checked SMC connections fell back, as SMC_DIAG gave it:
    /// (decline reason, peer's diagnosis, connections) for the first
    /// [`SMC_REASONS`] distinct pairs (a slot with 0 connections is free);
    /// see `transport::smc_reason`. Fixed size so the stats stay `Copy`.
    #[serde(default)]
    pub smc_fallback_reasons: [(u32, u32, u64); SMC_REASONS],
    /// Times accepting stopped for want of file descriptors (EMFILE, ENFILE)
    /// and was retried later instead of stalling the queued connections.
    #[serde(default)]
    pub accept_retries: u64,
    /// Transport `tls`: handshakes finished, full and resumed, and the
    /// thread CPU ns their steps took; key updates this side started.
    #[serde(default)]
    pub tls_full_handshakes: u64,
    #[serde(default)]
    pub tls_resumed_handshakes: u64,
    #[serde(default)]
    pub tls_full_cpu_ns: u64,
    #[serde(default)]
    pub tls_resumed_cpu_ns: u64,
    #[serde(default)]
    pub tls_rekeys: u64,
    /// `tls_mode ktls`: connections switched to kTLS, and the responder's
    /// `/proc/net/tls_stat` deltas over the test's life.
    #[serde(default)]
    pub tls_ktls_connections: u64,
    #[serde(default)]
    pub ktls: Option<stackbench_record::KtlsCounters>,
    /// Which backend served the test's connections: accepted by an io_uring
    /// worker, or by an epoll worker (served by its readiness loop); of the
    /// epoll workers' connections, those that entered direct waiting at
    /// least once (so `uring + epoll` is `connections`, and `direct` at most
    /// `epoll`). Evidence of the backend a run measured, beside the `io` it
    /// asked for; a responder that does not count them gives 0 for all three.
    #[serde(default)]
    pub uring_connections: u64,
    #[serde(default)]
    pub epoll_connections: u64,
    #[serde(default)]
    pub direct_connections: u64,
}

impl ServerTestStats {
    pub fn add(&mut self, o: &ServerTestStats) {
        self.connections += o.connections;
        self.transactions += o.transactions;
        self.rx_bytes += o.rx_bytes;
        self.tx_bytes += o.tx_bytes;
        self.errors += o.errors;
        self.mptcp_fallbacks += o.mptcp_fallbacks;
        self.smc_fallbacks += o.smc_fallbacks;
        self.smc_unchecked += o.smc_unchecked;
        for &(reason, peer, n) in o.smc_fallback_reasons.iter().filter(|e| e.2 > 0) {
            self.add_smc_fallback(reason, peer, n);
        }
        self.accept_retries += o.accept_retries;
        self.tls_full_handshakes += o.tls_full_handshakes;
        self.tls_resumed_handshakes += o.tls_resumed_handshakes;
        self.tls_full_cpu_ns += o.tls_full_cpu_ns;
        self.tls_resumed_cpu_ns += o.tls_resumed_cpu_ns;
        self.tls_rekeys += o.tls_rekeys;
        self.tls_ktls_connections += o.tls_ktls_connections;
        self.ktls = self.ktls.or(o.ktls);
        self.uring_connections += o.uring_connections;
        self.epoll_connections += o.epoll_connections;
        self.direct_connections += o.direct_connections;
    }

    /// Counts `n` SMC fallbacks for (decline `reason`, peer's diagnosis);
    /// a pair beyond the first [`SMC_REASONS`] is counted only in
    /// `smc_fallbacks`.
    pub fn add_smc_fallback(&mut self, reason: u32, peer: u32, n: u64) {
        let slots = &mut self.smc_fallback_reasons;
        let slot = slots
            .iter()
            .position(|e| e.2 > 0 && (e.0, e.1) == (reason, peer))
            .or_else(|| slots.iter().position(|e| e.2 == 0));
        if let Some(i) = slot {
            slots[i] = (reason, peer, slots[i].2 + n);
        }
    }

    /// The SMC fallback reasons counted, as (reason, peer's diagnosis, connections).
    pub fn smc_reasons(&self) -> impl Iterator<Item = (u32, u32, u64)> + '_ {
        self.smc_fallback_reasons
            .iter()
            .copied()
            .filter(|e| e.2 > 0)
    }
}
