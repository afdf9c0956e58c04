//! Virtual hosts as a run's responder (`lab_to = "HOST.vN"`, a macvlan):
//! bad names are one line and exit 2 and build nothing; as root, the
//! example study runs both variants and reports them side by side, the
//! virtual runs store their macvlan with the kernel's packet counters of
//! that interface, which rose by at least one packet per transaction each
//! way, and a run to the host's own address leaves the macvlan's counters
//! (read here from the namespace's sysfs) where they were.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use stackbench_testkit::can_make_namespaces;

use crate::common::{examples, json_ok, stackbench};
use crate::lab::lab;

/// An example lab file under lab name `name`, in a file of this test's own.
fn own_lab(example: &str, name: &str, from: &str) -> PathBuf {
    let text = std::fs::read_to_string(examples().join(example))
        .unwrap()
        .replace(&format!("name = \"{from}\""), &format!("name = \"{name}\""));
    let file = std::env::temp_dir().join(format!("{name}-{}.toml", std::process::id()));
    std::fs::write(&file, text).unwrap();
    file
}

fn run(file: &Path, from: &str, to: &str, db: &str) -> std::process::Output {
    stackbench()
        .args(["run", "--lab"])
        .arg(file)
        .args(["--from", from, "--to", to, "--db", db])
        .args(["RR1(1B/1B)", "--duration", "1s", "--warmup", "100ms"])
        .output()
        .unwrap()
}

/// Takes the lab down when the test ends, passed or failed, and removes
/// the lab file when it is the test's own copy.
struct Down(PathBuf, bool);

impl Drop for Down {
    fn drop(&mut self) {
        let _ = lab("down", &self.0).output();
        if self.1 {
            let _ = std::fs::remove_file(&self.0);
        }
    }
}

#[test]
fn bad_virtual_hosts_are_one_line_and_build_nothing() {
    let vmac = own_lab("lab-vmac-hosts.toml", "tbadvm", "vmac");
    let plain = own_lab("lab-two-hosts.toml", "tbadvp", "pair");
    for (file, from, to, needle) in [
        (
            &vmac,
            "client",
            "server.v2",
            "host server has 2 macvlan(s): use server.v0, server.v1",
        ),
        (&vmac, "client", "server.x", "a virtual host is HOST.vN"),
        (&vmac, "client.v0", "server", "host client has no macvlans"),
        (&vmac, "client", "server.v0,", "an empty name in the list"),
        (&plain, "client", "server.v0", "host server has no macvlans"),
        (
            &vmac,
            "client",
            "server.v0,server",
            "and 'server' is a host",
        ),
        (
            &vmac,
            "client",
            "server.v0,server.v1",
            "lists 2 virtual hosts, one responder each, and the run has 1 agent(s): add --agents 2",
        ),
    ] {
        let out = run(file, from, to, "/nonexistent/never.db");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{from} → {to}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "not one line: {err}");
        assert!(err.contains(needle), "{from} → {to}: {err}");
        for name in ["tbadvm", "tbadvp"] {
            assert!(
                !Path::new(&format!("/run/netns/sb-{name}-client")).exists(),
                "a refused run built lab {name}"
            );
        }
    }
    // A driver end cannot be a virtual host (its connections leave from
    // the host's own address).
    let own = own_lab("lab-vmac-hosts.toml", "tbadvd", "vmac");
    let text = std::fs::read_to_string(&own)
        .unwrap()
        .replace("name = \"client\"\ncpus = \"0\"\naddress = [\"10.77.1.1/24\"]", "name = \"client\"\ncpus = \"0\"\naddress = [\"10.77.1.1/24\"]\nmacvlan = [\"10.77.1.21/24\"]");
    std::fs::write(&own, text).unwrap();
    let out = run(&own, "client.v0", "server", "/nonexistent/never.db");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("lab_from 'client.v0': a driver runs in a host")
            && err.contains("use lab_from 'client'"),
        "{err}"
    );
    for f in [vmac, plain, own] {
        let _ = std::fs::remove_file(f);
    }
}

/// The kernel's packet counter `which` (`rx_packets`, `tx_packets`) of
/// interface `ifname` in namespace `ns`, from that namespace's sysfs.
fn packets(ns: &str, ifname: &str, which: &str) -> u64 {
    let out = Command::new("ip")
        .args(["netns", "exec", ns, "cat"])
        .arg(format!("/sys/class/net/{ifname}/statistics/{which}"))
        .output()
        .expect("ip (iproute2) for the root tier");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

fn stored_id(err: &str) -> String {
    err.lines()
        .find_map(|l| l.strip_prefix("stackbench: stored as run "))
        .unwrap_or_else(|| panic!("no stored run: {err}"))
        .trim()
        .to_string()
}

#[test]
fn the_macvlan_carries_a_virtual_runs_traffic_and_only_its() {
    if !can_make_namespaces("the_macvlan_carries_a_virtual_runs_traffic_and_only_its") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let db = db.to_str().unwrap();
    let file = own_lab("lab-vmac-hosts.toml", "tvmac", "vmac");
    let _ = lab("down", &file).output();
    let _down = Down(file.clone(), true);
    let (ns, macvlan) = ("sb-tvmac-server", "tvmac-0bv0");

    // To the virtual host: the record names it, and its counters rose.
    let out = run(&file, "client", "server.v0", db);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let shown: Value =
        json_ok(stackbench().args(["results", "show", &stored_id(&err), "--json", "--db", db]));
    assert_eq!(shown["record"]["settings"]["lab_to"], "server.v0");
    let v = &shown["env"]["lab"]["virtual_to"][0];
    assert_eq!(v["interface"], macvlan, "{v}");
    assert_eq!(v["address"], "10.77.1.11", "{v}");
    let transactions = shown["record"]["classes"][0]["transactions"]
        .as_u64()
        .unwrap();
    assert!(transactions > 100, "{transactions}");
    let window = |k: &str| {
        v[format!("{k}_after")].as_u64().unwrap() - v[format!("{k}_before")].as_u64().unwrap()
    };
    // One request in and one response out per transaction, at least.
    assert!(
        window("rx_packets") >= transactions,
        "{v} for {transactions}"
    );
    assert!(
        window("tx_packets") >= transactions,
        "{v} for {transactions}"
    );
    let codes: Vec<&str> = shown["record"]["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|w| w["code"].as_str())
        .collect();
    assert!(!codes.contains(&"virtual_host_idle"), "{codes:?}");

    // To the host's own address: the macvlan stays out of it (a few
    // broadcasts, ARP, may reach it; the transactions do not).
    let (rx, tx) = (
        packets(ns, macvlan, "rx_packets"),
        packets(ns, macvlan, "tx_packets"),
    );
    let out = run(&file, "client", "server", db);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let shown: Value =
        json_ok(stackbench().args(["results", "show", &stored_id(&err), "--json", "--db", db]));
    assert!(
        shown["env"]["lab"].get("virtual_to").is_none(),
        "{}",
        shown["env"]["lab"]
    );
    let transactions = shown["record"]["classes"][0]["transactions"]
        .as_u64()
        .unwrap();
    assert!(transactions > 100, "{transactions}");
    let (rx2, tx2) = (
        packets(ns, macvlan, "rx_packets"),
        packets(ns, macvlan, "tx_packets"),
    );
    assert!(
        rx2 - rx < 10 && tx2 - tx < 10,
        "rx +{}, tx +{} for {transactions} transactions",
        rx2 - rx,
        tx2 - tx
    );

    // Two virtual hosts, one per agent: each macvlan carries its agent's
    // share (four of the eight connections).
    let out = stackbench()
        .args(["run", "--lab"])
        .arg(&file)
        .args([
            "--from",
            "client",
            "--to",
            "server.v0,server.v1",
            "--agents",
            "2",
        ])
        .args([
            "RR8(1B/1B)",
            "--duration",
            "1s",
            "--warmup",
            "100ms",
            "--db",
            db,
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let shown: Value =
        json_ok(stackbench().args(["results", "show", &stored_id(&err), "--json", "--db", db]));
    let transactions = shown["record"]["classes"][0]["transactions"]
        .as_u64()
        .unwrap();
    let both = shown["env"]["lab"]["virtual_to"].as_array().unwrap();
    let names: Vec<&str> = both
        .iter()
        .map(|v| v["interface"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["tvmac-0bv0", "tvmac-0bv1"]);
    for v in both {
        let rx = v["rx_packets_after"].as_u64().unwrap() - v["rx_packets_before"].as_u64().unwrap();
        let tx = v["tx_packets_after"].as_u64().unwrap() - v["tx_packets_before"].as_u64().unwrap();
        assert!(
            rx >= transactions / 4 && tx >= transactions / 4,
            "{v} for {transactions}"
        );
    }
}

#[test]
fn the_vmac_example_reports_physical_beside_virtual() {
    if !can_make_namespaces("the_vmac_example_reports_physical_beside_virtual") {
        return;
    }
    let root = examples().parent().unwrap().to_path_buf();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let db = db.to_str().unwrap();
    let _down = Down(examples().join("lab-vmac-hosts.toml"), false);
    let status = stackbench()
        .current_dir(&root)
        .args([
            "study",
            "examples/lab-vmac.toml",
            "--duration",
            "1s",
            "--warmup",
            "0s",
        ])
        .args(["--repetitions", "1", "--db", db])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&status.stderr);
    assert!(status.status.success(), "{err}");
    let out = dir.path().join("report");
    let done = stackbench()
        .args(["report", "--study", "lab-vmac", "--db", db, "-o"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        done.status.success(),
        "{}",
        String::from_utf8_lossy(&done.stderr)
    );
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    for needle in [
        "physical",
        "virtual",
        "lab vmac: client → server, direct",
        "lab vmac: client → server.v0 (macvlan vmac-0bv0), direct",
        "RR10(4kB/4kB)",
        "STR1(1B/20MB)",
    ] {
        assert!(md.contains(needle), "{needle} not in {md}");
    }
    // Every virtual run's macvlan counted its traffic.
    let runs: Value = json_ok(stackbench().args(["results", "list", "--json", "--db", db]));
    let runs = runs.as_array().unwrap();
    assert_eq!(runs.len(), 6, "{runs:?}");
    for r in runs.iter().filter(|r| r["variant"] == "virtual") {
        let id = r["id"].to_string();
        let shown: Value =
            json_ok(stackbench().args(["results", "show", &id, "--json", "--db", db]));
        let v = &shown["env"]["lab"]["virtual_to"][0];
        let rx = v["rx_packets_after"].as_u64().unwrap() - v["rx_packets_before"].as_u64().unwrap();
        let tx = v["tx_packets_after"].as_u64().unwrap() - v["tx_packets_before"].as_u64().unwrap();
        assert!(rx > 0 && tx > 0, "run {id}: {v}");
    }
}
