//! clap's own errors (unknown flag, bad enum value, conflicting flags, missing
//! argument or subcommand, …) as ONE line on stderr that names the input and
//! the fix, exit status 2 — like every other usage error of the tool. clap
//! would print usage and tips over 3–7 lines; here the error's kind and context
//! (`InvalidArg`, `InvalidValue`, `SuggestedArg`, `ValidValue`, …) are turned
//! into a sentence, and `(see <command> --help)` points at the rest.
//! `--help` and `--version` print as usual, exit status 0.
//!
//! Values starting with '-' (`--duration -1s`, `--threads -2`) reach the flag's
//! own parser, which says what is wrong with them ("a duration cannot be
//! negative"), instead of clap reading them as unknown flags: see
//! [`accept_hyphen_values`].

use std::ffi::OsString;

use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::{ArgMatches, Command};

use crate::exit::USAGE;

/// Parses `args` with `cmd` (after [`accept_hyphen_values`]); on a clap error,
/// prints help or version (exit 0) or the one-line error (exit 2) and exits.
pub fn matches_or_exit(cmd: Command, args: Vec<OsString>) -> ArgMatches {
    let cmd = accept_hyphen_values(cmd);
    cmd.clone()
        .try_get_matches_from(&args)
        .unwrap_or_else(|err| exit(&err, &cmd, &args))
}

/// Prints `err` the way [`matches_or_exit`] does and exits.
pub fn exit(err: &clap::Error, cmd: &Command, args: &[OsString]) -> ! {
    if matches!(
        err.kind(),
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion
    ) {
        err.exit();
    }
    let args: Vec<String> = args
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    eprintln!("stackbench: error: {}", one_line(err, cmd, &args));
    std::process::exit(USAGE)
}

/// Lets every flag that takes a value (in every subcommand) accept values
/// starting with '-', and positional arguments negative numbers, so that the
/// value's parser judges them. The price: a forgotten value takes the next
/// flag (`--target --json`), which that value's parser then rejects by name.
pub fn accept_hyphen_values(cmd: Command) -> Command {
    cmd.mut_args(|arg| {
        if arg.is_positional() {
            arg.allow_negative_numbers(true)
        } else if arg.get_action().takes_values() {
            arg.allow_hyphen_values(true)
        } else {
            arg
        }
    })
    .mut_subcommands(accept_hyphen_values)
}

/// The one-line message for a clap error raised while parsing `args`
/// (`args[0]` is the program) with `cmd`, without the `stackbench: error: `
/// prefix.
pub fn one_line(err: &clap::Error, cmd: &Command, args: &[String]) -> String {
    let (path, leaf) = command_path(cmd, args);
    let ctx = |kind| err.get(kind).map(text);
    let arg = ctx(ContextKind::InvalidArg).unwrap_or_default();
    let value = ctx(ContextKind::InvalidValue).unwrap_or_default();
    let body = match err.kind() {
        ErrorKind::UnknownArgument | ErrorKind::InvalidSubcommand => {
            unknown(err, &path, leaf, &arg)
        }
        ErrorKind::InvalidValue | ErrorKind::ValueValidation => bad_value(err, &arg, &value),
        ErrorKind::ArgumentConflict => {
            let prior = ctx(ContextKind::PriorArg).unwrap_or_default();
            format!(
                "'{}' and '{}' exclude each other in '{path}': use one of them",
                flag(&arg),
                flag(&prior)
            )
        }
        ErrorKind::MissingRequiredArgument => {
            let usage = ctx(ContextKind::Usage).unwrap_or_default();
            let usage = usage.trim().trim_start_matches("Usage:").trim();
            format!("missing {arg} for '{path}': write {usage}")
        }
        ErrorKind::MissingSubcommand | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
            if leaf.has_subcommands() =>
        {
            format!(
                "missing subcommand for '{path}': use one of {}",
                subcommands(leaf)
            )
        }
        _ => first_line(err),
    };
    format!("{body} (see {path} --help)")
}

/// An unknown flag, argument or subcommand, with clap's suggestion.
fn unknown(err: &clap::Error, path: &str, leaf: &Command, arg: &str) -> String {
    let ctx = |kind| err.get(kind).map(text);
    if err.kind() == ErrorKind::InvalidSubcommand {
        let sub = ctx(ContextKind::InvalidSubcommand).unwrap_or_default();
        let hint = match ctx(ContextKind::SuggestedSubcommand) {
            Some(s) => format!("did you mean '{s}'?"),
            None => format!("use one of {}", subcommands(leaf)),
        };
        return format!("unknown subcommand '{sub}' for '{path}': {hint}");
    }
    let what = if arg.starts_with('-') {
        "unknown flag"
    } else {
        "unexpected argument"
    };
    let hint = ctx(ContextKind::SuggestedArg)
        .map(|s| format!(": did you mean '{s}'?"))
        .unwrap_or_default();
    format!("{what} '{arg}' for '{path}'{hint}")
}

/// A missing, unknown or invalid value of a flag.
fn bad_value(err: &clap::Error, arg: &str, value: &str) -> String {
    let ctx = |kind| err.get(kind).map(text);
    if err.kind() == ErrorKind::ValueValidation {
        let why = std::error::Error::source(err).map_or_else(String::new, |e| e.to_string());
        return format!(
            "invalid value '{value}' for '{}': {}",
            flag(arg),
            number_hint(value, &why)
        );
    }
    if value.is_empty() {
        return format!("missing value for '{}': write {arg}", flag(arg));
    }
    let hint = match (
        ctx(ContextKind::SuggestedValue),
        ctx(ContextKind::ValidValue),
    ) {
        (Some(s), _) => format!("did you mean '{s}'?"),
        (None, Some(valid)) => format!("use one of {valid}"),
        (None, None) => "give another value".to_string(),
    };
    format!("invalid value '{value}' for '{}': {hint}", flag(arg))
}

/// The subcommand named by `args` (e.g. `stackbench plan cpu`) and its
/// definition: the words that name a subcommand of the one before them.
fn command_path<'a>(root: &'a Command, args: &[String]) -> (String, &'a Command) {
    let mut path = root.get_name().to_string();
    let mut leaf = root;
    for word in args.iter().skip(1).take_while(|w| *w != "--") {
        if let Some(sub) = leaf.find_subcommand(word) {
            path = format!("{path} {}", sub.get_name());
            leaf = sub;
        }
    }
    (path, leaf)
}

/// The visible subcommands of `cmd`, comma-separated.
fn subcommands(cmd: &Command) -> String {
    cmd.get_subcommands()
        .filter(|s| !s.is_hide_set())
        .map(Command::get_name)
        .collect::<Vec<_>>()
        .join(", ")
}

/// A context value as plain text (lists comma-separated).
fn text(value: &ContextValue) -> String {
    match value {
        ContextValue::Strings(list) => list.join(", "),
        other => other.to_string(),
    }
}

/// The flag of clap's `--threads <THREADS>`.
fn flag(arg: &str) -> &str {
    arg.split_once(' ').map_or(arg, |(f, _)| f)
}

/// The fix for a value its parser rejected: the parser's own message, with
/// Rust's integer and float parse errors said in the user's terms.
fn number_hint(value: &str, why: &str) -> String {
    let negative = value.starts_with('-');
    if why.contains("invalid digit") && negative {
        "cannot be negative: give a whole number".to_string()
    } else if why.contains("invalid digit") || why.contains("invalid float") {
        "give a number".to_string()
    } else if why.contains("too large") {
        "too large: give a smaller number".to_string()
    } else if why.is_empty() {
        "give another value".to_string()
    } else {
        why.to_string()
    }
}

/// clap's own message without its `error: ` prefix, usage and tips.
fn first_line(err: &clap::Error) -> String {
    let rendered = err.to_string();
    let line = rendered.lines().next().unwrap_or_default();
    line.trim_start_matches("error: ").to_string()
}

#[cfg(test)]
mod tests {
    use clap::{Arg, ArgAction};

    use super::*;

    /// A small command shaped like stackbench's: subcommands, an enum flag,
    /// conflicting flags, typed values and a required positional.
    fn cli() -> Command {
        let run = Command::new("run")
            .arg(Arg::new("duration").long("duration"))
            .arg(
                Arg::new("threads")
                    .long("threads")
                    .value_parser(clap::value_parser!(usize)),
            )
            .arg(
                Arg::new("crr-close")
                    .long("crr-close")
                    .value_parser(["server", "client", "abort"]),
            )
            .arg(Arg::new("json").long("json").action(ArgAction::SetTrue))
            .arg(
                Arg::new("csv")
                    .long("csv")
                    .action(ArgAction::SetTrue)
                    .conflicts_with("json"),
            )
            .arg(Arg::new("workloads").num_args(0..));
        let compare = Command::new("compare")
            .arg(Arg::new("a").required(true))
            .arg(Arg::new("b").required(true));
        let plan = Command::new("plan")
            .subcommand_required(true)
            .subcommand(Command::new("cpu"))
            .subcommand(Command::new("usl"));
        Command::new("stackbench")
            .subcommand_required(true)
            .subcommand(run)
            .subcommand(compare)
            .subcommand(plan)
    }

    /// The error line for `stackbench <line>`, which must fail to parse.
    fn error_of(line: &str) -> String {
        let args: Vec<String> = std::iter::once("stackbench")
            .chain(line.split_whitespace())
            .map(String::from)
            .collect();
        let cmd = accept_hyphen_values(cli());
        let err = cmd
            .clone()
            .try_get_matches_from(&args)
            .expect_err("must not parse");
        let text = one_line(&err, &cmd, &args);
        assert!(!text.contains('\n'), "one line: {text}");
        text
    }

    #[test]
    fn unknown_flag_names_it_and_suggests_the_near_one() {
        assert_eq!(
            error_of("run --durration 1s"),
            "unknown flag '--durration' for 'stackbench run': did you mean '--duration'? \
             (see stackbench run --help)"
        );
        assert_eq!(
            error_of("run --zzz"),
            "unknown flag '--zzz' for 'stackbench run' (see stackbench run --help)"
        );
    }

    #[test]
    fn hyphen_values_reach_the_value_parser() {
        let cmd = accept_hyphen_values(cli());
        let m = cmd
            .try_get_matches_from(["stackbench", "run", "--duration", "-1s"])
            .unwrap();
        let run = m.subcommand_matches("run").unwrap();
        assert_eq!(run.get_one::<String>("duration").unwrap(), "-1s");
        assert_eq!(
            error_of("run --threads -2"),
            "invalid value '-2' for '--threads': cannot be negative: give a whole number \
             (see stackbench run --help)"
        );
        assert_eq!(
            error_of("run --threads x"),
            "invalid value 'x' for '--threads': give a number (see stackbench run --help)"
        );
    }

    #[test]
    fn bad_enum_value_lists_or_suggests_the_valid_ones() {
        assert_eq!(
            error_of("run --crr-close x"),
            "invalid value 'x' for '--crr-close': use one of server, client, abort \
             (see stackbench run --help)"
        );
        assert!(error_of("run --crr-close serve").contains("did you mean 'server'?"));
    }

    #[test]
    fn missing_value_shows_how_to_write_it() {
        assert_eq!(
            error_of("run --duration"),
            "missing value for '--duration': write --duration <duration> \
             (see stackbench run --help)"
        );
    }

    #[test]
    fn conflicting_flags_say_use_one() {
        assert_eq!(
            error_of("run --json --csv"),
            "'--json' and '--csv' exclude each other in 'stackbench run': use one of them \
             (see stackbench run --help)"
        );
    }

    #[test]
    fn missing_argument_shows_the_usage() {
        assert_eq!(
            error_of("compare x"),
            "missing <b> for 'stackbench compare': write stackbench compare <a> <b> \
             (see stackbench compare --help)"
        );
    }

    #[test]
    fn missing_or_bad_subcommand_lists_the_subcommands() {
        assert_eq!(
            error_of("plan"),
            "missing subcommand for 'stackbench plan': use one of cpu, usl \
             (see stackbench plan --help)"
        );
        assert_eq!(
            error_of(""),
            "missing subcommand for 'stackbench': use one of run, compare, plan \
             (see stackbench --help)"
        );
        assert_eq!(
            error_of("runn"),
            "unknown subcommand 'runn' for 'stackbench': did you mean 'run'? \
             (see stackbench --help)"
        );
        assert_eq!(
            error_of("plan zzz"),
            "unknown subcommand 'zzz' for 'stackbench plan': use one of cpu, usl \
             (see stackbench plan --help)"
        );
    }

    #[test]
    fn unexpected_positional_is_named() {
        assert_eq!(
            error_of("compare a b c"),
            "unexpected argument 'c' for 'stackbench compare' (see stackbench compare --help)"
        );
    }
}
