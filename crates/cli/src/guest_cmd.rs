//! `stackbench guest exec|fetch`: run one stackbench command inside a guest
//! VM booted with a chosen kernel (kernel features this host lacks — kTLS,
//! ESP, netem — are there), or fetch a guest kernel. The work is
//! stackbench-guest's; this module parses and prints.

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Subcommand};
use stackbench_guest::Job;
use stackbench_model::settings::RunSettings;
use stackbench_model::units::{format_duration, parse_duration};
use stackbench_runner::guest_step::guest_spec;

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
    /// Virtual CPUs of the guest (setting guest_vcpus) [default: 2].
    #[arg(long)]
    vcpus: Option<String>,
    /// Guest memory (setting guest_memory) [default: 2GiB].
    #[arg(long)]
    memory: Option<String>,
    /// kvm, tcg (emulation) or auto: KVM when a KVM guest boots here, else TCG
    /// (setting guest_accel) [default: auto].
    #[arg(long)]
    accel: Option<String>,
    /// A host file copied into the guest, as HOST=GUEST (GUEST an absolute path); repeatable.
    #[arg(long = "file", value_name = "HOST=GUEST", value_parser = parse_file)]
    files: Vec<(PathBuf, String)>,
    /// Limit for the whole guest run, boot included.
    #[arg(long, default_value = "10m", value_parser = parse_timeout)]
    timeout: Duration,
    /// Boot a second guest with this kernel, joined to the first by a
    /// virtual wire (virtio-net; the first guest is 10.77.0.1, this one
    /// 10.77.0.2), running --peer-command.
    #[arg(long, value_name = "KERNEL", requires = "peer_command")]
    peer_kernel: Option<String>,
    /// With --peer-kernel: the peer guest's program and arguments, one
    /// string split on spaces (e.g. '/bin/sh -c sleep\ 30' is not split
    /// inside; use 'serve --listen 10.77.0.2:12870 --open').
    #[arg(long, value_name = "ARGS", requires = "peer_kernel")]
    peer_command: Option<String>,
    /// The stackbench arguments to run in the guest (after `--`).
    #[arg(last = true, required = true, value_name = "ARGS")]
    args: Vec<String>,
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
    // The guest's flags are the settings a study step's guest takes: one
    // grammar, one range, one message.
    let mut settings = RunSettings::default();
    let given = [
        ("--kernel", "kernel", Some(&exec.kernel)),
        ("--vcpus", "guest_vcpus", exec.vcpus.as_ref()),
        ("--memory", "guest_memory", exec.memory.as_ref()),
        ("--accel", "guest_accel", exec.accel.as_ref()),
    ];
    for (flag, name, text) in given {
        if let Some(text) = text {
            if let Err(e) = settings.set(name, text) {
                return crate::exit::usage(format!("{flag} {text}: {}", e.message));
            }
        }
    }
    if !settings.kernel.is_guest() {
        return crate::exit::usage("--kernel host: give a kernel package or vmlinuz to boot");
    }
    let spec = guest_spec(&settings);
    let job = Job {
        args: exec.args,
        files: exec.files,
        timeout: exec.timeout,
    };
    let out = match (&exec.peer_kernel, &exec.peer_command) {
        (Some(kernel), Some(command)) => {
            let mut peer = settings.clone();
            if let Err(e) = peer.set("kernel", kernel) {
                return crate::exit::usage(format!("--peer-kernel {kernel}: {}", e.message));
            }
            let peer_job = Job {
                args: command.split_whitespace().map(str::to_string).collect(),
                files: job.files.clone(),
                timeout: job.timeout,
            };
            let pair = stackbench_guest::run_pair(&spec, &job, &guest_spec(&peer), &peer_job)?;
            let mut err = std::io::stderr();
            match &pair.responder {
                Ok(p) => {
                    writeln!(err, "peer guest: exit status {}, stdout:", p.status)?;
                    err.write_all(&p.stdout)?;
                    err.write_all(&p.stderr)?;
                }
                Err(e) => writeln!(err, "peer guest: {e}")?,
            }
            pair.driver
        }
        _ => stackbench_guest::run_job(&spec, &job)?,
    };
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
        assert_eq!(parse_timeout("90s"), Ok(Duration::from_secs(90)));
        assert!(parse_timeout("1ms").is_err());
        assert_eq!(
            parse_file("a.toml=/work/a.toml"),
            Ok((PathBuf::from("a.toml"), "/work/a.toml".to_string()))
        );
        assert!(parse_file("a.toml=work").is_err());
    }
}
