#!/usr/bin/env bash
# bench/peers.sh — stackbench side by side with netperf, neper, iperf3, sockperf
# and bench/pingpong.c (a minimal spinning C ping-pong, the busy-poll reference).
#
# Runs the same loopback workloads with each tool, pinned the same way (client
# on CLIENT_CPUS, server on SERVER_CPUS), REPS times interleaved (stackbench,
# peer, peer, stackbench, ...), and prints the median of each figure and the
# stackbench/peer ratio of medians: rates, latencies, and CPU µs per
# transaction (or per MiB for streams) per side for every tool that reports it.
# Peers that are not installed are named and skipped. See bench/README.md for
# what is compared with what and why.
#
# Traffic goes to 127.0.0.1 only; every process runs under `timeout`; every
# server this script starts is stopped by it (also on Ctrl-C).
set -euo pipefail

usage() {
  cat <<'EOF'
usage: bench/peers.sh            (settings come from the environment)

  DURATION=10      seconds measured per run (stackbench --duration, netperf -l,
                   neper -l, iperf3 -t)
  WARMUP=2         seconds of warm-up (stackbench --warmup, iperf3 -O); netperf
                   and neper have none
  REPS=3           repetitions of each stackbench/peer pair, interleaved
  CLIENT_CPUS=0    CPU list for the client side (taskset -c syntax)
  SERVER_CPUS=1    CPU list for the server side (default 0 on a 1-CPU machine)
  WORKLOADS="rr1 rr10 crr10 str3 spin1"   which comparisons to run; spin1 is
                   RR1 with stackbench --spin both against bench/pingpong.c
                   (both sides busy-poll; built here with cc -O2)
  CRR_CLOSE=abort  abort: stackbench --crr-close abort vs neper tcp_crr default
                   (client SO_LINGER 0, RST); client: stackbench --crr-close
                   client vs neper tcp_crr --time-wait (graceful client close)
  FLOW_THREADS=2   threads per side for the 10-flow workloads (rr10, crr10):
                   neper -T and stackbench --threads/--server-threads alike
  SB_EXTRA=""      extra flags for every stackbench run, e.g. "--io uring"
  KERNEL_WORK=0    1: also count what every run asks of the kernel, as rows
                   per transaction (per MiB for streams): system calls per
                   side (perf stat syscall tracepoints on CLIENT_CPUS and
                   SERVER_CPUS, each call by name in the notes), context
                   switches, and TCP segments sent (nstat, host-wide: keep
                   the machine otherwise quiet). The counts cover the whole
                   run (set-up and warm-up too) over rate x run time. Needs
                   perf with tracepoint access (root) and nstat
  PEERS_BIN=/work/peers/bin   where netperf, netserver, tcp_rr, tcp_crr,
                   tcp_stream, iperf3, sockperf are looked for first (then $PATH)
  STACKBENCH=target/release/stackbench   binary to test; the default path is
                   built with `cargo build --release` when missing
  NETPERF_PORT=12865 NEPER_PORT=12866 (data port +1) IPERF3_PORT=5201
  SOCKPERF_PORT=11111 PINGPONG_PORT=12868
  OUT_DIR=$(mktemp -d)   raw outputs of every run are kept here

Exit status: 0 all runs succeeded, 1 some run failed (the table still shows
the rest), 2 bad settings.
EOF
}

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
REPORT="$ROOT/bench/peers_report.py"
HOST=127.0.0.1 # loopback only, by design
BENCH_NAME=peers.sh
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"
bench_args "$@"

WORKLOADS=${WORKLOADS:-rr1 rr10 crr10 str3 spin1}
CRR_CLOSE=${CRR_CLOSE:-abort}
NETPERF_PORT=${NETPERF_PORT:-12865}
NEPER_PORT=${NEPER_PORT:-12866}
IPERF3_PORT=${IPERF3_PORT:-5201}
SOCKPERF_PORT=${SOCKPERF_PORT:-11111}
PINGPONG_PORT=${PINGPONG_PORT:-12868}
FLOW_THREADS=${FLOW_THREADS:-2}
KERNEL_WORK=${KERNEL_WORK:-0}
# KERNEL_WORK=1: counted per CPU (perf stat -A), split into sides by CPU set.
WORK_SYSCALLS="sendto recvfrom sendmsg recvmsg read write epoll_wait epoll_pwait epoll_ctl
  io_uring_enter poll ppoll select pselect6 socket connect accept accept4 close shutdown
  setsockopt getsockopt fcntl ioctl futex nanosleep clock_nanosleep sched_yield getrusage"

check_settings() {
  local name
  check_common NETPERF_PORT NEPER_PORT IPERF3_PORT SOCKPERF_PORT PINGPONG_PORT FLOW_THREADS
  check_cpu_lists
  [[ $CRR_CLOSE == abort || $CRR_CLOSE == client ]] ||
    die_usage "CRR_CLOSE='$CRR_CLOSE' is not abort or client"
  for name in $WORKLOADS; do
    [[ $name =~ ^(rr1|rr10|crr10|str3|spin1)$ ]] || die_usage "WORKLOADS: unknown '$name'; use rr1 rr10 crr10 str3 spin1"
  done
  [[ $KERNEL_WORK == 0 || $KERNEL_WORK == 1 ]] || die_usage "KERNEL_WORK='$KERNEL_WORK' is not 0 or 1"
  if [[ $KERNEL_WORK == 1 ]]; then
    command -v nstat >/dev/null || die_usage "KERNEL_WORK=1 needs nstat (iproute2); install it"
    perf stat -x, -e raw_syscalls:sys_enter -o /dev/null -- true 2>/dev/null ||
      die_usage "KERNEL_WORK=1 needs perf with tracepoint access: install perf (Debian: linux-perf) and run as root"
  fi
}

# work_events: the perf stat event list of KERNEL_WORK=1 (the syscalls this
# kernel has a tracepoint for, the total, context switches). tracefs is at
# /sys/kernel/tracing, or under debugfs on older set-ups.
work_events() {
  local name dir events=raw_syscalls:sys_enter,context-switches
  for dir in /sys/kernel/tracing /sys/kernel/debug/tracing; do
    [[ -d $dir/events/syscalls ]] && break
  done
  for name in $WORK_SYSCALLS; do
    [[ -d $dir/events/syscalls/sys_enter_$name ]] && events+=,syscalls:sys_enter_$name
  done
  echo "$events"
}

# --- tools ------------------------------------------------------------------


# prepare_pingpong: builds bench/pingpong.c into $OUT_DIR (our own reference,
# so it is compiled here rather than installed). Sets PINGPONG or PINGPONG_WHY.
PINGPONG="" PINGPONG_WHY=""
prepare_pingpong() {
  if ! command -v cc >/dev/null; then PINGPONG_WHY="no C compiler (cc)"; return 0; fi
  if cc -O2 -o "$OUT_DIR/pingpong" "$ROOT/bench/pingpong.c" 2>"$OUT_DIR/pingpong-build.log"; then
    PINGPONG=$OUT_DIR/pingpong
  else
    PINGPONG_WHY="cc -O2 bench/pingpong.c failed, see $OUT_DIR/pingpong-build.log"
  fi
}

# --- servers ----------------------------------------------------------------

SERVER_PIDS=()
CLIENT_PID=""
cleanup() {
  local pid
  for pid in $CLIENT_PID "${SERVER_PIDS[@]}"; do
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# listening PORT: a TCP socket listens on PORT (needs ss from iproute2).
listening() { ss -Hltn "sport = :$1" 2>/dev/null | grep -q .; }
HAVE_SS=$(command -v ss || true)

# start_server PORT LOG CMD...: CMD pinned to SERVER_CPUS under a time bound;
# waits (at most 5 s) until PORT listens. Sets SERVER_PID.
start_server() {
  local port=$1 log=$2
  shift 2
  SERVER_PID=""
  if [[ -n $HAVE_SS ]] && listening "$port"; then
    echo "port $port is already in use (choose another: NETPERF_PORT, NEPER_PORT, IPERF3_PORT)" >"$log"
    return 1
  fi
  timeout $((DURATION + WARMUP + 60)) taskset -c "$SERVER_CPUS" "$@" >"$log" 2>&1 &
  SERVER_PID=$!
  SERVER_PIDS+=("$SERVER_PID")
  if [[ -z $HAVE_SS ]]; then sleep 1; kill -0 "$SERVER_PID" 2>/dev/null && return 0; fi
  for _ in $(seq 50); do
    listening "$port" && return 0
    kill -0 "$SERVER_PID" 2>/dev/null || { echo "server exited: $*" >>"$log"; return 1; }
    sleep 0.1
  done
  echo "server did not listen on port $port within 5 s: $*" >>"$log"
  return 1
}

# stop_server [GRACE]: with GRACE, give a server that ends with its client (and
# then prints its own figures: neper, pingpong) up to 3 s before killing it.
stop_server() {
  [[ -n $SERVER_PID ]] || return 0
  if [[ -n ${1:-} ]]; then
    for _ in $(seq 30); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.1; done
  fi
  kill "$SERVER_PID" 2>/dev/null || true
  wait "$SERVER_PID" 2>/dev/null || true
}

# --- one run ----------------------------------------------------------------

# record WL TOOL REP STATUS DETAIL: one line of runs.tsv (read by peers_report.py).
record() { printf '%s\t%s\t%s\t%s\t%s\n' "$(label "$1")" "${@:2}" >>"$OUT_DIR/runs.tsv"; }

# first_error FILE: the first line mentioning an error (neper marks them with a
# leading E or F and the date), else the last line.
first_error() {
  { grep -m 1 -E -i 'error|^[EF][0-9]{4} ' "$1" || grep -v '^[[:space:]]*$' "$1" | tail -n 1; } 2>/dev/null || true
}

# finish_run WL TOOL REP RC [NOTATION [SERVER-LOG]]: parse $OUT_DIR/raw/WL.TOOL.REP.out
# (and the server's log, for the server side's CPU) into a .kv file, or record
# why the run failed.
finish_run() {
  local wl=$1 tool=$2 rep=$3 rc=$4 notation=${5:-} server_log=${6:-} base why
  base=$OUT_DIR/raw/$wl.$tool.$rep
  if [[ $rc -ne 0 ]]; then
    why="exit status $rc"
    [[ $rc -ne 124 ]] || why+=" (timed out)"
    why+=": $(first_error "$base.err")"
  elif STACKBENCH=$SB_BIN python3 "$REPORT" parse "$tool" "$base.out" "$notation" >"$base.kv" 2>"$base.parse-err"; then
    [[ -z $server_log ]] || python3 "$REPORT" parse-server "$tool" "$server_log" >>"$base.kv"
    add_work "$wl" "$tool" "$base"
    record "$wl" "$tool" "$rep" ok "$base.kv"
    return 0
  else
    why="unreadable output: $(head -n 1 "$base.parse-err")"
  fi
  echo "$tool run failed: $why (raw output: $base.*)" >&2
  record "$wl" "$tool" "$rep" fail "$why"
  FAILED=1
}

# bounded BASE CMD...: CMD under a time bound, stdout to BASE.out, stderr to
# BASE.err. Run in the background and waited for, so that Ctrl-C or TERM
# reaches the trap at once instead of after CMD ends.
# With KERNEL_WORK=1, `perf stat -A` counts the kernel work on both sides'
# CPUs while CMD runs (BASE.perf), between two nstat snapshots.
bounded() {
  local base=$1 rc=0 wrap=()
  shift
  if [[ $KERNEL_WORK == 1 ]]; then
    wrap=(perf stat -x, -A -C "$CLIENT_CPUS,$SERVER_CPUS" -e "$WORK_EVENTS" -o "$base.perf" --)
    nstat -asz TcpOutSegs >"$base.nstat-before"
  fi
  "${wrap[@]}" timeout $((DURATION + WARMUP + 60)) "$@" >"$base.out" 2>"$base.err" &
  CLIENT_PID=$!
  wait "$CLIENT_PID" || rc=$?
  CLIENT_PID=""
  [[ $KERNEL_WORK == 0 ]] || nstat -asz TcpOutSegs >"$base.nstat-after"
  return "$rc"
}

# add_work WL TOOL BASE: KERNEL_WORK=1 figures of a parsed run appended to
# BASE.kv; the divisor is the run's rate x its run time (stackbench and
# iperf3 also run WARMUP seconds before they measure), in transactions, or
# in MiB for streams.
add_work() {
  local wl=$1 tool=$2 base=$3 seconds=$DURATION unit=tr
  [[ $KERNEL_WORK == 1 ]] || return 0
  [[ $tool != stackbench && $tool != iperf3 ]] || seconds=$((DURATION + WARMUP))
  [[ ${FIGURES[$wl]} != bulk_bytes_per_s* ]] || unit=mib
  python3 "$REPORT" parse-work "$base.kv" "$base.perf" "$base.nstat-before" \
    "$base.nstat-after" "$seconds" "$CLIENT_CPUS" "$SERVER_CPUS" "$unit" >"$base.work" 2>"$base.work-err" &&
    cat "$base.work" >>"$base.kv" ||
    echo "$tool: kernel work not counted: $(head -n 1 "$base.work-err")" >&2
}

# client WL TOOL REP CMD...: CMD pinned to CLIENT_CPUS under a time bound.
client() {
  local base=$OUT_DIR/raw/$1.$2.$3
  shift 3
  bounded "$base" taskset -c "$CLIENT_CPUS" "$@"
}

# run_stackbench WL REP NOTATION THREADS [extra flags...]
run_stackbench() {
  local wl=$1 rep=$2 notation=$3 threads=$4 base rc=0
  shift 4
  base=$OUT_DIR/raw/$wl.stackbench.$rep
  if [[ -z $SB_BIN ]]; then
    echo "stackbench run failed: $SB_WHY" >&2
    record "$wl" stackbench "$rep" fail "$SB_WHY"
    FAILED=1
    return 0
  fi
  # stackbench pins itself (and its responder) with --client-cpus/--server-cpus;
  # the responder gets as many threads as the driver, as the peers' servers do.
  bounded "$base" "$SB_BIN" run "$notation" --duration "${DURATION}s" \
    --warmup "${WARMUP}s" --threads "$threads" --server-threads "$threads" \
    --client-cpus "$CLIENT_CPUS" --server-cpus "$SERVER_CPUS" "$@" --json || rc=$?
  finish_run "$wl" stackbench "$rep" "$rc" "$notation"
}

# run_netperf WL REP TEST TEST-ARGS...
run_netperf() {
  local wl=$1 rep=$2 test=$3 rc=0 bind=()
  shift 3
  # -T pins both ends as well when each side is a single CPU.
  [[ $CLIENT_CPUS =~ ^[0-9]+$ && $SERVER_CPUS =~ ^[0-9]+$ ]] && bind=(-T "$CLIENT_CPUS,$SERVER_CPUS")
  if start_server "$NETPERF_PORT" "$OUT_DIR/raw/$wl.netserver.$rep.log" \
    "$NETSERVER" -D -p "$NETPERF_PORT" -L "$HOST"; then
    # -c -C: local and remote CPU (service demand, µs/transaction).
    client "$wl" netperf "$rep" "$NETPERF" -H "$HOST" -p "$NETPERF_PORT" "${bind[@]}" \
      -t "$test" -l "$DURATION" -c -C -P 0 -- "$@" \
      -o THROUGHPUT,THROUGHPUT_UNITS,MEAN_LATENCY,P50_LATENCY,P99_LATENCY,LOCAL_SD,REMOTE_SD || rc=$?
  else
    rc=1
    cp "$OUT_DIR/raw/$wl.netserver.$rep.log" "$OUT_DIR/raw/$wl.netperf.$rep.err"
  fi
  stop_server
  finish_run "$wl" netperf "$rep" "$rc"
}

# run_neper WL REP BINARY "ARGS FOR BOTH SIDES" "CLIENT-ONLY ARGS"
# neper does not send -Q/-R/-M/-T to its server, so both sides get them.
run_neper() {
  local wl=$1 rep=$2 bin=$3 rc=0 both client_only
  read -r -a both <<<"$4"
  read -r -a client_only <<<"${5:-}"
  # --logtostderr: neper otherwise writes a log file into the current directory.
  local ports=(-C "$NEPER_PORT" -P "$((NEPER_PORT + 1))" -l "$DURATION" --logtostderr)
  local log=$OUT_DIR/raw/$wl.neper-server.$rep.log
  if start_server "$NEPER_PORT" "$log" "$bin" "${ports[@]}" "${both[@]}"; then
    client "$wl" neper "$rep" "$bin" -c -H "$HOST" "${ports[@]}" "${both[@]}" \
      "${client_only[@]}" || rc=$?
  else
    rc=1
    cp "$log" "$OUT_DIR/raw/$wl.neper.$rep.err"
  fi
  stop_server grace
  finish_run "$wl" neper "$rep" "$rc" "" "$log"
}

# run_iperf3 WL REP CLIENT-ARGS...  (one-off server: -1)
run_iperf3() {
  local wl=$1 rep=$2 rc=0
  shift 2
  if start_server "$IPERF3_PORT" "$OUT_DIR/raw/$wl.iperf3-server.$rep.log" \
    "$IPERF3" -s -1 -B "$HOST" -p "$IPERF3_PORT"; then
    client "$wl" iperf3 "$rep" "$IPERF3" -c "$HOST" -p "$IPERF3_PORT" -t "$DURATION" \
      -O "$WARMUP" -J "$@" || rc=$?
  else
    rc=1
    cp "$OUT_DIR/raw/$wl.iperf3-server.$rep.log" "$OUT_DIR/raw/$wl.iperf3.$rep.err"
  fi
  stop_server
  finish_run "$wl" iperf3 "$rep" "$rc"
}

# run_sockperf WL REP: sockperf ping-pong over TCP (its minimum 14 B messages).
run_sockperf() {
  local wl=$1 rep=$2 rc=0
  if start_server "$SOCKPERF_PORT" "$OUT_DIR/raw/$wl.sockperf-server.$rep.log" \
    "$SOCKPERF" sr --tcp -i "$HOST" -p "$SOCKPERF_PORT"; then
    client "$wl" sockperf "$rep" "$SOCKPERF" pp --tcp -i "$HOST" -p "$SOCKPERF_PORT" \
      -m 14 -t "$DURATION" --mps=max || rc=$?
  else
    rc=1
    cp "$OUT_DIR/raw/$wl.sockperf-server.$rep.log" "$OUT_DIR/raw/$wl.sockperf.$rep.err"
  fi
  stop_server
  finish_run "$wl" sockperf "$rep" "$rc"
}

# run_pingpong WL REP: bench/pingpong.c, both sides spinning, each pinned to
# the first CPU of its list (pingpong pins itself as well).
run_pingpong() {
  local wl=$1 rep=$2 rc=0 log=$OUT_DIR/raw/$1.pingpong-server.$2.log
  if start_server "$PINGPONG_PORT" "$log" "$PINGPONG" server "$PINGPONG_PORT" "${SERVER_CPUS%%[-,]*}"; then
    client "$wl" pingpong "$rep" "$PINGPONG" client "$HOST" "$PINGPONG_PORT" \
      "${CLIENT_CPUS%%[-,]*}" "$DURATION" || rc=$?
  else
    rc=1
    cp "$log" "$OUT_DIR/raw/$wl.pingpong.$rep.err"
  fi
  stop_server grace
  finish_run "$wl" pingpong "$rep" "$rc" "" "$log"
}

# --- the workloads ----------------------------------------------------------

declare -A NOTATION=([rr1]='RR1(1B/1B)' [rr10]='RR10(4kB/4kB)' [crr10]='CRR10(64B/8kB)' [str3]='STR3(1B/20MB)' [spin1]='RR1(1B/1B)')
# How a workload is named in the table (spin1 runs the same notation as rr1).
label() { if [[ $1 == spin1 ]]; then echo "RR1(1B/1B) spin both"; else echo "${NOTATION[$1]}"; fi; }
# stackbench flags per workload beyond the notation and threads.
declare -A SB_FLAGS=([spin1]='--spin both')
# stackbench driver threads, matched to the peer's: neper -T$FLOW_THREADS for RR10/CRR10;
# one thread for netperf, neper -T1 and iperf3 (single-threaded before 3.16).
declare -A THREADS=([rr1]=1 [rr10]=$FLOW_THREADS [crr10]=$FLOW_THREADS [str3]=1 [spin1]=1)
# The figures compared (keys of peers_report.py): bulk throughput for streams,
# rate and latency for the rest, and CPU per side (per MiB for streams).
RR_FIGURES=rate_tps,lat_mean_us,lat_p50_us,lat_p99_us,cli_cpu_us_per_tr,srv_cpu_us_per_tr
STR_FIGURES=bulk_bytes_per_s,cli_cpu_us_per_mib,srv_cpu_us_per_mib
declare -A FIGURES=([rr1]=$RR_FIGURES [rr10]=$RR_FIGURES [crr10]=$RR_FIGURES [str3]=$STR_FIGURES [spin1]=$RR_FIGURES)
declare -A PEERS_OF=() # workload -> number of installed peers
MISSING=()
SECONDS_PER_REP=0

# peer WL REP TOOL BIN DESC RUNNER ARGS...: with REP=0 (planning) registers the
# comparison, or notes the peer as missing when BIN is empty; otherwise runs it.
peer() {
  local wl=$1 rep=$2 tool=$3 bin=$4 desc=$5
  shift 5
  if [[ -z $bin ]]; then
    [[ $rep != 0 ]] || MISSING+=("$desc: $(label "$wl") comparison skipped")
    return 0
  fi
  if [[ $rep == 0 ]]; then
    printf '%s\t%s\t%s\t%s\n' "$(label "$wl")" "$tool" "$desc" "${FIGURES[$wl]}" >>"$OUT_DIR/pairs.tsv"
    PEERS_OF[$wl]=$((${PEERS_OF[$wl]:-0} + 1))
    SECONDS_PER_REP=$((SECONDS_PER_REP + DURATION + 1))
    [[ $tool != iperf3 ]] || SECONDS_PER_REP=$((SECONDS_PER_REP + WARMUP))
    return 0
  fi
  echo "[$(label "$wl") rep $rep/$REPS] $desc" >&2
  "$@"
}

workload_rr1() {
  peer rr1 "$1" netperf "$NETPERF" "netperf -c -C -t TCP_RR -- -r 1,1" \
    run_netperf rr1 "$1" TCP_RR -r 1,1
  peer rr1 "$1" neper "$TCP_RR" "neper tcp_rr -F1 -T1 -Q1 -R1" \
    run_neper rr1 "$1" "$TCP_RR" "-F 1 -T 1 -Q 1 -R 1" "-p 50,99"
  peer rr1 "$1" sockperf "$SOCKPERF" "sockperf pp --tcp -m 14 (rate from its half-RTT latency)" \
    run_sockperf rr1 "$1"
}

workload_spin1() {
  peer spin1 "$1" pingpong "$PINGPONG" "bench/pingpong.c (spinning C ping-pong)" \
    run_pingpong spin1 "$1"
  # netperf cannot busy-poll: this row says what spinning buys against the
  # blocking reference, at what host CPU per transaction.
  peer spin1 "$1" netperf "$NETPERF" "netperf -c -C -t TCP_RR -- -r 1,1 (blocking; it has no busy-poll)" \
    run_netperf spin1 "$1" TCP_RR -r 1,1
}

workload_rr10() {
  peer rr10 "$1" neper "$TCP_RR" "neper tcp_rr -F10 -T$FLOW_THREADS -Q4096 -R4096" \
    run_neper rr10 "$1" "$TCP_RR" "-F 10 -T $FLOW_THREADS -Q 4096 -R 4096" "-p 50,99"
}

workload_crr10() {
  local desc="neper tcp_crr -F10 -T$FLOW_THREADS -Q64 -R8192" extra=""
  if [[ $CRR_CLOSE == client ]]; then desc+=" --time-wait" extra="--time-wait"; fi
  peer crr10 "$1" neper "$TCP_CRR" "$desc" \
    run_neper crr10 "$1" "$TCP_CRR" "-F 10 -T $FLOW_THREADS -Q 64 -R 8192 $extra" "-p 50,99"
}

workload_str3() {
  # Server -> client bulk (a GET): neper -M (TCP_MAERTS), iperf3 -R.
  peer str3 "$1" neper "$TCP_STREAM" "neper tcp_stream -F3 -M" \
    run_neper str3 "$1" "$TCP_STREAM" "-F 3 -T 1 -M --throughput-opt B"
  peer str3 "$1" iperf3 "$IPERF3" "iperf3 -R -P3" run_iperf3 str3 "$1" -R -P 3
}

# run_workload WL: REPS rounds of stackbench then each peer, interleaved.
run_workload() {
  local wl=$1 rep flags=()
  [[ $wl != crr10 ]] || flags=(--crr-close "$CRR_CLOSE")
  read -r -a flags <<<"${flags[*]} ${SB_FLAGS[$wl]:-} ${SB_EXTRA:-}"
  for rep in $(seq "$REPS"); do
    echo "[$(label "$wl") rep $rep/$REPS] stackbench run '${NOTATION[$wl]}' --threads ${THREADS[$wl]} --server-threads ${THREADS[$wl]} ${flags[*]}" >&2
    run_stackbench "$wl" "$rep" "${NOTATION[$wl]}" "${THREADS[$wl]}" "${flags[@]}"
    "workload_$wl" "$rep"
  done
}

print_header() {
  local close_sb close_neper
  if [[ $CRR_CLOSE == abort ]]; then
    close_sb="--crr-close abort (client closes with SO_LINGER 0: RST, no TIME_WAIT)"
    close_neper="default (client sets SO_LINGER 0: RST, no TIME_WAIT)"
  else
    close_sb="--crr-close client (client closes gracefully: TIME_WAIT on the client)"
    close_neper="--time-wait (client closes gracefully: TIME_WAIT on the client)"
  fi
  echo "stackbench vs peers on loopback $HOST"
  echo "  client CPUs $CLIENT_CPUS, server CPUs $SERVER_CPUS ($(nproc) CPUs online)"
  echo "  $DURATION s per run, $REPS reps interleaved, medians; warm-up $WARMUP s (stackbench, iperf3 -O)"
  echo "  stackbench: ${SB_BIN:-unavailable ($SB_WHY)}"
  [[ $KERNEL_WORK == 0 ]] ||
    echo "  kernel work counted (KERNEL_WORK=1): perf stat -A -C $CLIENT_CPUS,$SERVER_CPUS, nstat TcpOutSegs"
  echo "  CRR close: stackbench $close_sb"
  echo "             neper tcp_crr $close_neper"
  if [[ ${#MISSING[@]} -gt 0 ]]; then
    echo "  missing peers (looked in $PEERS_BIN, then \$PATH):"
    printf '    %s\n' "${MISSING[@]}"
  fi
  echo "  raw outputs: $OUT_DIR"
  echo "  estimated time: ~$(((SECONDS_PER_REP * REPS + 59) / 60)) min"
  echo
}

main() {
  check_settings
  OUT_DIR=${OUT_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/stackbench-peers.XXXXXX")}
  mkdir -p "$OUT_DIR/raw"
  : >"$OUT_DIR/runs.tsv"
  : >"$OUT_DIR/pairs.tsv"
  echo "$REPS" >"$OUT_DIR/reps"
  FAILED=0

  NETPERF=$(find_peer netperf) NETSERVER=$(find_peer netserver)
  [[ -n $NETSERVER ]] || NETPERF=""
  TCP_RR=$(find_peer tcp_rr) TCP_CRR=$(find_peer tcp_crr) TCP_STREAM=$(find_peer tcp_stream)
  IPERF3=$(find_peer iperf3) SOCKPERF=$(find_peer sockperf)
  WORK_EVENTS=$(work_events)
  prepare_stackbench
  prepare_pingpong
  [[ -z $PINGPONG_WHY ]] || MISSING+=("bench/pingpong.c: $PINGPONG_WHY")

  local wl runnable=()
  for wl in $WORKLOADS; do
    "workload_$wl" 0
    if [[ ${PEERS_OF[$wl]:-0} -eq 0 ]]; then
      MISSING+=("$(label "$wl"): no peer installed, stackbench not run for it either")
      continue
    fi
    runnable+=("$wl")
    SECONDS_PER_REP=$((SECONDS_PER_REP + DURATION + WARMUP + 2))
  done
  print_header
  for wl in "${runnable[@]}"; do run_workload "$wl"; done
  python3 "$REPORT" table "$OUT_DIR"
  return "$FAILED"
}

main
