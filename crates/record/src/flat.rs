//! The flat view of run records (`stackbench results export --flat`): one
//! row per class per run, every figure a scalar column whose name carries its
//! unit, warnings as a column. Scripts read this table instead of the JSON,
//! so they never see a schema version: records of every version are migrated
//! by [`crate::record_from_json`] before they become rows.
//!
//! The columns are one table ([`columns`]): name, description (listed in
//! docs/record.md) and how the value is read from a class. Adding a column is
//! compatible; renaming or removing one breaks the scripts in bench/.

use serde_json::Value;

use crate::run::{BackendConnections, ClassResult, RunRecord, SideCpu, SideMemory};

/// One column of the flat table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column {
    /// The header; its suffix gives the unit (`_s`, `_us`, `_pct`, `_bytes`, …).
    pub name: String,
    /// What the column holds, for docs/record.md.
    pub description: &'static str,
}

/// What a column reads from: one class of one run.
struct Cell<'a> {
    run: &'a str,
    record: &'a RunRecord,
    class: &'a ClassResult,
}

type Read = fn(&Cell) -> Value;

/// Columns before the per-side CPU figures.
const HEAD: &[(&str, &str, Read)] = &[
    ("run", "Where the run came from: `run N` for a stored run, else the file (with `record N` when a file holds several)", |c| c.run.into()),
    ("stackbench_version", "The stackbench that wrote the record", |c| c.record.stackbench_version.clone().into()),
    ("complete", "False when the run ended early (see `incomplete_reason`)", |c| c.record.complete.into()),
    ("incomplete_reason", "Why the run is incomplete; empty when complete", |c| c.record.incomplete_reason.clone().into()),
    ("started_unix_s", "Wall-clock start of the run, seconds since the Unix epoch", |c| c.record.started_unix_s.into()),
    ("workload", "The whole workload the class ran in (the mix, or the class itself)", |c| c.class.workload.clone().into()),
    ("notation", "The class in canonical notation, e.g. `RR10(4kB/4kB)`", |c| c.class.notation.clone().into()),
    ("kind", "`RR`, `CRR` or `STR`", |c| json(c.class.kind)),
    ("stream_direction", "For STR classes `GET` or `PUT`; empty otherwise", |c| json(c.class.stream_direction)),
    ("clients", "Concurrent clients (connections) of the class", |c| c.class.clients.into()),
    ("request_bytes", "Request size, bytes", |c| c.class.request_bytes.into()),
    ("response_bytes", "Response size, bytes", |c| c.class.response_bytes.into()),
    ("transactions", "Transactions completed inside the measurement window", |c| c.class.transactions.into()),
    ("duration_s", "Length of the measurement window, seconds", |c| c.class.duration_s.into()),
    ("rate_tps", "Transactions per second", |c| c.class.rate_tps.into()),
    ("tx_bytes_per_s", "Payload bytes per second, client → server", |c| c.class.tx_bytes_per_s.into()),
    ("rx_bytes_per_s", "Payload bytes per second, server → client", |c| c.class.rx_bytes_per_s.into()),
    ("errors", "Errors of single connections, all causes", |c| c.class.errors.into()),
    ("latency_mean_us", "Mean transaction latency, µs; empty when the window had no transaction", |c| latency(c, |l| l.mean)),
    ("latency_p50_us", "Median transaction latency, µs", |c| latency(c, |l| l.p50)),
    ("latency_p90_us", "90th percentile latency, µs", |c| latency(c, |l| l.p90)),
    ("latency_p99_us", "99th percentile latency, µs", |c| latency(c, |l| l.p99)),
    ("latency_p999_us", "99.9th percentile latency, µs", |c| latency(c, |l| l.p999)),
    ("latency_max_us", "Largest transaction latency, µs", |c| latency(c, |l| l.max)),
    ("cpu_separable", "False when the sides shared CPUs: only the `shared_*` columns and the totals then hold CPU-set figures; empty when CPU was not measured", |c| json(c.class.cpu.as_ref().map(|f| f.separable))),
    ("cpu_attribution", "`class` or `mix`: whose CPU the figures hold", |c| json(c.class.cpu.as_ref().map(|f| f.attribution))),
    ("total_cpu_s", "Both sides' CPU, CPU-seconds", |c| json(c.class.cpu.as_ref().and_then(|f| f.total_cpu_seconds))),
    ("total_cpu_us_per_tran", "Both sides' CPU per transaction, µs", |c| json(c.class.cpu.as_ref().and_then(|f| f.total_cpu_us_per_tran))),
];

type SideRead = fn(&SideCpu) -> Value;

/// One side's CPU-set columns, each prefixed `client_`, `server_` or
/// `shared_` (both sides' CPUs together, when they were not separable);
/// empty when the side was not measured.
const SIDE: &[(&str, &str, SideRead)] = &[
    (
        "cpus",
        "CPU ids the side's figures cover, comma-separated",
        |s| {
            let ids: Vec<String> = s.cpus.iter().map(ToString::to_string).collect();
            ids.join(",").into()
        },
    ),
    ("cpu_count", "How many CPUs that is", |s| {
        s.cpus.len().into()
    }),
    (
        "window_s",
        "Window between the two CPU samples, seconds",
        |s| s.window_s.into(),
    ),
    (
        "cpu_s",
        "Busy CPU-seconds on those CPUs in the window",
        |s| s.cpu_seconds.into(),
    ),
    ("util_pct", "Busy share of those CPUs, 0–100", |s| {
        s.util_pct.into()
    }),
    ("cpu_us_per_tran", "Busy CPU per transaction, µs", |s| {
        json(s.cpu_us_per_tran)
    }),
    ("cpu_us_per_mib", "Busy CPU per MiB of payload, µs", |s| {
        json(s.cpu_us_per_mb)
    }),
    (
        "iowait_s",
        "Idle time with I/O outstanding, CPU-seconds",
        |s| s.breakdown.iowait.into(),
    ),
    (
        "tick_busy_s",
        "Busy CPU-seconds as the scheduler tick counted them",
        |s| s.tick_busy_s.into(),
    ),
    (
        "tick_util_pct",
        "netperf's utilisation: busy ticks / all ticks × 100",
        |s| s.tick_util_pct.into(),
    ),
    (
        "tick_coverage",
        "Ticks counted / (window × CPUs), a fraction 0–1",
        |s| json(s.tick_coverage),
    ),
    (
        "process_cpu_s",
        "CPU-seconds of the side's own processes",
        |s| json(s.process.map(|p| p.cpu_seconds)),
    ),
    (
        "process_cpu_us_per_tran",
        "The processes' CPU per transaction, µs",
        |s| json(s.process_cpu_us_per_tran),
    ),
    (
        "disk_write_bytes_per_tran",
        "Bytes the side's processes wrote to storage per transaction (a plain server measured on this host; empty otherwise)",
        |s| json(s.disk.and_then(|d| d.write_bytes_per_tran)),
    ),
];

const SIDES: [&str; 3] = ["client", "server", "shared"];

/// Columns after the per-side CPU figures.
const TAIL: &[(&str, &str, Read)] = &[
    ("client_rss_bytes_per_conn", "Driver RSS per connection, bytes", |c| json(memory(c, true).and_then(|m| m.rss_bytes_per_conn))),
    ("client_kernel_sock_bytes_per_conn", "Kernel memory of the driver's own sockets per connection, bytes", |c| json(memory(c, true).and_then(|m| m.kernel_sock_bytes_per_conn))),
    ("server_rss_bytes_per_conn", "Responder RSS per connection, bytes", |c| json(memory(c, false).and_then(|m| m.rss_bytes_per_conn))),
    ("server_kernel_sock_bytes_per_conn", "Kernel memory of the responder's own sockets per connection, bytes", |c| json(memory(c, false).and_then(|m| m.kernel_sock_bytes_per_conn))),
    ("io", "The I/O backend setting (`io`) as stored", |c| setting(c, "io")),
    ("client_io_uring_connections", "Driver connections of the class opened by the io_uring backend (check `io` against these); empty in older records", |c| served(c, true, |s| s.io_uring)),
    ("client_epoll_connections", "Driver connections opened by the epoll backend", |c| served(c, true, |s| s.epoll)),
    ("client_direct_connections", "Of those, driver connections that entered direct waiting", |c| served(c, true, |s| s.direct)),
    ("server_io_uring_connections", "Responder connections of the class's test accepted by the io_uring backend; empty where the responder did not count them", |c| served(c, false, |s| s.io_uring)),
    ("server_epoll_connections", "Responder connections accepted by the epoll backend", |c| served(c, false, |s| s.epoll)),
    ("server_direct_connections", "Of those, responder connections that entered direct waiting", |c| served(c, false, |s| s.direct)),
    ("spin", "The busy-poll setting (`spin`)", |c| setting(c, "spin")),
    ("crr_close", "How CRR connections close (`crr_close`)", |c| setting(c, "crr_close")),
    ("warnings", "Codes of the measurement-quality warnings concerning the class or the whole run, comma-separated, in the record's order", |c| {
        let codes: Vec<&str> = warnings(c).map(|w| w.code.as_str()).collect();
        codes.join(",").into()
    }),
    ("warning_messages", "Their messages, one line each, in the same order", |c| {
        let messages: Vec<&str> = warnings(c).map(|w| w.message.as_str()).collect();
        messages.join("\n").into()
    }),
];

/// Any serializable figure as a cell (`null` for `None`).
fn json<T: serde::Serialize>(value: T) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

fn latency(c: &Cell, pick: fn(&crate::run::LatencyUs) -> f64) -> Value {
    json(c.class.latency_us.as_ref().map(pick))
}

fn memory<'a>(c: &Cell<'a>, client: bool) -> Option<&'a SideMemory> {
    let m = c.class.memory.as_ref()?;
    if client {
        m.client.as_ref()
    } else {
        m.server.as_ref()
    }
}

/// One side's count of `served_by` (`client`: the driver's).
fn served(c: &Cell, client: bool, pick: fn(&BackendConnections) -> u64) -> Value {
    let s = c.class.served_by.as_ref();
    let side = if client {
        s.map(|s| s.driver)
    } else {
        s.and_then(|s| s.responder)
    };
    json(side.as_ref().map(pick))
}

fn setting(c: &Cell, name: &str) -> Value {
    c.record.settings.text_of(name).unwrap_or_default().into()
}

fn warnings<'a>(c: &Cell<'a>) -> impl Iterator<Item = &'a crate::run::WarningRecord> {
    let notation = c.class.notation.as_str();
    c.record
        .warnings
        .iter()
        .filter(move |w| w.class.as_deref().is_none_or(|k| k == notation))
}

fn side_cpu<'a>(c: &Cell<'a>, side: &str) -> Option<&'a SideCpu> {
    let cpu = c.class.cpu.as_ref()?;
    match side {
        "client" => cpu.client.as_ref(),
        "server" => cpu.server.as_ref(),
        _ => cpu.shared.as_ref(),
    }
}

/// Every column, in order.
pub fn columns() -> Vec<Column> {
    let plain = |(name, description, _): &(&str, &'static str, Read)| Column {
        name: name.to_string(),
        description,
    };
    let mut out: Vec<Column> = HEAD.iter().map(plain).collect();
    for side in SIDES {
        out.extend(SIDE.iter().map(|(suffix, description, _)| Column {
            name: format!("{side}_{suffix}"),
            description,
        }));
    }
    out.extend(TAIL.iter().map(plain));
    out
}

/// The rows of one run, one per class in class order, each aligned with
/// [`columns`]; `run` names the run (see the `run` column).
pub fn rows(run: &str, record: &RunRecord) -> Vec<Vec<Value>> {
    record
        .classes
        .iter()
        .map(|class| {
            let cell = Cell { run, record, class };
            let mut row: Vec<Value> = HEAD.iter().map(|(_, _, read)| read(&cell)).collect();
            for side in SIDES {
                let figures = side_cpu(&cell, side);
                row.extend(
                    SIDE.iter()
                        .map(|(_, _, read)| figures.map_or(Value::Null, read)),
                );
            }
            row.extend(TAIL.iter().map(|(_, _, read)| read(&cell)));
            row
        })
        .collect()
}

/// A row as a JSON object (one line of the JSON-lines export), keys in
/// column order.
pub fn row_json(columns: &[Column], row: &[Value]) -> String {
    let fields: Vec<String> = columns
        .iter()
        .zip(row)
        .map(|(c, v)| format!("{}:{v}", Value::from(c.name.as_str())))
        .collect();
    format!("{{{}}}", fields.join(","))
}

/// A cell as CSV text: empty for null, strings as they are, numbers and
/// booleans as JSON writes them.
pub fn cell_text(value: &Value) -> String {
    match value {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::{CpuFigures, WarningRecord};

    fn record() -> RunRecord {
        let json = serde_json::json!({
            "schema_version": 1, "stackbench_version": "0.1.0", "complete": true,
            "incomplete_reason": null, "started_unix_s": 1.0,
            "settings": {"socket": {"crr_close": "abort"}},
            "classes": [{"workload": "STR3(1B/20MB)", "notation": "STR3(1B/20MB)", "kind": "STR",
                "stream_direction": "GET", "clients": 3, "request_bytes": 1,
                "response_bytes": 20000000, "transactions": 100, "duration_s": 1.0,
                "rate_tps": 100.0, "latency_us": {"mean": 30000.0, "min": 1.0, "p50": 29000.0,
                "p90": 1.0, "p99": 40000.0, "p999": 1.0, "max": 1.0, "stdev": 1.0},
                "tx_bytes": 100, "rx_bytes": 2000000000, "tx_bytes_per_s": 100.0,
                "rx_bytes_per_s": 2.0e9, "errors": 0,
                "error_counts": {"refused": 0, "reset": 0, "eof": 0, "timeout": 0, "other": 0},
                "per_second_tps": [100.0]}]});
        let mut r = crate::record_from_json(json).unwrap();
        r.warnings = vec![
            WarningRecord {
                code: "run_short".into(),
                message: "too short".into(),
                class: None,
            },
            WarningRecord {
                code: "other_class".into(),
                message: "x".into(),
                class: Some("RR1(1B/1B)".into()),
            },
        ];
        r
    }

    fn value<'a>(cols: &[Column], row: &'a [Value], name: &str) -> &'a Value {
        let i = cols
            .iter()
            .position(|c| c.name == name)
            .unwrap_or_else(|| panic!("no column {name}"));
        &row[i]
    }

    #[test]
    fn a_version_1_record_flattens_with_migrated_settings_and_its_warnings() {
        let cols = columns();
        let rows = rows("run.json", &record());
        assert_eq!(rows.len(), 1);
        let row = &rows[0];
        assert_eq!(row.len(), cols.len());
        assert_eq!(value(&cols, row, "crr_close"), "abort");
        assert_eq!(value(&cols, row, "stream_direction"), "GET");
        assert_eq!(value(&cols, row, "latency_p99_us"), 40000.0);
        assert_eq!(value(&cols, row, "warnings"), "run_short");
        assert_eq!(value(&cols, row, "warning_messages"), "too short");
        assert!(value(&cols, row, "client_util_pct").is_null());
        // No counts of which backend served in a version 1 record.
        assert!(value(&cols, row, "client_epoll_connections").is_null());
        let line: serde_json::Value = serde_json::from_str(&row_json(&cols, row)).unwrap();
        assert_eq!(line["rx_bytes_per_s"], 2.0e9);
        assert_eq!(line["run"], "run.json");
    }

    #[test]
    fn served_columns_sit_beside_the_stored_io() {
        let mut r = record();
        let on = |io_uring, epoll, direct| BackendConnections {
            io_uring,
            epoll,
            direct,
        };
        r.classes[0].served_by = Some(crate::run::ServedBy {
            driver: on(3, 0, 0),
            responder: Some(on(0, 3, 1)),
        });
        let cols = columns();
        let row = &rows("run.json", &r)[0];
        assert_eq!(value(&cols, row, "client_io_uring_connections"), 3);
        assert_eq!(value(&cols, row, "server_epoll_connections"), 3);
        assert_eq!(value(&cols, row, "server_direct_connections"), 1);
        let io = cols.iter().position(|c| c.name == "io").unwrap();
        assert_eq!(cols[io + 1].name, "client_io_uring_connections");
        r.classes[0].served_by.as_mut().unwrap().responder = None;
        let row = &rows("run.json", &r)[0];
        assert!(value(&cols, row, "server_epoll_connections").is_null());
    }

    #[test]
    fn side_columns_carry_the_side_figures() {
        let mut r = record();
        let side = SideCpu {
            cpus: vec![0, 2],
            util_pct: 43.0,
            tick_coverage: Some(0.8),
            ..SideCpu::default()
        };
        r.classes[0].cpu = Some(CpuFigures::combine(Some(side.clone()), Some(side), None));
        let cols = columns();
        let row = &rows("x", &r)[0];
        assert_eq!(value(&cols, row, "client_cpus"), "0,2");
        assert_eq!(value(&cols, row, "server_util_pct"), 43.0);
        assert_eq!(value(&cols, row, "server_tick_coverage"), 0.8);
        assert!(value(&cols, row, "shared_util_pct").is_null());
        assert_eq!(value(&cols, row, "cpu_separable"), true);
        let names: std::collections::HashSet<_> = cols.iter().map(|c| &c.name).collect();
        assert_eq!(names.len(), cols.len(), "column names repeat");
    }
}
