//! Why a kernel feature that lives in a module is missing: the module is
//! absent from this kernel's tree, present but not loaded (the automatic
//! `request_module` or a `modprobe` failed), built in, or loaded. A "this
//! kernel has no kernel TLS" error is only useful when it says which: "build
//! a kernel with CONFIG_TLS" and "load tls.ko.xz, which is right there" are
//! different fixes.

use std::path::{Path, PathBuf};

/// What this system says about kernel module `name`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModuleState {
    /// Listed under /sys/module (loaded, or built in with parameters).
    Loaded,
    /// Listed in modules.builtin: part of the kernel image.
    BuiltIn,
    /// A module file exists (any compression) but the module is not loaded.
    NotLoaded { file: PathBuf },
    /// The release's module tree exists and holds no such module.
    Absent { tree: PathBuf },
    /// There is no module tree for the running release at all.
    NoTree { tree: PathBuf },
}

impl ModuleState {
    /// One clause for an error message, naming the module, the file or tree
    /// looked at, and the fix.
    pub fn explain(&self, name: &str, config: &str) -> String {
        match self {
            ModuleState::Loaded => {
                format!("module {name} is loaded, so the failure is not its absence")
            }
            ModuleState::BuiltIn => {
                format!("{name} is built into this kernel, so the failure is not its absence")
            }
            ModuleState::NotLoaded { file } => format!(
                "module {name} is present ({}) but did not load: `modprobe {name}` and \
                 `dmesg` say why",
                file.display()
            ),
            ModuleState::Absent { tree } => format!(
                "no {name} module under {} and not built in: this kernel lacks {config}",
                tree.display()
            ),
            ModuleState::NoTree { tree } => format!(
                "no module tree {} for the running kernel, so {name} cannot be loaded \
                 (a kernel built with {config}=y, or its modules installed)",
                tree.display()
            ),
        }
    }
}

/// The state of module `name` on the running kernel.
pub fn module_state(name: &str) -> ModuleState {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let tree = Path::new("/lib/modules").join(release.trim());
    state_in(Path::new("/sys/module"), &tree, name)
}

/// `module_state` against explicit /sys/module and module-tree paths.
fn state_in(sys_module: &Path, tree: &Path, name: &str) -> ModuleState {
    let name = canonical(name);
    let builtin = std::fs::read_to_string(tree.join("modules.builtin")).unwrap_or_default();
    if builtin.lines().any(|l| module_of(l) == name) {
        return ModuleState::BuiltIn;
    }
    if sys_module.join(&name).exists() {
        return ModuleState::Loaded;
    }
    if !tree.is_dir() {
        return ModuleState::NoTree {
            tree: tree.to_path_buf(),
        };
    }
    match find_file(&tree.join("kernel"), &name) {
        Some(file) => ModuleState::NotLoaded { file },
        None => ModuleState::Absent {
            tree: tree.to_path_buf(),
        },
    }
}

/// Module names treat `-` and `_` alike.
fn canonical(name: &str) -> String {
    name.replace('-', "_")
}

/// The module name of a path in modules.builtin or of a module file
/// (`kernel/net/tls/tls.ko.xz` → `tls`).
fn module_of(path: &str) -> String {
    let base = path.rsplit('/').next().unwrap_or(path);
    canonical(base.split(".ko").next().unwrap_or(base))
}

fn find_file(dir: &Path, name: &str) -> Option<PathBuf> {
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        let path = entry.path();
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            if let Some(found) = find_file(&path, name) {
                return Some(found);
            }
        } else {
            let file = entry.file_name().to_string_lossy().into_owned();
            if file.contains(".ko") && module_of(&file) == name {
                return Some(path);
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let net = dir.path().join("modules/kernel/net/tls");
        std::fs::create_dir_all(&net).unwrap();
        std::fs::write(net.join("tls.ko.xz"), b"").unwrap();
        std::fs::write(
            dir.path().join("modules/modules.builtin"),
            "kernel/net/ipv4/tcp_cubic.ko\n",
        )
        .unwrap();
        std::fs::create_dir_all(dir.path().join("sys/af_key")).unwrap();
        dir
    }

    #[test]
    fn each_state_is_told_apart() {
        let dir = tree();
        let (sys, modules) = (dir.path().join("sys"), dir.path().join("modules"));
        let found = state_in(&sys, &modules, "tls");
        assert_eq!(
            found,
            ModuleState::NotLoaded {
                file: modules.join("kernel/net/tls/tls.ko.xz")
            }
        );
        assert!(found.explain("tls", "CONFIG_TLS").contains("tls.ko.xz"));
        assert_eq!(state_in(&sys, &modules, "tcp-cubic"), ModuleState::BuiltIn);
        assert_eq!(state_in(&sys, &modules, "af-key"), ModuleState::Loaded);
        let absent = state_in(&sys, &modules, "smc");
        assert!(matches!(absent, ModuleState::Absent { .. }));
        assert!(absent
            .explain("smc", "CONFIG_SMC")
            .contains("lacks CONFIG_SMC"));
        let none = state_in(&sys, &dir.path().join("nothing"), "smc");
        assert!(matches!(none, ModuleState::NoTree { .. }));
    }
}
