"""What the family reference scripts (scrfd_ref.py, yunet_ref.py) share: running an ONNX file with
ONNX Runtime (npm onnxruntime-node through tests/onnx/ort_run.js, in place of each upstream's
Python session) and their command line. Needs Debian's python3-opencv and python3-numpy, and node.
"""

import json
import os
import subprocess
import sys
import tempfile

import cv2
import numpy as np

sys.dont_write_bytecode = True


def run_ort(model, blob, modules):
    """The file's outputs for an NCHW float blob, by name, in the file's output order."""
    with tempfile.TemporaryDirectory() as d:
        blob.astype("<f4").tofile(os.path.join(d, "input.f32"))
        n, _, h, w = blob.shape
        out = subprocess.run(["node", os.path.join(os.path.dirname(__file__), "..", "onnx", "ort_run.js"),
                              model, os.path.join(d, "input.f32"), str(n), str(h), str(w), d,
                              "--modules", modules], capture_output=True, text=True, check=True)
        result = json.loads(out.stdout.strip().splitlines()[-1])
        return {o["name"]: np.fromfile(o["file"], dtype="<f4").reshape(o["dims"])
                for o in result["outputs"]}


def parse_args(usage, defaults):
    """MODEL.onnx IMAGE --modules NODE_MODULES plus the script's `defaults` ({flag: text}):
    (model, image, options), the image read by cv2.imread; exits with `usage` otherwise."""
    args = sys.argv[1:]
    opts = dict(defaults, **{"--modules": None})
    rest = []
    while args:
        a = args.pop(0)
        if a in opts:
            opts[a] = args.pop(0)
        else:
            rest.append(a)
    if len(rest) != 2 or opts["--modules"] is None:
        sys.exit(usage)
    img = cv2.imread(rest[1])
    if img is None:
        sys.exit(f"cannot read {rest[1]}")
    return rest[0], img, opts
