//! The routing fast path of a lab run (`--router-flowtable`): refused in
//! one line, exit 2, without a lab, on a path with no router, and with a
//! bad value (root or not); as root, a run through a router either stores
//! the router's flowtable with the kernel's counters showing the forwarded
//! packets bypassed the full path, or, on a kernel without flowtables, is
//! refused in one line naming the options and the guest, before anything
//! is built. The guest tier (`guest_tier.rs`) runs it in a 6.12 kernel.

use std::process::Command;

use stackbench_testkit::can_make_namespaces;

use crate::common::{examples, json_of, refused, stackbench};
use crate::lab::TestLab;

#[test]
fn the_fast_path_is_refused_where_it_means_nothing() {
    let w = "RR1(1B/1B)";
    refused(
        "run",
        &["--router-flowtable", w],
        "router_flowtable applies only to a lab run",
    );
    refused(
        "run",
        &["--router-flowtable=maybe", w],
        "--router-flowtable",
    );
    // A direct link: no router on the path (checked before root is).
    let two = examples().join("lab-two-hosts.toml");
    refused(
        "run",
        &[
            "--lab",
            two.to_str().unwrap(),
            "--from",
            "client",
            "--to",
            "server",
            "--router-flowtable",
            w,
        ],
        "no router to put a flowtable on",
    );
}

#[test]
fn the_fast_path_is_active_or_refused_before_the_lab_is_built() {
    let test = "the_fast_path_is_active_or_refused_before_the_lab_is_built";
    if !can_make_namespaces(test) {
        return;
    }
    if Command::new("nft").arg("--version").output().is_err() {
        let why = "the nft command is missing (apt-get install nftables)";
        stackbench_testkit::skip(stackbench_testkit::Tier::Root, test, why);
        return;
    }
    let lab = TestLab::from_example("lab-router.toml", "hop", "fpath");
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let out = stackbench()
        .args(["run", "--lab"])
        .arg(&lab.file)
        .args(["--from", "client", "--to", "server", "--router-flowtable"])
        .args(["RR1(64B/64B)", "--duration", "1s", "--warmup", "0s", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    if out.status.code() == Some(2) {
        // This kernel has no flowtables: one line that says what is missing
        // and where it runs, and no namespace was made.
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        assert!(err.contains("no nftables flowtable"), "{err}");
        assert!(err.contains("CONFIG_NF_FLOW_TABLE"), "{err}");
        assert!(err.contains("--kernel"), "{err}");
        assert_eq!(lab.namespaces(), Vec::<String>::new(), "left behind");
        return;
    }
    assert!(out.status.success(), "{err}");
    let shown = json_of(
        &stackbench()
            .args(["results", "show", "1", "--json", "--db"])
            .arg(&db)
            .output()
            .unwrap(),
    );
    assert_fast_path(&shown, &format!("sb-{}-r1", lab.name));
}

/// The stored run's router `namespace` had the fast path on both its path
/// interfaces, and the forwarded transactions bypassed the full path: the
/// forward chain counted a handful of packets while the router received
/// two or more per transaction.
pub fn assert_fast_path(shown: &serde_json::Value, namespace: &str) {
    let record = &shown["record"];
    let transactions = record["classes"][0]["transactions"].as_u64().unwrap();
    assert!(transactions >= 100, "{record}");
    assert_eq!(record["settings"]["router_flowtable"], true, "{record}");
    let tables = shown["env"]["lab"]["flowtables"].as_array().unwrap();
    assert_eq!(tables.len(), 1, "{tables:?}");
    let t = &tables[0];
    assert_eq!(t["namespace"], namespace, "{t}");
    assert_eq!(t["devices"].as_array().unwrap().len(), 2, "{t}");
    let received = t["rx_packets"].as_u64().unwrap();
    let slow = t["slow_path_packets"].as_u64().unwrap();
    assert!(
        received >= 2 * transactions,
        "{t}: {transactions} transactions"
    );
    assert!(
        slow * 20 < received,
        "{slow} of {received} packets took the full path: the flowtable was not used ({t})"
    );
}
