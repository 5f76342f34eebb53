#!/usr/bin/env python3
"""insightface SCRFD's detection path, written from insightface's python-package/insightface/
model_zoo/scrfd.py (0.7.3: SCRFD.detect, SCRFD.forward, SCRFD.nms, distance2bbox,
distance2kps), with ONNX Runtime (onnxruntime-node through tests/onnx/ort_run.js) in place of the
Python onnxruntime session: the independent answer mogserve's `--model FILE.onnx` is checked
against (tests/onnx/onnx_detect_test.cpp).

    /usr/bin/python3 tests/reference/scrfd_ref.py MODEL.onnx IMAGE --modules NODE_MODULES
        [--size 640] [--thresh 0.5]

Prints one JSON line: {"faces": [{"box": [x1, y1, x2, y2], "score", "landmarks": [[x, y] x5]}],
"det_scale", "input_size"}, faces in insightface's order (NMS-kept, best first), not clipped.
Needs Debian's python3-opencv and python3-numpy, and node.
"""

import json
import sys

import cv2
import numpy as np

sys.dont_write_bytecode = True
from ort_family import parse_args, run_ort  # noqa: E402
NMS_THRESH = 0.4  # SCRFD.__init__: self.nms_thresh = 0.4


def distance2bbox(points, distance):
    x1 = points[:, 0] - distance[:, 0]
    y1 = points[:, 1] - distance[:, 1]
    x2 = points[:, 0] + distance[:, 2]
    y2 = points[:, 1] + distance[:, 3]
    return np.stack([x1, y1, x2, y2], axis=-1)


def distance2kps(points, distance):
    preds = []
    for i in range(0, distance.shape[1], 2):
        preds.append(points[:, i % 2] + distance[:, i])
        preds.append(points[:, i % 2 + 1] + distance[:, i + 1])
    return np.stack(preds, axis=-1)


def nms(dets):
    x1, y1, x2, y2, scores = dets[:, 0], dets[:, 1], dets[:, 2], dets[:, 3], dets[:, 4]
    areas = (x2 - x1 + 1) * (y2 - y1 + 1)
    order = scores.argsort()[::-1]
    keep = []
    while order.size > 0:
        i = order[0]
        keep.append(i)
        xx1 = np.maximum(x1[i], x1[order[1:]])
        yy1 = np.maximum(y1[i], y1[order[1:]])
        xx2 = np.minimum(x2[i], x2[order[1:]])
        yy2 = np.minimum(y2[i], y2[order[1:]])
        w = np.maximum(0.0, xx2 - xx1 + 1)
        h = np.maximum(0.0, yy2 - yy1 + 1)
        inter = w * h
        ovr = inter / (areas[i] + areas[order[1:]] - inter)
        inds = np.where(ovr <= NMS_THRESH)[0]
        order = order[inds + 1]
    return keep


def detect(model, img, input_size, thresh, modules):
    # SCRFD.detect
    im_ratio = float(img.shape[0]) / img.shape[1]
    model_ratio = float(input_size[1]) / input_size[0]
    if im_ratio > model_ratio:
        new_height = input_size[1]
        new_width = int(new_height / im_ratio)
    else:
        new_width = input_size[0]
        new_height = int(new_width * im_ratio)
    det_scale = float(new_height) / img.shape[0]
    resized_img = cv2.resize(img, (new_width, new_height))
    det_img = np.zeros((input_size[1], input_size[0], 3), dtype=np.uint8)
    det_img[:new_height, :new_width, :] = resized_img
    # SCRFD.forward
    blob = cv2.dnn.blobFromImage(det_img, 1.0 / 128.0, tuple(det_img.shape[0:2][::-1]),
                                 (127.5, 127.5, 127.5), swapRB=True)
    net_outs = list(run_ort(model, blob, modules).values())
    input_height, input_width = blob.shape[2], blob.shape[3]
    fmc = 3 if len(net_outs) in (6, 9) else 5
    strides = [8, 16, 32] if fmc == 3 else [8, 16, 32, 64, 128]
    use_kps = len(net_outs) in (9, 15)
    batched = len(net_outs[0].shape) == 3
    scores_list, bboxes_list, kpss_list = [], [], []
    for idx, stride in enumerate(strides):
        take = (lambda o: o[0]) if batched else (lambda o: o)
        scores = take(net_outs[idx])
        bbox_preds = take(net_outs[idx + fmc]) * stride
        if use_kps:
            kps_preds = take(net_outs[idx + fmc * 2]) * stride
        height = input_height // stride
        width = input_width // stride
        num_anchors = scores.shape[0] // (height * width)
        anchor_centers = np.stack(np.mgrid[:height, :width][::-1], axis=-1).astype(np.float32)
        anchor_centers = (anchor_centers * stride).reshape((-1, 2))
        if num_anchors > 1:
            anchor_centers = np.stack([anchor_centers] * num_anchors, axis=1).reshape((-1, 2))
        pos_inds = np.where(scores >= thresh)[0]
        bboxes = distance2bbox(anchor_centers, bbox_preds)
        scores_list.append(scores[pos_inds])
        bboxes_list.append(bboxes[pos_inds])
        if use_kps:
            kpss = distance2kps(anchor_centers, kps_preds).reshape((-1, 5, 2))
            kpss_list.append(kpss[pos_inds])
    scores = np.vstack(scores_list)
    order = scores.ravel().argsort()[::-1]
    bboxes = np.vstack(bboxes_list) / det_scale
    pre_det = np.hstack((bboxes, scores)).astype(np.float32, copy=False)[order, :]
    keep = nms(pre_det)
    det = pre_det[keep, :]
    kpss = None
    if use_kps:
        kpss = (np.vstack(kpss_list) / det_scale)[order, :, :][keep, :, :]
    faces = []
    for i, d in enumerate(det):
        face = {"box": [float(v) for v in d[:4]], "score": float(d[4])}
        if kpss is not None:
            face["landmarks"] = [[float(p[0]), float(p[1])] for p in kpss[i]]
        faces.append(face)
    return {"faces": faces, "det_scale": det_scale, "input_size": list(input_size)}


def main():
    model, img, opts = parse_args(__doc__, {"--size": "640", "--thresh": "0.5"})
    side = int(opts["--size"])
    print(json.dumps(detect(model, img, (side, side), float(opts["--thresh"]), opts["--modules"])))


if __name__ == "__main__":
    main()
