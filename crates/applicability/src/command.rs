//! The steps of `stackbench applicability` between the command line and
//! the printed record: the input checked before anything is watched
//! ([`check`], every refusal one line naming the flag and the fix), the
//! window observed, the figures and the census summed, the projection run
//! and stored with the observation in its environment ([`execute`]). The
//! cli keeps the flags and the printing.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use stackbench_lab::{netns, read_lab, IpNet};
use stackbench_model::duration::parse_duration;
use stackbench_model::settings::{CipherSuite, SettingValue};
use stackbench_model::size::parse_size;
use stackbench_record::applicability::{Applicability, Thresholds};
use stackbench_results::store::{parse_labels, Labels, Store};
use stackbench_runner::{environment_of, RunError, Runner};

use crate::classify::Selection;
use crate::observe::{observe, Watch};
use crate::project::{project, TRANSPORTS};
use crate::summary::summarize;

/// The command's input as given on the command line.
#[derive(Debug, Clone, Default)]
pub struct Input {
    pub window: String,
    pub interval: String,
    pub subnets: Vec<String>,
    pub port: Option<u16>,
    /// `--lab FILE --host NAME`: watch that lab host's namespace.
    pub lab: Option<(PathBuf, String)>,
    pub min_lifetime: String,
    pub min_bytes: String,
    /// Run the projection (`--no-project` clears it).
    pub project: bool,
    pub project_for: String,
    /// Take the crypto census too.
    pub census: bool,
    /// Census: cipher suites (IANA hex code or name) whose server ports
    /// the census names for a reset.
    pub disallow: Vec<String>,
    pub labels: Vec<String>,
    pub db: Option<PathBuf>,
    /// Store the projection runs (`--no-store` clears it).
    pub store: bool,
}

/// Why the command stopped.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Bad input: one line naming the flag and the fix (exit status 2).
    #[error("{0}")]
    Input(String),
    /// The kernel refused the observation (sock_diag, the namespace).
    #[error("the observation failed: {0}")]
    Observe(#[from] io::Error),
    /// A projection run failed.
    #[error(transparent)]
    Run(#[from] RunError),
}

fn input<T>(message: String) -> Result<T, Error> {
    Err(Error::Input(message))
}

/// Checked input: what to watch and what to do with it.
pub struct Checked {
    pub watch: Watch,
    pub selection: Selection,
    /// `this host`, or `lab FILE host NAME`.
    pub scope: String,
    /// The window of each projection run; `None`: no projection.
    pub project_for: Option<Duration>,
    /// Suites (IANA codes) whose server ports the census names for a reset.
    pub disallowed: Vec<u16>,
    labels: Labels,
    store: Option<Store>,
}

/// A duration flag that must be longer than zero.
fn positive(flag: &str, text: &str) -> Result<Duration, Error> {
    match parse_duration(text) {
        Ok(d) if !d.is_zero() => Ok(d),
        Ok(_) => input(format!(
            "--{flag} {text}: must be longer than 0, e.g. --{flag} 10s"
        )),
        Err(e) => input(format!("--{flag} {text}: {e}")),
    }
}

/// The namespace and scope of `--lab FILE --host NAME`, refused when the
/// host is not in the file or the lab is not up.
fn lab_host(file: &Path, host: &str) -> Result<(String, String), Error> {
    let lab = match read_lab(file) {
        Ok(l) => l,
        Err(e) => return input(format!("--lab {}: {e}", file.display())),
    };
    if lab.host(host).is_none() {
        let names: Vec<&str> = lab.hosts.iter().map(|h| h.name.as_str()).collect();
        return input(format!(
            "--host {host}: no such host in {}: use one of {}",
            file.display(),
            names.join(", ")
        ));
    }
    let ns = lab.namespace(host);
    if !netns::exists(&ns) {
        return input(format!(
            "--host {host}: lab host is not up (no namespace {ns}): run `stackbench lab up {}` first (as root)",
            file.display()
        ));
    }
    Ok((ns, format!("lab {} host {host}", file.display())))
}

/// A suite by its IANA hex code (`C02F`, `0xC02F`), its IANA name (any
/// tls-parser knows) or one of the `--cipher` setting's OpenSSL names.
fn suite_code(text: &str) -> Result<u16, Error> {
    let t = text.trim();
    let hex = t.trim_start_matches("0x").trim_start_matches("0X");
    if hex.len() == 4 {
        if let Ok(c) = u16::from_str_radix(hex, 16) {
            return Ok(c);
        }
    }
    if let Some(s) = tls_parser::TlsCipherSuite::from_name(t) {
        return Ok(s.id.0);
    }
    if let Ok(s) = <CipherSuite as SettingValue>::parse(t) {
        return Ok(s.code);
    }
    input(format!(
        "--disallow {t}: not a cipher suite: give its IANA hex code (C02F) or name (TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256)"
    ))
}

/// Checks every flag (and opens the store) before anything is watched.
pub fn check(i: &Input) -> Result<Checked, Error> {
    let window = positive("window", &i.window)?;
    let interval = positive("interval", &i.interval)?;
    if interval > window {
        return input(format!(
            "--interval {}: longer than --window {}: use a shorter interval",
            i.interval, i.window
        ));
    }
    let project_for = positive("project-for", &i.project_for)?;
    let min_lifetime = parse_duration(&i.min_lifetime)
        .or_else(|e| input(format!("--min-lifetime {}: {e}", i.min_lifetime)))?;
    let min_bytes =
        parse_size(&i.min_bytes, &i.min_bytes).or_else(|e| input(format!("--min-bytes: {e}")))?;
    let subnets = i
        .subnets
        .iter()
        .map(|t| IpNet::parse(t).or_else(|e| input(format!("--subnet {t}: {e}"))))
        .collect::<Result<Vec<_>, _>>()?;
    if !i.census && !i.disallow.is_empty() {
        return input("--disallow: names suites for the crypto census: add --census".into());
    }
    let disallowed = i
        .disallow
        .iter()
        .map(|t| suite_code(t))
        .collect::<Result<Vec<_>, _>>()?;
    let labels = parse_labels(&i.labels).or_else(|e| input(format!("--label: {e}")))?;
    let (namespace, scope) = match &i.lab {
        Some((file, host)) => {
            let (ns, scope) = lab_host(file, host)?;
            (Some(ns), scope)
        }
        None => (None, "this host".to_string()),
    };
    let store = if i.store && i.project {
        Some(Store::open(i.db.as_deref()).or_else(|e| input(format!("--db: {e}")))?)
    } else {
        None
    };
    Ok(Checked {
        watch: Watch {
            window,
            interval,
            namespace,
            capture: i.census,
        },
        selection: Selection {
            subnets,
            port: i.port,
            thresholds: Thresholds {
                min_lifetime_s: min_lifetime.as_secs_f64(),
                min_bytes,
            },
        },
        scope,
        project_for: i.project.then_some(project_for),
        disallowed,
        labels,
        store,
    })
}

/// What the window gave.
pub struct Outcome {
    pub record: Applicability,
    /// Warnings and what was stored, one line each, for stderr.
    pub notes: Vec<String>,
    /// Ctrl-C ended the window early (nothing projected or stored).
    pub interrupted: bool,
}

/// Watches, sums, projects and stores; `started` is called once the first
/// dump is taken (a script waits for it before it starts its traffic).
pub fn execute(
    c: Checked,
    stop: &AtomicBool,
    started: &(dyn Fn() + Sync),
    runner: &mut Runner,
) -> Result<Outcome, Error> {
    let observed = observe(&c.watch, stop, started)?;
    let mut notes = Vec::new();
    if let Some(why) = &observed.close_events_refused {
        notes.push(format!(
            "warning: no close events ({why}): connections that opened and closed within one --interval were not seen"
        ));
    }
    if observed.close_events_overran {
        notes.push("warning: the kernel dropped close events (too many at once): short connections are undercounted".into());
    }
    if let Some(Err(why)) = &observed.capture {
        notes.push(format!(
            "warning: the census read no handshakes: {why}; user-space TLS reads as unknown"
        ));
    }
    if let Some(Ok(cap)) = &observed.capture {
        if cap.dropped > 0 {
            notes.push(format!(
                "warning: the capture dropped {} of {} frames: some handshakes may be missing",
                cap.dropped,
                cap.frames + cap.dropped
            ));
        }
        if cap.untracked > 0 {
            notes.push(format!(
                "warning: the capture followed at most {} connections at once: {} more read as unknown",
                crate::protection::capture::MAX_FLOWS,
                cap.untracked
            ));
        }
    }
    let interrupted = observed.window < c.watch.window;
    let (mut record, classes) =
        summarize(&observed, &c.watch, &c.selection, &c.scope, &c.disallowed);
    let Some(window) = c
        .project_for
        .filter(|_| !interrupted && !classes.is_empty())
    else {
        return Ok(Outcome {
            record,
            notes,
            interrupted,
        });
    };
    let (runs, projection) = project(runner, &classes, window)?;
    record.projection = Some(projection);
    if let Some(mut store) = c.store {
        let stamp = format!("{:.0}", record.started_unix_s);
        for (run, transport) in runs.iter().zip(TRANSPORTS) {
            let mut labels = c.labels.clone();
            labels.insert("applicability".into(), stamp.clone());
            labels.insert("applicability.transport".into(), transport.into());
            let mut env = environment_of(run);
            env.applicability = Some(record.clone());
            notes.push(match store.save(run, &labels, &env) {
                Ok(id) => format!("stored the {transport} projection as run {id}"),
                Err(e) => format!("warning: the {transport} projection was not stored: {e}"),
            });
        }
    }
    Ok(Outcome {
        record,
        notes,
        interrupted,
    })
}
