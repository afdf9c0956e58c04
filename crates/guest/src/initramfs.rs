//! The guest's root file system, one uncompressed cpio archive: `/init` is
//! this stackbench binary (PID 1, see `init.rs`), with its shared libraries
//! and ELF interpreter at their host paths; busybox with the applet links
//! the kernel and the labs call (`/sbin/modprobe` makes `request_module`
//! autoload modules); the network-relevant modules of the kernel with a
//! modules.dep and modules.alias generated here (see `modinfo.rs`); the
//! job's files at their guest paths; the host's `nft` with its libraries
//! when it has one (see `HOST_TOOLS`); and `/sb/job.json`.
//! After /work/kern/guest-sh.sh (the hand-built prototype) and virtme-ng's
//! idea of booting the host's own binaries from a generated initramfs.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufWriter, Read};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::cpio::CpioWriter;
use crate::error::GuestError;
use crate::frame::{JobFile, JOB_PATH};
use crate::kernel::Kernel;
use crate::modinfo;
use crate::module_file;
use crate::Job;

/// Module directories (under lib/modules/REL/kernel) copied into the guest:
/// networking, crypto (kTLS, ESP), arch crypto and the libraries they use.
/// Everything else (file systems, storage, GPUs) is skipped to keep the
/// archive small.
const MODULE_DIRS: [&str; 7] = [
    "net",
    "crypto",
    "arch",
    "lib",
    "drivers/net",
    "drivers/infiniband",
    "drivers/virtio",
];

/// Busybox applets linked into the guest (`/bin/busybox APPLET` reaches the rest).
const APPLETS: [&str; 16] = [
    "bin/sh",
    "bin/cat",
    "bin/ls",
    "bin/mount",
    "bin/ps",
    "bin/dmesg",
    "bin/ip",
    "bin/ping",
    "bin/tc",
    "bin/uname",
    "sbin/modprobe",
    "sbin/insmod",
    "sbin/rmmod",
    "sbin/lsmod",
    "sbin/depmod",
    "sbin/sysctl",
];

/// Host commands the labs run, copied into the guest with their shared
/// libraries when this host has them (`nft`: the host policy and the
/// routing fast path); a guest without one refuses those features in the
/// same line as a host without it would.
const HOST_TOOLS: [(&str, &str); 1] = [("nft", "sbin/nft")];

/// Guest paths a job's file may not replace.
const RESERVED: [&str; 11] = [
    "/init", "/sb", "/bin", "/sbin", "/lib", "/lib64", "/usr/lib", "/proc", "/sys", "/dev", "/tmp",
];

/// One entry of the archive.
enum Entry {
    Dir,
    HostFile(PathBuf),
    Bytes(Vec<u8>, u32),
    Link(String),
}

/// The archive's entries by guest path (no leading `/`); a BTreeMap writes
/// every directory before its contents.
#[derive(Default)]
struct Tree(BTreeMap<String, Entry>);

impl Tree {
    fn add(&mut self, guest: &str, entry: Entry) {
        let guest = guest.trim_start_matches('/').to_string();
        let mut parent = Path::new(&guest).parent();
        while let Some(p) = parent.filter(|p| !p.as_os_str().is_empty()) {
            self.0
                .entry(p.to_string_lossy().into_owned())
                .or_insert(Entry::Dir);
            parent = p.parent();
        }
        self.0.insert(guest, entry);
    }
}

/// Writes the initramfs for `kernel` and `job` into `dir`; returns its path.
pub fn build(kernel: &Kernel, job: &Job, dir: &Path) -> Result<PathBuf, GuestError> {
    let exe = std::env::current_exe()
        .map_err(|e| GuestError::io("find the running stackbench binary", e))?;
    // Replaced on disk while running (a rebuild or an upgrade during a
    // study): the running image is still readable through /proc/PID/exe
    // (the PID, not `self`: ldd and objcopy open the path in their own
    // processes).
    let exe = if exe.exists() {
        exe
    } else {
        PathBuf::from(format!("/proc/{}/exe", std::process::id()))
    };
    let busybox = which("busybox").ok_or(GuestError::MissingTool {
        tool: "busybox",
        package: "busybox-static",
    })?;
    let mut tree = Tree::default();
    for d in ["proc", "sys", "dev", "tmp", "root", "etc", "sb"] {
        tree.add(d, Entry::Dir);
    }
    let tools: Vec<(PathBuf, &str)> = HOST_TOOLS
        .iter()
        .filter_map(|(name, guest)| host_tool(name).map(|p| (p, *guest)))
        .collect();
    let mut libraries = shared_libraries(&exe)?;
    libraries.extend(shared_libraries(&busybox)?);
    for (tool, guest) in &tools {
        libraries.extend(shared_libraries(tool)?);
        tree.add(guest, Entry::HostFile(tool.clone()));
    }
    for lib in libraries {
        tree.add(&lib.to_string_lossy(), Entry::HostFile(lib.clone()));
    }
    tree.add("init", Entry::HostFile(slim_copy(&exe, dir)));
    tree.add("bin/busybox", Entry::HostFile(busybox));
    for applet in APPLETS {
        tree.add(applet, Entry::Link("/bin/busybox".into()));
    }
    add_modules(&mut tree, kernel)?;
    for (host, guest) in &job.files {
        check_guest_path(guest)?;
        File::open(host).map_err(|source| GuestError::JobFile {
            host: host.clone(),
            source,
        })?;
        tree.add(guest, Entry::HostFile(host.clone()));
    }
    let job_file = JobFile {
        args: job.args.clone(),
        timeout_s: job.timeout.as_secs_f64(),
    };
    let json = serde_json::to_vec(&job_file).expect("a job serializes");
    tree.add(JOB_PATH, Entry::Bytes(json, 0o644));
    let path = dir.join("initramfs.cpio");
    write_archive(&tree, &path)?;
    Ok(path)
}

fn check_guest_path(guest: &str) -> Result<(), GuestError> {
    let reserved = RESERVED
        .iter()
        .any(|r| guest == *r || guest.starts_with(&format!("{r}/")));
    let bad =
        !guest.starts_with('/') || guest.ends_with('/') || guest.split('/').any(|c| c == "..");
    if reserved || bad {
        return Err(GuestError::GuestPath(guest.to_string()));
    }
    Ok(())
}

fn write_archive(tree: &Tree, path: &Path) -> Result<(), GuestError> {
    let io_err = |e| GuestError::io(format!("write {}", path.display()), e);
    let file = File::create(path).map_err(io_err)?;
    let mut w = CpioWriter::new(BufWriter::with_capacity(1 << 20, file));
    for (name, entry) in &tree.0 {
        match entry {
            Entry::Dir => w.dir(name, 0o755).map_err(io_err)?,
            Entry::Link(target) => w.symlink(name, target).map_err(io_err)?,
            Entry::Bytes(bytes, perm) => w
                .file(name, *perm, bytes.len() as u64, &mut bytes.as_slice())
                .map_err(io_err)?,
            Entry::HostFile(host) => {
                let read_err =
                    |e| GuestError::io(format!("read {} for the guest", host.display()), e);
                let mut f = File::open(host).map_err(read_err)?;
                let meta = f.metadata().map_err(read_err)?;
                let perm = meta.permissions().mode() & 0o7777;
                w.file(name, perm, meta.len(), &mut f as &mut dyn Read)
                    .map_err(read_err)?;
            }
        }
    }
    w.finish().map_err(io_err)?;
    Ok(())
}

/// The networking modules of `kernel` at lib/modules/REL in the guest, with
/// the package's modules.* files and our modules.dep and modules.alias.
fn add_modules(tree: &mut Tree, kernel: &Kernel) -> Result<(), GuestError> {
    let guest_root = format!("lib/modules/{}", kernel.release);
    let read_err = |e| GuestError::io(format!("read {}", kernel.modules.display()), e);
    for entry in std::fs::read_dir(&kernel.modules).map_err(read_err)? {
        let path = entry.map_err(read_err)?.path();
        let name = path
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        if name.starts_with("modules.") && path.is_file() {
            tree.add(&format!("{guest_root}/{name}"), Entry::HostFile(path));
        }
    }
    let mut ko = Vec::new();
    for d in MODULE_DIRS {
        collect_modules(&kernel.modules, &format!("kernel/{d}"), &mut ko).map_err(read_err)?;
    }
    ko.sort();
    // Plain modules are copied as they are; compressed ones (.ko.xz from
    // Debian's 6.12 kernels on) enter as plain .ko, decompressed here (see
    // `module_file`), so that modules.dep names what the guest holds.
    let mut infos = Vec::with_capacity(ko.len());
    for rel in &ko {
        let host = kernel.modules.join(rel);
        let name = rel.rsplit('/').next().unwrap_or(rel);
        let guest_rel = module_file::plain_path(rel).to_string();
        let bytes = module_file::read_plain(&host).map_err(read_err)?;
        infos.push((
            guest_rel.clone(),
            modinfo::modinfo_of_elf(&bytes).unwrap_or_default(),
        ));
        let entry = if module_file::Compression::of(name) == Some(module_file::Compression::None) {
            Entry::HostFile(host)
        } else {
            Entry::Bytes(bytes, 0o644)
        };
        tree.add(&format!("{guest_root}/{guest_rel}"), entry);
    }
    let (dep, alias) = modinfo::dep_and_alias_files(&infos);
    tree.add(
        &format!("{guest_root}/modules.dep"),
        Entry::Bytes(dep.into_bytes(), 0o644),
    );
    tree.add(
        &format!("{guest_root}/modules.alias"),
        Entry::Bytes(alias.into_bytes(), 0o644),
    );
    Ok(())
}

/// Appends the module files under `root/rel` (paths relative to `root`).
fn collect_modules(root: &Path, rel: &str, out: &mut Vec<String>) -> std::io::Result<()> {
    let dir = root.join(rel);
    if !dir.is_dir() {
        return Ok(());
    }
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let child = format!("{rel}/{name}");
        if entry.file_type()?.is_dir() {
            collect_modules(root, &child, out)?;
        } else if module_file::Compression::of(&name).is_some() {
            out.push(child);
        }
    }
    Ok(())
}

/// The shared libraries and ELF interpreter `binary` loads, as `ldd` resolves
/// them (none for a static binary).
fn shared_libraries(binary: &Path) -> Result<Vec<PathBuf>, GuestError> {
    let out = Command::new("ldd")
        .arg(binary)
        .output()
        .map_err(|_| GuestError::MissingTool {
            tool: "ldd",
            package: "libc-bin",
        })?;
    let text = String::from_utf8_lossy(&out.stdout);
    let mut libs = Vec::new();
    for line in text.lines() {
        if line.contains("not found") {
            let detail = format!("{}: ldd: {}", binary.display(), line.trim());
            return Err(GuestError::io(
                "find the shared libraries for the guest",
                std::io::Error::other(detail),
            ));
        }
        let resolved = line
            .split("=>")
            .nth(1)
            .unwrap_or(line)
            .split_whitespace()
            .next();
        if let Some(path) = resolved.filter(|p| p.starts_with('/')) {
            libs.push(PathBuf::from(path));
        }
    }
    Ok(libs)
}

/// A copy of `exe` without debug sections in `dir` when `objcopy` is there
/// (a debug build is some 100 MB, a tenth of that without), else `exe`.
fn slim_copy(exe: &Path, dir: &Path) -> PathBuf {
    let slim = dir.join("stackbench");
    let stripped = Command::new("objcopy")
        .arg("--strip-debug")
        .arg(exe)
        .arg(&slim)
        .output()
        .is_ok_and(|o| o.status.success());
    if stripped {
        slim
    } else {
        exe.to_path_buf()
    }
}

/// The first executable `name` on PATH.
pub fn which(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into());
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| {
            p.metadata()
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// Command `name` of this host: on PATH, or in /usr/sbin or /sbin (which a
/// user's PATH may leave out).
fn host_tool(name: &str) -> Option<PathBuf> {
    which(name).or_else(|| {
        ["/usr/sbin", "/sbin"]
            .iter()
            .map(|d| Path::new(d).join(name))
            .find(|p| p.is_file())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guest_paths_must_be_absolute_and_not_reserved() {
        for ok in ["/work/lab.toml", "/etc/x.conf", "/usr/share/a"] {
            assert!(check_guest_path(ok).is_ok(), "{ok}");
        }
        for bad in [
            "work/a",
            "/sb/job.json",
            "/init",
            "/bin/sh",
            "/lib/x",
            "/a/../init",
            "/work/",
        ] {
            let err = check_guest_path(bad).unwrap_err().to_string();
            assert!(err.contains("must be absolute"), "{err}");
        }
    }

    #[test]
    fn parent_directories_come_first() {
        let mut tree = Tree::default();
        tree.add("/a/b/c", Entry::Dir);
        tree.add("a-b", Entry::Dir);
        let names: Vec<&String> = tree.0.keys().collect();
        assert_eq!(names, ["a", "a-b", "a/b", "a/b/c"]);
    }

    #[test]
    fn ldd_lists_the_interpreter_and_libc() {
        let exe = std::env::current_exe().unwrap();
        let libs = shared_libraries(&exe).unwrap();
        assert!(
            libs.iter()
                .any(|l| l.to_string_lossy().contains("ld-linux")),
            "{libs:?}"
        );
        assert!(
            libs.iter().any(|l| l.to_string_lossy().contains("libc.so")),
            "{libs:?}"
        );
    }
}
