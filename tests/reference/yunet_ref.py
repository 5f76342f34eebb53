#!/usr/bin/env python3
"""OpenCV's YuNet detection path, written from OpenCV's modules/objdetect/src/face_detect.cpp
(FaceDetectorYNImpl: setInputSize to the picture's size, padWithDivisor, blobFromImage,
postProcess; OpenCV 4.8 and later, the 2023mar outputs) and cv::dnn::NMSBoxes (modules/dnn/src/
nms.inl.hpp: GetMaxScoreIndex, NMSFast_ with eta 1; rectOverlap on Rect2i), with ONNX Runtime
(onnxruntime-node through tests/onnx/ort_run.js) in place of cv::dnn::Net: the independent answer
mogserve's `--model FILE.onnx` is checked against (tests/onnx/onnx_detect_test.cpp). Debian's
OpenCV (4.6) predates that FaceDetectorYN, so its numpy form is here.

    /usr/bin/python3 tests/reference/yunet_ref.py MODEL.onnx IMAGE --modules NODE_MODULES
        [--thresh 0.9] [--nms 0.3] [--top-k 5000]

Prints one JSON line: {"faces": [{"box": [x1, y1, x2, y2], "score", "landmarks": [[x, y] x5]}],
"input_size": [padW, padH]}, faces in OpenCV's order (NMS-kept, best first), not clipped.
Needs Debian's python3-opencv and python3-numpy, and node.
"""

import json
import sys

import cv2
import numpy as np

sys.dont_write_bytecode = True
from ort_family import parse_args, run_ort  # noqa: E402
STRIDES = (8, 16, 32)
DIVISOR = 32


def rect_overlap(a, b):
    """cv::rectOverlap on Rect2i (x, y, w, h): 1 - jaccardDistance."""
    area_a, area_b = a[2] * a[3], b[2] * b[3]
    if area_a + area_b <= 0:
        return 1.0
    x1, y1 = max(a[0], b[0]), max(a[1], b[1])
    iw = min(a[0] + a[2], b[0] + b[2]) - x1
    ih = min(a[1] + a[3], b[1] + b[3]) - y1
    inter = float(iw * ih) if iw > 0 and ih > 0 else 0.0
    distance = 1.0 - inter / (area_a + area_b - inter)  # double, then float as OpenCV casts it
    return np.float32(1.0) - np.float32(distance)


def nms_boxes(rects, scores, score_threshold, nms_threshold, top_k):
    order = [i for i in range(len(scores)) if scores[i] > score_threshold]
    order.sort(key=lambda i: -scores[i])  # stable, as std::stable_sort
    if 0 < top_k < len(order):
        order = order[:top_k]
    keep = []
    for i in order:
        if all(rect_overlap(rects[i], rects[k]) <= nms_threshold for k in keep):
            keep.append(i)
    return keep


def detect(model, img, thresh, nms, top_k, modules):
    thresh, nms = np.float32(thresh), np.float32(nms)  # FaceDetectorYN holds them as float
    h, w = img.shape[:2]
    pad_w = ((w - 1) // DIVISOR + 1) * DIVISOR
    pad_h = ((h - 1) // DIVISOR + 1) * DIVISOR
    pad = cv2.copyMakeBorder(img, 0, pad_h - h, 0, pad_w - w, cv2.BORDER_CONSTANT, value=0)
    blob = cv2.dnn.blobFromImage(pad)  # scale 1, no mean, B, G, R
    outs = run_ort(model, blob, modules)
    faces = []
    for stride in STRIDES:
        cols, rows = pad_w // stride, pad_h // stride
        cls = outs[f"cls_{stride}"].reshape(-1)
        obj = outs[f"obj_{stride}"].reshape(-1)
        bbox = outs[f"bbox_{stride}"].reshape(-1, 4)
        kps = outs[f"kps_{stride}"].reshape(-1, 10)
        s = np.float32(stride)
        for r in range(rows):
            for c in range(cols):
                idx = r * cols + c
                score = np.sqrt(np.float32(np.clip(cls[idx], 0, 1)) *
                                np.float32(np.clip(obj[idx], 0, 1)))
                if score < thresh:
                    continue
                b = bbox[idx]
                cx = (np.float32(c) + b[0]) * s
                cy = (np.float32(r) + b[1]) * s
                bw = np.exp(b[2]) * s
                bh = np.exp(b[3]) * s
                x1, y1 = cx - bw / np.float32(2), cy - bh / np.float32(2)
                k = kps[idx]
                marks = [[float((k[2 * p] + np.float32(c)) * s), float((k[2 * p + 1] + np.float32(r)) * s)]
                         for p in range(5)]
                faces.append({"xywh": [float(x1), float(y1), float(bw), float(bh)],
                              "score": score, "landmarks": marks})
    if len(faces) > 1:
        rects = [[int(v) for v in f["xywh"]] for f in faces]
        keep = nms_boxes(rects, [f["score"] for f in faces], thresh, nms, top_k)
        faces = [faces[i] for i in keep]
    out = []
    for f in faces:
        x, y, bw, bh = f["xywh"]
        out.append({"box": [x, y, float(np.float32(x) + np.float32(bw)),
                            float(np.float32(y) + np.float32(bh))],
                    "score": float(f["score"]), "landmarks": f["landmarks"]})
    return {"faces": out, "input_size": [pad_w, pad_h]}


def main():
    model, img, opts = parse_args(__doc__, {"--thresh": "0.9", "--nms": "0.3", "--top-k": "5000"})
    print(json.dumps(detect(model, img, float(opts["--thresh"]), float(opts["--nms"]),
                            int(opts["--top-k"]), opts["--modules"])))


if __name__ == "__main__":
    main()
