//! Link utilisation of a run's classes on a lab path with a rate
//! ([`LabUtilisation`]), from the classes' own window figures. Its own file:
//! it reads both the classes (`run`) and the lab's types (`lab`), which
//! read each other's.

use crate::lab::LabUtilisation;
use crate::ClassResult;

/// The link utilisation of `classes` on a path whose slowest shaped
/// interface runs at `rate_bps`: each class's payload bits per second of
/// its window each way over the rate, and, for a mix (classes of one
/// workload, sharing the window), their sum under the mix's notation.
pub fn link_utilisation(rate_bps: u64, classes: &[ClassResult]) -> Vec<LabUtilisation> {
    if rate_bps == 0 {
        return Vec::new();
    }
    let pct = |bytes_per_s: f64| bytes_per_s * 8.0 * 100.0 / rate_bps as f64;
    let mut out: Vec<LabUtilisation> = Vec::new();
    let mut workloads: Vec<&str> = Vec::new();
    for c in classes {
        out.push(LabUtilisation {
            class: c.notation.clone(),
            rate_bps,
            to_server_pct: pct(c.tx_bytes_per_s),
            to_client_pct: pct(c.rx_bytes_per_s),
        });
        if c.workload != c.notation && !workloads.contains(&c.workload.as_str()) {
            workloads.push(&c.workload);
        }
    }
    for w in workloads {
        let of_mix = classes.iter().filter(|c| c.workload == w);
        let (up, down) = of_mix.fold((0.0, 0.0), |(u, d), c| {
            (u + c.tx_bytes_per_s, d + c.rx_bytes_per_s)
        });
        out.push(LabUtilisation {
            class: w.to_string(),
            rate_bps,
            to_server_pct: pct(up),
            to_client_pct: pct(down),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 100 Mbit/s: an STR class moving 6.25 MB/s of responses uses half
    /// of it towards the client; the mix's RR class adds its own.
    #[test]
    fn utilisation_is_payload_over_the_path_rate_per_class_and_mix() {
        let class = |notation: &str, tx: f64, rx: f64| ClassResult {
            workload: "RR1(100B/800B)+STR1(1B/20MB)".into(),
            notation: notation.into(),
            tx_bytes_per_s: tx,
            rx_bytes_per_s: rx,
            ..ClassResult::sample()
        };
        let classes = [
            class("RR1(100B/800B)", 125_000.0, 1_000_000.0),
            class("STR1(1B/20MB)", 1.0, 6_250_000.0),
        ];
        let u = link_utilisation(100_000_000, &classes);
        assert_eq!(u.len(), 3);
        assert_eq!(u[0].class, "RR1(100B/800B)");
        assert!((u[0].to_server_pct - 1.0).abs() < 1e-9, "{u:?}");
        assert!((u[0].to_client_pct - 8.0).abs() < 1e-9, "{u:?}");
        assert!((u[1].to_client_pct - 50.0).abs() < 1e-9, "{u:?}");
        assert_eq!(u[2].class, "RR1(100B/800B)+STR1(1B/20MB)");
        assert!((u[2].to_client_pct - 58.0).abs() < 1e-9, "{u:?}");
        assert!(link_utilisation(0, &classes).is_empty());
    }
}
