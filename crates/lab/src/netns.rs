//! Named network namespaces, made the way `ip netns add` makes them: a file
//! under `/run/netns/` with the namespace bind-mounted on it, so
//! `ip netns exec sb-demo-client …` works for a person debugging a lab.
//! [`run_in`] runs code in a namespace on a thread of its own (setns(2)
//! changes only the calling thread), so the caller's namespace never changes.

use std::ffi::CString;
use std::fs;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::error::{LabError, Result};

/// Where named namespaces live (iproute2's `NETNS_RUN_DIR`).
pub const RUN_DIR: &str = "/run/netns";
/// `statfs` magic of the nsfs filesystem (linux/magic.h `NSFS_MAGIC`).
const NSFS_MAGIC: i64 = 0x6e73_6673;

/// Serialises the one-time set-up of [`RUN_DIR`] among this process's threads.
static RUN_DIR_SETUP: Mutex<()> = Mutex::new(());

/// The file of namespace `name`.
pub fn path(name: &str) -> PathBuf {
    Path::new(RUN_DIR).join(name)
}

fn cstr(path: &Path) -> CString {
    CString::new(path.as_os_str().as_encoded_bytes()).expect("lab paths have no NUL")
}

fn check(rc: libc::c_int) -> io::Result<()> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// Names in [`RUN_DIR`] that start with `prefix` (none when it is missing).
pub fn list(prefix: &str) -> Result<Vec<String>> {
    let entries = match fs::read_dir(RUN_DIR) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(LabError::os(format!("list {RUN_DIR}"), e)),
    };
    let mut names: Vec<String> = entries
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.starts_with(prefix))
        .collect();
    names.sort();
    Ok(names)
}

/// Whether `name` is a mounted namespace (not a leftover plain file).
pub fn exists(name: &str) -> bool {
    let Ok(file) = fs::File::open(path(name)) else {
        return false;
    };
    // SAFETY: fstatfs fills a zeroed statfs for a live descriptor.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::fstatfs(file.as_raw_fd(), &mut st) };
    rc == 0 && st.f_type as i64 == NSFS_MAGIC
}

/// Makes [`RUN_DIR`] and turns it into a shared mount, as `ip netns add`
/// does, so namespace mounts propagate to other mount namespaces.
fn prepare_run_dir() -> Result<()> {
    let _guard = RUN_DIR_SETUP.lock().unwrap_or_else(|e| e.into_inner());
    let dir = Path::new(RUN_DIR);
    if let Err(e) = fs::create_dir_all(dir) {
        return Err(LabError::os(format!("create {RUN_DIR}"), e));
    }
    let (dir_c, none) = (cstr(dir), CString::new("none").expect("no NUL"));
    let share = || {
        // SAFETY: mount(2) with valid C strings and no data.
        check(unsafe {
            libc::mount(
                c"".as_ptr(),
                dir_c.as_ptr(),
                none.as_ptr(),
                libc::MS_SHARED | libc::MS_REC,
                std::ptr::null(),
            )
        })
    };
    match share() {
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
            // Not a mount point yet: bind it onto itself, then share it.
            // SAFETY: as above.
            check(unsafe {
                libc::mount(
                    dir_c.as_ptr(),
                    dir_c.as_ptr(),
                    none.as_ptr(),
                    libc::MS_BIND | libc::MS_REC,
                    std::ptr::null(),
                )
            })
            .and_then(|()| share())
            .map_err(|e| LabError::os(format!("make {RUN_DIR} a shared mount"), e))
        }
        other => other.map_err(|e| LabError::os(format!("make {RUN_DIR} a shared mount"), e)),
    }
}

/// Creates namespace `name` unless it exists; `true` when it was created.
/// A plain file left by an interrupted create is reused.
pub fn create(name: &str) -> Result<bool> {
    if exists(name) {
        return Ok(false);
    }
    prepare_run_dir()?;
    let file = path(name);
    let action = || format!("create namespace {name}");
    if let Err(e) = fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o000)
        .open(&file)
    {
        return Err(LabError::os(action(), e));
    }
    let target = cstr(&file);
    let made = std::thread::scope(|s| {
        s.spawn(|| {
            // SAFETY: unshare(2) changes only this thread's namespaces.
            check(unsafe { libc::unshare(libc::CLONE_NEWNET) }).map_err(|e| {
                match e.raw_os_error() {
                    Some(libc::EINVAL) => LabError::KernelFeature {
                        action: action(),
                        feature: "network namespaces".into(),
                        config: "CONFIG_NET_NS".into(),
                    },
                    _ => LabError::os(action(), e),
                }
            })?;
            // SAFETY: bind-mounts this thread's namespace onto the file.
            check(unsafe {
                libc::mount(
                    c"/proc/thread-self/ns/net".as_ptr(),
                    target.as_ptr(),
                    c"none".as_ptr(),
                    libc::MS_BIND,
                    std::ptr::null(),
                )
            })
            .map_err(|e| LabError::os(action(), e))
        })
        .join()
        .unwrap_or_else(|p| std::panic::resume_unwind(p))
    });
    if let Err(e) = made {
        let _ = fs::remove_file(&file);
        return Err(e);
    }
    Ok(true)
}

/// Deletes namespace `name` (its file and mount); a namespace that is gone
/// already is not an error. The kernel frees the namespace, with its veths
/// and qdiscs, once nothing else holds it.
pub fn delete(name: &str) -> Result<()> {
    let file = path(name);
    let target = cstr(&file);
    // SAFETY: umount2(2) on a valid C string.
    if let Err(e) = check(unsafe { libc::umount2(target.as_ptr(), libc::MNT_DETACH) }) {
        if !matches!(e.raw_os_error(), Some(libc::EINVAL) | Some(libc::ENOENT)) {
            return Err(LabError::os(format!("unmount namespace {name}"), e));
        }
    }
    match fs::remove_file(&file) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => {
            Err(LabError::os(format!("delete namespace {name}"), e))
        }
        _ => Ok(()),
    }
}

/// An open handle on namespace `name`.
pub fn open(name: &str) -> Result<OwnedFd> {
    fs::File::open(path(name))
        .map(OwnedFd::from)
        .map_err(|e| LabError::os(format!("open namespace {name}"), e))
}

/// Runs `f` on a thread inside namespace `name` and returns its result.
pub fn run_in<T: Send>(name: &str, f: impl FnOnce() -> Result<T> + Send) -> Result<T> {
    let ns = open(name)?;
    run_in_fd(ns.as_fd(), name, f)
}

/// As [`run_in`], for a namespace already opened.
pub fn run_in_fd<T: Send>(
    ns: BorrowedFd,
    name: &str,
    f: impl FnOnce() -> Result<T> + Send,
) -> Result<T> {
    std::thread::scope(|s| {
        s.spawn(|| {
            enter(ns).map_err(|e| LabError::os(format!("enter namespace {name}"), e))?;
            f()
        })
        .join()
        .unwrap_or_else(|p| std::panic::resume_unwind(p))
    })
}

/// Moves the calling thread into the namespace `ns` (for threads the caller
/// owns, such as a benchmark's driver threads).
pub fn enter(ns: BorrowedFd) -> io::Result<()> {
    // SAFETY: setns(2) on a live namespace descriptor; affects this thread only.
    check(unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) })
}
