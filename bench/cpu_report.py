#!/usr/bin/env python3
"""Parsers and the summary for bench/cpu_vs_netperf.sh.

Owns what the shell script should not do by itself:
  * turning stackbench's `--json` record (through `stackbench results export
    --flat`, so no schema logic here) and netperf's omni CSV line (plus the
    /proc/stat snapshots the script takes around every run) into one JSON
    object of figures per run;
  * the summary: medians over the repetitions of rate and of CPU µs per
    transaction for both sides, the ratio stackbench/netperf, PASS/MISS against
    the target, stackbench's client/server split and process view, its
    warnings, and cross-checks that count both tools' CPU the same way.

The CPU figures compared:
  stackbench  total_cpu_us_per_tran (classes[].cpu.total_cpu_us_per_tran): window x CPUs - idle -
              iowait of the client's and the server's pinned CPUs in the
              measurement window, per transaction (idle is clock-measured; the
              busy categories are tick-sampled and miss short slices). The
              record's tick_util_pct gives netperf's method on the same counters.
  netperf     LOCAL_SD: (100 - idle%) of ALL CPUs x CPU count x elapsed time,
              per transaction. On loopback the local machine is both sides, so
              LOCAL_SD already counts client and server (REMOTE_SD counts the
              same machine a second time).

Usage:
    cpu_report.py parse stackbench|netperf BASE [NOTATION]   # JSON on stdout
    cpu_report.py table RUN_DIR
    cpu_report.py self-test

BASE is a run's path without extension: BASE.out holds the tool's stdout,
BASE.snap0/1/2 the snapshots (before the 1 s idle baseline, before the run,
after it). Standard library only; the stackbench binary ($STACKBENCH, else
`stackbench` on PATH) reads its records.
"""

import json
import os
import statistics
import sys

import flat_export

TICKS_PER_S = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
BUSY_STATES = ("user", "nice", "system", "irq", "softirq", "steal")
STAT_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")


class ParseError(Exception):
    """Raw output that does not hold the figures we need; the message says why."""


# --- /proc/stat snapshots -------------------------------------------------------


def read_snap(path):
    """A snapshot file: first line wall-clock seconds, then `cpuN ...` lines."""
    with open(path, encoding="utf-8") as fh:
        lines = [ln.split() for ln in fh if ln.strip()]
    if not lines or len(lines[0]) != 1:
        raise ParseError("%s: not a snapshot (time line missing)" % path)
    cpus = {}
    for fields in lines[1:]:
        cpus[fields[0]] = dict(zip(STAT_FIELDS, (int(v) for v in fields[1:9])))
    return float(lines[0][0]), cpus


def box_delta(before, after):
    """All CPUs between two snapshots: seconds by state, wall time, CPU count."""
    (t0, cpus0), (t1, cpus1) = before, after
    sums = {k: 0.0 for k in STAT_FIELDS}
    for cpu, end in cpus1.items():
        start = cpus0.get(cpu)
        if start is None:
            continue
        for key in STAT_FIELDS:
            sums[key] += (end[key] - start[key]) / TICKS_PER_S
    busy_s = sum(sums[k] for k in BUSY_STATES)
    ticks_s = sum(sums.values())
    ncpu = len(cpus1)
    wall_s = t1 - t0
    return {
        "wall_s": wall_s,
        "ncpu": ncpu,
        "busy_s": busy_s,
        "idle_s": sums["idle"],
        "iowait_s": sums["iowait"],
        "ticks_s": ticks_s,
        "busy_pct": 100.0 * busy_s / ticks_s if ticks_s else 0.0,
        # Share of wall time x CPUs that /proc/stat accounted to any state.
        "tick_coverage": ticks_s / (wall_s * ncpu) if wall_s > 0 and ncpu else None,
    }


def snap_delta(base, first, second):
    """box_delta of BASE.snapFIRST -> BASE.snapSECOND, None when absent."""
    paths = ["%s.snap%d" % (base, first), "%s.snap%d" % (base, second)]
    if not all(os.path.exists(p) for p in paths):
        return None
    return box_delta(read_snap(paths[0]), read_snap(paths[1]))


# --- stackbench -----------------------------------------------------------------


def flat_rows(path):
    """The run record in PATH as flat rows (see flat_export.py)."""
    try:
        return flat_export.flat_rows(path)
    except flat_export.FlatError as err:
        raise ParseError(str(err)) from None


def has_side(row, side):
    return row.get(side + "_window_s") is not None


def side_figures(row, side, transactions):
    """One CPU-set side: stackbench's figure (window x CPUs - idle - iowait), and
    the same window counted the tick way and netperf's way, from the record's
    tick fields (tick_busy_s, tick_util_pct, tick_coverage)."""
    col = lambda name: row.get("%s_%s" % (side, name))
    window_s = col("window_s") or 0.0
    ncpu = col("cpu_count") or 1
    per_tran = (lambda s: s * 1e6 / transactions) if transactions else (lambda s: None)
    # netperf procstat: util = busy ticks / all ticks, times elapsed time x CPUs.
    netperf_way_s = (col("tick_util_pct") or 0.0) / 100.0 * window_s * ncpu
    cpus = col("cpus")
    return {
        "cpus": [int(c) for c in cpus.split(",")] if cpus else [],
        "util_pct": col("util_pct"),
        "cpu_us_per_tran": col("cpu_us_per_tran"),
        "process_cpu_us_per_tran": col("process_cpu_us_per_tran"),
        "iowait_s": col("iowait_s") or 0.0,
        "tick_coverage": col("tick_coverage"),
        "tick_busy_us_per_tran": per_tran(col("tick_busy_s") or 0.0),
        "netperf_way_us_per_tran": per_tran(netperf_way_s),
        "wall_minus_idle_us_per_tran": col("cpu_us_per_tran"),
    }


def pick_row(rows, notation):
    if not rows:
        raise ParseError("no classes in the record")
    row = next((r for r in rows if r.get("notation") == notation), rows[0])
    if not row.get("complete", False):
        raise ParseError("run incomplete: %s" % row.get("incomplete_reason"))
    return row


def parse_stackbench(rows, notation=None):
    """`stackbench run ... --json`, as the flat rows of flat_rows()."""
    row = pick_row(rows, notation)
    if row.get("total_cpu_us_per_tran") is None:
        raise ParseError("no cpu.total_cpu_us_per_tran in the record (CPU not measured?)")
    tr = row.get("transactions") or 0
    codes = [c for c in (row.get("warnings") or "").split(",") if c]
    messages = (row.get("warning_messages") or "").split("\n")
    out = {
        "rate_tps": row["rate_tps"],
        "transactions": tr,
        "cpu_us_per_tran": row["total_cpu_us_per_tran"],
        "separable": bool(row.get("cpu_separable")),
        "warnings": [{"code": code, "message": message}
                     for code, message in zip(codes, messages + [""] * len(codes))],
    }
    sides = ("client", "server") if out["separable"] else ("shared",)
    figs = {s: side_figures(row, s, tr) for s in sides if has_side(row, s)}
    for name in ("client", "server"):  # process view splits even when CPUs are shared
        if has_side(row, name) and name not in figs:
            figs[name] = {"process_cpu_us_per_tran": row.get(name + "_process_cpu_us_per_tran")}
    out["sides"] = figs
    measured = [figs[s] for s in sides if s in figs]
    for key in ("netperf_way_us_per_tran", "wall_minus_idle_us_per_tran", "tick_busy_us_per_tran"):
        vals = [f[key] for f in measured]
        out[key] = sum(vals) if vals and None not in vals else None
    out["iowait_s"] = sum(f["iowait_s"] for f in measured)
    cov = [f["tick_coverage"] for f in measured if f["tick_coverage"] is not None]
    out["tick_coverage"] = min(cov) if cov else None
    return out


# --- netperf --------------------------------------------------------------------

NETPERF_KEYS = ("rate_tps", "units", "elapsed_s", "local_util_pct", "remote_util_pct",
                "cpu_us_per_tran", "remote_sd_us_per_tran", "local_cpu_count",
                "remote_cpu_count", "cpu_method", "local_iowait_pct")


def parse_netperf(text):
    """netperf -P 0 ... -- -o <the 11 fields of NETPERF_FIELDS in the script>."""
    rows = [ln.strip().split(",") for ln in text.splitlines()
            if ln.count(",") == len(NETPERF_KEYS) - 1]
    if not rows:
        raise ParseError("no %d-field omni CSV line in the output" % len(NETPERF_KEYS))
    raw = dict(zip(NETPERF_KEYS, (v.strip() for v in rows[-1])))
    if raw["units"] != "Trans/s":
        raise ParseError("throughput units %r, expected Trans/s (an RR test)" % raw["units"])
    out = {"cpu_method": raw["cpu_method"]}
    try:
        for key in NETPERF_KEYS:
            if key not in ("units", "cpu_method"):
                out[key] = float(raw[key])
    except ValueError:
        raise ParseError("non-numeric field in %r" % ",".join(rows[-1])) from None
    if out["cpu_us_per_tran"] <= 0:
        raise ParseError("LOCAL_SD is %s: CPU not measured (netperf needs -c -C)" % raw["cpu_us_per_tran"])
    out["transactions"] = out["rate_tps"] * out["elapsed_s"]
    return out


def add_netperf_box(out, run):
    """Count netperf's run window stackbench's way from the script's snapshots."""
    if not run or not out["transactions"]:
        return
    tr = out["transactions"]
    out["box_busy_us_per_tran"] = run["busy_s"] * 1e6 / tr
    out["wall_minus_idle_us_per_tran"] = (
        run["wall_s"] * run["ncpu"] - run["idle_s"] - run["iowait_s"]) * 1e6 / tr
    out["tick_coverage"] = run["tick_coverage"]
    out["iowait_s"] = run["iowait_s"]


def cmd_parse(tool, base, notation=None):
    try:
        if tool == "stackbench":
            out = parse_stackbench(flat_rows(base + ".out"), notation)
        elif tool == "netperf":
            with open(base + ".out", encoding="utf-8", errors="replace") as fh:
                out = parse_netperf(fh.read())
            add_netperf_box(out, snap_delta(base, 1, 2))
        else:
            raise ParseError("unknown tool %r; use stackbench or netperf" % tool)
        for key, first in (("baseline_busy_pct", 0), ("baseline_after_busy_pct", 2)):
            idle = snap_delta(base, first, first + 1)
            out[key] = idle["busy_pct"] if idle else None
    except (OSError, ParseError, KeyError, TypeError) as err:
        print("%s: %s" % (base, err), file=sys.stderr)
        return 1
    json.dump(out, sys.stdout, indent=1, sort_keys=True)
    print()
    return 0


# --- the summary ----------------------------------------------------------------


def read_settings(run_dir):
    with open(os.path.join(run_dir, "settings"), encoding="utf-8") as fh:
        return dict(ln.rstrip("\n").split("=", 1) for ln in fh if "=" in ln)


def collect(run_dir):
    """{(workload, tool): {"ok": [(rep, figures)], "fail": [(rep, why)]}}"""
    runs = {}
    with open(os.path.join(run_dir, "runs.tsv"), encoding="utf-8") as fh:
        for line in fh:
            wl, tool, rep, status, detail = line.rstrip("\n").split("\t", 4)
            entry = runs.setdefault((wl, tool), {"ok": [], "fail": []})
            if status == "ok":
                with open(detail, encoding="utf-8") as jf:
                    entry["ok"].append((int(rep), json.load(jf)))
            else:
                entry["fail"].append((int(rep), detail))
    return runs


def med(figs, *path):
    """Median of figs[i][path...] over the runs that have it, None if none."""
    vals = []
    for fig in figs:
        for key in path:
            fig = fig.get(key) if isinstance(fig, dict) else None
        if isinstance(fig, (int, float)) and not isinstance(fig, bool):
            vals.append(fig)
    return statistics.median(vals) if vals else None


def f1(value, unit=""):
    return "n/a" if value is None else "{:,.1f}{}".format(value, unit)


def ratio(a, b):
    return a / b if a is not None and b else None


def f3(value):
    return "n/a" if value is None else "%.3f" % value


def print_headline(sb, np_, target_pct):
    """Rate and CPU rows; returns PASS/MISS/None for the same-method check.

    Two CPU rows: stackbench's own figure (window x CPUs - idle - iowait, which
    does not lose the short busy slices the scheduler tick misses) against
    netperf's LOCAL_SD, and netperf's method (busy ticks / all ticks x elapsed
    x CPUs) applied to stackbench's own counters against LOCAL_SD. The second
    says whether the two tools measure the same thing when they count alike;
    the first how much netperf's method under-reads on this machine."""
    sb_cpu, np_cpu = med(sb, "cpu_us_per_tran"), med(np_, "cpu_us_per_tran")
    rows = [("rate (tr/s)", med(sb, "rate_tps"), med(np_, "rate_tps"), False),
            ("CPU us/tr, both sides", sb_cpu, np_cpu, False),
            ("CPU us/tr, netperf's method", med(sb, "netperf_way_us_per_tran"), np_cpu, True)]
    print("  %-34s %12s %12s %8s" % ("", "stackbench", "netperf", "sb/np"))
    verdict = None
    for label, a, b, judged in rows:
        r = ratio(a, b)
        tail = ""
        if label.startswith("CPU") and r is not None:
            ok = "PASS" if abs(r - 1.0) <= target_pct / 100.0 else "MISS"
            tail = "  %s (target within %g%%)" % (ok, target_pct)
            if judged:
                verdict = ok
        print("  %-34s %12s %12s %8s%s" % (label, f1(a), f1(b), f3(r), tail))
    print("    (stackbench total_cpu_us_per_tran = client + server CPUs, window x CPUs - idle - iowait;"
          " netperf LOCAL_SD = whole box, busy ticks / all ticks x elapsed)")
    return verdict


def print_per_rep(sb_ok, np_ok):
    cells = sorted([(rep, 0, "sb", f) for rep, f in sb_ok] + [(rep, 1, "np", f) for rep, f in np_ok],
                   key=lambda c: c[:2])
    print("  runs: " + "; ".join("%d %s %s tr/s %s us/tr" % (rep, tool, f1(f["rate_tps"]),
                                                             f1(f["cpu_us_per_tran"]))
                                 for rep, _, tool, f in cells))


def print_context(sb, np_):
    """stackbench's split and process view, netperf's own side figures."""
    c, s = ("sides", "client"), ("sides", "server")
    if all(f.get("separable") for f in sb):
        print("  stackbench split, CPU-set view: client %s us/tr (%s busy), server %s us/tr (%s busy)"
              % (f1(med(sb, *c, "cpu_us_per_tran")), f1(med(sb, *c, "util_pct"), "%"),
                 f1(med(sb, *s, "cpu_us_per_tran")), f1(med(sb, *s, "util_pct"), "%")))
    else:
        print("  stackbench: client and server share CPUs, no CPU-set split")
    pc, ps = med(sb, *c, "process_cpu_us_per_tran"), med(sb, *s, "process_cpu_us_per_tran")
    print("  stackbench process view: client %s, server %s, sum %s us/tr"
          % (f1(pc), f1(ps), f1(pc + ps if pc is not None and ps is not None else None)))
    print("  netperf: local util %s of %s CPUs (iowait %s), remote util %s;"
          " REMOTE_SD %s us/tr (the same box again)"
          % (f1(med(np_, "local_util_pct"), "%"), f1(med(np_, "local_cpu_count")),
             f1(med(np_, "local_iowait_pct"), "%"), f1(med(np_, "remote_util_pct"), "%"),
             f1(med(np_, "remote_sd_us_per_tran"))))


def print_cross_checks(sb, np_):
    """The same accounting applied to both tools' runs, to explain a gap."""
    print("  cross-checks (medians; each row counts both tools the same way):")
    rows = [
        ("busy ticks", med(sb, "tick_busy_us_per_tran"),
         med(np_, "box_busy_us_per_tran"), "netperf run: busy ticks of every CPU"),
        ("(100-idle%) x wall, netperf's way", med(sb, "netperf_way_us_per_tran"),
         med(np_, "cpu_us_per_tran"), "stackbench: util incl. iowait x window"),
        ("wall - idle - iowait (stackbench's)", med(sb, "wall_minus_idle_us_per_tran"),
         med(np_, "wall_minus_idle_us_per_tran"), "idle time is not tick-sampled"),
    ]
    for label, a, b, note in rows:
        print("    %-34s %9s %9s %8s   %s" % (label, f1(a), f1(b), f3(ratio(a, b)), note))
    print("    /proc/stat ticks / (wall x CPUs): stackbench %s (lowest side), netperf run %s;"
          " iowait s: sb %s, np %s"
          % (f3(med(sb, "tick_coverage")), f3(med(np_, "tick_coverage")),
             f1(med(sb, "iowait_s")), f1(med(np_, "iowait_s"))))
    print("    idle baselines (1 s before / after each run, busy share of all CPUs):"
          " sb %s / %s, np %s / %s"
          % tuple(f1(med(figs, key), "%") for figs in (sb, np_)
                  for key in ("baseline_busy_pct", "baseline_after_busy_pct")))


BACKGROUND_BUSY_PCT = 5.0  # the same threshold as stackbench's background_load


def print_background(sb_ok, np_ok):
    """Runs whose 1 s idle baseline was busy: other work on the box."""
    busy = []
    for tool, ok in (("stackbench", sb_ok), ("netperf", np_ok)):
        for rep, fig in ok:
            pct = max(fig.get("baseline_busy_pct") or 0.0, fig.get("baseline_after_busy_pct") or 0.0)
            if pct > BACKGROUND_BUSY_PCT:
                busy.append("%s rep %d (%.0f%%)" % (tool, rep, pct))
    if busy:
        print("  background load: the box was more than %g%% busy in the 1 s before or after %s;"
              " those runs' CPU figures include other work (see the per-run figures)"
              % (BACKGROUND_BUSY_PCT, ", ".join(busy)))


def print_warnings(sb_ok):
    seen = {}
    for rep, fig in sb_ok:
        for w in fig.get("warnings") or []:
            seen.setdefault((w["code"], w["message"]), []).append(rep)
    if not seen:
        print("  stackbench warnings: none")
    for (code, message), reps in sorted(seen.items()):
        print("  stackbench warning %s (rep %s): %s" % (code, ",".join(map(str, reps)), message))


def print_workload(wl, settings, runs, reps):
    """One workload's block; returns PASS, MISS or None (no figures)."""
    sb_e = runs.get((wl, "stackbench"), {"ok": [], "fail": []})
    np_e = runs.get((wl, "netperf"), {"ok": [], "fail": []})
    sb = [f for _, f in sb_e["ok"]]
    np_ = [f for _, f in np_e["ok"]]
    print("%s  vs  netperf %s   (medians of %d/%d and %d/%d runs)"
          % (settings["notation." + wl], settings["netperf." + wl], len(sb), reps, len(np_), reps))
    for tool, entry in (("stackbench", sb_e), ("netperf", np_e)):
        for rep, why in entry["fail"]:
            print("  %s rep %d failed: %s" % (tool, rep, why))
    if not sb or not np_:
        print("  no comparison: a tool has no successful run")
        print()
        return None
    verdict = print_headline(sb, np_, float(settings["target_pct"]))
    print_per_rep(sb_e["ok"], np_e["ok"])
    print_context(sb, np_)
    print_cross_checks(sb, np_)
    print_background(sb_e["ok"], np_e["ok"])
    print_warnings(sb_e["ok"])
    print()
    return verdict


def cmd_table(run_dir):
    """Prints the summary; 0 all PASS, 1 a comparison without figures, 3 a MISS."""
    settings = read_settings(run_dir)
    runs = collect(run_dir)
    verdicts = {}
    for wl in settings["workloads"].split():
        verdicts[wl] = print_workload(wl, settings, runs, int(settings["reps"]))
    summary = ", ".join("%s %s" % (settings["notation." + wl], v or "NO FIGURES")
                        for wl, v in verdicts.items())
    print("verdict (netperf's method on stackbench's counters within %s%% of netperf LOCAL_SD): %s"
          % (settings["target_pct"], summary))
    if None in verdicts.values():
        return 1
    return 3 if "MISS" in verdicts.values() else 0


# --- self-test ------------------------------------------------------------------

# One side as the flat table gives it: 10 s on one CPU, 5.68 s idle (clock-measured),
# 2.75 s of busy ticks out of 8.43 s of ticks in all.
SAMPLE_SIDE = {"cpus": "0", "cpu_count": 1, "window_s": 10.0, "cpu_s": 4.32,
               "util_pct": 43.2, "cpu_us_per_tran": 4.32e6 / 171430, "iowait_s": 0.0,
               "tick_busy_s": 2.75, "tick_util_pct": 2.75 / 8.43 * 100, "tick_coverage": 0.843,
               "process_cpu_us_per_tran": 22.2}
SAMPLE_NETPERF = "20000.00,Trans/s,10.000,40.00,41.00,40.000,41.000,2,2,P,0.00\n"


def sample_stackbench():
    row = {"notation": "RR1(1B/1B)", "complete": True, "rate_tps": 17143.0,
           "transactions": 171430, "cpu_separable": True,
           "total_cpu_us_per_tran": 2 * 4.32e6 / 171430,
           "warnings": "background_load", "warning_messages": "busy"}
    for side, cpus in (("client", "0"), ("server", "1")):
        row.update({"%s_%s" % (side, k): v for k, v in dict(SAMPLE_SIDE, cpus=cpus).items()})
    return [row]


def self_test():
    sb = parse_stackbench(sample_stackbench(), "RR1(1B/1B)")
    assert sb["sides"]["server"]["cpus"] == [1], sb
    assert sb["cpu_us_per_tran"] == 2 * 4.32e6 / 171430 and sb["warnings"][0]["code"] == "background_load"
    # netperf's way: busy ticks / all ticks x window x CPUs: 2.75 / 8.43 x 10 s per side.
    expect = 2 * (2.75 / 8.43 * 10.0) * 1e6 / 171430
    assert abs(sb["netperf_way_us_per_tran"] - expect) < 1e-6, sb
    assert abs(sb["wall_minus_idle_us_per_tran"] - 2 * 4.32 * 1e6 / 171430) < 1e-6, sb
    assert abs(sb["tick_coverage"] - 0.843) < 1e-9
    npf = parse_netperf("junk\n" + SAMPLE_NETPERF)
    assert npf["cpu_us_per_tran"] == 40.0 and npf["transactions"] == 200000.0
    before = (0.0, {"cpu0": dict.fromkeys(STAT_FIELDS, 0), "cpu1": dict.fromkeys(STAT_FIELDS, 0)})
    ticks = dict.fromkeys(STAT_FIELDS, 0)
    ticks.update(system=3 * TICKS_PER_S, idle=5 * TICKS_PER_S)
    box = box_delta(before, (10.0, {"cpu0": ticks, "cpu1": ticks}))
    assert box["busy_s"] == 6.0 and box["tick_coverage"] == 16.0 / 20.0, box
    add_netperf_box(npf, box)
    assert npf["box_busy_us_per_tran"] == 30.0 and npf["wall_minus_idle_us_per_tran"] == 50.0
    for bad in ("", "1,Trans/s,x,1,1,1,1,2,2,P,0\n", SAMPLE_NETPERF.replace("Trans/s", "10^6bits/s")):
        try:
            parse_netperf(bad)
        except ParseError:
            continue
        raise AssertionError("accepted %r" % bad)
    print("self-test: ok")
    return 0


def main(argv):
    if len(argv) >= 3 and argv[0] == "parse":
        return cmd_parse(argv[1], argv[2], argv[3] if len(argv) > 3 else None)
    if len(argv) == 2 and argv[0] == "table":
        return cmd_table(argv[1])
    if argv == ["self-test"]:
        return self_test()
    print(__doc__.split("Usage:")[1].split("BASE is")[0].rstrip(), file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
