#!/usr/bin/env bash
# The CPU kinds side by side in one run: this CPU as it is, and capped at AVX2 (MOGSERVE_CPU_ISA
# =avx2: mogserve's detection, oneDNN's and ATen's kernels, as on an AVX2-only CPU), each
# precision that CPU runs, with the convolutions through oneDNN directly (the default) and through
# LibTorch as before (MOGSERVE_DIRECT_CONV=0), interleaved so drift hits them alike:
#   - `mogserve detect` end to end (process start, model load and warm-up included) on 100 real
#     photos (10 copies of tests/data/photos), 2 threads;
#   - `bench engine` SSD batch 1 and 4 with ONNX Runtime on the same network (--onnxruntime;
#     ONNX Runtime cannot be capped at AVX2: it runs this CPU's own kernels in both sections);
#   - `bench engine` MogFace R101 (synthetic weights) 320², batch 1, with ONNX Runtime, also
#     with the direct path's Winograd F(4x4,3x3) off (MOGSERVE_WINOGRAD=0) (skipped with
#     --no-mogface: ~5 minutes).
# YUNET_BENCH=/path/to/driver adds libfacedetection's YuNet to the detect rounds, as shipped and
# with glibc's malloc kept from returning memory (MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=
# 4294967295): a driver of your own around its C++ API taking `--jpeg-min-long 512 --out FILE
# IMAGE...` and printing "-> N img/s" (libfacedetection is not a dependency of mogserve).
# Usage: scripts/bench_cpu_isa.sh OUT.md [ROUNDS] [--no-mogface]   (needs a build in build/)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="$1"
ROUNDS="${2:-2}"
MOGFACE=1
[ "${3:-}" = "--no-mogface" ] && MOGFACE=0
BIN="$ROOT/build/mogserve"
DIR="$(mktemp -d)"
trap 'rm -rf "$DIR"' EXIT
mkdir -p "$DIR/photos"
for i in $(seq -w 1 10); do
  for f in "$ROOT"/tests/data/photos/*; do cp "$f" "$DIR/photos/${i}_$(basename "$f")"; done
done
# On an AVX2-only CPU the cap changes nothing: only "native" runs (and says so).
if grep -qw avx512bw /proc/cpuinfo; then ISAS="native avx2"; else ISAS="native"; fi
isa_env() { if [ "$1" = native ]; then echo "MOGSERVE_CPU_ISA=native"; else
  echo "MOGSERVE_CPU_ISA=avx2 ONEDNN_MAX_CPU_ISA=AVX2 ATEN_CPU_CAPABILITY=avx2"; fi; }
precisions() { if [ "$1" = native ] && grep -qw avx512bw /proc/cpuinfo; then
  echo "fp32 bf16 int8"; else echo "fp32 int8"; fi; }
conv_env() { case "$1" in
  direct) echo "MOGSERVE_DIRECT_CONV=1" ;;
  no-winograd) echo "MOGSERVE_DIRECT_CONV=1 MOGSERVE_WINOGRAD=0" ;;
  *) echo "MOGSERVE_DIRECT_CONV=0" ;;
esac; }
# One timed YuNet run over the photos: images/s, wall clock (process start included).
yunet_rate() {
  local start end
  start=$(date +%s.%N)
  env "$@" "$YUNET_BENCH" --jpeg-min-long 512 --out "$DIR/yunet.jsonl" "$DIR"/photos/* >/dev/null 2>&1
  end=$(date +%s.%N)
  awk -v s="$start" -v e="$end" 'BEGIN { printf "%.2f", 100 / (e - s) }'
}
{
  echo "# CPU kinds side by side (scripts/bench_cpu_isa.sh)"
  echo
  echo "Commit $(git -C "$ROOT" rev-parse --short HEAD), $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores,"
  echo "CPU: $(lscpu | sed -n 's/^Model name: *//p') (family $(lscpu | sed -n 's/^CPU family: *//p'),"
  echo "model $(lscpu | sed -n 's/^Model: *//p')). \"avx2\" = this CPU capped by MOGSERVE_CPU_ISA=avx2"
  echo "(an emulation: the same cores and caches, AVX2 kernels; a real AVX2 CPU such as Zen 1 is slower)."
  if [ "$ISAS" = native ]; then
    echo "This CPU has no AVX-512: \"native\" is a real AVX2-only CPU; there is no cap section."
  fi
  echo "\"direct\": convolutions through oneDNN directly (the default; FP32 3x3 ones with enough tiles by"
  echo "Winograd F(4x4,3x3), \"no-winograd\" with MOGSERVE_WINOGRAD=0); \"libtorch\": through LibTorch's"
  echo "at::mkldnn_convolution and quantized convolution as before (MOGSERVE_DIRECT_CONV=0)."
  echo
  echo "## detect, 100 photos, end to end (threads 2, batch 8), images/s per round"
  echo
  echo "| ISA | precision | convolutions | rounds (images/s) |"
  echo "|---|---|---|---|"
} >"$OUT"
declare -A RESULT
for round in $(seq 1 "$ROUNDS"); do
  for isa in $ISAS; do
    for p in $(precisions "$isa"); do
      for conv in direct libtorch; do
        start=$(date +%s.%N)
        env $(isa_env "$isa") $(conv_env "$conv") "$BIN" detect "$DIR/photos" --precision "$p" \
          -q -o "$DIR/out.jsonl"
        end=$(date +%s.%N)
        rate=$(awk -v s="$start" -v e="$end" 'BEGIN { printf "%.2f", 100 / (e - s) }')
        RESULT[$isa/$p/$conv]+="$rate "
        echo "round $round $isa $p $conv: $rate images/s" >&2
      done
    done
    if [ -n "${YUNET_BENCH:-}" ] && [ "$isa" = native ]; then
      RESULT[yunet/shipped]+="$(yunet_rate) "
      RESULT[yunet/malloc]+="$(yunet_rate MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=4294967295) "
    fi
  done
done
for isa in $ISAS; do
  for p in $(precisions "$isa"); do
    for conv in direct libtorch; do
      echo "| $isa | $p | $conv | ${RESULT[$isa/$p/$conv]} |" >>"$OUT"
    done
  done
done
if [ -n "${YUNET_BENCH:-}" ]; then
  echo "| native | YuNet ($(basename "$YUNET_BENCH")), as shipped | — | ${RESULT[yunet/shipped]} |" >>"$OUT"
  echo "| native | YuNet, malloc kept (MALLOC_MMAP_MAX_=0 ...) | — | ${RESULT[yunet/malloc]} |" >>"$OUT"
fi
table() {  # the rows of a bench engine JSON report
  /usr/bin/python3 - "$1" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print(f"\nCPU as seen: {r['cpu']}; machine FP32 peak (FMA loop, {r['machine_peak_isa']}): "
      f"{r['machine_fp32_peak_gflops']:.1f} GFLOP/s. {r.get('onnxruntime', '')}\n")
print("| precision | size | batch | ms/image (mean) | median | GFLOP/s | % of FP32 machine peak | ORT FP32 ms/image (median) | × ORT |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
for row in r["rows"]:
    med = row["median_ms"] / row["batch"]
    ort = row.get("onnxruntime_ms_per_image")
    ort_s = f"{ort:.2f} | {row['speedup_vs_onnxruntime']:.2f}×" if ort else "– | –"
    print(f"| {row['precision']} | {row.get('size') or 512} | {row['batch']} | {row['ms_per_image']:.2f} | "
          f"{med:.2f} | {row['gflops']:.1f} | {100*row['fraction_of_machine_peak']:.0f} % | {ort_s} |")
print()
PY
}
{
  echo
  echo "## bench engine, SSD 512², default variant"
  echo
} >>"$OUT"
for isa in $ISAS; do
  list=$(precisions "$isa" | tr ' ' ',')
  for conv in direct libtorch; do
    extra=()
    [ "$conv" = direct ] && extra=(--onnxruntime)
    echo "### $isa, $conv" >>"$OUT"
    env $(isa_env "$isa") $(conv_env "$conv") "$BIN" bench engine --default-only \
      --precisions "$list" --batch-sizes 1,4 --min-seconds 3 "${extra[@]}" \
      --json "$DIR/engine.json" >/dev/null
    table "$DIR/engine.json" >>"$OUT"
  done
done
if [ "$MOGFACE" = 1 ]; then
  {
    echo "## bench engine, MogFace R101 (synthetic weights), 320², batch 1"
    echo
  } >>"$OUT"
  for isa in $ISAS; do
    list=$(precisions "$isa" | sed 's/ int8//' | tr ' ' ',')
    for conv in direct no-winograd libtorch; do
      extra=()
      [ "$conv" = direct ] && [ "$isa" = native ] && extra=(--onnxruntime)
      echo "### $isa, $conv" >>"$OUT"
      env $(isa_env "$isa") $(conv_env "$conv") "$BIN" bench engine --model mogface \
        --synthetic-weights r101 --sizes 320 --batch-sizes 1 --precisions "$list" \
        --iterations 3 "${extra[@]}" --json "$DIR/engine.json" >/dev/null
      table "$DIR/engine.json" >>"$OUT"
    done
  done
fi
echo "wrote $OUT" >&2
