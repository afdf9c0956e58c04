//! Link properties: delay, jitter, loss (netem), fq pacing and
//! IPsec. The lab-file keys parse and refuse nonsense in one line; on a
//! kernel without netem, fq or ESP `up` refuses in one line naming the
//! kernel option and leaves no namespace behind; on a kernel with them the
//! read-back shows the configured values. Needs root for the kernel part,
//! else skipped with a message.

use std::time::Duration;

use stackbench_lab::{parse_lab, read, up, IpsecAlgorithm, IpsecMode, LabError, LinkQdisc};
use stackbench_testkit::can_make_namespaces;

use crate::common::{namespaces, two_hosts, LabGuard};

#[test]
fn property_keys_parse() {
    let text = two_hosts(
        "t",
        "rate = \"1Gbit\"\ndelay = \"10ms\"\njitter = \"1ms\"\nloss = \"0.1%\"\nqdisc = \"fq\"\nfq_maxrate = \"500Mbit\"\nipsec = \"aes-cbc-128-sha256\"\nipsec_mode = \"tunnel\"",
    );
    let lab = parse_lab(&text, "f").unwrap();
    let l = &lab.links[0];
    assert_eq!(l.netem.delay, Duration::from_millis(10));
    assert_eq!(l.netem.jitter, Duration::from_millis(1));
    assert_eq!(l.netem.loss_pct, 0.1);
    assert_eq!(l.qdisc, LinkQdisc::Fq);
    assert_eq!(l.fq_maxrate_bps, Some(500_000_000));
    assert_eq!(l.ipsec, IpsecAlgorithm::AesCbc128Sha256);
    assert_eq!(l.ipsec_mode, IpsecMode::Tunnel);
    assert_eq!(l.qdisc_chain(true), ["tbf", "netem", "fq"]);
    assert_eq!(l.qdisc_chain(false), ["tbf", "fq"], "routers: no netem");
}

#[test]
fn bad_property_values_are_one_line() {
    for (extra, want) in [
        ("delay = \"10\"", "delay: "),
        ("delay = \"11s\"", "use 0s to 10s"),
        ("delay = \"1ms\"\njitter = \"2ms\"", "larger than the delay"),
        ("loss = \"150%\"", "use 0% to 100%"),
        ("qdisc = \"cake\"", "use fifo, fq"),
        ("fq_maxrate = \"1Gbit\"", "needs qdisc = \"fq\""),
        (
            "qdisc = \"fq\"\nfq_maxrate = \"40Gbit\"",
            "use 1Mbit to 34Gbit",
        ),
        (
            "ipsec = \"des\"",
            "use off, aes-gcm-128, aes-cbc-128-sha256",
        ),
        ("ipsec_mode = \"tunnel\"", "ipsec_mode without ipsec"),
        (
            "rate = \"1Gbit\"\npriority_classes = true\ndelay = \"1ms\"",
            "priority_classes cannot be combined",
        ),
    ] {
        let e = parse_lab(&two_hosts("t", extra), "f.toml").unwrap_err();
        let text = e.to_string();
        assert!(matches!(e, LabError::Parse { .. }), "{extra}: {text}");
        assert!(text.starts_with("f.toml:"), "{extra}: {text}");
        assert!(text.contains(want), "{extra}: want {want:?} in {text}");
        assert_eq!(text.lines().count(), 1, "{text}");
    }
}

/// `up` of a lab with `extra`: a readback check where the kernel has the
/// feature, else the one-line refusal naming `config`, with nothing built.
fn up_or_refused(
    name: &str,
    extra: &str,
    config: &str,
    check: impl Fn(&stackbench_lab::show::EndState),
) {
    if !can_make_namespaces(name) {
        return;
    }
    let guard = LabGuard::new(&two_hosts(name, extra));
    match up(&guard.0) {
        Err(e @ LabError::KernelFeature { .. }) => {
            let text = e.to_string();
            assert!(text.contains(config), "{text}");
            assert!(text.contains("--kernel"), "{text}");
            assert_eq!(text.lines().count(), 1);
            assert!(
                namespaces(&format!("sb-{name}-")).is_empty(),
                "a refused up left namespaces"
            );
            eprintln!("{name}: this kernel refuses, as it should: {text}");
        }
        Err(e) => panic!("{name}: {e}"),
        Ok(_) => {
            let back = read(&guard.0).unwrap();
            for end in &back.ends {
                check(end);
            }
            up(&guard.0).unwrap(); // again: in place
        }
    }
}

#[test]
fn netem_is_built_or_refused() {
    up_or_refused(
        "tnet",
        "rate = \"1Gbit\"\ndelay = \"10ms\"\nloss = \"1%\"",
        "CONFIG_NET_SCH_NETEM",
        |e| {
            assert_eq!(e.qdiscs, ["tbf", "netem"]);
            let n = e.netem.expect("netem read back");
            assert_eq!(n.delay, Duration::from_millis(10));
            assert!((n.loss_pct - 1.0).abs() < 1e-6, "{n:?}");
        },
    );
}

#[test]
fn fq_is_built_or_refused() {
    up_or_refused(
        "tfq",
        "qdisc = \"fq\"\nfq_maxrate = \"100Mbit\"",
        "CONFIG_NET_SCH_FQ",
        |e| {
            assert_eq!(e.qdiscs, ["fq"]);
            assert_eq!(e.fq_maxrate_bps, Some(100_000_000));
        },
    );
}

#[test]
fn ipsec_is_built_or_refused() {
    up_or_refused("tsec", "ipsec = \"aes-gcm-128\"", "CONFIG_", |e| {
        // Two families (IPv4 and IPv6), one SA each way, in both hosts.
        assert_eq!(e.sas.len(), 4, "{:?}", e.sas);
        assert!(e.sas.iter().all(|s| s.algorithm == "rfc4106(gcm(aes))"));
    });
}
