#!/usr/bin/env bash
# The installed package, tested as a user would use it: installs a build (default build/, which
# must be built) into a temporary prefix, checks the layout, the exported symbols and that the
# headers need nothing but the C++ standard library, builds examples/detect_faces OUT OF TREE
# against the prefix twice (CMake find_package, and one c++ line with pkg-config), runs both on
# tests/data/photos and checks that their output is byte for byte `mogserve detect`'s, a missing
# file included (its error line, exit code 1), and that no arguments is exit code 2.
#   scripts/test_package.sh [BUILD_DIR]
# Registered as the ctest test `package_example` (labels e2e, package); scripts/test.sh runs it
# after the Release build's tests. Needs the SSD model (scripts/setup.sh) and a LibTorch build.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="$(cd "${1:-$ROOT/build}" && pwd)"
PHOTOS="$ROOT/tests/data/photos"

fail() {
  echo "test_package: FAILED: $*" >&2
  exit 1
}

for f in "$BUILD_DIR/mogserve" "$BUILD_DIR/libmogserve.so"; do
  [ -e "$f" ] || fail "$f is missing: build $BUILD_DIR first (cmake --build $BUILD_DIR)"
done

WORK="$(mktemp -d "${TMPDIR:-/tmp}/mogserve-package.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
PREFIX="$WORK/prefix"

echo "test_package: cmake --install $BUILD_DIR --prefix $PREFIX"
cmake --install "$BUILD_DIR" --prefix "$PREFIX" >"$WORK/install.log" ||
  { cat "$WORK/install.log" >&2; fail "cmake --install failed"; }

# 1. The layout.
for f in bin/mogserve lib/libmogserve.so lib/libmogserve.so.0 \
         include/mogserve/mogserve.h include/mogserve/detector.h include/mogserve/options.h \
         include/mogserve/result.h \
         include/mogserve/status.h lib/cmake/mogserve/mogserveConfig.cmake \
         lib/cmake/mogserve/mogserveConfigVersion.cmake lib/cmake/mogserve/mogserveTargets.cmake \
         lib/pkgconfig/mogserve.pc share/mogserve/models/ssd_mobilenetv1/ssd_mobilenetv1_model.bin; do
  [ -e "$PREFIX/$f" ] || fail "the install has no $f"
done
soname="$(readelf -d "$PREFIX/lib/libmogserve.so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')"
[ "$soname" = "libmogserve.so.0" ] || fail "SONAME is '$soname', not libmogserve.so.0"

# 2. Only the public API is exported (cmake/libmogserve.map): every defined dynamic symbol is a
#    function of include/mogserve/.
nm -D --defined-only -C "$PREFIX/lib/libmogserve.so" | awk '$2 != "A"' | cut -d' ' -f3- \
  >"$WORK/exports.txt"
if grep -vE '^mogserve::(StatusCodeName|Status::|IoU|Detector::(Open|Detect|~Detector|Shutdown|info|stats)|FormatJsonLine|AlignFace|Anonymize)' \
    "$WORK/exports.txt" >"$WORK/unexpected.txt"; then
  head -n 20 "$WORK/unexpected.txt" >&2
  fail "libmogserve.so exports $(wc -l <"$WORK/unexpected.txt") symbols outside the public API"
fi
for want in 'mogserve::Detector::Open' 'mogserve::FormatJsonLine' 'mogserve::Status::ToString' \
    'mogserve::AlignFace' 'mogserve::Anonymize'; do
  grep -qF "$want" "$WORK/exports.txt" || fail "libmogserve.so does not export $want"
done
if ldd "$PREFIX/lib/libmogserve.so" | grep -F 'not found'; then
  fail "libmogserve.so needs shared libraries that do not resolve"
fi

# 3. mogserve::mogserve's interface is include/ alone: no src/, no LibTorch, spdlog, ... to link.
TARGETS_FILE="$PREFIX/lib/cmake/mogserve/mogserveTargets.cmake"
includes="$(sed -n 's/.*INTERFACE_INCLUDE_DIRECTORIES "\(.*\)"/\1/p' "$TARGETS_FILE")"
# shellcheck disable=SC2016  # ${_IMPORT_PREFIX} is CMake's, literally
[ "$includes" = '${_IMPORT_PREFIX}/include' ] ||
  fail "mogserve::mogserve's include directories are '$includes', not \${_IMPORT_PREFIX}/include"
if grep -n 'INTERFACE_LINK_LIBRARIES' "$TARGETS_FILE" >&2; then
  fail "mogserve::mogserve passes link dependencies on to its users ($TARGETS_FILE)"
fi

# The installed headers include only the standard library and each other.
if grep -hE '^\s*#\s*include' "$PREFIX"/include/mogserve/*.h |
    grep -vE '#\s*include\s*(<[a-z_]+>|"mogserve/[a-z_]+\.h")' >"$WORK/includes.txt"; then
  cat "$WORK/includes.txt" >&2
  fail "an installed header includes something outside the standard library and mogserve/"
fi

# 4. The example, out of tree: its own copy, its own build folder, only the prefix known.
cp -r "$ROOT/examples/detect_faces" "$WORK/src"
GENERATOR=()
if command -v ninja >/dev/null; then GENERATOR=(-G Ninja); fi
echo "test_package: building examples/detect_faces with find_package(mogserve)"
cmake -S "$WORK/src" -B "$WORK/build-cmake" "${GENERATOR[@]}" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$PREFIX" >"$WORK/configure.log" ||
  { cat "$WORK/configure.log" >&2; fail "configuring the example against the package failed"; }
cmake --build "$WORK/build-cmake" >"$WORK/build.log" ||
  { cat "$WORK/build.log" >&2; fail "building the example with CMake failed"; }
echo "test_package: building examples/detect_faces with pkg-config"
export PKG_CONFIG_PATH="$PREFIX/lib/pkgconfig"
# shellcheck disable=SC2046  # pkg-config's flags are meant to be split
c++ -std=c++20 -O2 "$WORK/src/main.cpp" -o "$WORK/detect_faces_pc" \
  $(pkg-config --cflags --libs mogserve) || fail "building the example with pkg-config failed"

# 5. Run both from an empty folder with no $MOGSERVE_MODEL_DIR: the detector must find the model
#    installed next to the library. `mogserve detect` is told the same folder.
RUN="$WORK/run"
mkdir -p "$RUN"
unset MOGSERVE_MODEL_DIR
mapfile -t IMAGES < <(find "$PHOTOS" -maxdepth 1 -type f \( -name '*.jpg' -o -name '*.png' \) | sort)
[ "${#IMAGES[@]}" -gt 0 ] || fail "no photos in $PHOTOS"
MISSING="$WORK/no-such-photo.jpg"
DETECT=("$PREFIX/bin/mogserve" detect -q --model-dir "$PREFIX/share/mogserve/models/ssd_mobilenetv1")

# Runs "$@" in $RUN; its stdout into $1.out, stderr into $1.err, exit code into $1.rc.
run_case() {
  local name="$1"
  shift
  local rc=0
  (cd "$RUN" && "$@" >"$WORK/$name.out" 2>"$WORK/$name.err") || rc=$?
  echo "$rc" >"$WORK/$name.rc"
}
same_as_detect() {
  local name="$1" what="$2"
  if ! cmp -s "$WORK/detect.$what.out" "$WORK/$name.$what.out"; then
    { diff "$WORK/detect.$what.out" "$WORK/$name.$what.out" || true; } | head -n 20 >&2
    fail "$name's output on $what differs from mogserve detect's (diff above: < detect, > $name)"
  fi
  if ! cmp -s "$WORK/detect.$what.rc" "$WORK/$name.$what.rc"; then
    fail "$name exits $(cat "$WORK/$name.$what.rc") on $what, mogserve detect $(cat "$WORK/detect.$what.rc")"
  fi
}

run_case detect.photos "${DETECT[@]}" "${IMAGES[@]}"
run_case detect.missing "${DETECT[@]}" "${IMAGES[0]}" "$MISSING" "${IMAGES[1]}"
[ "$(cat "$WORK/detect.photos.rc")" = 0 ] || { cat "$WORK/detect.photos.err" >&2; fail "mogserve detect failed on the photos"; }
[ "$(wc -l <"$WORK/detect.photos.out")" -eq "${#IMAGES[@]}" ] || fail "mogserve detect printed $(wc -l <"$WORK/detect.photos.out") lines for ${#IMAGES[@]} photos"
grep -q '"score"' "$WORK/detect.photos.out" || fail "mogserve detect found no face in the photos"

for example in cmake pc; do
  if [ "$example" = cmake ]; then
    BIN=("$WORK/build-cmake/detect_faces")
  else
    BIN=(env LD_LIBRARY_PATH="$PREFIX/lib" "$WORK/detect_faces_pc")
  fi
  run_case "$example.photos" "${BIN[@]}" "${IMAGES[@]}"
  [ "$(cat "$WORK/$example.photos.rc")" = 0 ] || { cat "$WORK/$example.photos.err" >&2; fail "detect_faces ($example) failed on the photos"; }
  same_as_detect "$example" photos
  run_case "$example.missing" "${BIN[@]}" "${IMAGES[0]}" "$MISSING" "${IMAGES[1]}"
  same_as_detect "$example" missing
  grep -qF "error: $MISSING: no such file: $MISSING" "$WORK/$example.missing.err" ||
    { cat "$WORK/$example.missing.err" >&2; fail "detect_faces ($example) wrote no clear error for the missing file"; }
  run_case "$example.usage" "${BIN[@]}"
  [ "$(cat "$WORK/$example.usage.rc")" = 2 ] || fail "detect_faces ($example) without arguments exits $(cat "$WORK/$example.usage.rc"), not 2"
  grep -q '^usage:' "$WORK/$example.usage.err" || fail "detect_faces ($example) without arguments prints no usage"
  echo "test_package: detect_faces ($example): ${#IMAGES[@]} photos and a missing file, same output as mogserve detect"
done
echo "test_package: OK ($(wc -l <"$WORK/exports.txt") exported symbols, all public API)"
