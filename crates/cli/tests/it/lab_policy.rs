//! The host policy of a lab run (`--host-policy-rules N` and its
//! companions): bad input is one line and exit 2 (root or not); as root, a
//! run with 10,000 rules installs them in the server host's namespace (as
//! the kernel lists them to `nft`, and as the record's read-back stores
//! them), a later step without a policy removes the table, `lab down`
//! removes the namespace with it, and the reset action refuses connections
//! to its port while another port of the same host answers; without `nft`
//! a policy is refused in one line before anything is built.

use std::io::ErrorKind;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use serde_json::Value;
use stackbench_testkit::can_make_namespaces;

use crate::common::{refused, stackbench};
use crate::lab::lab;
use crate::lab::{stored_run_across, TestLab};

#[test]
fn a_host_policy_is_refused_where_it_means_nothing() {
    let w = "RR1(1B/1B)";
    refused(
        "run",
        &["--host-policy-rules", "100", w],
        "host_policy_rules applies only to a lab run",
    );
    refused(
        "run",
        &["--host-policy-rules", "-5", w],
        "--host-policy-rules",
    );
    refused(
        "run",
        &["--host-policy-rules", "1000000", w],
        "out of range: use 0 to 100000",
    );
    refused(
        "run",
        &[
            "--host-policy-reset-port",
            "0",
            "--host-policy-rules",
            "1",
            w,
        ],
        "out of range: use 1 to 65535",
    );
    // Parts of a policy without the policy itself.
    for flag in ["--host-policy-log", "--host-policy-conntrack=false"] {
        refused(
            "run",
            &[flag, w],
            "is part of a host policy, and none is asked for",
        );
    }
    refused(
        "run",
        &["--host-policy-reset-port", "8080", w],
        "host_policy_reset_port is part of a host policy",
    );
}

/// Whether `nft` runs here; skips (or fails where the root tier is
/// required) when it does not.
fn has_nft(test: &str) -> bool {
    if Command::new("nft").arg("--version").output().is_ok() {
        return true;
    }
    let why = "the nft command is missing (apt-get install nftables)";
    stackbench_testkit::skip(stackbench_testkit::Tier::Root, test, why);
    false
}

/// Runs `f` on a thread inside namespace `ns` (sockets it makes stay there).
fn in_ns<T: Send>(ns: &str, f: impl FnOnce() -> T + Send) -> T {
    let file = std::fs::File::open(format!("/run/netns/{ns}")).unwrap();
    std::thread::scope(|s| {
        s.spawn(|| {
            // SAFETY: setns(2) on this thread only, with a live descriptor.
            assert_eq!(
                unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) },
                0
            );
            f()
        })
        .join()
        .unwrap()
    })
}

/// `nft ARGS` run inside namespace `ns`: (success, stdout).
fn nft_in(ns: &str, args: &[&str]) -> (bool, String) {
    in_ns(ns, || {
        let out = Command::new("nft").args(args).output().unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    })
}

/// A short CRR run across lab `file` with `flags`; the stored run.
fn run_across(file: &Path, flags: &[&str]) -> Value {
    stored_run_across(file, "CRR1(64B/64B)", flags)
}

#[test]
fn ten_thousand_rules_are_installed_stored_and_removed() {
    let test = "ten_thousand_rules_are_installed_stored_and_removed";
    if !can_make_namespaces(test) || !has_nft(test) {
        return;
    }
    let test_lab = TestLab::from_example("lab-two-hosts.toml", "pair", "tpol");
    let file = &test_lab.file;
    let ns = "sb-tpol-server";

    let shown = run_across(
        file,
        &[
            "--host-policy-rules",
            "10000",
            "--host-policy-conntrack=false",
            "--host-policy-log",
        ],
    );
    let settings = &shown["record"]["settings"];
    assert_eq!(settings["host_policy_rules"], 10000);
    assert_eq!(settings["host_policy_conntrack"], false);
    assert_eq!(settings["host_policy_log"], true);
    let classes = &shown["record"]["classes"][0];
    assert!(classes["transactions"].as_u64().unwrap() > 0, "{classes}");
    let policy = &shown["env"]["lab"]["policy"];
    assert_eq!(policy["namespace"], ns);
    assert_eq!(policy["rules"], 10000, "{policy}");
    assert_eq!(policy["notrack"], true, "{policy}");
    // jump, log, accept: the frame without conntrack or reset.
    assert_eq!(policy["input_rules"], 3, "{policy}");
    assert!(policy["resets"].is_null(), "no reset action: {policy}");
    // notrack: the run's connections left no conntrack entries.
    assert_eq!(policy["conntrack_entries"], 0, "{policy}");
    // The kernel's own listing, through nft rather than the read-back.
    let (ok, listed) = nft_in(ns, &["list", "chain", "inet", "stackbench_policy", "rules"]);
    assert!(ok, "no rules chain in {ns}");
    assert_eq!(listed.matches(" drop\n").count(), 10000);
    let (_, all) = nft_in(ns, &["list", "ruleset"]);
    assert!(
        all.contains("notrack") && all.contains("log prefix"),
        "{all}"
    );

    // A step without a policy removes the table.
    let shown = run_across(file, &[]);
    assert!(shown["env"]["lab"]["policy"].is_null(), "{}", shown["env"]);
    let (ok, _) = nft_in(ns, &["list", "table", "inet", "stackbench_policy"]);
    assert!(!ok, "the table outlived a step without a policy");

    // `lab down` takes the namespace, and with it any table.
    run_across(file, &["--host-policy-rules", "100"]);
    let down = lab("down", file).output().unwrap();
    assert!(down.status.success());
    assert!(!Path::new("/run/netns").join(ns).exists());
}

/// Connects `count` times to `addr`: (accepted, refused by a reset).
fn connects(addr: SocketAddr, count: u32) -> (u32, u32) {
    let (mut ok, mut reset) = (0, 0);
    for _ in 0..count {
        match TcpStream::connect_timeout(&addr, Duration::from_secs(2)) {
            Ok(_) => ok += 1,
            Err(e) if e.kind() == ErrorKind::ConnectionRefused => reset += 1,
            Err(e) => panic!("connect {addr}: {e}"),
        }
    }
    (ok, reset)
}

#[test]
fn the_reset_action_refuses_its_port_only() {
    let test = "the_reset_action_refuses_its_port_only";
    if !can_make_namespaces(test) || !has_nft(test) {
        return;
    }
    let test_lab = TestLab::from_example("lab-two-hosts.toml", "pair", "treset");
    let file = &test_lab.file;
    let up = lab("up", file).output().unwrap();
    assert!(
        up.status.success(),
        "{}",
        String::from_utf8_lossy(&up.stderr)
    );
    // Two listeners in the server host: the one the policy disallows and
    // another; both stay open, so a refusal can only be the policy's.
    let (blocked, open) = in_ns("sb-treset-server", || {
        (
            TcpListener::bind("10.77.1.2:0").unwrap(),
            TcpListener::bind("10.77.1.2:0").unwrap(),
        )
    });
    let (blocked_addr, open_addr) = (blocked.local_addr().unwrap(), open.local_addr().unwrap());
    let from_client = |addr| in_ns("sb-treset-client", move || connects(addr, 20));
    assert_eq!(from_client(blocked_addr), (20, 0), "before the policy");

    let port = blocked_addr.port().to_string();
    let shown = run_across(
        file,
        &[
            "--host-policy-rules",
            "100",
            "--host-policy-reset-port",
            &port,
        ],
    );
    assert_eq!(
        shown["record"]["settings"]["host_policy_reset_port"],
        blocked_addr.port()
    );
    // established accept, jump, reset, accept.
    assert_eq!(shown["env"]["lab"]["policy"]["input_rules"], 4);
    assert_eq!(shown["env"]["lab"]["policy"]["resets"], 0);
    // With conntrack, the run's CRR connections are tracked (TIME_WAIT).
    let tracked = &shown["env"]["lab"]["policy"]["conntrack_entries"];
    assert!(tracked.as_u64().unwrap() > 0, "{tracked}");
    assert_eq!(from_client(blocked_addr), (0, 20), "every connection reset");
    assert_eq!(from_client(open_addr), (20, 0), "another port still open");
    // The kernel counted them: the reset rule's counter, read back.
    let show = lab("show", file).output().unwrap();
    let text = String::from_utf8_lossy(&show.stdout);
    assert!(
        text.contains("policy on server: 100 rules + 4 in input, conntrack, 20 reset"),
        "{text}"
    );
    drop((blocked, open));
    let down = lab("down", file).output().unwrap();
    assert!(down.status.success());
}

/// A policy on a machine without `nft` is one line naming the package,
/// exit 2, and nothing is built.
#[test]
fn a_policy_without_nft_names_the_package() {
    let test = "a_policy_without_nft_names_the_package";
    if !can_make_namespaces(test) {
        return;
    }
    let test_lab = TestLab::from_example("lab-two-hosts.toml", "pair", "tnonft");
    let empty = tempfile::tempdir().unwrap(); // a PATH with no nft on it
    let out = stackbench()
        .env("PATH", empty.path())
        .args(["run", "--lab"])
        .arg(&test_lab.file)
        .args(["--from", "client", "--to", "server", "RR1(1B/1B)"])
        .args(["--duration", "1s", "--host-policy-rules", "10"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "not one line: {err}");
    assert!(
        err.contains("the nft command is missing: install the nftables package"),
        "{err}"
    );
    assert!(!Path::new("/run/netns/sb-tnonft-server").exists());
}
