//! The environment section of a study in the report: the configuration
//! each variant ran with (hosts, CPUs, guest VM, lab links, sysctls, TLS,
//! storage per connection), one line per item, per variant where they differ.

use crate::report::{StudyInput, Variants};
use crate::store::StoredRun;
use crate::study::format_cpu_list;

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
    if let Some(reps) = input.study.as_ref().map(|s| s.repetitions) {
        add(
            "Repetitions",
            Some(format!("{reps} per workload and variant, interleaved")),
        );
    }
    for (i, (name, _)) in v.groups.iter().enumerate() {
        let role = if i == 0 { " (baseline)" } else { "" };
        add(
            &format!("Variant {name}{role}"),
            Some(variant_settings(input, v, i)),
        );
    }
    items
}

/// What distinguishes a variant: its study-file entry when known, else the
/// socket options its first run recorded.
fn variant_settings(input: &StudyInput, v: &Variants, i: usize) -> String {
    let name = &v.groups[i].0;
    if let Some(var) = input
        .study
        .as_ref()
        .and_then(|s| s.variants.iter().find(|x| &x.name == name))
    {
        let mut parts = var.settings.describe();
        parts.extend(var.labels.iter().map(|(k, v)| format!("{k} = {v}")));
        let desc = if var.description.is_empty() {
            String::new()
        } else {
            format!("{} — ", var.description)
        };
        return format!(
            "{desc}{}",
            if parts.is_empty() {
                "study defaults".into()
            } else {
                parts.join(", ")
            }
        );
    }
    let settings = |g: usize| {
        serde_json::to_value(&v.groups[g].1[0].record.settings).expect("settings serialize")
    };
    let reference = if i == 0 {
        // The defaults as a run stores them: `nodelay` resolved for the
        // run's transport (a record holds the value applied, never `default`).
        let mut d = stackbench_model::settings::RunSettings {
            transport: v.groups[0].1[0].record.settings.transport,
            ..Default::default()
        };
        d.nodelay = Some(d.socket_options().nodelay);
        serde_json::to_value(d).unwrap_or_default()
    } else {
        settings(0)
    };
    let own = settings(i);
    let Some(map) = own.as_object() else {
        return "settings not recorded".to_string();
    };
    // Placement and addresses differ from run to run without being a choice.
    let incidental = [
        "target",
        "client_cpus",
        "server_cpus",
        "threads",
        "server_threads",
        "duration_s",
        "warmup_s",
    ];
    let differing: Vec<String> = map
        .iter()
        .filter(|(k, _)| !incidental.contains(&k.as_str()))
        .filter(|(k, val)| reference.get(k.as_str()) != Some(*val))
        .map(|(k, val)| format!("{k} = {val}"))
        .collect();
    match (differing.is_empty(), i == 0) {
        (true, true) => "default settings".to_string(),
        (true, false) => "same settings as the baseline".to_string(),
        (false, _) => differing.join(", "),
    }
}
