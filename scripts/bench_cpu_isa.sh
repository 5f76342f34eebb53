#!/usr/bin/env bash
# The CPU kinds side by side in one run: this CPU as it is, and capped at AVX2 (MOGSERVE_CPU_ISA
# =avx2: mogserve's detection, oneDNN's and ATen's kernels, as on an AVX2-only CPU), each
# precision that CPU runs, interleaved so drift hits them alike:
#   - `mogserve detect` end to end (process start, model load and warm-up included) on 100 real
#     photos (10 copies of tests/data/photos), 2 threads;
#   - `bench engine` SSD batch 1 and 4, and the machine's FP32 FMA peak.
# Usage: scripts/bench_cpu_isa.sh OUT.md [ROUNDS]   (needs a build in build/; default 2 rounds)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="$1"
ROUNDS="${2:-2}"
BIN="$ROOT/build/mogserve"
DIR="$(mktemp -d)"
trap 'rm -rf "$DIR"' EXIT
mkdir -p "$DIR/photos"
for i in $(seq -w 1 10); do
  for f in "$ROOT"/tests/data/photos/*; do cp "$f" "$DIR/photos/${i}_$(basename "$f")"; done
done
isa_env() { if [ "$1" = native ]; then echo "MOGSERVE_CPU_ISA=native"; else
  echo "MOGSERVE_CPU_ISA=avx2 ONEDNN_MAX_CPU_ISA=AVX2 ATEN_CPU_CAPABILITY=avx2"; fi; }
precisions() { if [ "$1" = native ] && grep -qw avx512bw /proc/cpuinfo; then
  echo "fp32 bf16 int8"; else echo "fp32 int8"; fi; }
{
  echo "# CPU kinds side by side (scripts/bench_cpu_isa.sh)"
  echo
  echo "Commit $(git -C "$ROOT" rev-parse --short HEAD), $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores,"
  echo "CPU: $(lscpu | sed -n 's/^Model name: *//p'). \"avx2\" = this CPU capped by MOGSERVE_CPU_ISA=avx2"
  echo "(an emulation: the same cores and caches, AVX2 kernels; a real AVX2 CPU such as Zen 1 is slower)."
  echo
  echo "## detect, 100 photos, end to end (threads 2, batch 8), images/s per round"
  echo
  echo "| ISA | precision | rounds (images/s) |"
  echo "|---|---|---|"
} >"$OUT"
declare -A RESULT
for round in $(seq 1 "$ROUNDS"); do
  for isa in native avx2; do
    for p in $(precisions "$isa"); do
      start=$(date +%s.%N)
      env $(isa_env "$isa") "$BIN" detect "$DIR/photos" --precision "$p" -q -o "$DIR/out.jsonl"
      end=$(date +%s.%N)
      rate=$(awk -v s="$start" -v e="$end" 'BEGIN { printf "%.2f", 100 / (e - s) }')
      RESULT[$isa/$p]+="$rate "
      echo "round $round $isa $p: $rate images/s" >&2
    done
  done
done
for isa in native avx2; do
  for p in $(precisions "$isa"); do echo "| $isa | $p | ${RESULT[$isa/$p]} |" >>"$OUT"; done
done
{
  echo
  echo "## bench engine, SSD 512², default variant"
  echo
} >>"$OUT"
for isa in native avx2; do
  list=$(precisions "$isa" | tr ' ' ',')
  echo "### $isa" >>"$OUT"
  env $(isa_env "$isa") "$BIN" bench engine --default-only --precisions "$list" --batch-sizes 1,4 \
    --min-seconds 2 --json "$DIR/engine_$isa.json" >/dev/null
  /usr/bin/python3 - "$DIR/engine_$isa.json" >>"$OUT" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print(f"\nCPU as seen: {r['cpu']}; machine FP32 peak (FMA loop, {r['machine_peak_isa']}): "
      f"{r['machine_fp32_peak_gflops']:.1f} GFLOP/s\n")
print("| precision | batch | ms/image | images/s | GFLOP/s | % of its conv peak | % of FP32 machine peak |")
print("|---|---:|---:|---:|---:|---:|---:|")
for row in r["rows"]:
    print(f"| {row['precision']} | {row['batch']} | {row['ms_per_image']:.2f} | {row['images_per_s']:.1f} | "
          f"{row['gflops']:.1f} | {100*row['fraction_of_peak']:.0f} % | {100*row['fraction_of_machine_peak']:.0f} % |")
print()
PY
done
echo "wrote $OUT" >&2
