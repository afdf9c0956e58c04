//! `tls_mode ktls` in a guest kernel that has CONFIG_TLS (this host's has
//! not). Skipped unless `STACKBENCH_GUEST_KERNEL` names a runner with the
//! interface of the dev tool `guest-sh.sh BINARY SCRIPT`: it boots a guest
//! with BINARY as /bin/stackbench, runs `sh SCRIPT` as root and prints the
//! console. Each run's JSON record is printed between markers and checked
//! here: transactions, no errors, every connection switched on both sides,
//! the kernel's kTLS counters risen, no decrypt error, no ktls warning.

use std::process::Command;

use serde_json::Value;

/// (label, workload and flags) of each guest run.
const RUNS: &[(&str, &str)] = &[
    (
        "1.3 1301",
        "'RR10(4kB/4kB)' --tls-version 1.3 --cipher 1301",
    ),
    (
        "1.3 1302",
        "'RR10(4kB/4kB)' --tls-version 1.3 --cipher 1302",
    ),
    (
        "1.2 C02F",
        "'RR10(4kB/4kB)' --tls-version 1.2 --cipher C02F",
    ),
    ("1.2 9C", "'RR10(4kB/4kB)' --tls-version 1.2 --cipher 9C"),
    (
        "1.2 resumed",
        "'CRR4(64B/1kB)' --tls-version 1.2 --cipher C02F --resume-ratio 0.5",
    ),
];

fn script() -> String {
    let mut s = String::from("modprobe tls\n");
    for (label, args) in RUNS {
        s += &format!(
            "echo '@@begin {label}'\nstackbench run {args} --transport tls --tls-mode ktls \
             --duration 2s --warmup 2s --json --no-store 2>/dev/null\necho '@@end'\n"
        );
    }
    s
}

/// The JSON record printed between `@@begin LABEL` and `@@end`.
fn record(console: &str, label: &str) -> Value {
    let start = console
        .find(&format!("@@begin {label}\n"))
        .unwrap_or_else(|| panic!("no output for {label}: {console}"));
    let rest = &console[start..];
    let end = rest
        .find("@@end")
        .unwrap_or_else(|| panic!("{label} did not end: {console}"));
    let body = &rest[rest.find('\n').unwrap() + 1..end];
    let body: String = body.lines().filter(|l| !l.starts_with('[')).collect();
    serde_json::from_str(&body).unwrap_or_else(|e| panic!("{label}: {e}: {body}"))
}

fn check(label: &str, doc: &Value) {
    let class = &doc["classes"][0];
    assert!(
        class["transactions"].as_u64().unwrap() > 0,
        "{label}: {doc}"
    );
    assert_eq!(class["errors"], 0, "{label}: {doc}");
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
    let warned = doc["warnings"]
        .as_array()
        .is_some_and(|w| w.iter().any(|w| w["code"] == "ktls_not_carried"));
    assert!(!warned, "{label}: {doc}");
}

#[test]
fn ktls_runs_in_a_guest_kernel_with_config_tls() {
    let Ok(runner) = std::env::var("STACKBENCH_GUEST_KERNEL") else {
        eprintln!("skipped: set STACKBENCH_GUEST_KERNEL to a guest runner (guest-sh.sh)");
        return;
    };
    let dir = std::env::temp_dir().join(format!("stackbench-guest-ktls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("ktls.sh");
    std::fs::write(&path, script()).unwrap();
    let bin = assert_cmd::cargo::cargo_bin("stackbench");
    let out = Command::new(runner).arg(&bin).arg(&path).output().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let console = String::from_utf8_lossy(&out.stdout).replace('\r', "");
    for (label, _) in RUNS {
        check(label, &record(&console, label));
    }
    let resumed = &record(&console, "1.2 resumed")["classes"][0]["tls"];
    assert!(
        resumed["resumed_handshakes"].as_u64().unwrap() > 0,
        "{resumed}"
    );
}
