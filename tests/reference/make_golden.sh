#!/usr/bin/env bash
# Writes the synthetic checkpoints and golden outputs the C++ parity tests compare against
# (tests/parity/): for each variant, a seeded checkpoint (.pt and .safetensors) and the Python
# reference's conf/loc at an even size padded to 32 and at an odd size without padding (the
# odd-size crop of spec §3), ModelScope's pipeline on two real photos, and the SSD's FP64
# reference (ssd_ref.py) and the landmark net's (landmark68_ref.py) on a real photo. Usage: make_golden.sh
# OUT_DIR. Needs Debian's python3-torch and python3-opencv.
set -euo pipefail
OUT="${1:?usage: make_golden.sh OUT_DIR}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# Debian's interpreter: it is the one python3-torch installs into, whatever python3 is on PATH.
PY=/usr/bin/python3
"$PY" -c "import torch" 2>/dev/null ||
  { echo "make_golden: $PY cannot import torch; run scripts/setup.sh (python3-torch)" >&2; exit 1; }
mkdir -p "$OUT"
for variant in R101 E R50; do
  "$PY" "$HERE/make_synthetic_checkpoint.py" "$variant" "$OUT/$variant" --seed 7
  "$PY" "$HERE/golden.py" "$OUT/$variant.safetensors" "$variant" 64 96 "$OUT/${variant}_64x96.bin" \
    --threads 2 >/dev/null
  "$PY" "$HERE/golden.py" "$OUT/$variant.safetensors" "$variant" 65 97 \
    "$OUT/${variant}_65x97_nopad.bin" --pad-multiple 1 --threads 2 >/dev/null
done
# --input-policy modelscope on real photos: an odd-sized crop (no resize) and a photo over 1500 px
# (cv2.resize to 1000 on the long side), through ModelScope's own steps.
"$PY" "$HERE/modelscope_golden.py" "$OUT/R50.safetensors" "$HERE/../data/photos/grace_hopper.jpg" \
  "$OUT/modelscope_odd" --crop 3,1,503,597
"$PY" "$HERE/modelscope_golden.py" "$OUT/R50.safetensors" "$HERE/../data/photos/sample1.jpg" \
  "$OUT/modelscope_resized"
# The SSD's independent FP64 reference on the top-left 512x512 of a real photo.
"$PY" "$HERE/ssd_ref.py" "$HERE/../../models/ssd_mobilenetv1" \
  "$HERE/../data/photos/grace_hopper.jpg" "$OUT/ssd_grace_hopper"
# face-api's 68-point landmark net (landmark68_ref.py) on a real face, its hand-checked box.
"$PY" "$HERE/landmark68_ref.py" "$HERE/../../models/face_landmark_68" \
  "$HERE/../data/photos/grace_hopper.jpg" 168,123,353,328 "$OUT/landmark68_grace_hopper"
# The zip reader on a real-size checkpoint saved the way training code saves it.
"$PY" "$HERE/make_synthetic_checkpoint.py" R50 "$OUT/R50_wrapped" --seed 7 --wrap net --module-prefix
echo "make_golden: wrote $OUT" >&2
