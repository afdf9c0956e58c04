//! NAPI coalescing on a lab path (`link_napi_defer_hard_irqs`,
//! `link_gro_flush_timeout`): bad values are one line and exit 2 and build
//! nothing; as root, a run writes the values into every path interface's
//! sysfs inside its namespace (read here with `ip netns exec`, which mounts
//! that namespace's own sysfs), stores what the kernel held, a later run
//! without them puts the kernel's defaults back, and `lab down` leaves no
//! namespace behind.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use stackbench_testkit::can_make_namespaces;

use crate::common::{examples, json_ok, stackbench};
use crate::lab::lab;

/// The two-host example under lab name `name`, in a file of this test's own.
fn own_lab(name: &str) -> PathBuf {
    let text = std::fs::read_to_string(examples().join("lab-two-hosts.toml"))
        .unwrap()
        .replace("name = \"pair\"", &format!("name = \"{name}\""));
    let file = std::env::temp_dir().join(format!("{name}-{}.toml", std::process::id()));
    std::fs::write(&file, text).unwrap();
    file
}

fn run(file: &Path, extra: &[&str]) -> std::process::Output {
    stackbench()
        .args(["run", "--lab"])
        .arg(file)
        .args(["--from", "client", "--to", "server"])
        .args(extra)
        .args(["RR1(1B/1B)", "--duration", "1s", "--warmup", "100ms"])
        .output()
        .unwrap()
}

/// What sysfs in namespace `ns` says of `ifname`'s `file`.
fn sysfs(ns: &str, ifname: &str, file: &str) -> String {
    let out = Command::new("ip")
        .args(["netns", "exec", ns, "cat"])
        .arg(format!("/sys/class/net/{ifname}/{file}"))
        .output()
        .expect("ip (iproute2) for the root tier");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// Takes the lab down when the test ends, passed or failed.
struct Down<'a>(&'a Path);

impl Drop for Down<'_> {
    fn drop(&mut self) {
        let _ = lab("down", self.0).output();
    }
}

#[test]
fn bad_coalescing_values_are_one_line() {
    for (flag, value, needle) in [
        ("--link-napi-defer-hard-irqs", "-1", "cannot be negative"),
        ("--link-napi-defer-hard-irqs", "2147483648", "2147483647"),
        ("--link-gro-flush-timeout", "2s", "1s"),
    ] {
        let file = own_lab("tbadnapi");
        let out = run(&file, &[flag, value]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flag} {value}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "not one line: {err}");
        assert!(err.contains(flag) && err.contains(needle), "{err}");
        assert!(
            !Path::new("/run/netns/sb-tbadnapi-client").exists(),
            "a refused run built the lab"
        );
        let _ = std::fs::remove_file(&file);
    }
    let out = stackbench()
        .args(["run", "--link-gro-flush-timeout", "200us", "RR1(1B/1B)"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("link_gro_flush_timeout applies only to a lab run"),
        "{err}"
    );
}

#[test]
fn coalescing_is_written_read_back_and_undone() {
    if !can_make_namespaces("coalescing_is_written_read_back_and_undone") {
        return;
    }
    let file = own_lab("tnapi");
    let _ = lab("down", &file).output();
    let _down = Down(&file);
    let out = run(
        &file,
        &[
            "--link-napi-defer-hard-irqs",
            "2",
            "--link-gro-flush-timeout",
            "200us",
        ],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    for (ns, ifname) in [
        ("sb-tnapi-client", "tnapi-0a"),
        ("sb-tnapi-server", "tnapi-0b"),
    ] {
        assert_eq!(
            sysfs(ns, ifname, "napi_defer_hard_irqs"),
            "2",
            "{ns}/{ifname}"
        );
        assert_eq!(
            sysfs(ns, ifname, "gro_flush_timeout"),
            "200000",
            "{ns}/{ifname}"
        );
    }
    let id = err
        .lines()
        .find_map(|l| l.strip_prefix("stackbench: stored as run "))
        .unwrap_or_else(|| panic!("no stored run: {err}"));
    let shown: Value = json_ok(stackbench().args(["results", "show", id.trim(), "--json"]));
    let settings = &shown["record"]["settings"];
    assert_eq!(settings["link_napi_defer_hard_irqs"], 2);
    assert_eq!(settings["link_gro_flush_timeout_s"], 0.0002);
    for key in ["interfaces", "interfaces_after"] {
        for i in shown["env"]["lab"][key].as_array().unwrap() {
            assert_eq!(i["napi_defer_hard_irqs"], 2, "{i}");
            assert_eq!(i["gro_flush_timeout_ns"], 200_000, "{i}");
            assert_eq!(i["coalesce"], "not supported by veth", "{i}");
        }
    }

    // A run without them (a study's next step) puts the defaults back.
    let out = run(&file, &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        sysfs("sb-tnapi-server", "tnapi-0b", "napi_defer_hard_irqs"),
        "0"
    );
    assert_eq!(
        sysfs("sb-tnapi-server", "tnapi-0b", "gro_flush_timeout"),
        "0"
    );

    let down = lab("down", &file).output().unwrap();
    assert!(
        down.status.success(),
        "{}",
        String::from_utf8_lossy(&down.stderr)
    );
    assert!(!Path::new("/run/netns/sb-tnapi-client").exists());
    assert!(!Path::new("/run/netns/sb-tnapi-server").exists());
    let _ = std::fs::remove_file(&file);
}
