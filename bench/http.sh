#!/usr/bin/env bash
# bench/http.sh — stackbench's HTTP/1.1 client side by side with wrk, against
# two servers: a private nginx and stackbench's own responder (`stackbench
# serve`). Every client drives every server with the same keep-alive GET of
# the same file, on the same number of connections.
#
#   client      wrk -t1 -cN -dD --latency http://127.0.0.1:PORT/BODY
#               stackbench run 'RRN(REQB/RESPB)' --protocol http1 --threads 1
#                 --nodelay --target http://127.0.0.1:PORT (nginx) or 127.0.0.1:PORT (serve)
#   server      nginx: one process (master_process off, 1 worker), its own
#                 configuration and docroot in a temporary directory (removed
#                 at the end), keep-alive unbounded
#               stackbench serve --threads 1; wrk reaches it through
#                 `stackbench serve --hold`, which holds an http1 test open on it
#
# Like with like: stackbench's request size is set to the length of the GET
# wrk sends, measured first by a calibration nginx that logs both clients'
# $request_length; its response size is the file's length plus the head
# stackbench's responder would give, so its path is /BODY as wrk's (see
# docs/transports.md, "Application protocols"). wrk sets TCP_NODELAY on its
# sockets (wg/wrk, src/wrk.c, connect_socket) and nginx on keep-alive ones
# (tcp_nodelay, on by default), so stackbench runs with --nodelay by default
# (SB_FLAGS) and `serve --hold --nodelay` asks the responder for it too; SB_FLAGS=""
# measures stackbench's own defaults instead, and the header says which. Client on CLIENT_CPUS, servers
# on SERVER_CPUS (taskset). REPS rounds; in each, every (server, connections)
# pair runs wrk then stackbench, back to back. Figures per run: requests/s,
# latency p50/p99 (each client's own), client CPU per request measured the
# same way for both (GNU time: user + system of the client process over its
# whole life, over the requests it completed) and server CPU per request
# (/proc/PID/stat of the server around the run). stackbench's own CPU
# figures are printed against the external one. Medians [range] and the
# stackbench/wrk ratios are printed by bench/http_report.py.
#
# Traffic goes to 127.0.0.1 only; every process runs under `timeout`; every
# server this script starts is stopped by it (also on Ctrl-C), and nginx's
# directory is removed.
set -euo pipefail

usage() {
  cat <<'EOF'
usage: bench/http.sh            (settings come from the environment)

  DURATION=10      seconds per run (wrk -d, stackbench --duration)
  WARMUP=0         stackbench --warmup seconds; wrk has no warm-up, so the
                   default gives stackbench none either
  REPS=5           rounds; each runs wrk then stackbench per server and N
  CONNS="1 10 50"  connection counts N (wrk -cN, stackbench RRN), one thread
                   each (wrk -t1, stackbench --threads 1)
  BODY=4096        bytes of the file every GET asks for (/BODY)
  SERVERS="nginx stackbench"   which servers to run against
  CLIENT_CPUS=0    CPU list for the clients (taskset -c syntax)
  SERVER_CPUS=1    CPU list for the servers (default 0 on a 1-CPU machine)
  NGINX=nginx      the nginx binary (else /usr/sbin/nginx); Debian: nginx.
                   Needed with SERVERS=stackbench too: its access log
                   measures the GET wrk sends, which sizes stackbench's
  WRK=wrk          the wrk binary; Debian: wrk
  NGINX_PORT=18080 SERVE_PORT=12871   loopback ports of nginx and of
                   stackbench serve's control listener
  PEERS_BIN=/work/peers/bin   where wrk and nginx are looked for first
  SB_FLAGS=--nodelay   extra `stackbench run` flags: --nodelay matches wrk's
                   TCP_NODELAY; SB_FLAGS="" runs stackbench's defaults
  STACKBENCH=target/release/stackbench   binary to test; the default path is
                   built with `cargo build --release` when missing
  OUT_DIR=$(mktemp -d)   raw outputs of every run are kept here

Exit status: 0 all runs succeeded, 1 some run failed (the table still shows
the rest), 2 bad settings or a missing tool.
EOF
}

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
REPORT="$ROOT/bench/http_report.py"
HOST=127.0.0.1 # loopback only, by design
BENCH_NAME=http.sh
REPS=${REPS:-5}
WARMUP=${WARMUP:-0}
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"
bench_args "$@"

CONNS=${CONNS:-1 10 50}
BODY=${BODY:-4096}
SB_FLAGS=${SB_FLAGS---nodelay}
SERVERS=${SERVERS:-nginx stackbench}
NGINX_PORT=${NGINX_PORT:-18080}
SERVE_PORT=${SERVE_PORT:-12871}
GNU_TIME=/usr/bin/time

check_settings() {
  local n s
  check_common BODY NGINX_PORT SERVE_PORT
  check_cpu_lists
  [[ -n $CONNS ]] || die_usage "CONNS is empty; e.g. CONNS=\"1 10 50\""
  for n in $CONNS; do
    [[ $n =~ ^[1-9][0-9]*$ ]] || die_usage "CONNS: '$n' is not a positive whole number"
  done
  [[ -n $SERVERS ]] || die_usage "SERVERS is empty; use nginx, stackbench or both"
  for s in $SERVERS; do
    [[ $s == nginx || $s == stackbench ]] || die_usage "SERVERS: unknown '$s'; use nginx stackbench"
  done
  WRK=$(find_peer "${WRK:-wrk}")
  [[ -n $WRK ]] || die_usage "wrk not found (PEERS_BIN, PATH); install it (Debian: apt-get install wrk) or set WRK"
  NGINX=$(find_peer "${NGINX:-nginx}")
  [[ -n $NGINX || ! -x /usr/sbin/nginx ]] || NGINX=/usr/sbin/nginx
  [[ -n $NGINX ]] || die_usage "nginx not found (PEERS_BIN, PATH, /usr/sbin); install it (Debian: apt-get install nginx) or set NGINX"
  [[ -x $GNU_TIME ]] || die_usage "$GNU_TIME (GNU time) is needed to measure client CPU alike; install it (Debian: apt-get install time)"
  command -v ss >/dev/null || die_usage "ss (iproute2) is needed to see a server listen; install it"
}

# --- servers ----------------------------------------------------------------

# Servers run as long as the script does; each is bounded by this.
SERVER_LIMIT=0
NGINX_PID="" NGINX_WRAP="" SERVE_PID="" SERVE_WRAP="" CLIENT_PID="" HOLD_PID=""
cleanup() {
  local pid
  for pid in $CLIENT_PID $HOLD_PID $NGINX_WRAP $SERVE_WRAP; do
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  # nginx's configuration, docroot and logs; raw outputs stay.
  [[ -z ${NGINX_DIR:-} ]] || rm -rf "$NGINX_DIR"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

listening() { ss -Hltn "sport = :$1" 2>/dev/null | grep -q .; }

# child_of PID: the one child of PID (the server under `timeout`), whose
# /proc/PID/stat is read around each run.
child_of() {
  local kids
  for _ in $(seq 50); do
    kids=$(cat "/proc/$1/task/$1/children" 2>/dev/null || true)
    [[ -z $kids ]] || { echo "${kids%% *}"; return 0; }
    sleep 0.1
  done
  return 1
}

# start_bounded PORT LOG CMD...: CMD pinned to SERVER_CPUS under a time bound,
# waits (at most 5 s) until PORT listens. Sets WRAP_PID (timeout's) and
# SRV_PID (the server's own).
start_bounded() {
  local port=$1 log=$2
  shift 2
  if listening "$port"; then
    echo "port $port is already in use (choose another: NGINX_PORT, SERVE_PORT)" >&2
    return 1
  fi
  timeout "$SERVER_LIMIT" taskset -c "$SERVER_CPUS" "$@" >"$log" 2>&1 &
  WRAP_PID=$!
  for _ in $(seq 50); do
    if listening "$port"; then
      SRV_PID=$(child_of "$WRAP_PID") && return 0
    fi
    kill -0 "$WRAP_PID" 2>/dev/null || break
    sleep 0.1
  done
  echo "server did not listen on port $port within 5 s: $* (log: $log)" >&2
  kill "$WRAP_PID" 2>/dev/null || true
  return 1
}

# nginx_conf LOG: a configuration of one process as this user, every path in
# NGINX_DIR; LOG "on" logs each request's length (calibration only: logging
# costs the server CPU in the measured runs). Keep-alive unbounded so a
# connection is never closed by the server mid-run. As
# crates/cli/tests/it/http1.rs starts its nginx.
nginx_conf() {
  local d=$NGINX_DIR log="access_log off;"
  [[ $1 == off ]] ||
    log="log_format sizes '\$request_length \$bytes_sent \"\$request\" \"\$http_host\"'; access_log $d/access.log sizes;"
  cat >"$d/nginx.conf" <<EOF
daemon off; master_process off; worker_processes 1; pid $d/nginx.pid;
error_log $d/error.log;
events { worker_connections 4096; }
http {
  $log
  client_body_temp_path $d/t1; proxy_temp_path $d/t2; fastcgi_temp_path $d/t3;
  uwsgi_temp_path $d/t4; scgi_temp_path $d/t5;
  keepalive_requests 100000000;
  server { listen $HOST:$NGINX_PORT; root $d/www; }
}
EOF
}

start_nginx() {
  nginx_conf "$1"
  start_bounded "$NGINX_PORT" "$OUT_DIR/nginx.$1.log" \
    "$NGINX" -p "$NGINX_DIR" -e "$NGINX_DIR/error.log" -c "$NGINX_DIR/nginx.conf" || return 1
  NGINX_WRAP=$WRAP_PID NGINX_PID=$SRV_PID
}

stop_nginx() {
  kill "$NGINX_WRAP" 2>/dev/null || true
  wait "$NGINX_WRAP" 2>/dev/null || true
  NGINX_WRAP="" NGINX_PID=""
}

# --- runs -------------------------------------------------------------------

# bounded BASE CMD...: CMD on CLIENT_CPUS under a time bound and GNU time,
# stdout to BASE.out, stderr to BASE.err, CPU to BASE.time. Waited for in the
# background so that Ctrl-C reaches the trap at once. `timeout` is outermost:
# it leads a process group of its own and a signal to it reaches the whole
# group (GNU time and the client), where GNU time would die alone.
bounded() {
  local base=$1 rc=0
  shift
  timeout $((DURATION + WARMUP + 60)) "$GNU_TIME" -f '%U %S %e' -o "$base.time" \
    taskset -c "$CLIENT_CPUS" "$@" >"$base.out" 2>"$base.err" &
  CLIENT_PID=$!
  wait "$CLIENT_PID" || rc=$?
  CLIENT_PID=""
  return "$rc"
}

# record SERVER N CLIENT REP STATUS DETAIL: one line of runs.tsv.
record() { printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$@" >>"$OUT_DIR/runs.tsv"; }

# finish_run SERVER N CLIENT REP RC: parse BASE.* into BASE.kv, or record why not.
finish_run() {
  local server=$1 n=$2 client=$3 rep=$4 rc=$5 base why
  base=$OUT_DIR/raw/$server.c$n.$client.$rep
  if [[ $rc -ne 0 ]]; then
    why="exit status $rc"
    [[ $rc -ne 124 ]] || why+=" (timed out)"
    why+=": $({ grep -v '^[[:space:]]*$' "$base.err" | head -n 1; } 2>/dev/null || true)"
  elif STACKBENCH=$SB_BIN python3 "$REPORT" parse "$client" "$base" "$WARMUP" "$n" \
    >"$base.kv" 2>"$base.parse-err"; then
    record "$server" "$n" "$client" "$rep" ok "$base.kv"
    return 0
  else
    why="unreadable output: $(head -n 1 "$base.parse-err")"
  fi
  echo "$client against $server run failed: $why (raw output: $base.*)" >&2
  record "$server" "$n" "$client" "$rep" fail "$why"
  FAILED=1
}

# server_pid SERVER: the process whose CPU is the server side's.
server_pid() { if [[ $1 == nginx ]]; then echo "$NGINX_PID"; else echo "$SERVE_PID"; fi; }

# run_wrk SERVER N REP: against nginx directly; against stackbench serve
# through a test `stackbench serve --hold` holds open (its counters go to
# BASE.hold).
run_wrk() {
  local server=$1 n=$2 rep=$3 base port=$NGINX_PORT rc=0 pid
  base=$OUT_DIR/raw/$server.c$n.wrk.$rep
  pid=$(server_pid "$server")
  if [[ $server == stackbench ]]; then
    "$SB_BIN" serve --hold "$HOST:$SERVE_PORT" "RR$n(${SB_REQ}B/${SB_RESP}B)" \
      --protocol http1 --nodelay --hold-limit $((DURATION + 60)) \
      >"$base.hold" 2>"$base.err" &
    HOLD_PID=$!
    port=""
    for _ in $(seq 50); do
      port=$(sed -n 's/^port=//p' "$base.hold")
      [[ -z $port ]] || break
      kill -0 "$HOLD_PID" 2>/dev/null || break
      sleep 0.1
    done
    if [[ -z $port ]]; then
      wait "$HOLD_PID" 2>/dev/null || true
      HOLD_PID=""
      finish_run "$server" "$n" wrk "$rep" 1
      return 0
    fi
  fi
  cat "/proc/$pid/stat" >"$base.srv-before"
  bounded "$base" "$WRK" -t1 -c"$n" -d"${DURATION}s" --latency "http://$HOST:$port/$BODY" || rc=$?
  cat "/proc/$pid/stat" >"$base.srv-after"
  if [[ -n $HOLD_PID ]]; then
    kill -TERM "$HOLD_PID" 2>/dev/null || true
    wait "$HOLD_PID" 2>/dev/null || rc=$((rc ? rc : 1))
    HOLD_PID=""
  fi
  finish_run "$server" "$n" wrk "$rep" "$rc"
}

# run_stackbench SERVER N REP: one driver thread, the server's target.
run_stackbench() {
  local server=$1 n=$2 rep=$3 base target rc=0 pid
  base=$OUT_DIR/raw/$server.c$n.stackbench.$rep
  pid=$(server_pid "$server")
  target=http://$HOST:$NGINX_PORT
  [[ $server == nginx ]] || target=$HOST:$SERVE_PORT
  cat "/proc/$pid/stat" >"$base.srv-before"
  bounded "$base" "$SB_BIN" run "RR$n(${SB_REQ}B/${SB_RESP}B)" --protocol http1 \
    --target "$target" --threads 1 --client-cpus "$CLIENT_CPUS" $SB_FLAGS \
    --duration "${DURATION}s" --warmup "${WARMUP}s" --no-store --json || rc=$?
  cat "/proc/$pid/stat" >"$base.srv-after"
  finish_run "$server" "$n" stackbench "$rep" "$rc"
}

# --- calibration ------------------------------------------------------------

# calibrate: the GET wrk sends, measured by nginx ($request_length), sets
# stackbench's request size; then stackbench's own request is logged the same
# way, to show the two are the same length. Writes OUT_DIR/sizes.kv.
calibrate() {
  local log=$NGINX_DIR/access.log base=$OUT_DIR/raw/calibration
  start_nginx on || die_calibration "nginx did not start (see $OUT_DIR/nginx.on.log)"
  timeout 30 "$WRK" -t1 -c1 -d1s "http://$HOST:$NGINX_PORT/$BODY" >"$base.wrk.out" 2>&1 ||
    die_calibration "wrk failed against nginx: $(tail -n 1 "$base.wrk.out")"
  python3 "$REPORT" calibrate "$log" >"$OUT_DIR/sizes.kv" 2>"$base.err" ||
    die_calibration "$(head -n 1 "$base.err")"
  SB_REQ=$(sed -n 's/^wrk_request_bytes=//p' "$OUT_DIR/sizes.kv")
  timeout 60 "$SB_BIN" run "RR1(${SB_REQ}B/${SB_RESP}B)" --protocol http1 \
    --target "http://$HOST:$NGINX_PORT" --transactions 20 --no-store --json \
    >"$base.sb.out" 2>"$base.sb.err" ||
    die_calibration "stackbench failed against nginx: $(head -n 1 "$base.sb.err")"
  python3 "$REPORT" calibrate "$log" >"$OUT_DIR/sizes.kv" 2>"$base.err" ||
    die_calibration "$(head -n 1 "$base.err")"
  grep -q '^sb_request_bytes=' "$OUT_DIR/sizes.kv" ||
    die_calibration "stackbench's request is not in nginx's log ($log)"
  cp "$log" "$OUT_DIR/calibration.access.log"
  stop_nginx
}

die_calibration() { echo "$BENCH_NAME: calibration: $*" >&2; exit 1; }

# --- main -------------------------------------------------------------------

print_header() {
  local kv=$OUT_DIR/sizes.kv
  echo "stackbench vs wrk, HTTP/1.1 keep-alive GET /$BODY on loopback $HOST"
  echo "  placement: clients on CPUs $CLIENT_CPUS, servers on CPUs $SERVER_CPUS (taskset; $(nproc) CPUs online)"
  echo "  servers: $SERVERS (nginx $("$NGINX" -v 2>&1 | sed 's/.*\///'), 1 process; stackbench serve --threads 1)"
  echo "  clients: $("$WRK" -v 2>&1 | head -n 1 | cut -d' ' -f1-2) -t1 -cN --latency;" \
    "stackbench run 'RRN(${SB_REQ}B/${SB_RESP}B)' --protocol http1 --threads 1 ${SB_FLAGS:-(its defaults, no --nodelay)}"
  echo "  requests: wrk $(sed -n 's/^wrk_request_bytes=//p' "$kv") B, stackbench $(sed -n 's/^sb_request_bytes=//p' "$kv") B (nginx's \$request_length)"
  echo "  N = $CONNS connections; $DURATION s per run (stackbench warm-up $WARMUP s), $REPS rounds, wrk then stackbench"
  echo "  stackbench: $SB_BIN"
  echo "  raw outputs: $OUT_DIR"
  echo "  estimated time: ~$(((REPS * $(wc -w <<<"$SERVERS") * $(wc -w <<<"$CONNS") * (2 * DURATION + WARMUP + 3) + 59) / 60)) min"
  echo
}

main() {
  local rep server n
  check_settings
  OUT_DIR=${OUT_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/stackbench-http.XXXXXX")}
  mkdir -p "$OUT_DIR/raw"
  : >"$OUT_DIR/runs.tsv"
  echo "$REPS" >"$OUT_DIR/reps"
  FAILED=0
  prepare_stackbench
  [[ -n $SB_BIN ]] || { echo "$BENCH_NAME: $SB_WHY" >&2; exit 1; }
  SERVER_LIMIT=$((REPS * $(wc -w <<<"$SERVERS") * $(wc -w <<<"$CONNS") * (2 * DURATION + WARMUP + 130) + 120))

  # nginx's directory: the docroot holds the one file every GET asks for.
  NGINX_DIR=$(mktemp -d "${TMPDIR:-/tmp}/stackbench-http-nginx.XXXXXX")
  mkdir "$NGINX_DIR/www"
  head -c "$BODY" /dev/zero | tr '\0' x >"$NGINX_DIR/www/$BODY"
  # stackbench's response size: the body plus its responder's head
  # ("HTTP/1.1 200 OK", "Content-Length: BODY"), so that its path is /BODY.
  SB_RESP=$((BODY + 37 + ${#BODY}))
  calibrate

  if [[ " $SERVERS " == *" nginx "* ]]; then
    start_nginx off || { echo "$BENCH_NAME: nginx did not start (see $OUT_DIR/nginx.off.log)" >&2; exit 1; }
  fi
  if [[ " $SERVERS " == *" stackbench "* ]]; then
    start_bounded "$SERVE_PORT" "$OUT_DIR/serve.log" "$SB_BIN" serve \
      --listen "$HOST:$SERVE_PORT" --threads 1 --cpus "$SERVER_CPUS" ||
      { echo "$BENCH_NAME: stackbench serve did not start (see $OUT_DIR/serve.log)" >&2; exit 1; }
    SERVE_WRAP=$WRAP_PID SERVE_PID=$SRV_PID
  fi
  print_header
  for rep in $(seq "$REPS"); do
    for server in $SERVERS; do
      for n in $CONNS; do
        echo "[rep $rep/$REPS] $server, $n connections: wrk" >&2
        run_wrk "$server" "$n" "$rep"
        echo "[rep $rep/$REPS] $server, $n connections: stackbench" >&2
        run_stackbench "$server" "$n" "$rep"
      done
    done
  done
  python3 "$REPORT" table "$OUT_DIR"
  return "$FAILED"
}

main
