#!/usr/bin/env bash
# bench/population.sh — a transparent generator at seed scale (issue 36,
# targets 1 and 2): think-time populations such as RR256K(100B/800B)@30s run
# over as many agents as the fd limit needs, once per scheduling of the
# driver's workers (gen_sched), and one row per run:
#
#   population, gen_sched, agents, connected/clients, X tr/s, N/(R+Z) tr/s,
#   X off %, latency p50/p99 µs, generator lag p99 µs, lag share of p99 %,
#   stall band % (35-250 ms), memory per user per side B, warnings
#
# "lag share" is population.generator_lag_p99_share_pct: how much of the
# latency tail is the generator's own scheduling (the lag merged exactly
# over agents from their histograms). Run it on a quiet machine: the figures
# are scheduling, and any other load is in them.
#
# Environment: POPULATIONS (space-separated notations, default
# 'RR256K(100B/800B)@30s'), SCHEDS (default 'default slice:100us fifo:10'),
# DURATION, WARMUP (seconds; a 30 s think time wants DURATION ≥ 60 and
# WARMUP ≥ 35 so every user cycled once before the window), REPS,
# STACKBENCH (binary), OUT_DIR. Rows go to stdout, records to $OUT_DIR.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BENCH_NAME=population.sh
# This script's defaults, before lib.sh's (which keeps values already set).
DURATION=${DURATION:-60}
WARMUP=${WARMUP:-35}
REPS=${REPS:-1}
# shellcheck source=lib.sh
source "$ROOT/bench/lib.sh"
POPULATIONS=${POPULATIONS:-'RR256K(100B/800B)@30s'}
SCHEDS=${SCHEDS:-'default slice:100us fifo:10'}
OUT_DIR=${OUT_DIR:-$(mktemp -d /tmp/population.XXXXXX)}

usage() {
  sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'
}

bench_args "$@"
check_common
mkdir -p "$OUT_DIR"
prepare_stackbench
[[ -n $SB_BIN ]] || { echo "$BENCH_NAME: $SB_WHY" >&2; exit 2; }

row() {
  python3 - "$1" "$2" <<'PY'
import json, sys
path, sched = sys.argv[1], sys.argv[2]
doc = json.load(open(path))
r = doc[0] if isinstance(doc, list) else doc
for c in r["classes"]:
    p = c.get("population") or {}
    lat = c.get("latency_us") or {}
    lag = p.get("generator_lag_us") or {}
    r_s = lat.get("mean", 0) / 1e6
    z_s = p.get("think_mean_s") or 0
    ideal = c["clients"] / (r_s + z_s) if r_s + z_s > 0 else float("nan")
    band = c.get("stall_band") or {}
    band_pct = 100 * band.get("transactions", 0) / max(band.get("of_transactions", 0), 1)
    mem = c.get("memory") or {}
    def per_user(side):
        m = mem.get(side) or {}
        u, k = m.get("rss_bytes_per_conn"), m.get("kernel_sock_bytes_per_conn")
        return "-" if u is None or k is None else f"{u + k:.0f}"
    agents = (r.get("agents") or {}).get("count", 1)
    codes = ",".join(sorted({w["code"] for w in r.get("warnings", [])})) or "-"
    print("\t".join(str(x) for x in [
        c["notation"], sched, agents, f'{p.get("connected", "-")}/{c["clients"]}',
        f'{c["rate_tps"]:.0f}', f"{ideal:.0f}", f'{100 * (c["rate_tps"] / ideal - 1):+.2f}',
        f'{lat.get("p50", float("nan")):.0f}', f'{lat.get("p99", float("nan")):.0f}',
        f'{lag.get("p99", float("nan")):.0f}',
        f'{p.get("generator_lag_p99_share_pct") or float("nan"):.0f}',
        f"{band_pct:.2f}", per_user("client"), per_user("server"), codes]))
PY
}

printf 'population\tgen_sched\tagents\tconnected\tX_tps\tN/(R+Z)_tps\tX_off_pct\tp50_us\tp99_us\tlag_p99_us\tlag_share_pct\tstall_band_pct\tclient_B_per_user\tserver_B_per_user\twarnings\n'
for pop in $POPULATIONS; do
  for rep in $(seq "$REPS"); do
    for sched in $SCHEDS; do
      out="$OUT_DIR/$(echo "$pop-$sched-$rep" | tr -c 'A-Za-z0-9.-' _).json"
      if ! "$SB_BIN" run "$pop" --gen-sched "$sched" --duration "${DURATION}s" \
          --warmup "${WARMUP}s" --no-store --json >"$out" 2>"$out.err"; then
        echo "$BENCH_NAME: $pop with gen_sched $sched failed: $(tail -1 "$out.err")" >&2
        continue
      fi
      row "$out" "$sched"
    done
  done
done
