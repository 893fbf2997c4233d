#!/usr/bin/env bash
# A/B of bench/llm_latency.py across commits, interleaved in one session, so the machine's
# noise falls on every side alike (bench/ab.sh does the same for bench/consolidation.py):
#
#   bench/ab_llm.sh OUTDIR ROUNDS "LATENCIES" SIDE [SIDE ...]
#   e.g. bench/ab_llm.sh /tmp/ab-llm 3 "0 0.2" base=229fb62 new=HEAD \
#          new-nocoalesce=HEAD:CONSOLIDATOR_EXTRACTION_COALESCING=false
#
# A SIDE is LABEL=REV[:VAR=VALUE...] (or a bare REV, its own label): REV is checked out in its
# own worktree under OUTDIR (HEAD runs from this checkout) and runs with this checkout's venv
# and stack, with the VARs in its environment. Each round runs every side at every latency
# (3,000 events over 1,000 subjects, no paced phase; BENCH_ARGS adds or overrides arguments);
# results land in OUTDIR/<label>@<latency>#<round>.json. Then
# `python -m bench.ab_llm_summary OUTDIR` prints events/s, worker CPU per call and per event,
# calls per event and the order check per side and latency, each side against the first, and
# each side's ratio of its slowest latency to 0.
set -euo pipefail
out=$1; rounds=$2; latencies=$3; shift 3
repo=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-$repo/.stack/run}"
export CONSOLIDATOR_DATABASE_URL="${CONSOLIDATOR_DATABASE_URL:-postgresql://postgres:@/postgres?host=$repo/.stack/pg}"
read -r -a extra <<< "${BENCH_ARGS:-}"
for side in "$@"; do
  spec=${side#*=}; rev=${spec%%:*}
  if [ "$rev" != HEAD ] && [ ! -d "$out/wt-$rev" ]; then
    git -C "$repo" worktree add --detach "$out/wt-$rev" "$rev" >/dev/null
  fi
done
for round in $(seq 1 "$rounds"); do
  for latency in $latencies; do
    for side in "$@"; do
      label=${side%%=*}; spec=${side#*=}; rev=${spec%%:*}
      vars=(); [ "$spec" != "$rev" ] && IFS=: read -r -a vars <<< "${spec#*:}"
      dir=$repo; [ "$rev" != HEAD ] && dir=$out/wt-$rev
      name="$out/${label}@${latency}#${round}"
      (cd "$dir" && env "${vars[@]}" "$repo/.venv/bin/python" -m bench.llm_latency \
        --latency "$latency" --events 3000 --paced-events 0 --baseline-events 10 "${extra[@]}" \
        --output "$name.json" > "$name.log" 2>&1) || true  # exit 1: the x30 target, not a failure
      grep -h '^pipeline' "$name.log" | sed "s|^|$label@$latency#$round |"
    done
  done
done
