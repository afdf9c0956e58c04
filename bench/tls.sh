#!/usr/bin/env bash
# bench/tls.sh — the project's TLS performance targets, measured in one go on
# loopback.
#
# Pinned like bench/peers.sh (client side on CLIENT_CPUS, server side on
# SERVER_CPUS), REPS rounds interleaved (every measurement once per round),
# medians printed with the ratios the targets set:
#
#   full-handshake CRR C02F server rate  >= 0.85 x openssl speed rsa2048 signs/s
#                                        (also shown against the signs/s of the
#                                        OpenSSL stackbench links, which may be
#                                        another version than the system's)
#                                        >= 1.2  x openssl s_time -new (s_server)
#   resumed handshakes per second        >= 5    x full handshakes per second
#   TLS RR10(4kB/4kB) rate               >= 0.9  x clear RR10
#   TLS STR3(1B/20MB) GET throughput     >= 0.8  x clear STR3
#
# One RSA-2048 certificate, made here with `openssl req`, serves both
# stackbench (--cert/--key) and `openssl s_server`. Traffic goes to 127.0.0.1
# only; every process runs under `timeout`; the s_server this script starts is
# stopped by it (also on Ctrl-C).
set -euo pipefail

usage() {
  cat <<'EOF'
usage: bench/tls.sh            (settings come from the environment)

  DURATION=10      seconds measured per run (stackbench --duration, openssl
                   speed -seconds, s_time -time)
  WARMUP=2         seconds of warm-up (stackbench only)
  REPS=3           rounds, each running every measurement once (interleaved)
  CLIENT_CPUS=0    CPU list for the client side (taskset -c syntax)
  SERVER_CPUS=1    CPU list for the server side (default 0 on a 1-CPU machine)
  CRR=CRR8(64B/1kB)  the handshake workload (one handshake per transaction)
  CIPHER=C02F      TLS 1.2 suite of the handshake and TLS-vs-clear runs
  OPENSSL=openssl  the openssl command (speed, req, s_server, s_time)
  SSL_PORT=14433   s_server's port
  STACKBENCH=target/release/stackbench   binary to test; the default path is
                   built with `cargo build --release` when missing
  LINK_RATE=       empty: the TLS-vs-clear runs go over loopback, CPU-bound
                   (AES-GCM's own cost caps the ratio near 0.67 there). A
                   rate (e.g. 1Gbit): they cross examples/lab-two-hosts.toml
                   at that rate instead (needs root), network-bound as the
                   seeds measured: the ratio shows what TLS costs in rate,
                   the CPU figures what it costs in CPU
  NODELAY=         empty: every stackbench run with the settings a user gets
                   (TLS runs set TCP_NODELAY by default, clear runs do not and
                   cork long messages instead); 1: --nodelay on every run,
                   labelled so in the header (the like-for-like view of the
                   TLS-vs-clear ratios)
  OUT_DIR=$(mktemp -d)   raw outputs of every run are kept here

Exit status: 0 all runs succeeded, 1 some run failed (the table still shows
the rest), 2 bad settings.
EOF
}

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
HOST=127.0.0.1 # loopback only, by design
BENCH_NAME=tls.sh
# shellcheck source=bench/lib.sh
source "$ROOT/bench/lib.sh"
bench_args "$@"

CRR=${CRR:-CRR8(64B/1kB)}
CIPHER=${CIPHER:-C02F}
OPENSSL=${OPENSSL:-openssl}
SSL_PORT=${SSL_PORT:-14433}

# OpenSSL's name of each TLS 1.2 suite --cipher takes (s_server/s_time need it).
declare -A OPENSSL_NAME=([3C]=AES128-SHA256 [9C]=AES128-GCM-SHA256
  [C027]=ECDHE-RSA-AES128-SHA256 [C02F]=ECDHE-RSA-AES128-GCM-SHA256)

check_settings() {
  check_common SSL_PORT
  check_cpu_lists
  [[ -n ${OPENSSL_NAME[$CIPHER]:-} ]] ||
    die_usage "CIPHER='$CIPHER' is not a TLS 1.2 suite here: use 3C, 9C, C027 or C02F"
  [[ $CRR =~ ^CRR[0-9]+ ]] || die_usage "CRR='$CRR' is not a CRR workload; e.g. CRR=CRR8(64B/1kB)"
  command -v "$OPENSSL" >/dev/null || die_usage "OPENSSL=$OPENSSL not found; install openssl or set OPENSSL"
  if [[ -n ${LINK_RATE:-} ]]; then
    [[ $LINK_RATE =~ ^[0-9]+[KMG]bit$ ]] || die_usage "LINK_RATE='$LINK_RATE' is not a rate; e.g. LINK_RATE=1Gbit"
    [[ $(id -u) == 0 ]] || die_usage "LINK_RATE needs root (the runs cross a lab of network namespaces)"
  fi
}

SERVER_PID="" CLIENT_PID=""
cleanup() {
  local pid
  for pid in $CLIENT_PID $SERVER_PID; do
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  # The lab the LINK_RATE runs brought up.
  if [[ -n ${LINK_RATE:-} && -n ${SB_BIN:-} ]]; then
    "$SB_BIN" lab down "$ROOT/examples/lab-two-hosts.toml" >/dev/null 2>&1 || true
  fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# bounded BASE CMD...: CMD under a time bound, stdout to BASE.out, stderr to
# BASE.err; waited for in the background so Ctrl-C reaches the trap at once.
bounded() {
  local base=$1 rc=0
  shift
  timeout $((DURATION + WARMUP + 60)) "$@" >"$base.out" 2>"$base.err" &
  CLIENT_PID=$!
  wait "$CLIENT_PID" || rc=$?
  CLIENT_PID=""
  return "$rc"
}

# value NAME REP VALUE-OR-EMPTY BASE: records one figure, or the failure.
value() {
  if [[ -n $3 ]]; then
    printf '%s\t%s\t%s\n' "$1" "$2" "$3" >>"$OUT_DIR/values.tsv"
  else
    echo "$1 run failed (raw output: $4.*)" >&2
    FAILED=1
  fi
}

# json_figure FILE EXPR: a figure of the first class of a stackbench --json
# output (EXPR over `c`, the class object).
json_figure() {
  python3 -c 'import json,sys; c=json.load(open(sys.argv[1]))["classes"][0]; print(eval(sys.argv[2]))' \
    "$1" "$2" 2>/dev/null || true
}

# sb NAME REP EXPR NOTATION FLAGS...: one stackbench run, pinned, one figure.
sb() {
  local name=$1 rep=$2 expr=$3 notation=$4 base
  shift 4
  base=$OUT_DIR/raw/$name.$rep
  if [[ -z $SB_BIN ]]; then value "$name" "$rep" "" "$base ($SB_WHY)"; return 0; fi
  echo "[rep $rep/$REPS] $name: stackbench run '$notation' $*" >&2
  bounded "$base" "$SB_BIN" run "$notation" --duration "${DURATION}s" --warmup "${WARMUP}s" \
    --client-cpus "$CLIENT_CPUS" --server-cpus "$SERVER_CPUS" ${NODELAY:+--nodelay} \
    --no-store --json "$@" || true
  value "$name" "$rep" "$(json_figure "$base.out" "$expr")" "$base"
}

TLS_FLAGS=()
make_certificate() {
  TLS_FLAGS=(--transport tls --cipher "$CIPHER" --cert "$OUT_DIR/cert.pem" --key "$OUT_DIR/key.pem")
  "$OPENSSL" req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=stackbench \
    -keyout "$OUT_DIR/key.pem" -out "$OUT_DIR/cert.pem" >"$OUT_DIR/req.log" 2>&1 ||
    die_usage "cannot make a certificate with $OPENSSL req (see $OUT_DIR/req.log)"
}

rsa_signs() {
  local base=$OUT_DIR/raw/rsa_signs.$1
  echo "[rep $1/$REPS] openssl speed -seconds $DURATION rsa2048 on CPUs $SERVER_CPUS" >&2
  bounded "$base" taskset -c "$SERVER_CPUS" "$OPENSSL" speed -seconds "$DURATION" rsa2048 || true
  value rsa_signs "$1" "$(awk '/^rsa *2048 bits/ {print $6; exit}' "$base.out")" "$base"
}

# The same floor with the library stackbench links (vendored OpenSSL): the
# engine's rsa_sign_rate example, built once, pinned like openssl speed.
SIGN_BIN=""
vendored_signs() {
  local base=$OUT_DIR/raw/vendored_signs.$1
  if [[ -z $SIGN_BIN ]]; then
    (cd "$ROOT" && cargo build --release -q -p stackbench-engine --example rsa_sign_rate) \
      >"$OUT_DIR/sign-build.log" 2>&1 || { echo "rsa_sign_rate: build failed" >&2; return 0; }
    SIGN_BIN=$ROOT/target/release/examples/rsa_sign_rate
  fi
  echo "[rep $1/$REPS] rsa_sign_rate (stackbench's OpenSSL) on CPUs $SERVER_CPUS" >&2
  bounded "$base" taskset -c "$SERVER_CPUS" "$SIGN_BIN" "$DURATION" || true
  value vendored_signs "$1" "$(awk '/^rsa2048_signs_per_s/ {print $2; exit}' "$base.out")" "$base"
}

s_time() {
  local base=$OUT_DIR/raw/s_time.$1 name=${OPENSSL_NAME[$CIPHER]}
  echo "[rep $1/$REPS] openssl s_server + s_time -new -cipher $name" >&2
  timeout $((DURATION + 60)) taskset -c "$SERVER_CPUS" "$OPENSSL" s_server -quiet -www \
    -accept "$HOST:$SSL_PORT" -cert "$OUT_DIR/cert.pem" -key "$OUT_DIR/key.pem" \
    -tls1_2 -cipher "$name" -no_ticket >"$base.server" 2>&1 &
  SERVER_PID=$!
  sleep 1
  bounded "$base" taskset -c "$CLIENT_CPUS" "$OPENSSL" s_time -connect "$HOST:$SSL_PORT" \
    -new -time "$DURATION" -cipher "$name" || true
  kill "$SERVER_PID" 2>/dev/null || true
  wait "$SERVER_PID" 2>/dev/null || true
  SERVER_PID=""
  # "N connections in S real seconds, ...": connections per second.
  value s_time "$1" "$(awk '/connections in [0-9]+ real seconds/ {if ($4 > 0) print $1 / $4; exit}' "$base.out")" "$base"
}

# LINK_RATE set: the TLS-vs-clear runs cross a lab link at that rate.
LINK_FLAGS=()
if [[ -n ${LINK_RATE:-} ]]; then
  LINK_FLAGS=(--lab "$ROOT/examples/lab-two-hosts.toml" --from client --to server --link-rate "$LINK_RATE")
fi

round() {
  local rep=$1 rate='c["rate_tps"]' rx='c["rx_bytes_per_s"]'
  rsa_signs "$rep"
  vendored_signs "$rep"
  sb full_crr "$rep" "$rate" "$CRR" "${TLS_FLAGS[@]}" --resume-ratio 0
  s_time "$rep"
  sb resumed_crr "$rep" "$rate" "$CRR" "${TLS_FLAGS[@]}" --resume-ratio 1
  sb tls_rr10 "$rep" "$rate" 'RR10(4kB/4kB)' "${TLS_FLAGS[@]}" "${LINK_FLAGS[@]}"
  sb clear_rr10 "$rep" "$rate" 'RR10(4kB/4kB)' "${LINK_FLAGS[@]}"
  sb tls_str3 "$rep" "$rx" 'STR3(1B/20MB)' "${TLS_FLAGS[@]}" "${LINK_FLAGS[@]}"
  sb clear_str3 "$rep" "$rx" 'STR3(1B/20MB)' "${LINK_FLAGS[@]}"
}

report() {
  python3 - "$OUT_DIR/values.tsv" <<'EOF'
import statistics, sys
vals = {}
for line in open(sys.argv[1]):
    name, _rep, v = line.rstrip("\n").split("\t")
    vals.setdefault(name, []).append(float(v))
med = {k: statistics.median(v) for k, v in vals.items()}
units = {"rsa_signs": "signs/s", "vendored_signs": "signs/s", "s_time": "conn/s", "full_crr": "tr/s",
         "resumed_crr": "tr/s", "tls_rr10": "tr/s", "clear_rr10": "tr/s",
         "tls_str3": "MiB/s", "clear_str3": "MiB/s"}
print(f"{'figure':<14}{'median':>14}  unit     runs")
for k in units:
    if k in med:
        v = med[k] / 2**20 if k.endswith("str3") else med[k]
        print(f"{k:<14}{v:>14.1f}  {units[k]:<8} {len(vals[k])}")
print()
targets = [
    ("full_crr", "rsa_signs", 0.85, "full-handshake CRR rate / openssl speed rsa2048 signs/s"),
    ("full_crr", "vendored_signs", 0.85, "full-handshake CRR rate / signs/s of stackbench's OpenSSL"),
    ("full_crr", "s_time", 1.2, "full-handshake CRR rate / openssl s_time -new"),
    ("resumed_crr", "full_crr", 5.0, "resumed / full handshake CRR rate"),
    ("tls_rr10", "clear_rr10", 0.9, "TLS / clear RR10(4kB/4kB) rate"),
    ("tls_str3", "clear_str3", 0.8, "TLS / clear STR3(1B/20MB) GET throughput"),
]
for a, b, target, what in targets:
    if a in med and b in med and med[b] > 0:
        r = med[a] / med[b]
        verdict = "met" if r >= target else "NOT met"
        print(f"{what}: {r:.2f} (target >= {target}) {verdict}")
    else:
        print(f"{what}: not measured (a run failed)")
EOF
}

main() {
  check_settings
  OUT_DIR=${OUT_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/stackbench-tls.XXXXXX")}
  mkdir -p "$OUT_DIR/raw"
  : >"$OUT_DIR/values.tsv"
  FAILED=0
  prepare_stackbench
  make_certificate
  echo "stackbench TLS targets on loopback $HOST${LINK_RATE:+ (TLS vs clear across a $LINK_RATE lab link)}"
  echo "  client CPUs $CLIENT_CPUS, server CPUs $SERVER_CPUS ($(nproc) CPUs online)"
  echo "  $DURATION s per run, $REPS rounds interleaved, medians; stackbench warm-up $WARMUP s, ${NODELAY:+--nodelay on every run}${NODELAY:-default settings (TLS: nodelay on; clear: off)}"
  echo "  handshakes: $CRR, cipher $CIPHER (${OPENSSL_NAME[$CIPHER]}), RSA-2048 certificate $OUT_DIR/cert.pem"
  echo "  stackbench: ${SB_BIN:-unavailable ($SB_WHY)} (its OpenSSL: the vendored build)"
  echo "  openssl command: $("$OPENSSL" version)"
  echo "  raw outputs: $OUT_DIR"
  echo "  estimated time: ~$(((REPS * (8 * DURATION + 6 * WARMUP + 10) + 59) / 60)) min"
  echo
  local rep
  for rep in $(seq "$REPS"); do round "$rep"; done
  report
  return "$FAILED"
}

main
