//! Turns one class's merged accumulators into the stored [`ClassResult`].

use stackbench_metrics::ClassResult;
use stackbench_model::ClassSpec;

use super::worker::ClassAccum;

/// Builds the record of one class measured over `window_ns`.
pub fn class_result(
    workload: &str,
    spec: &ClassSpec,
    acc: &ClassAccum,
    window_ns: u64,
) -> ClassResult {
    let duration_s = window_ns as f64 / 1e9;
    let per_s = |x: u64| {
        if duration_s > 0.0 {
            x as f64 / duration_s
        } else {
            0.0
        }
    };
    let whole_seconds = (window_ns / 1_000_000_000) as usize;
    let errors = acc.errors;
    ClassResult {
        workload: workload.to_string(),
        notation: spec.to_string(),
        kind: spec.kind,
        stream_direction: spec.stream_direction(),
        clients: spec.clients,
        request_bytes: spec.request_bytes,
        response_bytes: spec.response_bytes,
        transactions: acc.transactions,
        duration_s,
        rate_tps: per_s(acc.transactions),
        latency_us: acc.hist.summary_us(),
        tx_bytes: acc.tx_bytes,
        rx_bytes: acc.rx_bytes,
        tx_bytes_per_s: per_s(acc.tx_bytes),
        rx_bytes_per_s: per_s(acc.rx_bytes),
        errors: errors.total(),
        error_counts: errors,
        per_second_tps: acc
            .per_second
            .iter()
            .take(whole_seconds)
            .map(|&n| n as f64)
            .collect(),
        cpu: None,
        memory: None,
        repetitions: None,
    }
}
