//! Figures read from a stored run (`stackbench run --json`, the `RunRecord` of
//! `stackbench-record`): a class's rate and clients, and, in records that carry
//! them, CPU (`classes[i].cpu.<side>`) and memory (`classes[i].memory.<side>`)
//! figures. The record is decoded by `record_from_json`, so an older record is
//! migrated and a newer one refused; records written before CPU and memory
//! accounting still load and give a clear error only when the missing figures
//! are asked for. A stored run as `stackbench
//! results show N --json` prints it (the record under `record`) reads the same.
//! A class of a mix whose classes shared worker threads (`cpu.attribution` =
//! `mix`, or a record of several classes written before that field) has no
//! CPU per transaction of its own, and asking for it is refused.

use serde_json::Value;
use stackbench_record as record;

use crate::error::PlanError;
use crate::storage::Side;

/// CPU figures of one side of one class.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CpuFigures {
    /// CPU time per transaction, microseconds.
    pub cpu_us_per_tran: f64,
    /// Busy share of the side's CPUs, 0–100 whatever their number (RMF's
    /// "LPAR busy"), when recorded.
    pub util_pct: Option<f64>,
    /// How many CPUs the side's figures cover, when recorded.
    pub cpus: Option<usize>,
}

/// Memory figures of one side of one class.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MemoryFigures {
    pub rss_bytes: f64,
    /// User-space bytes per connection; `None` when the record stored null
    /// (the RSS fell below its baseline: unknown, never taken as 0). A
    /// record without the field gives the plain average `rss_bytes ÷
    /// connections`.
    pub rss_bytes_per_conn: Option<f64>,
    /// Kernel socket memory, bytes; `None` when the record has none.
    pub kernel_sock_bytes: Option<f64>,
    /// Per connection; `None` when the record has none (null: unmeasured,
    /// or a host-wide figure that fell below its baseline).
    pub kernel_sock_bytes_per_conn: Option<f64>,
    /// The kernel figures are the run's own sockets (records since schema
    /// 3); false: the host's sockstat delta (older records), which counts
    /// every socket of the host and was clamped to 0 when it fell.
    pub kernel_sock_own: bool,
    /// Connections open when the figures were sampled.
    pub connections: f64,
}

/// One class of a stored run.
#[derive(Debug, Clone, PartialEq)]
pub struct RunClass {
    path: String,
    version: String,
    side: Side,
    pub notation: String,
    /// The class's kind as recorded (`RR`, `CRR`, `STR`).
    pub kind: Option<String>,
    pub clients: f64,
    pub rate_tps: f64,
    /// The class's CPU figures (`None` when absent or null).
    cpu: Option<record::CpuFigures>,
    /// Whether the record has a `cpu` key at all (records before CPU
    /// accounting do not).
    has_cpu_key: bool,
    memory: Option<record::MemoryFigures>,
    /// The stored record's schema_version, before migration: below 3 its
    /// kernel socket figures were the host's sockstat change, which the
    /// migration moved to `host_sock_mem_*`.
    stored_schema: u64,
    /// The run's warnings that concern this class ("[code] message").
    recorded: Vec<String>,
}

/// Picks a class by index (`0` is the first) or notation; `None` is allowed
/// when there is only one.
fn select<'a>(
    path: &str,
    classes: &'a [record::ClassResult],
    class: Option<&str>,
) -> Result<(usize, &'a record::ClassResult), PlanError> {
    let listing = || {
        classes
            .iter()
            .enumerate()
            .map(|(i, c)| format!("{i} = {}", c.notation))
            .collect::<Vec<_>>()
            .join(", ")
    };
    match class {
        None if classes.len() == 1 => Ok((0, &classes[0])),
        None => Err(PlanError::missing(
            "class",
            format!("{path} has {} classes: {}", classes.len(), listing()),
        )),
        Some(sel) => match sel.parse::<usize>() {
            Ok(i) => classes.get(i).map(|c| (i, c)),
            Err(_) => classes.iter().enumerate().find(|(_, c)| c.notation == sel),
        }
        .ok_or_else(|| {
            PlanError::bad(
                "class",
                sel,
                format!("no such class in {path}"),
                format!("use one of: {}", listing()),
            )
        }),
    }
}

/// Parses a record and selects a class by index (`0` is the first) or by its
/// notation; `class` may be omitted when the run has one class. The record
/// is read through `record_from_json`: an older one is migrated to the
/// current layout, a newer one refused.
pub fn read(
    path: &str,
    text: &str,
    side: Side,
    class: Option<&str>,
) -> Result<RunClass, PlanError> {
    let doc: Value = serde_json::from_str(text).map_err(|e| {
        PlanError::file(
            path,
            format!("not a stackbench result ({e}); give the JSON of `stackbench run --json`"),
        )
    })?;
    // `results show N --json` prints the stored run: id, labels, record, env.
    let doc = match doc {
        Value::Object(mut run)
            if !run.contains_key("classes") && run.get("record").is_some_and(Value::is_object) =>
        {
            run.remove("record").unwrap_or_default()
        }
        other => other,
    };
    let stored_schema = record::schema_version_of(&doc).unwrap_or(0);
    // Absent and null decode alike; only the JSON tells a record written
    // before CPU accounting from a run that did not measure it.
    let cpu_keys: Vec<bool> = doc
        .get("classes")
        .and_then(Value::as_array)
        .map(|cs| cs.iter().map(|c| c.get("cpu").is_some()).collect())
        .unwrap_or_default();
    let run = record::record_from_json(doc).map_err(|e| PlanError::file(path, e.to_string()))?;
    if run.classes.is_empty() {
        return Err(PlanError::file(
            path,
            "has no classes; give the JSON of `stackbench run --json`",
        ));
    }
    let (index, chosen) = select(path, &run.classes, class)?;
    Ok(RunClass {
        path: path.to_string(),
        version: run.stackbench_version.clone(),
        side,
        notation: chosen.notation.clone(),
        kind: serde_json::to_value(chosen.kind)
            .ok()
            .and_then(|k| k.as_str().map(str::to_string)),
        clients: f64::from(chosen.clients),
        rate_tps: chosen.rate_tps,
        cpu: chosen.cpu.clone(),
        has_cpu_key: cpu_keys.get(index).copied().unwrap_or(false),
        memory: chosen.memory.clone(),
        stored_schema,
        recorded: run
            .warnings
            .iter()
            .filter(|w| w.class.as_ref().is_none_or(|c| *c == chosen.notation))
            .map(|w| format!("[{}] {}", w.code, w.message))
            .collect(),
    })
}

impl RunClass {
    /// The file the class was read from.
    pub fn path(&self) -> &str {
        &self.path
    }

    fn side_cpu(&self) -> Option<&record::SideCpu> {
        let cpu = self.cpu.as_ref()?;
        match self.side {
            Side::Client => cpu.client.as_ref(),
            Side::Server => cpu.server.as_ref(),
        }
    }

    fn side_memory(&self) -> Option<&record::SideMemory> {
        let memory = self.memory.as_ref()?;
        match self.side {
            Side::Client => memory.client.as_ref(),
            Side::Server => memory.server.as_ref(),
        }
    }

    /// The CPU figures, or the error that explains their absence.
    pub fn cpu(&self) -> Result<CpuFigures, PlanError> {
        let side = self.side.name();
        let Some(figures) = self.side_cpu() else {
            let why = if self.has_cpu_key {
                format!("CPU was not measured for the {side} side in this run")
            } else {
                format!(
                    "it was recorded (by stackbench {}) before CPU accounting",
                    self.version
                )
            };
            return Err(PlanError::file(
                &self.path,
                format!("has no CPU figures for the {side} side: {why}; rerun the measurement with a stackbench that records CPU, or give --cpu-per-tran"),
            ));
        };
        let shared_mix_cpu = self
            .cpu
            .as_ref()
            .is_some_and(|c| c.attribution == record::CpuAttribution::Mix);
        if shared_mix_cpu {
            return Err(PlanError::file(
                &self.path,
                format!("class {} ran in a mix whose classes share worker threads, so its CPU per transaction is not attributable per class; measure the class alone (or the mix on separate workers), or give --cpu-per-tran", self.notation),
            ));
        }
        let cpu_us_per_tran = figures.cpu_us_per_tran.ok_or_else(|| {
            PlanError::file(&self.path, format!("the {side} side's cpu_us_per_tran is empty (no transaction completed); give --cpu-per-tran"))
        })?;
        Ok(CpuFigures {
            cpu_us_per_tran,
            util_pct: Some(figures.util_pct),
            cpus: Some(figures.cpus.len()).filter(|n| *n > 0),
        })
    }

    /// The measurement-quality warnings the run carried (those of the
    /// whole run and of the chosen class), each as one line naming the
    /// file: a plan made from the run inherits what weakened its figures
    /// (a `background_load` baseline charged to every transaction).
    pub fn recorded_warnings(&self) -> Vec<String> {
        self.recorded
            .iter()
            .map(|w| format!("{}: the measured run warned {w}", self.path))
            .collect()
    }

    /// A warning when the record says the sides' CPU figures overlap.
    pub fn cpu_warning(&self) -> Option<String> {
        let separable = self.cpu.as_ref()?.separable;
        (!separable).then(|| {
            format!(
                "{}: the client and server shared CPUs in this run, so the {} side's CPU includes the other side's work; pin them apart (--client-cpus, --server-cpus) for a per-side cost",
                self.path,
                self.side.name()
            )
        })
    }

    /// The memory figures, or the error that explains their absence.
    pub fn memory(&self) -> Result<MemoryFigures, PlanError> {
        let figures = self.side_memory().map(|m| {
            let connections = (m.connections as f64).max(1.0);
            // Before schema 3 the kernel figures were the host's sockstat
            // change; the migration moved them to host_sock_mem_*.
            let kernel_sock_own = self.stored_schema >= 3;
            let (kernel_sock_bytes, kernel_sock_bytes_per_conn) = if kernel_sock_own {
                (
                    m.kernel_sock_bytes.map(|b| b as f64),
                    m.kernel_sock_bytes_per_conn,
                )
            } else {
                (
                    Some(m.host_sock_mem_bytes as f64),
                    m.host_sock_mem_bytes_per_conn,
                )
            };
            MemoryFigures {
                rss_bytes: m.rss_bytes as f64,
                rss_bytes_per_conn: m.rss_bytes_per_conn,
                kernel_sock_bytes,
                kernel_sock_bytes_per_conn,
                kernel_sock_own,
                connections,
            }
        });
        figures.ok_or_else(|| {
            PlanError::file(
                &self.path,
                format!(
                    "has no memory figures for the {} side: recorded (by stackbench {}) before memory accounting or without it; rerun the measurement with a stackbench that records memory, or give the --server-*/--client-* storage flags",
                    self.side.name(),
                    self.version
                ),
            )
        })
    }
}

impl RunClass {
    /// The kernel socket memory per connection to project, or why there is
    /// none: a missing or 0 B figure would project "0 B × N users".
    pub fn kernel_per_conn(&self, mem: &MemoryFigures) -> Result<f64, PlanError> {
        let side = self.side.name();
        let fix = format!("rerun the measurement with this stackbench, which counts the run's own sockets, or give --{side}-kernel-per-conn");
        match mem.kernel_sock_bytes_per_conn {
            Some(b) if b > 0.0 => Ok(b),
            // Older records' host-wide 0 (a clamped fall below the baseline)
            // reads as null since the migration to schema 3.
            _ if !mem.kernel_sock_own => Err(PlanError::file(
                &self.path,
                format!("the {side} side's kernel socket memory per connection is 0 B: older records took it from the host's sockstat, which clamped a fall below the baseline to 0; {fix}"),
            )),
            Some(_) => Err(PlanError::file(
                &self.path,
                format!("the {side} side's kernel socket memory per connection is 0 B (no socket of the run was found at the sample); {fix}"),
            )),
            None => Err(PlanError::file(
                &self.path,
                format!("has no kernel socket memory per connection for the {side} side (not measured, or a host-wide figure that fell below its baseline); {fix}"),
            )),
        }
    }

    /// What makes this run's memory a poor model of a population of users.
    pub fn population_warnings(&self, mem: &MemoryFigures) -> Vec<String> {
        let mut warnings = Vec::new();
        let path = &self.path;
        let notation = &self.notation;
        let crr = match &self.kind {
            Some(k) => k.eq_ignore_ascii_case("crr"),
            None => notation.starts_with("CRR"),
        };
        if crr {
            warnings.push(format!(
                "{path}: {notation} is CRR: its connections close after each transaction, so the figures are per connection open at the sample, not per user holding one; a projection to N users assumes each keeps a connection open: measure a population of persistent connections (e.g. RR1K(100B/800B)@1s) for that"
            ));
        } else if mem.connections <= 1.0 {
            warnings.push(format!(
                "{path}: {notation} had one connection: its per-connection memory holds the fixed costs and the buffers of one busy flow, not a population's; measure the population's shape (e.g. RR1K(100B/800B)@1s) before projecting to N users"
            ));
        }
        if !mem.kernel_sock_own && mem.kernel_sock_bytes_per_conn.is_some() {
            warnings.push(format!(
                "{path}: the kernel socket memory is the host's sockstat change over the run (recorded before own-socket counting), which includes other sockets of the host"
            ));
        }
        warnings
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A whole schema-1 record of `classes`, each given by the fields that
    /// differ from a plain class (the record must decode as a `RunRecord`).
    fn record(version: &str, classes: &[&str]) -> String {
        let classes: Vec<Value> = classes
            .iter()
            .map(|extra| {
                let mut class = serde_json::json!({
                    "workload": "RR10(4kB/4kB)", "kind": "RR", "stream_direction": null,
                    "request_bytes": 1, "response_bytes": 1, "transactions": 1, "duration_s": 1.0,
                    "latency_us": null, "tx_bytes": 1, "rx_bytes": 1,
                    "tx_bytes_per_s": 1.0, "rx_bytes_per_s": 1.0, "errors": 0,
                    "error_counts": {"refused": 0, "reset": 0, "eof": 0, "timeout": 0, "other": 0},
                    "per_second_tps": []});
                let extra: Value = serde_json::from_str(extra).unwrap();
                for (k, v) in extra.as_object().unwrap() {
                    class[k] = v.clone();
                }
                class
            })
            .collect();
        serde_json::json!({"schema_version": 1, "stackbench_version": version,
            "complete": true, "incomplete_reason": null, "started_unix_s": 1.0,
            "settings": {}, "classes": classes})
        .to_string()
    }

    fn old() -> String {
        record(
            "0.1.0",
            &[r#"{"notation":"RR10(4kB/4kB)","clients":10,"rate_tps":50000.0}"#],
        )
    }

    fn new() -> String {
        record(
            "0.2.0",
            &[
                r#"{"notation":"RR10(4kB/4kB)","clients":10,"rate_tps":50000.0}"#,
                r#"{"workload":"CRR1(64B/8kB)","kind":"CRR","notation":"CRR1(64B/8kB)","clients":1,"rate_tps":8000.0,
             "cpu":{"server":{"cpus":[1],"method":"proc_stat_cpuset","window_s":1.0,"cpu_seconds":1.0,"util_pct":10.0,
               "cpu_us_per_tran":12.5,"cpu_us_per_mb":null,"breakdown":{"user":0.0,"nice":0.0,
               "system":0.0,"irq":0.0,"softirq":0.0,"steal":0.0,"iowait":0.0,"idle":0.0},
               "process":null,"process_cpu_us_per_tran":null},"client":null,"separable":true,
               "shared":null,"total_cpu_seconds":null,"total_cpu_us_per_tran":null},
             "memory":{"server":{"rss_bytes":4096000,"rss_bytes_per_conn":4096,"kernel_sock_bytes":2048000,
               "kernel_sock_bytes_per_conn":2048,"connections":1,"tcp_inuse":1,"tcp_orphan":0,"tcp_tw":0}}}"#,
            ],
        )
    }

    /// The version check of every record reader: a record from a newer
    /// stackbench is refused in one line instead of being misread.
    #[test]
    fn a_record_from_a_newer_stackbench_is_refused() {
        let newer = old().replace(r#""schema_version":1"#, r#""schema_version":99"#);
        let e = read("newer.json", &newer, Side::Server, None)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with(
                "newer.json: record schema_version 99 is newer than this stackbench reads"
            ),
            "{e}"
        );
        assert!(!e.contains('\n'), "{e}");
    }

    #[test]
    fn old_records_explain_missing_cpu() {
        let c = read("old.json", &old(), Side::Server, None).unwrap();
        assert_eq!(c.rate_tps, 50000.0);
        let e = c.cpu().unwrap_err().to_string();
        assert!(e.starts_with("old.json: has no CPU figures for the server side: it was recorded (by stackbench 0.1.0) before CPU accounting"), "{e}");
        assert!(c.cpu_warning().is_none());
        assert!(c.memory().is_err());
    }

    #[test]
    fn a_stored_run_as_results_show_prints_it_reads_as_its_record() {
        let shown = format!(
            r#"{{"id":6,"stored_unix_s":1.0,"labels":{{}},"record":{},"env":{{}}}}"#,
            old()
        );
        let c = read("shown.json", &shown, Side::Server, None).unwrap();
        assert_eq!(
            (c.notation.as_str(), c.rate_tps),
            ("RR10(4kB/4kB)", 50000.0)
        );
    }

    #[test]
    fn a_class_of_a_shared_mix_has_no_cpu_of_its_own() {
        // new()'s two classes as one mix written before `attribution`.
        let mut mix: Value = serde_json::from_str(&new()).unwrap();
        for class in mix["classes"].as_array_mut().unwrap() {
            class["workload"] = "RR10(4kB/4kB)+CRR1(64B/8kB)".into();
        }
        let mix = mix.to_string();
        let c = read("mix.json", &mix, Side::Server, Some("1")).unwrap();
        let e = c.cpu().unwrap_err().to_string();
        assert!(e.contains("not attributable per class"), "{e}");
        // Two workloads run one after the other each have their own CPU.
        let c = read("new.json", &new(), Side::Server, Some("1")).unwrap();
        assert_eq!(c.cpu().unwrap().cpu_us_per_tran, 12.5);
        let own = mix.replace(r#""cpu":{"#, r#""cpu":{"attribution":"class","#);
        let c = read("own.json", &own, Side::Server, Some("1")).unwrap();
        assert_eq!(c.cpu().unwrap().cpu_us_per_tran, 12.5);
    }

    #[test]
    fn classes_by_index_or_notation() {
        let e = read("new.json", &new(), Side::Server, None)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(
                "--class is required: new.json has 2 classes: 0 = RR10(4kB/4kB), 1 = CRR1(64B/8kB)"
            ),
            "{e}"
        );
        let c = read("new.json", &new(), Side::Server, Some("CRR1(64B/8kB)")).unwrap();
        assert_eq!(c.cpu().unwrap().cpu_us_per_tran, 12.5);
        assert_eq!(c.memory().unwrap().kernel_sock_bytes_per_conn, Some(2048.0));
        let c = read("new.json", &new(), Side::Client, Some("1")).unwrap();
        let e = c.cpu().unwrap_err().to_string();
        assert!(
            e.contains("CPU was not measured for the client side"),
            "{e}"
        );
        assert!(read("new.json", &new(), Side::Server, Some("7")).is_err());
        assert!(read("x.json", "{", Side::Server, None)
            .unwrap_err()
            .to_string()
            .starts_with("x.json: not a stackbench result"));
    }
}
