#!/usr/bin/env python3
"""Golden outputs of the MogFace reference for the C++ parity tests (project issue 3).

    python3 tests/reference/golden.py CHECKPOINT.safetensors VARIANT H W OUT.bin
        [--image-seed N] [--pad-multiple 32] [--policy modelscope|bucket] [--target-size 640]
        [--score-threshold 0.01]

Runs tests/reference/mogface_ref.py on a deterministic synthetic H x W RGB uint8 image:
pre-processing per spec §6a with the `modelscope` policy (no resize for images up to 1500 px),
padding bottom/right to multiples of --pad-multiple (32 = the project's pipeline, spec §10.1;
1 = no padding, ModelScope's own behaviour, which is what exercises the odd-size crop of
spec §3 for odd H or W).

Writes
* OUT.bin  : conf (1, S, 1) then loc (1, S, 4), float32 little-endian, C order, no header;
* OUT.json : shapes and byte offsets, the padded input size, the P2..P7 sizes, the variant,
             the image recipe, checksums, timings and the post-processed detections (spec §7,
             ModelScope column, at --score-threshold; boxes in original-image pixels);
* OUT.rgb  : the synthetic image itself, H*W*3 bytes, RGB, row-major (HWC).

The synthetic image (so C++ can regenerate it): for byte index i = (y*W + x)*3 + c,
    v = (i + seed * 0x9E3779B9) mod 2^32
    v ^= v >> 16; v = v * 0x7FEB352D mod 2^32; v ^= v >> 15; v = v * 0x846CA68B mod 2^32;
    v ^= v >> 16; pixel = v >> 24
VARIANT may be 'auto' (detected from the keys, spec §9); otherwise it must match the detection.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import time

import numpy as np
import torch

sys.dont_write_bytecode = True  # keep __pycache__ out of the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mogface_ref as ref  # noqa: E402


def synthetic_image(h: int, w: int, seed: int = 0) -> np.ndarray:
    """Deterministic uint8 RGB HWC noise image from a 32-bit integer hash (see module doc)."""
    i = np.arange(h * w * 3, dtype=np.uint64)
    v = ((i + np.uint64((seed * 0x9E3779B9) % 2**32)) % np.uint64(2**32)).astype(np.uint32)
    with np.errstate(over="ignore"):
        v ^= v >> np.uint32(16)
        v *= np.uint32(0x7FEB352D)
        v ^= v >> np.uint32(15)
        v *= np.uint32(0x846CA68B)
        v ^= v >> np.uint32(16)
    return (v >> np.uint32(24)).astype(np.uint8).reshape(h, w, 3)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("checkpoint")
    ap.add_argument("variant")
    ap.add_argument("height", type=int)
    ap.add_argument("width", type=int)
    ap.add_argument("out_bin")
    ap.add_argument("--image-seed", type=int, default=0)
    ap.add_argument("--pad-multiple", type=int, default=32)
    ap.add_argument("--policy", choices=("modelscope", "bucket"), default="modelscope")
    ap.add_argument("--target-size", type=int, default=640)
    ap.add_argument("--score-threshold", type=float, default=0.01)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)

    t_start = time.perf_counter()
    sd, fmt = ref.load_checkpoint(args.checkpoint)
    detected = ref.check_state_dict(sd)
    if args.variant.lower() != "auto" and ref.canonical_variant(args.variant) != detected:
        print(f"error: {args.checkpoint} is a {detected} checkpoint, not {args.variant}", file=sys.stderr)
        return 2
    variant = detected
    t_load = time.perf_counter() - t_start

    img = synthetic_image(args.height, args.width, args.image_seed)
    prep = ref.prepare(img, args.policy, args.target_size, args.pad_multiple)
    x = prep.tensor
    t0 = time.perf_counter()
    conf, loc, sizes = ref.forward(sd, x, variant, return_levels=True)
    t_forward = time.perf_counter() - t0
    hp, wp = int(x.shape[2]), int(x.shape[3])
    assert sizes == ref.level_sizes(hp, wp), (sizes, ref.level_sizes(hp, wp))
    anc = ref.anchors(hp, wp, variant)
    assert anc.shape[0] == conf.shape[1]

    t0 = time.perf_counter()
    boxes, scores = ref.postprocess(conf[0], loc[0], anc, prep.scale,
                                    score_threshold=args.score_threshold)
    t_post = time.perf_counter() - t0

    conf_np = conf.contiguous().numpy().astype("<f4")
    loc_np = loc.contiguous().numpy().astype("<f4")
    with open(args.out_bin, "wb") as f:
        f.write(conf_np.tobytes())
        f.write(loc_np.tobytes())
    stem = args.out_bin[:-4] if args.out_bin.endswith(".bin") else args.out_bin
    with open(stem + ".rgb", "wb") as f:
        f.write(img.tobytes())

    n = int(conf.shape[1])
    meta = {
        "variant": variant,
        "checkpoint": os.path.abspath(args.checkpoint),
        "checkpoint_format": fmt,
        "torch_version": torch.__version__,
        "threads": args.threads,
        "image": {"height": args.height, "width": args.width, "seed": args.image_seed,
                  "recipe": "lowbias32 hash, see tests/reference/golden.py",
                  "file": os.path.basename(stem + ".rgb")},
        "policy": args.policy,
        "target_size": args.target_size if args.policy == "bucket" else None,
        "resize_scale": prep.scale,
        "resized_hw": list(prep.resized_hw),
        "pad_multiple": args.pad_multiple,
        "input_shape": [1, 3, hp, wp],
        "level_sizes": [list(s) for s in sizes],
        "num_anchors": n,
        "anchor_scale": ref.ANCHOR_SCALE[variant],
        "conf": {"shape": [1, n, 1], "dtype": "float32", "offset": 0, "bytes": conf_np.nbytes,
                 "sigmoided": True},
        "loc": {"shape": [1, n, 4], "dtype": "float32", "offset": conf_np.nbytes,
                "bytes": loc_np.nbytes},
        "checksums": {
            "conf_sum": float(conf.double().sum()), "conf_min": float(conf.min()),
            "conf_max": float(conf.max()), "loc_sum": float(loc.double().sum()),
            "loc_abs_max": float(loc.abs().max()),
            "conf_first": [float(v) for v in conf.reshape(-1)[:4]],
            "loc_first": [float(v) for v in loc.reshape(-1)[:8]],
        },
        "postprocess": {"score_threshold": args.score_threshold, "top_k": 5000, "nms_iou": 0.4,
                        "nms_areas": "+1", "max_detections": 750,
                        "num_above_threshold": int((conf > args.score_threshold).sum()),
                        "num_detections": int(scores.numel())},
        "detections": {"boxes": [[float(c) for c in b] for b in boxes],
                       "scores": [float(s) for s in scores]},
        "timing_s": {"load": round(t_load, 3), "forward": round(t_forward, 3),
                     "postprocess": round(t_post, 3),
                     "total": round(time.perf_counter() - t_start, 3)},
    }
    with open(stem + ".json", "w") as f:
        json.dump(meta, f, indent=1)
    print(f"{variant} {args.height}x{args.width} -> input {hp}x{wp}, S={n}, "
          f"{scores.numel()} detections at {args.score_threshold}; forward {t_forward:.2f}s, "
          f"total {meta['timing_s']['total']:.2f}s -> {args.out_bin}, {stem}.json, {stem}.rgb")
    return 0


if __name__ == "__main__":
    sys.exit(main())
