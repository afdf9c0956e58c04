//! `stackbench man DIR`: one man page per command and subcommand
//! (`stackbench.1`, `stackbench-run.1`, `stackbench-results-list.1`, …),
//! generated (clap_mangen) from the same command definition that parses the
//! command line, so each page lists exactly the flags, run settings and
//! allowed values `--help` does. Prints the pages' paths.

use std::path::{Path, PathBuf};

use clap::{Args, Command, ValueHint};
use clap_mangen::Man;

use crate::exit::UsageError;

#[derive(Debug, Args)]
#[command(after_help = "Install:
  stackbench man ~/.local/share/man/man1      # then: man stackbench-run")]
pub struct ManArgs {
    /// Directory to write the pages into (created when missing).
    #[arg(value_name = "DIR", value_hint = ValueHint::DirPath)]
    dir: PathBuf,
}

pub fn run(args: ManArgs, cli: Command) -> anyhow::Result<i32> {
    let refuse = |what: String, e: std::io::Error| {
        UsageError(format!(
            "{what}: {e}: give man a directory you can write, e.g. ~/.local/share/man/man1"
        ))
    };
    std::fs::create_dir_all(&args.dir)
        .map_err(|e| refuse(format!("cannot create {}", args.dir.display()), e))?;
    let mut cli = cli.disable_help_subcommand(true);
    cli.build();
    let mut written = Vec::new();
    write_pages(&cli, &args.dir, &mut written)
        .map_err(|(path, e)| refuse(format!("cannot write {}", path.display()), e))?;
    for path in &written {
        println!("{}", path.display());
    }
    Ok(crate::exit::OK)
}

/// Writes the page of `cmd` (built, so that a subcommand's display name is
/// its path, `stackbench-results-list`) and of every visible subcommand
/// below it into `dir`, appending each page's path to `written`.
fn write_pages(
    cmd: &Command,
    dir: &Path,
    written: &mut Vec<PathBuf>,
) -> Result<(), (PathBuf, std::io::Error)> {
    let man = Man::new(cmd.clone());
    let path = man
        .generate_to(dir)
        .map_err(|e| (dir.join(man.get_filename()), e))?;
    written.push(path);
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        write_pages(sub, dir, written)?;
    }
    Ok(())
}
