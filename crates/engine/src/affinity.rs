//! CPU sets: parsing `0-3,5` lists and pinning the calling thread (threads
//! spawned afterwards inherit the mask, so pinning the main thread first pins
//! the whole side). RR rates on VMs depend more on where the two ends run than
//! on code, so the effective sets are always reported and stored.

use std::io;

/// Parses a CPU list such as `0`, `0-3`, `0,2,4-5`. Returns a sorted, deduplicated list.
pub fn parse_cpu_list(text: &str) -> Result<Vec<usize>, String> {
    let mut cpus = Vec::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let bad = || format!("bad CPU list '{text}': use numbers and ranges such as 0, 1-3 or 0,2");
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (usize, usize) =
                    (a.parse().map_err(|_| bad())?, b.parse().map_err(|_| bad())?);
                if a > b || b >= libc::CPU_SETSIZE as usize {
                    return Err(bad());
                }
                cpus.extend(a..=b);
            }
            None => cpus.push(part.parse().map_err(|_| bad())?),
        }
    }
    if cpus.is_empty() {
        return Err(format!(
            "empty CPU list '{text}': give at least one CPU, e.g. 0 or 0-1"
        ));
    }
    cpus.sort_unstable();
    cpus.dedup();
    Ok(cpus)
}

/// Formats a CPU list compactly (`[0,1,2,5]` → `0-2,5`).
pub fn format_cpu_list(cpus: &[usize]) -> String {
    let mut out = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let start = cpus[i];
        while i + 1 < cpus.len() && cpus[i + 1] == cpus[i] + 1 {
            i += 1;
        }
        out.push(if cpus[i] == start {
            start.to_string()
        } else {
            format!("{start}-{}", cpus[i])
        });
        i += 1;
    }
    out.join(",")
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
