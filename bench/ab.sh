#!/usr/bin/env bash
# A/B of bench/consolidation.py mode (a) across commits, interleaved in one session, so the
# machine's noise falls on every side alike:
#
#   bench/ab.sh OUTDIR ROUNDS REV [REV ...]     e.g. bench/ab.sh /tmp/ab 3 5c84edc d80ff70 HEAD
#
# Each REV is checked out in its own worktree under OUTDIR (HEAD runs from this checkout) and
# runs with this checkout's venv and stack; results land in OUTDIR/<rev>_<round>.json. A REV
# with bench/__init__.py runs as `python -m bench.consolidation` from its root, an older one as
# `python bench/consolidation.py`. Then `python -m bench.ab_summary OUTDIR` prints throughput,
# worker CPU per event and the ratio to the raw Kafka loop per side. BENCH_MODE=b runs mode (b)
# instead, and BENCH_ARGS adds arguments (e.g. "--events 5000 --paced-events 100").
set -euo pipefail
out=$1; rounds=$2; shift 2
repo=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-$repo/.stack/run}"
export CONSOLIDATOR_DATABASE_URL="${CONSOLIDATOR_DATABASE_URL:-postgresql://postgres:@/postgres?host=$repo/.stack/pg}"
for rev in "$@"; do
  if [ "$rev" != HEAD ] && [ ! -d "$out/wt-$rev" ]; then
    git -C "$repo" worktree add --detach "$out/wt-$rev" "$rev" >/dev/null
  fi
done
for round in $(seq 1 "$rounds"); do
  for rev in "$@"; do
    dir=$repo; [ "$rev" != HEAD ] && dir=$out/wt-$rev
    script=(bench/consolidation.py); [ -f "$dir/bench/__init__.py" ] && script=(-m bench.consolidation)
    (cd "$dir" && "$repo/.venv/bin/python" "${script[@]}" --mode "${BENCH_MODE:-a}" \
      ${BENCH_ARGS:-} --output "$out/${rev}_$round.json" > "$out/${rev}_$round.log" 2>&1)
  done
done
