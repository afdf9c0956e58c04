//! The `run` flags of every run setting, generated from the settings table
//! (`stackbench_model::settings::SETTINGS`): one `--name` per setting, its help
//! and placeholder from the table. Values are collected as text and parsed by
//! `RunSettings::set`, so a flag and a study key share grammar and errors.
//! Every value flag accepts leading hyphens, so `--duration -1s` reaches the
//! parser (which says a duration cannot be negative) instead of clap guessing
//! that `-1s` is a flag.
//!
//! The table's allowed values also reach clap as possible values, for shell
//! completion (`--protocol <TAB>`) and man pages only: they are not checked by
//! clap (see [`TableValues`]), so a bad value still gets the setting's own
//! message, the same as from a study key.

use std::ffi::OsStr;

use clap::builder::{PossibleValue, StringValueParser, TypedValueParser};
use clap::parser::ValueSource;
use clap::{Arg, ArgAction, ArgMatches, Args, Command, FromArgMatches, ValueHint};
use stackbench_model::settings::{PlainTarget, RunSettings, SettingDef, SettingError, SETTINGS};

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
        self.check_https_over_tcp(settings)
    }

    /// `https://` implies transport tls, so the table's default tcp is read
    /// as tls; a `--transport tcp` given with it asks for clear text to a
    /// TLS server, refused here, where a flag is told from the default.
    fn check_https_over_tcp(&self, settings: &RunSettings) -> Result<(), String> {
        let tcp_given = self
            .given
            .iter()
            .any(|(d, t)| d.name == "transport" && t.trim() == "tcp");
        let https = settings
            .target
            .as_ref()
            .and_then(|t| PlainTarget::parse(&t.0))
            .filter(|t| t.tls);
        match https {
            Some(t) if tcp_given => Err(format!(
                "--transport tcp: {}{} is HTTP over TLS, not clear text: drop --transport \
                 (https:// implies tls), or give http://{} for clear text",
                t.scheme, t.address, t.rest
            )),
            _ => Ok(()),
        }
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

/// Settings whose value names a file (or, for `kernel`, may): shells complete
/// file names for them. Every other open setting is a number, duration, list
/// or address, for which a file name is no candidate.
const PATH_SETTINGS: &[&str] = &["lab", "cert", "key", "ca", "kernel"];

/// What a shell completes for a setting's value: a closed one its allowed
/// values (no hint needed: with `Other`, bash would not end a completed value
/// with a space), a file one file names, any other nothing.
fn hint_of(def: &SettingDef) -> ValueHint {
    if PATH_SETTINGS.contains(&def.name) {
        ValueHint::FilePath
    } else if def.allowed.is_empty() {
        ValueHint::Other
    } else {
        ValueHint::Unknown
    }
}

/// The value parser of a setting flag: the text as given (what clap's default
/// parser returns), carrying the table's allowed values as clap possible
/// values without checking them. clap's own check would refuse `--protocol
/// HTTP` with its message before the setting's parser could say its own,
/// which a study key gets too; and "default" or the other spellings a type
/// accepts beyond its canonical names would be refused outright.
#[derive(Debug, Clone, Copy)]
struct TableValues(&'static [&'static str]);

impl TypedValueParser for TableValues {
    type Value = String;

    fn parse_ref(
        &self,
        cmd: &Command,
        arg: Option<&Arg>,
        value: &OsStr,
    ) -> Result<String, clap::Error> {
        StringValueParser::new().parse_ref(cmd, arg, value)
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        if self.0.is_empty() {
            return None;
        }
        Some(Box::new(self.0.iter().map(|v| PossibleValue::new(*v))))
    }
}

fn arg_of(def: &'static SettingDef) -> Arg {
    let arg = Arg::new(def.name)
        .long(def.name.replace('_', "-"))
        .visible_aliases(def.aliases())
        .help(help_of(def))
        .value_name(def.value_name)
        .value_parser(TableValues(def.allowed))
        .value_hint(hint_of(def))
        // The help already ends in "[one of: …]" (`help_of`).
        .hide_possible_values(true)
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
    use clap::{CommandFactory, Parser};
    use stackbench_model::AppProtocol;

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
        assert_eq!(s.nodelay, Some(true));
        let s = parse(&["--nodelay=false", "--crr-close", "abort"]).unwrap();
        assert_eq!(s.nodelay, Some(false));
        assert_eq!(s.text_of("crr_close").unwrap(), "abort");
    }

    /// One or more bad values per setting; every setting must have one, so a
    /// new setting cannot skip this table.
    const BAD: &[(&str, &str)] = &[
        ("kernel", "6.1"),
        ("guest_vcpus", "0"),
        ("guest_memory", "1MiB"),
        ("guest_accel", "hvf"),
        ("peer_kernel", "6.12"),
        ("guest_queues", "0"),
        ("guest_queues", "9"),
        ("duration", "10"),
        ("duration", "-1s"),
        ("duration", "25h"),
        ("duration", "0s"),
        ("warmup", "2 parsecs"),
        ("warmup", "2h"),
        ("transactions", "0"),
        ("transactions", "-5"),
        ("transactions", "1e3"),
        ("threads", "0"),
        ("threads", "4096"),
        ("threads", "two"),
        ("server_threads", "0"),
        ("class_workers", "maybe"),
        ("client_cpus", "0-x"),
        ("client_cpus", "3-1"),
        ("server_cpus", "5000"),
        ("lab", " "),
        ("lab_from", " "),
        ("lab_to", " "),
        ("link_rate", "100mb"),
        ("link_rate", "10kbit"),
        ("link_mtu", "40"),
        ("link_mtu", "9k0"),
        ("link_offloads", "fast"),
        ("link_offloads", "tso=maybe"),
        ("link_delay", "10"),
        ("link_delay", "11s"),
        ("link_jitter", "-1ms"),
        ("link_loss", "lots"),
        ("link_loss", "101%"),
        ("link_qdisc", "cake"),
        ("link_fq_maxrate", "40Gbit"),
        ("link_ipsec", "aes-gcm-256"),
        ("link_ipsec_mode", "beet"),
        ("target", " "),
        ("server_pid", "nginx"),
        ("server_pid", "0"),
        ("server_pid", "12,-3"),
        ("ipv6", "yes"),
        ("spin", "1"),
        ("spin", "client"),
        ("gen_sched", "slice:50us"),
        ("gen_sched", "fifo:0"),
        ("gen_sched", "deadline"),
        ("nodelay", "on"),
        ("waitall", "maybe"),
        ("quickack", "TRUE"),
        ("sndbuf", "256kb"),
        ("sndbuf", "2GB"),
        ("rcvbuf", "10B"),
        ("crr_close", "later"),
        ("transport", "sctp"),
        ("io", "aio"),
        ("tls_version", "1.1"),
        ("cipher", "C030"),
        ("groups", "P-384"),
        ("cert_type", "rsa1024"),
        ("cert", " "),
        ("key", " "),
        ("ca", " "),
        ("insecure", "maybe"),
        ("resume_ratio", "1.5"),
        ("rekey", "65GB"),
        ("h2_window", "65534"),
        ("h2_window", "2147483648"),
        ("h2_connection_window", "65534"),
        ("h2_connection_window", "2147483648"),
        ("h2_max_frame", "16383"),
        ("h2_max_frame", "16777216"),
        ("http_error_share", "101%"),
        ("http_error_share", "half"),
        ("tn3270e", "yes"),
        ("tn3270e", "TN3270E"),
        ("tn3270_model", "1"),
        ("tn3270_model", "6"),
        ("tn3270_model", "2E"),
        ("tn3270_lu", "TOOLONGNAME"),
        ("tn3270_lu", "1LU"),
        ("tn3270_lu", "LU-1"),
        ("responder_tn3270e", "on"),
        ("tn3270_script", " "),
        ("responder_tn3270_app", "cics"),
        ("amqp_pattern", "rpc"),
        ("amqp_persistent", "durable"),
        ("amqp_credit", "0"),
        ("amqp_credit", "100001"),
        ("amqp_body", "ones"),
        ("amqp_compress", "zlib"),
        ("amqp_queues", "per-user"),
        ("amqp_queue", "my queue"),
        ("tls_mode", "hardware"),
        ("priority", "7"),
        ("priority", "6,high"),
        ("busy_poll", "50"),
        ("busy_poll", "1s"),
        ("repeat", "0"),
        ("repeat", "1001"),
        ("confidence", "99"),
        ("confidence", "100,5"),
        ("confidence", "95,0"),
        ("iterations", "30,3"),
        ("iterations", "0,3"),
        ("think", "-1s"),
        ("think", "gauss:1s"),
        ("think", "uniform:5s..1s"),
        ("think", "25h"),
        ("rate", "0/s"),
        ("rate", "5000"),
        ("rate", "1000000000/s"),
        ("arrivals", "bursty"),
        ("ramp", "0/s"),
        ("ramp", "fast"),
        ("seed", "x"),
        ("agents", "0"),
        ("agents", "2000"),
        ("launcher", "pbs"),
        ("agent_listen", " "),
        ("token_file", " "),
        ("amqp_password_file", " "),
        ("metrics_listen", " "),
        ("link_rps_cpus", "1-0"),
        ("link_rps_cpus", "x"),
        ("link_rps_flow_cnt", "0"),
        ("link_rps_flow_cnt", "2000000"),
        ("link_napi_defer_hard_irqs", "-1"),
        ("link_napi_defer_hard_irqs", "2147483648"),
        ("link_gro_flush_timeout", "2s"),
        ("link_gro_flush_timeout", "soon"),
        ("link_txqueuelen", "0"),
        ("link_txqueuelen", "2000000"),
        ("host_policy_rules", "-1"),
        ("host_policy_rules", "1000000"),
        ("host_policy_conntrack", "maybe"),
        ("host_policy_log", "loud"),
        ("host_policy_reset_port", "0"),
        ("router_flowtable", "maybe"),
        ("lab_targets", "0"),
        ("lab_targets", "65"),
    ];

    /// [`BAD`] and the bad values of settings whose spellings come from a
    /// table, derived from it so that a new row cannot be listed as bad:
    /// every application protocol's name in capitals (spellings are lower
    /// case) and with a suffix no row has.
    fn bad_values() -> Vec<(&'static str, String)> {
        let protocols = AppProtocol::NAMES.iter().flat_map(|name| {
            let upper = name.to_uppercase();
            let suffixed = format!("{name}+");
            assert!(!AppProtocol::NAMES.contains(&upper.as_str()));
            [upper, suffixed].map(|v| ("protocol", v))
        });
        BAD.iter()
            .map(|(n, v)| (*n, v.to_string()))
            .chain(protocols)
            .collect()
    }

    /// The message a study key gets for `name = "value"`.
    fn study_error(name: &str, value: &str) -> String {
        let text = format!("name = \"t\"\nworkloads = [\"RR1(1B/1B)\"]\n{name} = \"{value}\"\n");
        stackbench_model::study::parse_study(&text, "t.toml")
            .expect_err("a bad value is refused")
            .to_string()
    }

    #[test]
    fn a_bad_value_reads_the_same_from_a_flag_and_a_study_key() {
        let bad = bad_values();
        for def in SETTINGS {
            assert!(
                bad.iter().any(|(n, _)| *n == def.name),
                "no bad value for {} in the table",
                def.name
            );
        }
        for (name, value) in &bad {
            let flag = format!("--{}={value}", name.replace('_', "-"));
            let from_flag = parse(&[flag.as_str()]).expect_err(&flag);
            let prefix = format!("--{} {value}: ", name.replace('_', "-"));
            let message = from_flag
                .strip_prefix(&prefix)
                .unwrap_or_else(|| panic!("{from_flag:?} should start with {prefix:?}"));
            let column = name.len() + 4;
            let from_key = study_error(name, value);
            assert_eq!(
                from_key,
                format!("t.toml:3:{column}: {name} = {value}: {message}"),
                "{name} = {value}"
            );
            assert!(!message.contains('\n') && !message.is_empty());
        }
    }

    /// Every spelling the README documents gives the same value from a flag,
    /// a study key and (for durations and sizes) a plan-file value.
    #[test]
    fn documented_spellings_work_everywhere() {
        let cases: &[(&str, &[&str])] = &[
            (
                "duration",
                &[
                    "10s", "500ms", "1.5s", "2m", "2min", "1h", "2500us", "2500µs",
                ],
            ),
            (
                "sndbuf",
                &["256kB", "256KB", "256KiB", "1MB", "1MiB", "1.5kB", "4096B"],
            ),
            ("client_cpus", &["0", "0-1", "0,1", "1,0", "0-1,1"]),
            ("transactions", &["100000", "256K", "1M"]),
        ];
        for (name, spellings) in cases {
            for text in *spellings {
                let flag = format!("--{}={text}", name.replace('_', "-"));
                let from_flag = parse(&[flag.as_str()]).unwrap_or_else(|e| panic!("{e}"));
                let study =
                    format!("name = \"t\"\nworkloads = [\"RR1(1B/1B)\"]\n{name} = \"{text}\"\n");
                let steps = stackbench_model::study::parse_study(&study, "t.toml")
                    .and_then(|s| s.plan(&[], "t.toml"))
                    .unwrap_or_else(|e| panic!("{e}"));
                assert_eq!(steps[0].settings, from_flag, "{name} = {text}");
                match *name {
                    "duration" => {
                        let secs = stackbench_plan::units::parse_duration_s("think", text).unwrap();
                        let want = from_flag.duration.unwrap().0.as_secs_f64();
                        assert!((secs - want).abs() < 1e-12, "{text}: plan {secs} s");
                    }
                    "sndbuf" => {
                        let bytes = stackbench_plan::units::parse_bytes("per-conn", text).unwrap();
                        assert_eq!(bytes, from_flag.sndbuf.unwrap().0 as f64, "{text}");
                    }
                    _ => {}
                }
            }
        }
    }

    /// Completion and man pages see the table: every closed setting offers
    /// its allowed values, every file setting files, and a value outside the
    /// allowed ones still reaches the setting's own parser.
    #[test]
    fn flags_carry_the_tables_values_for_completion() {
        let cmd = T::command();
        for def in SETTINGS {
            let arg = cmd
                .get_arguments()
                .find(|a| a.get_id() == def.name)
                .unwrap_or_else(|| panic!("no flag for {}", def.name));
            let values: Vec<String> = arg
                .get_possible_values()
                .iter()
                .map(|v| v.get_name().to_string())
                .collect();
            assert_eq!(values, def.allowed, "{}", def.name);
        }
        for name in PATH_SETTINGS {
            let arg = cmd.get_arguments().find(|a| a.get_id() == *name);
            assert_eq!(
                arg.map(|a| a.get_value_hint()),
                Some(ValueHint::FilePath),
                "{name} is no setting with a file hint"
            );
        }
        let e = parse(&["--protocol", "HTTP"]).unwrap_err();
        assert!(e.starts_with("--protocol HTTP: "), "{e}");
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
