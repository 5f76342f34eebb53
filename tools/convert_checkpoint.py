#!/usr/bin/env python3
"""Convert a MogFace PyTorch checkpoint to safetensors for mogserve.

    python3 tools/convert_checkpoint.py IN OUT.safetensors [--allow-unsafe-pickle] [--no-check]

IN may be a torch.save zip file (.pt/.pth, PyTorch >= 1.6), a legacy pre-zip pickle (what the
torch 1.5 training code wrote), or safetensors; the state_dict may be plain or wrapped under
`state_dict` / `model` / `net`, with or without the DataParallel `module.` prefix. OUT gets the
plain keys (spec §9 of ../shared/specs/mogface.md) and the original dtypes. The variant is
detected from the keys and shapes and printed with the entry count. HCAM and unknown key sets
are refused. Needs only PyTorch.

Files are unpickled with torch.load(weights_only=True); --allow-unsafe-pickle permits a full
unpickle (only for files you trust, e.g. a checkpoint that pickled the whole nn.Module).
"""

from __future__ import annotations

import argparse
import os
import sys


sys.dont_write_bytecode = True  # keep __pycache__ out of the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mogface_checkpoint import (  # noqa: E402
    CheckpointError,
    UnsupportedVariant,
    check_state_dict,
    detect_variant,
    is_unused_key,
    load_checkpoint,
    write_safetensors,
)

FORMAT_NAMES = {"zip": "PyTorch zip", "legacy": "legacy PyTorch pickle", "safetensors": "safetensors"}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("input")
    ap.add_argument("output")
    ap.add_argument("--allow-unsafe-pickle", action="store_true")
    ap.add_argument("--no-check", action="store_true",
                    help="skip the strict key/shape check (the variant must still be detected)")
    args = ap.parse_args(argv)
    try:
        sd, fmt = load_checkpoint(args.input, allow_unsafe_pickle=args.allow_unsafe_pickle)
        variant = detect_variant(sd)
        if not args.no_check:
            check_state_dict(sd, variant)
    except UnsupportedVariant as e:
        print(f"error: {args.input}: {e}", file=sys.stderr)
        return 3
    except CheckpointError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"error: {args.input}: {e}", file=sys.stderr)
        return 2
    write_safetensors(args.output, sd, metadata={"format": "pt", "variant": variant,
                                                 "source": os.path.basename(args.input)})
    unused = sum(1 for k in sd if is_unused_key(k))
    print(f"{args.input} ({FORMAT_NAMES.get(fmt, fmt)}): MogFace {variant}, {len(sd)} entries "
          f"({len(sd) - unused} used, {unused} unused: DSFD / deep-head conv2-4 / "
          f"num_batches_tracked) -> {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
