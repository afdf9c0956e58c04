//! Test tiers that need something a machine may lack — root, qemu, Chromium,
//! Python, the `openssl` command, IPv6 loopback, io_uring, MPTCP, the pinned
//! Kubernetes schema validator, a Slurm cluster, nginx, hercules, an AMQP 1.0
//! broker ([`broker`]), vsftpd, two CPUs, AF_SMC, ESP, zsh, man — and the probes shared by more than one crate's tests. A test that
//! cannot run its tier skips, saying why; with `STACKBENCH_REQUIRE` naming the
//! tier (a comma-separated list, or `all`) the skip is a failure instead, so
//! CI, which installs and starts what the tiers need, cannot pass by skipping
//! them (ripgrep's and hyperfine's suites skip the same way locally; CI is
//! where a missing tool must show). A test skips only through [`skip`].

use std::fmt;

pub mod broker;
pub mod server;

/// The environment variable that turns skips into failures.
pub const REQUIRE_VAR: &str = "STACKBENCH_REQUIRE";

/// A test tier: what its tests need from the machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tier {
    /// Root (CAP_SYS_ADMIN, CAP_NET_ADMIN): network namespaces, labs,
    /// SO_PRIORITY above 6.
    Root,
    /// qemu-system-x86_64, busybox and Debian kernel packages (guest kernels).
    Qemu,
    /// Headless Chromium (the HTML report rendered).
    Chromium,
    /// python3 (the bench/ scripts' parsers).
    Python,
    /// The `openssl` command (s_client, s_server against the TLS transport).
    Openssl,
    /// An IPv6 loopback address (::1).
    Ipv6,
    /// io_uring allowed for this process.
    Uring,
    /// MPTCP enabled in this kernel (net.mptcp.enabled).
    Mptcp,
    /// The pinned `kubernetes-validate` (deploy/k8s-validate.txt): rendered
    /// manifests checked against the Kubernetes OpenAPI schema, offline.
    K8sSchema,
    /// A Slurm cluster this host can submit to: `srun` and `sinfo` on PATH,
    /// munged answering, a node idle, mix, alloc or comp (`.ci/slurm-up`).
    Slurm,
    /// The `nginx` binary (a real HTTP/1.1 server driven with `protocol
    /// http1`; the test starts its own on a loopback port).
    Nginx,
    /// The `hercules` and `s3270` binaries: a real TN3270 server (the
    /// S/370–z/Architecture emulator's console, started by the test on a
    /// loopback port) for the `tn3270` codec, and a real TN3270 terminal
    /// (the x3270 suite's scripted one) for the `tn3270` responder.
    Hercules,
    /// Debian's RabbitMQ (`rabbitmq-server`, with its AMQP 1.0 plugin): a
    /// real broker the test starts on loopback ports with a data directory
    /// of its own ([`broker::Broker`]).
    Broker,
    /// CPUs 0 and 1 both in this process's affinity mask (tests that pin
    /// workers to CPUs of their own).
    Cpus,
    /// AF_SMC in this kernel (CONFIG_SMC): a run over `--transport smc` on
    /// loopback. CI's kernel lacks it; the guest tier runs smc in a guest
    /// kernel that has it.
    Smc,
    /// ESP in this kernel (CONFIG_INET_ESP, CONFIG_XFRM): a lab link with
    /// `--link-ipsec` carrying traffic as root.
    Esp,
    /// zsh with its zpty module: the generated completion script loaded by
    /// compinit and driven in an interactive zsh.
    Zsh,
    /// man-db's `man` (the generated man pages rendered with `man -l`).
    Man,
    /// Debian's vsftpd, run as root (it chroots anonymous sessions and
    /// drops to the `ftp` user): a real FTP server the test starts on a
    /// loopback port with a configuration and directory of its own, for
    /// the `ftp` codec.
    Vsftpd,
    /// podman building deploy/Containerfile as root, its base image
    /// (debian:bookworm-slim) in local storage (`deploy/base-image` makes
    /// it from Debian's packages where no image registry is reachable).
    Podman,
}

impl Tier {
    pub const ALL: [Tier; 20] = [
        Tier::Root,
        Tier::Qemu,
        Tier::Chromium,
        Tier::Python,
        Tier::Openssl,
        Tier::Ipv6,
        Tier::Uring,
        Tier::Mptcp,
        Tier::K8sSchema,
        Tier::Slurm,
        Tier::Nginx,
        Tier::Hercules,
        Tier::Broker,
        Tier::Cpus,
        Tier::Smc,
        Tier::Esp,
        Tier::Zsh,
        Tier::Man,
        Tier::Vsftpd,
        Tier::Podman,
    ];

    /// The tier's name in `STACKBENCH_REQUIRE`.
    pub fn name(self) -> &'static str {
        match self {
            Tier::Root => "root",
            Tier::Qemu => "qemu",
            Tier::Chromium => "chromium",
            Tier::Python => "python",
            Tier::Openssl => "openssl",
            Tier::Ipv6 => "ipv6",
            Tier::Uring => "uring",
            Tier::Mptcp => "mptcp",
            Tier::K8sSchema => "k8s-schema",
            Tier::Slurm => "slurm",
            Tier::Nginx => "nginx",
            Tier::Hercules => "hercules",
            Tier::Broker => "broker",
            Tier::Cpus => "cpus",
            Tier::Smc => "smc",
            Tier::Esp => "esp",
            Tier::Zsh => "zsh",
            Tier::Man => "man",
            Tier::Vsftpd => "vsftpd",
            Tier::Podman => "podman",
        }
    }
}

impl fmt::Display for Tier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Whether `list` (the variable's text) names `tier`; an unknown name is an
/// error, so a typo cannot quietly require nothing.
pub fn names(list: &str, tier: Tier) -> Result<bool, String> {
    let mut found = false;
    for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        if name == "all" {
            found = true;
        } else if let Some(t) = Tier::ALL.iter().find(|t| t.name() == name) {
            found |= *t == tier;
        } else {
            let known: Vec<&str> = Tier::ALL.iter().map(|t| t.name()).collect();
            return Err(format!(
                "{REQUIRE_VAR}: unknown tier '{name}': use all or some of {}",
                known.join(",")
            ));
        }
    }
    Ok(found)
}

/// Whether this run requires `tier` (`STACKBENCH_REQUIRE`).
pub fn required(tier: Tier) -> bool {
    let list = std::env::var(REQUIRE_VAR).unwrap_or_default();
    names(&list, tier).unwrap_or_else(|e| panic!("{e}"))
}

/// Skips `test` for `why` — prints "skipped TEST: WHY" — or, where the tier is
/// required, fails with the same words. Call it, then return from the test.
#[track_caller]
pub fn skip(tier: Tier, test: &str, why: &str) {
    if required(tier) {
        panic!("{test}: {why}, but {REQUIRE_VAR} requires the {tier} tier");
    }
    eprintln!("skipped {test}: {why} ({tier} tier; {REQUIRE_VAR}={tier} makes this a failure)");
}

/// The root tier's probe for the lab tests: whether this process may make
/// network namespaces (root, a kernel with CONFIG_NET_NS) and name them
/// under /run; otherwise [`skip`]s `test` saying why and returns false.
#[track_caller]
pub fn can_make_namespaces(test: &str) -> bool {
    let probe = std::thread::spawn(|| {
        // SAFETY: unshare(2) on this short-lived thread only, which exits
        // at once: the namespace it enters goes with it.
        if unsafe { libc::unshare(libc::CLONE_NEWNET) } == 0 {
            Ok(())
        } else {
            Err(std::io::Error::last_os_error())
        }
    });
    let why = match probe.join().expect("the namespace probe thread") {
        Ok(()) if std::fs::metadata("/run").is_ok() => return true,
        Ok(()) => "no /run directory for named namespaces".to_string(),
        Err(e) => format!("cannot make a network namespace ({e}): run the tests as root"),
    };
    skip(Tier::Root, test, &why);
    false
}

/// The CPU tier's probe for the pinning tests: whether this process may run
/// on CPUs 0 and 1 (its affinity mask holds both); otherwise [`skip`]s
/// `test` saying why and returns false.
#[track_caller]
pub fn can_pin_to_cpus_0_and_1(test: &str) -> bool {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; sched_getaffinity(2)
    // fills it for this thread, with its size given.
    let mask = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        let size = std::mem::size_of::<libc::cpu_set_t>();
        (libc::sched_getaffinity(0, size, &mut set) == 0).then_some(set)
    };
    let why = match mask {
        // SAFETY: CPU_ISSET reads the set filled above, for CPUs in range.
        Some(set) if unsafe { libc::CPU_ISSET(0, &set) && libc::CPU_ISSET(1, &set) } => {
            return true
        }
        Some(_) => "this process may not run on both CPU 0 and CPU 1".to_string(),
        None => format!("sched_getaffinity: {}", std::io::Error::last_os_error()),
    };
    skip(Tier::Cpus, test, &why);
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_list_names_tiers_all_or_an_error() {
        assert_eq!(names("", Tier::Root), Ok(false));
        assert_eq!(names("root, qemu", Tier::Qemu), Ok(true));
        assert_eq!(names("root,qemu", Tier::Chromium), Ok(false));
        assert_eq!(names("all", Tier::Mptcp), Ok(true));
        assert_eq!(names("mptcp,slurm", Tier::Slurm), Ok(true));
        assert_eq!(names("nginx", Tier::Nginx), Ok(true));
        assert_eq!(names("nginx,hercules", Tier::Hercules), Ok(true));
        assert_eq!(names("cpus", Tier::Cpus), Ok(true));
        assert_eq!(names("nginx,broker", Tier::Broker), Ok(true));
        assert_eq!(names("cpus", Tier::Smc), Ok(false));
        assert_eq!(names("zsh,man", Tier::Man), Ok(true));
        assert_eq!(names("man", Tier::Zsh), Ok(false));
        let e = names("root,chromum", Tier::Root).unwrap_err();
        assert!(e.contains("unknown tier 'chromum'"), "{e}");
    }
}
