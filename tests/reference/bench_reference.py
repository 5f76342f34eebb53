#!/usr/bin/env python3
"""Time the Python MogFace reference (mogface_ref.py) in PyTorch eager mode: the baseline that
`mogserve bench engine --model mogface --reference` compares the C++ engine against.

    python3 tests/reference/bench_reference.py WEIGHTS VARIANT --sizes 320,640
        --batch-sizes 1,2,4 --precisions fp32,bf16 --threads 2 --warmup 1 --iterations 2
        --min-seconds 0 --json OUT.json

WEIGHTS: any checkpoint mogface_ref can load (the C++ bench writes its synthetic weights as
safetensors, so both sides run the same tensors). For each (size, precision, batch), one timed
pass covers what the C++ engine's Forward covers: the spec §6a normalisation of `batch` random
uint8 RGB size x size canvases, the full network (backbone, LFPN, heads with sigmoid and the
§4e flatten/concat), outputs in FP32. The network runs as the reference is written: eager
torch.nn.functional on a state_dict, BatchNorm unfolded, NCHW (contiguous) memory format.

Precisions:
* fp32: the reference as is.
* bf16: the same code under torch.autocast("cpu", dtype=torch.bfloat16), which is how a PyTorch
  user gets BF16 on CPU without rewriting the model: convolutions run in BF16, batch_norm takes
  the BF16 activations with its FP32 parameters, the rest runs in the dtype of its input. One
  patch: torch 1.13's CPU autocast does not list group_norm, whose kernel then refuses BF16
  input with FP32 affine parameters, so group_norm gets its input in FP32 here (as the C++ engine
  keeps GroupNorm statistics in FP32) and the next convolution casts back to BF16.

Writes JSON {torch, threads, bf16_mode, rows: [{size, precision, batch, warmup, samples_ms}],
max_rss_bytes}; progress on stderr. Exit status 2 on bad arguments or weights.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import sys
import time

import numpy as np
import torch

sys.dont_write_bytecode = True  # keep __pycache__ out of the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mogface_ref as ref  # noqa: E402

BF16_MODE = ("torch.autocast(cpu, bfloat16) over the FP32 reference, group_norm input cast to "
             "FP32")
_GROUP_NORM = ref.F.group_norm


def _group_norm_fp32(x, num_groups, weight=None, bias=None, eps=1e-5):
    """F.group_norm on an FP32 input (a no-op cast outside autocast); see the docstring."""
    return _GROUP_NORM(x.float(), num_groups, weight, bias, eps)


ref.F.group_norm = _group_norm_fp32


def _int_list(text: str) -> list:
    return [int(v) for v in text.split(",") if v]


def _run_once(sd: dict, variant: str, canvases: list, precision: str):
    """One pass: normalise, stack, forward. Returns (conf, loc) in FP32."""
    x = torch.stack([ref.normalize(c) for c in canvases])
    ctx = (torch.autocast(device_type="cpu", dtype=torch.bfloat16) if precision == "bf16"
           else contextlib.nullcontext())
    with torch.no_grad(), ctx:
        c2, c3, c4, c5 = ref.backbone(x, sd, ref.BLOCKS[variant])
        conf, loc = ref.heads(ref.lfpn(c2, c3, c4, c5, sd), sd, variant)
    return conf.float(), loc.float()


def _time_row(sd, variant, canvases, precision, warmup, iterations, min_seconds):
    for _ in range(warmup):
        _run_once(sd, variant, canvases, precision)
    samples = []
    start = time.perf_counter()
    while len(samples) < iterations or time.perf_counter() - start < min_seconds:
        t0 = time.perf_counter()
        conf, loc = _run_once(sd, variant, canvases, precision)
        samples.append((time.perf_counter() - t0) * 1000.0)
        if not (torch.isfinite(conf).all() and torch.isfinite(loc).all()):
            raise RuntimeError(f"non-finite outputs ({precision}, batch {len(canvases)})")
    return samples


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("weights")
    ap.add_argument("variant", help="R101, E or R50 (checked against the weights)")
    ap.add_argument("--sizes", type=_int_list, required=True, help="square input sides")
    ap.add_argument("--batch-sizes", type=_int_list, default=[1])
    ap.add_argument("--precisions", default="fp32", help="comma list of fp32, bf16")
    ap.add_argument("--threads", type=int, default=0, help="intra-op threads (0 = torch default)")
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--iterations", type=int, default=1)
    ap.add_argument("--min-seconds", type=float, default=0.0)
    ap.add_argument("--seed", type=int, default=12345, help="of the random canvases")
    ap.add_argument("--json", required=True, help="write the results here")
    args = ap.parse_args(argv)
    precisions = [p for p in args.precisions.split(",") if p]
    if not args.sizes or not args.batch_sizes or any(p not in ("fp32", "bf16") for p in precisions):
        print("error: need --sizes, --batch-sizes and --precisions from fp32, bf16", file=sys.stderr)
        return 2
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    try:
        raw, _ = ref.load_checkpoint(args.weights)
        sd, variant = ref.prepare_state_dict(raw, args.variant)
    except (ref.CheckpointError, OSError, ValueError) as e:
        print(f"error: {args.weights}: {e}", file=sys.stderr)
        return 2
    del raw
    rng = np.random.default_rng(args.seed)
    rows = []
    for size in args.sizes:
        canvases = [rng.integers(0, 256, (size, size, 3), dtype=np.uint8)
                    for _ in range(max(args.batch_sizes))]
        for precision in precisions:
            for batch in args.batch_sizes:
                samples = _time_row(sd, variant, canvases[:batch], precision, args.warmup,
                                    args.iterations, args.min_seconds)
                mean = sum(samples) / len(samples)
                print(f"  reference {variant} {size}x{size} {precision} batch {batch}: "
                      f"{mean:9.1f} ms/batch {mean / batch:9.1f} ms/img", file=sys.stderr)
                rows.append({"size": size, "precision": precision, "batch": batch,
                             "warmup": args.warmup, "samples_ms": samples})
    report = {
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "variant": variant,
        "bf16_mode": BF16_MODE,
        "memory_format": "NCHW (contiguous), BatchNorm unfolded",
        "rows": rows,
        "max_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
    }
    with open(args.json, "w") as f:
        json.dump(report, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
