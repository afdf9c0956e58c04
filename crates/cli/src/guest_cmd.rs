//! `stackbench guest exec|fetch`: run one stackbench command inside a guest
//! VM booted with a chosen kernel (kernel features this host lacks — kTLS,
//! ESP, netem — are there), or fetch a guest kernel. The work is
//! stackbench-guest's; this module parses and prints.

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Subcommand, ValueEnum};
use stackbench_guest::{Accel, GuestSpec, Job};
use stackbench_model::units::{format_duration, parse_duration, parse_size};

#[derive(Debug, Args)]
#[command(after_help = "Examples:
  stackbench guest fetch 'linux-image-6.12.*-cloud-amd64-unsigned'
  stackbench guest exec --kernel 'linux-image-6.1.0-*-cloud-amd64-unsigned' -- run 'RR1(1B/1B)' --duration 2s --warmup 0s --json
  stackbench guest exec --kernel K --file lab.toml=/work/lab.toml -- run 'RR1(1B/1B)' --lab /work/lab.toml
Under TCG (emulation, where KVM is missing or hangs) timings are functional only.")]
pub struct GuestArgs {
    #[command(subcommand)]
    action: GuestAction,
}

#[derive(Debug, Subcommand)]
enum GuestAction {
    /// Boot a guest with KERNEL and run `stackbench ARGS…` in it: prints its
    /// stdout and stderr, exits with its status.
    Exec(ExecArgs),
    /// Fetch (apt-get download, cached) and unpack a kernel package; print
    /// its vmlinuz, modules directory and release.
    Fetch {
        /// A Debian kernel package (`apt-cache search linux-image` lists them)
        /// or a path to an unpacked package's boot/vmlinuz-REL.
        kernel: String,
    },
}

#[derive(Debug, Args)]
struct ExecArgs {
    /// A Debian kernel package (`apt-cache search linux-image` lists them)
    /// or a path to an unpacked package's boot/vmlinuz-REL.
    #[arg(long)]
    kernel: String,
    /// Virtual CPUs of the guest (1 to 64).
    #[arg(long, default_value = "2", value_parser = parse_vcpus)]
    vcpus: u32,
    /// Guest memory (256MiB to 64GiB).
    #[arg(long, default_value = "2GiB", value_parser = parse_memory_mib)]
    memory: u64,
    /// kvm, tcg (emulation) or auto (KVM when a KVM guest boots here, else TCG).
    #[arg(long, value_enum, default_value = "auto")]
    accel: AccelArg,
    /// A host file copied into the guest, as HOST=GUEST (GUEST an absolute path); repeatable.
    #[arg(long = "file", value_name = "HOST=GUEST", value_parser = parse_file)]
    files: Vec<(PathBuf, String)>,
    /// Limit for the whole guest run, boot included.
    #[arg(long, default_value = "10m", value_parser = parse_timeout)]
    timeout: Duration,
    /// The stackbench arguments to run in the guest (after `--`).
    #[arg(last = true, required = true, value_name = "ARGS")]
    args: Vec<String>,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum AccelArg {
    Auto,
    Kvm,
    Tcg,
}

fn parse_vcpus(text: &str) -> Result<u32, String> {
    match text.parse::<u32>() {
        Ok(n) if (1..=64).contains(&n) => Ok(n),
        _ => Err(format!("'{text}' is not a vCPU count: use 1 to 64")),
    }
}

fn parse_memory_mib(text: &str) -> Result<u64, String> {
    let bytes = parse_size(text).map_err(|e| e.to_string())?;
    let mib = bytes >> 20;
    if !(256..=64 << 10).contains(&mib) {
        return Err(format!(
            "'{text}' is not a guest memory size: use 256MiB to 64GiB"
        ));
    }
    Ok(mib)
}

fn parse_timeout(text: &str) -> Result<Duration, String> {
    let d = parse_duration(text).map_err(|e| e.to_string())?;
    if d < Duration::from_secs(1) {
        return Err(format!(
            "'{text}' is too short a guest timeout: use 1s or more (e.g. 10m)"
        ));
    }
    Ok(d)
}

fn parse_file(text: &str) -> Result<(PathBuf, String), String> {
    match text.split_once('=') {
        Some((host, guest)) if !host.is_empty() && guest.starts_with('/') => Ok((PathBuf::from(host), guest.to_string())),
        _ => Err(format!("'{text}' is not HOST=GUEST: give a host file and an absolute guest path, e.g. lab.toml=/work/lab.toml")),
    }
}

pub fn run(args: GuestArgs) -> anyhow::Result<i32> {
    match args.action {
        GuestAction::Fetch { kernel } => {
            let k = stackbench_guest::resolve_kernel(&kernel)?;
            let mut out = std::io::stdout();
            writeln!(out, "vmlinuz {}", k.vmlinuz.display())?;
            writeln!(out, "modules {}", k.modules.display())?;
            writeln!(out, "release {}", k.release)?;
            Ok(crate::exit::OK)
        }
        GuestAction::Exec(exec) => run_exec(exec),
    }
}

fn run_exec(exec: ExecArgs) -> anyhow::Result<i32> {
    let spec = GuestSpec {
        kernel: exec.kernel,
        vcpus: exec.vcpus,
        memory_mib: exec.memory,
        accel: match exec.accel {
            AccelArg::Auto => Accel::Auto,
            AccelArg::Kvm => Accel::Kvm,
            AccelArg::Tcg => Accel::Tcg,
        },
    };
    let job = Job {
        args: exec.args,
        files: exec.files,
        timeout: exec.timeout,
    };
    let out = stackbench_guest::run_job(&spec, &job)?;
    std::io::stdout().write_all(&out.stdout)?;
    std::io::stdout().flush()?;
    let mut err = std::io::stderr();
    err.write_all(&out.stderr)?;
    let info = &out.info;
    let emulated = if info.emulated {
        " (emulated: timings are functional only)"
    } else {
        ""
    };
    writeln!(
        err,
        "guest: kernel {}, {} vCPU, {} MiB, {}{emulated}, boot {:.1} s, timeout {}",
        info.kernel_release,
        info.vcpus,
        info.memory_mib,
        info.accel,
        info.boot_s,
        format_duration(job.timeout)
    )?;
    Ok(out.status)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flag_values_parse_with_the_unit_grammars() {
        assert_eq!(parse_memory_mib("2GiB"), Ok(2048));
        assert!(parse_memory_mib("1MB")
            .unwrap_err()
            .contains("256MiB to 64GiB"));
        assert!(parse_memory_mib("2gb").is_err());
        assert_eq!(parse_timeout("90s"), Ok(Duration::from_secs(90)));
        assert!(parse_timeout("1ms").is_err());
        assert_eq!(parse_vcpus("4"), Ok(4));
        assert!(parse_vcpus("0").is_err());
        assert_eq!(
            parse_file("a.toml=/work/a.toml"),
            Ok((PathBuf::from("a.toml"), "/work/a.toml".to_string()))
        );
        assert!(parse_file("a.toml=work").is_err());
    }
}
