//! The build's identity for the agent wire's hello (`agents::wire::Build`):
//! the git commit this stackbench was built from and whether the sources
//! differed from it (dirty), so that a controller can tell two builds of
//! one version number apart.
//!
//! Outside a git checkout (a source tarball) the commit is `unknown`, unless
//! the packager names it in `STACKBENCH_COMMIT`. The script reruns when the
//! checkout's HEAD, index or reflog changes (a commit, a checkout, a stage)
//! and when any source under `crates/` changes, so the dirty flag follows
//! edits that were not staged.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=STACKBENCH_COMMIT");
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let root = manifest.join("../..");
    let (commit, dirty) = match std::env::var("STACKBENCH_COMMIT") {
        Ok(c) if !c.trim().is_empty() => (c.trim().to_string(), false),
        _ => from_git(&root).unwrap_or_else(|| ("unknown".to_string(), false)),
    };
    println!("cargo:rustc-env=STACKBENCH_BUILD_COMMIT={commit}");
    println!(
        "cargo:rustc-env=STACKBENCH_BUILD_DIRTY={}",
        if dirty { "1" } else { "0" }
    );
}

/// `git` run in `root`: its trimmed stdout, `None` when git is missing or fails.
fn git(root: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(root)
        .args(args)
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// The commit of HEAD and whether the workspace's sources differ from it
/// (tracked changes and untracked files under `crates/`, the manifests and
/// the lock file); `None` outside a git checkout.
fn from_git(root: &Path) -> Option<(String, bool)> {
    let commit = git(root, &["rev-parse", "HEAD"])?;
    // Rerun on a commit, checkout or stage. A path that does not exist
    // would make cargo rerun the script on every build: only existing ones.
    for what in ["HEAD", "index", "logs/HEAD"] {
        if let Some(p) = git(root, &["rev-parse", "--git-path", what]) {
            // Relative to `root` when git gives it so.
            let p = root.join(p);
            if p.exists() {
                println!("cargo:rerun-if-changed={}", p.display());
            }
        }
    }
    for source in ["crates", "Cargo.toml", "Cargo.lock"] {
        if root.join(source).exists() {
            println!("cargo:rerun-if-changed={}", root.join(source).display());
        }
    }
    let status = git(
        root,
        &[
            "status",
            "--porcelain",
            "--",
            "crates",
            "Cargo.toml",
            "Cargo.lock",
        ],
    )?;
    Some((commit, !status.is_empty()))
}
