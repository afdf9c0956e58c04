#!/usr/bin/env bash
# bench/cpu_vs_netperf.sh — stackbench's CPU per transaction vs netperf's
# service demand, on loopback, pinned the same way, in one run.
#
# For each workload it runs stackbench and netperf TCP_RR alternately REPS
# times (stackbench, netperf, stackbench, netperf, ...), and prints the medians
# of rate and of CPU µs per transaction for both sides together, their ratio
# stackbench/netperf and PASS/MISS against TARGET_PCT. On loopback netperf's
# LOCAL service demand already covers the whole machine (both sides), so it is
# compared with stackbench's total (client + server); see bench/README.md.
#
# Traffic goes to 127.0.0.1 only; every process runs under `timeout`; the
# netserver this script starts is stopped by it (also on Ctrl-C).
set -euo pipefail

usage() {
  cat <<'EOF'
usage: bench/cpu_vs_netperf.sh      (settings come from the environment)

  DURATION=10      seconds measured per run (stackbench --duration, netperf -l)
  WARMUP=2         stackbench --warmup seconds (netperf has no warm-up)
  REPS=3           stackbench/netperf pairs per workload, interleaved
  CLIENT_CPUS=0    the one CPU of the client side (stackbench --client-cpus,
                   netperf -T and taskset)
  SERVER_CPUS=1    the one CPU of the server side (default 0 on a 1-CPU machine)
  WORKLOADS="rr1 rr4k"   rr1:  RR1(1B/1B)    vs TCP_RR -r 1,1
                         rr4k: RR1(4kB/4kB)  vs TCP_RR -r 4096,4096
  TARGET_PCT=5     agreement target of the CPU µs/tr ratio, in percent
  PEERS_BIN=/work/peers/bin   where netperf and netserver are looked for first
                   (then $PATH)
  STACKBENCH=target/release/stackbench   binary to test; the default path is
                   built with `cargo build --release -p stackbench` when missing
  NETPERF_PORT=12865   loopback port of the netserver this script starts
  OUT_DIR=$(mktemp -d)   raw outputs of every run are kept here

Exit status: 0 every comparison within TARGET_PCT, 1 some run failed,
2 bad settings, 3 all runs succeeded but some comparison missed the target.
EOF
}

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
REPORT="$ROOT/bench/cpu_report.py"
HOST=127.0.0.1 # loopback only, by design
BENCH_NAME=cpu_vs_netperf.sh
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"
bench_args "$@"

WORKLOADS=${WORKLOADS:-rr1 rr4k}
TARGET_PCT=${TARGET_PCT:-5}
NETPERF_PORT=${NETPERF_PORT:-12865}

declare -A NOTATION=([rr1]='RR1(1B/1B)' [rr4k]='RR1(4kB/4kB)')
declare -A RR_SIZES=([rr1]='1,1' [rr4k]='4096,4096')
# The omni fields parse_netperf in cpu_report.py expects, in this order.
NETPERF_FIELDS=THROUGHPUT,THROUGHPUT_UNITS,ELAPSED_TIME,LOCAL_CPU_UTIL,REMOTE_CPU_UTIL,LOCAL_SD,REMOTE_SD,LOCAL_CPU_COUNT,REMOTE_CPU_COUNT,LOCAL_CPU_METHOD,LOCAL_CPU_PERCENT_IOWAIT

check_settings() {
  local name
  check_common NETPERF_PORT
  [[ $TARGET_PCT =~ ^[0-9]+([.][0-9]+)?$ ]] || die_usage "TARGET_PCT='$TARGET_PCT' is not a number; e.g. TARGET_PCT=5"
  for name in CLIENT_CPUS SERVER_CPUS; do
    [[ ${!name} =~ ^[0-9]+$ ]] ||
      die_usage "$name='${!name}' must be one CPU number (netperf -T pins each side to one CPU); e.g. $name=0"
    [[ -d /sys/devices/system/cpu/cpu${!name} ]] || die_usage "$name=${!name}: no such CPU ($(nproc) online)"
  done
  for name in $WORKLOADS; do
    [[ -n ${NOTATION[$name]:-} ]] || die_usage "WORKLOADS: unknown '$name'; use rr1 rr4k"
  done
  local tool
  for tool in python3 taskset timeout; do
    command -v "$tool" >/dev/null || die_usage "$tool is needed; install it (python3, util-linux, coreutils)"
  done
}

prepare_tools() {
  NETPERF=$(find_peer netperf)
  NETSERVER=$(find_peer netserver)
  [[ -n $NETPERF && -n $NETSERVER ]] ||
    die_usage "netperf and netserver not found in PEERS_BIN=$PEERS_BIN or \$PATH; build netperf 2.7 (see bench/README.md)"
  prepare_stackbench
  [[ -n $SB_BIN ]] || die_usage "$SB_WHY"
}

# --- processes ----------------------------------------------------------------

NETSERVER_PID=""
CLIENT_PID=""
cleanup() {
  local pid
  for pid in $CLIENT_PID $NETSERVER_PID; do
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

listening() { ss -Hltn "sport = :$1" 2>/dev/null | grep -q .; }

# start_netserver: one netserver for the whole run, pinned to SERVER_CPUS
# (its per-test children inherit that; netperf -T pins the data process too),
# bounded by the whole run's length. Waits at most 5 s for it to listen.
start_netserver() {
  local log=$OUT_DIR/netserver.log bound
  local have_ss
  have_ss=$(command -v ss || true)
  if [[ -n $have_ss ]] && listening "$NETPERF_PORT"; then
    die_usage "port $NETPERF_PORT is already in use; choose another with NETPERF_PORT"
  fi
  bound=$((REPS * NWORKLOADS * (2 * DURATION + WARMUP + 20) + 120))
  timeout "$bound" taskset -c "$SERVER_CPUS" "$NETSERVER" -D -L "$HOST" -p "$NETPERF_PORT" >"$log" 2>&1 &
  NETSERVER_PID=$!
  if [[ -z $have_ss ]]; then sleep 1; return 0; fi
  for _ in $(seq 50); do
    listening "$NETPERF_PORT" && return 0
    kill -0 "$NETSERVER_PID" 2>/dev/null || die_usage "netserver exited at start, see $log"
    sleep 0.1
  done
  die_usage "netserver did not listen on port $NETPERF_PORT within 5 s, see $log"
}

# snap FILE: wall-clock time and the per-CPU lines of /proc/stat, so that
# cpu_report.py can count every CPU's ticks around a run the same way for both
# tools.
snap() { { date +%s.%N; grep '^cpu[0-9]' /proc/stat; } >"$1"; }

# bounded BASE CMD...: a 1 s idle baseline (snap0 -> snap1), CMD under a time
# bound (snap1 -> snap2), another 1 s idle baseline (snap2 -> snap3); stdout to
# BASE.out, stderr to BASE.err. CMD runs in the background and is waited for,
# so that Ctrl-C reaches the trap at once.
bounded() {
  local base=$1 rc=0
  shift
  snap "$base.snap0"
  sleep 1
  snap "$base.snap1"
  timeout $((DURATION + WARMUP + 60)) "$@" >"$base.out" 2>"$base.err" &
  CLIENT_PID=$!
  wait "$CLIENT_PID" || rc=$?
  CLIENT_PID=""
  snap "$base.snap2"
  sleep 1
  snap "$base.snap3"
  return "$rc"
}

# finish_run WL TOOL REP RC: parse BASE.out into BASE.json, or record why not.
finish_run() {
  local wl=$1 tool=$2 rep=$3 rc=$4 base why
  base=$OUT_DIR/raw/$wl.$tool.$rep
  if [[ $rc -ne 0 ]]; then
    why="exit status $rc"
    [[ $rc -ne 124 ]] || why+=" (timed out)"
    why+=": $(grep -v '^[[:space:]]*$' "$base.err" | head -n 1 || true)"
  elif STACKBENCH=$SB_BIN python3 "$REPORT" parse "$tool" "$base" "${NOTATION[$wl]}" >"$base.json" 2>"$base.parse-err"; then
    printf '%s\t%s\t%s\tok\t%s\n' "$wl" "$tool" "$rep" "$base.json" >>"$OUT_DIR/runs.tsv"
    return 0
  else
    why="unreadable output: $(head -n 1 "$base.parse-err")"
  fi
  echo "$tool run failed: $why (raw output: $base.*)" >&2
  printf '%s\t%s\t%s\tfail\t%s\n' "$wl" "$tool" "$rep" "$why" >>"$OUT_DIR/runs.tsv"
  FAILED=1
}

run_stackbench() {
  local wl=$1 rep=$2 rc=0
  echo "[${NOTATION[$wl]} rep $rep/$REPS] stackbench run '${NOTATION[$wl]}' --threads 1 --server-threads 1" >&2
  # stackbench pins its driver and its responder itself.
  bounded "$OUT_DIR/raw/$wl.stackbench.$rep" "$SB_BIN" run "${NOTATION[$wl]}" \
    --duration "${DURATION}s" --warmup "${WARMUP}s" --threads 1 --server-threads 1 \
    --client-cpus "$CLIENT_CPUS" --server-cpus "$SERVER_CPUS" --no-store --json || rc=$?
  finish_run "$wl" stackbench "$rep" "$rc"
}

run_netperf() {
  local wl=$1 rep=$2 rc=0
  echo "[${NOTATION[$wl]} rep $rep/$REPS] netperf -T $CLIENT_CPUS,$SERVER_CPUS -t TCP_RR -c -C -- -r ${RR_SIZES[$wl]}" >&2
  # -T pins netperf to CLIENT_CPUS and netserver's data process to SERVER_CPUS;
  # taskset pins netperf from its first instruction as well.
  bounded "$OUT_DIR/raw/$wl.netperf.$rep" taskset -c "$CLIENT_CPUS" "$NETPERF" -H "$HOST" \
    -p "$NETPERF_PORT" -T "$CLIENT_CPUS,$SERVER_CPUS" -t TCP_RR -l "$DURATION" -c -C -P 0 \
    -- -r "${RR_SIZES[$wl]}" -o "$NETPERF_FIELDS" || rc=$?
  finish_run "$wl" netperf "$rep" "$rc"
}

print_header() {
  echo "stackbench CPU per transaction vs netperf service demand, loopback $HOST"
  echo "  client CPU $CLIENT_CPUS, server CPU $SERVER_CPUS ($(nproc) CPUs online)"
  echo "  $DURATION s per run, $REPS reps interleaved, medians; stackbench warm-up $WARMUP s, 1 s idle baseline before and after every run"
  echo "  stackbench: $SB_BIN"
  echo "  netperf:    $NETPERF ($("$NETPERF" -V 2>/dev/null | head -n 1 || echo 'version unknown'))"
  echo "  raw outputs: $OUT_DIR"
  echo "  estimated time: ~$(((REPS * NWORKLOADS * (2 * DURATION + WARMUP + 8) + 59) / 60)) min"
  echo
}

main() {
  check_settings
  OUT_DIR=${OUT_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/stackbench-cpu.XXXXXX")}
  mkdir -p "$OUT_DIR/raw"
  : >"$OUT_DIR/runs.tsv"
  local wl rep
  read -r -a WL_LIST <<<"$WORKLOADS"
  NWORKLOADS=${#WL_LIST[@]}
  [[ $NWORKLOADS -gt 0 ]] || die_usage "WORKLOADS is empty; use rr1 rr4k"
  {
    echo "reps=$REPS"
    echo "target_pct=$TARGET_PCT"
    echo "client_cpus=$CLIENT_CPUS"
    echo "server_cpus=$SERVER_CPUS"
    echo "workloads=$WORKLOADS"
    for wl in "${WL_LIST[@]}"; do echo "notation.$wl=${NOTATION[$wl]}"; echo "netperf.$wl=TCP_RR -r ${RR_SIZES[$wl]}"; done
  } >"$OUT_DIR/settings"
  FAILED=0
  prepare_tools
  print_header
  start_netserver
  for wl in "${WL_LIST[@]}"; do
    for rep in $(seq "$REPS"); do
      run_stackbench "$wl" "$rep"
      run_netperf "$wl" "$rep"
    done
  done
  local rc=0
  python3 "$REPORT" table "$OUT_DIR" || rc=$?
  [[ $FAILED -eq 0 ]] || return 1
  return "$rc"
}

main
