//! Delayed-ACK stalls under default settings: messages longer than one write
//! (both backends, both directions) and TLS must not wait 40 ms for a
//! delayed ACK, and a stall provoked on purpose (`--nodelay=false` over TLS)
//! must be reported as `delayed_ack_stall`.

use serde_json::Value;

use crate::common::run_json;

/// (transactions in the 35-250 ms band, transactions recorded).
fn band(rec: &Value) -> (u64, u64) {
    let b = &rec["classes"][0]["stall_band"];
    (
        b["transactions"]
            .as_u64()
            .expect("stall_band counted on loopback"),
        b["of_transactions"].as_u64().unwrap(),
    )
}

/// RR4(300kB/1B) ran at p90 44 ms on io_uring (and here on epoll too): each
/// 128 KiB write's sub-MSS tail left as a small segment, Nagle held the
/// request's last one until the responder's delayed ACK. Corking long
/// messages ends it; the same for long responses, written by the responder.
#[test]
fn long_messages_do_not_stall_on_either_backend() {
    for workload in ["RR4(300kB/1B)", "RR4(1B/300kB)"] {
        for io in ["epoll", "uring"] {
            let rec = run_json(workload, 2000, &["--io", io]);
            let (stalled, of) = band(&rec);
            // A stall put 10-100% of transactions in the band (21% here for
            // RR4(300kB/1B) on epoll without the cork). Scheduling alone,
            // with the rest of the suite and a build on 2 CPUs (load 9),
            // put up to 2.2% there even with --nodelay, where no stall is
            // possible; so the bound is 5%, between the two.
            assert!(
                stalled * 20 < of,
                "{workload} io {io}: {stalled} of {of} transactions in the delayed-ACK band"
            );
        }
    }
}

/// TLS writes a 20 kB message as two records (16 kB + 4 kB): without
/// TCP_NODELAY the second waited for the delayed ACK of the first, every
/// transaction 44 ms. A tls run sets nodelay as TLS servers do and stores
/// it; `--nodelay=false` reproduces the stall, and the warning names it.
#[test]
fn tls_runs_with_nodelay_and_a_forced_stall_is_reported() {
    let rec = run_json("RR1(20kB/100B)", 300, &["--transport", "tls"]);
    assert_eq!(rec["settings"]["nodelay"], true);
    // With nodelay nothing is held, so no band is counted; and the exchange
    // is fast (a stall made its p50 44 ms).
    assert!(rec["classes"][0].get("stall_band").is_none());
    let p50 = rec["classes"][0]["latency_us"]["p50"].as_f64().unwrap();
    assert!(p50 < 35_000.0, "p50 {p50} µs");

    let rec = run_json(
        "RR1(20kB/100B)",
        20,
        &["--transport", "tls", "--nodelay=false"],
    );
    assert_eq!(rec["settings"]["nodelay"], false);
    let (stalled, of) = band(&rec);
    assert!(stalled * 2 > of, "{stalled} of {of} stalled");
    let w = rec["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["code"] == "delayed_ack_stall")
        .expect("delayed_ack_stall");
    assert_eq!(w["class"], "RR1(20kB/100B)");
    assert!(w["message"].as_str().unwrap().contains("--nodelay"));
}

/// A send buffer below loopback's 64 kB MSS stalls every transaction on the
/// delayed ACK, with or without --nodelay (44 ms each for
/// `STR1(1B/100kB) --sndbuf 16kB`): the warning fires in both cases, even
/// with few transactions, and names the buffer, not Nagle.
#[test]
fn a_send_buffer_below_the_mss_is_named_as_the_stall_cause() {
    for nodelay in ["--nodelay=false", "--nodelay"] {
        let rec = run_json("STR1(1B/100kB)", 10, &["--sndbuf", "16kB", nodelay]);
        let warnings = rec["warnings"].as_array().unwrap();
        let stall = warnings
            .iter()
            .find(|w| w["code"] == "delayed_ack_stall")
            .unwrap_or_else(|| panic!("{nodelay}: no stall warning: {warnings:?}"));
        let message = stall["message"].as_str().unwrap();
        assert!(
            message.contains("the likely cause is --sndbuf 16384 B, below loopback's 64 kB MSS")
                && message.contains("with or without --nodelay")
                && !message.contains("set --nodelay"),
            "{nodelay}: {message}"
        );
    }
}
