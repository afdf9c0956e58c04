//! Environment capture: the facts about the machine that change results and are
//! stored with every run (kernel release, CPU model and count, each side's CPU
//! set, frequency governor, the interface's MTU and offloads, and the TCP
//! sysctls). Reading is best effort: a value that cannot be read is `None`, never
//! an error, so a container without `/sys` or `ethtool` still stores its runs.
//!
//! The parsers are pure functions over file text, tested on samples; only
//! [`capture`] touches the file system. The stored type itself,
//! [`Environment`], is part of the record contract (`stackbench_record::env`).

use std::collections::BTreeMap;
use std::fs;
use std::net::{IpAddr, Ipv4Addr, ToSocketAddrs};
use std::path::Path;
use std::process::Command;

pub use stackbench_record::env::{Environment, InterfaceInfo};

/// TCP and socket sysctls that change results, as `(name, path under /proc/sys)`.
pub const SYSCTLS: &[(&str, &str)] = &[
    ("net.ipv4.tcp_rmem", "net/ipv4/tcp_rmem"),
    ("net.ipv4.tcp_wmem", "net/ipv4/tcp_wmem"),
    (
        "net.ipv4.tcp_congestion_control",
        "net/ipv4/tcp_congestion_control",
    ),
    ("net.ipv4.tcp_tw_reuse", "net/ipv4/tcp_tw_reuse"),
    ("net.ipv4.tcp_fin_timeout", "net/ipv4/tcp_fin_timeout"),
    (
        "net.ipv4.tcp_max_syn_backlog",
        "net/ipv4/tcp_max_syn_backlog",
    ),
    ("net.ipv4.tcp_timestamps", "net/ipv4/tcp_timestamps"),
    ("net.ipv4.tcp_sack", "net/ipv4/tcp_sack"),
    ("net.ipv4.tcp_window_scaling", "net/ipv4/tcp_window_scaling"),
    (
        "net.ipv4.tcp_slow_start_after_idle",
        "net/ipv4/tcp_slow_start_after_idle",
    ),
    ("net.ipv4.tcp_autocorking", "net/ipv4/tcp_autocorking"),
    ("net.ipv4.tcp_fastopen", "net/ipv4/tcp_fastopen"),
    ("net.ipv4.tcp_mtu_probing", "net/ipv4/tcp_mtu_probing"),
    (
        "net.ipv4.ip_local_port_range",
        "net/ipv4/ip_local_port_range",
    ),
    ("net.core.somaxconn", "net/core/somaxconn"),
    ("net.core.rmem_max", "net/core/rmem_max"),
    ("net.core.wmem_max", "net/core/wmem_max"),
    ("net.core.netdev_max_backlog", "net/core/netdev_max_backlog"),
    ("net.core.busy_poll", "net/core/busy_poll"),
    ("net.core.busy_read", "net/core/busy_read"),
    ("net.core.default_qdisc", "net/core/default_qdisc"),
];

/// Offload features worth keeping from `ethtool -k` (the rest are rarely set).
const OFFLOADS: &[&str] = &[
    "rx-checksumming",
    "tx-checksumming",
    "scatter-gather",
    "tcp-segmentation-offload",
    "generic-segmentation-offload",
    "generic-receive-offload",
    "large-receive-offload",
    "rx-gro-hw",
];

/// Reads the environment of this machine for a run against `target`
/// (`HOST:PORT`), with each side's CPU set as the run used it.
pub fn capture(target: &str, client_cpus: &[usize], server_cpus: &[usize]) -> Environment {
    let interface = interface_for_target(target).map(|name| read_interface(&name));
    Environment {
        hostname: read_trimmed("/proc/sys/kernel/hostname"),
        kernel_release: read_trimmed("/proc/sys/kernel/osrelease"),
        cpu_model: fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|t| parse_cpu_model(&t)),
        // Online CPUs from /proc/stat, not this thread's affinity: the
        // driver has pinned itself by the time the run is stored.
        cpu_count: stackbench_metrics::cpu::CpuSample::take(
            &stackbench_metrics::cpu::ProcessSource::None,
        )
        .map_or(0, |s| s.cpus.len()),
        client_cpus: client_cpus.to_vec(),
        server_cpus: server_cpus.to_vec(),
        governor: read_trimmed("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"),
        interface,
        sysctls: read_sysctls(Path::new("/proc/sys")),
        lab: None,
        guest: None,
        applicability: None,
    }
}

fn read_trimmed(path: impl AsRef<Path>) -> Option<String> {
    let text = fs::read_to_string(path).ok()?;
    let value = collapse_whitespace(&text);
    (!value.is_empty()).then_some(value)
}

fn collapse_whitespace(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Reads every sysctl in [`SYSCTLS`] under `root` (normally `/proc/sys`).
pub fn read_sysctls(root: &Path) -> BTreeMap<String, String> {
    SYSCTLS
        .iter()
        .filter_map(|(name, rel)| Some((name.to_string(), read_trimmed(root.join(rel))?)))
        .collect()
}

/// The CPU model from `/proc/cpuinfo` text (`model name` on x86, `Model` or
/// `CPU part` elsewhere).
pub fn parse_cpu_model(cpuinfo: &str) -> Option<String> {
    for key in ["model name", "Model", "cpu model", "CPU part"] {
        let found = cpuinfo.lines().find_map(|line| {
            let (k, v) = line.split_once(':')?;
            (k.trim() == key && !v.trim().is_empty()).then(|| collapse_whitespace(v))
        });
        if found.is_some() {
            return found;
        }
    }
    None
}

/// The offloads of interest from `ethtool -k IF` output.
pub fn parse_ethtool_features(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter_map(|line| {
            let (k, v) = line.split_once(':')?;
            let k = k.trim();
            OFFLOADS
                .contains(&k)
                .then(|| (k.to_string(), collapse_whitespace(v)))
        })
        .collect()
}

/// The interface `/proc/net/route` text sends `dest` through: the longest
/// matching prefix, lowest metric on ties.
pub fn route_interface(route_table: &str, dest: Ipv4Addr) -> Option<String> {
    let dest = u32::from(dest);
    let mut best: Option<(u32, u32, String)> = None;
    for line in route_table.lines().skip(1) {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 8 {
            continue;
        }
        // /proc/net/route prints addresses as little-endian hex.
        let parse = |s: &str| u32::from_str_radix(s, 16).ok();
        let (Some(net), Some(mask), Ok(metric)) = (parse(f[1]), parse(f[7]), f[6].parse::<u32>())
        else {
            continue;
        };
        let net = u32::from_be_bytes(net.to_le_bytes());
        let mask = u32::from_be_bytes(mask.to_le_bytes());
        if dest & mask != net & mask {
            continue;
        }
        let better = match &best {
            None => true,
            Some((m, met, _)) => {
                mask.count_ones() > m.count_ones() || (mask == *m && metric < *met)
            }
        };
        if better {
            best = Some((mask, metric, f[0].to_string()));
        }
    }
    best.map(|(_, _, name)| name)
}

/// The interface used to reach `target` (`HOST:PORT`): `lo` for loopback,
/// otherwise the IPv4 route's interface. `None` when it cannot be resolved.
pub fn interface_for_target(target: &str) -> Option<String> {
    let addr = target.to_socket_addrs().ok()?.next()?;
    match addr.ip() {
        ip if ip.is_loopback() => Some("lo".to_string()),
        IpAddr::V4(v4) => route_interface(&fs::read_to_string("/proc/net/route").ok()?, v4),
        IpAddr::V6(_) => None,
    }
}

fn read_interface(name: &str) -> InterfaceInfo {
    let sys = Path::new("/sys/class/net").join(name);
    let read_num = |file: &str| read_trimmed(sys.join(file)).and_then(|v| v.parse().ok());
    let ethtool = Command::new("ethtool")
        .arg("-k")
        .arg(name)
        .output()
        .ok()
        .filter(|o| o.status.success());
    let (offloads, source) = match ethtool {
        Some(out) => (
            parse_ethtool_features(&String::from_utf8_lossy(&out.stdout)),
            "ethtool",
        ),
        None => (BTreeMap::new(), "unavailable"),
    };
    InterfaceInfo {
        name: name.to_string(),
        mtu_bytes: read_num("mtu").map(|v: u64| v as u32),
        offloads,
        gso_max_size_bytes: read_num("gso_max_size"),
        gro_max_size_bytes: read_num("gro_max_size"),
        offload_source: source.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROUTE: &str =
        "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n\
eth0\t00000000\t010200C0\t0003\t0\t0\t0\t00000000\t0\t0\t0\n\
eth0\t000200C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n\
eth1\t0000000A\t00000000\t0001\t0\t0\t0\t000000FF\t0\t0\t0\n";

    #[test]
    fn routes_pick_longest_prefix() {
        let r = |s: &str| route_interface(ROUTE, s.parse().unwrap());
        assert_eq!(r("192.0.2.7").as_deref(), Some("eth0"));
        assert_eq!(r("10.1.2.3").as_deref(), Some("eth1"));
        assert_eq!(r("8.8.8.8").as_deref(), Some("eth0"), "default route");
        assert_eq!(
            route_interface("header only\n", "1.2.3.4".parse().unwrap()),
            None
        );
    }

    #[test]
    fn cpu_model_from_cpuinfo() {
        let x86 = "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC  7B13\n";
        assert_eq!(parse_cpu_model(x86).as_deref(), Some("AMD EPYC 7B13"));
        let arm = "processor\t: 0\nCPU part\t: 0xd0c\n";
        assert_eq!(parse_cpu_model(arm).as_deref(), Some("0xd0c"));
        assert_eq!(parse_cpu_model("nothing here"), None);
    }

    #[test]
    fn ethtool_keeps_known_offloads() {
        let text = "Features for lo:\nrx-checksumming: on [fixed]\ntx-checksumming: on\n\
\ttx-checksum-ipv4: off [fixed]\ntcp-segmentation-offload: on\ngeneric-receive-offload: on\n";
        let f = parse_ethtool_features(text);
        assert_eq!(
            f.get("rx-checksumming").map(String::as_str),
            Some("on [fixed]")
        );
        assert_eq!(
            f.get("tcp-segmentation-offload").map(String::as_str),
            Some("on")
        );
        assert!(!f.contains_key("tx-checksum-ipv4"));
        assert_eq!(f.len(), 4);
    }

    #[test]
    fn sysctls_read_from_a_tree() {
        let dir = tempfile::tempdir().unwrap();
        let ipv4 = dir.path().join("net/ipv4");
        fs::create_dir_all(&ipv4).unwrap();
        fs::write(ipv4.join("tcp_rmem"), "4096\t131072\t6291456\n").unwrap();
        fs::write(ipv4.join("tcp_congestion_control"), "cubic\n").unwrap();
        let s = read_sysctls(dir.path());
        assert_eq!(s["net.ipv4.tcp_rmem"], "4096 131072 6291456");
        assert_eq!(s["net.ipv4.tcp_congestion_control"], "cubic");
        assert_eq!(s.len(), 2);
    }

    #[test]
    fn loopback_targets_use_lo() {
        assert_eq!(
            interface_for_target("127.0.0.1:7000").as_deref(),
            Some("lo")
        );
        assert_eq!(interface_for_target("[::1]:7000").as_deref(), Some("lo"));
        assert_eq!(interface_for_target("not an address"), None);
    }

    #[test]
    fn capture_never_fails() {
        let env = capture("127.0.0.1:1", &[0], &[1]);
        assert_eq!(env.client_cpus, vec![0]);
        assert!(env.summary().contains("kernel"));
    }
}
