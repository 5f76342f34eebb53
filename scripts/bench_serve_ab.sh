#!/usr/bin/env bash
# bench serve A/B: another build of mogserve (OLD_MOGSERVE, e.g. an earlier commit) vs this
# tree's build/mogserve, both serving the default model, measured by the same client (this tree's
# `bench serve --url`): 1 and 16 clients, then 64 and 256, two rounds, the servers' order
# alternating. Before each phase it waits until both servers have used no CPU for 3 s (a server
# may keep working on requests of clients that already left). Writes OUT_DIR/{old,new}-ROUND-
# {low,high}.{md,json,txt}, the servers' logs and their final VmRSS/VmHWM.
#   SERVE_FLAGS="--batch-knee 0 --max-batch-size 4" scripts/bench_serve_ab.sh OLD_MOGSERVE OUT
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
OLD=${1:?usage: scripts/bench_serve_ab.sh OLD_MOGSERVE OUT_DIR}
OUT=${2:?usage: scripts/bench_serve_ab.sh OLD_MOGSERVE OUT_DIR}
mkdir -p "$OUT"
NEW=build/mogserve
# SERVE_FLAGS: more flags for both servers, e.g. a fixed batch cap (the warm-up's throughput knee
# differs from start to start on a noisy machine, and the cap moves saturation throughput).
COMMON="--model-dir models/ssd_mobilenetv1 --access-log off ${SERVE_FLAGS:-}"
$OLD serve $COMMON --port 7901 > "$OUT/old-server.log" 2>&1 &
OLDPID=$!
until curl -sf localhost:7901/readyz >/dev/null; do sleep 1; done
$NEW serve $COMMON --port 7902 > "$OUT/new-server.log" 2>&1 &
NEWPID=$!
until curl -sf localhost:7902/readyz >/dev/null; do sleep 1; done
cpu() { awk '{print $14 + $15}' /proc/$1/stat; }
wait_quiet() {
  local a b c d
  for _ in $(seq 1 120); do
    a=$(cpu $OLDPID); b=$(cpu $NEWPID); sleep 3; c=$(cpu $OLDPID); d=$(cpu $NEWPID)
    [ $((c - a + d - b)) -le 3 ] && return 0
  done
  echo "servers not quiet after 6 min" >&2
}
for round in 1 2; do
  order="old new"; [ $round = 2 ] && order="new old"
  for which in $order; do
    port=$([ $which = old ] && echo 7901 || echo 7902)
    wait_quiet
    $NEW bench serve --url http://127.0.0.1:$port --concurrency 1,16 --load-fractions 0.5 \
      --seconds 10 --warmup 3 --no-in-process --json "$OUT/$which-$round-low.json" \
      --markdown "$OUT/$which-$round-low.md" > "$OUT/$which-$round-low.txt" 2>&1
    wait_quiet
    # 256 clients at ~25 img/s: a warm-up longer than one round trip of every client (~10 s).
    $NEW bench serve --url http://127.0.0.1:$port --concurrency 64,256 --load-fractions 0.5 \
      --seconds 20 --warmup 15 --no-in-process --json "$OUT/$which-$round-high.json" \
      --markdown "$OUT/$which-$round-high.md" > "$OUT/$which-$round-high.txt" 2>&1
  done
done
wait_quiet
for w in old new; do
  pid=$([ $w = old ] && echo $OLDPID || echo $NEWPID)
  grep -E "VmRSS|VmHWM" /proc/$pid/status > "$OUT/$w-rss.txt"
done
kill $OLDPID $NEWPID; wait || true
