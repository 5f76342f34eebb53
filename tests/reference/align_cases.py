#!/usr/bin/env python3
"""insightface's face alignment, reproduced for tests/image/align_test.cpp.

    python3 tests/reference/align_cases.py OUT_DIR PHOTO

insightface python-package/insightface/utils/face_align.py: estimate_norm(lmk, image_size) takes
skimage's SimilarityTransform().estimate(lmk, dst) (Umeyama 1991 with the SVD, scale on) with dst
= arcface_dst scaled to the size (x size/112, or x size/128 and shifted 8*size/128 right), and
norm_crop warps with cv2.warpAffine(img, M, (size, size), borderValue=0.0) (INTER_LINEAR).
skimage is not installable here beside the project's Boost (it needs python3-scipy), so
_umeyama is written out below from the paper, as skimage has it.

Writes OUT_DIR/in.rgb (the photo decoded by cv2, RGB bytes), OUT_DIR/cases.json ({"width",
"height", "cases": [{"points": [[x, y] x 5], "size", "file"}]}; points are OpenCV pixel indices)
and each case's crop as RGB bytes. Needs Debian's python3-opencv and python3-numpy.
"""

import json
import os
import sys

import cv2
import numpy as np

ARCFACE_DST = np.array([[38.2946, 51.6963], [73.5318, 51.5014], [56.0252, 71.7366],
                        [41.5493, 92.3655], [70.7299, 92.2041]], dtype=np.float32)


def umeyama(src, dst):
    """The similarity (3x3 homogeneous) minimising |dst - T(src)|^2 (Umeyama 1991, eq. 40-43)."""
    num, dim = src.shape
    src_mean, dst_mean = src.mean(0), dst.mean(0)
    src_c, dst_c = src - src_mean, dst - dst_mean
    A = dst_c.T @ src_c / num
    d = np.ones((dim,), dtype=np.float64)
    if np.linalg.det(A) < 0:
        d[dim - 1] = -1
    T = np.eye(dim + 1, dtype=np.float64)
    U, S, V = np.linalg.svd(A)
    rank = np.linalg.matrix_rank(A)
    if rank == dim - 1 and np.linalg.det(U) * np.linalg.det(V) <= 0:
        T[:dim, :dim] = U @ V
    else:
        T[:dim, :dim] = U @ np.diag(d) @ V
    scale = 1.0 / src_c.var(axis=0).sum() * (S @ d)
    T[:dim, dim] = dst_mean - scale * (T[:dim, :dim] @ src_mean.T)
    T[:dim, :dim] *= scale
    return T


def estimate_norm(lmk, image_size):
    assert image_size % 112 == 0 or image_size % 128 == 0
    if image_size % 112 == 0:
        ratio, diff_x = image_size / 112.0, 0
    else:
        ratio = image_size / 128.0
        diff_x = 8.0 * ratio
    dst = ARCFACE_DST * ratio
    dst[:, 0] += diff_x
    return umeyama(lmk.astype(np.float64), dst.astype(np.float64))[0:2, :]


def main(argv):
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    out_dir, photo = argv[1:]
    os.makedirs(out_dir, exist_ok=True)
    rgb = np.ascontiguousarray(cv2.imread(photo, cv2.IMREAD_COLOR)[:, :, ::-1])
    with open(os.path.join(out_dir, "in.rgb"), "wb") as f:
        f.write(rgb.tobytes())
    h, w = rgb.shape[:2]
    # A face's five points, then the same rotated by 25 degrees and by -40 about their centre and
    # scaled, and one near the border (the crop reaches outside the picture).
    base = np.array([[204, 102], [246, 103], [224, 126], [203.5, 140], [245, 140]], np.float64)
    centre = base.mean(0)
    sets = [base]
    for angle, scale in ((25, 1.0), (-40, 1.6)):
        t = np.deg2rad(angle)
        R = np.array([[np.cos(t), -np.sin(t)], [np.sin(t), np.cos(t)]]) * scale
        sets.append((base - centre) @ R.T + centre)
    sets.append(base - base.min(0) + [3, 2])
    cases = []
    for i, pts in enumerate(sets):
        for size in (112, 128, 224):
            M = estimate_norm(pts, size)
            crop = cv2.warpAffine(rgb, M, (size, size), borderValue=0.0)
            name = f"case_{i}_{size}.rgb"
            with open(os.path.join(out_dir, name), "wb") as f:
                f.write(np.ascontiguousarray(crop).tobytes())
            cases.append({"points": pts.tolist(), "size": size, "file": name})
    with open(os.path.join(out_dir, "cases.json"), "w") as f:
        json.dump({"width": w, "height": h, "cases": cases}, f)
    print(f"align_cases: {len(cases)} crops of {photo} -> {out_dir}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
