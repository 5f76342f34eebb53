#!/usr/bin/env bash
# A/B of two mogserve binaries on this machine: `bench engine` (SSD FP32, batch 1 and 8),
# `bench pipeline --real --quick` (the real SSD through the scheduler and pipeline) and
# `bench serve` (HTTP vs in-process, closed loop 1 and 16 clients), each benchmark run for A, B, A,
# B in turn so that drift in the machine's speed hits both. Prints the key figures side by side
# (scripts/bench_ab_summary.py; also OUT_DIR/summary.md).
#
# usage: scripts/bench_ab.sh OLD_BINARY NEW_BINARY OUT_DIR
# Run on a quiet machine (no build or test running: check `uptime`).
set -euo pipefail
OLD=$1 NEW=$2 OUT=$3
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
mkdir -p "$OUT"
run() {  # run LABEL ROUND BINARY
  local label=$1 round=$2 bin=$3
  "$bin" bench engine --default-only --batch-sizes 1,8 --precisions fp32 \
    --json "$OUT/engine_${label}_$round.json" >/dev/null 2>"$OUT/engine_${label}_$round.log"
  "$bin" bench pipeline --real --quick --policies continuous \
    --json "$OUT/pipeline_${label}_$round.json" >/dev/null 2>"$OUT/pipeline_${label}_$round.log"
  "$bin" bench serve --concurrency 1,16 --load-fractions 0.5 --seconds 4 \
    --json "$OUT/serve_${label}_$round.json" >/dev/null 2>"$OUT/serve_${label}_$round.log" \
    -- --plan-batch-sizes 1,2,4,8
}
for round in 1 2; do
  run old "$round" "$OLD"
  run new "$round" "$NEW"
done
python3 "$ROOT/scripts/bench_ab_summary.py" "$OUT" | tee "$OUT/summary.md"
