# bench/lib.sh — what every bench/*.sh script shares: the common settings
# (DURATION, WARMUP, REPS, CLIENT_CPUS, SERVER_CPUS) with their defaults and
# checks, finding peers, and finding or building the stackbench binary.
# Sourced after the script sets ROOT (the repository) and BENCH_NAME (its
# name in messages); it defines functions and defaults only, runs nothing.

DURATION=${DURATION:-10}
WARMUP=${WARMUP:-2}
REPS=${REPS:-3}
# netperf -T 0,1: client on CPU 0, server on CPU 1 (CPU 0 on a 1-CPU machine).
if [[ $(nproc) -ge 2 ]]; then DEFAULT_SERVER_CPUS=1; else DEFAULT_SERVER_CPUS=0; fi
CLIENT_CPUS=${CLIENT_CPUS:-0}
SERVER_CPUS=${SERVER_CPUS:-$DEFAULT_SERVER_CPUS}
PEERS_BIN=${PEERS_BIN:-/work/peers/bin}

die_usage() { echo "$BENCH_NAME: $*" >&2; exit 2; }

# bench_args "$@": --help prints the script's usage(); any argument else is
# refused (settings come from the environment).
bench_args() {
  if [[ ${1:-} == -h || ${1:-} == --help ]]; then usage; exit 0; fi
  if [[ $# -gt 0 ]]; then
    echo "$BENCH_NAME: no arguments expected (got '$1'); settings come from env vars, see --help" >&2
    exit 2
  fi
}

# check_common [NAME...]: DURATION, REPS and each NAME positive whole numbers,
# WARMUP a whole number of seconds, python3 and taskset present. CPU lists are
# checked by each script (netperf's -T needs one CPU, the others take lists).
check_common() {
  local name
  for name in DURATION REPS "$@"; do
    [[ ${!name} =~ ^[1-9][0-9]*$ ]] || die_usage "$name='${!name}' is not a positive whole number"
  done
  [[ $WARMUP =~ ^[0-9]+$ ]] || die_usage "WARMUP='$WARMUP' is not a whole number of seconds; e.g. WARMUP=2"
  command -v python3 >/dev/null || die_usage "python3 is needed to parse outputs; install it"
  command -v taskset >/dev/null || die_usage "taskset (util-linux) is needed for pinning; install it"
}

# check_cpu_lists: CLIENT_CPUS and SERVER_CPUS in taskset -c syntax.
check_cpu_lists() {
  local name
  for name in CLIENT_CPUS SERVER_CPUS; do
    [[ ${!name} =~ ^[0-9]+([-,][0-9]+)*$ ]] || die_usage "$name='${!name}' is not a CPU list; e.g. $name=0 or $name=2-3"
  done
}

# find_peer NAME: path of NAME in $PEERS_BIN, else in $PATH, else empty.
find_peer() {
  if [[ -x $PEERS_BIN/$1 ]]; then echo "$PEERS_BIN/$1"; else command -v "$1" || true; fi
}

# prepare_stackbench: sets SB_BIN to $STACKBENCH, or to the release build
# (built when missing, log in $OUT_DIR); on failure SB_BIN is empty and
# SB_WHY says why.
SB_BIN="" SB_WHY=""
prepare_stackbench() {
  if [[ -n ${STACKBENCH:-} ]]; then
    SB_BIN=$(command -v "$STACKBENCH" || true)
    [[ -n $SB_BIN ]] || SB_WHY="STACKBENCH=$STACKBENCH is not an executable"
    return 0
  fi
  SB_BIN=$ROOT/target/release/stackbench
  [[ -x $SB_BIN ]] && return 0
  echo "building stackbench: cargo build --release -p stackbench" >&2
  if ! (cd "$ROOT" && cargo build --release -p stackbench) >"$OUT_DIR/cargo-build.log" 2>&1; then
    SB_WHY="cargo build --release failed, see $OUT_DIR/cargo-build.log"
    SB_BIN=""
  fi
}
