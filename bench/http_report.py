#!/usr/bin/env python3
"""Output parsers and the summary table for bench/http.sh (wrk and
stackbench, HTTP/1.1 keep-alive GETs, against nginx and stackbench serve).

Owns what the shell script should not do by itself:
  * the request sizes of each client, from the calibration nginx's access
    log (`$request_length $bytes_sent "$request" "$http_host"`), so that
    stackbench's request is sized to the GET wrk sends;
  * each run's figures as key=value lines:
        rate_tps, lat_p50_us, lat_p99_us, lat_mean_us, requests, errors
      from the client's own output (wrk --latency, or stackbench --json read
      through `results export --flat`, see flat_export.py), and
        cli_cpu_us_per_req   the client process's user + system CPU for its
                             whole life (GNU time: getrusage of the waited
                             process tree) over the requests it completed;
        srv_cpu_us_per_req   the server process's utime + stime
                             (/proc/PID/stat, before and after the client
                             ran) over the same requests;
      measured the same way for both clients and both servers; stackbench's
      own figures ride along (own_cli_proc_cpu_us_per_req: its process view
      over its measurement window, own_cli_cpu_us_per_req: its CPU-set view);
  * the table: per server and connection count, the median [range] of each
    figure for each client, the stackbench/wrk ratio of medians and the
    paired ratios (each stackbench run against the wrk run next to it).

Usage:
    http_report.py calibrate LOG                 # key=value sizes per client
    http_report.py parse wrk|stackbench BASE WARMUP CONNS
    http_report.py table RUN_DIR
    http_report.py self-test

`parse` reads BASE.out (the client's stdout), BASE.time (GNU time -f '%U %S
%e'), BASE.srv-before and BASE.srv-after (/proc/PID/stat of the server) and,
when present, BASE.hold (`stackbench serve --hold`'s counters); it prints key=value
lines, or one line naming what is wrong on stderr and exits 1. Standard
library only.
"""

import os
import re
import statistics
import sys

import flat_export


class ParseError(Exception):
    """Raw output that does not hold the figures we need; the message says why."""


# --- calibration ----------------------------------------------------------

LOG_LINE = re.compile(r'^(\d+) (\d+) "([^"]*)" "([^"]*)"$')


def calibrate(text):
    """Sizes from the calibration log: per client (wrk's Host is the
    server's address, stackbench's is `stackbench`) the request length,
    the request line and the bytes the server sent per response."""
    out = {}
    for line in text.splitlines():
        m = LOG_LINE.match(line.strip())
        if not m:
            continue
        length, sent, request, host = m.groups()
        who = "sb" if host == "stackbench" else "wrk"
        if who + "_request_bytes" in out:
            continue
        out[who + "_request_bytes"] = int(length)
        out[who + "_response_bytes"] = int(sent)
        out[who + "_request"] = request.replace(" ", "_")
        out[who + "_host"] = host
    if "wrk_request_bytes" not in out:
        raise ParseError("no request of wrk's in the calibration log: did wrk reach nginx?")
    return out


# --- one run --------------------------------------------------------------

def unit_us(text):
    """wrk's latency with its unit (`812.00us`, `1.23ms`, `2.00s`) in µs."""
    m = re.match(r"^([0-9.]+)(us|ms|s|m)$", text.strip())
    if not m:
        raise ParseError("latency %r has no unit wrk uses" % text)
    scale = {"us": 1.0, "ms": 1e3, "s": 1e6, "m": 60e6}[m.group(2)]
    return float(m.group(1)) * scale


def parse_wrk(text):
    """wrk -t1 -cN -dD --latency: Requests/sec, the latency distribution's
    50% and 99% lines, the thread stats' Avg, `N requests in`, and socket
    errors and non-2xx answers as errors."""
    out = {}
    for line in text.splitlines():
        fields = line.split()
        if line.startswith("Requests/sec:"):
            out["rate_tps"] = float(fields[1])
        elif len(fields) == 2 and fields[0] in ("50%", "99%"):
            out["lat_p%s_us" % fields[0][:-1]] = unit_us(fields[1])
        elif fields[:1] == ["Latency"] and len(fields) >= 2 and "lat_mean_us" not in out:
            out["lat_mean_us"] = unit_us(fields[1])
        elif len(fields) >= 3 and fields[1:3] == ["requests", "in"]:
            out["requests"] = int(fields[0])
        elif line.strip().startswith("Socket errors:"):
            counts = [int(n) for n in re.findall(r"(\d+)", line)]
            out["errors"] = out.get("errors", 0) + sum(counts)
        elif line.strip().startswith("Non-2xx or 3xx responses:"):
            out["errors"] = out.get("errors", 0) + int(fields[-1])
    for key in ("rate_tps", "requests", "lat_p50_us", "lat_p99_us"):
        if key not in out:
            raise ParseError("no %s in wrk's output (was --latency given?)" % key)
    out.setdefault("errors", 0)
    return out


def parse_stackbench(rows, warmup_s):
    """`stackbench run ... --json` as flat rows. Requests over the process's
    life: the window's transactions plus rate x warm-up (the warm-up's are
    not counted by the record), the divisor of the external CPU figures."""
    if not rows:
        raise ParseError("no classes in the record")
    row = rows[0]
    if not row.get("complete", False):
        raise ParseError("run incomplete: %s" % row.get("incomplete_reason"))
    rate = float(row["rate_tps"])
    out = {
        "rate_tps": rate,
        "lat_p50_us": row.get("latency_p50_us"),
        "lat_p99_us": row.get("latency_p99_us"),
        "lat_mean_us": row.get("latency_mean_us"),
        "requests": int(round(float(row["transactions"]) + rate * warmup_s)),
        "errors": int(row.get("errors") or 0),
        "own_cli_proc_cpu_us_per_req": row.get("client_process_cpu_us_per_tran"),
        "own_cli_cpu_us_per_req": row.get("client_cpu_us_per_tran"),
        "own_srv_proc_cpu_us_per_req": row.get("server_process_cpu_us_per_tran"),
        "request_bytes": row.get("request_bytes"),
    }
    if row.get("rx_bytes_per_s") is not None and rate > 0:
        out["rx_bytes_per_req"] = float(row["rx_bytes_per_s"]) / rate
    codes = sorted({c for c in (row.get("warnings") or "").split(",") if c})
    if codes:
        out["warnings"] = ",".join(codes)
    return out


def gnu_time(text):
    """GNU time -f '%U %S %e': user and system seconds of the process tree
    (its last line; a failing command adds a line before it)."""
    lines = [ln.split() for ln in text.splitlines() if ln.strip()]
    try:
        user, system, _wall = (float(v) for v in lines[-1])
    except (IndexError, ValueError):
        raise ParseError("no '%%U %%S %%e' line from GNU time: %r" % text[:80]) from None
    return user + system


def proc_cpu_ticks(stat):
    """utime + stime of a /proc/PID/stat line, in clock ticks (fields 14 and
    15; the command name, field 2, may hold spaces, so count after its ')')."""
    try:
        fields = stat[stat.rindex(")") + 2:].split()
        return int(fields[11]) + int(fields[12])
    except (ValueError, IndexError):
        raise ParseError("not a /proc/PID/stat line: %r" % stat[:80]) from None


def read(path):
    with open(path, encoding="utf-8", errors="replace") as fh:
        return fh.read()


def external_cpu(out, base, tick_s):
    """The CPU figures measured outside both clients alike (see module doc)."""
    requests = out["requests"]
    if requests <= 0:
        raise ParseError("no requests completed")
    out["cli_cpu_us_per_req"] = gnu_time(read(base + ".time")) * 1e6 / requests
    before, after = base + ".srv-before", base + ".srv-after"
    if os.path.exists(before) and os.path.exists(after):
        ticks = proc_cpu_ticks(read(after)) - proc_cpu_ticks(read(before))
        out["srv_cpu_us_per_req"] = ticks * tick_s * 1e6 / requests


def parse_run(tool, base, warmup_s, conns, tick_s):
    if tool == "wrk":
        out = parse_wrk(read(base + ".out"))
    elif tool == "stackbench":
        try:
            out = parse_stackbench(flat_export.flat_rows(base + ".out"), warmup_s)
        except flat_export.FlatError as err:
            raise ParseError(str(err)) from None
    else:
        raise ParseError("unknown client %r: wrk or stackbench" % tool)
    external_cpu(out, base, tick_s)
    if os.path.exists(base + ".hold"):
        held = read_kv(base + ".hold")
        if "srv_transactions" in held:
            out["srv_counted"] = int(held["srv_transactions"])
            # Up to one request per connection may be in flight when wrk stops.
            if abs(out["srv_counted"] - out["requests"]) > conns:
                out["count_mismatch"] = 1
    return out


# --- the table ------------------------------------------------------------

METRICS = [
    # key, label, higher is better
    ("rate_tps", "requests/s", True),
    ("lat_p50_us", "latency p50 us", False),
    ("lat_p99_us", "latency p99 us", False),
    ("cli_cpu_us_per_req", "client CPU us/req (GNU time, whole process)", False),
    ("srv_cpu_us_per_req", "server CPU us/req (/proc/PID/stat)", False),
]
CLIENTS = ("wrk", "stackbench")


def read_tsv(path):
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as fh:
        return [ln.rstrip("\n").split("\t") for ln in fh if ln.strip()]


def read_kv(path):
    with open(path, encoding="utf-8") as fh:
        return dict(ln.strip().split("=", 1) for ln in fh if "=" in ln)


def collect(run_dir):
    """runs.tsv rows: server, conns, client, rep, ok|fail, kv file or reason.
    Returns {(server, conns, client): {"values": {key: {rep: v}}, "fails": [..],
    "kv": [..]}}."""
    series = {}
    for row in read_tsv(os.path.join(run_dir, "runs.tsv")):
        server, conns, client, rep, status, detail = (row + [""] * 6)[:6]
        entry = series.setdefault((server, conns, client), {"values": {}, "fails": [], "kv": []})
        if status != "ok":
            entry["fails"].append(detail)
            continue
        kv = read_kv(detail)
        entry["kv"].append(kv)
        for key, value in kv.items():
            try:
                entry["values"].setdefault(key, {})[rep] = float(value)
            except ValueError:
                pass
    return series


def fmt(value):
    return "-" if value is None else "{:,.1f}".format(value)


def median_cell(entry, key, reps):
    """Median [range] over the successful reps; "(n/reps)" when some failed."""
    vals = sorted((entry or {}).get("values", {}).get(key, {}).values())
    if not vals:
        return None, "failed" if entry and entry["fails"] else "-"
    med = statistics.median(vals)
    cell = fmt(med) if len(vals) == 1 else "%s [%s-%s]" % (fmt(med), fmt(vals[0]), fmt(vals[-1]))
    if len(vals) != reps:
        cell += " (%d/%d)" % (len(vals), reps)
    return med, cell


def paired_cell(a, b):
    """Median and range of a/b over the reps where both ran."""
    ratios = sorted(a[rep] / b[rep] for rep in a if rep in b and b[rep])
    if not ratios:
        return "-"
    if len(ratios) == 1:
        return "%.3f" % ratios[0]
    return "%.3f [%.2f-%.2f]" % (statistics.median(ratios), ratios[0], ratios[-1])


def sort_key(item):
    server, conns, _client = item
    return (server, int(conns) if conns.isdigit() else 0)


def table_rows(series, reps):
    rows = []
    pairs = sorted({(s, c) for (s, c, _cl) in series}, key=lambda p: sort_key(p + ("",)))
    for server, conns in pairs:
        wrk = series.get((server, conns, "wrk"))
        sb = series.get((server, conns, "stackbench"))
        for key, label, higher in METRICS:
            w_med, w_cell = median_cell(wrk, key, reps)
            s_med, s_cell = median_cell(sb, key, reps)
            if w_med is None and s_med is None:
                continue
            ratio = "%.3f" % (s_med / w_med) if s_med is not None and w_med else "-"
            paired = paired_cell((sb or {}).get("values", {}).get(key, {}),
                                 (wrk or {}).get("values", {}).get(key, {}))
            rows.append([server, conns, label, "higher" if higher else "lower",
                         w_cell, s_cell, ratio, paired])
    return rows


def own_rows(series, reps):
    """stackbench's own client CPU figure against the external measure."""
    rows = []
    for (server, conns, client), entry in sorted(series.items(), key=lambda i: sort_key(i[0])):
        if client != "stackbench":
            continue
        ext_med, ext_cell = median_cell(entry, "cli_cpu_us_per_req", reps)
        own_med, own_cell = median_cell(entry, "own_cli_proc_cpu_us_per_req", reps)
        set_med, set_cell = median_cell(entry, "own_cli_cpu_us_per_req", reps)
        ratio = "%.3f" % (own_med / ext_med) if own_med is not None and ext_med else "-"
        rows.append([server, conns, ext_cell, own_cell, ratio, set_cell])
    return rows


def print_table(head, rows):
    widths = [max(len(r[i]) for r in rows + [head]) for i in range(len(head))]
    line = lambda r: "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip()
    print(line(head))
    print(line(["-" * w for w in widths]))
    prev = None
    for r in rows:
        if prev is not None and r[:2] != prev:
            print()
        print(line(r))
        prev = r[:2]


# wrk 4 corrects its latencies for coordinated omission after the run
# (wg/wrk, src/wrk.c main and src/stats.c stats_correct): every response
# slower than twice the mean interval per connection adds synthetic samples;
# stackbench's closed-loop percentiles are the measured ones only.
WRK_LATENCY_NOTE = (
    "latency: wrk's percentiles include synthetic samples it adds after the run for "
    "every response slower than twice the mean interval per connection (its "
    "coordinated-omission correction, stats_correct); stackbench's closed-loop "
    "percentiles are measured samples only. p50 compares where stalls are rare; p99 "
    "reads higher in wrk by construction when some responses stall. wrk2 (-R) and "
    "stackbench --rate measure from an intended send schedule instead")


def notes_of(run_dir, series):
    notes = []
    if any(client == "wrk" for (_s, _c, client) in series):
        notes.append(WRK_LATENCY_NOTE)
    sizes = os.path.join(run_dir, "sizes.kv")
    if os.path.exists(sizes):
        kv = read_kv(sizes)
        notes.append("requests: wrk %s B (%s, Host: %s), stackbench %s B (%s, Host: %s); "
                     "nginx sent %s B per answer to each"
                     % (kv.get("wrk_request_bytes"), kv.get("wrk_request", "").replace("_", " "),
                        kv.get("wrk_host"), kv.get("sb_request_bytes"),
                        kv.get("sb_request", "").replace("_", " "), kv.get("sb_host"),
                        kv.get("wrk_response_bytes")))
    for (server, conns, client), entry in sorted(series.items(), key=lambda i: sort_key(i[0])):
        where = "%s, %s conns, %s" % (server, conns, client)
        errors = sum(float(kv.get("errors", 0)) for kv in entry["kv"])
        if errors:
            notes.append("%s: %d errors over its reps" % (where, errors))
        if any("count_mismatch" in kv for kv in entry["kv"]):
            notes.append("%s: stackbench serve's own count of answers differs from wrk's "
                         "by more than the connections in flight" % where)
        warned = sorted({c for kv in entry["kv"] for c in kv.get("warnings", "").split(",") if c})
        if warned:
            notes.append("%s: stackbench warned: %s" % (where, ", ".join(warned)))
        for why in sorted(set(entry["fails"])):
            notes.append("%s: failed (%dx): %s" % (where, entry["fails"].count(why), why))
    return notes


def cmd_table(run_dir):
    reps = int(read(os.path.join(run_dir, "reps")).strip())
    series = collect(run_dir)
    rows = table_rows(series, reps)
    if not rows:
        print("(no figures: every run failed)")
    else:
        print_table(["server", "conns", "figure", "better", "wrk median [range]",
                     "stackbench median [range]", "sb/wrk (medians)",
                     "paired sb/wrk median [range]"], rows)
    own = own_rows(series, reps)
    if own:
        print("\nstackbench's own client CPU figure against the external measure (us/req):")
        print_table(["server", "conns", "external (GNU time)", "own, process view",
                     "own/external", "own, CPU-set view"], own)
    notes = notes_of(run_dir, series)
    if notes:
        print("\nnotes:")
        for note in notes:
            print("  " + note)
    return 0


# --- self-test ------------------------------------------------------------

SAMPLE_WRK = """Running 10s test @ http://127.0.0.1:18080/4096
  1 threads and 10 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency   210.50us   95.00us   3.20ms   90.00%
    Req/Sec    47.10k     1.20k   49.00k    70.00%
  Latency Distribution
     50%  198.00us
     75%  230.00us
     90%  280.00us
     99%    1.02ms
  471000 requests in 10.00s, 2.03GB read
  Socket errors: connect 0, read 2, write 0, timeout 1
Requests/sec:  47100.00
Transfer/sec:    207.90MB
"""
SAMPLE_LOG = ('45 4384 "GET /4096 HTTP/1.1" "127.0.0.1:18080"\n'
              '45 4384 "GET /4096?aaaa HTTP/1.1" "stackbench"\n'
              '45 4384 "GET /4096 HTTP/1.1" "127.0.0.1:18080"\n')
SAMPLE_STAT = "4242 (nginx: worker) S 1 2 3 4 5 6 7 8 9 10 %d %d 0 0 20 0 1 0\n"


def self_test():
    wrk = parse_wrk(SAMPLE_WRK)
    assert wrk == {"lat_mean_us": 210.5, "lat_p50_us": 198.0, "lat_p99_us": 1020.0,
                   "requests": 471000, "errors": 3, "rate_tps": 47100.0}, wrk
    assert unit_us("2.00s") == 2e6
    for bad in ("", SAMPLE_WRK.replace("Requests/sec", "Req")):
        try:
            parse_wrk(bad)
        except ParseError:
            continue
        raise AssertionError("accepted wrk output without its figures")
    sizes = calibrate("garbage\n" + SAMPLE_LOG)
    assert sizes["wrk_request_bytes"] == 45 and sizes["sb_request_bytes"] == 45
    assert sizes["sb_request"] == "GET_/4096?aaaa_HTTP/1.1" and sizes["wrk_response_bytes"] == 4384
    try:
        calibrate('45 4384 "GET /4096?aaaa HTTP/1.1" "stackbench"\n')
        raise AssertionError("calibrated without a request of wrk's")
    except ParseError:
        pass
    # 2.5 s of the tree's CPU, the failing command's line before it.
    assert gnu_time("Command exited with non-zero status 1\n1.50 1.00 10.20\n") == 2.5
    assert proc_cpu_ticks(SAMPLE_STAT % (300, 200)) == 500
    sb = parse_stackbench([{"complete": True, "rate_tps": 1000.0, "transactions": 10000,
                            "errors": 0, "latency_p50_us": 50.0, "latency_p99_us": 90.0,
                            "client_process_cpu_us_per_tran": 20.0, "rx_bytes_per_s": 4.2e6,
                            "warnings": "b,a"}], 2.0)
    assert sb["requests"] == 12000 and sb["rx_bytes_per_req"] == 4200.0, sb
    assert sb["warnings"] == "a,b"
    try:
        parse_stackbench([{"complete": False, "incomplete_reason": "404"}], 0.0)
        raise AssertionError("accepted an incomplete run")
    except ParseError:
        pass
    # External CPU: 2.5 s of client, 100 ticks of 10 ms of server over
    # 471000 requests.
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        base = os.path.join(tmp, "run")
        for ext, text in ((".out", SAMPLE_WRK), (".time", "1.50 1.00 10.20\n"),
                          (".srv-before", SAMPLE_STAT % (100, 50)),
                          (".srv-after", SAMPLE_STAT % (150, 100)),
                          (".hold", "srv_transactions=470000\n")):
            with open(base + ext, "w", encoding="utf-8") as fh:
                fh.write(text)
        run = parse_run("wrk", base, 0.0, 10, 0.01)
        assert abs(run["cli_cpu_us_per_req"] - 2.5e6 / 471000) < 1e-9, run
        assert abs(run["srv_cpu_us_per_req"] - 1e6 / 471000) < 1e-9, run
        assert run["srv_counted"] == 470000 and run["count_mismatch"] == 1
        # The table: two reps of one (server, conns) pair.
        tsv = []
        for rep, (w, s) in enumerate(((100.0, 120.0), (200.0, 180.0)), 1):
            for client, rate in (("wrk", w), ("stackbench", s)):
                kv = os.path.join(tmp, "%s.%d.kv" % (client, rep))
                with open(kv, "w", encoding="utf-8") as fh:
                    fh.write("rate_tps=%s\ncli_cpu_us_per_req=10\n" % rate)
                tsv.append("nginx\t10\t%s\t%d\tok\t%s\n" % (client, rep, kv))
        tsv.append("nginx\t10\twrk\t3\tfail\texit status 124 (timed out)\n")
        with open(os.path.join(tmp, "runs.tsv"), "w", encoding="utf-8") as fh:
            fh.writelines(tsv)
        series = collect(tmp)
        rows = table_rows(series, 3)
        rate = next(r for r in rows if r[2] == "requests/s")
        assert rate[4] == "150.0 [100.0-200.0] (2/3)" and rate[5] == "150.0 [120.0-180.0] (2/3)"
        assert rate[6] == "1.000" and rate[7] == "1.050 [0.90-1.20]", rate
        assert any("failed (1x): exit status 124" in n for n in notes_of(tmp, series))
    print("self-test ok")
    return 0


def main(argv):
    try:
        if len(argv) == 2 and argv[0] == "calibrate":
            for key, value in calibrate(read(argv[1])).items():
                print("%s=%s" % (key, value))
            return 0
        if len(argv) == 5 and argv[0] == "parse":
            tick_s = 1.0 / os.sysconf("SC_CLK_TCK")
            figures = parse_run(argv[1], argv[2], float(argv[3]), int(argv[4]), tick_s)
            for key, value in figures.items():
                if value is not None:
                    print("%s=%s" % (key, value))
            return 0
    except (ParseError, OSError, ValueError, KeyError) as err:
        print(err, file=sys.stderr)
        return 1
    if len(argv) == 2 and argv[0] == "table":
        return cmd_table(argv[1])
    if argv == ["self-test"]:
        return self_test()
    print(__doc__.strip().split("\n\n")[2], file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
