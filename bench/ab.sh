#!/usr/bin/env bash
# bench/ab.sh — two stackbench binaries (a baseline A and a candidate B) on the
# same loopback workloads, interleaved A B A B …, then `stackbench compare`
# on the two sets of JSON records: per workload and metric the B/A ratio with
# its 90% interval and a verdict (EQUIVALENT / BETTER / WORSE / INCONCLUSIVE).
# It answers "did this change make the engine slower or costlier?" with the
# same statistics a release-to-release study uses. Interleaving makes slow
# drift of a shared machine hit both binaries alike.
#
# Traffic goes to 127.0.0.1 only; every run is bounded by --duration and
# `timeout`.
set -euo pipefail

usage() {
  cat <<'EOF'
usage: bench/ab.sh A_BINARY B_BINARY     (settings come from the environment)

  DURATION=5s      measurement window per run
  WARMUP=1s        warm-up per run
  REPS=5           runs of each binary per workload, interleaved
  WORKLOADS="RR1(1B/1B) RR10(4kB/4kB) CRR10(64B/8kB) STR3(1B/20MB)"
  ARGS=""          extra `run` flags for both binaries (e.g. "--crr-close abort")
  ARGS_A="" ARGS_B=""  extra flags for one side only: one binary against itself
                   with a setting changed (e.g. ARGS_B="--agents 1": the
                   controller and one agent process against the in-process driver)
  OUT_DIR=$(mktemp -d)   the JSON records of every run are kept here

Placement is stackbench's default (driver CPU 0, responder CPU 1 on 2 CPUs),
the same for both binaries. Exit status: that of `stackbench compare` (1 when
anything is WORSE), 2 bad arguments.
EOF
}

if [[ ${1:-} == -h || ${1:-} == --help || $# -ne 2 ]]; then
  usage
  [[ $# -eq 2 ]] && exit 0 || exit 2
fi
A=$1 B=$2
for bin in "$A" "$B"; do
  [[ -x $bin ]] || { echo "ab.sh: '$bin' is not an executable stackbench" >&2; exit 2; }
done
DURATION=${DURATION:-5s}
WARMUP=${WARMUP:-1s}
REPS=${REPS:-5}
WORKLOADS=${WORKLOADS:-"RR1(1B/1B) RR10(4kB/4kB) CRR10(64B/8kB) STR3(1B/20MB)"}
ARGS=${ARGS:-}
ARGS_A=${ARGS_A:-}
ARGS_B=${ARGS_B:-}
OUT_DIR=${OUT_DIR:-$(mktemp -d)}
mkdir -p "$OUT_DIR"
limit=$(( ${DURATION%s} + ${WARMUP%s} + 60 ))

echo "ab.sh: A=$A${ARGS_A:+ $ARGS_A} B=$B${ARGS_B:+ $ARGS_B}, $REPS reps x {$WORKLOADS}, $DURATION + $WARMUP warm-up; records in $OUT_DIR" >&2
for rep in $(seq 1 "$REPS"); do
  for wl in $WORKLOADS; do
    for side in A B; do
      bin=$A side_args=$ARGS_A
      [[ $side == B ]] && bin=$B side_args=$ARGS_B
      out="$OUT_DIR/$side.$rep.$(echo "$wl" | tr -c 'A-Za-z0-9' _).json"
      # shellcheck disable=SC2086 # ARGS is a list of flags
      if ! timeout "$limit" "$bin" run "$wl" --duration "$DURATION" --warmup "$WARMUP" \
          --no-store --json $ARGS $side_args >"$out" 2>"$out.log"; then
        echo "ab.sh: $side rep $rep $wl failed (see $out.log); left out" >&2
        rm -f "$out"
      fi
    done
  done
done
python3 - "$OUT_DIR" <<'PY'
import json, sys, glob, os
d = sys.argv[1]
for side in "AB":
    with open(os.path.join(d, f"{side}.jsonl"), "w") as out:
        for f in sorted(glob.glob(os.path.join(d, f"{side}.*.json"))):
            out.write(json.dumps(json.load(open(f))) + "\n")
PY
"$B" compare "$OUT_DIR/A.jsonl" "$OUT_DIR/B.jsonl"
