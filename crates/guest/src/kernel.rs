//! Guest kernels: a Debian kernel package name, fetched once with
//! `apt-get download` (the one sanctioned way to fetch) and unpacked with
//! `dpkg-deb -x` into the cache, or a path into an unpacked package tree.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::apt_index;
use crate::error::GuestError;

/// A kernel ready to boot: its image and its modules directory.
#[derive(Debug, Clone, PartialEq)]
pub struct Kernel {
    /// The bzImage (`…/boot/vmlinuz-REL`).
    pub vmlinuz: PathBuf,
    /// `…/lib/modules/REL`.
    pub modules: PathBuf,
    /// The kernel release, REL (what `uname -r` says in the guest).
    pub release: String,
    /// What was booted: the package name (a pattern's newest match) or the path.
    pub source: String,
}

/// The stackbench cache directory: `$STACKBENCH_CACHE`, else
/// `$XDG_CACHE_HOME/stackbench`, else `~/.cache/stackbench`.
pub fn cache_dir() -> PathBuf {
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(dir) = var("STACKBENCH_CACHE") {
        return PathBuf::from(dir);
    }
    if let Some(dir) = var("XDG_CACHE_HOME") {
        return PathBuf::from(dir).join("stackbench");
    }
    let home = var("HOME").unwrap_or_else(|| "/tmp".into());
    PathBuf::from(home).join(".cache/stackbench")
}

/// Resolves `spec`: a path (it contains a `/`) to a vmlinuz or to an
/// unpacked package tree, or a Debian package name fetched into the cache.
pub fn resolve_kernel(spec: &str) -> Result<Kernel, GuestError> {
    if spec.contains('/') {
        return kernel_at_path(spec);
    }
    if apt_index::is_pattern(spec) {
        return resolve_kernel(&apt_index::newest_matching(spec)?);
    }
    check_package_name(spec)?;
    let dir = cache_dir().join("kernels").join(spec);
    let named = |k: Kernel| Kernel {
        source: spec.to_string(),
        ..k
    };
    if let Ok(kernel) = kernel_in_tree(&dir) {
        return Ok(named(kernel));
    }
    fetch_package(spec, &dir)?;
    kernel_in_tree(&dir)
        .map(named)
        .map_err(|detail| GuestError::KernelPackage {
            package: spec.to_string(),
            detail: format!("unpacked into {} but {detail}", dir.display()),
        })
}

fn check_package_name(name: &str) -> Result<(), GuestError> {
    let ok = !name.is_empty()
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "+-.".contains(c));
    if ok {
        Ok(())
    } else {
        Err(GuestError::KernelPackage {
            package: name.to_string(),
            detail: "not a Debian package name (lower-case letters, digits, + - .)".into(),
        })
    }
}

/// A path spec: `…/boot/vmlinuz-REL` with `…/lib/modules/REL` (or
/// `…/usr/lib/modules/REL`), or the tree `…` itself.
fn kernel_at_path(spec: &str) -> Result<Kernel, GuestError> {
    let path = Path::new(spec);
    let err = |detail: String| GuestError::KernelPath {
        path: spec.to_string(),
        detail,
    };
    if path.is_dir() {
        return kernel_in_tree(path).map_err(err).map(|k| Kernel {
            source: spec.to_string(),
            ..k
        });
    }
    if !path.is_file() {
        return Err(err("no such file or directory".into()));
    }
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let release = name
        .strip_prefix("vmlinuz-")
        .ok_or_else(|| err("the file name is not vmlinuz-RELEASE".into()))?;
    let tree = path
        .parent()
        .and_then(Path::parent)
        .ok_or_else(|| err("not inside a boot/ directory".into()))?;
    let modules = modules_dir(tree, release).ok_or_else(|| {
        err(format!(
            "no lib/modules/{release} beside its boot/ directory"
        ))
    })?;
    Ok(Kernel {
        vmlinuz: path.to_path_buf(),
        modules,
        release: release.to_string(),
        source: spec.to_string(),
    })
}

fn modules_dir(tree: &Path, release: &str) -> Option<PathBuf> {
    ["lib/modules", "usr/lib/modules"]
        .iter()
        .map(|m| tree.join(m).join(release))
        .find(|d| d.is_dir())
}

/// The kernel of an unpacked package tree: its one `boot/vmlinuz-*`.
fn kernel_in_tree(tree: &Path) -> Result<Kernel, String> {
    let boot = tree.join("boot");
    let entries = std::fs::read_dir(&boot).map_err(|e| format!("{}: {e}", boot.display()))?;
    let mut images: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("vmlinuz-"))
        })
        .collect();
    images.sort();
    let [vmlinuz] = images.as_slice() else {
        return Err(format!(
            "{} holds {} vmlinuz-* files, want one",
            boot.display(),
            images.len()
        ));
    };
    let name = vmlinuz.file_name().unwrap_or_default().to_string_lossy();
    let release = name.trim_start_matches("vmlinuz-").to_string();
    let modules = modules_dir(tree, &release).ok_or_else(|| format!("no lib/modules/{release}"))?;
    Ok(Kernel {
        vmlinuz: vmlinuz.clone(),
        modules,
        source: tree.display().to_string(),
        release,
    })
}

/// `apt-get download PACKAGE` into a scratch directory beside `dir`, then
/// `dpkg-deb -x` into another, renamed to `dir` when complete (so an
/// interrupted fetch or a concurrent one never leaves a half tree at `dir`).
fn fetch_package(package: &str, dir: &Path) -> Result<(), GuestError> {
    let parent = dir.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent)
        .map_err(|e| GuestError::io(format!("create {}", parent.display()), e))?;
    let scratch = parent.join(format!(".fetch-{package}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&scratch);
    std::fs::create_dir_all(scratch.join("tree"))
        .map_err(|e| GuestError::io(format!("create {}", scratch.display()), e))?;
    let result = download_and_unpack(package, &scratch).and_then(|()| {
        match std::fs::rename(scratch.join("tree"), dir) {
            Ok(()) => Ok(()),
            // Another process unpacked the same package first: use theirs.
            Err(_) if kernel_in_tree(dir).is_ok() => Ok(()),
            Err(e) => Err(GuestError::io(
                format!("move the unpacked kernel to {}", dir.display()),
                e,
            )),
        }
    });
    let _ = std::fs::remove_dir_all(&scratch);
    result
}

fn download_and_unpack(package: &str, scratch: &Path) -> Result<(), GuestError> {
    let pkg_err = |detail: String| GuestError::KernelPackage {
        package: package.to_string(),
        detail,
    };
    let out = Command::new("apt-get")
        .args(["download", "-q", package])
        .current_dir(scratch)
        .output()
        .map_err(|_| GuestError::MissingTool {
            tool: "apt-get",
            package: "apt",
        })?;
    if !out.status.success() {
        let text = String::from_utf8_lossy(&out.stderr);
        let line = text
            .lines()
            .rfind(|l| l.starts_with("E:"))
            .unwrap_or("apt-get download failed");
        return Err(pkg_err(format!("apt-get download: {}", line.trim())));
    }
    let deb = std::fs::read_dir(scratch)
        .map_err(|e| GuestError::io(format!("read {}", scratch.display()), e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|x| x == "deb"))
        .ok_or_else(|| pkg_err("apt-get download wrote no .deb file".into()))?;
    let out = Command::new("dpkg-deb")
        .arg("-x")
        .arg(&deb)
        .arg(scratch.join("tree"))
        .output()
        .map_err(|_| GuestError::MissingTool {
            tool: "dpkg-deb",
            package: "dpkg",
        })?;
    if !out.status.success() {
        let text = String::from_utf8_lossy(&out.stderr);
        return Err(pkg_err(format!("dpkg-deb -x: {}", text.trim())));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_package_names_are_refused_without_fetching() {
        for bad in ["", "Linux-Image", "linux image", "-x", "a;b"] {
            let err = resolve_kernel(bad).unwrap_err().to_string();
            assert!(err.contains("apt-cache search linux-image"), "{err}");
            assert!(!err.contains('\n'));
        }
    }

    #[test]
    fn missing_paths_name_the_path_and_the_fix() {
        let err = resolve_kernel("/nonexistent/boot/vmlinuz-1")
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("kernel '/nonexistent/boot/vmlinuz-1': no such file"),
            "{err}"
        );
        assert!(err.contains("lib/modules/REL"));
    }

    #[test]
    fn a_tree_or_its_vmlinuz_resolves() {
        let tmp = tempfile::tempdir().unwrap();
        let rel = "6.1.0-test";
        std::fs::create_dir_all(tmp.path().join("boot")).unwrap();
        std::fs::write(tmp.path().join(format!("boot/vmlinuz-{rel}")), b"x").unwrap();
        let vmlinuz = tmp.path().join(format!("boot/vmlinuz-{rel}"));
        let err = resolve_kernel(vmlinuz.to_str().unwrap())
            .unwrap_err()
            .to_string();
        assert!(err.contains("no lib/modules/6.1.0-test"), "{err}");
        std::fs::create_dir_all(tmp.path().join(format!("usr/lib/modules/{rel}"))).unwrap();
        let k = resolve_kernel(vmlinuz.to_str().unwrap()).unwrap();
        assert_eq!(k.release, rel);
        assert!(k.modules.ends_with(format!("usr/lib/modules/{rel}")));
        let from_tree = resolve_kernel(&format!("{}/", tmp.path().display())).unwrap();
        assert_eq!(from_tree.release, rel);
    }
}
