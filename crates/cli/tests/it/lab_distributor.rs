//! Load distribution in a lab file (`[[distributor]]`, IPVS) and runs
//! across it (`--lab-targets N`): bad entries and runs that cannot cross it
//! are one line and exit 2 before anything is built (root or not); as root,
//! `lab up` either programs the service and `lab show` prints IPVS's
//! counters per target, or, on a kernel without IPVS (this host's), is
//! refused in one line naming the option and the guest, leaving no
//! namespace. The guest tier (`guest_tier.rs`) sends connections through it
//! in a 6.12 kernel and reads IPVS's counters.

use std::path::{Path, PathBuf};

use stackbench_testkit::can_make_namespaces;

use crate::common::{examples, refused, stackbench};

#[test]
fn a_run_across_a_distributor_is_refused_where_it_cannot_cross_it() {
    let w = "CRR1(64B/64B)";
    refused(
        "run",
        &["--lab-targets", "2", w],
        "lab_targets applies only to a lab run",
    );
    refused(
        "run",
        &["--lab-targets", "0", w],
        "out of range: use 1 to 64",
    );
    let file = examples().join("lab-lb.toml");
    let file = file.to_str().unwrap();
    fn across<'a>(file: &'a str, to: &'a str, n: &'a str) -> Vec<&'a str> {
        let w = "CRR1(64B/64B)";
        vec![
            "--lab",
            file,
            "--from",
            "client",
            "--to",
            to,
            "--lab-targets",
            n,
            w,
        ]
    }
    let two = examples().join("lab-two-hosts.toml");
    let plain = across(two.to_str().unwrap(), "server", "2");
    refused(
        "run",
        &plain,
        "lab_targets: host 'server' has no [[distributor]]",
    );
    refused(
        "run",
        &across(file, "lb", "5"),
        "lab_targets 5: the distributor on lb has 4 targets (t1, t2, t3, t4): use 1 to 4",
    );
    let mut mptcp = across(file, "lb", "2");
    mptcp.extend(["--transport", "mptcp"]);
    refused("run", &mptcp, "transport mptcp is not distributed");
}
use crate::lab::lab;

/// The example distributor lab with `edit` applied, under a name of the
/// test's own, in a temporary directory.
fn lab_file(dir: &Path, name: &str, edit: impl Fn(String) -> String) -> PathBuf {
    let text = std::fs::read_to_string(examples().join("lab-lb.toml")).unwrap();
    let text = edit(text.replace("name = \"dist\"", &format!("name = \"{name}\"")));
    let file = dir.join(format!("{name}.toml"));
    std::fs::write(&file, text).unwrap();
    file
}

/// A test lab's name, how its file is edited, and the refusal it gets.
type BadCase = (&'static str, fn(String) -> String, &'static str);

#[test]
fn bad_distributors_are_one_line_before_anything_is_built() {
    let dir = tempfile::tempdir().unwrap();
    let cases: [BadCase; 4] = [
        (
            "dbadsch",
            |t| t.replace("scheduler = \"rr\"", "scheduler = \"sh\""),
            "unknown IPVS scheduler 'sh': use rr, wrr, lc or wlc",
        ),
        (
            "dmany",
            |t| t.replace("\"t4\"]", "\"t4\", \"t5\"]"),
            "target 't5' is not another host of this lab (6 hosts",
        ),
        (
            "ddr",
            |t| t.replace("forwarding = \"nat\"", "forwarding = \"dr\""),
            "use forwarding = \"nat\"",
        ),
        (
            "dvip",
            |t| t.replace("address = \"10.81.1.254\"", "address = \"10.81.1.7\""),
            "is not one of the host's",
        ),
    ];
    for (name, edit, needle) in cases {
        let file = lab_file(dir.path(), name, edit);
        refused("lab", &["up", file.to_str().unwrap()], needle);
        let left = std::fs::read_dir("/run/netns")
            .map(|d| {
                d.filter_map(|e| e.ok()).any(|e| {
                    e.file_name()
                        .to_string_lossy()
                        .starts_with(&format!("sb-{name}-"))
                })
            })
            .unwrap_or(false);
        assert!(!left, "{name}: a namespace was left behind");
    }
}

#[test]
fn a_distributor_is_programmed_or_refused_where_ipvs_is_missing() {
    let test = "a_distributor_is_programmed_or_refused_where_ipvs_is_missing";
    if !can_make_namespaces(test) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = lab_file(dir.path(), "dtest", |t| t);
    let _ = lab("down", &file).output();
    let out = lab("up", &file).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    if out.status.code() == Some(2) {
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        assert!(err.contains("the kernel has no IPVS"), "{err}");
        assert!(
            err.contains("CONFIG_IP_VS") && err.contains("--kernel"),
            "{err}"
        );
        assert!(
            !Path::new("/run/netns/sb-dtest-lb").exists(),
            "refused after building: {err}"
        );
        // A run across it is refused the same way, before anything is built.
        let run = stackbench()
            .args(["run", "--lab"])
            .arg(&file)
            .args(["--from", "client", "--to", "lb", "--lab-targets", "2"])
            .args(["CRR1(64B/64B)", "--duration", "1s"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&run.stderr);
        assert_eq!(run.status.code(), Some(2), "{err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        assert!(err.contains("the kernel has no IPVS"), "{err}");
        assert!(!Path::new("/run/netns/sb-dtest-lb").exists(), "{err}");
        return;
    }
    assert!(out.status.success(), "{err}");
    let shown = lab("show", &file).output().unwrap();
    let _ = lab("down", &file).output();
    let text = String::from_utf8_lossy(&shown.stdout);
    assert!(
        text.contains("distributor on lb: 10.81.1.254:8080 rr nat: t1 0 connections"),
        "{text}"
    );
}
