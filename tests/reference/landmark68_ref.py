#!/usr/bin/env python3
"""An independent FP64 reference of face-api's 68-point landmark net (FaceLandmark68Net), written
from face-api.js's TypeScript (src/faceFeatureExtractor/FaceFeatureExtractor.ts, denseBlock.ts,
src/common/depthwiseSeparableConv.ts, src/faceProcessor/FaceProcessor.ts), not from mogserve's
network plan, for the C++ parity test of the plan (the FP64 reference executor).

    python3 tests/reference/landmark68_ref.py MODEL_DIR PHOTO X1,Y1,X2,Y2 OUT_STEM

Reads MODEL_DIR/face_landmark_68_model-weights_manifest.json and its .bin with ssd_ref.py's tfjs
reader (tensors back to back, uint8 dequantised as byte*scale + min), cuts the box X1..X2, Y1..Y2 (pixels, end exclusive) of
PHOTO (cv2.imread, RGB), resizes it to 112x112 with cv2.INTER_AREA (the crop is the input here,
however it was made: the test compares the network alone), normalises (v - mean RGB) / 255 and
runs in float64 with torch.nn.functional: tf.conv2d / separableConv2d with TF SAME padding, the
four dense blocks, avgPool 7x7 stride 2 'valid' and the fully connected layer.

Writes OUT_STEM.rgb (112*112*3 bytes, RGB HWC) and OUT_STEM.bin: the 136 outputs (x, y of the
68 points relative to the crop), float64 little-endian. Needs python3-torch, -numpy, -opencv.
"""

import sys

import cv2
import numpy as np
import torch
import torch.nn.functional as F

sys.dont_write_bytecode = True
# The tfjs reader and TF SAME padding of the SSD's reference (specs/shipped_face_models.md §1-2).
from ssd_ref import load_weights, same_pad  # noqa: E402

MEAN_RGB = (122.782, 117.001, 104.298)


def conv(x, filters, bias, stride):
    """tf.conv2d(x, filters [kh,kw,in,out], stride, 'same') + bias."""
    w = filters.permute(3, 2, 0, 1)
    return F.conv2d(same_pad(x, w.shape[2], stride), w, bias, stride)


def separable(x, W, p, stride):
    """tf.separableConv2d(x, depthwise [3,3,C,1], pointwise [1,1,C,out], stride, 'same') + bias."""
    dw = W[p + "/depthwise_filter"].permute(2, 3, 0, 1)  # [C, 1, 3, 3]
    y = F.conv2d(same_pad(x, 3, stride), dw, None, stride, groups=dw.shape[0])
    pw = W[p + "/pointwise_filter"].permute(3, 2, 0, 1)
    return F.conv2d(y, pw, W[p + "/bias"])


def dense_block4(x, W, p, first):
    if first:
        out1 = F.relu(conv(x, W[p + "/conv0/filters"], W[p + "/conv0/bias"], 2))
    else:
        out1 = F.relu(separable(x, W, p + "/conv0", 2))
    out2 = separable(out1, W, p + "/conv1", 1)
    in3 = F.relu(out1 + out2)
    out3 = separable(in3, W, p + "/conv2", 1)
    in4 = F.relu(out1 + (out2 + out3))
    out4 = separable(in4, W, p + "/conv3", 1)
    return F.relu(out1 + (out2 + (out3 + out4)))


def forward(W, x):
    y = x
    for i in range(4):
        y = dense_block4(y, W, f"dense{i}", i == 0)
    y = F.avg_pool2d(y, 7, 2)  # 'valid'
    flat = y.permute(0, 2, 3, 1).reshape(y.shape[0], -1)  # tfjs as2D of NHWC
    return flat @ W["fc/weights"] + W["fc/bias"]


def main(argv):
    if len(argv) != 5:
        print(__doc__, file=sys.stderr)
        return 2
    model_dir, photo, box, out_stem = argv[1:]
    x1, y1, x2, y2 = (int(v) for v in box.split(","))
    W = load_weights(model_dir, "face_landmark_68_model")
    bgr = cv2.imread(photo, cv2.IMREAD_COLOR)[y1:y2, x1:x2]
    rgb = np.ascontiguousarray(cv2.resize(bgr, (112, 112), interpolation=cv2.INTER_AREA)[:, :, ::-1])
    x = torch.tensor(rgb.astype(np.float64)).permute(2, 0, 1)[None]
    x = (x - torch.tensor(MEAN_RGB, dtype=torch.float64)[None, :, None, None]) / 255.0
    with torch.no_grad():
        out = forward(W, x)[0]
    assert out.shape == (136,), out.shape
    with open(out_stem + ".rgb", "wb") as f:
        f.write(rgb.tobytes())
    with open(out_stem + ".bin", "wb") as f:
        f.write(out.numpy().astype("<f8").tobytes())
    pts = out.numpy().reshape(68, 2)
    eyes = pts[36:42].mean(0), pts[42:48].mean(0)
    print(f"landmark68_ref: {photo} [{box}] -> {out_stem}.bin; eyes {eyes[0]} {eyes[1]}, "
          f"nose {pts[30]}, mouth {pts[48]} {pts[54]} (relative)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
