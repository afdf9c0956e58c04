//! Migrations of stored records to the current layout, one step per schema
//! version. Each step is a pure edit of the JSON document.

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

/// Version 2 → 3: `memory.<side>.kernel_sock_*` were the host's sockstat
/// memory, host-wide; they are now the run's own sockets (sock_diag). The
/// old figures move to `host_sock_mem_*`, and the own-socket figures are
/// absent (null), since those runs never read their sockets. A host-wide
/// per-connection figure of exactly 0 may have been clamped from a negative
/// one, so it becomes null too.
pub fn v2_to_v3(record: &mut Value) {
    let Some(classes) = record.get_mut("classes").and_then(Value::as_array_mut) else {
        return;
    };
    for class in classes {
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
            if side
                .get("host_sock_mem_bytes_per_conn")
                .and_then(Value::as_f64)
                == Some(0.0)
            {
                side.insert("host_sock_mem_bytes_per_conn".into(), Value::Null);
                let note = "host-wide socket memory per connection was stored as 0, which \
                            older versions also wrote when it fell below its baseline";
                side.insert("notes".into(), Value::from(vec![note]));
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
        assert!(s.nodelay);
        assert_eq!(s.sndbuf.map(|b| b.0), Some(262_144));
        assert_eq!(s.crr_close, stackbench_model::CrrClose::Abort);
        assert_eq!(s.server_cpus, None);
        assert_eq!(s.text_of("target").unwrap(), "127.0.0.1:1");
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
}
