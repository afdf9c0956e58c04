//! `stackbench guest exec|fetch`: a run inside a TCG guest with a
//! Debian kernel brings its record back; the job's exit status and stderr
//! pass through; modules load by name and by alias (modules.dep and
//! modules.alias are generated on the host); a bad kernel is one line, exit 2.
//! Tests skip with a message where qemu-system-x86_64, busybox or apt-get are
//! missing (CI installs them). The kernel package is fetched once into a
//! stable cache directory, not per test.

use std::process::{Command, Output};

use crate::common::{json_of, stackbench};

/// Shared by the tests and across runs, so the package downloads once.
pub const CACHE: &str = "/tmp/stackbench-cache";

fn on_path(tool: &str) -> bool {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path).any(|d| d.join(tool).is_file())
}

/// The Debian cloud kernels (bookworm's `linux-image-<ABI>-cloud-amd64-unsigned`)
/// the apt index offers now, oldest ABI first. The archive drops old ABIs as
/// new ones come (6.1.0-48, which these tests once named, went within
/// weeks), so the tests take what is there instead of pinning one.
pub fn cloud_kernels() -> &'static [String] {
    static KERNELS: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    KERNELS.get_or_init(|| {
        let pattern = "^linux-image-[0-9.]+-[0-9]+-cloud-amd64-unsigned$";
        let Ok(out) = Command::new("apt-cache")
            .args(["search", "--names-only", pattern])
            .output()
        else {
            return Vec::new();
        };
        let mut names: Vec<String> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| l.split_whitespace().next())
            .map(String::from)
            .collect();
        names.sort_by_key(|n| abi(n));
        names
    })
}

/// The ABI number of a kernel package (`linux-image-6.1.0-53-…` → 53).
fn abi(package: &str) -> u32 {
    let release = release_of(package);
    let mut parts = release.split('-');
    parts.nth(1).and_then(|n| n.parse().ok()).unwrap_or(0)
}

/// The kernel release a package installs (`6.1.0-53-cloud-amd64`).
pub fn release_of(package: &str) -> String {
    let r = package.trim_start_matches("linux-image-");
    r.trim_end_matches("-unsigned").to_string()
}

/// The Debian kernel the guest tests boot: the newest the index offers.
pub fn kernel() -> &'static str {
    cloud_kernels().last().map_or("", String::as_str)
}

/// Whether guests can boot here; says why not otherwise.
pub fn guest_tools(test: &str) -> bool {
    let missing: Vec<&str> = ["qemu-system-x86_64", "busybox", "apt-get"]
        .into_iter()
        .filter(|t| !on_path(t))
        .collect();
    let qemu = stackbench_testkit::Tier::Qemu;
    if !missing.is_empty() {
        let why = format!(
            "{} not installed (apt-get install qemu-system-x86 busybox-static)",
            missing.join(", ")
        );
        stackbench_testkit::skip(qemu, test, &why);
        return false;
    }
    if kernel().is_empty() {
        let why = "the apt index lists no linux-image-*-cloud-amd64-unsigned (run apt-get update)";
        stackbench_testkit::skip(qemu, test, why);
        return false;
    }
    true
}

/// `stackbench guest exec --accel tcg --kernel KERNEL -- ARGS…`.
fn exec(kernel: &str, args: &[&str]) -> Output {
    exec_within("3m", kernel, args)
}

/// As [`exec`] with `--timeout TIMEOUT`.
fn exec_within(timeout: &str, kernel: &str, args: &[&str]) -> Output {
    let mut cmd: Command = stackbench();
    let flags = ["--accel", "tcg", "--timeout", timeout, "--kernel", kernel];
    cmd.env("STACKBENCH_CACHE", CACHE)
        .args(["guest", "exec"])
        .args(flags)
        .arg("--")
        .args(args);
    cmd.output().unwrap()
}

fn stderr_of(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn a_run_in_a_guest_brings_its_record_back() {
    if !guest_tools("a_run_in_a_guest_brings_its_record_back") {
        return;
    }
    let args = [
        "run",
        "RR1(1B/1B)",
        "--duration",
        "1s",
        "--warmup",
        "0s",
        "--json",
    ];
    let out = exec(kernel(), &args);
    let err = stderr_of(&out);
    assert!(out.status.success(), "{err}");
    let record = json_of(&out);
    assert!(record["schema_version"].is_number(), "{record}");
    assert!(record.to_string().contains("RR1(1B/1B)"), "{record}");
    let line = err
        .lines()
        .find(|l| l.starts_with("guest: "))
        .unwrap_or_else(|| panic!("{err}"));
    let release = release_of(kernel());
    assert!(line.contains(&format!("kernel {release}")), "{line}");
    assert!(line.contains("tcg (emulated"), "{line}");
}

#[test]
fn exit_status_and_stderr_pass_through() {
    if !guest_tools("exit_status_and_stderr_pass_through") {
        return;
    }
    let out = exec(kernel(), &["lab", "show", "/nonexistent/lab.toml"]);
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("stackbench: error:") && err.contains("/nonexistent/lab.toml"),
        "{err}"
    );
    assert!(err.lines().any(|l| l.starts_with("guest: kernel")), "{err}");
}

#[test]
fn modules_load_by_name_and_by_alias() {
    if !guest_tools("modules_load_by_name_and_by_alias") {
        return;
    }
    let kernel = kernel();
    // tcp-ulp-tls and xfrm-type-2-50 are what the kernel's request_module asks
    // for on TCP_ULP "tls" and an ESP state: they resolve through modules.alias.
    let script =
        "modprobe tls && modprobe esp4 && modprobe tcp-ulp-tls && modprobe xfrm-type-2-50 \
                  && cat /proc/sys/kernel/modprobe && lsmod; echo accel=$STACKBENCH_GUEST_ACCEL; \
                  echo to-stderr >&2; exit 7";
    let out = exec(kernel, &["/bin/sh", "-c", script]);
    let (stdout, err) = (String::from_utf8_lossy(&out.stdout), stderr_of(&out));
    assert_eq!(out.status.code(), Some(7), "{stdout}{err}");
    assert!(stdout.contains("/sbin/modprobe"), "{stdout}");
    // The job is told its CPU is emulated (timing checks are skipped there).
    assert!(stdout.contains("accel=tcg\n"), "{stdout}");
    for module in ["tls", "esp4", "xfrm_algo"] {
        assert!(
            stdout.lines().any(|l| l.starts_with(&format!("{module} "))),
            "{module}: {stdout}"
        );
    }
    assert!(err.starts_with("to-stderr\n"), "{err}");
}

#[test]
fn a_bad_kernel_is_one_line_and_exit_2() {
    if !guest_tools("a_bad_kernel_is_one_line_and_exit_2") {
        return;
    }
    for (kernel, needle) in [
        (
            "linux-image-0.0.0-none-amd64",
            "apt-cache search linux-image",
        ),
        (
            "/nonexistent/boot/vmlinuz-1",
            "'/nonexistent/boot/vmlinuz-1': no such file",
        ),
    ] {
        let out = exec(kernel, &["--version"]);
        let err = stderr_of(&out);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(needle), "{err}");
    }
}

#[test]
fn a_timeout_kills_the_guest_and_quotes_its_console() {
    if !guest_tools("a_timeout_kills_the_guest_and_quotes_its_console") {
        return;
    }
    let out = exec_within("2s", kernel(), &["/bin/sh", "-c", "sleep 600"]);
    let err = stderr_of(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("timed out after 2 s (raise --timeout); console:"),
        "{err}"
    );
}

#[test]
fn fetch_prints_the_kernel() {
    if !guest_tools("fetch_prints_the_kernel") {
        return;
    }
    let out = stackbench()
        .env("STACKBENCH_CACHE", CACHE)
        .args(["guest", "fetch", kernel()])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", stderr_of(&out));
    let release = release_of(kernel());
    assert!(text.contains(&format!("release {release}\n")), "{text}");
    assert!(
        text.contains(&format!("/lib/modules/{release}\n")),
        "{text}"
    );
}
