//! The guest-kernel tier: runs and studies with `kernel` set run
//! whole in a TCG guest booted with a Debian kernel, and the kernel features
//! this host lacks are seen working there — kTLS records carried by the
//! kernel (its tls_stat counters rise on both sides). The stored environment
//! is the guest's and says `emulated`. Each test boots one guest per step
//! (~15 s each here); they skip with a message without qemu, busybox or
//! apt-get (CI installs them).

use std::process::Output;

use serde_json::Value;

use crate::common::{json_of, output_ok, stackbench};
use crate::guest::{cloud_kernels, guest_tools, kernel, release_of, CACHE};

/// `stackbench run ARGS… --kernel KERNEL --guest-accel tcg --json` with a
/// throw-away database, and the run's stored JSON (`results show 1 --json`).
fn run_in_guest(args: &[&str]) -> (Output, Option<Value>) {
    run_in_guest_on(kernel(), args)
}

/// [`run_in_guest`] on `kernel` (a package, or a pattern with `*`).
fn run_in_guest_on(kernel: &str, args: &[&str]) -> (Output, Option<Value>) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let out = stackbench()
        .env("STACKBENCH_CACHE", CACHE)
        .arg("run")
        .args(args)
        .args(["--kernel", kernel, "--guest-accel", "tcg", "--json", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    let stored = out.status.success().then(|| {
        json_of(
            &stackbench()
                .args(["results", "show", "1", "--json", "--db"])
                .arg(&db)
                .output()
                .unwrap(),
        )
    });
    (out, stored)
}

fn ok_record(out: &Output) -> Value {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    json_of(out)
}

#[test]
fn a_guest_run_stores_the_guests_environment_marked_emulated() {
    if !guest_tools("a_guest_run_stores_the_guests_environment_marked_emulated") {
        return;
    }
    let (out, stored) = run_in_guest(&["RR1(1B/1B)", "--duration", "1s", "--warmup", "0s"]);
    let record = ok_record(&out);
    assert!(record["classes"][0]["transactions"].as_u64().unwrap() > 0);
    assert_eq!(record["settings"]["kernel"], kernel());
    assert_eq!(
        record["settings"]["guest_accel"], "tcg",
        "the accelerator that ran"
    );
    let codes: Vec<&str> = record["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|w| w["code"].as_str())
        .collect();
    assert!(codes.contains(&"emulated_guest"), "{codes:?}");
    let env = &stored.unwrap()["env"];
    assert_eq!(env["kernel_release"], release_of(kernel()), "{env}");
    let guest = &env["guest"];
    assert_eq!(guest["emulated"], true, "{guest}");
    assert_eq!(guest["accel"], "tcg");
    assert_eq!(guest["kernel"], kernel());
    assert!(guest["host_kernel_release"]
        .as_str()
        .is_some_and(|h| !h.is_empty()));
}

/// Asserts a kTLS run carried its records in the kernel on both sides.
fn assert_ktls(label: &str, record: &Value) {
    let class = &record["classes"][0];
    assert!(
        class["transactions"].as_u64().unwrap() > 0,
        "{label}: {record}"
    );
    assert_eq!(class["errors"], 0, "{label}: {record}");
    let k = &class["tls"]["ktls"];
    assert!(k["connections"].as_u64().unwrap() > 0, "{label}: {k}");
    assert!(
        k["server_connections"].as_u64().unwrap() > 0,
        "{label}: {k}"
    );
    for side in ["client", "server"] {
        assert!(k[side]["tx_sw"].as_u64().unwrap() > 0, "{label}: {k}");
        assert!(k[side]["rx_sw"].as_u64().unwrap() > 0, "{label}: {k}");
        assert_eq!(k[side]["decrypt_errors"], 0, "{label}: {k}");
    }
    let warned = record["warnings"]
        .as_array()
        .is_some_and(|w| w.iter().any(|w| w["code"] == "ktls_not_carried"));
    assert!(!warned, "{label}: {record}");
}

/// A kTLS run of `workload` with TLS `version` and `extra` flags in the
/// guest, checked by [`assert_ktls`]; its record.
fn ktls_run(label: &str, workload: &str, version: &str, extra: &[&str]) -> Value {
    ktls_run_on(kernel(), label, workload, version, extra).0
}

/// [`ktls_run`] on `kernel`; the record and the stored run.
fn ktls_run_on(
    kernel: &str,
    label: &str,
    workload: &str,
    version: &str,
    extra: &[&str],
) -> (Value, Option<Value>) {
    let flags = [
        "--transport",
        "tls",
        "--tls-mode",
        "ktls",
        "--tls-version",
        version,
    ];
    let window = ["--duration", "2s", "--warmup", "1s"];
    let (out, stored) =
        run_in_guest_on(kernel, &[&[workload][..], &flags, extra, &window].concat());
    let record = ok_record(&out);
    assert_ktls(label, &record);
    (record, stored)
}

#[test]
fn ktls_tls13_records_are_carried_by_the_guest_kernel() {
    if !guest_tools("ktls_tls13_records_are_carried_by_the_guest_kernel") {
        return;
    }
    let record = ktls_run("1.3 1301", "RR2(4kB/4kB)", "1.3", &["--cipher", "1301"]);
    let cipher = &record["classes"][0]["tls"]["cipher"];
    assert_eq!(cipher, "TLS_AES_128_GCM_SHA256");
}

#[test]
fn ktls_tls12_with_resumed_handshakes_in_the_guest_kernel() {
    if !guest_tools("ktls_tls12_with_resumed_handshakes_in_the_guest_kernel") {
        return;
    }
    let extra = ["--cipher", "C02F", "--resume-ratio", "0.5"];
    let record = ktls_run("1.2 C02F resumed", "CRR2(64B/1kB)", "1.2", &extra);
    let tls = &record["classes"][0]["tls"];
    assert!(tls["resumed_handshakes"].as_u64().unwrap() > 0, "{tls}");
}

/// The newest 6.12 cloud kernel, as a pattern stackbench resolves.
const KERNEL_612: &str = "linux-image-6.12.*-cloud-amd64-unsigned";

#[test]
fn a_612_kernel_with_compressed_modules_loads_ktls_and_smc() {
    let test = "a_612_kernel_with_compressed_modules_loads_ktls_and_smc";
    if !guest_tools(test) {
        return;
    }
    // 6.12 ships tls.ko.xz and smc.ko.xz: before the initramfs decompressed
    // them, kTLS said "no kernel TLS" and smc "no AF_SMC" in this guest.
    let (record, stored) = ktls_run_on(KERNEL_612, "6.12 kTLS", "RR2(4kB/4kB)", "1.3", &[]);
    assert_eq!(
        record["settings"]["kernel"], KERNEL_612,
        "the setting as given"
    );
    let guest = &stored.unwrap()["env"]["guest"];
    let booted = guest["kernel"].as_str().unwrap();
    assert!(
        booted.starts_with("linux-image-6.12.") && !booted.contains('*'),
        "the package the pattern chose: {guest}"
    );
    assert!(
        guest["kernel_release"]
            .as_str()
            .unwrap()
            .starts_with("6.12."),
        "{guest}"
    );

    // No SMC device in the guest: AF_SMC opens and every connection falls
    // back to TCP, which the run reports as incomplete (exit 3).
    let window = ["--duration", "1s", "--warmup", "0s"];
    let (out, _) = run_in_guest_on(
        KERNEL_612,
        &[&["RR1(1B/1B)", "--transport", "smc"][..], &window].concat(),
    );
    // With --json the reason is in the record on stdout.
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(3), "{text}");
    assert!(text.contains("fell back to TCP"), "{text}");
    // With the reason SMC_DIAG gave: no device on either side.
    assert!(text.contains("no SMC device found"), "{text}");
    assert!(!text.contains("no AF_SMC"), "{text}");
}

#[test]
fn the_kernel_release_example_renders_its_release_table() {
    if !guest_tools("the_kernel_release_example_renders_its_release_table") {
        return;
    }
    // The example names patterns: the newest 6.1 and the newest 6.12 the
    // apt index lists, resolved when the study runs.
    let Some(old) = cloud_kernels().last() else {
        stackbench_testkit::skip(
            stackbench_testkit::Tier::Qemu,
            "the_kernel_release_example_renders_its_release_table",
            "the apt index lists no 6.1 cloud kernel (run apt-get update)",
        );
        return;
    };
    let old_release = release_of(old);
    let text =
        std::fs::read_to_string(crate::common::examples().join("kernel-release.toml")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let study = dir.path().join("kernel-release.toml");
    std::fs::write(&study, text).unwrap();
    let db = dir.path().join("r.db");
    output_ok(
        stackbench()
            .env("STACKBENCH_CACHE", CACHE)
            .arg("study")
            .arg(&study)
            .args(["--duration", "1s", "--warmup", "0s", "--repetitions", "1"])
            // The loopback table; the "-wire" variants (two guests each)
            // are run by the pair test's one boot, not here (CI time).
            .args(["--variant", "6.1", "--variant", "6.12"])
            .args(["--guest-accel", "tcg", "--db"])
            .arg(&db),
    );
    let report = dir.path().join("report");
    output_ok(
        stackbench()
            .args(["report", "--study", "kernel-release", "--db"])
            .arg(&db)
            .arg("-o")
            .arg(&report),
    );
    let md = std::fs::read_to_string(report.join("report.md")).unwrap();
    assert!(md.contains("Throughput new/old"), "{md}");
    assert!(
        md.contains(&format!("release {old_release}, the baseline")),
        "6.12 against {old_release}: {md}"
    );
    assert!(md.contains("release 6.12."), "{md}");
    for workload in [
        "RR1(1B/1B)",
        "RR10(4kB/4kB)",
        "CRR10(64B/8kB)",
        "STR1(1B/2MB)",
    ] {
        assert!(md.contains(workload), "{workload}: {md}");
    }
    assert!(md.contains("Average (geometric mean)"), "{md}");
    assert!(md.contains("no performance verdict"), "emulated: {md}");
}

#[test]
fn netem_delay_and_esp_are_seen_across_a_lab_in_the_guest_kernel() {
    if !guest_tools("netem_delay_and_esp_are_seen_across_a_lab_in_the_guest_kernel") {
        return;
    }
    let lab = crate::common::examples().join("lab-two-hosts.toml");
    let lab = lab.to_str().unwrap();
    let args = [
        "RR1(1B/1B)",
        "--lab",
        lab,
        "--from",
        "client",
        "--to",
        "server",
        "--link-delay",
        "10ms",
        "--link-ipsec",
        "aes-gcm-128",
        "--duration",
        "2s",
        "--warmup",
        "0s",
    ];
    let (out, stored) = run_in_guest(&args);
    let record = ok_record(&out);
    let class = &record["classes"][0];
    assert!(class["transactions"].as_u64().unwrap() > 0, "{record}");
    // 10 ms one way in each direction: a round trip of at least 20 ms.
    let p50 = class["latency_us"]["p50"].as_f64().unwrap();
    assert!(
        p50 >= 20_000.0,
        "RR p50 {p50} µs with a 10 ms netem delay each way"
    );
    let lab_env = &stored.unwrap()["env"]["lab"];
    assert_eq!(
        lab_env["file"], lab,
        "the user's lab file, not its copy in the guest"
    );
    let after = lab_env["interfaces_after"].as_array().unwrap();
    let client = after
        .iter()
        .find(|i| i["namespace"] == "sb-pair-client")
        .expect("client interface");
    assert_eq!(client["netem"]["delay_s"], 0.01, "{client}");
    let ipsec = &client["ipsec"];
    assert_eq!(ipsec["algorithm"], "aes-gcm-128", "{ipsec}");
    let before = lab_env["interfaces"].as_array().unwrap();
    let before = before
        .iter()
        .find(|i| i["namespace"] == "sb-pair-client")
        .unwrap();
    for dir in ["esp_packets_out", "esp_packets_in"] {
        let (b, a) = (
            before["ipsec"][dir].as_u64().unwrap(),
            ipsec[dir].as_u64().unwrap(),
        );
        assert!(
            a > b,
            "{dir}: ESP counter {b} → {a}: the transactions were not carried by ESP"
        );
    }
}

#[test]
fn af_smc_in_the_guest_kernel_runs_or_says_why_not_smc() {
    if !guest_tools("af_smc_in_the_guest_kernel_runs_or_says_why_not_smc") {
        return;
    }
    let (out, _) = run_in_guest(&[
        "RR1(1B/1B)",
        "--transport",
        "smc",
        "--duration",
        "1s",
        "--warmup",
        "0s",
    ]);
    let record = json_of(&out);
    if record["complete"] == true {
        // SMC proper (an ISM or RoCE device): SMC_DIAG saw no fallback.
        assert!(record["classes"][0]["transactions"].as_u64().unwrap() > 0);
    } else {
        // Debian's 6.1 cloud kernel has AF_SMC but no SMC device in the
        // guest (no SMC-D loopback before 6.11, no rdma_rxe): the kernel
        // falls back to TCP and the run says so instead of passing as SMC.
        let reason = record["incomplete_reason"].as_str().unwrap();
        assert!(reason.contains("fell back to TCP"), "{reason}");
        assert_eq!(out.status.code(), Some(3), "an incomplete run");
    }
}

#[test]
fn the_routing_fast_path_carries_forwarded_flows_in_a_612_guest() {
    if !guest_tools("the_routing_fast_path_carries_forwarded_flows_in_a_612_guest") {
        return;
    }
    // This host's kernel may lack flowtables; the 6.12 cloud kernel has
    // them as modules, which the guest loads on the first `nft` request.
    let lab = crate::common::examples().join("lab-router.toml");
    let args = [
        "RR1(64B/64B)",
        "--lab",
        lab.to_str().unwrap(),
        "--from",
        "client",
        "--to",
        "server",
        "--router-flowtable",
        "--duration",
        "2s",
        "--warmup",
        "0s",
    ];
    let (out, stored) = run_in_guest_on(KERNEL_612, &args);
    ok_record(&out);
    crate::lab_fastpath::assert_fast_path(&stored.unwrap(), "sb-hop-r1");
}

#[test]
fn a_distributor_spreads_connections_over_its_targets_in_a_612_guest() {
    if !guest_tools("a_distributor_spreads_connections_over_its_targets_in_a_612_guest") {
        return;
    }
    // The example lab's distributor (rr over four targets, NAT) in a 6.12
    // kernel, which has IPVS; busybox's httpd answers in each target and
    // eight connections to the virtual address are made from the client.
    // IPVS's totals come from its estimator, summed every 2 s: read after
    // a pause.
    let lab = crate::common::examples().join("lab-lb.toml");
    let script = "/init lab up /w/lab.toml >/dev/null || exit 9; \
        for t in t1 t2 t3 t4; do \
          /bin/busybox nsenter --net=/run/netns/sb-dist-$t /bin/busybox httpd -p 8080 -h /tmp; \
        done; \
        for i in 1 2 3 4 5 6 7 8; do \
          printf 'GET / HTTP/1.0\\r\\n\\r\\n' | /bin/busybox nsenter --net=/run/netns/sb-dist-client \
            /bin/busybox nc -w 5 10.81.1.254 8080 | head -1; \
        done; \
        sleep 5; /init lab show /w/lab.toml";
    let out = stackbench()
        .env("STACKBENCH_CACHE", CACHE)
        .args(["guest", "exec", "--accel", "tcg", "--timeout", "3m"])
        .args(["--kernel", KERNEL_612, "--file"])
        .arg(format!("{}=/w/lab.toml", lab.display()))
        .args(["--", "/bin/sh", "-c", script])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        text.matches("HTTP/1.1 404").count(),
        8,
        "answered through the VIP: {text}"
    );
    let line = text
        .lines()
        .find(|l| l.starts_with("distributor on lb: 10.81.1.254:8080 rr nat: "))
        .unwrap_or_else(|| panic!("no distributor line: {text}"));
    // Round robin: two connections to each target, by IPVS's counters.
    for t in ["t1", "t2", "t3", "t4"] {
        assert!(
            line.contains(&format!("{t} 2 connections (0 active, 2 inactive)")),
            "{t}: {line}"
        );
    }
}

#[test]
fn a_crr_run_is_spread_over_two_targets_by_ipvs_in_a_612_guest() {
    if !guest_tools("a_crr_run_is_spread_over_two_targets_by_ipvs_in_a_612_guest") {
        return;
    }
    // The responder answers in both targets behind lb's virtual address;
    // IPVS's counters per target (one connection per CRR transaction) are
    // the proof that the connections were spread, not answered in lb.
    let lab = crate::common::examples().join("lab-lb.toml");
    let args = [
        "CRR1(64B/64B)",
        "--lab",
        lab.to_str().unwrap(),
        "--from",
        "client",
        "--to",
        "lb",
        "--lab-targets",
        "2",
        "--duration",
        "2s",
        "--warmup",
        "0s",
    ];
    let (out, stored) = run_in_guest_on(KERNEL_612, &args);
    let record = ok_record(&out);
    let class = &record["classes"][0];
    let transactions = class["transactions"].as_u64().unwrap();
    assert!(transactions >= 20, "{record}");
    assert_eq!(class["errors"], 0, "{record}");
    let stored = stored.unwrap();
    assert_eq!(stored["record"]["settings"]["lab_targets"], 2);
    let targets = stored["env"]["lab"]["distribution"].as_array().unwrap();
    let hosts: Vec<&str> = targets
        .iter()
        .map(|t| t["host"].as_str().unwrap())
        .collect();
    assert_eq!(hosts, ["t1", "t2"], "{targets:?}");
    let per: Vec<u64> = targets
        .iter()
        .map(|t| t["connections"].as_u64().unwrap())
        .collect();
    // Round robin: each target gets half, give or take the connections
    // outside the window.
    let total: u64 = per.iter().sum();
    assert!(
        total >= transactions,
        "{per:?} for {transactions} transactions"
    );
    for n in &per {
        assert!(n * 3 >= total, "not spread: {per:?}");
    }
}
