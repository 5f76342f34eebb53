#!/usr/bin/env python3
"""cv2.resize reference cases for tests/image/opencv_resize_test.cpp.

    python3 tests/reference/opencv_resize_cases.py OUT_DIR [PHOTO...]

Writes, per case i, OUT_DIR/case_i.json ({"width", "height", "fx", "fy", "out_width",
"out_height", "what"}), case_i.in.rgb and case_i.out.rgb (RGB bytes, row-major): the input and
cv2.resize(input, None, fx=fx, fy=fy) with the default INTER_LINEAR, as ModelScope's MogFace
pipeline calls it (specs/mogface.md §6b), or cv2.resize(input, (w, h)) as insightface's
detectors call it (fx, fy then w / width and h / height: OpenCV's own inverse scales). Inputs: seeded noise and gradients of many widths
(every tail length of OpenCV's SIMD row loop), and the given photos at ModelScope's factor
1000 / long side. Needs Debian's python3-opencv and python3-numpy.
"""

import json
import os
import sys

import cv2
import numpy as np


def write(out_dir, index, img, fx, fy, what, dsize=None):
    if dsize is None:
        res = cv2.resize(img, None, fx=fx, fy=fy)  # default: INTER_LINEAR
    else:
        res = cv2.resize(img, dsize)
        fx, fy = dsize[0] / img.shape[1], dsize[1] / img.shape[0]
    stem = os.path.join(out_dir, f"case_{index}")
    with open(stem + ".in.rgb", "wb") as f:
        f.write(np.ascontiguousarray(img).tobytes())
    with open(stem + ".out.rgb", "wb") as f:
        f.write(np.ascontiguousarray(res).tobytes())
    with open(stem + ".json", "w") as f:
        json.dump({"width": img.shape[1], "height": img.shape[0], "fx": fx, "fy": fy,
                   "out_width": res.shape[1], "out_height": res.shape[0], "what": what}, f)


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    out_dir = argv[1]
    os.makedirs(out_dir, exist_ok=True)
    rng = np.random.default_rng(7)
    cases = []
    for w in list(range(1, 41)) + [97, 333]:
        h = int(rng.integers(1, 30))
        img = rng.integers(0, 256, size=(h, w, 3), dtype=np.uint8)
        f = float(rng.uniform(0.3, 1.9))
        cases.append((img, f, float(rng.uniform(0.3, 1.9)), f"noise {w}x{h}"))
    yy, xx = np.mgrid[0:1350, 0:1800]
    grad = np.stack([(xx * 255 // 1799), (yy * 255 // 1349), ((xx + yy) % 256)], axis=2)
    grad = grad.astype(np.uint8)
    cases.append((grad, 1000 / 1800, 1000 / 1800, "gradient 1800x1350 at 1000/1800"))
    noise = rng.integers(0, 256, size=(1335, 2000, 3), dtype=np.uint8)
    cases.append((noise, 1000 / 2000, 1000 / 2000, "noise 2000x1335 at 1/2 (area path)"))
    noise = rng.integers(0, 256, size=(1501, 1123, 3), dtype=np.uint8)
    cases.append((noise, 1000 / 1501, 1000 / 1501, "noise 1123x1501 at 1000/1501"))
    for path in argv[2:]:
        bgr = cv2.imread(path, cv2.IMREAD_COLOR)
        rgb = np.ascontiguousarray(bgr[:, :, ::-1])
        s = 1000 / max(rgb.shape[:2])
        cases.append((rgb, s, s, f"{os.path.basename(path)} at 1000/long side"))
        # insightface's SCRFD.detect into 640 x 640: the other side truncated.
        h, w = rgb.shape[:2]
        size = (640, int(640 * h / w)) if h / w <= 1 else (int(640 / (h / w)), 640)
        cases.append((rgb, 0, 0, f"{os.path.basename(path)} to {size} (insightface)", size))
    noise = rng.integers(0, 256, size=(600, 512, 3), dtype=np.uint8)
    cases.append((noise, 0, 0, "noise 512x600 to (546, 640) (insightface, enlarged)", (546, 640)))
    for i, (img, fx, fy, what, *dsize) in enumerate(cases):
        write(out_dir, i, img, fx, fy, what, dsize[0] if dsize else None)
    with open(os.path.join(out_dir, "count"), "w") as f:
        f.write(str(len(cases)))
    print(f"opencv_resize_cases: {len(cases)} cases in {out_dir} (cv2 {cv2.__version__})",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
