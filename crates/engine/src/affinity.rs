//! CPU sets: parsing `0-3,5` lists and pinning the calling thread (threads
//! spawned afterwards inherit the mask, so pinning the main thread first pins
//! the whole side). RR rates on VMs depend more on where the two ends run than
//! on code, so the effective sets are always reported and stored.

use std::io;

use stackbench_model::units;

pub use stackbench_model::units::format_cpu_list;

// The model's CPU-list bound is the kernel's cpu_set_t size.
const _: () = assert!(units::MAX_CPUS == libc::CPU_SETSIZE as usize);

/// Parses a CPU list such as `0`, `0-3`, `0,2,4-5` (the one grammar of
/// [`stackbench_model::units::parse_cpu_list`]). Returns a sorted, deduplicated list.
pub fn parse_cpu_list(text: &str) -> Result<Vec<usize>, String> {
    units::parse_cpu_list(text).map_err(|e| e.to_string())
}

/// The CPUs the calling thread may run on.
pub fn current_cpus() -> io::Result<Vec<usize>> {
    // SAFETY: cpu_set_t is plain data; sched_getaffinity fills it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok((0..libc::CPU_SETSIZE as usize)
            .filter(|&c| libc::CPU_ISSET(c, &set))
            .collect())
    }
}

/// Pins the calling thread (and every thread it spawns later) to `cpus`.
pub fn pin_current_thread(cpus: &[usize]) -> io::Result<()> {
    // SAFETY: cpu_set_t is plain data; indices are bounded by CPU_SETSIZE.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &c in cpus {
            if c >= libc::CPU_SETSIZE as usize {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("CPU {c} out of range"),
                ));
            }
            libc::CPU_SET(c, &mut set);
        }
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            let err = io::Error::last_os_error();
            return Err(io::Error::new(
                err.kind(),
                format!(
                    "cannot pin to CPUs {}: {err} (are they online and allowed?)",
                    format_cpu_list(cpus)
                ),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_parse_and_format() {
        assert_eq!(parse_cpu_list("0").unwrap(), vec![0]);
        assert_eq!(parse_cpu_list("0-2,5,1").unwrap(), vec![0, 1, 2, 5]);
        assert_eq!(format_cpu_list(&[0, 1, 2, 5, 7, 8]), "0-2,5,7-8");
        assert!(parse_cpu_list("").is_err());
        assert!(parse_cpu_list("3-1").is_err());
        assert!(parse_cpu_list("a").unwrap_err().contains("'a'"));
    }

    #[test]
    fn current_cpus_is_not_empty() {
        assert!(!current_cpus().unwrap().is_empty());
    }
}
