#!/usr/bin/env python3
"""Write a deterministic synthetic MogFace checkpoint with exactly the key set and shapes of
spec §9 (../shared/specs/mogface.md) for one variant.

    python3 tests/reference/make_synthetic_checkpoint.py VARIANT OUT_PREFIX [--seed N]
        [--with-dsfd-heads | --without-dsfd-heads] [--wrap state_dict|model|net]
        [--module-prefix] [--legacy]

Writes OUT_PREFIX.pt (torch.save; zip format unless --legacy) and OUT_PREFIX.safetensors
(plain keys, always unwrapped). VARIANT: R101 (ModelScope, 728 entries; 732 with
--with-dsfd-heads), E (994), R50 / Baseline / Ali-AMS / SSE (388). HCAM is refused.

Every tensor is drawn from its own generator seeded by (seed, crc32(key)), so a tensor does not
depend on which other keys are present. Initialisation keeps activations in a sane range through
100+ layers, with no real data:
* convs: He normal, std = sqrt(2 / fan_in); the loc predictors x0.2 (small deltas), the cls
  predictors x3 (scores spread over (0, 1), so thresholds such as 0.82 select a subset);
* BN: gamma ~ U(0.5, 1), beta ~ N(0, 0.05), running_mean ~ N(0, 0.05), running_var ~ U(0.5, 1.5);
  the last BN of every residual branch (bn3) has gamma ~ U(0.1, 0.3) so that the residual sums
  do not grow exponentially with depth; backbone.bn1 gets running statistics scaled to the tiny
  stem output that the extra /255 of spec §6a produces (running_var ~ U(0.5,1.5) x 5e-5, i.e.
  close to the BN eps, as spec §10.5 warns the real checkpoint may be);
* conv biases ~ N(0, 0.02); GN gamma ~ U(0.5, 1), beta ~ N(0, 0.05);
* num_batches_tracked: int64 scalar 140000.
"""

from __future__ import annotations

import argparse
import math
import os
import sys

import zlib
from collections import OrderedDict

import torch

sys.dont_write_bytecode = True  # keep __pycache__ out of the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
from mogface_checkpoint import (  # noqa: E402
    CheckpointError,
    canonical_variant,
    expected_shapes,
    write_safetensors,
)

STEM_OUTPUT_VAR = 5e-5  # ~ 2 * E[x^2] with |x| ~ 0.005 after the /255 of spec §6a


def _init_tensor(key: str, shape: tuple, dtype: str, gen: torch.Generator) -> torch.Tensor:
    if dtype == "int64":
        return torch.tensor(140000, dtype=torch.int64)
    if len(shape) == 4:  # conv weight
        fan_in = shape[1] * shape[2] * shape[3]
        std = math.sqrt(2.0 / fan_in)
        if key.startswith(("pred_net.pred_loc", "pred_net.dsfd_loc")):
            std *= 0.2
        elif key.startswith(("pred_net.pred_cls", "pred_net.dsfd_conf")):
            std *= 3.0
        return torch.randn(shape, generator=gen) * std
    n = shape[0]
    if key.endswith(".running_var"):
        v = torch.rand(n, generator=gen) + 0.5
        return v * STEM_OUTPUT_VAR if key == "backbone.bn1.running_var" else v
    if key.endswith(".running_mean"):
        std = math.sqrt(STEM_OUTPUT_VAR) * 0.1 if key.startswith("backbone.bn1.") else 0.05
        return torch.randn(n, generator=gen) * std
    is_norm = ".bn" in key or ".gn" in key or ".downsample.1." in key or key.startswith(
        ("fpn.c6.1.", "fpn.c6.4.", "fpn.c7.1.", "fpn.c7.4."))
    if is_norm and key.endswith(".weight"):
        if key.endswith(".bn3.weight"):
            return torch.rand(n, generator=gen) * 0.2 + 0.1
        return torch.rand(n, generator=gen) * 0.5 + 0.5
    if is_norm and key.endswith(".bias"):
        return torch.randn(n, generator=gen) * 0.05
    if key.endswith(".bias"):  # conv bias
        return torch.randn(n, generator=gen) * 0.02
    raise AssertionError(f"no init rule for {key} {shape}")


def synthetic_state_dict(variant: str, seed: int = 0, with_dsfd_heads: bool | None = None):
    """Deterministic state_dict with exactly the spec §9 keys/shapes of `variant`."""
    sd = OrderedDict()
    for key, (shape, dtype) in expected_shapes(variant, with_dsfd_heads).items():
        gen = torch.Generator().manual_seed((seed * 1_000_003 + zlib.crc32(key.encode())) % (2**63))
        t = _init_tensor(key, shape, dtype, gen)
        assert tuple(t.shape) == tuple(shape), key
        sd[key] = t.to(torch.float32) if dtype == "float32" else t
    return sd


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("variant")
    ap.add_argument("out_prefix")
    ap.add_argument("--seed", type=int, default=0)
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--with-dsfd-heads", dest="dsfd", action="store_true", default=None,
                   help="add pred_net.dsfd_{conf,loc} (original training checkpoint; R101 -> 732)")
    g.add_argument("--without-dsfd-heads", dest="dsfd", action="store_false",
                   help="drop pred_net.dsfd_{conf,loc} (E only; E carries them by default)")
    ap.add_argument("--wrap", choices=("state_dict", "model", "net"),
                    help="save {WRAP: state_dict, 'iteration': 140000} instead of a plain state_dict")
    ap.add_argument("--module-prefix", action="store_true", help="prefix keys in the .pt with 'module.'")
    ap.add_argument("--legacy", action="store_true",
                    help="write the .pt as a legacy (pre-zip) pickle, _use_new_zipfile_serialization=False")
    args = ap.parse_args(argv)
    try:
        variant = canonical_variant(args.variant)
    except CheckpointError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if variant == "R50" and args.dsfd:
        print("error: R50 checkpoints have no DSFD heads (spec §9)", file=sys.stderr)
        return 2
    sd = synthetic_state_dict(variant, args.seed, args.dsfd)
    out_dir = os.path.dirname(os.path.abspath(args.out_prefix))
    os.makedirs(out_dir, exist_ok=True)

    pt_sd = OrderedDict((("module." + k) if args.module_prefix else k, v) for k, v in sd.items())
    obj = {args.wrap: pt_sd, "iteration": 140000} if args.wrap else pt_sd
    torch.save(obj, args.out_prefix + ".pt", _use_new_zipfile_serialization=not args.legacy)
    write_safetensors(args.out_prefix + ".safetensors", sd,
                      metadata={"format": "pt", "variant": variant, "seed": args.seed,
                                "synthetic": "tests/reference/make_synthetic_checkpoint.py"})
    n_params = sum(t.numel() for t in sd.values() if t.dtype == torch.float32)
    print(f"{variant}: {len(sd)} entries, {n_params} float values -> {args.out_prefix}.pt "
          f"({'legacy pickle' if args.legacy else 'zip'}"
          f"{', wrapped under ' + args.wrap if args.wrap else ''}"
          f"{', module. prefix' if args.module_prefix else ''}) and {args.out_prefix}.safetensors")
    return 0


if __name__ == "__main__":
    sys.exit(main())
