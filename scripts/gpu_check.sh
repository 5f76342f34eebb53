#!/usr/bin/env bash
# On the GPU machine, from the repository root, after scripts/gpu_bundle.sh made .gpu/ on the
# development machine (.gpu/ is ignored by git: the device run must carry it):
#   scripts/gpu_check.sh OUT
# One call, about 7 minutes on an H200 (every step has its own timeout; GPU_CHECK_BUDGET, default
# 520 s, bounds the whole run: the last, optional step gets what is left):
#   1. the environment: nvidia-smi, the cuDNN/cuBLAS the pip nvidia packages provide, every
#      library of .gpu/bin resolved (ldd: no "not found") -> OUT/env.txt;
#   2. cuda_tests: the kernels against the host element functions (f32/f16/bf16, poisoned
#      outputs); the CUDA engine against the FP64 reference per precision (SSD, R101, E, R50,
#      an odd size), fp16/bf16/tf32 against fp32 at 640², graph replays and instances
#      byte-identical to eager -> OUT/cuda_tests.{log,json} (the parity lines: grep parity);
#   3. cuda_host_tests on that machine, without the host-only parity runs CI already makes
#      (minutes of FP64 on one core) -> OUT/cuda_host_tests.{log,json};
#   4. `mogserve detect --device cuda` on a real photo with the SSD in fp16: the faces found, the
#      device and the loaded cuDNN/cuBLASLt versions -> OUT/detect.{json,log}; `eval compare`
#      of the SSD in fp32 / fp16 / bf16 on tests/data/photos -> OUT/eval_compare.{md,json};
#   5. benchmarks (bench engine, median of the timed passes, copies included):
#      R101 640² fp16 and bf16 at batch 1/8/16/32 with PyTorch eager fp16/bf16 channels-last on
#      the same GPU (tests/reference/bench_reference.py --device cuda), tf32 at 8/32, fp32 at 8;
#      SSD 512² fp16 at batch 1/16/64 -> OUT/bench_*.{md,json};
#   6. if time is left: `bench report --device cuda --quick` for R101 640² (the guide's tables:
#      fp16 vs fp32, batch sizes, naive vs continuous batching, streams) -> OUT/report/;
# and OUT/summary.txt, printed last. Exit status 1 when a step failed. Each step has a timeout
# (then SIGKILL 10 s later: a process stuck in the driver may ignore SIGTERM). A test binary
# counts as ok only when it exits 0 having passed at least one test.
# No `set -e`: every step runs and is recorded even when an earlier one failed; each command's
# status is checked where it matters, and greps that may match nothing end in `|| true`.
set -uo pipefail
OUT="${1:?usage: scripts/gpu_check.sh OUT}"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUNDLE="$ROOT/.gpu"
mkdir -p "$OUT"
if [ ! -x "$BUNDLE/bin/cuda_tests" ]; then
  echo "gpu_check: $BUNDLE/bin/cuda_tests is missing: run scripts/gpu_bundle.sh first" >&2
  exit 2
fi

# pip puts cuDNN in nvidia/cudnn/lib and cuBLAS/cudart/NVRTC in nvidia/cu13/lib (older wheels:
# nvidia/cublas/lib). Only our binaries get this library path, not python.
SP=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])' 2>/dev/null || true)
LIBS="$BUNDLE/lib"
for d in "$SP/nvidia/cudnn/lib" "$SP/nvidia/cu13/lib" "$SP/nvidia/cublas/lib" \
         "$SP/nvidia/cuda_runtime/lib" /usr/local/cuda/lib64; do
  if [ -d "$d" ]; then LIBS="$LIBS:$d"; fi
done
# Prepended, never replacing the caller's: in NVIDIA containers libcuda.so.1 may be reachable
# only through LD_LIBRARY_PATH (e.g. /usr/local/nvidia/lib64). The ldd check, the tests and
# mogserve all run through with_libs, so they see the same libraries.
with_libs() { env LD_LIBRARY_PATH="$LIBS${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$@"; }

SUMMARY="$OUT/summary.txt"
: >"$SUMMARY"
FAILED=0
record() {  # name, status, detail
  printf '%-18s %-5s %s\n' "$1" "$2" "$3" | tee -a "$SUMMARY" >/dev/null
  if [ "$2" = "FAIL" ]; then FAILED=1; fi
}

# 1. Environment.
{
  date -u
  uname -a
  if command -v nvidia-smi >/dev/null; then nvidia-smi; else echo "nvidia-smi: missing"; fi
  python3 - <<'PY' 2>/dev/null || echo "python3: no nvidia package versions"
import importlib.metadata as m
for name in ("nvidia-cudnn-cu13", "nvidia-cublas", "nvidia-cublas-cu13", "nvidia-cuda-runtime",
             "nvidia-cuda-runtime-cu13", "torch"):
    try:
        print(name, m.version(name))
    except m.PackageNotFoundError:
        pass
PY
  echo "bundle built from: $(cat "$BUNDLE/REV" 2>/dev/null || echo unknown)"
  echo "LD_LIBRARY_PATH for the bundle: $LIBS${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  echo "libcuda in the loader cache:"
  ldconfig -p 2>/dev/null | grep 'libcuda\.so' || echo "  none (then only LD_LIBRARY_PATH can provide it)"
  with_libs ldd "$BUNDLE"/bin/*
} >"$OUT/env.txt" 2>&1
if grep -q "=> not found" "$OUT/env.txt"; then
  record environment FAIL "a library is not found (see env.txt)"
else
  record environment ok "$(grep -m1 -o 'Driver Version: [0-9.]*' "$OUT/env.txt" || echo 'no nvidia-smi')"
fi
# Binaries from another commit than the tree they run in: their results are not this tree's.
BUNDLE_REV=$(cat "$BUNDLE/REV" 2>/dev/null || true)
TREE_REV=$(git -C "$ROOT" rev-parse HEAD 2>/dev/null || true)
if [ -z "$BUNDLE_REV" ]; then
  record bundle WARN "no .gpu/REV: the bundle's commit is unknown"
elif [ -z "$TREE_REV" ]; then
  record bundle ok "built from $BUNDLE_REV (no git here to compare)"
elif [ "${BUNDLE_REV%% *}" != "$TREE_REV" ]; then
  record bundle WARN "built from $BUNDLE_REV, but the tree is at $TREE_REV"
else
  record bundle ok "built from $BUNDLE_REV"
fi

# 2-3. The test binaries.
run_tests() {  # name, timeout seconds, extra arguments
  local name=$1 limit=$2
  shift 2
  with_libs timeout -k 10 "$limit" "$BUNDLE/bin/$name" --gtest_output="json:$OUT/$name.json" "$@" \
    >"$OUT/$name.log" 2>&1
  local rc=$?
  local line passed
  line=$(grep -E '^\[  (PASSED|FAILED|SKIPPED) +\] [0-9]+ tests?' "$OUT/$name.log" | tr '\n' ' ' || true)
  passed=$(grep -m1 -oE '^\[  PASSED  \] [0-9]+' "$OUT/$name.log" | grep -oE '[0-9]+$' || true)
  if [ $rc -ne 0 ]; then
    record "$name" FAIL "exit $rc: $line"
  elif [ "${passed:-0}" -eq 0 ]; then
    record "$name" FAIL "no test passed: $line"
  else
    record "$name" ok "$line"
  fi
}
START=$SECONDS
BUDGET=${GPU_CHECK_BUDGET:-520}
export MOGSERVE_TEST_MODEL_DIR="$BUNDLE/models/ssd_mobilenetv1"  # the SSD parity case
run_tests cuda_tests 240
if grep -q '^\[  SKIPPED \]' "$OUT/cuda_tests.log"; then
  record "cuda_tests" FAIL "tests were skipped: no usable CUDA device or no SSD model"
fi
grep -E '^(parity|640x640) ' "$OUT/cuda_tests.log" >"$OUT/parity.txt" || true
run_tests cuda_host_tests 120 '--gtest_filter=-*ProgramParity*:*MisplacedOutput*'

# 4. Detection on a real photo.
with_libs timeout -k 10 90 "$BUNDLE/bin/mogserve" detect --device cuda --precision fp16 \
  --model-dir "$BUNDLE/models/ssd_mobilenetv1" "$ROOT/tests/data/photos/grace_hopper.jpg" \
  >"$OUT/detect.json" 2>"$OUT/detect.log"
rc=$?
if [ $rc -eq 0 ] && grep -q '"score"' "$OUT/detect.json"; then
  record detect ok "$(grep -m1 -o 'CUDA device: .*' "$OUT/detect.log" || true)"
else
  record detect FAIL "exit $rc: $(tail -n 1 "$OUT/detect.log" || true)"
fi
# A cuDNN older than the build's headers runs, with a warning (spec §8.1): said in the summary.
if grep -q 'is loaded, older than cuDNN' "$OUT/detect.log"; then
  record cudnn WARN "$(grep -m1 -o 'cuDNN [0-9.]* is loaded, older than cuDNN [0-9.]*' \
    "$OUT/detect.log" || true)"
fi

# 4b. What reduced precision changes on real photos: the SSD in fp32, fp16, bf16.
with_libs timeout -k 10 90 "$BUNDLE/bin/mogserve" eval compare --device cuda -q \
  --model-dir "$BUNDLE/models/ssd_mobilenetv1" --precision fp32,fp16,bf16 \
  --json "$OUT/eval_compare.json" "$ROOT/tests/data/photos" >"$OUT/eval_compare.md" 2>&1
rc=$?
if [ $rc -eq 0 ]; then
  record "eval compare" ok "OUT/eval_compare.md"
else
  record "eval compare" FAIL "exit $rc: $(tail -n 1 "$OUT/eval_compare.md" || true)"
fi

# 5. Benchmarks.
bench() {  # name, timeout, bench engine arguments...
  local name=$1 limit=$2
  shift 2
  with_libs timeout -k 10 "$limit" "$BUNDLE/bin/mogserve" bench engine --device cuda \
    --json "$OUT/bench_$name.json" --markdown "$OUT/bench_$name.md" "$@" \
    >"$OUT/bench_$name.log" 2>&1
  local rc=$?
  if [ $rc -eq 0 ]; then
    record "bench $name" ok "$(grep -c '^| [0-9]' "$OUT/bench_$name.md" || true) rows"
  else
    record "bench $name" FAIL "exit $rc: $(tail -n 1 "$OUT/bench_$name.log" || true)"
  fi
}
R101=(--model mogface --synthetic-weights r101 --sizes 640 --warmup 2)
bench r101_fp16_bf16 150 "${R101[@]}" --iterations 20 --precisions fp16 bf16 \
  --batch-sizes 1 8 16 32 --reference --reference-python python3 \
  --reference-script "$ROOT/tests/reference/bench_reference.py"
bench r101_tf32 60 "${R101[@]}" --iterations 20 --precisions tf32 --batch-sizes 8 32
bench r101_fp32 60 "${R101[@]}" --iterations 5 --precisions fp32 --batch-sizes 8
bench ssd_fp16 45 --model ssd --model-dir "$BUNDLE/models/ssd_mobilenetv1" --precision fp16 \
  --batch-sizes 1 16 64 --default-only

# 6. The guide's tables, with what is left of the budget.
LEFT=$((BUDGET - (SECONDS - START) - 20))
if [ $LEFT -ge 60 ]; then
  with_libs timeout -k 10 "$LEFT" "$BUNDLE/bin/mogserve" bench report --device cuda --quick \
    --model mogface --synthetic-weights r101 --size 640 --precisions fp32 fp16 \
    --images-dir "$ROOT/tests/data/photos" --out "$OUT/report" >"$OUT/report.log" 2>&1
  rc=$?
  if [ $rc -eq 0 ]; then
    record report ok "OUT/report/report.md"
  else
    record report FAIL "exit $rc after at most ${LEFT}s: $(tail -n 1 "$OUT/report.log" || true)"
  fi
else
  record report SKIP "${LEFT}s left of the ${BUDGET}s budget"
fi

cat "$SUMMARY"
exit $FAILED
