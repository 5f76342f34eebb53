#!/usr/bin/env python3
"""ModelScope's single-image pipeline on a real photo, for the C++ modelscope-policy parity test.

    python3 tests/reference/modelscope_golden.py CHECKPOINT PHOTO OUT_STEM
        [--crop X,Y,W,H] [--score-threshold 0.5]

Decodes PHOTO with cv2.imread (BGR, flipped to RGB), optionally crops it, then runs spec §6b
exactly as ModelScope does: no padding; if the long side exceeds 1500, cv2.resize(img, None,
fx=ss, fy=ss) with ss = 1000 / long side (INTER_LINEAR); normalisation §6a; the reference network
(tests/reference/mogface_ref.py, FP32); post-processing §7 (ModelScope column: boxes divided by
ss, not clipped; scores not divided, see mogface_ref.postprocess).

Writes OUT_STEM.rgb (the decoded, cropped picture, RGB HWC) and OUT_STEM.json: the picture size,
ss, the network input size, the post-processing options and the detections in original pixels.
Needs Debian's python3-torch and python3-opencv.
"""

import argparse
import json
import os
import sys

import cv2
import numpy as np
import torch

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mogface_ref as ref  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("checkpoint")
    ap.add_argument("photo")
    ap.add_argument("out_stem")
    ap.add_argument("--crop", default="")
    ap.add_argument("--score-threshold", type=float, default=0.5)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    sd, _ = ref.load_checkpoint(args.checkpoint)
    variant = ref.check_state_dict(sd)
    rgb = np.ascontiguousarray(cv2.imread(args.photo, cv2.IMREAD_COLOR)[:, :, ::-1])
    if args.crop:
        x, y, w, h = (int(v) for v in args.crop.split(","))
        rgb = np.ascontiguousarray(rgb[y:y + h, x:x + w])
    prep = ref.prepare(rgb, "modelscope", pad_multiple=1, resize="cv2")
    conf, loc = ref.forward(sd, prep.tensor, variant)
    hp, wp = int(prep.tensor.shape[2]), int(prep.tensor.shape[3])
    boxes, scores = ref.postprocess(conf[0], loc[0], ref.anchors(hp, wp, variant), prep.scale,
                                    score_threshold=args.score_threshold)
    with open(args.out_stem + ".rgb", "wb") as f:
        f.write(rgb.tobytes())
    meta = {"variant": variant, "photo": os.path.basename(args.photo), "crop": args.crop,
            "image": {"height": int(rgb.shape[0]), "width": int(rgb.shape[1])},
            "resize_scale": prep.scale, "input_hw": [hp, wp],
            "postprocess": {"score_threshold": args.score_threshold, "top_k": 5000,
                            "nms_iou": 0.4, "max_detections": 750},
            "detections": {"boxes": [[float(c) for c in b] for b in boxes],
                           "scores": [float(s) for s in scores]}}
    with open(args.out_stem + ".json", "w") as f:
        json.dump(meta, f, indent=1)
    print(f"{variant} {args.photo} {rgb.shape[1]}x{rgb.shape[0]} -> input {wp}x{hp} "
          f"(ss {prep.scale:.6f}), {len(scores)} detections -> {args.out_stem}.json",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
