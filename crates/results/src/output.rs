//! Exporters of a run record: the human table, JSON and CSV. Pure functions
//! from a [`RunRecord`] to text (hyperfine's exporters), so every format is
//! testable without running anything.

use std::fmt::Write as _;

use stackbench_model::settings::Spin;
use stackbench_record::{AgentsSummary, ClassResult, RunRecord};
use stackbench_record::{
    CpuAttribution, CpuMethod, MeasureSummary, PacingMode, PopulationFigures, Repetitions, SideCpu,
    TlsFigures,
};

pub use crate::run_table::Layout;
use crate::run_table::{self, opt};

/// Latency mean, p50, p90, p99, p99.9 and max, µs; all `None` when the
/// window had no transaction (printed "-", empty in CSV, null in JSON).
fn latency_cells(c: &ClassResult) -> [Option<f64>; 6] {
    let Some(l) = &c.latency_us else {
        return [None; 6];
    };
    [l.mean, l.p50, l.p90, l.p99, l.p999, l.max].map(Some)
}

/// CPU figures of a class as (client µs/tr, server µs/tr, client util %, server util %).
fn cpu_cells(c: &ClassResult) -> [Option<f64>; 4] {
    let Some(cpu) = &c.cpu else { return [None; 4] };
    let client = cpu.client.as_ref();
    let server = cpu.server.as_ref();
    [
        client.and_then(|s| s.cpu_us_per_tran),
        server.and_then(|s| s.cpu_us_per_tran),
        client.map(|s| s.util_pct),
        server.map(|s| s.util_pct),
    ]
}

/// The human table: one row per class, fitted to `layout`
/// ([`crate::run_table`]), then the lines under it and the effective
/// settings wrapped to its width.
pub fn human(record: &RunRecord, layout: Layout) -> String {
    let mut out = run_table::fit(&run_table::class_columns(), &record.classes, layout);
    out.push_str(&spin_line(record.settings.spin));
    out.push_str(&mix_cpu_lines(record));
    for c in &record.classes {
        if let Some(rep) = &c.repetitions {
            out.push_str(&repetitions_line(&c.notation, rep));
        }
    }
    for c in &record.classes {
        if let Some(p) = &c.population {
            out.push_str(&population_lines(c, p));
        }
    }
    for c in &record.classes {
        if let Some(t) = &c.tls {
            out.push_str(&tls_line(&c.notation, t));
        }
    }
    let foreign = record
        .settings
        .target
        .as_ref()
        .is_some_and(|t| t.0.starts_with("http://"));
    for c in &record.classes {
        out.push_str(&http_line(c, foreign));
        out.push_str(&sessions_line(c, record.settings.protocol.name()));
    }
    out.push_str(&server_lines(record));
    if let Some(a) = &record.agents {
        out.push_str(&agents_lines(a));
    }
    out.push_str(&settings_block(record, layout.width));
    if !record.complete {
        let reason = record.incomplete_reason.as_deref().unwrap_or("unknown");
        let _ = writeln!(
            out,
            "INCOMPLETE: {reason}; the figures above cover only what was measured."
        );
    }
    out
}

/// Under the table: which sides' per-class CPU came from the classes' own
/// threads (`class_workers`), and per mix on shared worker threads its CPU
/// per transaction (of any class) per side, and why no class has its own.
fn mix_cpu_lines(record: &RunRecord) -> String {
    let mut out = String::new();
    let own = |s: &Option<SideCpu>| {
        s.as_ref().is_some_and(|s| {
            s.method == CpuMethod::Threads && s.attribution == CpuAttribution::Class
        })
    };
    let sides: Vec<&str> = [("cli", true), ("srv", false)]
        .into_iter()
        .filter(|(_, client)| {
            record.classes.iter().any(|c| {
                c.cpu
                    .as_ref()
                    .is_some_and(|cpu| own(if *client { &cpu.client } else { &cpu.server }))
            })
        })
        .map(|(name, _)| name)
        .collect();
    if !sides.is_empty() {
        let _ = writeln!(
            out,
            "classes on separate workers: each class's {} µs/tr is its own worker threads' \
             run time (method threads; softirq work in interrupt context is not in it).",
            sides.join(" and ")
        );
    }
    let shares = |c: &ClassResult| {
        c.cpu
            .as_ref()
            .is_some_and(|c| c.attribution == CpuAttribution::Mix)
    };
    // With their own figures in the table, the mix's is in the JSON only.
    let shown = record.mix_cpu.iter().filter(|m| {
        record
            .classes
            .iter()
            .any(|c| c.workload == m.workload && shares(c))
    });
    for m in shown {
        let side = |s: &Option<SideCpu>| opt(s.as_ref().and_then(|s| s.cpu_us_per_tran), 2);
        let _ = writeln!(
            out,
            "CPU of the mix {}: cli {} µs/tr, srv {} µs/tr over its {} transactions of all \
             classes. Its classes share worker threads, so one class's CPU cannot be told from \
             the others' (\"mix\" in the table); --class-workers gives each class its own.",
            m.workload,
            side(&m.cpu.client),
            side(&m.cpu.server),
            m.transactions
        );
    }
    out
}

/// Which side busy-polled, under the table, so its CPU figures are read as
/// such (empty when neither did).
fn spin_line(spin: Spin) -> String {
    let sides = match spin {
        Spin::None => return String::new(),
        Spin::Driver => "the driver (cli)",
        Spin::Responder => "the responder (srv)",
        Spin::Both => "both sides (cli and srv)",
    };
    format!(
        "spin {}: {sides} busy-polled: its util% is ~100% per worker by design and its \
         µs/tr include the polling\n",
        spin.name()
    )
}

/// A TLS class's line under the table: what was negotiated, its
/// handshakes, CPU µs per handshake per side, and key updates.
pub fn tls_line(notation: &str, t: &TlsFigures) -> String {
    let mut out = format!(
        "tls {notation}: TLS {} {} ({}); handshakes {} full, {} resumed, p50/p99 {}/{}",
        t.version,
        t.cipher,
        t.cipher_code,
        t.full_handshakes,
        t.resumed_handshakes,
        opt_micros(t.handshake_latency_us.map(|l| l.p50)),
        opt_micros(t.handshake_latency_us.map(|l| l.p99))
    );
    if let Some(alpn) = &t.alpn {
        let _ = write!(out, "; ALPN {alpn}");
    }
    match t.server_verified {
        Some(true) => out.push_str("; certificate verified"),
        Some(false) => out.push_str("; certificate NOT verified (--insecure)"),
        None => {}
    }
    if let Some(cpu) = &t.handshake_cpu_us {
        let _ = write!(
            out,
            "; CPU µs per handshake full/resumed: client {}/{}, server {}/{}",
            opt(cpu.client_full, 0),
            opt(cpu.client_resumed, 0),
            opt(cpu.server_full, 0),
            opt(cpu.server_resumed, 0)
        );
    }
    if t.rekeys + t.server_rekeys > 0 {
        let _ = write!(
            out,
            "; key updates: client {}, server {}",
            t.rekeys, t.server_rekeys
        );
    }
    out.push('\n');
    out
}

/// An HTTP class's line under the table, when there is something to say:
/// its responses by status class and the codes other than 2xx (each an
/// `http_status` error), and, against a foreign server (`foreign`), the
/// mean response size when it is not the notation's (the server chose it;
/// the byte figures are what moved). Empty otherwise.
pub fn http_line(c: &ClassResult, foreign: bool) -> String {
    let Some(status) = &c.http_status else {
        return String::new();
    };
    let mut clauses = Vec::new();
    let non_2xx = status.non_2xx();
    if non_2xx > 0 {
        let classes: Vec<String> = status
            .classes()
            .iter()
            .map(|(class, n)| format!("{class} {n}"))
            .collect();
        clauses.push(format!(
            "responses {}; not 2xx: {} ({:.1}%, counted as errors)",
            classes.join(", "),
            status.non_2xx_text(),
            100.0 * status.non_2xx_share()
        ));
    }
    if foreign && c.transactions > 0 {
        let mean = c.rx_bytes as f64 / c.transactions as f64;
        if (mean - c.response_bytes as f64).abs() >= 1.0 {
            clauses.push(format!(
                "responses averaged {mean:.0} B on the wire, not the notation's {} B: the \
                 server's own sizes, and the byte figures are what moved",
                c.response_bytes
            ));
        }
    }
    if clauses.is_empty() {
        return String::new();
    }
    format!("http {}: {}\n", c.notation, clauses.join("; "))
}

/// Against a plain server: which processes were measured as its side
/// (`record.server_process`) and, per class, their own CPU per transaction
/// beside the driver's, memory per connection and storage bytes written
/// per transaction — or the note saying why the server side is absent.
/// Empty for stackbench's own responder.
pub fn server_lines(record: &RunRecord) -> String {
    let Some(text) = server_identity(record) else {
        return String::new();
    };
    let mut out = format!("{text}\n");
    if record
        .server_process
        .as_ref()
        .is_some_and(|p| p.note.is_some())
    {
        return out;
    }
    for c in &record.classes {
        let Some(cpu) = &c.cpu else { continue };
        let process =
            |s: &Option<SideCpu>| opt(s.as_ref().and_then(|s| s.process_cpu_us_per_tran), 2);
        let disk = cpu
            .server
            .as_ref()
            .and_then(|s| s.disk)
            .map_or("-".to_string(), |d| opt(d.write_bytes_per_tran, 1));
        let memory = c.memory.as_ref().and_then(|m| m.server.as_ref());
        let per_conn = |v: Option<f64>| opt(v, 0);
        let _ = writeln!(
            out,
            "  {}: server processes {} CPU µs/tr (driver's {}), RSS {} B per connection, \
             kernel {} B per connection, storage writes {} B/tr",
            c.notation,
            process(&cpu.server),
            process(&cpu.client),
            per_conn(memory.and_then(|m| m.rss_bytes_per_conn)),
            per_conn(memory.and_then(|m| m.kernel_sock_bytes_per_conn)),
            disk
        );
        if cpu.application.is_some() {
            let _ = writeln!(
                out,
                "  {}: responder application {} CPU µs/tr",
                c.notation,
                process(&cpu.application)
            );
        }
    }
    out.push_str(&application_line(record));
    out
}

/// Which processes a broker's responder application was (the third side),
/// or the note saying why it was not measured; empty otherwise.
fn application_line(record: &RunRecord) -> String {
    let Some(p) = record.responder_application.as_ref() else {
        return String::new();
    };
    if let Some(note) = &p.note {
        return format!("{note}\n");
    }
    let pids: Vec<String> = p.pids.iter().map(u32::to_string).collect();
    format!(
        "responder application: {} (pids {}, found by their connections to the broker)\n",
        p.exe.as_deref().unwrap_or("executable unreadable"),
        pids.join(",")
    )
}

/// Which processes a plain server's side was, e.g. `server side:
/// /usr/sbin/nginx (pids 10,11, found by its listener 127.0.0.1:8080; CPUs
/// not pinned)`, or the note saying why it was not measured; `None` for
/// stackbench's own responder.
pub fn server_identity(record: &RunRecord) -> Option<String> {
    let p = record.server_process.as_ref()?;
    if let Some(note) = &p.note {
        return Some(note.clone());
    }
    let pids: Vec<String> = p.pids.iter().map(u32::to_string).collect();
    let by = p
        .listener
        .as_ref()
        .map_or("server_pid".to_string(), |l| format!("its listener {l}"));
    Some(format!(
        "server side: {} (pids {}, found by {by}; CPUs {})",
        p.exe.as_deref().unwrap_or("executable unreadable"),
        pids.join(","),
        if p.cpus.is_empty() {
            "not pinned".to_string()
        } else {
            stackbench_model::units::format_cpu_list(&p.cpus)
        }
    ))
}

/// A class's session setups (a protocol whose connections open with one:
/// tn3270's negotiation, ftp's log-on), one line under the table, named by
/// the run's protocol: `tn3270 RR10(100B/800B): sessions 10: tn3270e 10;
/// functions …`, with the failed ones by reason; then a script's steps,
/// one line each. Empty for other protocols.
pub fn sessions_line(c: &ClassResult, protocol: &str) -> String {
    let mut out = match &c.sessions {
        Some(s) => format!("{protocol} {}: {}\n", c.notation, s.summary()),
        None => String::new(),
    };
    // A script's steps, one line each: which screen is slow, which timed out.
    for step in c.steps.iter().flatten() {
        out.push_str(&format!("{protocol} {}: {}\n", c.notation, step.summary()));
    }
    out
}

/// What a run's TLS classes negotiated (`TLS 1.2 NAME (C02F)`), `clear
/// text` for a run without TLS; `None` when the record has no class.
pub fn tls_negotiated(record: &RunRecord) -> Option<String> {
    record.classes.first()?;
    let mut seen: Vec<String> = Vec::new();
    for t in record.classes.iter().filter_map(|c| c.tls.as_ref()) {
        let text = format!("TLS {} {} ({})", t.version, t.cipher, t.cipher_code);
        if !seen.contains(&text) {
            seen.push(text);
        }
    }
    Some(if seen.is_empty() {
        "clear text".to_string()
    } else {
        seen.join(", ")
    })
}

/// Resident memory each connection holds per side (the first class with
/// memory figures), e.g. `client 41.3 kB, server 38.0 kB`: the storage
/// per (secure) connection of TN3270 capacity planning, compared across
/// variants.
pub fn storage_per_conn(record: &RunRecord) -> Option<String> {
    let m = record.classes.iter().find_map(|c| c.memory.as_ref())?;
    let side = |s: &Option<stackbench_record::SideMemory>| {
        let bytes = s.as_ref().and_then(|s| s.rss_bytes_per_conn);
        bytes.map_or("-".to_string(), |b| format!("{:.1} kB", b / 1000.0))
    };
    Some(format!(
        "client {}, server {}",
        side(&m.client),
        side(&m.server)
    ))
}

/// The first TLS class's CPU µs per handshake, `full/resumed` per side.
pub fn tls_handshake_cpu(record: &RunRecord) -> Option<String> {
    let cpu = record
        .classes
        .iter()
        .find_map(|c| c.tls.as_ref()?.handshake_cpu_us)?;
    Some(format!(
        "full/resumed: client {}/{}, server {}/{}",
        opt(cpu.client_full, 0),
        opt(cpu.client_resumed, 0),
        opt(cpu.server_full, 0),
        opt(cpu.server_resumed, 0)
    ))
}

/// `1.2 ms` or `850 µs`: a latency in µs as a reader would write it.
fn micros(us: f64) -> String {
    if us >= 10_000.0 {
        format!("{:.1} ms", us / 1e3)
    } else {
        format!("{us:.0} µs")
    }
}

/// [`micros`], or "-" where nothing was measured.
fn opt_micros(us: Option<f64>) -> String {
    us.map_or_else(|| "-".to_string(), micros)
}

/// A user population's figures under the table: pacing and what was
/// measured of it, Little's law, generator lag, the open loop's offered rate
/// and uncorrected latency, connecting time, and storage per user per side
/// (as TN3270 capacity planning's storage rows), measured with every client
/// connected.
pub fn population_lines(c: &ClassResult, p: &PopulationFigures) -> String {
    let mut out = format!("population {}: {}", c.notation, pacing_text(c, p));
    let _ = writeln!(
        out,
        "; {}/{} clients connected in {:.2} s",
        p.connected, c.clients, p.connect_s
    );
    out.push_str(&little_line(c, p));
    if let Some(u) = &p.latency_uncorrected_us {
        let _ = writeln!(
            out,
            "  latency p50/p99: {}/{} from the intended send (corrected), {}/{} from the actual send",
            opt_micros(c.latency_us.map(|l| l.p50)),
            opt_micros(c.latency_us.map(|l| l.p99)),
            micros(u.p50),
            micros(u.p99)
        );
    }
    if let Some(lag) = &p.generator_lag_us {
        let _ = writeln!(
            out,
            "  generator lag p50/p99/max {}/{}/{}{}; late {}, dropped {}",
            micros(lag.p50),
            micros(lag.p99),
            micros(lag.max),
            p.generator_lag_p99_share_pct
                .map_or(String::new(), |s| format!(" ({s:.0}% of the latency p99)")),
            p.late,
            p.dropped
        );
    }
    out.push_str(&storage_line(c));
    out
}

/// `think 30s (mean 30.000 s)`, `open loop 5000/s poisson offered, …`.
fn pacing_text(c: &ClassResult, p: &PopulationFigures) -> String {
    let text = p.pacing_text.as_deref().unwrap_or("-");
    match p.pacing {
        PacingMode::Closed => "closed loop".to_string(),
        PacingMode::Think => format!("think {text} (mean {} s)", opt(p.think_mean_s, 3)),
        PacingMode::Open => format!(
            "open loop {text} {} offered, {:.1} tr/s achieved",
            p.arrivals.as_deref().unwrap_or("constant"),
            c.rate_tps
        ),
    }
}

/// Little's law with the measured X, R (the busy time) and Z (the wait).
fn little_line(c: &ClassResult, p: &PopulationFigures) -> String {
    let (Some(wait), Some(busy)) = (p.wait_mean_s, p.latency_uncorrected_us.or(c.latency_us))
    else {
        return String::new();
    };
    let busy_us = busy.mean;
    let implied = c.rate_tps * (busy_us / 1e6 + wait);
    format!(
        "  Little's law: N = {}, X(R+Z) = {implied:.1} ({:+.2}%), X = {:.1} tr/s, R = {}, \
         Z measured = {wait:.4} s\n",
        c.clients,
        100.0 * (implied / f64::from(c.clients) - 1.0),
        c.rate_tps,
        micros(busy_us)
    )
}

/// User-space and kernel socket bytes per connection, per side.
fn storage_line(c: &ClassResult) -> String {
    let Some(m) = &c.memory else {
        return String::new();
    };
    let side = |s: &Option<stackbench_record::SideMemory>| {
        s.as_ref().map_or("-".to_string(), |s| {
            let bytes = |b: Option<f64>| b.map_or("-".to_string(), |b| format!("{b:.0} B"));
            format!(
                "{} user + {} kernel",
                bytes(s.rss_bytes_per_conn),
                bytes(s.kernel_sock_bytes_per_conn)
            )
        })
    };
    let mut text = format!(
        "  storage per user: driver {}, responder {} (kernel: each side's own sockets)\n",
        side(&m.client),
        side(&m.server)
    );
    // Why a figure above is "-": said where the figure is printed.
    for (name, s) in [("driver", &m.client), ("responder", &m.server)] {
        for note in s.iter().flat_map(|s| &s.notes) {
            let _ = writeln!(text, "    {name}: {note}");
        }
    }
    text
}

/// `mean ± stdev unit (L% CI lo … hi, width W%)` for one measure.
fn measure_text(m: &MeasureSummary, unit: &str) -> String {
    let mut text = format!("{:.2}", m.mean);
    if let Some(sd) = m.stdev {
        let _ = write!(text, " ± {sd:.2}");
    }
    text.push_str(unit);
    if let Some(ci) = &m.confidence {
        let width = ci
            .width_pct_of_mean
            .map_or(String::new(), |w| format!(", width {w:.1}%"));
        let _ = write!(
            text,
            " ({}% CI {:.2} … {:.2}{width})",
            ci.level_pct, ci.low, ci.high
        );
    }
    text
}

/// One line per repeated class: n, and each measure's mean, stdev and interval.
fn repetitions_line(notation: &str, rep: &Repetitions) -> String {
    let mut line = format!(
        "repetitions {notation}: n={}, rate {}",
        rep.runs.len(),
        measure_text(&rep.rate_tps, " tr/s")
    );
    for (side, m) in [
        ("client", &rep.client_cpu_us_per_tran),
        ("server", &rep.server_cpu_us_per_tran),
    ] {
        if let Some(m) = m {
            let _ = write!(line, "; {side} CPU {}", measure_text(m, " µs/tr"));
        }
    }
    match (rep.target_width_pct, rep.reached) {
        (Some(w), Some(true)) => {
            let _ = write!(line, "; target width {w}% reached");
        }
        (Some(w), _) => {
            let _ = write!(line, "; target width {w}% NOT reached");
        }
        _ => {}
    }
    line.push('\n');
    line
}

/// The effective settings, every one of the settings table as `name=value`,
/// after the responder's kind, wrapped to `width` columns.
/// The agents of a run split over several driver processes: how many, who
/// started them, the start skew, and each agent's transactions and rate (so
/// a slow or late agent shows), plus what could not be merged exactly.
pub fn agents_lines(a: &AgentsSummary) -> String {
    let mut out = String::new();
    let skew = a
        .start_skew_s
        .map_or("-".to_string(), |s| format!("{:.2} ms", s * 1e3));
    let _ = writeln!(
        out,
        "agents: {} ({} launcher), {} responder{}, start skew {skew}",
        a.count,
        a.launcher,
        a.responders,
        if a.responders == 1 { "" } else { "s" }
    );
    for r in &a.agents {
        let classes: Vec<String> = r
            .classes
            .iter()
            .map(|c| {
                format!(
                    "{} {} tr {:.1} tr/s",
                    c.notation, c.transactions, c.rate_tps
                )
            })
            .collect();
        let state = if r.complete {
            String::new()
        } else {
            format!(
                " INCOMPLETE: {}",
                r.incomplete_reason.as_deref().unwrap_or("no result")
            )
        };
        let _ = writeln!(
            out,
            "  agent {}/{} on {} (pid {}): {}{state}",
            r.index,
            r.count,
            r.host,
            r.pid,
            classes.join(", ")
        );
    }
    for note in &a.merge_notes {
        let _ = writeln!(out, "  merge note: {note}");
    }
    out
}

pub fn settings_block(record: &RunRecord, width: usize) -> String {
    let items: Vec<String> = record
        .settings
        .describe()
        .into_iter()
        .map(|(name, text)| format!("{name}={text}"))
        .collect();
    let first = format!("settings ({} responder):", record.responder);
    run_table::wrap_words(&first, items.iter().map(String::as_str), width, 2)
}

/// The JSON document (`--json`): the record itself, pretty-printed.
pub fn json(record: &RunRecord) -> String {
    serde_json::to_string_pretty(record).expect("records serialise") + "\n"
}

/// Column names of the CSV export, one row per class.
pub const CSV_HEADER: &str = "workload,notation,kind,clients,request_bytes,response_bytes,transactions,duration_s,rate_tps,\
latency_mean_us,latency_p50_us,latency_p90_us,latency_p99_us,latency_p999_us,latency_max_us,\
tx_bytes_per_s,rx_bytes_per_s,errors,client_cpu_us_per_tran,server_cpu_us_per_tran,client_util_pct,server_util_pct,complete";

/// A CSV document (RFC 4180 quoting where a field needs it, `\n` line ends)
/// of a header and rows, written by the `csv` crate.
pub(crate) fn csv_document<R>(header: &[&str], rows: impl IntoIterator<Item = R>) -> String
where
    R: IntoIterator,
    R::Item: AsRef<[u8]>,
{
    fn write<R: IntoIterator<Item = impl AsRef<[u8]>>>(
        writer: &mut csv::Writer<Vec<u8>>,
        header: &[&str],
        rows: impl IntoIterator<Item = R>,
    ) -> csv::Result<()> {
        writer.write_record(header)?;
        for row in rows {
            writer.write_record(row)?;
        }
        Ok(writer.flush()?)
    }
    let mut writer = csv::Writer::from_writer(Vec::new());
    write(&mut writer, header, rows).expect("writing CSV to memory cannot fail");
    let bytes = writer.into_inner().expect("flushed above");
    String::from_utf8(bytes).expect("CSV of UTF-8 fields is UTF-8")
}

/// CSV (`--csv`): a header and one row per class.
pub fn csv(record: &RunRecord) -> String {
    let header: Vec<&str> = CSV_HEADER.split(',').collect();
    let rows = record.classes.iter().map(|c| {
        let none_empty = |v: Option<f64>| v.map_or(String::new(), |v| v.to_string());
        let cpu = cpu_cells(c).map(none_empty);
        let mut row = vec![
            c.workload.to_string(),
            c.notation.to_string(),
            c.kind.name().to_string(),
            c.clients.to_string(),
            c.request_bytes.to_string(),
            c.response_bytes.to_string(),
            c.transactions.to_string(),
            c.duration_s.to_string(),
            c.rate_tps.to_string(),
        ];
        row.extend(latency_cells(c).map(none_empty));
        row.extend([c.tx_bytes_per_s, c.rx_bytes_per_s].map(|v| v.to_string()));
        row.push(c.errors.to_string());
        row.extend(cpu);
        row.push(record.complete.to_string());
        row
    });
    csv_document(&header, rows)
}

#[cfg(test)]
mod tests {
    use super::*;
    use stackbench_record::HandshakeCpuUs;

    #[test]
    fn agents_lines_give_skew_each_agent_and_an_incomplete_one() {
        use stackbench_record::{AgentClassRow, AgentRecord};
        let row = |index: u32, complete: bool| AgentRecord {
            index,
            count: 2,
            host: format!("node{index}"),
            pid: 100 + index,
            complete,
            incomplete_reason: (!complete).then(|| "died".to_string()),
            classes: vec![AgentClassRow {
                notation: "RR2(1B/1B)".into(),
                transactions: 5000,
                rate_tps: 1234.5,
                ..Default::default()
            }],
            ..Default::default()
        };
        let text = agents_lines(&AgentsSummary {
            count: 2,
            launcher: "slurm".into(),
            responders: 1,
            start_skew_s: Some(0.0004),
            merge_notes: vec!["left out".into()],
            agents: vec![row(0, true), row(1, false)],
        });
        assert!(
            text.starts_with("agents: 2 (slurm launcher), 1 responder, start skew 0.40 ms\n"),
            "{text}"
        );
        assert!(
            text.contains("agent 0/2 on node0 (pid 100): RR2(1B/1B) 5000 tr 1234.5 tr/s\n"),
            "{text}"
        );
        assert!(
            text.contains(
                "agent 1/2 on node1 (pid 101): RR2(1B/1B) 5000 tr 1234.5 tr/s INCOMPLETE: died"
            ),
            "{text}"
        );
        assert!(text.contains("merge note: left out"));
    }

    #[test]
    fn http_line_shows_codes_other_than_2xx_and_a_foreign_servers_sizes() {
        use stackbench_record::HttpStatus;
        let mut c = ClassResult {
            notation: "RR3(100B/100B)".into(),
            request_bytes: 100,
            response_bytes: 100,
            transactions: 30,
            rx_bytes: 30 * 100,
            http_status: Some(HttpStatus {
                codes: [(200, 30)].into(),
            }),
            ..ClassResult::sample()
        };
        // All 2xx of the notation's size: nothing to say.
        assert_eq!(http_line(&c, true), "");
        c.http_status = Some(HttpStatus {
            codes: [(200, 17), (301, 1), (404, 10), (500, 2)].into(),
        });
        assert_eq!(
            http_line(&c, false),
            "http RR3(100B/100B): responses 2xx 17, 3xx 1, 4xx 10, 5xx 2; not 2xx: \
             301 ×1, 404 ×10, 500 ×2 (43.3%, counted as errors)\n"
        );
        c.http_status = Some(HttpStatus {
            codes: [(200, 30)].into(),
        });
        c.rx_bytes = 30 * 54;
        assert_eq!(http_line(&c, false), "", "the own responder's sizes");
        let line = http_line(&c, true);
        assert!(
            line.contains("responses averaged 54 B on the wire, not the notation's 100 B"),
            "{line}"
        );
        c.http_status = None;
        assert_eq!(http_line(&c, true), "", "not HTTP");
        assert_eq!(sessions_line(&c, "tn3270"), "");
        let mut sessions = stackbench_record::Sessions {
            attempted: 2,
            ..Default::default()
        };
        sessions.negotiated.insert("tn3270".into(), 1);
        sessions.failed.insert("closed".into(), 1);
        c.sessions = Some(sessions);
        assert!(
            sessions_line(&c, "tn3270").ends_with(": sessions 2: tn3270 1; failed 1 (closed 1)\n"),
            "{}",
            sessions_line(&c, "tn3270")
        );
    }

    #[test]
    fn tls_line_names_cipher_handshake_cpu_and_key_updates() {
        let t = TlsFigures {
            version: "1.2".into(),
            cipher: "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256".into(),
            cipher_code: "C02F".into(),
            full_handshakes: 40,
            rekeys: 3,
            handshake_cpu_us: Some(HandshakeCpuUs {
                client_full: Some(410.4),
                server_full: Some(1320.0),
                ..HandshakeCpuUs::default()
            }),
            ..TlsFigures::default()
        };
        let line = tls_line("CRR4(64B/1kB)", &t);
        assert!(
            line.starts_with("tls CRR4(64B/1kB): TLS 1.2 TLS_ECDHE_RSA"),
            "{line}"
        );
        assert!(line.contains("client 410/-, server 1320/-"), "{line}");
        assert!(line.contains("key updates: client 3, server 0"), "{line}");
    }
}
