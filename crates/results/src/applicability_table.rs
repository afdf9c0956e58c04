//! The terminal form of an applicability observation (`stackbench
//! applicability`): the table per subnet, the application message sizes,
//! the projection over AF_UNIX, and the crypto census per server port and
//! client subnet.

use stackbench_model::size::format_size;
use stackbench_record::applicability::{
    Applicability, CryptoCensus, ProtectionRow, SizeBucket, SubnetFigures,
};

fn row(f: &SubnetFigures) -> String {
    format!(
        "{:<22} {:>6} {:>8} {:>9} {:>11} {:>5} {:>6} {:>11} {:>7.1} {:>9.1} {:>7.1}\n",
        f.subnet,
        f.connections,
        f.eligible,
        f.same_host,
        f.same_subnet,
        f.excluded_ipsec,
        f.excluded_routed,
        f.well_suited,
        f.well_suited_pct,
        f.well_suited_segments_pct,
        f.well_suited_bytes_pct
    )
}

fn sizes(name: &str, buckets: &[SizeBucket]) -> String {
    let all: u64 = buckets.iter().map(|b| b.messages).sum();
    if all == 0 {
        return format!("  {name}: no data\n");
    }
    let parts: Vec<String> = buckets
        .iter()
        .map(|b| {
            let bound = b
                .up_to_bytes
                .map_or("> MSS/2".to_string(), |u| format!("≤{}", format_size(u)));
            format!("{bound} {:.0}%", b.messages as f64 * 100.0 / all as f64)
        })
        .collect();
    format!("  {name} ({all} messages): {}\n", parts.join(", "))
}

/// The human report: the window, the table per subnet, the sizes and the projection.
pub fn table(r: &Applicability) -> String {
    let mut out = format!(
        "{}: window {:.1} s, {} dumps every {:.0} ms (the slowest took {:.0} ms), {} close events{}\n\
         well-suited: eligible, lifetime ≥ {} s and ≥ {} moved inside the window\n\n",
        r.scope,
        r.window_s,
        r.samples,
        r.interval_ms,
        r.slowest_dump_ms,
        r.close_events,
        if r.close_events_subscribed {
            ""
        } else {
            " (not subscribed)"
        },
        r.thresholds.min_lifetime_s,
        format_size(r.thresholds.min_bytes)
    );
    out.push_str(&format!(
        "{:<22} {:>6} {:>8} {:>9} {:>11} {:>5} {:>6} {:>11} {:>7} {:>9} {:>7}\n",
        "subnet",
        "conns",
        "eligible",
        "same-host",
        "same-subnet",
        "ipsec",
        "routed",
        "well-suited",
        "%conns",
        "%segments",
        "%bytes"
    ));
    for f in &r.subnets {
        out.push_str(&row(f));
    }
    out.push_str(&row(&r.total));
    out.push_str("\napplication message sizes (estimated from tcp_info, all subnets):\n");
    out.push_str(&sizes("sent", &r.total.send_sizes));
    out.push_str(&sizes("received", &r.total.receive_sizes));
    if let Some(p) = &r.projection {
        out.push_str(&format!(
            "\nprojected over AF_UNIX (each class run {:.0} s here over tcp, then unix):\n",
            p.run_window_s
        ));
        out.push_str(&format!(
            "{:<24} {:>6} {:>12} {:>10} {:>10} {:>11}\n",
            "class", "conns", "observed/s", "tcp µs/tr", "unix µs/tr", "saved µs/tr"
        ));
        let num = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.1}"));
        for c in &p.classes {
            out.push_str(&format!(
                "{:<24} {:>6} {:>12.1} {:>10} {:>10} {:>11}\n",
                c.workload,
                c.connections,
                c.observed_tps,
                num(c.tcp_cpu_us_per_tran),
                num(c.unix_cpu_us_per_tran),
                num(c.saved_cpu_us_per_tran)
            ));
        }
        match (p.saved_cpu_us_per_tran, p.saved_cpu_us_per_s) {
            (Some(t), Some(s)) => out.push_str(&format!(
                "saved: {t:.1} µs CPU per transaction, {s:.0} µs per second of the observed traffic ({:.2}% of one CPU)\n",
                s / 1e4
            )),
            _ => out.push_str("saved: unknown (a projection run gave no CPU figure)\n"),
        }
    } else {
        out.push_str(
            "\nno projection (--no-project, an interrupted window, or no eligible traffic)\n",
        );
    }
    out
}

/// The census rows: protection and what was chosen, then what was offered.
pub fn census_table(c: &CryptoCensus) -> String {
    let mut out = format!(
        "\ncrypto census: {} handshakes read off the wire ({} frames{}), {} IPsec SAs{}\n",
        c.handshakes_seen,
        c.frames_captured,
        if c.frames_dropped > 0 {
            format!(", {} dropped", c.frames_dropped)
        } else {
            String::new()
        },
        c.ipsec_sas,
        c.capture_refused
            .as_ref()
            .map_or(String::new(), |why| format!("; no capture: {why}"))
    );
    out.push_str(&format!(
        "{:>6} {:<22} {:<12} {:>7} {:<40} {:<8} {:>6} {:>10}\n",
        "port", "client subnet", "protection", "version", "cipher", "group", "conns", "bytes"
    ));
    if !c.unknown_reasons.is_empty() {
        let why: Vec<String> = c
            .unknown_reasons
            .iter()
            .map(|(reason, n)| format!("{n} {reason}"))
            .collect();
        out.push_str(&format!("unknown protection: {}\n", why.join(", ")));
    }
    if c.connections_untracked > 0 {
        out.push_str(&format!(
            "warning: {} connections were not followed (65536 open at once, the capture's bound): they read unknown\n",
            c.connections_untracked
        ));
    }
    let dash = |v: &Option<String>| v.clone().unwrap_or_else(|| "-".into());
    for r in &c.rows {
        out.push_str(&format!(
            "{:>6} {:<22} {:<12} {:>7} {:<40} {:<8} {:>6} {:>10}\n",
            r.server_port,
            r.client_subnet,
            r.protection,
            dash(&r.tls_version),
            dash(&r.tls_cipher),
            dash(&r.tls_group),
            r.connections,
            format_size(r.bytes)
        ));
        if let Some(more) = census_details(r) {
            out.push_str(&more);
        }
    }
    if !c.disallowed_suites.is_empty() {
        out.push_str(&format!(
            "\ndisallowed suites {}: nftables cannot see a cipher, so a lab policy resets by the port the census saw it on\n",
            c.disallowed_suites.join(" ")
        ));
        if c.resets.is_empty() {
            out.push_str("  none was chosen: nothing to reset\n");
        }
        for r in &c.resets {
            out.push_str(&format!(
                "  port {}: {} connections chose one; {}{}\n",
                r.server_port,
                r.disallowed_connections,
                r.setting,
                if r.other_connections > 0 {
                    format!(
                        " also resets {} other connections to it",
                        r.other_connections
                    )
                } else {
                    String::new()
                }
            ));
        }
    }
    out
}

/// The second line of a row: kTLS offload, the SA, the offer.
fn census_details(r: &ProtectionRow) -> Option<String> {
    let mut parts = Vec::new();
    if let Some(k) = &r.ktls_offload {
        parts.push(format!("kTLS {k}"));
    }
    if let Some(sa) = &r.ipsec {
        parts.push(format!("SA {sa}"));
    }
    if !r.offered_versions.is_empty() {
        parts.push(format!(
            "offered versions {}, suites {}, groups {}",
            r.offered_versions.join(" "),
            r.offered_suites.join(" "),
            r.offered_groups.join(" ")
        ));
    }
    (!parts.is_empty()).then(|| format!("{:>6} {}\n", "", parts.join("; ")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use stackbench_record::applicability::{PortReset, ProjectedClass, Projection, Thresholds};

    fn figures(subnet: &str, connections: u64, well: u64) -> SubnetFigures {
        SubnetFigures {
            subnet: subnet.into(),
            connections,
            eligible: connections,
            same_subnet: connections,
            well_suited: well,
            well_suited_pct: well as f64 * 100.0 / connections as f64,
            well_suited_segments_pct: 94.3,
            well_suited_bytes_pct: 98.8,
            send_sizes: vec![
                SizeBucket {
                    up_to_bytes: Some(64),
                    messages: 1,
                    bytes: 64,
                },
                SizeBucket {
                    up_to_bytes: Some(4096),
                    messages: 3,
                    bytes: 12288,
                },
            ],
            ..SubnetFigures::default()
        }
    }

    #[test]
    fn the_table_has_a_row_per_subnet_the_sizes_and_the_projection() {
        let mut r = Applicability {
            scope: "lab x.toml host client".into(),
            window_s: 16.0,
            interval_ms: 100.0,
            samples: 161,
            slowest_dump_ms: 17.0,
            close_events: 1754,
            close_events_subscribed: true,
            thresholds: Thresholds {
                min_lifetime_s: 1.0,
                min_bytes: 16384,
            },
            subnets: vec![figures("10.77.1.0/24", 1754, 1)],
            total: figures("all", 1754, 1),
            ..Applicability::default()
        };
        let text = table(&r);
        assert!(text.starts_with("lab x.toml host client: window 16.0 s, 161 dumps every 100 ms (the slowest took 17 ms), 1754 close events\n"), "{text}");
        assert!(text.contains("lifetime ≥ 1 s and ≥ 16kB"), "{text}");
        let row = text
            .lines()
            .find(|l| l.starts_with("10.77.1.0/24"))
            .unwrap();
        let cells: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(
            cells,
            [
                "10.77.1.0/24",
                "1754",
                "1754",
                "0",
                "1754",
                "0",
                "0",
                "1",
                "0.1",
                "94.3",
                "98.8"
            ]
        );
        assert!(
            text.contains("  sent (4 messages): ≤64B 25%, ≤4kB 75%\n"),
            "{text}"
        );
        assert!(text.contains("received: no data"), "{text}");
        assert!(text.contains("no projection"), "{text}");
        r.projection = Some(Projection {
            classes: vec![ProjectedClass {
                workload: "CRR1(64B/8kB)".into(),
                connections: 1752,
                observed_transactions: 1752,
                observed_tps: 109.4,
                tcp_cpu_us_per_tran: Some(78.6),
                unix_cpu_us_per_tran: Some(62.3),
                saved_cpu_us_per_tran: Some(16.3),
            }],
            run_window_s: 5.0,
            saved_cpu_us_per_tran: Some(16.3),
            saved_cpu_us_per_s: Some(1783.2),
        });
        let text = table(&r);
        let row = text.lines().find(|l| l.starts_with("CRR1")).unwrap();
        let cells: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(
            cells,
            ["CRR1(64B/8kB)", "1752", "109.4", "78.6", "62.3", "16.3"]
        );
        assert!(text.contains("saved: 16.3 µs CPU per transaction, 1783 µs per second of the observed traffic (0.18% of one CPU)"), "{text}");
    }

    #[test]
    fn the_census_table_has_a_row_per_protection_its_offer_and_the_resets() {
        let c = CryptoCensus {
            frames_captured: 1267,
            handshakes_seen: 51,
            rows: vec![
                ProtectionRow {
                    server_port: 45207,
                    client_subnet: "10.77.1.0/24".into(),
                    protection: "tls".into(),
                    tls_version: Some("1.2".into()),
                    tls_cipher: Some("TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256".into()),
                    tls_cipher_code: Some("C02F".into()),
                    tls_group: Some("P-256".into()),
                    offered_versions: vec!["1.2".into()],
                    offered_suites: vec!["C02F".into()],
                    offered_groups: vec!["P-256".into()],
                    connections: 50,
                    bytes: 496_544,
                    ..ProtectionRow::default()
                },
                ProtectionRow {
                    server_port: 33511,
                    client_subnet: "10.77.1.0/24".into(),
                    protection: "clear".into(),
                    connections: 1,
                    bytes: 4358,
                    ..ProtectionRow::default()
                },
            ],
            disallowed_suites: vec!["C02F".into()],
            resets: vec![PortReset {
                server_port: 45207,
                disallowed_connections: 50,
                other_connections: 2,
                setting: "host_policy_reset_port=45207".into(),
            }],
            unknown_reasons: [("gap".to_string(), 3), ("not seen".to_string(), 2)].into(),
            connections_untracked: 7,
            ..CryptoCensus::default()
        };
        let text = census_table(&c);
        assert!(
            text.contains("unknown protection: 3 gap, 2 not seen\n"),
            "{text}"
        );
        assert!(
            text.contains("warning: 7 connections were not followed"),
            "{text}"
        );
        assert!(
            text.contains(
                "crypto census: 51 handshakes read off the wire (1267 frames), 0 IPsec SAs\n"
            ),
            "{text}"
        );
        let cells = |start: &str| -> Vec<String> {
            let row = text
                .lines()
                .find(|l| l.trim_start().starts_with(start))
                .unwrap();
            row.split_whitespace().map(String::from).collect()
        };
        assert_eq!(
            cells("45207"),
            [
                "45207",
                "10.77.1.0/24",
                "tls",
                "1.2",
                "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
                "P-256",
                "50",
                "496544B"
            ]
        );
        assert_eq!(
            cells("33511"),
            [
                "33511",
                "10.77.1.0/24",
                "clear",
                "-",
                "-",
                "-",
                "1",
                "4358B"
            ]
        );
        assert!(
            text.contains("offered versions 1.2, suites C02F, groups P-256"),
            "{text}"
        );
        assert!(
            text.contains("  port 45207: 50 connections chose one; host_policy_reset_port=45207 also resets 2 other connections to it\n"),
            "{text}"
        );
    }
}
