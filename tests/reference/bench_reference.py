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

On `--device cuda` (the GPU machine's PyTorch: the baseline the CUDA backend must beat), a PyTorch
user's best eager setup: the state_dict moved to the GPU in the precision's dtype (fp16/bf16:
every floating tensor cast, as model.half() would), activations channels-last
(`--channels-last`), cuDNN benchmark mode on, TF32 only for tf32; a timed pass copies the uint8
canvases from pinned memory, normalises on the GPU and ends with torch.cuda.synchronize().

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


_CUDA_DTYPES = {"fp32": torch.float32, "tf32": torch.float32, "fp16": torch.float16,
                "bf16": torch.bfloat16}


def _run_once_cuda(sd: dict, variant: str, pinned: torch.Tensor, precision: str,
                   channels_last: bool):
    """One GPU pass over the pinned uint8 [N, H, W, 3] canvases; synchronised at the end."""
    dev = pinned.to("cuda", non_blocking=True).float()
    mean = torch.tensor(ref.MEAN_RGB, device="cuda")
    std = torch.tensor(ref.STD_RGB, device="cuda")
    x = ((dev - mean) / std / 255.0).permute(0, 3, 1, 2).to(_CUDA_DTYPES[precision])
    x = x.contiguous(memory_format=torch.channels_last if channels_last else torch.contiguous_format)
    with torch.no_grad():
        c2, c3, c4, c5 = ref.backbone(x, sd, ref.BLOCKS[variant])
        conf, loc = ref.heads(ref.lfpn(c2, c3, c4, c5, sd), sd, variant)
    conf, loc = conf.float().cpu(), loc.float().cpu()
    torch.cuda.synchronize()
    return conf, loc


def _run_once(sd: dict, variant: str, canvases: list, precision: str):
    """One pass: normalise, stack, forward. Returns (conf, loc) in FP32."""
    x = torch.stack([ref.normalize(c) for c in canvases])
    ctx = (torch.autocast(device_type="cpu", dtype=torch.bfloat16) if precision == "bf16"
           else contextlib.nullcontext())
    with torch.no_grad(), ctx:
        c2, c3, c4, c5 = ref.backbone(x, sd, ref.BLOCKS[variant])
        conf, loc = ref.heads(ref.lfpn(c2, c3, c4, c5, sd), sd, variant)
    return conf.float(), loc.float()


def _time_row(run, warmup, iterations, min_seconds, precision, batch):
    for _ in range(warmup):
        run()
    samples = []
    start = time.perf_counter()
    while len(samples) < iterations or time.perf_counter() - start < min_seconds:
        t0 = time.perf_counter()
        conf, loc = run()
        samples.append((time.perf_counter() - t0) * 1000.0)
        if not (torch.isfinite(conf).all() and torch.isfinite(loc).all()):
            raise RuntimeError(f"non-finite outputs ({precision}, batch {batch})")
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
    ap.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    ap.add_argument("--channels-last", action="store_true", help="cuda: NHWC activations")
    args = ap.parse_args(argv)
    precisions = [p for p in args.precisions.split(",") if p]
    allowed = ("fp32", "bf16") if args.device == "cpu" else tuple(_CUDA_DTYPES)
    if not args.sizes or not args.batch_sizes or any(p not in allowed for p in precisions):
        print(f"error: need --sizes, --batch-sizes and --precisions from {', '.join(allowed)}",
              file=sys.stderr)
        return 2
    if args.device == "cuda" and not torch.cuda.is_available():
        print("error: --device cuda: this PyTorch sees no CUDA device", file=sys.stderr)
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
    if args.device == "cuda":
        torch.backends.cudnn.benchmark = True
    for size in args.sizes:
        canvases = [rng.integers(0, 256, (size, size, 3), dtype=np.uint8)
                    for _ in range(max(args.batch_sizes))]
        for precision in precisions:
            if args.device == "cuda":
                tf32 = precision == "tf32"
                torch.backends.cudnn.allow_tf32 = tf32
                torch.backends.cuda.matmul.allow_tf32 = tf32
                dtype = _CUDA_DTYPES[precision]
                dsd = {k: (v.to("cuda", dtype) if v.is_floating_point() else v.to("cuda"))
                       for k, v in sd.items()}
            for batch in args.batch_sizes:
                if args.device == "cuda":
                    pinned = torch.from_numpy(np.stack(canvases[:batch])).pin_memory()
                    run = (lambda dsd=dsd, pinned=pinned, precision=precision:
                           _run_once_cuda(dsd, variant, pinned, precision, args.channels_last))
                else:
                    run = (lambda batch=batch, precision=precision:
                           _run_once(sd, variant, canvases[:batch], precision))
                samples = _time_row(run, args.warmup, args.iterations, args.min_seconds,
                                    precision, batch)
                mean = sum(samples) / len(samples)
                print(f"  reference {variant} {size}x{size} {precision} batch {batch}: "
                      f"{mean:9.1f} ms/batch {mean / batch:9.1f} ms/img", file=sys.stderr)
                rows.append({"size": size, "precision": precision, "batch": batch,
                             "warmup": args.warmup, "samples_ms": samples})
    report = {
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "gpu": torch.cuda.get_device_name(0) if args.device == "cuda" else "",
        "variant": variant,
        "bf16_mode": BF16_MODE,
        "device": args.device,
        "memory_format": ("channels-last" if args.channels_last and args.device == "cuda"
                          else "NCHW (contiguous)") + ", BatchNorm unfolded",
        "rows": rows,
        "max_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
    }
    with open(args.json, "w") as f:
        json.dump(report, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
