#!/usr/bin/env bash
# Builds libfacedetection (YuNet) from its source with OpenMP, for this CPU's best x86 ISA it
# supports (AVX-512 when the CPU has avx512bw, else AVX2 + FMA, else plain C++), then
# tools/peers/yunet_driver.cpp against it, and prints the driver's path (last line of stdout;
# build logs go to stderr). libfacedetection is a benchmark peer, not a dependency of mogserve.
#
# Usage: tools/peers/build_yunet_driver.sh LIBFACEDETECTION_SRC_DIR OUT_DIR
#   LIBFACEDETECTION_SRC_DIR  a checkout or export of github.com/ShiqiYu/libfacedetection
#   OUT_DIR                   where the driver goes (OUT_DIR/yunet_driver)
# Environment:
#   YUNET_ISA=avx512|avx2|none   override the ISA chosen from /proc/cpuinfo
#   LFD_BUILD_DIR                libfacedetection's CMake build folder
#                                (default OUT_DIR/libfacedetection-build-ISA)
#   JOBS                         parallel compile jobs (default: nproc)
#   CXX                          C++ compiler (default g++); OpenMP is required
# Needs: cmake, a C++17 compiler with OpenMP, libturbojpeg0-dev, libpng-dev.
set -euo pipefail

if [ $# -ne 2 ]; then
  echo "usage: $0 LIBFACEDETECTION_SRC_DIR OUT_DIR" >&2
  exit 2
fi
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
SRC="$(cd "$1" && pwd)"
mkdir -p "$2"
OUT="$(cd "$2" && pwd)"
CXX="${CXX:-g++}"
JOBS="${JOBS:-$(nproc)}"

if [ ! -f "$SRC/src/facedetectcnn.h" ] || [ ! -f "$SRC/CMakeLists.txt" ]; then
  echo "$SRC does not look like libfacedetection's source (no src/facedetectcnn.h)" >&2
  exit 1
fi

ISA="${YUNET_ISA:-}"
if [ -z "$ISA" ]; then
  if grep -qw avx512bw /proc/cpuinfo; then
    ISA=avx512
  elif grep -qw avx2 /proc/cpuinfo && grep -qw fma /proc/cpuinfo; then
    ISA=avx2
  else
    ISA=none
  fi
fi
# libfacedetection refuses AVX2 and AVX-512 together (#error in facedetectcnn.h), and its
# header's layout constants depend on the choice: the driver is compiled with the same define.
case "$ISA" in
  avx512) CMAKE_ISA=(-DENABLE_AVX512=ON -DENABLE_AVX2=OFF); ISA_FLAGS=(-D_ENABLE_AVX512 -mavx512bw) ;;
  avx2) CMAKE_ISA=(-DENABLE_AVX512=OFF -DENABLE_AVX2=ON); ISA_FLAGS=(-D_ENABLE_AVX2 -mavx2 -mfma) ;;
  none) CMAKE_ISA=(-DENABLE_AVX512=OFF -DENABLE_AVX2=OFF); ISA_FLAGS=() ;;
  *) echo "YUNET_ISA must be avx512, avx2 or none, not '$ISA'" >&2; exit 2 ;;
esac
BUILD="${LFD_BUILD_DIR:-$OUT/libfacedetection-build-$ISA}"
COMMIT="an export, commit unknown"
if [ "$(git -C "$SRC" rev-parse --show-toplevel 2>/dev/null)" = "$SRC" ]; then
  COMMIT="commit $(git -C "$SRC" rev-parse HEAD)"
fi
echo "libfacedetection: $SRC ($COMMIT), ISA $ISA, build $BUILD" >&2

CXX="$CXX" cmake -S "$SRC" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF \
  "${CMAKE_ISA[@]}" -DENABLE_NEON=OFF -DUSE_OPENMP=ON -DDEMO=OFF >&2
grep -q '^OpenMP_CXX_FLAGS:STRING=.\+' "$BUILD/CMakeCache.txt" || {
  echo "CMake found no OpenMP for $CXX: libfacedetection would run single-threaded" >&2
  exit 1
}
cmake --build "$BUILD" -j "$JOBS" >&2
LIB="$BUILD/libfacedetection.a"
[ -f "$LIB" ] || { echo "no $LIB after the build" >&2; exit 1; }

libs() {  # pkg-config's flags for a library, or the plain -l flag
  pkg-config --libs "$1" 2>/dev/null || echo "$2"
}
cflags() { pkg-config --cflags "$1" 2>/dev/null || true; }
# shellcheck disable=SC2046
"$CXX" -std=c++17 -O2 -fopenmp "${ISA_FLAGS[@]}" -Wall -Wextra \
  -I"$SRC/src" -I"$BUILD" $(cflags libturbojpeg) $(cflags libpng) \
  "$HERE/yunet_driver.cpp" -o "$OUT/yunet_driver.tmp" \
  "$LIB" $(libs libturbojpeg -lturbojpeg) $(libs libpng -lpng) >&2
mv "$OUT/yunet_driver.tmp" "$OUT/yunet_driver"
echo "$OUT/yunet_driver"
