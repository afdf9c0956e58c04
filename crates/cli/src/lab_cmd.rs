//! `stackbench lab up|down|show FILE`: builds, removes and reads back the
//! hosts (network namespaces) and links (veth pairs with rate, MTU and
//! offloads) a lab file describes. The work is stackbench-lab's; this module
//! reads the file and prints.

use std::io::Write;
use std::path::PathBuf;

use clap::{Args, Subcommand};
use stackbench_lab::{read_lab, LabError, UpReport};

#[derive(Debug, Args)]
#[command(after_help = "Examples (as root):
  stackbench lab up examples/lab-two-hosts.toml     # namespaces sb-pair-client, sb-pair-server
  stackbench lab show examples/lab-two-hosts.toml   # as configured and as the kernel reports it
  ip netns exec sb-pair-client ping 10.77.1.2       # a person may look inside
  stackbench lab down examples/lab-two-hosts.toml   # removes everything named sb-pair-*")]
pub struct LabArgs {
    #[command(subcommand)]
    action: LabAction,
}

#[derive(Debug, Subcommand)]
enum LabAction {
    /// Create or update the lab's namespaces, links, rates, MTUs and
    /// offloads to match the file (running it twice changes nothing);
    /// refused when a lab of the same name is up from another file.
    Up {
        /// The lab file (TOML).
        file: PathBuf,
    },
    /// Remove every namespace and interface of the lab's name, also what an
    /// interrupted `up` left.
    Down {
        /// The lab file (TOML); only its name is used.
        file: PathBuf,
    },
    /// Print the lab as configured and as read back from the kernel; exit
    /// status 1 when the kernel differs from the file.
    Show {
        /// The lab file (TOML).
        file: PathBuf,
    },
}

fn summary(name: &str, r: &UpReport) -> String {
    let mut line = format!(
        "lab {name} up: {} namespace(s) ({} created), {} veth pair(s) ({} created)",
        r.namespaces, r.namespaces_created, r.pairs, r.pairs_created
    );
    if !r.removed.is_empty() {
        line.push_str(&format!(", removed {}", r.removed.join(" ")));
    }
    line
}

pub fn run(args: LabArgs) -> anyhow::Result<i32> {
    let mut out = std::io::stdout();
    match args.action {
        LabAction::Up { file } => {
            let lab = read_lab(&file)?;
            let report = stackbench_lab::up_from(&lab, &file)?;
            writeln!(out, "{}", summary(&lab.name, &report))?;
        }
        LabAction::Down { file } => {
            let lab = read_lab(&file)?;
            let removed = stackbench_lab::down(&lab.name)?;
            if removed.is_empty() {
                writeln!(out, "lab {} down: nothing to remove", lab.name)?;
            } else {
                writeln!(out, "lab {} down: removed {}", lab.name, removed.join(" "))?;
            }
        }
        LabAction::Show { file } => {
            let lab = read_lab(&file)?;
            let back = stackbench_lab::read(&lab)?;
            let (text, differences) = stackbench_lab::render_counted(&lab, &back);
            write!(out, "{text}")?;
            write!(out, "{}", stackbench_lab::policy::show_lines(&lab)?)?;
            write!(out, "{}", stackbench_lab::flowtable::show_lines(&lab)?)?;
            write!(out, "{}", stackbench_lab::distributor::show_lines(&lab)?)?;
            // A lab of this name built from another file explains the differences.
            if let Err(owned @ LabError::Owned { .. }) = stackbench_lab::owner::check(&lab, &file) {
                writeln!(out, "owner: {owned}")?;
            }
            if differences > 0 {
                // As a failed check: the file's state is not the kernel's.
                return Ok(crate::exit::FAILED_CHECK);
            }
        }
    }
    Ok(crate::exit::OK)
}
