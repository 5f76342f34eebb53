#!/usr/bin/env python3
"""An independent FP64 reference of face-api's SSD-MobileNetV1, written from
../shared/specs/shipped_face_models.md §1-§2 (no face-api or TF code), for the C++ parity test of
the SSD's layer plan (the FP64 reference executor).

    python3 tests/reference/ssd_ref.py MODEL_DIR PHOTO OUT_STEM

Reads MODEL_DIR/ssd_mobilenetv1_model-weights_manifest.json and its .bin (§2.1: tensors back to
back in manifest order, uint8 dequantised as byte*scale + min in double, float32 raw), decodes
PHOTO with cv2.imread and takes its top-left 512x512 RGB pixels (no resize, so the test compares
the network alone), normalises x/127.5 - 1 (§2.2) and runs §2.3 in float64 with torch.nn.functional:
TF SAME padding made explicit (§1), depthwise convs followed by an explicit (unfolded)
BatchNorm, ReLU6, the extra layers, and the full box and class predictors (all 3 class logits;
score = sigmoid(logit 1), §2.5).

Writes OUT_STEM.rgb (512*512*3 bytes, RGB HWC) and OUT_STEM.bin: scores (5118) then box
encodings (5118 x 4: ty, tx, th, tw), float64 little-endian. Needs python3-torch, python3-numpy
and python3-opencv.
"""

import json
import os
import sys

import cv2
import numpy as np
import torch
import torch.nn.functional as F

sys.dont_write_bytecode = True

BN_EPS = 0.0010000000474974513
ANCHORS_PER_CELL = [3, 6, 6, 6, 6, 6]


def load_weights(model_dir, name="ssd_mobilenetv1_model"):
    """§2.1: name -> float64 tensor with its TF shape (any face-api tfjs model: `name`)."""
    stem = os.path.join(model_dir, name)
    with open(stem + "-weights_manifest.json") as f:
        group = json.load(f)[0]
    data = b"".join(open(os.path.join(model_dir, p), "rb").read() for p in group["paths"])
    out, offset = {}, 0
    for w in group["weights"]:
        n = int(np.prod(w["shape"])) if w["shape"] else 1
        q = w.get("quantization")
        if q:
            raw = np.frombuffer(data, np.uint8, n, offset).astype(np.float64)
            values = (raw * q["scale"] + q["min"]).astype(np.float32)  # stored as float32
            offset += n
        else:
            values = np.frombuffer(data, np.float32 if w["dtype"] == "float32" else np.int32, n,
                                   offset)
            offset += 4 * n
        out[w["name"]] = torch.tensor(values.astype(np.float64)).reshape(w["shape"])
    assert offset == len(data), (offset, len(data))
    return out


def same_pad(x, k, s):
    """§1: out = ceil(in/s); total = max((out-1)*s + k - in, 0); top/left floor(total/2)."""
    def axis(n):
        out = -(-n // s)
        total = max((out - 1) * s + k - n, 0)
        return total // 2, total - total // 2
    top, bottom = axis(x.shape[2])
    left, right = axis(x.shape[3])
    return F.pad(x, (left, right, top, bottom))


def conv_tf(x, w_hwio, b, stride, act=True):
    """TF conv [kh, kw, in, out] + bias with SAME padding, then ReLU6 (or none)."""
    w = w_hwio.permute(3, 2, 0, 1)
    y = F.conv2d(same_pad(x, w.shape[2], stride), w, b, stride)
    return y.clamp(0, 6) if act else y


def depthwise_bn(x, p, stride, W):
    """§2.3: depthwise 3x3 [3,3,C,1] (no bias), explicit BatchNorm, ReLU6."""
    w = W[p + "depthwise_weights"].permute(2, 3, 0, 1)  # [C, 1, 3, 3]
    y = F.conv2d(same_pad(x, 3, stride), w, None, stride, groups=w.shape[0])
    gamma, beta = W[p + "BatchNorm/gamma"], W[p + "BatchNorm/beta"]
    mean, var = W[p + "BatchNorm/moving_mean"], W[p + "BatchNorm/moving_variance"]
    y = (y - mean[None, :, None, None]) / torch.sqrt(var + BN_EPS)[None, :, None, None]
    y = y * gamma[None, :, None, None] + beta[None, :, None, None]
    return y.clamp(0, 6)


def forward(W, x):
    """§2.3-§2.5: returns scores (5118,) and box encodings (5118, 4)."""
    def pointwise(name, y, stride=1):
        return conv_tf(y, W[name + "/weights"], W[name + "/convolution_bn_offset"], stride)

    y = pointwise("MobilenetV1/Conv2d_0_pointwise", x, 2)
    strides = {2: 2, 4: 2, 6: 2, 12: 2}
    features = []
    for i in range(1, 14):
        y = depthwise_bn(y, f"MobilenetV1/Conv2d_{i}_depthwise/", strides.get(i, 1), W)
        y = pointwise(f"MobilenetV1/Conv2d_{i}_pointwise", y)
        if i in (11, 13):
            features.append(y)
    for j in range(4):
        y = pointwise(f"Prediction/Conv2d_{2 * j}_pointwise", y)
        y = pointwise(f"Prediction/Conv2d_{2 * j + 1}_pointwise", y, 2)
        features.append(y)
    scores, boxes = [], []
    for level, f in enumerate(features):
        p = f"Prediction/BoxPredictor_{level}/"
        box = conv_tf(f, W[p + "BoxEncodingPredictor/weights"], W[p + "BoxEncodingPredictor/biases"],
                      1, act=False)
        cls = conv_tf(f, W[p + "ClassPredictor/weights"], W[p + "ClassPredictor/biases"], 1,
                      act=False)
        # §1 flatten: NHWC, anchor index (y*W + x)*A + a, channel a*(values) + v.
        boxes.append(box.permute(0, 2, 3, 1).reshape(-1, 4))
        scores.append(torch.sigmoid(cls.permute(0, 2, 3, 1).reshape(-1, 3)[:, 1]))
    return torch.cat(scores), torch.cat(boxes)


def main(argv):
    if len(argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    model_dir, photo, out_stem = argv[1:]
    W = load_weights(model_dir)
    rgb = np.ascontiguousarray(cv2.imread(photo, cv2.IMREAD_COLOR)[:512, :512, ::-1])
    assert rgb.shape == (512, 512, 3), rgb.shape
    x = torch.tensor(rgb.astype(np.float64)).permute(2, 0, 1)[None] / 127.5 - 1.0
    with torch.no_grad():
        scores, boxes = forward(W, x)
    assert scores.shape == (sum(a * s * s for a, s in zip(ANCHORS_PER_CELL,
                                                           [32, 16, 8, 4, 2, 1])),)
    with open(out_stem + ".rgb", "wb") as f:
        f.write(rgb.tobytes())
    with open(out_stem + ".bin", "wb") as f:
        f.write(scores.numpy().astype("<f8").tobytes())
        f.write(boxes.numpy().astype("<f8").tobytes())
    print(f"ssd_ref: {photo} -> {out_stem}.bin ({scores.shape[0]} anchors, "
          f"{int((scores > 0.5).sum())} above 0.5)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
