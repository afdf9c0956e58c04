//! Migrations of stored records to the current layout, one step per schema
//! version, and the one in-version fill-in ([`mark_shared_mix_cpu`]) for a
//! field added without a version bump. Each is a pure edit of the JSON document.

use serde_json::{Map, Value};

/// Version 1 → 2: the settings object became the settings table's (flat, one
/// key per setting): `client_threads` → `threads`, the `socket` object's keys
/// moved up (`sndbuf_bytes`, `rcvbuf_bytes`, `nodelay` …), `responder` moved to
/// the record, and a `duration_s` of 0 (count-bounded run) became null.
pub fn v1_to_v2(record: &mut Value) {
    let Some(doc) = record.as_object_mut() else {
        return;
    };
    let mut settings = match doc.remove("settings") {
        Some(Value::Object(m)) => m,
        _ => Map::new(),
    };
    if let Some(r) = settings.remove("responder") {
        doc.insert("responder".into(), r);
    }
    if let Some(t) = settings.remove("client_threads") {
        settings.insert("threads".into(), t);
    }
    if let Some(Value::Object(socket)) = settings.remove("socket") {
        settings.extend(socket);
    }
    if settings.get("duration_s").and_then(Value::as_f64) == Some(0.0) {
        settings.insert("duration_s".into(), Value::Null);
    }
    for key in ["client_cpus", "server_cpus"] {
        if settings
            .get(key)
            .and_then(Value::as_array)
            .is_some_and(Vec::is_empty)
        {
            settings.insert(key.into(), Value::Null);
        }
    }
    doc.insert("settings".into(), Value::Object(settings));
    doc.insert("schema_version".into(), Value::from(2));
}

/// Records written before `classes[].cpu.attribution` existed (it came
/// without a schema bump, so the version cannot tell them apart): classes
/// that share one `workload` (several of them) are a mix, and the engine then
/// ran every mix on shared worker threads, so each class's CPU is the whole
/// mix's. (A record may also hold several workloads run one after another:
/// each of those is its own, with CPU of its own.) Says so
/// (`attribution: mix`) and clears the per-transaction figures, which divided
/// the mix's CPU by one class's transactions (a stream class "97% cheaper"
/// than the RR beside it); `cpu_seconds` and `util_pct` stay, being the
/// mix's. Classes that carry the field, and classes alone in their
/// workload, are left as written.
pub fn mark_shared_mix_cpu(record: &mut Value) {
    let Some(classes) = record.get_mut("classes").and_then(Value::as_array_mut) else {
        return;
    };
    let workload = |c: &Value| c.get("workload").and_then(Value::as_str).map(str::to_owned);
    let names: Vec<Option<String>> = classes.iter().map(workload).collect();
    for (i, class) in classes.iter_mut().enumerate() {
        let in_mix = names[i].is_some() && names.iter().filter(|n| **n == names[i]).count() > 1;
        if !in_mix {
            continue;
        }
        let Some(cpu) = class.get_mut("cpu").and_then(Value::as_object_mut) else {
            continue;
        };
        if cpu.contains_key("attribution") {
            continue;
        }
        cpu.insert("attribution".into(), Value::from("mix"));
        null_keys(cpu, &["total_cpu_us_per_tran"]);
        for side in ["client", "server", "shared"] {
            if let Some(s) = cpu.get_mut(side).and_then(Value::as_object_mut) {
                s.insert("attribution".into(), Value::from("mix"));
                null_keys(
                    s,
                    &[
                        "cpu_us_per_tran",
                        "cpu_us_per_mb",
                        "process_cpu_us_per_tran",
                    ],
                );
            }
        }
        let per_tran = ["client_cpu_us_per_tran", "server_cpu_us_per_tran"];
        if let Some(reps) = class.get_mut("repetitions").and_then(Value::as_object_mut) {
            null_keys(reps, &per_tran);
            if let Some(runs) = reps.get_mut("runs").and_then(Value::as_array_mut) {
                for run in runs.iter_mut().filter_map(Value::as_object_mut) {
                    null_keys(run, &per_tran);
                }
            }
        }
    }
}

/// Sets each of `keys` that `obj` has to null.
fn null_keys(obj: &mut Map<String, Value>, keys: &[&str]) {
    for key in keys {
        if let Some(v) = obj.get_mut(*key) {
            *v = Value::Null;
        }
    }
}

/// Version 2 → 3: `memory.<side>.kernel_sock_*` were the host's sockstat
/// memory, host-wide; they are now the run's own sockets (sock_diag). The
/// old figures move to `host_sock_mem_*`, and the own-socket figures are
/// absent (null), since those runs never read their sockets. A host-wide
/// per-connection figure of exactly 0 may have been clamped from a negative
/// one, so it becomes null too. Latency summaries of a window without a
/// transaction (all 0.0 in version 2; the open loop's uncorrected one too),
/// handshake latencies of a window without a handshake, and the responder's
/// CPU per handshake of a kind the window did not have become null, as
/// version 3 writes them. A user-space per-connection figure of exactly 0
/// was clamped the same way as the host-wide one and becomes null too.
pub fn v2_to_v3(record: &mut Value) {
    let Some(classes) = record.get_mut("classes").and_then(Value::as_array_mut) else {
        return;
    };
    for class in classes {
        if class.get("transactions").and_then(Value::as_u64) == Some(0) {
            if let Some(v) = class.get_mut("latency_us") {
                *v = Value::Null;
            }
            if let Some(v) = class.pointer_mut("/population/latency_uncorrected_us") {
                *v = Value::Null;
            }
        }
        if let Some(tls) = class.get_mut("tls").and_then(Value::as_object_mut) {
            let count = |k: &str| tls.get(k).and_then(Value::as_u64).unwrap_or(0);
            let (full, resumed) = (count("full_handshakes"), count("resumed_handshakes"));
            if full + resumed == 0 {
                tls.insert("handshake_latency_us".into(), Value::Null);
            }
            if let Some(cpu) = tls
                .get_mut("handshake_cpu_us")
                .and_then(Value::as_object_mut)
            {
                for (key, n) in [("server_full", full), ("server_resumed", resumed)] {
                    if n == 0 && cpu.contains_key(key) {
                        cpu.insert(key.into(), Value::Null);
                    }
                }
            }
        }
        let Some(memory) = class.get_mut("memory").and_then(Value::as_object_mut) else {
            continue;
        };
        for side in memory.values_mut().filter_map(Value::as_object_mut) {
            let old = |key: &str| format!("kernel_sock_{key}");
            for (from, to) in [
                (old("bytes"), "host_sock_mem_bytes"),
                (old("baseline_bytes"), "host_sock_mem_baseline_bytes"),
                (old("bytes_per_conn"), "host_sock_mem_bytes_per_conn"),
            ] {
                if let Some(v) = side.remove(&from) {
                    side.insert(to.into(), v);
                }
            }
            let mut notes = Vec::new();
            for (key, what) in [
                ("host_sock_mem_bytes_per_conn", "host-wide socket memory"),
                ("rss_bytes_per_conn", "user-space memory (RSS)"),
            ] {
                if side.get(key).and_then(Value::as_f64) == Some(0.0) {
                    side.insert(key.into(), Value::Null);
                    notes.push(format!(
                        "{what} per connection was stored as 0, which older versions also \
                         wrote when it fell below its baseline"
                    ));
                }
            }
            if !notes.is_empty() {
                side.insert("notes".into(), Value::from(notes));
            }
        }
    }
    record["schema_version"] = Value::from(3);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::RunRecord;

    #[test]
    fn a_version_1_record_reads_as_version_2() {
        let mut v: Value = serde_json::from_str(
            r#"{"schema_version":1,"stackbench_version":"0.1.0","complete":true,
            "incomplete_reason":null,"started_unix_s":1.0,
            "settings":{"duration_s":0.0,"warmup_s":2.0,"transactions":1000,
              "client_threads":2,"server_threads":1,"client_cpus":[0],"server_cpus":[],
              "target":"127.0.0.1:1","responder":"spawned","spin":false,
              "socket":{"nodelay":true,"waitall":false,"quickack":false,
                "sndbuf_bytes":262144,"rcvbuf_bytes":null,"crr_close":"abort"}},
            "classes":[]}"#,
        )
        .unwrap();
        v1_to_v2(&mut v);
        let r: RunRecord = serde_json::from_value(v).unwrap();
        let s = &r.settings;
        assert_eq!(r.schema_version, 2);
        assert_eq!(r.responder, "spawned");
        assert_eq!(
            (s.threads, s.transactions, s.duration),
            (Some(2), Some(1000), None)
        );
        assert_eq!(s.nodelay, Some(true));
        assert_eq!(s.sndbuf.map(|b| b.0), Some(262_144));
        assert_eq!(s.crr_close, stackbench_model::CrrClose::Abort);
        assert_eq!(s.server_cpus, None);
        assert_eq!(s.text_of("target").unwrap(), "127.0.0.1:1");
    }

    #[test]
    fn an_old_mix_record_reads_as_shared_mix_cpu() {
        let side = |us: f64| serde_json::json!({"cpu_seconds": 2.0, "cpu_us_per_tran": us, "cpu_us_per_mb": 1.0});
        let class = |us: f64| {
            serde_json::json!({"cpu": {"client": side(us), "server": side(us),
                "total_cpu_us_per_tran": us},
                "repetitions": {"client_cpu_us_per_tran": {"n": 2},
                    "runs": [{"rate_tps": 1.0, "client_cpu_us_per_tran": us}]}})
        };
        let in_mix = |us: f64| {
            let mut c = class(us);
            c["workload"] = "RR1(1B/1B)+STR1(1B/1MB)".into();
            c
        };
        let mut mix = serde_json::json!({"classes": [in_mix(5.0), in_mix(800.0)]});
        mark_shared_mix_cpu(&mut mix);
        for c in mix["classes"].as_array().unwrap() {
            assert_eq!(c["cpu"]["attribution"], "mix");
            assert_eq!(c["cpu"]["client"]["attribution"], "mix");
            assert_eq!(c["cpu"]["client"]["cpu_us_per_tran"], Value::Null);
            assert_eq!(c["cpu"]["server"]["cpu_us_per_mb"], Value::Null);
            assert_eq!(c["cpu"]["total_cpu_us_per_tran"], Value::Null);
            assert_eq!(c["cpu"]["client"]["cpu_seconds"], 2.0);
            assert_eq!(c["repetitions"]["client_cpu_us_per_tran"], Value::Null);
            assert_eq!(
                c["repetitions"]["runs"][0]["client_cpu_us_per_tran"],
                Value::Null
            );
        }
        // One class, two workloads run one after the other, or a class that
        // says whose CPU it holds: as written.
        let mut one = serde_json::json!({"classes": [class(5.0)]});
        let before = one.clone();
        mark_shared_mix_cpu(&mut one);
        assert_eq!(one, before);
        let (mut rr, mut crr) = (class(5.0), class(6.0));
        rr["workload"] = "RR1(1B/1B)".into();
        crr["workload"] = "CRR1(1B/1B)".into();
        let mut two = serde_json::json!({"classes": [rr, crr]});
        let before = two.clone();
        mark_shared_mix_cpu(&mut two);
        assert_eq!(two, before);
        let mut new = serde_json::json!({"classes": [in_mix(5.0), in_mix(6.0)]});
        new["classes"][0]["cpu"]["attribution"] = "class".into();
        new["classes"][1]["cpu"]["attribution"] = "class".into();
        let before = new.clone();
        mark_shared_mix_cpu(&mut new);
        assert_eq!(new, before);
    }

    #[test]
    fn a_version_2_records_sockstat_figures_become_host_wide() {
        let mut v: Value = serde_json::from_str(
            r#"{"classes":[{"memory":{"client":{"kernel_sock_bytes":4096,
              "kernel_sock_baseline_bytes":8192,"kernel_sock_bytes_per_conn":0.0},
              "server":{"kernel_sock_bytes":8192,"kernel_sock_bytes_per_conn":4.0}}}]}"#,
        )
        .unwrap();
        v2_to_v3(&mut v);
        let client = &v["classes"][0]["memory"]["client"];
        assert_eq!(client["host_sock_mem_bytes"], 4096);
        assert_eq!(client["host_sock_mem_baseline_bytes"], 8192);
        // A stored 0 may be a clamped negative: unknown, and said so.
        assert!(client["host_sock_mem_bytes_per_conn"].is_null());
        assert!(client["notes"][0]
            .as_str()
            .unwrap()
            .contains("below its baseline"));
        assert!(client.get("kernel_sock_bytes").is_none());
        let server = &v["classes"][0]["memory"]["server"];
        assert_eq!(server["host_sock_mem_bytes_per_conn"], 4.0);
        assert_eq!(v["schema_version"], 3);
    }

    #[test]
    fn a_version_2_window_without_samples_has_null_latency() {
        let zero = serde_json::json!({"mean": 0.0, "p50": 0.0});
        let mut v = serde_json::json!({"classes": [
            {"transactions": 0, "latency_us": zero,
             "tls": {"full_handshakes": 0, "resumed_handshakes": 0, "handshake_latency_us": zero,
                     "handshake_cpu_us": {"server_full": 55752.0}}},
            {"transactions": 5, "latency_us": {"mean": 1.0},
             "tls": {"full_handshakes": 1, "resumed_handshakes": 0, "handshake_latency_us": {"mean": 9.0},
                     "handshake_cpu_us": {"server_full": 55.0, "server_resumed": 3.0}}}
        ]});
        v2_to_v3(&mut v);
        assert!(v["classes"][0]["latency_us"].is_null());
        assert!(v["classes"][0]["tls"]["handshake_latency_us"].is_null());
        assert!(v["classes"][0]["tls"]["handshake_cpu_us"]["server_full"].is_null());
        assert_eq!(
            v["classes"][1]["tls"]["handshake_cpu_us"]["server_full"],
            55.0
        );
        assert!(v["classes"][1]["tls"]["handshake_cpu_us"]["server_resumed"].is_null());
        assert_eq!(v["classes"][1]["latency_us"]["mean"], 1.0);
        assert_eq!(v["classes"][1]["tls"]["handshake_latency_us"]["mean"], 9.0);
    }
}
