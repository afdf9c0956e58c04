//! The environment section of a study in the report: the configuration
//! each variant ran with (hosts, CPUs, guest VM, lab links, sysctls, TLS,
//! storage per connection), one line per item, per variant where they differ.

use super::input::{StudyInput, Variants};
use crate::store::StoredRun;
use stackbench_model::units::format_cpu_list;

fn cpu_side(cpus: &[usize]) -> String {
    if cpus.is_empty() {
        "not pinned".to_string()
    } else {
        format!("{} ({})", cpus.len(), format_cpu_list(cpus))
    }
}

pub(crate) fn environment_items(input: &StudyInput, v: &Variants, keys: &[String]) -> Vec<String> {
    let mut items = Vec::new();
    let mut add = |label: &str, value: Option<String>| {
        if let Some(value) = value {
            items.push(format!("{label}: {value}"));
        }
    };
    add(
        "CPUs per side",
        v.per_variant(|r| {
            Some(format!(
                "client {}, server {}",
                cpu_side(&r.env.client_cpus),
                cpu_side(&r.env.server_cpus)
            ))
        }),
    );
    add(
        "Host CPU",
        v.per_variant(|r| {
            Some(format!(
                "{} × {}",
                r.env.cpu_model.clone()?,
                r.env.cpu_count
            ))
        }),
    );
    add("Kernel", v.per_variant(|r| r.env.kernel_release.clone()));
    add(
        "Guest VM",
        v.per_variant(|r| r.env.guest.as_ref().map(|g| g.summary())),
    );
    add(
        "Frequency governor",
        v.per_variant(|r| r.env.governor.clone()),
    );
    add(
        "Interface",
        v.per_variant(|r| {
            let i = r.env.interface.as_ref()?;
            let mtu = i.mtu_bytes.map_or("unknown".into(), |m| m.to_string());
            let offloads: Vec<String> =
                i.offloads.iter().map(|(k, v)| format!("{k} {v}")).collect();
            let off = if offloads.is_empty() {
                String::new()
            } else {
                format!("; offloads: {}", offloads.join(", "))
            };
            Some(format!("{}, MTU {mtu}{off}", i.name))
        }),
    );
    add(
        "Lab path",
        v.per_variant(|r| r.env.lab.as_ref().map(|l| l.path_text())),
    );
    add(
        "Lab link (kernel's values)",
        v.per_variant(|r| {
            let lab = r.env.lab.as_ref()?;
            let ends: Vec<String> = lab.interfaces.iter().map(|i| i.summary()).collect();
            Some(ends.join("; "))
        }),
    );
    add(
        "Lab link utilisation (payload over the window, % of the path's rate, to server / to client; mean over runs)",
        link_utilisation(v),
    );
    if v.groups
        .iter()
        .flat_map(|g| &g.1)
        .any(|r| r.env.lab.as_ref().is_some_and(|l| l.policy.is_some()))
    {
        add(
            "Lab host policy (kernel's)",
            v.per_variant(|r| {
                let lab = r.env.lab.as_ref()?;
                Some(lab.policy.as_ref().map_or("none".into(), |p| p.summary()))
            }),
        );
    }
    // Inbound steering only when some variant asked for it, so reports of
    // lab runs without it read as before.
    if v.groups
        .iter()
        .flat_map(|g| &g.1)
        .any(|r| r.env.lab.as_ref().is_some_and(|l| !l.steering.is_empty()))
    {
        add(
            "Lab inbound steering (kernel's RPS CPUs)",
            v.per_variant(|r| {
                let lab = r.env.lab.as_ref()?;
                let mut cpus: Vec<&str> = lab
                    .steering
                    .iter()
                    .flat_map(|s| &s.queues)
                    .map(|q| {
                        if q.rps_cpus.is_empty() {
                            "off"
                        } else {
                            q.rps_cpus.as_str()
                        }
                    })
                    .collect();
                cpus.dedup();
                Some(if cpus.is_empty() {
                    "off".into()
                } else {
                    cpus.join(" / ")
                })
            }),
        );
        add(
            "NET_RX softirqs per CPU in the window",
            v.per_variant(|r| {
                let window = r.env.lab.as_ref()?.net_rx_window();
                (!window.is_empty()).then(|| {
                    window
                        .iter()
                        .enumerate()
                        .map(|(cpu, n)| format!("CPU {cpu}: {n}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                })
            }),
        );
    }
    // Load distribution and the routing fast path only where some variant
    // has them; shares rather than counts, so the workloads of a variant
    // (of different rates) read alike.
    let any_lab = |f: fn(&stackbench_record::LabEnvironment) -> bool| {
        v.groups
            .iter()
            .flat_map(|g| &g.1)
            .any(|r| r.env.lab.as_ref().is_some_and(f))
    };
    if any_lab(|l| !l.distribution.is_empty()) {
        add(
            "Lab load distribution (IPVS connections per target)",
            v.per_variant(|r| {
                let targets = &r.env.lab.as_ref()?.distribution;
                let total: u64 = targets.iter().map(|t| t.connections).sum();
                Some(if targets.is_empty() {
                    "none".into()
                } else {
                    targets
                        .iter()
                        .map(|t| {
                            let pct = 100.0 * t.connections as f64 / total.max(1) as f64;
                            format!("{} {pct:.0}%", t.host)
                        })
                        .collect::<Vec<_>>()
                        .join(", ")
                })
            }),
        );
    }
    if any_lab(|l| !l.flowtables.is_empty()) {
        add(
            "Lab routing fast path (packets on the router's full path)",
            v.per_variant(|r| {
                let tables = &r.env.lab.as_ref()?.flowtables;
                Some(if tables.is_empty() {
                    "off".into()
                } else {
                    tables
                        .iter()
                        .map(|t| {
                            let rx = t.rx_packets.unwrap_or(0).max(1) as f64;
                            let pct = 100.0 * t.slow_path_packets as f64 / rx;
                            format!("{}: flowtable, {pct:.1}% of packets", t.namespace)
                        })
                        .collect::<Vec<_>>()
                        .join("; ")
                })
            }),
        );
    }
    let sysctl = |name: &'static str| move |r: &StoredRun| r.env.sysctls.get(name).cloned();
    add(
        "TCP congestion control",
        v.per_variant(sysctl("net.ipv4.tcp_congestion_control")),
    );
    add("tcp_rmem", v.per_variant(sysctl("net.ipv4.tcp_rmem")));
    add("tcp_wmem", v.per_variant(sysctl("net.ipv4.tcp_wmem")));
    // TLS items only when some variant ran TLS (clear text says so then).
    let tls = v.groups.iter().flat_map(|g| &g.1);
    if tls.flat_map(|r| &r.record.classes).any(|c| c.tls.is_some()) {
        add(
            "TLS negotiated",
            v.per_variant(|r| crate::output::tls_negotiated(&r.record)),
        );
        add(
            "TLS CPU µs per handshake",
            v.per_variant(|r| crate::output::tls_handshake_cpu(&r.record)),
        );
    }
    let storage = |r: &StoredRun| crate::output::storage_per_conn(&r.record);
    add("RSS per connection", v.per_variant(storage));
    // Against a plain server: which processes were its side, or why none.
    let server = |r: &StoredRun| crate::output::server_identity(&r.record);
    add("Server side", v.per_variant(server));
    add("Workloads", Some(keys.join(", ")));
    add(
        "Runs",
        v.per_variant(|r| {
            let s = &r.record.settings;
            let window = match (s.duration, s.transactions) {
                (_, Some(n)) => format!("{n} transactions per class"),
                (d, None) => format!("{} s", d?.0.as_secs_f64()),
            };
            let warmup = s.warmup.map_or(0.0, |w| w.0.as_secs_f64());
            Some(format!("{window} measured after {warmup} s warm-up"))
        }),
    );
    add("Repetitions", repetitions(input, v));
    for (i, (name, _)) in v.groups.iter().enumerate() {
        let role = if i == 0 { " (baseline)" } else { "" };
        add(
            &format!("Variant {name}{role}"),
            Some(variant_settings(input, v, i)),
        );
    }
    items
}

/// Settings that differ from run to run without being a choice of the study
/// (placement, addresses, window lengths shown elsewhere, and the random
/// seed each run draws unless one is given).
const INCIDENTAL: [&str; 8] = [
    "seed",
    "target",
    "client_cpus",
    "server_cpus",
    "threads",
    "server_threads",
    "duration",
    "warmup",
];

/// Labels every study run carries; the rest are a variant's own.
fn is_study_label(key: &str) -> bool {
    ["study", "variant", "repetition", "workload", "sweep"].contains(&key)
        || key.starts_with("sweep.")
}

/// `(name, text)` of a run's settings that are a choice (see [`INCIDENTAL`]).
fn chosen(r: &StoredRun) -> Vec<(&'static str, String)> {
    r.record
        .settings
        .describe()
        .into_iter()
        .filter(|(n, _)| !INCIDENTAL.contains(n))
        .collect()
}

/// `3s (runs 1, 2), 1s (run 12)`: each distinct text of setting `name` over
/// `runs`, with the runs that had it.
fn texts_with_runs(name: &str, runs: &[&StoredRun]) -> String {
    let mut seen: Vec<(String, Vec<i64>)> = Vec::new();
    for r in runs {
        let text = r.record.settings.text_of(name).unwrap_or_default();
        match seen.iter_mut().find(|(t, _)| *t == text) {
            Some((_, ids)) => ids.push(r.id),
            None => seen.push((text, vec![r.id])),
        }
    }
    seen.iter()
        .map(|(t, ids)| {
            let ids: Vec<String> = ids.iter().map(i64::to_string).collect();
            let noun = if ids.len() == 1 { "run" } else { "runs" };
            format!("{t} ({noun} {})", ids.join(", "))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The runs per workload (and sweep point) of each variant, counted from the
/// stored runs shown — not the study file's `repetitions`, which a
/// `--repetitions` flag or an interrupted study makes wrong — with the file's
/// number beside it when they differ.
fn repetitions(input: &StudyInput, v: &Variants) -> Option<String> {
    let per_variant: Vec<(String, usize, usize)> = v
        .groups
        .iter()
        .map(|(name, runs)| {
            let mut counts: Vec<(String, usize)> = Vec::new();
            for r in runs {
                let point: Vec<String> = r
                    .labels
                    .iter()
                    .filter(|(k, _)| k.starts_with("sweep."))
                    .map(|(k, val)| format!("{k}={val}"))
                    .collect();
                let workload = r
                    .labels
                    .get("workload")
                    .cloned()
                    .or_else(|| r.record.classes.first().map(|c| c.workload.clone()));
                let key = format!("{} {}", workload.unwrap_or_default(), point.join(" "));
                match counts.iter_mut().find(|(k, _)| *k == key) {
                    Some((_, n)) => *n += 1,
                    None => counts.push((key, 1)),
                }
            }
            let lo = counts.iter().map(|c| c.1).min().unwrap_or(0);
            let hi = counts.iter().map(|c| c.1).max().unwrap_or(0);
            (name.clone(), lo, hi)
        })
        .collect();
    let (_, lo, hi) = per_variant.first()?.clone();
    let range = |lo: usize, hi: usize| {
        if lo == hi {
            lo.to_string()
        } else {
            format!("{lo}–{hi}")
        }
    };
    let text = if per_variant.iter().all(|(_, l, h)| (*l, *h) == (lo, hi)) {
        format!("{} per workload and variant, interleaved", range(lo, hi))
    } else {
        let each: Vec<String> = per_variant
            .iter()
            .map(|(n, l, h)| format!("{n}: {}", range(*l, *h)))
            .collect();
        format!("per workload, {} (the variants differ)", each.join("; "))
    };
    let asked = input.study.as_ref().map(|s| s.repetitions);
    Some(match asked {
        Some(a)
            if per_variant
                .iter()
                .any(|(_, l, h)| (*l, *h) != (a as usize, a as usize)) =>
        {
            format!("{text} (the study file asks for {a})")
        }
        _ => text,
    })
}

/// Where the study file disagrees with the stored settings of the runs shown
/// (a flag given to `study`, such as `--think 3s`, is not in the stored
/// file): one sentence per setting, so text taken from the file — its
/// description — is not read as what ran.
pub(crate) fn study_file_mismatches(input: &StudyInput, runs: &[&StoredRun]) -> Vec<String> {
    let Some(study) = &input.study else {
        return Vec::new();
    };
    let defaults = stackbench_model::settings::RunSettings::default();
    let mut out = Vec::new();
    let mut check = |name: &str, text: &str, runs: Vec<&StoredRun>| {
        let mut expected = defaults.clone();
        if expected.set(name, text).is_err() {
            return;
        }
        let want = expected.text_of(name);
        // A default ("auto") is resolved by the run and stored resolved.
        if want == defaults.text_of(name) {
            return;
        }
        // A swept setting takes the sweep point's value by design.
        let runs: Vec<&StoredRun> = runs
            .into_iter()
            .filter(|r| !r.labels.contains_key(&format!("sweep.{name}")))
            .collect();
        if runs.is_empty() || runs.iter().all(|r| r.record.settings.text_of(name) == want) {
            return;
        }
        out.push(format!(
            "the study file sets {name} = {}, but its runs were measured with {name} = {}",
            want.unwrap_or_default(),
            texts_with_runs(name, &runs)
        ));
    };
    for (name, text) in &study.settings.0 {
        check(name, text, runs.to_vec());
    }
    for var in &study.variants {
        let own: Vec<&StoredRun> = runs
            .iter()
            .copied()
            .filter(|r| r.labels.get("variant") == Some(&var.name))
            .collect();
        for (name, text) in &var.settings.0 {
            check(name, text, own.clone());
        }
    }
    out
}

/// What distinguishes a variant, from its runs' stored settings: those that
/// differ from the defaults (the baseline) or from the baseline's (the
/// others), its own labels, and the settings its runs do not share. The
/// study file gives only the variant's description.
fn variant_settings(input: &StudyInput, v: &Variants, i: usize) -> String {
    let (name, runs) = &v.groups[i];
    let desc = input
        .study
        .as_ref()
        .and_then(|s| s.variants.iter().find(|x| &x.name == name))
        .filter(|var| !var.description.is_empty())
        .map_or(String::new(), |var| format!("{} — ", var.description));
    let Some(first) = runs.first() else {
        return format!("{desc}no runs");
    };
    let reference: Vec<(&'static str, String)> = if i == 0 {
        // The defaults as a run stores them: `nodelay` resolved for the
        // run's transport (a record holds the value applied, never `default`).
        let mut d = stackbench_model::settings::RunSettings {
            transport: v.groups[0].1[0].record.settings.transport,
            ..Default::default()
        };
        d.nodelay = Some(d.socket_options().nodelay);
        d.describe().into_iter().collect()
    } else {
        chosen(v.groups[0].1[0])
    };
    let mut parts: Vec<String> = chosen(first)
        .into_iter()
        .filter(|(n, t)| !reference.iter().any(|(rn, rt)| rn == n && rt == t))
        .map(|(n, t)| format!("{n} = {t}"))
        .collect();
    parts.extend(
        first
            .labels
            .iter()
            .filter(|(k, _)| !is_study_label(k))
            .map(|(k, val)| format!("{k} = {val}")),
    );
    let mut text = match (parts.is_empty(), i == 0) {
        (true, true) => "default settings".to_string(),
        (true, false) => "same settings as the baseline".to_string(),
        (false, _) => parts.join(", "),
    };
    let differing: Vec<String> = chosen(first)
        .into_iter()
        .filter(|(n, t)| {
            runs.iter()
                .any(|r| r.record.settings.text_of(n).as_deref() != Some(t.as_str()))
        })
        .map(|(n, _)| format!("{n} = {}", texts_with_runs(n, runs)))
        .collect();
    if !differing.is_empty() {
        text.push_str(&format!("; its runs differ: {}", differing.join("; ")));
    }
    format!("{desc}{text}")
}

/// Per variant, each class's (and mix's) payload
/// each way as a share of the path's rate, the mean over the variant's runs;
/// `None` when no run crossed a link with a rate.
fn link_utilisation(v: &Variants) -> Option<String> {
    let per_variant: Vec<String> = v
        .groups
        .iter()
        .filter_map(|(name, runs)| {
            let mut classes: Vec<(&str, Vec<(f64, f64)>)> = Vec::new();
            for u in runs
                .iter()
                .filter_map(|r| r.env.lab.as_ref())
                .flat_map(|l| &l.utilisation)
            {
                match classes.iter_mut().find(|(c, _)| *c == u.class) {
                    Some((_, xs)) => xs.push((u.to_server_pct, u.to_client_pct)),
                    None => classes.push((&u.class, vec![(u.to_server_pct, u.to_client_pct)])),
                }
            }
            if classes.is_empty() {
                return None;
            }
            let each: Vec<String> = classes
                .iter()
                .map(|(class, xs)| {
                    let n = xs.len() as f64;
                    let up = xs.iter().map(|x| x.0).sum::<f64>() / n;
                    let down = xs.iter().map(|x| x.1).sum::<f64>() / n;
                    format!("{class} {up:.1}% / {down:.1}%")
                })
                .collect();
            Some(format!("{name}: {}", each.join(", ")))
        })
        .collect();
    (!per_variant.is_empty()).then(|| per_variant.join("; "))
}
