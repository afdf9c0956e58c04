//! `stackbench completions SHELL`: the shell's completion script, generated
//! (clap_complete) from the same command definition that parses the command
//! line, run settings included, so every flag, subcommand and allowed setting
//! value completes (`--protocol <TAB>`: raw, http1, tn3270).

use clap::{Args, Command};
use clap_complete::Shell;

#[derive(Debug, Args)]
#[command(after_help = "Install (one of):
  stackbench completions bash > ~/.local/share/bash-completion/completions/stackbench
  stackbench completions zsh > ~/.zfunc/_stackbench      # with fpath+=(~/.zfunc) before compinit
  stackbench completions fish > ~/.config/fish/completions/stackbench.fish")]
pub struct CompletionsArgs {
    /// The shell to complete in.
    #[arg(value_name = "SHELL")]
    shell: Shell,
}

/// Writes `cli`'s completion script for the chosen shell to stdout.
pub fn run(args: CompletionsArgs, mut cli: Command) -> anyhow::Result<i32> {
    let name = cli.get_name().to_string();
    clap_complete::generate(args.shell, &mut cli, name, &mut std::io::stdout());
    Ok(crate::exit::OK)
}
