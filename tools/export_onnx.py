#!/usr/bin/env python3
"""Export the project's independent PyTorch references to ONNX (FP32, dynamic batch), for the
ONNX Runtime comparison column of the benchmarks (tools/ort_bench.js).

    python3 tools/export_onnx.py ssd OUT.onnx [--size 512] [--model-dir models/ssd_mobilenetv1]
    python3 tools/export_onnx.py mogface OUT.onnx [--variant r101] [--size 320 | --size 320x480]
        [--checkpoint CKPT | --seed 0]
    common: [--opset 17] [--check-out STEM [--check-batch 2]]

ssd: face-api's SSD-MobileNetV1: tests/reference/ssd_ref.py's weights and network in FP32, with
  static SAME paddings and the depthwise BatchNorm folded (see SsdNet); checked against
  ssd_ref.forward in FP64.
  Input "input" [N,3,S,S], RGB normalised x/127.5 - 1. Outputs "scores" [N,A] (sigmoid of
  class logit 1) and "boxes" [N,A,4] (raw encodings ty, tx, th, tw); A = 5118 at 512.
mogface: tests/reference/mogface_ref.py's forward (R101, E or R50). Weights from --checkpoint
  (any format tools/convert_checkpoint.py reads) or else the synthetic deterministic checkpoint of
  tests/reference/make_synthetic_checkpoint.py (--seed). Input "input" [N,3,H,W] normalised per
  spec §6a; outputs "conf" [N,S,1] (sigmoided) and "loc" [N,S,4].

--check-out STEM runs one fixed random image batch (--check-batch, default 2, which also
exercises the dynamic batch axis) through the same FP32 torch module and writes STEM.input.bin
(the input) and STEM.expected.bin (all outputs flattened, in output order), float32 LE; then
`node tools/ort_bench.js OUT.onnx --check STEM.input.bin STEM.expected.bin` compares ONNX
Runtime's outputs with them.

Needs only Debian's python3-torch (1.13) and python3-numpy (and python3-opencv, which ssd_ref
imports); torch.onnx.export does not need the `onnx` Python package.
"""

import argparse
import os
import sys
import warnings

import numpy as np
import torch
import torch.nn.functional as F

sys.dont_write_bytecode = True  # keep __pycache__ out of the source tree
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, os.path.join(ROOT, "tests", "reference"))
sys.path.insert(0, os.path.join(ROOT, "tools"))


def _tf_same(n, k, s):
    """ssd_ref.same_pad's TF SAME rule on a static size: (pad before, pad after, output size)."""
    out = -(-n // s)
    total = max((out - 1) * s + k - n, 0)
    return total // 2, total - total // 2, out


class SsdNet(torch.nn.Module):
    """ssd_ref.forward in FP32 with three changes that a deployed graph has and that do not
    change the function: the batch axis is kept in the outputs; the depthwise convs' explicit
    BatchNorm is folded into their weights (in FP64, then cast); the SAME paddings are computed
    from the static input size (ssd_ref.same_pad reads x.shape, which the tracer exports as
    Shape/Gather/arithmetic feeding a Pad that ONNX Runtime then cannot fuse into the Conv)."""

    def __init__(self, model_dir, size):
        super().__init__()
        import ssd_ref

        self.ref, self.size = ssd_ref, size
        self.W64 = W = ssd_ref.load_weights(model_dir)
        self.convs = {}  # name -> (OIHW weight, bias, kernel size, groups), FP32

        def add(name, w_hwio, bias, groups=1):
            w = w_hwio.permute(3, 2, 0, 1) if groups == 1 else w_hwio.permute(2, 3, 0, 1)
            self.convs[name] = (w.to(torch.float32).contiguous(), bias.to(torch.float32),
                                int(w.shape[-1]), groups)

        for name in W:
            if name.endswith("_pointwise/weights"):
                add(name[:-8], W[name], W[name[:-8] + "/convolution_bn_offset"])
            elif name.endswith("Predictor/weights"):
                add(name[:-8], W[name], W[name[:-8] + "/biases"])
        for i in range(1, 14):
            p = f"MobilenetV1/Conv2d_{i}_depthwise/"
            scale = W[p + "BatchNorm/gamma"] / torch.sqrt(W[p + "BatchNorm/moving_variance"]
                                                          + ssd_ref.BN_EPS)
            add(p[:-1], W[p + "depthwise_weights"] * scale[None, None, :, None],
                W[p + "BatchNorm/beta"] - W[p + "BatchNorm/moving_mean"] * scale,
                groups=W[p + "depthwise_weights"].shape[2])

    def forward(self, x):
        def conv(y, hw, name, stride=1, act=True):
            """A conv with TF SAME padding (+ ReLU6): (tensor, (h, w)) -> (tensor, (h, w))."""
            w, b, k, groups = self.convs[name]
            top, bottom, h = _tf_same(hw[0], k, stride)
            left, right, wd = _tf_same(hw[1], k, stride)
            if top == bottom and left == right:
                y = F.conv2d(y, w, b, stride, (top, left), groups=groups)
            else:
                # value=0.0 given explicitly: without it the Pad gets an empty constant_value input,
                # which keeps ONNX Runtime from fusing the Pad into the Conv.
                y = F.conv2d(F.pad(y, (left, right, top, bottom), value=0.0), w, b, stride,
                             groups=groups)
            return (y.clamp(0, 6) if act else y), (h, wd)

        y, hw = x, self.size
        features = []
        y, hw = conv(y, hw, "MobilenetV1/Conv2d_0_pointwise", 2)
        for i in range(1, 14):
            y, hw = conv(y, hw, f"MobilenetV1/Conv2d_{i}_depthwise", 2 if i in (2, 4, 6, 12) else 1)
            y, hw = conv(y, hw, f"MobilenetV1/Conv2d_{i}_pointwise")
            if i in (11, 13):
                features.append((y, hw))
        for j in range(4):
            y, hw = conv(y, hw, f"Prediction/Conv2d_{2 * j}_pointwise")
            y, hw = conv(y, hw, f"Prediction/Conv2d_{2 * j + 1}_pointwise", 2)
            features.append((y, hw))
        scores, boxes = [], []
        for level, (f, hw) in enumerate(features):
            p = f"Prediction/BoxPredictor_{level}/"
            box, _ = conv(f, hw, p + "BoxEncodingPredictor", act=False)
            cls, _ = conv(f, hw, p + "ClassPredictor", act=False)
            # ssd_ref's flatten (NHWC, anchor-major), per image instead of over the whole batch.
            n = hw[0] * hw[1] * self.ref.ANCHORS_PER_CELL[level]  # anchors of this level
            boxes.append(box.permute(0, 2, 3, 1).reshape(-1, n, 4))
            scores.append(torch.sigmoid(cls.permute(0, 2, 3, 1).reshape(-1, n, 3)[:, :, 1]))
        return torch.cat(scores, dim=1), torch.cat(boxes, dim=1)

    def self_check(self, x):
        """Max |difference| of the FP32 module vs ssd_ref.forward in FP64 on image 0 of x."""
        with torch.no_grad():
            s64, b64 = self.ref.forward(self.W64, x[:1].to(torch.float64))
            s32, b32 = self(x[:1])
        return max((s32[0] - s64).abs().max().item(), (b32[0] - b64).abs().max().item())


class _IntPaddingF:
    """torch.nn.functional, except that conv2d takes its padding as a plain int. Under the ONNX
    tracer every .shape is a traced value, so mogface_ref._conv's padding (computed from the
    weight's shape) arrives as a tensor, which F.conv2d refuses; it is a constant anyway."""

    def __getattr__(self, name):
        return getattr(F, name)

    @staticmethod
    def conv2d(x, w, b=None, stride=1, padding=0, dilation=1, groups=1):
        return F.conv2d(x, w, b, stride, int(padding), dilation, groups)


class MogFaceNet(torch.nn.Module):
    """mogface_ref's network over a fixed state_dict (FP32)."""

    def __init__(self, variant, checkpoint=None, seed=0):
        super().__init__()
        import mogface_ref

        if checkpoint:
            sd, _ = mogface_ref.load_checkpoint(checkpoint)
        else:
            from make_synthetic_checkpoint import synthetic_state_dict

            sd = synthetic_state_dict(mogface_ref.canonical_variant(variant), seed)
        self.sd, self.variant = mogface_ref.prepare_state_dict(
            sd, mogface_ref.canonical_variant(variant))
        self.ref = mogface_ref
        mogface_ref.F = _IntPaddingF()  # affects only this process
        warnings.filterwarnings("ignore", "Converting a tensor to a Python integer",
                                torch.jit.TracerWarning)  # that int(padding), intended

    def forward(self, x):
        # mogface_ref.forward's body minus its prepare_state_dict(), which would run inside the
        # trace and turn the weights' shapes (the conv paddings) into traced values.
        ref = self.ref
        c2, c3, c4, c5 = ref.backbone(x, self.sd, ref.BLOCKS[self.variant])
        return ref.heads(ref.lfpn(c2, c3, c4, c5, self.sd), self.sd, self.variant)

    def self_check(self, x):
        """Max |difference| vs mogface_ref.forward itself on x."""
        with torch.no_grad():
            a, b = self.ref.forward(self.sd, x, self.variant), self(x)
        return max((p - q).abs().max().item() for p, q in zip(a, b))


def check_input(model_name, batch, h, w):
    """A fixed random RGB uint8 batch, normalised the way the model expects."""
    rgb = np.random.default_rng(12345).integers(0, 256, (batch, h, w, 3), dtype=np.uint8)
    if model_name == "ssd":
        x = torch.tensor(rgb, dtype=torch.float32).permute(0, 3, 1, 2) / 127.5 - 1.0
    else:
        import mogface_ref

        x = torch.stack([mogface_ref.normalize(img) for img in rgb])
    return x.contiguous()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model", choices=("ssd", "mogface"))
    ap.add_argument("out", help="the .onnx file to write")
    ap.add_argument("--size", help="input size S or HxW (default: ssd 512, mogface 320)")
    ap.add_argument("--model-dir", default=os.path.join(ROOT, "models", "ssd_mobilenetv1"))
    ap.add_argument("--variant", default="r101", help="mogface: R101, E or R50")
    ap.add_argument("--checkpoint", help="mogface: a real checkpoint instead of synthetic weights")
    ap.add_argument("--seed", type=int, default=0, help="mogface: synthetic checkpoint seed")
    ap.add_argument("--opset", type=int, default=17, help="ONNX opset (torch 1.13: at most 17)")
    ap.add_argument("--check-out", metavar="STEM", help="write STEM.input.bin, STEM.expected.bin")
    ap.add_argument("--check-batch", type=int, default=2)
    args = ap.parse_args(argv)
    torch.set_num_threads(2)

    size = args.size or ("512" if args.model == "ssd" else "320")
    h, w = (int(v) for v in size.lower().split("x")) if "x" in size.lower() else (int(size),) * 2
    if args.model == "ssd":
        net = SsdNet(args.model_dir, (h, w))
        outputs = ["scores", "boxes"]
    else:
        net = MogFaceNet(args.variant, args.checkpoint, args.seed)
        outputs = ["conf", "loc"]
    net.eval()

    # Trace with batch 1; the batch axis of the input and of every output is symbolic.
    dummy = check_input(args.model, 1, h, w)
    axes = {name: {0: "batch"} for name in ["input"] + outputs}
    with torch.no_grad():
        torch.onnx.export(net, (dummy,), args.out, opset_version=args.opset,
                          input_names=["input"], output_names=outputs, dynamic_axes=axes,
                          do_constant_folding=True)
    print(f"export_onnx: {args.model} {h}x{w} opset {args.opset} -> {args.out} "
          f"({os.path.getsize(args.out) / 1e6:.1f} MB)", file=sys.stderr)

    if args.check_out:
        x = check_input(args.model, args.check_batch, h, w)
        with torch.no_grad():
            outs = net(x)
        with open(args.check_out + ".input.bin", "wb") as f:
            f.write(x.numpy().astype("<f4").tobytes())
        with open(args.check_out + ".expected.bin", "wb") as f:
            for t in outs:
                f.write(t.numpy().astype("<f4").tobytes())
        shapes = ", ".join(f"{n} {list(t.shape)}" for n, t in zip(outputs, outs))
        print(f"export_onnx: check data {list(x.shape)} -> {shapes} in {args.check_out}.*.bin",
              file=sys.stderr)
        # The exported module must compute what the reference computes.
        what = "ssd_ref.forward in FP64" if args.model == "ssd" else "mogface_ref.forward"
        print(f"export_onnx: module vs {what}: max |diff| {net.self_check(x):.2e}",
              file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
