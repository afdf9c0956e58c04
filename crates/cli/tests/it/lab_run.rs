//! `run --lab FILE --from A --to B`: a host name the lab
//! does not have is one line and exit 2 (root or not), and — as root — a short
//! run across the two-host example lab stores `environment.lab` with the
//! path's interfaces, whose byte counters show that the data crossed the lab
//! link and the responder listened on host B's address.

use std::path::Path;

use serde_json::Value;
use stackbench_testkit::can_make_namespaces;

use crate::common::{examples, json_ok, stackbench};
use crate::lab::{lab, output_without_root};

#[test]
fn a_host_the_lab_lacks_is_one_line() {
    let file = examples().join("lab-two-hosts.toml");
    let out = stackbench()
        .args(["run", "--lab"])
        .arg(&file)
        .args([
            "--from",
            "client",
            "--to",
            "nobody",
            "RR1(1B/1B)",
            "--duration",
            "1s",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "not one line: {err}");
    assert!(
        err.contains("lab_to 'nobody' is not a host of lab pair")
            && err.contains("hosts client, server; links client <-> server"),
        "{err}"
    );
    let out = stackbench()
        .args(["run", "--from", "client", "RR1(1B/1B)"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("lab_from applies only to a lab run: add --lab FILE"),
        "{err}"
    );
}

/// A lab host's CPUs this process may not run on are refused when the run
/// is resolved, before the lab is built or a responder starts (root or not).
#[test]
fn a_lab_host_on_cpus_this_process_lacks_is_refused_before_the_lab_is_built() {
    let text = std::fs::read_to_string(examples().join("lab-two-hosts.toml")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("lab-far-cpus.toml");
    std::fs::write(&file, text.replace("cpus = \"1\"", "cpus = \"998-999\"")).unwrap();
    let file = file.to_string_lossy();
    crate::common::refused(
        "run",
        &[
            "--lab",
            &file,
            "--from",
            "client",
            "--to",
            "server",
            "RR1(1B/1B)",
        ],
        &format!(
            "--lab {file}: host 'server' cpus 998-999: CPUs 998-999 are not online or not \
             allowed to this process (it may run on "
        ),
    );
}

/// The same for CPUs that are online but outside this process's set (the
/// case the check exists for: a run under `taskset -c 0` whose lab host
/// asks for CPU 1 ran the whole run before it).
#[test]
fn a_lab_host_on_online_cpus_outside_this_process_is_refused() {
    let file = examples().join("lab-two-hosts.toml");
    let file = file.to_string_lossy();
    let out = std::process::Command::new("taskset")
        .args([
            "-c",
            "0",
            env!("CARGO_BIN_EXE_stackbench"),
            "run",
            "--lab",
            &file,
        ])
        .args([
            "--from",
            "client",
            "--to",
            "server",
            "RR1(1B/1B)",
            "--no-store",
        ])
        .output()
        .expect("taskset (util-linux) runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "not one line: {err}");
    assert!(
        err.contains("host 'server' cpus 1: CPU 1 is not online or not allowed to this process (it may run on 0)"),
        "{err}"
    );
}

#[test]
fn without_root_a_lab_run_says_to_use_sudo() {
    let file = examples().join("lab-two-hosts.toml");
    let file = file.to_string_lossy();
    let (code, err) = output_without_root(&[
        "run",
        "--lab",
        &file,
        "--from",
        "client",
        "--to",
        "server",
        "RR1(1B/1B)",
    ]);
    assert_eq!(code, Some(2), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "not one line: {err}");
    assert!(err.contains("lab runs need root"), "{err}");
}

/// The sum of a counter over the path's interfaces.
fn bytes(interfaces: &Value, counter: &str) -> u64 {
    interfaces
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i[counter].as_u64().unwrap_or(0))
        .sum()
}

fn run_across(file: &Path) -> Value {
    let out = stackbench()
        .args(["run", "--lab"])
        .arg(file)
        .args(["--from", "client", "--to", "server", "RR1(1B/1B)"])
        .args(["--duration", "1s", "--warmup", "100ms", "--json"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    // The lab stays up for the next run, and the last line says so.
    let last = err.trim_end().lines().last().unwrap_or_default();
    assert!(
        last.starts_with("stackbench: lab ")
            && last.ends_with(&format!(
                "is still up (its namespaces stay for the next run); take it down with: \
                 stackbench lab down {}",
                file.display()
            )),
        "{err}"
    );
    let id = err
        .lines()
        .find_map(|l| l.strip_prefix("stackbench: stored as run "))
        .unwrap_or_else(|| panic!("no stored run: {err}"));
    json_ok(stackbench().args(["results", "show", id.trim(), "--json"]))
}

#[test]
fn a_run_across_the_lab_stores_its_path() {
    if !can_make_namespaces("a_run_across_the_lab_stores_its_path") {
        return;
    }
    // The example's lab under a name of this test's own, so that other
    // tests' `lab down pair` never pulls it away mid-run.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("run.toml");
    let text = std::fs::read_to_string(examples().join("lab-two-hosts.toml")).unwrap();
    std::fs::write(&file, text.replace("name = \"pair\"", "name = \"trun\"")).unwrap();
    let _ = lab("down", &file).output();
    let shown = run_across(&file);
    let down = lab("down", &file).output().unwrap();
    assert!(
        down.status.success(),
        "{}",
        String::from_utf8_lossy(&down.stderr)
    );

    let record = &shown["record"];
    assert_eq!(record["settings"]["lab_from"], "client");
    assert!(record["settings"]["target"]
        .as_str()
        .unwrap()
        .starts_with("10.77.1.2:"));
    let env = &shown["env"]["lab"];
    assert_eq!(env["name"], "trun");
    assert_eq!(env["from"], "client");
    assert_eq!(env["to"], "server");
    assert_eq!(env["hops"], serde_json::json!([]));
    assert_eq!(env["responder_address"], "10.77.1.2");
    let before = &env["interfaces"];
    let after = &env["interfaces_after"];
    assert_eq!(before[0]["namespace"], "sb-trun-client");
    assert_eq!(before[0]["name"], "trun-0a");
    assert_eq!(before[1]["name"], "trun-0b");
    assert_eq!(before[0]["mtu_bytes"], 1500);
    assert_eq!(before[0]["rate_bps"], 100_000_000);
    assert_eq!(before[0]["offloads"]["tso"], true);
    // Thousands of transactions of at least 66 bytes each way crossed the link.
    let sent = bytes(after, "tx_bytes") - bytes(before, "tx_bytes");
    let transactions = record["classes"][0]["transactions"].as_u64().unwrap();
    assert!(transactions > 0, "{record}");
    assert!(
        sent >= 2 * 66 * transactions,
        "{sent} bytes for {transactions} transactions"
    );
}

/// A run asking for a link property this kernel lacks (netem, fq,
/// ESP) is one line naming the kernel option, exit 2, and builds nothing.
#[test]
fn a_missing_kernel_feature_is_one_line() {
    if !can_make_namespaces("a_missing_kernel_feature_is_one_line") {
        return;
    }
    // A lab of its own, so no other test's lab is touched.
    let text = std::fs::read_to_string(examples().join("lab-two-hosts.toml"))
        .unwrap()
        .replace("name = \"pair\"", "name = \"tmiss\"");
    let file = std::env::temp_dir().join(format!("tmiss-{}.toml", std::process::id()));
    std::fs::write(&file, text).unwrap();
    for (flag, value, config) in [
        ("--link-delay", "10ms", "CONFIG_NET_SCH_NETEM"),
        ("--link-qdisc", "fq", "CONFIG_NET_SCH_FQ"),
        ("--link-ipsec", "aes-cbc-128-sha256", "CONFIG_"),
    ] {
        let out = stackbench()
            .args(["run", "--lab"])
            .arg(&file)
            .args(["--from", "client", "--to", "server", flag, value])
            .args(["RR1(1B/1B)", "--duration", "1s", "--warmup", "0s"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        if out.status.success() {
            eprintln!("{flag} {value}: this kernel has it; refusal not exercised");
            let _ = lab("down", &file).output();
            continue;
        }
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert_eq!(err.trim_end().lines().count(), 1, "not one line: {err}");
        assert!(err.contains(config) && err.contains("--kernel"), "{err}");
        assert!(
            !Path::new("/run/netns/sb-tmiss-client").exists(),
            "a refused run left the lab built"
        );
    }
    let _ = std::fs::remove_file(&file);
}
