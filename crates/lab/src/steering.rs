//! Inbound steering on a lab path's interfaces (the Linux counterpart of
//! z/OS Inbound Workload Queueing and zIIP-assisted HiperSockets: choosing
//! the processors that do receive processing): RPS CPU masks and RFS flow
//! tables per receive queue, written to sysfs inside each host's namespace,
//! read back for the record, and the per-CPU NET_RX softirq counts that show
//! where receive processing ran.
//!
//! # Design note
//!
//! - **Per interface, not per class.** RPS picks a CPU from the queue's mask
//!   by the flow hash; the kernel offers no way to send one flow class to one
//!   CPU set and another class to another through the same queue (RFS
//!   follows the CPU the receiving thread last ran on, which pinning
//!   decides). So the setting steers all receive processing of the path's
//!   interfaces to the chosen CPUs; with RFS (`rps_flow_cnt`), each flow goes
//!   where its socket's reader runs.
//! - **Namespaced and global state.** `queues/rx-N/rps_cpus` and
//!   `rps_flow_cnt` belong to the device, so to the host's namespace: `lab
//!   down` deletes them with it. `net.core.rps_sock_flow_entries` (the
//!   global RFS table RFS needs besides the per-queue counts) and
//!   `net.core.flow_limit_cpu_bitmap` live only in the initial namespace's
//!   sysctl table and are machine-wide: stackbench does not change them
//!   (changing them would change every other workload on the machine and
//!   need a restore that survives a crash). RFS is refused in one line when
//!   `rps_sock_flow_entries` is 0; the flow limit only matters when a CPU's
//!   backlog overflows (`netdev_max_backlog`), which a lab run does not aim
//!   for, so it is left out.
//! - **Sysfs of another namespace.** `/sys/class/net` shows the devices of
//!   the namespace sysfs was mounted in, so the writes run on a thread that
//!   enters the host's namespace, unshares its mount namespace (made a slave
//!   so nothing propagates back) and mounts a fresh sysfs over `/sys`, as
//!   iproute2's `ip netns exec` does (iproute2, lib/namespace.c). The thread
//!   and its mount namespace end with the call.
//! - **NET_RX per CPU** is read from `/proc/softirqs`, which counts for the
//!   whole machine (softirqs are not namespaced): before and after the window,
//!   so the difference is the window's receive processing, a lab's and
//!   everything else's.

use std::ffi::CString;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use stackbench_model::units::{format_cpu_list, parse_cpu_list};

use crate::error::{LabError, Result};
use crate::netns;

/// The steering a run asks for on every interface of its path.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Steering {
    /// CPUs receive processing is steered to (RPS); empty: RPS off.
    pub cpus: Vec<usize>,
    /// RFS flow-table entries per receive queue; 0: RFS off.
    pub flow_cnt: u32,
}

/// One receive queue's steering as sysfs reads it back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RxQueue {
    /// Queue directory, `rx-0`.
    pub queue: String,
    /// `rps_cpus` as the kernel prints it (a hex mask, comma-grouped).
    pub mask: String,
    /// The mask's CPUs.
    pub cpus: Vec<usize>,
    /// `rps_flow_cnt` (the kernel rounds up to a power of two).
    pub flow_cnt: u32,
}

/// Where the kernel keeps the global RFS table size.
const SOCK_FLOW_ENTRIES: &str = "/proc/sys/net/core/rps_sock_flow_entries";

/// Whether this kernel and machine can give `steering`, checked before any
/// lab state is made, as one line naming the fix: a CPU that is not online,
/// a kernel without RPS (no `rps_cpus` file on loopback: CONFIG_RPS off),
/// RFS without the global flow table.
pub fn check(steering: &Steering) -> std::result::Result<(), String> {
    let online = fs::read_to_string("/sys/devices/system/cpu/online")
        .ok()
        .and_then(|t| parse_cpu_list(t.trim()).ok());
    if let Some(online) = online {
        let missing: Vec<usize> = steering
            .cpus
            .iter()
            .copied()
            .filter(|c| !online.contains(c))
            .collect();
        if !missing.is_empty() {
            return Err(format!(
                "link_rps_cpus {}: CPU {} is not online here (this machine has {}): choose CPUs from {}",
                format_cpu_list(&steering.cpus),
                format_cpu_list(&missing),
                format_cpu_list(&online),
                format_cpu_list(&online)
            ));
        }
    }
    if !Path::new("/sys/class/net/lo/queues/rx-0/rps_cpus").exists() {
        return Err("link_rps_cpus/link_rps_flow_cnt: this kernel has no receive packet steering (no queues/rx-0/rps_cpus in sysfs: CONFIG_RPS is off): run on a kernel built with it, or drop the setting".into());
    }
    if steering.flow_cnt > 0 {
        let entries = fs::read_to_string(SOCK_FLOW_ENTRIES)
            .ok()
            .and_then(|t| t.trim().parse::<u64>().ok())
            .unwrap_or(0);
        if entries == 0 {
            return Err(format!(
                "link_rps_flow_cnt {}: RFS needs the machine-wide flow table, and net.core.rps_sock_flow_entries is 0 (global, stackbench leaves it alone): run sysctl -w net.core.rps_sock_flow_entries=32768, or drop link_rps_flow_cnt",
                steering.flow_cnt
            ));
        }
    }
    Ok(())
}

/// The hex mask sysfs takes for `cpus` (`""` → `0`): 32-bit groups,
/// most significant first, comma-separated, as the kernel prints bitmaps.
pub fn mask(cpus: &[usize]) -> String {
    let groups = cpus.iter().max().map_or(1, |m| m / 32 + 1);
    let mut words = vec![0u32; groups];
    for &c in cpus {
        words[c / 32] |= 1 << (c % 32);
    }
    let mut parts: Vec<String> = words.iter().rev().map(|w| format!("{w:08x}")).collect();
    parts[0] = format!("{:x}", words[groups - 1]);
    parts.join(",")
}

/// The CPUs of a mask as sysfs prints it (`00000000,00000002` → `[1]`).
pub fn mask_cpus(text: &str) -> Vec<usize> {
    let mut cpus = Vec::new();
    for (i, word) in text.trim().split(',').rev().enumerate() {
        let w = u32::from_str_radix(word, 16).unwrap_or(0);
        cpus.extend((0..32).filter(|b| w & (1 << b) != 0).map(|b| i * 32 + b));
    }
    cpus
}

/// Writes `steering` to every receive queue of `ifname` in namespace `ns`
/// (an empty steering turns RPS and RFS off, so a step without it after a
/// step with it starts clean).
pub fn apply(ns: &str, ifname: &str, steering: &Steering) -> Result<()> {
    let mask = mask(&steering.cpus);
    in_sysfs(ns, |sys| {
        for q in rx_queues(sys, ifname)? {
            write(&q.join("rps_cpus"), &mask)?;
            write(&q.join("rps_flow_cnt"), &steering.flow_cnt.to_string())?;
        }
        Ok(())
    })
}

/// Every receive queue of `ifname` in namespace `ns`, as the kernel holds it.
pub fn read(ns: &str, ifname: &str) -> Result<Vec<RxQueue>> {
    in_sysfs(ns, |sys| {
        rx_queues(sys, ifname)?
            .into_iter()
            .map(|q| {
                let get = |f: &str| {
                    fs::read_to_string(q.join(f))
                        .map(|t| t.trim().to_string())
                        .map_err(|e| LabError::os(format!("read {}", q.join(f).display()), e))
                };
                let mask = get("rps_cpus")?;
                Ok(RxQueue {
                    queue: q.file_name().unwrap_or_default().to_string_lossy().into(),
                    cpus: mask_cpus(&mask),
                    flow_cnt: get("rps_flow_cnt")?.parse().unwrap_or(0),
                    mask,
                })
            })
            .collect()
    })
}

/// NET_RX softirqs handled so far by each CPU (index = CPU), from
/// `/proc/softirqs`; empty when it cannot be read.
pub fn net_rx() -> Vec<u64> {
    fs::read_to_string("/proc/softirqs")
        .map(|t| parse_net_rx(&t))
        .unwrap_or_default()
}

/// The NET_RX row of a `/proc/softirqs` text (columns `CPU0 CPU1 …`).
fn parse_net_rx(text: &str) -> Vec<u64> {
    text.lines()
        .find_map(|l| l.trim_start().strip_prefix("NET_RX:"))
        .map(|row| {
            row.split_whitespace()
                .map(|n| n.parse().unwrap_or(0))
                .collect()
        })
        .unwrap_or_default()
}

/// The `queues/rx-*` directories of `ifname` under sysfs root `sys`, sorted.
fn rx_queues(sys: &Path, ifname: &str) -> Result<Vec<PathBuf>> {
    let dir = sys.join("class/net").join(ifname).join("queues");
    let entries =
        fs::read_dir(&dir).map_err(|e| LabError::os(format!("read {}", dir.display()), e))?;
    let mut queues: Vec<PathBuf> = entries
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with("rx-"))
        .map(|e| e.path())
        .collect();
    queues.sort();
    Ok(queues)
}

fn write(file: &Path, value: &str) -> Result<()> {
    fs::write(file, value)
        .map_err(|e| LabError::os(format!("write {value} to {}", file.display()), e))
}

/// Runs `f` with the sysfs of namespace `ns` mounted at `/sys`, on a thread
/// of its own whose mount namespace is private (see the design note).
fn in_sysfs<T: Send>(ns: &str, f: impl FnOnce(&Path) -> Result<T> + Send) -> Result<T> {
    netns::run_in(ns, || {
        let os = |action: &str| {
            LabError::os(
                format!("{action} for namespace {ns}"),
                io::Error::last_os_error(),
            )
        };
        // SAFETY: unshare(2) of this thread's fs/mount state; the thread is
        // ours and ends when `run_in` returns.
        if unsafe { libc::unshare(libc::CLONE_NEWNS) } != 0 {
            return Err(os("unshare the mount namespace"));
        }
        let (root, sys, kind) = (c("/"), c("/sys"), c("sysfs"));
        // SAFETY: mount(2) with valid C strings; changes only this thread's
        // private mount namespace.
        if unsafe {
            libc::mount(
                std::ptr::null(),
                root.as_ptr(),
                std::ptr::null(),
                libc::MS_SLAVE | libc::MS_REC,
                std::ptr::null(),
            )
        } != 0
        {
            return Err(os("make / a slave mount"));
        }
        // SAFETY: as above; sysfs takes the mounting thread's network namespace.
        if unsafe {
            libc::mount(
                kind.as_ptr(),
                sys.as_ptr(),
                kind.as_ptr(),
                0,
                std::ptr::null(),
            )
        } != 0
        {
            return Err(os("mount sysfs"));
        }
        f(Path::new("/sys"))
    })
}

fn c(s: &str) -> CString {
    CString::new(s).expect("no NUL in a constant path")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_round_trip_as_the_kernel_prints_them() {
        assert_eq!(mask(&[]), "0");
        assert_eq!(mask(&[1]), "2");
        assert_eq!(mask(&[0, 1, 3]), "b");
        assert_eq!(mask(&[33]), "2,00000000");
        assert_eq!(mask_cpus("00000000,00000002"), vec![1]);
        assert_eq!(mask_cpus("2,00000001"), vec![0, 33]);
        assert_eq!(mask_cpus("0"), Vec::<usize>::new());
    }

    #[test]
    fn net_rx_row_is_read_per_cpu() {
        let text = "                    CPU0       CPU1\n          HI:          0          1\n      NET_TX:         3          4\n      NET_RX:       100        250\n";
        assert_eq!(parse_net_rx(text), vec![100, 250]);
        assert_eq!(parse_net_rx("nothing"), Vec::<u64>::new());
    }

    #[test]
    fn a_cpu_the_machine_lacks_is_refused_in_one_line() {
        let e = check(&Steering {
            cpus: vec![1000],
            flow_cnt: 0,
        })
        .unwrap_err();
        assert!(e.contains("CPU 1000 is not online"), "{e}");
        assert!(!e.contains('\n'));
    }
}
