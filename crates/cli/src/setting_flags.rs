//! The `run` flags of every run setting, generated from the settings table
//! (`stackbench_model::settings::SETTINGS`): one `--name` per setting, its help
//! and placeholder from the table. Values are collected as text and parsed by
//! `RunSettings::set`, so a flag and a study key share grammar and errors.
//! Every value flag accepts leading hyphens, so `--duration -1s` reaches the
//! parser (which says a duration cannot be negative) instead of clap guessing
//! that `-1s` is a flag.

use clap::parser::ValueSource;
use clap::{Arg, ArgAction, ArgMatches, Args, Command, FromArgMatches};
use stackbench_model::settings::{RunSettings, SettingDef, SettingError, SETTINGS};

/// The settings given on the command line, as text, in table order.
#[derive(Debug, Clone, Default)]
pub struct SettingFlags {
    pub given: Vec<(&'static SettingDef, String)>,
}

impl SettingFlags {
    /// Applies the given flags over `settings`; the error names the flag.
    pub fn apply(&self, settings: &mut RunSettings) -> Result<(), String> {
        for (def, text) in &self.given {
            settings
                .set(def.name, text)
                .map_err(|e| flag_error(def, &e))?;
        }
        Ok(())
    }
}

/// `--flag VALUE: message`, the command-line form of a setting error.
pub fn flag_error(def: &SettingDef, e: &SettingError) -> String {
    format!("{} {}: {}", def.flag(), e.value, e.message)
}

fn help_of(def: &SettingDef) -> String {
    let mut help = def.help.trim().to_string();
    if !def.allowed.is_empty() && !def.switch {
        help.push_str(&format!(" [one of: {}]", def.allowed.join(", ")));
    }
    if let Some((lo, hi)) = def.range {
        help.push_str(&format!(" [range: {lo} to {hi}]"));
    }
    help
}

fn arg_of(def: &'static SettingDef) -> Arg {
    let arg = Arg::new(def.name)
        .long(def.name.replace('_', "-"))
        .help(help_of(def))
        .value_name(def.value_name)
        .action(ArgAction::Set)
        .allow_hyphen_values(true);
    if def.switch {
        // `--nodelay` = true; `--nodelay=false` for sweeps and overrides.
        arg.num_args(0..=1)
            .require_equals(true)
            .default_missing_value("true")
    } else {
        arg
    }
}

impl FromArgMatches for SettingFlags {
    fn from_arg_matches(m: &ArgMatches) -> Result<Self, clap::Error> {
        let mut flags = SettingFlags::default();
        flags.update_from_arg_matches(m)?;
        Ok(flags)
    }

    fn update_from_arg_matches(&mut self, m: &ArgMatches) -> Result<(), clap::Error> {
        for def in SETTINGS {
            if m.value_source(def.name) != Some(ValueSource::CommandLine) {
                continue;
            }
            if let Some(v) = m.get_one::<String>(def.name) {
                self.given.retain(|(d, _)| d.name != def.name);
                self.given.push((def, v.clone()));
            }
        }
        Ok(())
    }
}

impl Args for SettingFlags {
    fn augment_args(cmd: Command) -> Command {
        cmd.args(SETTINGS.iter().map(arg_of))
    }

    fn augment_args_for_update(cmd: Command) -> Command {
        Self::augment_args(cmd)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct T {
        #[command(flatten)]
        s: SettingFlags,
    }

    fn parse(args: &[&str]) -> Result<RunSettings, String> {
        let t = T::try_parse_from(std::iter::once("t").chain(args.iter().copied()))
            .map_err(|e| e.to_string())?;
        let mut s = RunSettings::default();
        t.s.apply(&mut s)?;
        Ok(s)
    }

    #[test]
    fn every_setting_has_a_flag() {
        let s = parse(&["--duration", "3s", "--client-cpus", "0", "--nodelay"]).unwrap();
        assert_eq!(s.text_of("duration").unwrap(), "3s");
        assert!(s.nodelay);
        let s = parse(&["--nodelay=false", "--crr-close", "abort"]).unwrap();
        assert!(!s.nodelay);
        assert_eq!(s.text_of("crr_close").unwrap(), "abort");
    }

    #[test]
    fn hyphen_values_reach_the_parser() {
        let e = parse(&["--duration", "-1s"]).unwrap_err();
        assert!(e.starts_with("--duration -1s: "), "{e}");
        assert!(e.contains("negative"), "{e}");
        let e = parse(&["--threads", "0"]).unwrap_err();
        assert_eq!(e, "--threads 0: out of range: use 1 to 1024");
    }
}
