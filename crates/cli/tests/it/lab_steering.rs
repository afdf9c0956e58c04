//! Inbound steering of a lab run (`--link-rps-cpus`, `--link-rps-flow-cnt`):
//! bad input is one line and exit 2 (a CPU the machine lacks is refused
//! before `lab up` builds anything); as root, the mask is written to every
//! path interface's receive queues, as `ip netns exec … cat` reads it and
//! as the record's read-back stores it; the window's NET_RX softirqs rise
//! on the steered CPU by at least the packets the path received; a later
//! step without steering turns it off; `lab down` leaves no namespace.

use std::path::Path;
use std::process::Command;

use serde_json::Value;
use stackbench_testkit::{can_make_namespaces, Tier};

use crate::common::refused;
use crate::lab::lab;
use crate::lab::{stored_run_across, TestLab};

#[test]
fn steering_is_refused_where_it_means_nothing() {
    let w = "RR1(1B/1B)";
    refused(
        "run",
        &["--link-rps-cpus", "1", w],
        "link_rps_cpus applies only to a lab run",
    );
    refused("run", &["--link-rps-cpus", "1-0", w], "--link-rps-cpus");
    refused(
        "run",
        &["--link-rps-flow-cnt", "0", w],
        "out of range: use 1 to 1048576",
    );
}

/// `rps_cpus` of `ifname`'s first receive queue in namespace `ns`, read
/// through iproute2 (its own sysfs mount), not through stackbench.
fn rps_cpus_of(ns: &str, ifname: &str) -> String {
    let out = Command::new("ip")
        .args(["netns", "exec", ns, "cat"])
        .arg(format!("/sys/class/net/{ifname}/queues/rx-0/rps_cpus"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A short RR run across lab `file` with `flags`; the stored run.
fn run_across(file: &Path, flags: &[&str]) -> Value {
    stored_run_across(file, "RR1(100B/800B)", flags)
}

/// Whether this machine has CPU 1 and a kernel with RPS; skips otherwise.
fn can_steer(test: &str) -> bool {
    if !can_make_namespaces(test) {
        return false;
    }
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap_or_default();
    let (tier, why) = if !Path::new("/sys/class/net/lo/queues/rx-0/rps_cpus").exists() {
        (Tier::Root, "this kernel has no RPS (CONFIG_RPS)")
    } else if online.trim() == "0" {
        (Tier::Cpus, "one CPU: nothing to steer to")
    } else {
        return true;
    };
    stackbench_testkit::skip(tier, test, why);
    false
}

#[test]
fn receive_processing_runs_on_the_steered_cpu() {
    let test = "receive_processing_runs_on_the_steered_cpu";
    if !can_steer(test) {
        return;
    }
    let test_lab = TestLab::from_example("lab-two-hosts.toml", "pair", "trps");
    let file = &test_lab.file;

    let shown = run_across(file, &["--link-rps-cpus", "1"]);
    assert_eq!(
        shown["record"]["settings"]["link_rps_cpus"],
        serde_json::json!([1])
    );
    // Written: the kernel's own file, read through iproute2.
    for (ns, ifname) in [("sb-trps-client", "trps-0a"), ("sb-trps-server", "trps-0b")] {
        assert_eq!(rps_cpus_of(ns, ifname).trim_start_matches(['0', ',']), "2");
    }
    // Read back into the record, both ends.
    let lab_env = &shown["env"]["lab"];
    let steering = lab_env["steering"].as_array().expect("steering read back");
    assert_eq!(steering.len(), 2, "{lab_env}");
    for s in steering {
        let q = &s["queues"][0];
        assert_eq!(q["rps_cpus"], "1", "{s}");
        assert_eq!(
            q["rps_cpus_mask"]
                .as_str()
                .unwrap()
                .trim_start_matches(['0', ',']),
            "2"
        );
    }
    // Active: each transaction is a request the server received and a
    // response the client received (one packet each, under the MTU), and
    // both are processed on CPU 1. Unsteered, a veth's receive runs on the
    // sending CPU: the client's requests (sent from CPU 0) would be
    // processed on CPU 0, and CPU 1 would see only the responses.
    let transactions = shown["record"]["classes"][0]["transactions"]
        .as_u64()
        .unwrap();
    assert!(transactions > 100, "{transactions}");
    let before = lab_env["net_rx_before"].as_array().unwrap();
    let after = lab_env["net_rx_after"].as_array().unwrap();
    let on_cpu1 = after[1].as_u64().unwrap() - before[1].as_u64().unwrap();
    assert!(
        on_cpu1 >= 2 * transactions,
        "NET_RX on CPU 1 rose by {on_cpu1}, less than the {} packets received",
        2 * transactions
    );

    // A step without steering turns it off.
    let shown = run_across(file, &[]);
    assert!(
        shown["env"]["lab"]["steering"].is_null(),
        "{}",
        shown["env"]
    );
    assert_eq!(
        rps_cpus_of("sb-trps-server", "trps-0b").trim_start_matches(['0', ',']),
        ""
    );

    // `lab down` leaves nothing.
    let out = lab("down", file).output().unwrap();
    assert!(out.status.success());
    assert!(
        test_lab.namespaces().is_empty(),
        "{:?}",
        test_lab.namespaces()
    );
}

#[test]
fn a_cpu_the_machine_lacks_is_refused_before_anything_is_built() {
    let test = "a_cpu_the_machine_lacks_is_refused_before_anything_is_built";
    if !can_make_namespaces(test) {
        return;
    }
    let test_lab = TestLab::from_example("lab-two-hosts.toml", "pair", "trpsbad");
    let file = test_lab.file.to_str().unwrap();
    let args = ["--lab", file, "--from", "client", "--to", "server"];
    let mut bad: Vec<&str> = args.to_vec();
    bad.extend(["--link-rps-cpus", "0,1000", "RR1(1B/1B)"]);
    refused(
        "run",
        &bad,
        "link_rps_cpus 0,1000: CPU 1000 is not online here",
    );
    assert!(
        test_lab.namespaces().is_empty(),
        "{:?}",
        test_lab.namespaces()
    );
}

/// RFS needs the machine-wide flow table, which stackbench leaves alone:
/// with `net.core.rps_sock_flow_entries` at 0 the flow count is refused in
/// one line before anything is built; above 0 it is written and read back
/// (the kernel's power of two) on every path interface.
#[test]
fn rfs_follows_the_global_flow_table() {
    let test = "rfs_follows_the_global_flow_table";
    if !can_steer(test) {
        return;
    }
    let test_lab = TestLab::from_example("lab-two-hosts.toml", "pair", "trfs");
    let entries = std::fs::read_to_string("/proc/sys/net/core/rps_sock_flow_entries")
        .unwrap()
        .trim()
        .parse::<u64>()
        .unwrap();
    if entries == 0 {
        let file = test_lab.file.to_str().unwrap();
        refused(
            "run",
            &[
                "--lab",
                file,
                "--from",
                "client",
                "--to",
                "server",
                "--link-rps-flow-cnt",
                "4096",
                "RR1(1B/1B)",
            ],
            "net.core.rps_sock_flow_entries is 0",
        );
        assert!(
            test_lab.namespaces().is_empty(),
            "{:?}",
            test_lab.namespaces()
        );
        return;
    }
    let shown = run_across(&test_lab.file, &["--link-rps-flow-cnt", "3000"]);
    let steering = shown["env"]["lab"]["steering"].as_array().unwrap();
    assert_eq!(steering.len(), 2);
    for s in steering {
        assert_eq!(s["queues"][0]["rps_flow_cnt"], 4096, "{s}");
    }
}
