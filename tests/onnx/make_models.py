#!/usr/bin/env python3
"""Writes the ONNX test networks of tests/onnx: small networks shaped like each detector family
mogserve imports (their outputs' names, shapes and order as the upstream exports have them, and the
operators those exports use), with seeded random weights, exported by torch.onnx.export at several
operator-set versions, dynamic and fixed input sizes.

    /usr/bin/python3 tests/onnx/make_models.py OUT_DIR

Writes OUT_DIR/<name>.onnx and OUT_DIR/manifest.json: [{"file", "family", "opset", "layout",
"dynamic", "sizes": [[h, w], ...]}] (family null: a
network mogserve must refuse, naming its Erf node). Needs only Debian's python3-torch (torch.onnx.export does
not need the onnx package).

The families (what the real files look like; the networks here are much smaller):
  scrfd      insightface SCRFD (det_10g.onnx, det_2.5g.onnx): per stride 8/16/32 a sigmoid score
             [N, HW*2, 1], box distances [N, HW*2, 4] and landmarks [N, HW*2, 10], scores first;
             a PAFPN neck whose top-down path upsamples by 2 (nearest). The "2-D" variant writes
             [HW*2, C] rows without the batch axis, as insightface's own exports do.
  retinaface biubug6/Pytorch_Retinaface (mobilenet0.25): LeakyReLU(0.1) backbone, an FPN whose
             upsampling takes the lateral's size (a Shape -> Gather -> Resize chain), SSH context
             modules, and the three outputs loc [N, A, 4], softmax conf [N, A, 2], landm [N, A, 10].
  yunet      OpenCV's YuNet 2023mar: outputs cls_S, obj_S (sigmoid, [N, HW, 1]), bbox_S [N, HW, 4]
             and kps_S [N, HW, 10] for S = 8, 16, 32, depthwise units.
  ultraface  Linzaer's Ultra-Light-Fast (slim, 320x240): softmax scores [N, A, 2] and boxes
             [N, A, 4] decoded inside the graph from constant priors (Slice, Exp, Mul, Add, Sub,
             Div, Concat on 3-D values).
"""

import json
import math
import os
import sys
import warnings
import zlib

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.dont_write_bytecode = True


def conv_bn(cin, cout, k=3, s=1, groups=1, act="relu"):
    layers = [nn.Conv2d(cin, cout, k, s, k // 2, groups=groups, bias=False), nn.BatchNorm2d(cout)]
    if act == "relu":
        layers.append(nn.ReLU(inplace=True))
    elif act == "leaky":
        layers.append(nn.LeakyReLU(0.1, inplace=True))
    return nn.Sequential(*layers)


def randomize_bn(module, gen):
    """Non-trivial BatchNorm statistics, so folding them is tested."""
    for m in module.modules():
        if isinstance(m, nn.BatchNorm2d):
            with torch.no_grad():
                m.running_mean.copy_(torch.randn(m.num_features, generator=gen) * 0.1)
                m.running_var.copy_(torch.rand(m.num_features, generator=gen) + 0.5)
                m.weight.copy_(torch.rand(m.num_features, generator=gen) + 0.5)
                m.bias.copy_(torch.randn(m.num_features, generator=gen) * 0.1)


class Scrfd(nn.Module):
    def __init__(self, batched=True):
        super().__init__()
        self.batched = batched
        self.stem = nn.Sequential(conv_bn(3, 16, s=2), conv_bn(16, 24, s=2))  # stride 4
        self.c8 = conv_bn(24, 32, s=2)
        self.c16 = conv_bn(32, 48, s=2)
        self.c32 = conv_bn(48, 64, s=2)
        self.lat = nn.ModuleList([nn.Conv2d(c, 32, 1) for c in (32, 48, 64)])
        self.down = nn.ModuleList([nn.Conv2d(32, 32, 3, 2, 1) for _ in range(2)])
        self.share = conv_bn(32, 32)
        self.cls = nn.ModuleList([nn.Conv2d(32, 2, 3, 1, 1) for _ in range(3)])
        self.reg = nn.ModuleList([nn.Conv2d(32, 8, 3, 1, 1) for _ in range(3)])
        self.kps = nn.ModuleList([nn.Conv2d(32, 20, 3, 1, 1) for _ in range(3)])
        with torch.no_grad():  # spread scores (most below insightface's 0.5, some well above)
            for c in self.cls:
                c.weight.mul_(8.0)
                c.bias.fill_(-1.5)
            for c in self.reg:  # distances mostly positive (boxes with an area), as trained ones
                c.weight.mul_(0.3)
                c.bias.fill_(2.0)

    def rows(self, x, c):
        x = x.permute(0, 2, 3, 1)
        return x.reshape(x.shape[0], -1, c) if self.batched else x.reshape(-1, c)

    def forward(self, x):
        f8 = self.c8(self.stem(x))
        f16 = self.c16(f8)
        f32 = self.c32(f16)
        p32 = self.lat[2](f32)
        p16 = self.lat[1](f16) + F.interpolate(p32, scale_factor=2.0, mode="nearest")
        p8 = self.lat[0](f8) + F.interpolate(p16, scale_factor=2.0, mode="nearest")
        p16 = p16 + self.down[0](p8)  # PAFPN's bottom-up path
        p32 = p32 + self.down[1](p16)
        scores, boxes, kps = [], [], []
        for i, p in enumerate((p8, p16, p32)):
            t = self.share(p)
            scores.append(self.rows(torch.sigmoid(self.cls[i](t)), 1))
            boxes.append(self.rows(self.reg[i](t), 4))
            kps.append(self.rows(self.kps[i](t), 10))
        return tuple(scores + boxes + kps)


class Ssh(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.c3 = conv_bn(cin, cout // 2, act=None)
        self.c5_1 = conv_bn(cin, cout // 4, act="leaky")
        self.c5_2 = conv_bn(cout // 4, cout // 4, act=None)
        self.c7_2 = conv_bn(cout // 4, cout // 4, act="leaky")
        self.c7_3 = conv_bn(cout // 4, cout // 4, act=None)

    def forward(self, x):
        c5_1 = self.c5_1(x)
        c7 = self.c7_3(self.c7_2(c5_1))
        return F.relu(torch.cat([self.c3(x), self.c5_2(c5_1), c7], dim=1))


class RetinaFace(nn.Module):
    def __init__(self):
        super().__init__()

        def dw(cin, cout, s):
            return nn.Sequential(conv_bn(cin, cin, s=s, groups=cin, act="leaky"),
                                 conv_bn(cin, cout, k=1, act="leaky"))

        self.stage1 = nn.Sequential(conv_bn(3, 8, s=2, act="leaky"), dw(8, 16, 1), dw(16, 32, 2),
                                    dw(32, 32, 1), dw(32, 64, 2))  # stride 8
        self.stage2 = nn.Sequential(dw(64, 128, 2), dw(128, 128, 1))  # 16
        self.stage3 = nn.Sequential(dw(128, 256, 2))  # 32
        self.out = nn.ModuleList([conv_bn(c, 32, k=1, act="leaky") for c in (64, 128, 256)])
        self.merge = nn.ModuleList([conv_bn(32, 32, act="leaky") for _ in range(2)])
        self.ssh = nn.ModuleList([Ssh(32, 32) for _ in range(3)])
        self.cls = nn.ModuleList([nn.Conv2d(32, 4, 1) for _ in range(3)])
        self.box = nn.ModuleList([nn.Conv2d(32, 8, 1) for _ in range(3)])
        self.ldm = nn.ModuleList([nn.Conv2d(32, 20, 1) for _ in range(3)])

    def forward(self, x):
        f1 = self.stage1(x)
        f2 = self.stage2(f1)
        f3 = self.stage3(f2)
        o1, o2, o3 = self.out[0](f1), self.out[1](f2), self.out[2](f3)
        o2 = self.merge[1](o2 + F.interpolate(o3, size=[o2.size(2), o2.size(3)], mode="nearest"))
        o1 = self.merge[0](o1 + F.interpolate(o2, size=[o1.size(2), o1.size(3)], mode="nearest"))
        feats = [self.ssh[i](f) for i, f in enumerate((o1, o2, o3))]

        def heads(layers, c):
            return torch.cat([layers[i](f).permute(0, 2, 3, 1).contiguous().view(f.shape[0], -1, c)
                              for i, f in enumerate(feats)], dim=1)

        return heads(self.box, 4), F.softmax(heads(self.cls, 2), dim=-1), heads(self.ldm, 10)


class YuNet(nn.Module):
    def __init__(self):
        super().__init__()

        def dp(cin, cout):  # YuNet's ConvDPUnit: 1x1 then 3x3 depthwise, BN, ReLU
            return nn.Sequential(nn.Conv2d(cin, cout, 1), nn.Conv2d(cout, cout, 3, 1, 1, groups=cout),
                                 nn.BatchNorm2d(cout), nn.ReLU(inplace=True))

        self.stem = nn.Sequential(conv_bn(3, 16, s=2), dp(16, 16), nn.MaxPool2d(2))  # 4
        self.s8 = nn.Sequential(dp(16, 32), nn.MaxPool2d(2))
        self.s16 = nn.Sequential(dp(32, 48), nn.MaxPool2d(2))
        self.s32 = nn.Sequential(dp(48, 64), nn.MaxPool2d(2))
        def head(cin, cout):  # ConvDPUnit(withBNRelu=False): YuNet's heads end without either
            return nn.Sequential(nn.Conv2d(cin, cout, 1), nn.Conv2d(cout, cout, 3, 1, 1, groups=cout))

        self.lat = nn.ModuleList([dp(c, 32) for c in (32, 48, 64)])
        self.cls = nn.ModuleList([head(32, 1) for _ in range(3)])
        self.obj = nn.ModuleList([head(32, 1) for _ in range(3)])
        self.bbox = nn.ModuleList([head(32, 4) for _ in range(3)])
        self.kps = nn.ModuleList([head(32, 10) for _ in range(3)])
        with torch.no_grad():  # spread scores: most faces below 0.5, some well above
            for c in list(self.cls) + list(self.obj):
                c[1].weight.mul_(6.0)
                c[1].bias.fill_(-0.5)

    def forward(self, x):
        f8 = self.s8(self.stem(x))
        f16 = self.s16(f8)
        f32 = self.s32(f16)
        p32 = self.lat[2](f32)
        p16 = self.lat[1](f16) + F.interpolate(p32, scale_factor=2.0, mode="bilinear",
                                               align_corners=False)
        p8 = self.lat[0](f8) + F.interpolate(p16, scale_factor=2.0, mode="bilinear",
                                             align_corners=False)
        feats = (p8, p16, p32)
        out = []
        for layers, c, act in ((self.cls, 1, True), (self.obj, 1, True), (self.bbox, 4, False),
                               (self.kps, 10, False)):
            for i, f in enumerate(feats):
                y = layers[i](f)
                y = torch.sigmoid(y) if act else y
                out.append(y.permute(0, 2, 3, 1).reshape(y.shape[0], -1, c))
        return tuple(out)


def ultraface_priors(w, h):
    """Linzaer's define_img_size priors for 320x240: strides 8/16/32/64, min boxes per level."""
    min_boxes = [[10, 16, 24], [32, 48], [64, 96], [128, 192, 256]]
    strides = [8, 16, 32, 64]
    priors = []
    for stride, boxes in zip(strides, min_boxes):
        fw, fh = math.ceil(w / stride), math.ceil(h / stride)
        for j in range(fh):
            for i in range(fw):
                for b in boxes:
                    priors.append([(i + 0.5) / fw, (j + 0.5) / fh, b / w, b / h])
    return torch.tensor(priors).clamp(0.0, 1.0)


class UltraFace(nn.Module):
    def __init__(self, w=320, h=240):
        super().__init__()

        def dw(cin, cout, s):
            return nn.Sequential(conv_bn(cin, cin, s=s, groups=cin), conv_bn(cin, cout, k=1))

        self.b8 = nn.Sequential(conv_bn(3, 16, s=2), dw(16, 32, 2), dw(32, 32, 2))
        self.b16 = dw(32, 64, 2)
        self.b32 = dw(64, 96, 2)
        self.b64 = nn.Sequential(nn.Conv2d(96, 64, 1), nn.ReLU(), nn.Conv2d(64, 128, 3, 2, 1),
                                 nn.ReLU())
        counts = [3, 2, 2, 3]
        chans = [32, 64, 96, 128]
        self.cls = nn.ModuleList([nn.Conv2d(c, n * 2, 3, 1, 1) for c, n in zip(chans, counts)])
        self.reg = nn.ModuleList([nn.Conv2d(c, n * 4, 3, 1, 1) for c, n in zip(chans, counts)])
        self.register_buffer("priors", ultraface_priors(w, h).unsqueeze(0))

    def forward(self, x):
        f8 = self.b8(x)
        f16 = self.b16(f8)
        f32 = self.b32(f16)
        f64 = self.b64(f32)
        conf, loc = [], []
        for i, f in enumerate((f8, f16, f32, f64)):
            conf.append(self.cls[i](f).permute(0, 2, 3, 1).contiguous().view(f.size(0), -1, 2))
            loc.append(self.reg[i](f).permute(0, 2, 3, 1).contiguous().view(f.size(0), -1, 4))
        conf = F.softmax(torch.cat(conf, 1), dim=2)
        loc = torch.cat(loc, 1)
        p = self.priors
        centre = torch.cat([loc[..., :2] * 0.1 * p[..., 2:] + p[..., :2],
                            torch.exp(loc[..., 2:] * 0.2) * p[..., 2:]], dim=2)
        boxes = torch.cat([centre[..., :2] - centre[..., 2:] / 2,
                           centre[..., :2] + centre[..., 2:] / 2], dim=2)
        return conf, boxes


class GeluHead(nn.Module):
    """A network with an operator mogserve does not import (GELU exports as Erf)."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, 1, 1)

    def forward(self, x):
        return F.gelu(self.conv(x))


# name, family, module, opset, outputs, dynamic, export size (h, w), sizes to check
SCRFD_OUT = ["score_8", "score_16", "score_32", "bbox_8", "bbox_16", "bbox_32",
             "kps_8", "kps_16", "kps_32"]
YUNET_OUT = [f"{h}_{s}" for h in ("cls", "obj", "bbox", "kps") for s in (8, 16, 32)]
MODELS = [
    ("scrfd_opset9", "scrfd", lambda: Scrfd(), 9, SCRFD_OUT, True, (96, 128), [[96, 128], [384, 512]]),
    ("scrfd_opset11", "scrfd", lambda: Scrfd(), 11, SCRFD_OUT, True, (96, 128), [[640, 640], [1344, 1792]]),
    ("scrfd_opset13_2d", "scrfd", lambda: Scrfd(batched=False), 13, SCRFD_OUT, True, (96, 128),
     [[480, 640]]),
    ("scrfd_opset17", "scrfd", lambda: Scrfd(), 17, SCRFD_OUT, True, (96, 128), [[384, 512]]),
    ("retinaface_opset11", "retinaface", lambda: RetinaFace(), 11, ["loc", "conf", "landms"], True,
     (96, 128), [[640, 640], [375, 500]]),
    ("retinaface_opset13", "retinaface", lambda: RetinaFace(), 13, ["loc", "conf", "landms"], True,
     (96, 128), [[1350, 1800]]),
    ("yunet_opset11", "yunet", lambda: YuNet(), 11, YUNET_OUT, True, (96, 128), [[640, 640], [384, 512]]),
    ("yunet_fixed_opset13", "yunet", lambda: YuNet(), 13, YUNET_OUT, False, (128, 160), [[128, 160]]),
    ("ultraface_opset11", "ultraface", lambda: UltraFace(), 11, ["scores", "boxes"], False,
     (240, 320), [[240, 320]]),
    ("unsupported_erf", None, lambda: GeluHead(), 13, ["y"], True, (32, 32), [[32, 32]]),
]


def export(out_dir, name, module, opset, outputs, dynamic, size):
    gen = torch.Generator().manual_seed(zlib.crc32(name.encode()))
    torch.manual_seed(zlib.crc32(name.encode()))
    randomize_bn(module, gen)
    module.eval()
    x = torch.rand(1, 3, size[0], size[1], generator=gen)
    axes = None
    if dynamic:
        axes = {"input": {0: "batch", 2: "height", 3: "width"}}
        for o in outputs:
            axes[o] = {0: "batch"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(module, x, os.path.join(out_dir, name + ".onnx"), opset_version=opset,
                          input_names=["input"], output_names=outputs, dynamic_axes=axes,
                          do_constant_folding=True)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    manifest = []
    for name, family, make, opset, outputs, dynamic, size, sizes in MODELS:
        export(out_dir, name, make(), opset, outputs, dynamic, size)
        manifest.append({"file": name + ".onnx", "family": family, "opset": opset, "layout": "NCHW",
                         "dynamic": dynamic, "sizes": sizes})
    tmp = os.path.join(out_dir, "manifest.json.part")
    with open(tmp, "w") as f:
        json.dump(manifest, f, indent=1)
    os.replace(tmp, os.path.join(out_dir, "manifest.json"))


if __name__ == "__main__":
    main()
