//! What a `tls_mode ktls` run's kernel did: the connections whose record
//! layer went to the kernel, and the deltas of the kernel's kTLS counters
//! (`/proc/net/tls_stat`, one file per network namespace) over the run.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The kTLS evidence of one class (`tls.ktls`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct KtlsFigures {
    /// The driver's connections of the class that handed their record layer
    /// to the kernel, over the run (warm-up included).
    pub connections: u64,
    /// The responder's connections of the class that did, over the test's life.
    pub server_connections: u64,
    /// Counter deltas in the driver's network namespace from before the
    /// class's first connection to after its test stopped. When the
    /// responder shares that namespace (a spawned responder on loopback
    /// without a lab), these include its sockets too. `None`: unreadable.
    #[serde(default)]
    pub client: Option<KtlsCounters>,
    /// Counter deltas in the responder's namespace over the test's life.
    #[serde(default)]
    pub server: Option<KtlsCounters>,
}

/// Deltas of `/proc/net/tls_stat` counters. The `*_sw`/`*_device` counters
/// count sockets (one per direction set up), not records: a ktls
/// connection adds 1 to `tx_sw` and 1 to `rx_sw` on its side.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
pub struct KtlsCounters {
    /// TlsTxSw / TlsRxSw: sockets given software kTLS for sending / receiving.
    pub tx_sw: u64,
    /// TlsRxSw: sockets given software kTLS for receiving.
    pub rx_sw: u64,
    /// TlsTxDevice / TlsRxDevice: the same, offloaded to the NIC.
    pub tx_device: u64,
    /// TlsRxDevice: sockets whose receive kTLS the NIC does.
    pub rx_device: u64,
    /// TlsDecryptError: records that failed to decrypt (authentication).
    pub decrypt_errors: u64,
    /// TlsDecryptRetry: TLS 1.3 records decrypted twice (no-pad guess wrong).
    pub decrypt_retries: u64,
    /// TlsRxNoPadViolation: TLS 1.3 records with padding on a no-pad socket.
    pub rx_no_pad_violations: u64,
}

impl KtlsCounters {
    /// `self - before`, per counter (0 where a counter went backwards).
    pub fn since(&self, before: &KtlsCounters) -> KtlsCounters {
        let d = |a: u64, b: u64| a.saturating_sub(b);
        KtlsCounters {
            tx_sw: d(self.tx_sw, before.tx_sw),
            rx_sw: d(self.rx_sw, before.rx_sw),
            tx_device: d(self.tx_device, before.tx_device),
            rx_device: d(self.rx_device, before.rx_device),
            decrypt_errors: d(self.decrypt_errors, before.decrypt_errors),
            decrypt_retries: d(self.decrypt_retries, before.decrypt_retries),
            rx_no_pad_violations: d(self.rx_no_pad_violations, before.rx_no_pad_violations),
        }
    }

    /// Sockets set up for sending and receiving, software or device.
    pub fn carried(&self) -> (u64, u64) {
        (self.tx_sw + self.tx_device, self.rx_sw + self.rx_device)
    }
}
