#!/usr/bin/env python3
"""Output parsers and the summary table for bench/peers.sh.

Owns two things the shell script should not do by itself:
  * turning each tool's raw output (stackbench --json, netperf omni CSV, neper
    key=value lines, iperf3 -J, sockperf pp, bench/pingpong.c) into the same
    key=value figures:
        rate_tps, bulk_bytes_per_s, lat_mean_us, lat_p50_us, lat_p99_us,
        cli_cpu_us_per_tr, srv_cpu_us_per_tr (RR, CRR), host_cpu_us_per_tr
        (both sides together: netperf's only CPU figure on loopback),
        cli_cpu_us_per_mib, srv_cpu_us_per_mib (streams)
    (a figure a tool does not report is simply absent); a server's log adds its
    side's CPU where only the server prints it (neper, pingpong);
  * with KERNEL_WORK=1, the kernel work of a run from `perf stat -A` (syscall
    tracepoints and context switches per CPU) and `nstat` (TCP segments sent):
        sys_cli_per_tr, sys_srv_per_tr, cs_per_tr, segs_per_tr (per MiB for
        streams: *_per_mib), and sysmix_cli / sysmix_srv (the syscalls by name);
  * the side-by-side table: median of each figure over the repetitions, the
    stackbench/peer ratio of medians, and the paired ratios (stackbench's rep i
    against the peer's rep i, run next to it): their median and range. On a
    shared VM whose speed drifts between runs the paired figure is the one to
    read — drift moves both halves of a pair alike.

Usage:
    peers_report.py parse TOOL FILE [NOTATION]   # TOOL: stackbench|netperf|neper|iperf3|sockperf|pingpong
    peers_report.py parse-server TOOL FILE       # TOOL: neper|pingpong (its server's log)
    peers_report.py parse-work KV PERF NSTAT_BEFORE NSTAT_AFTER SECONDS CLIENT_CPUS SERVER_CPUS UNIT
    peers_report.py table RUN_DIR
    peers_report.py self-test

`parse` prints key=value lines on stdout, or one line naming what is wrong on
stderr and exits 1. Standard library only, so python3 is the one prerequisite;
stackbench's records are read through the binary ($STACKBENCH, else
`stackbench` on PATH): `results export --flat` gives this script every
record version as the same flat columns.
"""

import json
import os
import statistics
import sys

import flat_export


class ParseError(Exception):
    """Raw output that does not hold the figures we need; the message says why."""


def flat_rows(path):
    """The run record in PATH as flat rows (see flat_export.py)."""
    try:
        return flat_export.flat_rows(path)
    except flat_export.FlatError as err:
        raise ParseError(str(err)) from None


def parse_stackbench(rows, notation=None):
    """`stackbench run ... --json`, as the flat rows of flat_rows()."""
    if not rows:
        raise ParseError("no classes in the record")
    row = next((r for r in rows if r.get("notation") == notation), rows[0])
    if not row.get("complete", False):
        raise ParseError("run incomplete: %s" % row.get("incomplete_reason"))
    # The bulk direction: rx (server -> client) for a GET, tx for a PUT; when the
    # record does not say, the larger of the two.
    direction = str(row.get("stream_direction") or "").lower()
    tx, rx = row.get("tx_bytes_per_s") or 0.0, row.get("rx_bytes_per_s") or 0.0
    bulk = rx if direction == "get" else tx if direction == "put" else max(tx, rx)
    out = {
        "rate_tps": row["rate_tps"],
        "bulk_bytes_per_s": bulk,
        "lat_mean_us": row.get("latency_mean_us"),
        "lat_p50_us": row.get("latency_p50_us"),
        "lat_p99_us": row.get("latency_p99_us"),
        "errors": row.get("errors") or 0,
        "notation": row.get("notation"),
    }
    codes = sorted({c for c in (row.get("warnings") or "").split(",") if c})
    if codes:
        out["warnings"] = ",".join(codes)
    # Two views of each side's CPU: the CPU set (everything its CPUs ran,
    # softirq included) and the process (getrusage-like utime + stime), the
    # view neper, iperf3 and pingpong report.
    mib = bulk * float(row.get("duration_s") or 0) / (1024.0 * 1024.0)
    for side, key in (("client", "cli"), ("server", "srv")):
        col = lambda name, side=side: row.get("%s_%s" % (side, name))
        out[key + "_cpu_us_per_tr"] = col("cpu_us_per_tran")
        out[key + "_cpu_us_per_mib"] = col("cpu_us_per_mib")
        out[key + "_proc_cpu_us_per_tr"] = col("process_cpu_us_per_tran")
        proc_s = col("process_cpu_s")
        if proc_s is not None and mib > 0:
            out[key + "_proc_cpu_us_per_mib"] = proc_s * 1e6 / mib
    # Both sides' CPU sets together, measured the way netperf measures the
    # host (see tick_host_cpu): what its service demand is compared with.
    out["host_cpu_us_per_tr"] = tick_host_cpu(row, row.get("transactions"))
    if row.get("io"):
        out["io"] = row["io"]  # the backend used (`auto` is settled)
    if row.get("spin") not in (None, "", "none"):
        out["spin"] = row["spin"]
    if row.get("crr_close"):
        out["crr_close"] = row["crr_close"]
    return out


NETPERF_FIELDS = "THROUGHPUT,THROUGHPUT_UNITS,MEAN_LATENCY,P50_LATENCY,P99_LATENCY,LOCAL_SD,REMOTE_SD"


def tick_host_cpu(row, transactions):
    """Both sides' CPU per transaction by netperf's procstat method: per CPU
    set, busy ticks / all ticks of /proc/stat (`tick_util_pct`) times the
    set's capacity (window x CPUs); each CPU once when the sets overlap
    (`shared`). stackbench's own figure (`total_cpu_us_per_tran`) is window
    minus the clock-measured idle instead, because on NOHZ kernels the busy
    ticks miss slices shorter than a tick (crates/metrics/src/cpu.rs): on this
    VM's RR1 the ticks covered only 83-88% of the window, and the tick method
    reads some 10% lower. Comparing netperf with the tick figure is like with
    like; None when a side lacks it."""
    present = lambda side: row.get(side + "_window_s") is not None
    sides = ["shared"] if present("shared") else ["client", "server"]
    if not transactions or not all(row.get(side + "_tick_util_pct") is not None
                                   for side in sides):
        return None
    busy_s = sum(row[side + "_tick_util_pct"] / 100.0 * row[side + "_window_s"]
                 * row[side + "_cpu_count"] for side in sides)
    return busy_s * 1e6 / transactions


def parse_netperf(text):
    """netperf `-c -C -P 0 -- ... -o THROUGHPUT,...,P99_LATENCY,LOCAL_SD,REMOTE_SD`.
    The service demands (-c -C) of an RR test are µs of CPU per transaction;
    netperf measures every CPU of each host, so on loopback each side's figure
    covers both sides: it is reported as host_cpu_us_per_tr (the local one;
    the remote one measures the same CPUs), never as one side's CPU."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    rows = [ln.split(",") for ln in lines if ln.count(",") == 6]
    if not rows:
        raise ParseError("no 7-field omni CSV line (%s) in output" % NETPERF_FIELDS)
    thru, units, mean, p50, p99, local_sd, remote_sd = rows[-1]
    if units.strip() != "Trans/s":
        raise ParseError("throughput units %r, expected Trans/s" % units)
    out = {
        "rate_tps": float(thru),
        "lat_mean_us": float(mean),
        "lat_p50_us": float(p50),
        "lat_p99_us": float(p99),
    }
    # netperf prints -1 (or nothing) when it did not measure a side.
    for value in (local_sd, remote_sd):
        try:
            if float(value) > 0:
                out["host_cpu_us_per_tr"] = float(value)
                break
        except ValueError:
            pass
    return out


def _neper_kv(text):
    kv = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep and key and " " not in key:
            kv[key.strip()] = value.strip()
    return kv


def parse_neper(text):
    """neper client key=value output. tcp_rr/tcp_crr: throughput is tr/s and
    latency_* are seconds. tcp_stream: throughput in throughput_units (the script
    passes --throughput-opt B, so B/s)."""
    kv = _neper_kv(text)
    if "throughput" not in kv:
        raise ParseError("no throughput= line in neper output")
    thru = float(kv["throughput"])
    if "throughput_units" in kv:
        if kv["throughput_units"] != "B/s":
            raise ParseError("throughput_units=%s, expected B/s" % kv["throughput_units"])
        out = {"bulk_bytes_per_s": thru}
        out.update(neper_cpu(kv, "cli"))
        return out
    out = {"rate_tps": thru}
    for key in ("mean", "p50", "p99"):
        if "latency_" + key in kv:
            out["lat_%s_us" % key] = float(kv["latency_" + key]) * 1e6
    out.update(neper_cpu(kv, "cli"))
    return out


def neper_cpu(kv, side):
    """CPU per transaction (rr, crr: num_transactions) or per MiB (stream:
    throughput B/s × the test's time) from neper's utime/stime (getrusage of
    the whole process, before and after the test)."""
    try:
        cpu_s = (float(kv["utime_end"]) - float(kv["utime_start"])
                 + float(kv["stime_end"]) - float(kv["stime_start"]))
    except (KeyError, ValueError):
        return {}
    if "num_transactions" in kv and float(kv["num_transactions"]) > 0:
        return {side + "_cpu_us_per_tr": cpu_s * 1e6 / float(kv["num_transactions"])}
    try:
        seconds = float(kv["time_end"]) - float(kv["time_start"])
        mib = float(kv["throughput"]) * seconds / (1024.0 * 1024.0)
    except (KeyError, ValueError):
        return {}
    return {side + "_cpu_us_per_mib": cpu_s * 1e6 / mib} if mib > 0 else {}


def parse_iperf3(text):
    """iperf3 client `-J`; with -R the client is the receiver."""
    try:
        doc = json.loads(text)
    except ValueError as err:
        raise ParseError("iperf3 -J output is not JSON (%s)" % err) from None
    if doc.get("error"):
        raise ParseError("iperf3: %s" % doc["error"])
    try:
        received = doc["end"]["sum_received"]
        bps = received["bits_per_second"]
    except (KeyError, TypeError):
        raise ParseError("no end.sum_received.bits_per_second in iperf3 JSON") from None
    out = {"bulk_bytes_per_s": bps / 8.0}
    # cpu_utilization_percent: each side's process CPU (getrusage) as % of the
    # test's wall time, so CPU per MiB = % / 100 × seconds / MiB moved.
    cpu = doc["end"].get("cpu_utilization_percent") or {}
    mib = float(received.get("bytes", 0)) / (1024.0 * 1024.0)
    seconds = float(received.get("seconds", 0))
    for key, side in (("host_total", "cli"), ("remote_total", "srv")):
        if key in cpu and mib > 0:
            out[side + "_cpu_us_per_mib"] = cpu[key] / 100.0 * seconds * 1e6 / mib
    return out


def parse_sockperf(text):
    """sockperf pp (TCP): its latency is half a round trip, so one RR1
    transaction (a round trip) takes 2 × avg-latency: rate = 1e6 / (2 × avg µs),
    and the percentiles are doubled to round trips."""
    out = {}
    for line in text.splitlines():
        if "avg-latency=" in line:
            avg = float(line.split("avg-latency=")[1].split()[0])
            out["rate_tps"] = 1e6 / (2.0 * avg)
            out["lat_mean_us"] = 2.0 * avg
        for pct, key in (("50.000", "lat_p50_us"), ("99.000", "lat_p99_us")):
            if "percentile %s =" % pct in line:
                out[key] = 2.0 * float(line.split("=")[-1])
    if "rate_tps" not in out:
        raise ParseError("no avg-latency= line in sockperf output")
    return out


def parse_pingpong(text):
    """bench/pingpong.c client: `client transactions=N seconds=S rate_tps=R cpu_us_per_tr=C`.
    One connection in a closed loop: the mean round trip is 1 / rate."""
    kv = _neper_kv(text.replace(" ", "\n"))
    if "rate_tps" not in kv:
        raise ParseError("no rate_tps= in pingpong output")
    rate = float(kv["rate_tps"])
    return {"rate_tps": rate, "lat_mean_us": 1e6 / rate if rate > 0 else None,
            "cli_cpu_us_per_tr": float(kv["cpu_us_per_tr"])}


def parse_server(tool, text):
    """The server side's CPU from its log: neper's own key=value lines, or
    pingpong's `server transactions=N cpu_us_per_tr=C`."""
    if tool == "neper":
        return neper_cpu(_neper_kv(text), "srv")
    if tool == "pingpong":
        kv = _neper_kv(text.replace(" ", "\n"))
        return {"srv_cpu_us_per_tr": float(kv["cpu_us_per_tr"])} if "cpu_us_per_tr" in kv else {}
    return {}


def cpu_list(text):
    """CPUs of a taskset -c list such as "0", "2-3" or "0,2-3"."""
    cpus = set()
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        cpus.update(range(int(lo), int(hi or lo) + 1))
    return cpus


def perf_per_cpu(text):
    """`perf stat -x, -A` lines "CPU0,count,,event,..." as {event: {cpu: count}};
    "<not counted>" and comment lines are skipped."""
    out = {}
    for line in text.splitlines():
        fields = line.split(",")
        if len(fields) < 4 or not fields[0].startswith("CPU"):
            continue
        try:
            cpu, count = int(fields[0][3:]), float(fields[1])
        except ValueError:
            continue
        out.setdefault(fields[3], {})[cpu] = count
    return out


def nstat_value(text, name):
    """A counter of `nstat -asz NAME` output, or None."""
    for line in text.splitlines():
        fields = line.split()
        if len(fields) >= 2 and fields[0] == name:
            return float(fields[1])
    return None


SYSCALL_PREFIX = "syscalls:sys_enter_"


def parse_work(kv, perf_text, nstat_before, nstat_after, seconds, client_cpus, server_cpus,
               unit):
    """Kernel work per transaction (`unit` "tr") or per MiB ("mib", streams)
    of one run: the perf
    counts cover the whole run, set-up and warm-up included, and are divided by
    the run's rate x `seconds` (its measured plus warm-up time). Per side by
    CPU set; when the sets overlap, the sides cannot be told apart and only
    host-wide figures are given. Syscalls not named in the event list count
    as "other" (raw_syscalls:sys_enter is the total)."""
    rate_key = {"tr": "rate_tps", "mib": "bulk_bytes_per_s"}.get(unit)
    if rate_key is None:
        raise ParseError("unit %r is not tr or mib" % unit)
    if rate_key not in kv:
        raise ParseError("no %s to divide the kernel work by" % rate_key)
    units = float(kv[rate_key]) * seconds / (MIB if unit == "mib" else 1.0)
    if units <= 0:
        raise ParseError("zero rate: no kernel work per transaction")
    counts = perf_per_cpu(perf_text)
    if "raw_syscalls:sys_enter" not in counts:
        raise ParseError("no raw_syscalls:sys_enter counts in the perf stat output")
    cli, srv = cpu_list(client_cpus), cpu_list(server_cpus)
    sides = {"host": cli | srv} if cli & srv else {"cli": cli, "srv": srv}
    out = {}
    total = lambda event, cpus: sum(v for c, v in counts.get(event, {}).items() if c in cpus)
    for side, cpus in sides.items():
        calls = total("raw_syscalls:sys_enter", cpus)
        out["sys_%s_per_%s" % (side, unit)] = round(calls / units, 3)
        named = {ev[len(SYSCALL_PREFIX):]: total(ev, cpus) for ev in counts
                 if ev.startswith(SYSCALL_PREFIX)}
        named["other"] = max(calls - sum(named.values()), 0.0)
        mix = sorted(((n, c / units) for n, c in named.items() if c / units >= 0.005),
                     key=lambda item: -item[1])
        out["sysmix_%s" % side] = " ".join("%s:%.2f" % item for item in mix)
    out["cs_per_%s" % unit] = round(total("context-switches", cli | srv) / units, 3)
    before = nstat_value(nstat_before, "TcpOutSegs")
    after = nstat_value(nstat_after, "TcpOutSegs")
    if before is not None and after is not None:
        out["segs_per_%s" % unit] = round((after - before) / units, 3)
    return out


def cmd_parse_work(kv_path, perf_path, before_path, after_path, seconds, cli, srv, unit):
    """Prints the kernel-work figures of one run (appended to its .kv file)."""
    try:
        texts = []
        for path in (perf_path, before_path, after_path):
            with open(path, encoding="utf-8", errors="replace") as fh:
                texts.append(fh.read())
        figures = parse_work(read_kv(kv_path), *texts, float(seconds), cli, srv, unit)
    except (OSError, ParseError, ValueError) as err:
        print(err, file=sys.stderr)
        return 1
    for key, value in figures.items():
        print("%s=%s" % (key, value))
    return 0


PARSERS = {
    "netperf": parse_netperf,
    "neper": parse_neper,
    "iperf3": parse_iperf3,
    "sockperf": parse_sockperf,
    "pingpong": parse_pingpong,
}


def cmd_parse(tool, path, notation=None):
    with open(path, encoding="utf-8", errors="replace") as fh:
        text = fh.read()
    try:
        if tool == "stackbench":
            figures = parse_stackbench(flat_rows(path), notation)
        elif tool in PARSERS:
            figures = PARSERS[tool](text)
        else:
            raise ParseError("unknown tool %r" % tool)
    except (ParseError, ValueError, KeyError) as err:
        print(err, file=sys.stderr)
        return 1
    for key, value in figures.items():
        if value is not None:
            print("%s=%s" % (key, value))
    return 0


def cmd_parse_server(tool, path):
    """Prints the server side's figures (maybe none); never fails the run."""
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            figures = parse_server(tool, fh.read())
    except (OSError, ValueError, KeyError):
        figures = {}
    for key, value in figures.items():
        print("%s=%s" % (key, value))
    return 0


# --- the table ------------------------------------------------------------

METRICS = [
    # key, label, higher is better
    ("rate_tps", "rate tr/s", True),
    ("bulk_bytes_per_s", "throughput MiB/s", True),
    ("lat_mean_us", "latency mean us", False),
    ("lat_p50_us", "latency p50 us", False),
    ("lat_p99_us", "latency p99 us", False),
    ("cli_cpu_us_per_tr", "client CPU us/tr", False),
    ("srv_cpu_us_per_tr", "server CPU us/tr", False),
    ("host_cpu_us_per_tr", "host CPU us/tr (both sides, tick method)", False),
    ("cli_cpu_us_per_mib", "client CPU us/MiB", False),
    ("srv_cpu_us_per_mib", "server CPU us/MiB", False),
    # KERNEL_WORK=1: what each run asked of the kernel (parse_work).
    ("sys_cli_per_tr", "client syscalls/tr", False),
    ("sys_srv_per_tr", "server syscalls/tr", False),
    ("sys_host_per_tr", "syscalls/tr (both sides)", False),
    ("cs_per_tr", "context switches/tr (both sides)", False),
    ("segs_per_tr", "TCP segments sent/tr (host)", False),
    ("sys_cli_per_mib", "client syscalls/MiB", False),
    ("sys_srv_per_mib", "server syscalls/MiB", False),
    ("sys_host_per_mib", "syscalls/MiB (both sides)", False),
    ("cs_per_mib", "context switches/MiB (both sides)", False),
    ("segs_per_mib", "TCP segments sent/MiB (host)", False),
]

# The kernel-work figures, shown for every pair when they were counted.
WORK_KEYS = {key for key, _label, _hib in METRICS
             if key.startswith(("sys_", "cs_", "segs_"))}


# Peers whose CPU figures are their processes' getrusage: compared with
# stackbench's process view (key with `_proc_`), not its CPU-set view.
PROCESS_VIEW_PEERS = {"neper", "iperf3", "pingpong"}
# Peers that report no CPU at all: no CPU rows for them.
NO_CPU_PEERS = {"sockperf"}


def stackbench_key(key, peer):
    """The stackbench figure a peer's figure `key` is compared with."""
    if peer in PROCESS_VIEW_PEERS and "_cpu_us_per_" in key:
        return key.replace("_cpu_", "_proc_cpu_")
    return key


def read_tsv(path):
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as fh:
        return [ln.rstrip("\n").split("\t") for ln in fh if ln.strip()]


def read_kv(path):
    with open(path, encoding="utf-8") as fh:
        return dict(ln.strip().split("=", 1) for ln in fh if "=" in ln)


def collect(run_dir):
    """runs.tsv rows: workload, tool, rep, ok|fail, kv file or reason.
    Returns {(workload, tool): {"values": {metric: {rep: value}}, "fails": [..],
    "kv": [..]}}; the rep numbers pair each stackbench run with the peer runs
    of its round."""
    series = {}
    for row in read_tsv(os.path.join(run_dir, "runs.tsv")):
        workload, tool, rep, status, detail = (row + [""] * 5)[:5]
        entry = series.setdefault((workload, tool), {"values": {}, "fails": [], "kv": []})
        if status != "ok":
            entry["fails"].append(detail)
            continue
        kv = read_kv(detail)
        entry["kv"].append(kv)
        for key, _label, _hib in METRICS:
            for k in {key, stackbench_key(key, "neper")}:
                if k in kv:
                    entry["values"].setdefault(k, {})[rep] = float(kv[k])
    return series


MIB = 1024.0 * 1024.0


def fmt(value):
    return "-" if value is None else "{:,.1f}".format(value)


def values_of(entry, key):
    """{rep: value} of one figure (bulk in MiB/s, 1 MiB = 1024^2 B)."""
    vals = (entry or {}).get("values", {}).get(key, {})
    if key == "bulk_bytes_per_s":
        return {rep: v / MIB for rep, v in vals.items()}
    return vals


def median_cell(entry, key, reps):
    """Median over the successful reps and its cell text; "(n/reps)" marks a
    median over fewer than all reps."""
    vals = list(values_of(entry, key).values())
    if not vals:
        return None, "failed" if entry and entry["fails"] else "-"
    med = statistics.median(vals)
    suffix = "" if len(vals) == reps else " (%d/%d)" % (len(vals), reps)
    return med, fmt(med) + suffix


def paired_cell(sb_vals, pe_vals):
    """Median and range of stackbench/peer over the rounds where both ran."""
    ratios = sorted(sb_vals[rep] / pe_vals[rep] for rep in sb_vals
                    if rep in pe_vals and pe_vals[rep])
    if not ratios:
        return "-"
    if len(ratios) == 1:
        return "%.3f" % ratios[0]
    return "%.3f [%.2f-%.2f] n=%d" % (statistics.median(ratios), ratios[0], ratios[-1],
                                      len(ratios))


# Peers whose only CPU figure covers both sides (netperf on loopback: its
# service demand counts every CPU of the host): compared on the host row only.
HOST_CPU_PEERS = {"netperf"}


def wanted(key, peer, figures):
    """Whether the table has a row for figure `key` of this pair."""
    if key in WORK_KEYS:
        return True  # present only when counted (KERNEL_WORK=1)
    if key not in figures.split(",") and not (key == "host_cpu_us_per_tr"
                                               and peer in HOST_CPU_PEERS):
        return False
    if "_cpu_" not in key:
        return True
    if peer in NO_CPU_PEERS:
        return False
    if key == "host_cpu_us_per_tr":
        return peer in HOST_CPU_PEERS
    return peer not in HOST_CPU_PEERS


def table_rows(run_dir, series, reps):
    """pairs.tsv rows: workload, peer tool, peer command, comma list of figures."""
    rows = []
    for workload, peer, peer_desc, figures in read_tsv(os.path.join(run_dir, "pairs.tsv")):
        sb = series.get((workload, "stackbench"))
        pe = series.get((workload, peer))
        for key, label, higher_better in METRICS:
            if not wanted(key, peer, figures):
                continue
            sb_key = stackbench_key(key, peer)
            if sb_key != key:
                label += " (process)"
            if key in WORK_KEYS and not (values_of(sb, sb_key) or values_of(pe, key)):
                continue
            sb_med, sb_cell = median_cell(sb, sb_key, reps)
            pe_med, pe_cell = median_cell(pe, key, reps)
            ratio = "-"
            if sb_med is not None and pe_med:
                ratio = "%.3f" % (sb_med / pe_med)
            paired = paired_cell(values_of(sb, sb_key), values_of(pe, key))
            better = "higher" if higher_better else "lower"
            rows.append([workload, peer_desc, label, better, sb_cell, pe_cell, ratio, paired])
    return rows


def print_table(rows):
    head = ["workload", "peer (command)", "figure", "better", "stackbench", "peer",
            "ratio of medians", "paired ratios: median [range]"]
    widths = [max(len(r[i]) for r in rows + [head]) for i in range(len(head))]
    line = lambda r: "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip()
    print(line(head))
    print(line(["-" * w for w in widths]))
    prev = None
    for r in rows:
        if prev is not None and r[0] != prev:
            print()
        print(line(r))
        prev = r[0]


TOOL_NOTES = {
    "netperf": "netperf: CPU from -c -C service demand, which covers every CPU of the "
               "host: on loopback that is both sides together, so it is compared only "
               "with stackbench's client + server CPU sets measured netperf's way (busy "
               "ticks / all ticks of /proc/stat; stackbench's own figure, window minus "
               "idle, reads higher where ticks miss short busy slices)",
    "neper": "neper: client CPU from its utime/stime (getrusage, whole process); server "
             "CPU from its server's log when it printed one; '(process)' rows compare "
             "with stackbench's process view (utime + stime of its driver/responder)",
    "iperf3": "iperf3: CPU per MiB from cpu_utilization_percent (process CPU, % of the "
              "test's time) x seconds / MiB received",
    "sockperf": "sockperf: rate = 1e6 / (2 x avg-latency): sockperf reports half a round "
                "trip; latencies doubled to round trips; 14 B messages (its minimum); "
                "no CPU figures",
    "pingpong": "pingpong: bench/pingpong.c, both sides spinning on non-blocking recv; "
                "CPU us/tr from getrusage of each side (against stackbench's process view); "
                "latency mean = 1 / rate (one connection, closed loop)",
}


def mean_mix(kvs, key):
    """The syscall mix of `key` (sysmix_cli, ...) averaged over the reps that
    have it, as "name per-unit" pairs, largest first."""
    sums, reps = {}, 0
    for kv in kvs:
        if key not in kv:
            continue
        reps += 1
        for item in kv[key].split():
            name, _, value = item.rpartition(":")
            sums[name] = sums.get(name, 0.0) + float(value)
    ranked = sorted(((n, v / reps) for n, v in sums.items()), key=lambda item: -item[1])
    return " ".join("%s %.2f" % item for item in ranked)


def syscall_mix_notes(series):
    """One note per workload and side: each tool's syscalls by name, so that a
    difference in the syscalls/tr rows can be traced to the calls behind it."""
    notes = []
    for workload in sorted({wl for (wl, _tool) in series}):
        for side, name in (("cli", "client"), ("srv", "server"), ("host", "both sides")):
            parts = []
            for (wl, tool), entry in sorted(series.items()):
                mix = mean_mix(entry["kv"], "sysmix_" + side) if wl == workload else ""
                if mix:
                    parts.append("%s: %s" % (tool, mix))
            if parts:
                notes.append("%s syscalls per unit, %s: %s" % (workload, name, "; ".join(parts)))
    return notes


def cmd_table(run_dir):
    reps = int(open(os.path.join(run_dir, "reps")).read().strip())
    series = collect(run_dir)
    rows = table_rows(run_dir, series, reps)
    if rows:
        print_table(rows)
    else:
        print("(no figures: every run failed or was skipped)")
    notes = []
    tools = {tool for (_wl, tool) in series}
    notes.extend(TOOL_NOTES[t] for t in sorted(tools) if t in TOOL_NOTES)
    mixes = syscall_mix_notes(series)
    if mixes:
        notes.append("kernel work (KERNEL_WORK=1): perf stat -A counts on both sides' CPUs and "
                     "nstat's TcpOutSegs over the whole run, divided by rate x run time; set-up "
                     "and a warm-up slower than the window make them a few % uncertain, so "
                     "read work ratios within 0.95-1.05 as equal. Segments are host-wide")
    notes.extend(mixes)
    for (wl, tool), entry in series.items():
        if tool != "stackbench":
            continue
        spins = sorted({kv["spin"] for kv in entry["kv"] if "spin" in kv})
        if spins:
            notes.append("%s: stackbench spun (spin=%s): its util is ~100%% per spinning "
                         "worker and its CPU us/tr include the polling" % (wl, ",".join(spins)))
        ios = sorted({kv["io"] for kv in entry["kv"] if "io" in kv})
        if ios:
            notes.append("%s: stackbench ran io=%s" % (wl, ",".join(ios)))
        closes = sorted({kv["crr_close"] for kv in entry["kv"] if "crr_close" in kv})
        if closes and wl.startswith("CRR"):
            notes.append("%s: stackbench record says crr_close=%s" % (wl, ",".join(closes)))
        warned = sorted({c for kv in entry["kv"] for c in kv.get("warnings", "").split(",") if c})
        if warned:
            notes.append("%s: stackbench warned (in some reps): %s" % (wl, ", ".join(warned)))
        errors = sum(float(kv.get("errors", 0)) for kv in entry["kv"])
        if errors:
            notes.append("%s: stackbench counted %d connection errors over its reps"
                         % (wl, errors))
    if notes:
        print("\nnotes:")
        for note in notes:
            print("  " + note)
    fails = [(wl, tool, why) for (wl, tool), e in series.items() for why in e["fails"]]
    if fails:
        print("\nfailed runs (raw outputs are kept in %s/raw):" % run_dir)
        for (wl, tool, why) in sorted(set(fails), key=fails.index):
            count = fails.count((wl, tool, why))
            print("  %s %s%s: %s" % (wl, tool, " (%dx)" % count if count > 1 else "", why))
    return 0


# --- self-test ------------------------------------------------------------

SAMPLE_NEPER_RR = "num_transactions=139267\nlatency_mean=0.000064486\nlatency_p50=0.000063350\n" \
    "latency_p99=0.000103670\nthroughput=15466.81\nlocal_throughput=15466\n"
SAMPLE_NEPER_STREAM = "throughput=2303856107.60\nthroughput_units=B/s\nlocal_throughput=18430848860\n"
SAMPLE_NETPERF = "13399.73,Trans/s,74.57,35,1818,40.1,-1\n"
SAMPLE_SOCKPERF = "sockperf: ====> avg-latency=25.000 (std-dev=3.1)\n" \
    "sockperf: ---> percentile 99.000 =   40.000\nsockperf: ---> percentile 50.000 =   24.000\n"
SAMPLE_PINGPONG = "client transactions=1000 seconds=1.000 rate_tps=1000.0 cpu_us_per_tr=990.000\n"
SAMPLE_NEPER_SERVER = "num_transactions=1000\nutime_start=0.5\nutime_end=1.0\n" \
    "stime_start=0.0\nstime_end=0.5\n"
SAMPLE_IPERF3 = '{"start":{},"end":{"sum_received":{"bits_per_second":8e9}}}'
SAMPLE_SB = [{"notation": "STR3(1B/20MB)", "complete": True, "stream_direction": "GET",
              "rate_tps": 100.0, "tx_bytes_per_s": 100.0, "rx_bytes_per_s": 2.0e9, "errors": 0,
              "latency_mean_us": 30000.0, "latency_p50_us": 29000.0, "latency_p99_us": 40000.0,
              "crr_close": "abort", "io": "", "spin": "none"}]


def self_test():
    assert parse_neper(SAMPLE_NEPER_RR)["rate_tps"] == 15466.81
    assert abs(parse_neper(SAMPLE_NEPER_RR)["lat_p50_us"] - 63.35) < 1e-6
    assert parse_neper(SAMPLE_NEPER_STREAM) == {"bulk_bytes_per_s": 2303856107.60}
    netperf = parse_netperf("junk line\n" + SAMPLE_NETPERF)
    assert netperf["lat_p99_us"] == 1818.0 and netperf["host_cpu_us_per_tr"] == 40.1
    assert "cli_cpu_us_per_tr" not in netperf and "srv_cpu_us_per_tr" not in netperf
    rr = "rate_tps,cli_cpu_us_per_tr,srv_cpu_us_per_tr"
    assert wanted("host_cpu_us_per_tr", "netperf", rr)
    assert not wanted("cli_cpu_us_per_tr", "netperf", rr)
    assert wanted("cli_cpu_us_per_tr", "neper", rr) and not wanted("host_cpu_us_per_tr", "neper", rr)
    assert not wanted("cli_cpu_us_per_tr", "sockperf", rr) and wanted("rate_tps", "sockperf", rr)
    # Pairs are matched by rep; a rep one side lacks is left out.
    assert paired_cell({"1": 2.0, "2": 3.0, "3": 9.0}, {"1": 1.0, "2": 2.0}) == \
        "1.750 [1.50-2.00] n=2"
    assert paired_cell({"1": 2.0}, {"2": 1.0}) == "-"
    # netperf's method: 50% of 2 CPUs for 4 s plus 25% of 1 CPU for 4 s, over
    # 1000 transactions: (4 + 1) s / 1000 = 5000 us.
    def sides(**given):
        row = {}
        for name, (pct, ncpu) in given.items():
            row.update({name + "_tick_util_pct": pct, name + "_window_s": 4.0,
                        name + "_cpu_count": ncpu})
        return row
    assert abs(tick_host_cpu(sides(client=(50.0, 2), server=(25.0, 1)), 1000) - 5000.0) < 1e-6
    assert abs(tick_host_cpu(sides(shared=(50.0, 2), client=(99.0, 1)), 1000) - 4000.0) < 1e-6
    assert tick_host_cpu(sides(client=(50.0, 1)), 1000) is None
    sockperf = parse_sockperf(SAMPLE_SOCKPERF)
    assert sockperf["rate_tps"] == 20000.0 and sockperf["lat_p99_us"] == 80.0
    assert parse_pingpong(SAMPLE_PINGPONG) == {"rate_tps": 1000.0, "lat_mean_us": 1000.0,
                                                "cli_cpu_us_per_tr": 990.0}
    assert stackbench_key("cli_cpu_us_per_tr", "neper") == "cli_proc_cpu_us_per_tr"
    assert stackbench_key("cli_cpu_us_per_tr", "netperf") == "cli_cpu_us_per_tr"
    assert parse_server("neper", SAMPLE_NEPER_SERVER) == {"srv_cpu_us_per_tr": 1000.0}
    assert parse_server("pingpong", "server transactions=5 cpu_us_per_tr=2.5\n") == \
        {"srv_cpu_us_per_tr": 2.5}
    assert parse_iperf3(SAMPLE_IPERF3)["bulk_bytes_per_s"] == 1e9
    iperf3 = parse_iperf3('{"end":{"sum_received":{"bits_per_second":8e9,"bytes":1048576000,'
                          '"seconds":1.0},"cpu_utilization_percent":{"host_total":50.0,'
                          '"remote_total":25.0}}}')
    assert iperf3["cli_cpu_us_per_mib"] == 500.0 and iperf3["srv_cpu_us_per_mib"] == 250.0
    sb = parse_stackbench(SAMPLE_SB, "STR3(1B/20MB)")
    assert sb["bulk_bytes_per_s"] == 2.0e9 and sb["crr_close"] == "abort" and "io" not in sb
    assert parse_stackbench([dict(SAMPLE_SB[0], io="uring")])["io"] == "uring"
    for bad, fn in (("", parse_netperf), ("x=1", parse_neper), ("{}", parse_iperf3),
                    ([{"complete": False}], parse_stackbench), ([], parse_stackbench)):
        try:
            fn(bad)
        except ParseError:
            continue
        raise AssertionError("accepted bad input %r" % bad)
    # Kernel work: CPU 0 client, CPU 1 server; 1000 tr/s for 2 s = 2000 tr.
    perf = ("# started\nCPU0,4000,,raw_syscalls:sys_enter,1,100.00,,\n"
            "CPU1,6000,,raw_syscalls:sys_enter,1,100.00,,\n"
            "CPU0,2000,,syscalls:sys_enter_sendto,1,100.00,,\n"
            "CPU1,2000,,syscalls:sys_enter_recvfrom,1,100.00,,\n"
            "CPU0,<not counted>,,syscalls:sys_enter_futex,0,0.00,,\n"
            "CPU0,100,,context-switches,1,100.00,,\nCPU1,300,,context-switches,1,100.00,,\n")
    # A stackbench RR record has a byte rate too: the unit decides.
    work = parse_work({"rate_tps": "1000", "bulk_bytes_per_s": "8"}, perf, "TcpOutSegs 10 0.0\n",
                      "#kernel\nTcpOutSegs 4010 0.0\n", 2.0, "0", "1", "tr")
    assert work == {"sys_cli_per_tr": 2.0, "sysmix_cli": "sendto:1.00 other:1.00",
                    "sys_srv_per_tr": 3.0, "sysmix_srv": "other:2.00 recvfrom:1.00",
                    "cs_per_tr": 0.2, "segs_per_tr": 2.0}, work
    shared = parse_work({"bulk_bytes_per_s": str(MIB)}, perf, "", "", 4.0, "0-1", "1", "mib")
    assert shared["sys_host_per_mib"] == 2500.0 and "segs_per_mib" not in shared, shared
    assert "sys_cli_per_mib" not in shared
    assert mean_mix([{"sysmix_cli": "sendto:1.00 other:1.00"}, {"sysmix_cli": "sendto:3.00"}, {}],
                    "sysmix_cli") == "sendto 2.00 other 0.50"
    assert cpu_list("0,2-3") == {0, 2, 3}
    try:
        parse_work({"rate_tps": "1"}, "no counts", "", "", 1.0, "0", "1", "tr")
        raise AssertionError("accepted perf output without counts")
    except ParseError:
        pass
    print("self-test ok")
    return 0


def main(argv):
    if len(argv) >= 3 and argv[0] == "parse":
        return cmd_parse(argv[1], argv[2], argv[3] if len(argv) > 3 else None)
    if len(argv) == 2 and argv[0] == "table":
        return cmd_table(argv[1])
    if len(argv) == 3 and argv[0] == "parse-server":
        return cmd_parse_server(argv[1], argv[2])
    if len(argv) == 9 and argv[0] == "parse-work":
        return cmd_parse_work(*argv[1:])
    if argv == ["self-test"]:
        return self_test()
    print(__doc__.strip().split("\n\n")[2], file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
