//! Two guests on one wire (`--peer-kernel`): one pair boot runs RR1 with the
//! driver in one TCG guest and the responder in the other, and the stored
//! environment names both kernels and both virtio-net adapters; no qemu is
//! left behind; bad input is one line, exit 2, before anything boots. Qemu
//! tier (skips without qemu, busybox or apt-get; CI installs them). One
//! boot of two guests, a 1 s window: some 30 s of CI time.

use std::path::Path;
use std::process::Output;

use crate::common::stackbench;
use crate::guest::{guest_tools, kernel, release_of, CACHE};

/// The processes whose command line names `dir` (qemu's sockets, files
/// and initramfs live under the run's TMPDIR).
fn processes_under(dir: &Path) -> Vec<String> {
    let needle = dir.to_string_lossy().into_owned();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let text = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if text.contains(&needle) {
            found.push(text);
        }
    }
    found
}

fn pair_run(tmp: &Path, db: &Path, args: &[&str]) -> Output {
    stackbench()
        .env("STACKBENCH_CACHE", CACHE)
        .env("TMPDIR", tmp)
        .arg("run")
        .args(args)
        .args(["--guest-accel", "tcg", "--db"])
        .arg(db)
        .output()
        .unwrap()
}

#[test]
fn a_pair_runs_rr1_over_its_wire_and_stores_both_kernels_and_adapters() {
    if !guest_tools("a_pair_runs_rr1_over_its_wire_and_stores_both_kernels_and_adapters") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("r.db");
    let k = kernel();
    let out = pair_run(
        tmp.path(),
        &db,
        &[
            "RR1(1B/1B)",
            "--kernel",
            k,
            "--peer-kernel",
            k,
            "--duration",
            "1s",
            "--warmup",
            "0s",
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        processes_under(tmp.path()).is_empty(),
        "qemu left behind: {:?}",
        processes_under(tmp.path())
    );
    let shown = stackbench()
        .args(["results", "show", "1", "--json", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    let stored: serde_json::Value = serde_json::from_slice(&shown.stdout).unwrap();
    let env = &stored["env"]["guest"];
    let release = release_of(k);
    assert_eq!(env["kernel_release"], release.as_str(), "{env}");
    assert_eq!(env["peer"]["kernel_release"], release.as_str(), "{env}");
    assert!(env["wire"].as_str().unwrap().contains("dgram"), "{env}");
    for (side, want) in [
        (&env["adapter"], "10.77.0.1/24"),
        (&env["peer"]["adapter"], "10.77.0.2/24"),
    ] {
        assert_eq!(side["driver"], "virtio_net", "{env}");
        assert_eq!(side["address"], want, "{env}");
        assert_eq!(side["rx_queues"], 1, "{env}");
        assert!(side["offloads"]["gro"].is_boolean(), "{env}");
    }
    let record = &stored["record"];
    let class = &record["classes"][0];
    assert!(class["transactions"].as_u64().unwrap() > 0, "{record}");
    assert_eq!(record["settings"]["peer_kernel"], k);
    assert!(record["settings"]["target"].is_null(), "{record}");
}

#[test]
fn a_pair_refuses_bad_input_before_booting() {
    if !guest_tools("a_pair_refuses_bad_input_before_booting") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("r.db");
    let k = kernel();
    for (args, want) in [
        (
            vec![
                "--kernel",
                k,
                "--peer-kernel",
                "/nonexistent/boot/vmlinuz-1",
            ],
            "kernel '/nonexistent/boot/vmlinuz-1': no such file",
        ),
        (vec!["--peer-kernel", k], "without kernel"),
        (
            vec!["--kernel", k, "--peer-kernel", k, "--guest-queues", "2"],
            "excludes guest_queues above 1",
        ),
        (
            vec!["--kernel", k, "--peer-kernel", k, "--transport", "unix"],
            "excludes transport unix",
        ),
    ] {
        let mut all = vec!["RR1(1B/1B)"];
        all.extend(args);
        let out = pair_run(tmp.path(), &db, &all);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{all:?}: {stderr}");
        let error: Vec<&str> = stderr.lines().filter(|l| l.contains("error")).collect();
        assert_eq!(error.len(), 1, "{stderr}");
        assert!(error[0].contains(want), "{all:?}: {stderr}");
        assert!(!stderr.contains("booted in"), "{stderr}");
        assert!(processes_under(tmp.path()).is_empty());
    }
}
