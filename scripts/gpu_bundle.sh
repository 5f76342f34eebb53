#!/usr/bin/env bash
# Builds the torch-free CUDA binaries (build-cuda: -DMOGSERVE_WITH_TORCH=OFF
# -DMOGSERVE_WITH_CUDA=ON, sm_90) and packs them with the Debian libraries they load into the
# ignored folder .gpu/, for the GPU machine (DESIGN.md §8, specs/cuda_backend.md §8), where
# scripts/gpu_check.sh runs them:
#   .gpu/bin/   mogserve, cuda_tests (kernels on the GPU), cuda_host_tests
#   .gpu/lib/   every library they load except glibc, libstdc++/libgcc (the GPU machine's own,
#               which must be at least as new: glibc >= 2.34, GLIBCXX_3.4.30) and the CUDA
#               libraries (cuDNN, cuBLAS(Lt) come from that machine's pip nvidia packages;
#               cudart is static)
#   .gpu/models/ssd_mobilenetv1 when models/ holds it (scripts/setup.sh)
#   .gpu/REV    the commit it was built from (git rev-parse HEAD, plus " dirty" for a modified
#               tree), which gpu_check.sh compares with the tree it runs in
# Fails when a library other than cuDNN/cuBLAS is "not found" by ldd (the bundle would be
# incomplete).
# Fails when the bundle exceeds 40 MiB. MOGSERVE_JOBS sets the build's parallelism (default 2).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="$ROOT/build-cuda"
BUNDLE="$ROOT/.gpu"
if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  # No video: FFmpeg's codec libraries would not fit the bundle's 40 MiB.
  cmake -S "$ROOT" -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DMOGSERVE_WITH_TORCH=OFF \
    -DMOGSERVE_WITH_CUDA=ON -DMOGSERVE_WITH_VIDEO=OFF -DMOGSERVE_WITH_GRPC=OFF -DCMAKE_CUDA_ARCHITECTURES=90 >/dev/null
fi
cmake --build "$BUILD_DIR" -j "${MOGSERVE_JOBS:-2}" --target mogserve cuda_tests cuda_host_tests

rm -rf "$BUNDLE"
mkdir -p "$BUNDLE/bin" "$BUNDLE/lib"
BINARIES=("$BUILD_DIR/mogserve" "$BUILD_DIR/tests/engine/cuda/cuda_tests"
          "$BUILD_DIR/tests/engine/cuda/cuda_host_tests")
cp "${BINARIES[@]}" "$BUNDLE/bin/"
REV=$(git -C "$ROOT" rev-parse HEAD)
if ! git -C "$ROOT" diff --quiet HEAD --; then REV="$REV dirty"; fi
echo "$REV" >"$BUNDLE/REV"
MISSING=$(ldd "${BINARIES[@]}" | grep '=> not found' | grep -vE 'libcudnn|libcublas' || true)
if [ -n "$MISSING" ]; then
  echo "gpu_bundle: FAILED: ldd finds no file for:" >&2
  echo "$MISSING" >&2
  exit 1
fi
ldd "${BINARIES[@]}" | awk '/=> \// {print $3}' | sort -u | while read -r lib; do
  case "$(basename "$lib")" in
    libc.so.* | libm.so.* | libdl.so.* | libpthread.so.* | librt.so.* | ld-linux* | \
      libstdc++.so.* | libgcc_s.so.* | libcudnn* | libcublas* | libcudart*) ;;
    *) cp -L "$lib" "$BUNDLE/lib/" ;;
  esac
done
if [ -d "$ROOT/models/ssd_mobilenetv1" ]; then
  mkdir -p "$BUNDLE/models"
  cp -r "$ROOT/models/ssd_mobilenetv1" "$BUNDLE/models/"
else
  echo "gpu_bundle: no models/ssd_mobilenetv1 (run scripts/setup.sh): the bundle has no SSD" >&2
fi

BYTES=$(du -sb "$BUNDLE" | cut -f1)
# `|| true`: under set -e -o pipefail a grep that matches nothing would end the script silently.
GLIBCXX=$(objdump -T "$BUNDLE"/bin/* | grep -o 'GLIBCXX_[0-9.]*' | sort -uV | tail -n 1 || true)
GLIBC=$(objdump -T "$BUNDLE"/bin/* "$BUNDLE"/lib/* | grep -o 'GLIBC_[0-9.]*' | sort -uV |
  tail -n 1 || true)
echo "gpu_bundle: $BUNDLE: $((BYTES / 1024 / 1024)) MiB; needs $GLIBC, $GLIBCXX on the GPU machine"
ls -1 "$BUNDLE/lib"
if [ "$BYTES" -gt $((40 * 1024 * 1024)) ]; then
  echo "gpu_bundle: FAILED: the bundle exceeds 40 MiB" >&2
  exit 1
fi
