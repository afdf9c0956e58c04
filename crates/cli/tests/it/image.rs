//! deploy/Containerfile builds with podman into the image `k8s render`
//! names by default (`stackbench:VERSION`, `runner::k8s::DEFAULT_IMAGE`),
//! and the image runs: `stackbench --version`, and one short `run` (driver
//! and responder inside the container, on its loopback; no network). The
//! podman tier: podman as root, the base image in local storage
//! (`deploy/base-image`). The binary is this test build's, stripped: a
//! release build would cost CI minutes and the image holds what the
//! Containerfile copies, whichever build it is.

use std::path::Path;
use std::process::{Command, Output};

use stackbench_runner::k8s::DEFAULT_IMAGE;
use stackbench_testkit::{skip, Tier};

use crate::common::stackbench;

const BASE: &str = "docker.io/library/debian:bookworm-slim";

/// `podman ARGS…`, on runc where it is installed: crun (podman's default)
/// refuses a host whose cgroups are in hybrid mode ("cgroups in hybrid
/// mode not supported"), as this project's machines are; runc runs there.
fn podman(args: &[&str]) -> std::io::Result<Output> {
    let mut cmd = Command::new("podman");
    if Path::new("/usr/sbin/runc").exists() || Path::new("/usr/bin/runc").exists() {
        cmd.args(["--runtime", "runc"]);
    }
    cmd.args(args).output()
}

/// Resource limits for the container no higher than this process's: the
/// runtime sets them without CAP_SYS_RESOURCE, which a sandboxed host may
/// withhold (podman's defaults, or `--ulimit host`, are refused there with
/// "error setting rlimit … operation not permitted").
fn ulimits() -> [String; 4] {
    let limits = std::fs::read_to_string("/proc/self/limits").unwrap_or_default();
    let soft = |name: &str| {
        limits
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l[name.len()..].split_whitespace().next())
            .and_then(|v| v.parse::<u64>().ok())
    };
    let files = soft("Max open files").unwrap_or(1024).min(4096);
    let procs = soft("Max processes").unwrap_or(4096).min(1024);
    [
        "--ulimit".into(),
        format!("nofile={files}:{files}"),
        "--ulimit".into(),
        format!("nproc={procs}:{procs}"),
    ]
}

fn ok(out: &Output, what: &str) -> String {
    assert!(
        out.status.success(),
        "{what}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Why the tier cannot run here, if it cannot.
fn unavailable() -> Option<String> {
    match podman(&["image", "exists", BASE]) {
        Err(e) => Some(format!(
            "podman is not runnable ({e}); apt-get install podman"
        )),
        Ok(o) if !o.status.success() => Some(format!(
            "the base image {BASE} is not in podman's storage; run deploy/base-image"
        )),
        Ok(_) => None,
    }
}

#[test]
fn the_containerfile_builds_the_image_render_names_and_it_runs() {
    if let Some(why) = unavailable() {
        return skip(Tier::Podman, "the container image", &why);
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let context = tempfile::tempdir().unwrap();
    let binary = context.path().join("stackbench");
    let strip = Command::new("strip")
        .arg("-o")
        .arg(&binary)
        .arg(env!("CARGO_BIN_EXE_stackbench"))
        .status();
    if !strip.is_ok_and(|s| s.success()) {
        std::fs::copy(env!("CARGO_BIN_EXE_stackbench"), &binary).unwrap();
    }
    let containerfile = root.join("deploy/Containerfile");
    let build = podman(&[
        "build",
        "--pull=never",
        "-q",
        "-f",
        containerfile.to_str().unwrap(),
        "-t",
        DEFAULT_IMAGE,
        context.path().to_str().unwrap(),
    ])
    .unwrap();
    ok(&build, "podman build");

    let limits = ulimits();
    let run = |args: &[&str]| {
        let mut all = vec!["run", "--rm", "--network", "none"];
        all.extend(limits.iter().map(String::as_str));
        all.push(DEFAULT_IMAGE);
        all.extend_from_slice(args);
        podman(&all).unwrap()
    };
    let version = ok(
        &run(&["stackbench", "--version"]),
        "stackbench --version in the image",
    );
    let version_here = ok(
        &stackbench().arg("--version").output().unwrap(),
        "--version",
    );
    assert_eq!(version, version_here);
    assert!(version.contains(env!("CARGO_PKG_VERSION")), "{version}");
    // The image runs as the numeric non-root user the pods require.
    let id = ok(&run(&["id", "-u"]), "id -u");
    assert_eq!(id.trim(), "65532");

    let out = run(&[
        "stackbench",
        "run",
        "RR2(64B/64B)",
        "--transactions",
        "2000",
        "--json",
        "--no-store",
    ]);
    let stdout = ok(&out, "a short run in the image");
    let record: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let record = if record.is_array() {
        &record[0]
    } else {
        &record
    };
    assert_eq!(record["complete"], true, "{stdout}");
    assert_eq!(record["classes"][0]["transactions"], 2000, "{stdout}");

    // What `k8s render` writes by default is the image just built.
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("k8s");
    let study = root.join("examples/quick.toml");
    let render = stackbench()
        .args([
            "k8s",
            "render",
            study.to_str().unwrap(),
            "--agents",
            "1",
            "-o",
        ])
        .arg(&out_dir)
        .output()
        .unwrap();
    ok(&render, "k8s render");
    let images: Vec<String> = std::fs::read_dir(&out_dir)
        .unwrap()
        .flat_map(|e| {
            let text = std::fs::read_to_string(e.unwrap().path()).unwrap();
            text.match_indices("\"image\": \"")
                .map(|(i, m)| text[i + m.len()..].split('"').next().unwrap().to_string())
                .collect::<Vec<_>>()
        })
        .collect();
    assert!(!images.is_empty());
    assert!(images.iter().all(|i| i == DEFAULT_IMAGE), "{images:?}");
}
