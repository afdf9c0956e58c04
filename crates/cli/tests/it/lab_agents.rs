//! Agents inside lab hosts (`run --lab FILE --lab-from d1,d2,d3,d4 --lab-to
//! server --agents 4`): as root, four agents in the four driver hosts of the
//! example lab drive one responder host with exact counts, each over its own
//! link, their windows opening together, and nothing is left behind once the
//! lab is down; a listed host the lab lacks is one line and starts nothing.

use serde_json::Value;
use std::path::{Path, PathBuf};

use stackbench_testkit::can_make_namespaces;

use crate::common::{examples, json_ok, stackbench};
use crate::lab::lab;

/// The four-driver example under lab name `name`, so that no other test's
/// `lab down` pulls it away mid-run.
fn four_drivers(dir: &Path, name: &str) -> PathBuf {
    let file = dir.join(format!("{name}.toml"));
    let text = std::fs::read_to_string(examples().join("lab-four-drivers.toml")).unwrap();
    std::fs::write(
        &file,
        text.replace("name = \"four\"", &format!("name = \"{name}\"")),
    )
    .unwrap();
    file
}

/// The namespaces of lab `name` under /run/netns, with their inode numbers.
fn namespaces(name: &str) -> Vec<(String, u64)> {
    use std::os::unix::fs::MetadataExt;
    let prefix = format!("sb-{name}-");
    let Ok(dir) = std::fs::read_dir("/run/netns") else {
        return Vec::new();
    };
    dir.filter_map(Result::ok)
        .filter_map(|e| {
            let n = e.file_name().to_string_lossy().into_owned();
            let ino = e.metadata().ok()?.ino();
            n.starts_with(&prefix).then_some((n, ino))
        })
        .collect()
}

/// Processes whose network namespace is one of `inodes`.
fn processes_in(inodes: &[u64]) -> Vec<String> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().filter_map(Result::ok) {
        let Ok(link) = std::fs::read_link(entry.path().join("ns/net")) else {
            continue;
        };
        let text = link.to_string_lossy().into_owned(); // net:[4026532…]
        let ino = text
            .trim_start_matches("net:[")
            .trim_end_matches(']')
            .parse::<u64>();
        if ino.is_ok_and(|i| inodes.contains(&i)) {
            let cmd = std::fs::read_to_string(entry.path().join("cmdline")).unwrap_or_default();
            out.push(format!(
                "{} {}",
                entry.file_name().to_string_lossy(),
                cmd.replace('\0', " ")
            ));
        }
    }
    out
}

#[test]
fn four_agents_in_four_lab_hosts_drive_one_responder_host_exactly() {
    if !can_make_namespaces("four_agents_in_four_lab_hosts_drive_one_responder_host_exactly") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = four_drivers(dir.path(), "tfour");
    let _ = lab("down", &file).output();
    let out = stackbench()
        .args(["run", "RR8(64B/64B)", "--lab"])
        .arg(&file)
        .args(["--lab-from", "d1,d2,d3,d4", "--lab-to", "server"])
        .args(["--agents", "4", "--transactions", "100000", "--json"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    // Every process of the run is gone with it, before the lab comes down.
    let inodes: Vec<u64> = namespaces("tfour").iter().map(|(_, i)| *i).collect();
    assert_eq!(inodes.len(), 5, "the lab's five hosts are up after the run");
    let left = processes_in(&inodes);
    let down = lab("down", &file).output().unwrap();
    assert!(out.status.success(), "{err}");
    assert!(left.is_empty(), "left in the lab's namespaces: {left:?}");
    assert!(
        down.status.success(),
        "{}",
        String::from_utf8_lossy(&down.stderr)
    );
    assert_eq!(namespaces("tfour"), Vec::new(), "lab down left namespaces");

    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["complete"], true, "{v}");
    assert_eq!(v["classes"][0]["transactions"], 100_000);
    assert_eq!(v["settings"]["lab_from"], "d1,d2,d3,d4");
    let agents = &v["agents"];
    assert_eq!(agents["count"], 4);
    let rows = agents["agents"].as_array().unwrap();
    let per_agent: Vec<u64> = rows
        .iter()
        .map(|r| r["classes"][0]["transactions"].as_u64().unwrap())
        .collect();
    assert_eq!(per_agent, vec![25_000; 4]);
    // Agent i drove the responder on the server's address of host d(i+1)'s
    // link: the only route out of its namespace, so it ran there.
    for (i, r) in rows.iter().enumerate() {
        let responder = r["responder"].as_str().unwrap();
        assert!(
            responder.starts_with(&format!("10.7{}.1.2:", i + 1)),
            "agent {i}: {r}"
        );
    }
    // Namespaces share the machine's UTS namespace: one host name for all.
    let machine = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    let hosts: Vec<&str> = rows.iter().map(|r| r["host"].as_str().unwrap()).collect();
    assert_eq!(hosts, vec![machine.trim(); 4]);
    // One machine: the windows open together (the target is 5 ms;
    // a loaded test machine gets a looser bound).
    let skew = agents["start_skew_s"].as_f64().unwrap();
    eprintln!("start skew of four agents in four lab hosts: {skew} s");
    assert!((0.0..0.05).contains(&skew), "start skew {skew} s");
    // The stored environment is the first host's path.
    let id = err
        .lines()
        .find_map(|l| l.strip_prefix("stackbench: stored as run "))
        .unwrap_or_else(|| panic!("no stored run: {err}"));
    let shown = json_ok(stackbench().args(["results", "show", id.trim(), "--json"]));
    let env = &shown["env"]["lab"];
    assert_eq!((&env["from"], &env["to"]), (&"d1".into(), &"server".into()));
    assert_eq!(env["responder_address"], "10.71.1.2");
}

/// `stackbench run RR8(64B/64B) --lab FILE --lab-from FROM --lab-to server
/// FLAGS…`, expected to fail in one line containing `needle` with nothing
/// of lab `name` built.
fn refused(file: &Path, name: &str, from: &str, flags: &[&str], needle: &str) {
    let out = stackbench()
        .args(["run", "RR8(64B/64B)", "--lab"])
        .arg(file)
        .args(["--lab-from", from, "--lab-to", "server"])
        .args(["--transactions", "1000"])
        .args(flags)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{from}: {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{from}: {err}");
    assert!(err.contains(needle), "{from}: {err}");
    assert_eq!(namespaces(name), Vec::new(), "{from}: a lab was built");
}

#[test]
fn a_listed_host_the_lab_lacks_is_one_line_and_starts_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let file = four_drivers(dir.path(), "tnone");
    // Checked before root is: any user gets it.
    let needle = "lab_from 'nosuch' is not a host of lab tnone";
    refused(&file, "tnone", "d1,nosuch", &["--agents", "4"], needle);
    let test = "a_listed_host_the_lab_lacks_is_one_line_and_starts_nothing";
    if !can_make_namespaces(test) {
        return;
    }
    let needle = "lab_from lists 2 hosts, and one driver process runs in one host: add --agents 2";
    refused(&file, "tnone", "d1,d2", &[], needle);
    let needle = "use at least --agents 3";
    refused(&file, "tnone", "d1,d2,d3", &["--agents", "2"], needle);
    let needle = "launcher external with a lab";
    refused(
        &file,
        "tnone",
        "d1",
        &["--agents", "2", "--launcher", "external"],
        needle,
    );
}
