#!/usr/bin/env bash
# On the GPU machine, from the repository root, after scripts/gpu_bundle.sh made .gpu/ on the
# development machine (.gpu/ is ignored by git: the device run must carry it):
#   scripts/gpu_check.sh OUT
# What it checks today (the CUDA executor is not written yet, so no parity or benchmarks):
#   1. the environment: nvidia-smi, the cuDNN/cuBLAS the pip nvidia packages provide, every
#      library of .gpu/bin resolved (ldd: no "not found") -> OUT/env.txt;
#   2. cuda_tests: the kernels on the GPU against the host element functions, f32/f16/bf16,
#      poisoned outputs -> OUT/cuda_tests.{log,json};
#   3. cuda_host_tests on that machine (arena, weights, descriptors, and the CUDA engine's
#      answer with a device present) -> OUT/cuda_host_tests.{log,json};
#   4. `mogserve detect --device cuda`: logs the device and the loaded cuDNN/cuBLASLt versions,
#      then must exit 3 saying the executor is not written -> OUT/detect.log;
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
run_tests() {  # name, timeout seconds
  with_libs timeout -k 10 "$2" "$BUNDLE/bin/$1" --gtest_output="json:$OUT/$1.json" \
    >"$OUT/$1.log" 2>&1
  local rc=$?
  local line passed
  line=$(grep -E '^\[  (PASSED|FAILED|SKIPPED) +\] [0-9]+ tests?' "$OUT/$1.log" | tr '\n' ' ' || true)
  passed=$(grep -m1 -oE '^\[  PASSED  \] [0-9]+' "$OUT/$1.log" | grep -oE '[0-9]+$' || true)
  if [ $rc -ne 0 ]; then
    record "$1" FAIL "exit $rc: $line"
  elif [ "${passed:-0}" -eq 0 ]; then
    record "$1" FAIL "no test passed: $line"
  else
    record "$1" ok "$line"
  fi
}
run_tests cuda_tests 120
run_tests cuda_host_tests 120
if grep -q '^\[  SKIPPED \]' "$OUT/cuda_tests.log"; then
  record "cuda_tests" FAIL "tests were skipped: no usable CUDA device"
fi
# It skips when the device probe fails (no driver, a refused cuDNN): on the GPU machine, a failure.
if grep -q '^\[  SKIPPED \] CudaEngineTest.WithAGpuTheMissingExecutorIsSaid' \
  "$OUT/cuda_host_tests.log"; then
  record "cuda_host_tests" FAIL "WithAGpuTheMissingExecutorIsSaid skipped: the device probe failed"
fi

# 4. The engine's answer with a device.
with_libs timeout -k 10 60 "$BUNDLE/bin/mogserve" detect --device cuda \
  --model mogface --synthetic-weights r50 "$ROOT/tests/data/photos/grace_hopper.jpg" \
  >"$OUT/detect.log" 2>&1
rc=$?
if [ $rc -eq 3 ] && grep -q "unimplemented: the CUDA backend found cuda:0" "$OUT/detect.log"; then
  record detect ok "$(grep -m1 -o 'CUDA device: .*' "$OUT/detect.log" || true)"
else
  record detect FAIL "exit $rc: $(tail -n 1 "$OUT/detect.log" || true)"
fi
# A cuDNN older than the build's headers runs, with a warning (spec §8.1): said in the summary.
if grep -q 'is loaded, older than cuDNN' "$OUT/detect.log"; then
  record cudnn WARN "$(grep -m1 -o 'cuDNN [0-9.]* is loaded, older than cuDNN [0-9.]*' \
    "$OUT/detect.log" || true)"
fi

echo "not measured (the CUDA executor is not written yet): parity per precision, benchmarks" \
  >>"$SUMMARY"
cat "$SUMMARY"
exit $FAILED
