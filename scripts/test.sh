#!/usr/bin/env bash
# Quick start, the tests: set up, build, and run every test.
#   1. the Release build: every ctest label (unit, model, e2e); then the installed package
#      (scripts/test_package.sh): libmogserve.so, its headers and CMake/pkg-config files installed
#      into a temporary prefix and examples/detect_faces built and run against them;
#   2. an AddressSanitizer + UBSan build of the torch-free unit tests (decoders, EXIF, resize,
#      drawing, HTTP request parsing and the HTTP layer: the code that parses untrusted bytes;
#      the scheduler and the pipeline; the video reader, which scales frames into canvases);
#   3. a ThreadSanitizer build of the scheduler, pipeline, server and video tests (worker
#      threads, queues, the stress test's 100 000 requests from 64 threads, the HTTP layer's
#      connections, strands and asynchronous answers over loopback, the video streams' reader
#      threads and their interrupts);
#   4. a libFuzzer run (clang, ASan + UBSan) over request parsing and image decoding, seeded
#      with real and broken images, for MOGSERVE_FUZZ_SECONDS (default 60); then one over the
#      ONNX model reader and shape inference, seeded with the BlazeFace files, for
#      MOGSERVE_ONNX_FUZZ_SECONDS (default 30);
#   5. the build without LibTorch and without CUDA (-DMOGSERVE_WITH_TORCH=OFF
#      -DMOGSERVE_WITH_CUDA=OFF): mogserve (whose detect must say it has no CPU engine) and the
#      torch-free tests, the golden-file parity tests excepted (the first step runs them);
#   6. where nvcc, cudnn.h and libcudnn are found, the GPU bundle's configuration
#      (-DMOGSERVE_WITH_TORCH=OFF -DMOGSERVE_WITH_CUDA=ON -DMOGSERVE_WITH_VIDEO=OFF
#      -DMOGSERVE_WITH_GRPC=OFF, sm_90 only):
#      mogserve, libmogserve.so with the CUDA engine in it, cuda_host_tests (the CUDA
#      backend's host side: arena, weight preparation, kernel element functions, no-GPU
#      errors), cuda_tests (the kernels on a GPU: compiled here, skipped without a device),
#      its unit tests.
#   1c. on a CPU with AVX-512, the tests whose behaviour depends on the CPU once more as an
#      AVX2-only CPU (MOGSERVE_CPU_ISA=avx2: mogserve's feature detection, oneDNN's and ATen's
#      kernels capped at AVX2): bf16 refused with exit 3, --precision auto's choice, the skips,
#      the benchmarks' FMA loop, INT8 and FP32 on AVX2 kernels.
# After each ctest run the tests it skipped are listed with their reasons (scripts/ctest_skips.sh).
# Extra arguments go to the first ctest run.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$ROOT/scripts/setup.sh"
"$ROOT/scripts/build.sh"
(cd "$ROOT/build" && ctest --output-on-failure -j 2 -LE package "$@")
SKIPS=("$("$ROOT/scripts/ctest_skips.sh" "$ROOT/build" "release")")
# 1c. The CPU-dependent tests as an AVX2-only CPU (where this one has AVX-512; on an AVX2
#     machine step 1 already ran them so).
CPU_TESTS='CpuInfo|FmaPeak|CpuPrecision|RealPhotosTest|PlanRunner|MogFaceEngineTest|MogFaceParity'
CPU_TESTS+='|EvalCompareE2E|BenchE2E|CalibrateE2E|DetectorTest|DetectorOpen'
if grep -qw avx512bw /proc/cpuinfo; then
  (cd "$ROOT/build" && MOGSERVE_CPU_ISA=avx2 ONEDNN_MAX_CPU_ISA=AVX2 ATEN_CPU_CAPABILITY=avx2 \
     ctest --output-on-failure -j 2 -R "$CPU_TESTS")
  SKIPS+=("$("$ROOT/scripts/ctest_skips.sh" "$ROOT/build" "as an AVX2-only CPU")")
else
  SKIPS+=("test: this CPU has no AVX-512: step 1 ran every test as an AVX2-only CPU")
fi
# 1b. The installed package: the Release build installed into a temporary prefix,
#     examples/detect_faces built out of tree against it (CMake and pkg-config) and run
#     (scripts/test_package.sh; also the ctest test package_example, left out of the run above).
"$ROOT/scripts/test_package.sh" "$ROOT/build"

SAN_DIR="$ROOT/build-asan"
cmake -S "$ROOT" -B "$SAN_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Debug \
  -DMOGSERVE_SANITIZE=address,undefined >/dev/null
cmake --build "$SAN_DIR" -j "${MOGSERVE_JOBS:-2}" --target common_tests image_tests scheduler_tests server_tests \
  pipeline_tests video_tests
(cd "$SAN_DIR" && ctest --output-on-failure -j 2 -L unit)
SKIPS+=("$("$ROOT/scripts/ctest_skips.sh" "$SAN_DIR" "ASan/UBSan")")

TSAN_DIR="$ROOT/build-tsan"
cmake -S "$ROOT" -B "$TSAN_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DMOGSERVE_SANITIZE=thread >/dev/null
cmake --build "$TSAN_DIR" -j "${MOGSERVE_JOBS:-2}" --target pipeline_tests scheduler_tests \
  server_tests video_tests
(cd "$TSAN_DIR" && ctest --output-on-failure -j 2 -L unit)
SKIPS+=("$("$ROOT/scripts/ctest_skips.sh" "$TSAN_DIR" "TSan")")

FUZZ_DIR="$ROOT/build-fuzz"
CXX=clang++ cmake -S "$ROOT" -B "$FUZZ_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DMOGSERVE_FUZZ=ON -DMOGSERVE_SANITIZE=address,undefined >/dev/null
cmake --build "$FUZZ_DIR" -j "${MOGSERVE_JOBS:-2}" --target detect_request_fuzzer make_seed_corpus \
  onnx_model_fuzzer
rm -rf "$FUZZ_DIR/corpus" "$FUZZ_DIR/fuzz-work" && mkdir -p "$FUZZ_DIR/fuzz-work"
"$FUZZ_DIR/tests/fuzz/make_seed_corpus" "$ROOT/tests/data/photos" "$FUZZ_DIR/corpus"
# A crash leaves its input as crash-* in build-fuzz/ and fails the run.
if ! (cd "$FUZZ_DIR" && ./tests/fuzz/detect_request_fuzzer fuzz-work corpus \
      -max_total_time="${MOGSERVE_FUZZ_SECONDS:-60}" -max_len=65536 -timeout=10 \
      -rss_limit_mb=2048 -print_final_stats=1 >fuzz.log 2>&1); then
  tail -n 80 "$FUZZ_DIR/fuzz.log"
  echo "test: FAILED: the fuzz target found a crash (log: $FUZZ_DIR/fuzz.log)" >&2
  exit 1
fi
tail -n 6 "$FUZZ_DIR/fuzz.log"
# The ONNX model reader, shape inference and the mapping onto the plan, seeded with the BlazeFace
# files (scripts/setup.sh) and the SCRFD- and YuNet-shaped exports the first step's tests wrote.
rm -rf "$FUZZ_DIR/onnx-corpus" "$FUZZ_DIR/onnx-work" && mkdir -p "$FUZZ_DIR/onnx-corpus" "$FUZZ_DIR/onnx-work"
cp "$ROOT"/models/blazeface/*.onnx "$FUZZ_DIR/onnx-corpus/"
for f in scrfd_opset11 yunet_opset11; do
  if [ -f "$ROOT/build/onnx_models/$f.onnx" ]; then cp "$ROOT/build/onnx_models/$f.onnx" "$FUZZ_DIR/onnx-corpus/"; fi
done
if ! (cd "$FUZZ_DIR" && ./tests/fuzz/onnx_model_fuzzer onnx-work onnx-corpus \
      -max_total_time="${MOGSERVE_ONNX_FUZZ_SECONDS:-30}" -max_len=700000 -timeout=10 \
      -rss_limit_mb=2048 -print_final_stats=1 >onnx-fuzz.log 2>&1); then
  tail -n 80 "$FUZZ_DIR/onnx-fuzz.log"
  echo "test: FAILED: the ONNX fuzz target found a crash (log: $FUZZ_DIR/onnx-fuzz.log)" >&2
  exit 1
fi
tail -n 6 "$FUZZ_DIR/onnx-fuzz.log"

NOTORCH_DIR="$ROOT/build-notorch"
cmake -S "$ROOT" -B "$NOTORCH_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DMOGSERVE_WITH_TORCH=OFF -DMOGSERVE_WITH_CUDA=OFF >/dev/null
cmake --build "$NOTORCH_DIR" -j "${MOGSERVE_JOBS:-2}"
(cd "$NOTORCH_DIR" && ctest --output-on-failure -j 2 -E 'mogface_golden_setup|Parity')
SKIPS+=("$("$ROOT/scripts/ctest_skips.sh" "$NOTORCH_DIR" "without LibTorch")")

# Step 6 needs nvcc, cudnn.h and libcudnn; without them it is skipped, never failed. The cuDNN
# prefix found here is handed to CMake (CUDNN_ROOT), so both always agree: CI's nvcc is a wrapper
# script in /usr/local/bin, far from the toolkit that holds cuDNN.
find_cuda_step() {
  NVCC=$(command -v nvcc 2>/dev/null || true)
  if [ -z "$NVCC" ] && [ -x /usr/local/cuda/bin/nvcc ]; then NVCC=/usr/local/cuda/bin/nvcc; fi
  if [ -z "$NVCC" ]; then
    echo "test: no nvcc: skipping the CUDA build (build-cuda)"
    return 1
  fi
  local cuda_root prefix header="" library=""
  cuda_root="$(cd "$(dirname "$(readlink -f "$NVCC")")/.." && pwd)"
  for prefix in ${CUDNN_ROOT:-} "$cuda_root" /usr/local/cuda /usr; do
    for f in "$prefix/include/cudnn.h" "$prefix/include/x86_64-linux-gnu/cudnn.h"; do
      if [ -z "$header" ] && [ -f "$f" ]; then header="$f"; CUDNN_PREFIX="$prefix"; fi
    done
    for f in "$prefix"/lib64/libcudnn.so* "$prefix"/lib/libcudnn.so* \
             "$prefix"/lib/x86_64-linux-gnu/libcudnn.so*; do
      if [ -z "$library" ] && [ -e "$f" ]; then library="$f"; fi
    done
  done
  if [ -z "$header" ] || [ -z "$library" ]; then
    echo "test: nvcc but no cuDNN (cudnn.h: ${header:-not found}, libcudnn: ${library:-not found})" \
      "under CUDNN_ROOT, $cuda_root, /usr/local/cuda or /usr: skipping the CUDA build (build-cuda)"
    return 1
  fi
}

if find_cuda_step; then
  CUDA_DIR="$ROOT/build-cuda"
  cmake -S "$ROOT" -B "$CUDA_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOGSERVE_WITH_TORCH=OFF \
    -DMOGSERVE_WITH_CUDA=ON -DMOGSERVE_WITH_VIDEO=OFF -DMOGSERVE_WITH_GRPC=OFF -DCMAKE_CUDA_ARCHITECTURES=90 \
    -DCUDNN_ROOT="$CUDNN_PREFIX" >/dev/null
  cmake --build "$CUDA_DIR" -j "${MOGSERVE_JOBS:-2}" --target mogserve mogserve_library \
    cuda_host_tests cuda_tests
  (cd "$CUDA_DIR" && ctest --output-on-failure -j 2 -L unit)
  SKIPS+=("$("$ROOT/scripts/ctest_skips.sh" "$CUDA_DIR" "the CUDA build")")
fi

# The summary: every test that did not run its checks, and why.
echo "test: all steps passed. Skipped tests:"
printf '%s\n' "${SKIPS[@]}"
