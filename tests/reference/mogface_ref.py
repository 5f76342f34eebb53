"""Independent functional PyTorch reference for MogFace (project issue 3).

Written only from ../shared/specs/mogface.md (the "spec"); section numbers below refer to it.
Eager torch.nn.functional code over a plain state_dict, no nn.Module classes, so that every
quirk the spec lists is visible in one place:

* the deep heads apply the SAME `conv1` four times (only gn1..gn4 differ), conv2..conv4 and
  the DSFD branch/heads are never used (spec §3, §4a);
* bilinear x2 upsampling with half-pixel centres, then the top-left crop for odd sizes (§3);
* GroupNorm(16, eps 1e-5) in the towers, BatchNorm (eps 1e-5, running stats) elsewhere;
* every stride-2 step maps n -> ceil(n/2) (§2), which the anchor grid mirrors (§5);
* the extra division by 255 in the pre-processing (§6a).

Variants: 'R101' (ModelScope MogFace-large), 'E' (MogFace-E, [3,4,36,3] backbone) and 'R50'
(Baseline / Ali-AMS / SSE). HCAM raises UnsupportedVariant.

Run `python3 tests/reference/mogface_ref.py selfcheck` for the spec self-checks.
"""

from __future__ import annotations

import math
import os
import sys

from typing import NamedTuple

import numpy as np
import torch
import torch.nn.functional as F

sys.dont_write_bytecode = True  # keep __pycache__ out of the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
from mogface_checkpoint import (  # noqa: E402, F401  (re-exported for the other scripts)
    ANCHOR_SCALE,
    BLOCKS,
    CheckpointError,
    UnsupportedVariant,
    canonical_variant,
    check_state_dict,
    detect_variant,
    expected_shapes,
    is_unused_key,
    load_checkpoint,
    read_safetensors,
)

BN_EPS = 1e-5  # spec §2 (also §10.5: must be exactly 1e-5)
GN_EPS = 1e-5  # spec §4a
GN_GROUPS = 16  # spec §4a, §4b
NUM_LEVELS = 6  # P2..P7, strides 4..128 (spec §3)

# --------------------------------------------------------------------------------------------
# Building blocks
# --------------------------------------------------------------------------------------------


def _conv(x, sd, name, stride=1, dilation=1, bias=True):
    """Convolution with 'same' padding for odd kernels: pad = dilation * (k - 1) / 2.

    Spec: 7x7 pad 3 (stem), 3x3 pad 1, dilated 3x3 pad 2, 1x1 pad 0."""
    w = sd[name + ".weight"]
    b = sd[name + ".bias"] if bias else None
    pad = dilation * (w.shape[-1] - 1) // 2
    return F.conv2d(x, w, b, stride=stride, padding=pad, dilation=dilation)


def _bn(x, sd, name):
    """Inference BatchNorm with running statistics, eps 1e-5 (spec §2)."""
    return F.batch_norm(
        x, sd[name + ".running_mean"], sd[name + ".running_var"], sd[name + ".weight"],
        sd[name + ".bias"], training=False, momentum=0.0, eps=BN_EPS,
    )


def upsample2x_crop(x, like):
    """Spec §3 "up": bilinear x2, align_corners=False (half-pixel centres, edge clamp), then
    keep the top-left H x W of `like` when the doubled map is larger (odd lateral sizes)."""
    y = F.interpolate(x, scale_factor=2.0, mode="bilinear", align_corners=False)
    h, w = like.shape[-2:]
    return y[:, :, :h, :w]


def upsample2x_by_formula(x):
    """The same x2 bilinear, written directly from the spec's formula
    src = (dst + 0.5) / 2 - 0.5, clamped to [0, n-1]; used only by the self-check to show that
    F.interpolate implements what the spec says."""
    def axis(n):
        dst = torch.arange(2 * n, dtype=torch.float64)
        src = ((dst + 0.5) / 2 - 0.5).clamp(min=0.0)
        i0 = src.floor().long().clamp(max=n - 1)
        i1 = (i0 + 1).clamp(max=n - 1)
        frac = (src - i0.to(torch.float64)).to(x.dtype)
        return i0, i1, frac

    h, w = x.shape[-2:]
    y0, y1, fy = axis(h)
    x0, x1, fx = axis(w)
    rows = x[:, :, y0, :] * (1 - fy)[:, None] + x[:, :, y1, :] * fy[:, None]
    return rows[:, :, :, x0] * (1 - fx) + rows[:, :, :, x1] * fx


# --------------------------------------------------------------------------------------------
# Backbone (spec §2)
# --------------------------------------------------------------------------------------------


def backbone(x, sd, blocks):
    """ResNet v1.5 (stride on the 3x3), BN after every bias-free conv; returns C2..C5."""
    x = F.relu(_bn(_conv(x, sd, "backbone.conv1", stride=2, bias=False), sd, "backbone.bn1"))
    x = F.max_pool2d(x, kernel_size=3, stride=2, padding=1)  # ceil(n/2)
    feats = []
    for li, nb in enumerate(blocks, start=1):
        for b in range(nb):
            pre = f"backbone.layer{li}.{b}"
            s = 2 if (b == 0 and li > 1) else 1
            y = F.relu(_bn(_conv(x, sd, pre + ".conv1", bias=False), sd, pre + ".bn1"))
            y = F.relu(_bn(_conv(y, sd, pre + ".conv2", stride=s, bias=False), sd, pre + ".bn2"))
            y = _bn(_conv(y, sd, pre + ".conv3", bias=False), sd, pre + ".bn3")
            if b == 0:  # every stage's block 0 has a projection shortcut, layer1 included
                sc = _bn(_conv(x, sd, pre + ".downsample.0", stride=s, bias=False), sd,
                         pre + ".downsample.1")
            else:
                sc = x
            x = F.relu(y + sc)
        feats.append(x)
    return feats


# --------------------------------------------------------------------------------------------
# Neck: LFPN (spec §3). The DSFD branch (fpn.dsfd_modules) is never computed.
# --------------------------------------------------------------------------------------------


def lfpn(c2, c3, c4, c5, sd):
    """Returns [P2, P3, P4, P5, P6, P7], 256 channels each."""
    c6 = F.relu(_bn(_conv(c5, sd, "fpn.c6.0"), sd, "fpn.c6.1"))
    c6 = F.relu(_bn(_conv(c6, sd, "fpn.c6.3", stride=2), sd, "fpn.c6.4"))
    c7 = F.relu(_bn(_conv(c6, sd, "fpn.c7.0"), sd, "fpn.c7.1"))
    c7 = F.relu(_bn(_conv(c7, sd, "fpn.c7.3", stride=2), sd, "fpn.c7.4"))
    p5 = _conv(c5, sd, "fpn.c5_lat")  # final, no smoothing
    p6 = _conv(c6, sd, "fpn.c6_lat")
    p7 = _conv(c7, sd, "fpn.c7_lat")
    # Top-down chain on the UNSMOOTHED sums: T3 is built from T4, not from P4.
    lat4 = _conv(c4, sd, "fpn.ff_c5_c4.main_conv")
    t4 = upsample2x_crop(p5, lat4) + lat4
    lat3 = _conv(c3, sd, "fpn.ff_c4_c3.main_conv")
    t3 = upsample2x_crop(t4, lat3) + lat3
    lat2 = _conv(c2, sd, "fpn.ff_c3_c2.main_conv")
    t2 = upsample2x_crop(t3, lat2) + lat2
    p4 = _conv(t4, sd, "fpn.p4_lat")
    p3 = _conv(t3, sd, "fpn.p3_lat")
    p2 = _conv(t2, sd, "fpn.p2_lat")
    return [p2, p3, p4, p5, p6, p7]


# --------------------------------------------------------------------------------------------
# Heads (spec §4)
# --------------------------------------------------------------------------------------------


def ssh_context(x, sd, pre="pred_net.conv_SSH"):
    """Spec §4a.1: SSH block, 256 -> 512 = concat[a 256, b 128, c 128]."""
    a = F.relu(_conv(x, sd, pre + ".conv1"))
    t = F.relu(_conv(x, sd, pre + ".conv2", dilation=2))
    b = F.relu(_conv(t, sd, pre + ".conv2_1"))
    c = F.relu(_conv(t, sd, pre + ".conv2_2", dilation=2))
    c = F.relu(_conv(c, sd, pre + ".conv2_2_1"))
    return torch.cat([a, b, c], dim=1)


def cpm_context(x, sd, pre="pred_net.conv_CPM"):
    """Spec §4b: CPM block, 256 -> 256 (residual part, then an SSH part, final ReLU)."""
    def conv_bn(y, name):
        return _bn(_conv(y, sd, f"{pre}.{name}.conv1"), sd, f"{pre}.{name}.bn1")

    b1 = conv_bn(x, "branch1")
    b2 = F.relu(conv_bn(x, "branch2a"))
    b2 = F.relu(conv_bn(b2, "branch2b"))
    b2 = conv_bn(b2, "branch2c")
    r = F.relu(b1 + b2)
    s1 = _conv(r, sd, pre + ".ssh_1")
    d = F.relu(_conv(r, sd, pre + ".ssh_dimred"))
    s2 = _conv(d, sd, pre + ".ssh_2")
    s3 = _conv(F.relu(_conv(d, sd, pre + ".ssh_3a")), sd, pre + ".ssh_3b")
    return F.relu(torch.cat([s1, s2, s3], dim=1))


def deep_tower(x, sd, pre):
    """Spec §4a.2 quirk: four repeats of (conv, GN, ReLU) that all use the SAME `conv1`;
    only gn1..gn4 differ. conv2..conv4 exist in the checkpoint but are never used."""
    for i in range(1, 5):
        x = _conv(x, sd, pre + ".conv1")
        x = F.group_norm(x, GN_GROUPS, sd[f"{pre}.gn{i}.weight"], sd[f"{pre}.gn{i}.bias"], eps=GN_EPS)
        x = F.relu(x)
    return x


def _flatten(t):
    """Spec §4e: NCHW -> NHWC -> (N, H*W*A, k) with A = 1."""
    n, k = t.shape[:2]
    return t.permute(0, 2, 3, 1).reshape(n, -1, k)


def heads(levels, sd, variant):
    """Spec §4a-4c, 4e: per-level conf (sigmoided) and loc, concatenated P2..P7."""
    confs, locs = [], []
    for li, p in enumerate(levels):
        if variant == "R50":  # RetinaPredNet: unshared per-level 3x3 convs straight on P_i
            cls = _conv(p, sd, f"pred_net.pred_cls.{li}")
            loc = _conv(p, sd, f"pred_net.pred_loc.{li}")
        else:  # MogPredNet: one set of weights for every level
            ctx = ssh_context(p, sd) if variant == "R101" else cpm_context(p, sd)
            cls = _conv(deep_tower(ctx, sd, "pred_net.deep_cls_head"), sd, "pred_net.pred_cls")
            loc = _conv(deep_tower(ctx, sd, "pred_net.deep_loc_head"), sd, "pred_net.pred_loc")
        confs.append(_flatten(torch.sigmoid(cls)))
        locs.append(_flatten(loc))
    return torch.cat(confs, dim=1), torch.cat(locs, dim=1)


def prepare_state_dict(sd, variant=None):
    """Check a state_dict strictly (spec §9) and return (float32 tensors dict, variant)."""
    v = check_state_dict(sd, variant)
    return {k: t.to(torch.float32) for k, t in sd.items() if not is_unused_key(k)}, v


@torch.no_grad()
def forward(sd, x, variant=None, return_levels=False):
    """Full network: x (N, 3, H, W) pre-processed per spec §6a -> (conf (N,S,1), loc (N,S,4)).

    `sd` is a state_dict (name -> tensor). The variant is detected (spec §9) if not given.
    With return_levels=True also returns the P2..P7 sizes [(h, w), ...]."""
    sd, v = prepare_state_dict(sd, variant)
    c2, c3, c4, c5 = backbone(x.to(torch.float32), sd, BLOCKS[v])
    levels = lfpn(c2, c3, c4, c5, sd)
    conf, loc = heads(levels, sd, v)
    if return_levels:
        return conf, loc, [tuple(p.shape[-2:]) for p in levels]
    return conf, loc


# --------------------------------------------------------------------------------------------
# Anchors and decoding (spec §5)
# --------------------------------------------------------------------------------------------


def level_sizes(h, w):
    """Spec §5 grid: apply n -> (n + 1) // 2 log2(stride) times; strides 4, 8, ..., 128."""
    sizes = []
    for level in range(NUM_LEVELS):
        hh, ww = h, w
        for _ in range(level + 2):
            hh, ww = (hh + 1) // 2, (ww + 1) // 2
        sizes.append((hh, ww))
    return sizes


def anchors(h, w, variant):
    """Spec §5: (S, 4) anchors (cx, cy, w, h) in network-input pixels for an H x W input.

    Level-major (P2 first), rows outer, columns inner; centre ((j+0.5)s, (i+0.5)s); one square
    anchor of side 16 * 2^l * scale (scale 0.68 for R101 and E, 1.0 for R50)."""
    scale = ANCHOR_SCALE[canonical_variant(variant)]
    out = []
    for level, (hh, ww) in enumerate(level_sizes(h, w)):
        stride = 4 * 2**level
        side = 16 * 2**level * scale
        cy, cx = torch.meshgrid(
            (torch.arange(hh, dtype=torch.float64) + 0.5) * stride,
            (torch.arange(ww, dtype=torch.float64) + 0.5) * stride,
            indexing="ij",
        )
        a = torch.stack([cx.reshape(-1), cy.reshape(-1),
                         torch.full((hh * ww,), side, dtype=torch.float64),
                         torch.full((hh * ww,), side, dtype=torch.float64)], dim=1)
        out.append(a)
    return torch.cat(out, dim=0).to(torch.float32)


def decode(loc, anc):
    """Spec §5 decoding, no variances: loc (..., 4) deltas (dx, dy, dw, dh), anc (S, 4)
    (cx, cy, w, h) -> boxes (..., 4) inclusive corners (x1, y1, x2, y2), in FP32 (§10.6)."""
    loc = loc.to(torch.float32)
    cx = anc[:, 0] + loc[..., 0] * anc[:, 2]
    cy = anc[:, 1] + loc[..., 1] * anc[:, 3]
    w = anc[:, 2] * torch.exp(loc[..., 2])
    h = anc[:, 3] * torch.exp(loc[..., 3])
    x1 = cx - (w - 1) / 2
    y1 = cy - (h - 1) / 2
    return torch.stack([x1, y1, x1 + w - 1, y1 + h - 1], dim=-1)


# --------------------------------------------------------------------------------------------
# Post-processing (spec §7, ModelScope column)
# --------------------------------------------------------------------------------------------


def iou_plus1(box, boxes):
    """IoU with "+1" areas (inclusive pixel corners), spec §7; float32 like the boxes."""
    iw = np.maximum(np.minimum(box[2], boxes[:, 2]) - np.maximum(box[0], boxes[:, 0]) + 1, 0)
    ih = np.maximum(np.minimum(box[3], boxes[:, 3]) - np.maximum(box[1], boxes[:, 1]) + 1, 0)
    inter = iw * ih
    area = (box[2] - box[0] + 1) * (box[3] - box[1] + 1)
    areas = (boxes[:, 2] - boxes[:, 0] + 1) * (boxes[:, 3] - boxes[:, 1] + 1)
    return inter / (area + areas - inter)


def nms_plus1(boxes, iou_threshold=0.4, max_keep=None):
    """Greedy NMS over boxes already sorted by descending score (spec §7): keep the first
    remaining box, drop every later box whose +1-area IoU with it is > iou_threshold.
    Stopping after `max_keep` kept boxes gives the same result as truncating afterwards."""
    b = torch.as_tensor(boxes).to(torch.float32).numpy()
    order = np.arange(b.shape[0])
    keep = []
    while order.size and (max_keep is None or len(keep) < max_keep):
        i = order[0]
        keep.append(i)
        rest = order[1:]
        order = rest[iou_plus1(b[i], b[rest]) <= iou_threshold]
    return torch.tensor(keep, dtype=torch.long)


def postprocess(conf, loc, anc, resize_scale=1.0, score_threshold=0.82, top_k=5000,
                nms_iou=0.4, max_dets=750):
    """Spec §7, ModelScope column, for ONE image: conf (S,1) or (S,), loc (S,4), anchors (S,4).

    1. decode all boxes (spec §5);  2. keep score > score_threshold (applied first);
    3. top-k by descending score (stable sort: ties keep anchor order);
    4. divide the box coordinates by the resize factor -> original-image pixels (not clipped);
    5. greedy NMS, +1 areas, drop if IoU > nms_iou;  6. keep the first max_dets.

    NOTE: ModelScope also divides the SCORE column by the resize factor (spec §7 note 1), so
    its scores exceed 1 for images resized from > 1500 px. That is a bug; we do NOT reproduce
    it: scores stay the sigmoid outputs.
    Returns (boxes (K,4) float32, scores (K,) float32)."""
    scores = conf.reshape(-1).to(torch.float32)
    boxes = decode(loc.reshape(-1, 4), anc)
    idx = torch.nonzero(scores > score_threshold).reshape(-1)
    order = torch.sort(scores[idx], descending=True, stable=True).indices[:top_k]
    idx = idx[order]
    scores, boxes = scores[idx], boxes[idx] / resize_scale
    keep = nms_plus1(boxes, nms_iou, max_keep=max_dets)
    return boxes[keep], scores[keep]


# --------------------------------------------------------------------------------------------
# Pre-processing (spec §6a, §6b, §10.1) and the two input policies of issue 3
# --------------------------------------------------------------------------------------------

MEAN_RGB = (123.675, 116.28, 103.53)  # ImageNet mean x 255 (BGR order in the spec, reversed)
STD_RGB = (58.395, 57.12, 57.375)


def normalize(rgb_uint8_hwc):
    """Spec §6a: (channel - mean*255) / (std*255) / 255, channels in RGB order -> (3, H, W)
    float32. (The original works in BGR and flips to RGB at the end; same values.)"""
    x = torch.as_tensor(rgb_uint8_hwc).to(torch.float32)
    mean = torch.tensor(MEAN_RGB, dtype=torch.float32)
    std = torch.tensor(STD_RGB, dtype=torch.float32)
    x = (x - mean) / std / 255.0
    return x.permute(2, 0, 1).contiguous()


def policy_scale(h, w, policy="modelscope", target_size=640):
    """Resize factor and resized size for an H x W image under an input policy (issue 3).

    modelscope (spec §6b): ss = 1000 / max(H, W) if max(H, W) > 1500, else 1 (no resize).
    bucket: ss = target_size / max(H, W) (always).
    Resized size = floor(n * ss + 0.5) per side (as cv2.resize with fx = fy = ss)."""
    long_side = max(h, w)
    if policy == "modelscope":
        ss = 1000.0 / long_side if long_side > 1500 else 1.0
    elif policy == "bucket":
        ss = float(target_size) / long_side
    else:
        raise ValueError(f"unknown input policy '{policy}' (modelscope or bucket)")
    if ss == 1.0:
        return 1.0, h, w
    return ss, int(math.floor(h * ss + 0.5)), int(math.floor(w * ss + 0.5))


def resize_bilinear_uint8(rgb_uint8_hwc, out_h, out_w, ss):
    """Bilinear resize of a uint8 HWC image like cv2.resize(img, None, fx=ss, fy=ss):
    half-pixel mapping src = (dst + 0.5) / ss - 0.5 clamped to the edges, no antialiasing,
    result rounded to uint8. (cv2 uses 11-bit fixed-point weights for uint8, so it can differ
    by 1 level; this is the exact-arithmetic version.)"""
    img = torch.as_tensor(rgb_uint8_hwc).to(torch.float64)
    in_h, in_w = img.shape[:2]

    def axis(n_out, n_in):
        src = ((torch.arange(n_out, dtype=torch.float64) + 0.5) / ss - 0.5).clamp(min=0.0)
        i0 = src.floor().long().clamp(max=n_in - 1)
        i1 = (i0 + 1).clamp(max=n_in - 1)
        return i0, i1, src - i0.to(torch.float64)

    y0, y1, fy = axis(out_h, in_h)
    x0, x1, fx = axis(out_w, in_w)
    fy, fx = fy[:, None, None], fx[None, :, None]
    rows0, rows1 = img[y0], img[y1]
    top = rows0[:, x0] * (1 - fx) + rows0[:, x1] * fx
    bot = rows1[:, x0] * (1 - fx) + rows1[:, x1] * fx
    out = top * (1 - fy) + bot * fy
    return torch.floor(out + 0.5).clamp(0, 255).to(torch.uint8)


class Prepared(NamedTuple):
    tensor: torch.Tensor  # (1, 3, Hp, Wp) network input
    scale: float  # resize factor ss (boxes are divided by it)
    resized_hw: tuple  # size after resizing, before padding
    orig_hw: tuple


def prepare(rgb_uint8_hwc, policy="modelscope", target_size=640, pad_multiple=32, resize="exact"):
    """Issue 3 input policies + spec §6a normalisation + spec §10.1 padding.

    Resize (policy_scale, then resize_bilinear_uint8, or with resize="cv2" ModelScope's own
    cv2.resize(img, None, fx=ss, fy=ss), which needs python3-opencv), normalise, then pad
    bottom/right with 0 (= the mean colour after normalisation) to multiples of `pad_multiple`
    (1 = no padding, ModelScope's own behaviour). Anchors need no shift for bottom/right
    padding."""
    img = torch.as_tensor(rgb_uint8_hwc)
    h, w = int(img.shape[0]), int(img.shape[1])
    ss, nh, nw = policy_scale(h, w, policy, target_size)
    if ss != 1.0 and resize == "cv2":
        import cv2  # only this path needs it
        img = torch.as_tensor(cv2.resize(img.numpy(), None, fx=ss, fy=ss))
        nh, nw = int(img.shape[0]), int(img.shape[1])
    elif (nh, nw) != (h, w):
        img = resize_bilinear_uint8(img, nh, nw, ss)
    x = normalize(img)
    m = max(1, int(pad_multiple))
    ph, pw = -nh % m, -nw % m
    if ph or pw:
        x = F.pad(x, (0, pw, 0, ph), value=0.0)
    return Prepared(x.unsqueeze(0), ss, (nh, nw), (h, w))


def preprocess(rgb_uint8_hwc, policy="modelscope", target_size=640, pad_multiple=32):
    """RGB uint8 HWC -> (1, 3, Hp, Wp) float32 input (spec §6a + policy + §10.1 padding).
    See prepare() for the resize factor needed by postprocess()."""
    return prepare(rgb_uint8_hwc, policy, target_size, pad_multiple).tensor


def detect(sd, rgb_uint8_hwc, variant=None, policy="modelscope", target_size=640,
           pad_multiple=32, **post):
    """End to end for one image: returns (boxes (K,4) in original pixels, scores (K,))."""
    p = prepare(rgb_uint8_hwc, policy, target_size, pad_multiple)
    v = variant or detect_variant(sd)
    conf, loc = forward(sd, p.tensor, v)
    anc = anchors(p.tensor.shape[2], p.tensor.shape[3], v)
    return postprocess(conf[0], loc[0], anc, p.scale, **post)


# --------------------------------------------------------------------------------------------
# Self-checks against numbers stated in the spec
# --------------------------------------------------------------------------------------------


def _selfcheck():
    torch.set_num_threads(2)
    ok = True

    def report(name, cond, detail=""):
        nonlocal ok
        ok &= bool(cond)
        print(f"[{'PASS' if cond else 'FAIL'}] {name} {detail}")

    # §9 entry counts, §8 parameter counts (parameters = everything but BN running stats and
    # num_batches_tracked; effective = without the unused keys).
    spec = {
        ("R101", False): (728, 85.26, 61.07, (42.50, 12.49, 6.08)),
        ("R101", True): (732, 85.27, 61.07, (42.50, 12.49, 6.08)),
        ("E", True): (994, 85.67, 72.09, (57.02, 12.49, 2.57)),
        ("R50", False): (388, 36.07, 36.07, (23.51, 12.49, 0.07)),
    }
    for (v, dsfd), (n, p_all, p_eff, parts) in spec.items():
        shapes = expected_shapes(v, with_dsfd_heads=dsfd)
        params = {k: math.prod(s) for k, (s, dt) in shapes.items()
                  if dt == "float32" and not k.endswith(("running_mean", "running_var"))}
        eff = {k: c for k, c in params.items() if not is_unused_key(k)}
        got_parts = tuple(round(sum(c for k, c in eff.items() if k.startswith(p)) / 1e6, 2)
                          for p in ("backbone.", "fpn.", "pred_net."))
        report(f"{v}{'+dsfd heads' if dsfd else ''} entries", len(shapes) == n, f"{len(shapes)} (spec {n})")
        report(f"{v} params", round(sum(params.values()) / 1e6, 2) == p_all,
               f"{sum(params.values()) / 1e6:.3f}M (spec {p_all}M)")
        report(f"{v} effective params", round(sum(eff.values()) / 1e6, 2) == p_eff
               and got_parts == parts, f"{sum(eff.values()) / 1e6:.3f}M {got_parts} (spec {p_eff}M {parts})")
    # §4e anchor count at 640x640 and §5 grid vs the real map sizes.
    n = anchors(640, 640, "R101").shape[0]
    report("sum anchors at 640x640", n == 34125, f"{n} (spec 34125)")
    a = anchors(640, 640, "R101")
    report("anchor side P2 / P7 (scale 0.68)", abs(a[0, 2] - 10.88) < 1e-4 and abs(a[-1, 2] - 348.16) < 1e-3,
           f"{a[0, 2].item():.2f} / {a[-1, 2].item():.2f}")
    # §3 "up": F.interpolate equals the spec's formula.
    g = torch.Generator().manual_seed(0)
    for hh, ww in ((5, 7), (1, 1), (10, 3)):
        x = torch.randn(2, 3, hh, ww, generator=g)
        d = (F.interpolate(x, scale_factor=2.0, mode="bilinear", align_corners=False)
             - upsample2x_by_formula(x)).abs().max().item()
        report(f"bilinear x2 half-pixel formula {hh}x{ww}", d < 1e-6, f"max diff {d:.2e}")
    # Map sizes of a tiny synthetic network vs level_sizes (odd input, exercises the crop).
    for v in ("R50",):
        from make_synthetic_checkpoint import synthetic_state_dict

        sd = synthetic_state_dict(v, seed=1)
        report(f"detect_variant {v}", detect_variant(sd) == v)
        for hh, ww in ((165, 229), (97, 33)):
            _, _, sizes = forward(sd, torch.zeros(1, 3, hh, ww), v, return_levels=True)
            report(f"level sizes {hh}x{ww}", sizes == level_sizes(hh, ww), str(sizes))
    print("ALL PASS" if ok else "SOME CHECKS FAILED")
    return ok


if __name__ == "__main__":
    if sys.argv[1:2] == ["selfcheck"]:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        sys.exit(0 if _selfcheck() else 1)
    print(__doc__)
