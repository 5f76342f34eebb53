"""MogFace checkpoint helpers shared by tools/convert_checkpoint.py and tests/reference/.

Written from ../shared/specs/mogface.md (the "spec"), section 9, in our own code:

* a safetensors writer and reader (plain struct + json, no `safetensors` package);
* loading any PyTorch checkpoint: zip format, legacy (pre-zip) pickle, a plain state_dict or
  one wrapped under `state_dict` / `model` / `net`, keys with or without a `module.` prefix;
* the exact key set and shapes of every variant (spec §9) and `detect_variant` (spec §9),
  plus a strict `check_state_dict` that names the offending keys.

Only the standard library and torch are needed.
"""

from __future__ import annotations

import json
import re
import struct
import sys
from collections import OrderedDict

# --------------------------------------------------------------------------------------------
# safetensors I/O
# --------------------------------------------------------------------------------------------

# torch dtype name -> (safetensors dtype, bytes per element)
_ST_DTYPES = {
    "float32": ("F32", 4),
    "float16": ("F16", 2),
    "bfloat16": ("BF16", 2),
    "float64": ("F64", 8),
    "int64": ("I64", 8),
    "int32": ("I32", 4),
    "int16": ("I16", 2),
    "int8": ("I8", 1),
    "uint8": ("U8", 1),
    "bool": ("BOOL", 1),
}


def _torch():
    import torch  # imported lazily so that the key tables work without torch

    return torch


def _tensor_bytes(t) -> bytes:
    """Raw little-endian bytes of a CPU tensor (row-major)."""
    torch = _torch()
    t = t.detach().to("cpu").contiguous()
    if sys.byteorder != "little":
        raise RuntimeError("the safetensors writer assumes a little-endian host")
    if t.dtype == torch.bfloat16:  # numpy has no bfloat16: reinterpret the bits
        t = t.view(torch.int16)
    return t.numpy().tobytes()


def write_safetensors(path: str, tensors: "dict[str, object]", metadata: dict | None = None) -> None:
    """Write `tensors` (name -> torch.Tensor) as a safetensors file.

    Layout: an 8-byte little-endian header length, a JSON header
    {name: {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__": {...}} padded
    with spaces to a multiple of 8 bytes, then the tensor data in the header's order with no gaps.
    """
    header: "OrderedDict[str, object]" = OrderedDict()
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    blobs = []
    offset = 0
    for name, t in tensors.items():
        dtype_name = str(t.dtype).replace("torch.", "")
        if dtype_name not in _ST_DTYPES:
            raise ValueError(f"tensor '{name}': dtype {t.dtype} has no safetensors equivalent here")
        st_dtype, _ = _ST_DTYPES[dtype_name]
        data = _tensor_bytes(t)
        header[name] = {
            "dtype": st_dtype,
            "shape": [int(d) for d in t.shape],
            "data_offsets": [offset, offset + len(data)],
        }
        blobs.append(data)
        offset += len(data)
    header_bytes = json.dumps(header, separators=(",", ":")).encode("utf-8")
    header_bytes += b" " * ((-len(header_bytes)) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(header_bytes)))
        f.write(header_bytes)
        for data in blobs:
            f.write(data)


def read_safetensors(path: str) -> "OrderedDict[str, object]":
    """Read a safetensors file into an ordered dict name -> torch.Tensor (dtype preserved)."""
    import numpy as np

    torch = _torch()
    np_types = {
        "F32": np.float32, "F16": np.float16, "F64": np.float64, "I64": np.int64,
        "I32": np.int32, "I16": np.int16, "I8": np.int8, "U8": np.uint8, "BOOL": np.bool_,
        "BF16": np.int16,
    }
    with open(path, "rb") as f:
        raw = f.read()
    if len(raw) < 8:
        raise ValueError(f"{path}: shorter than the 8-byte safetensors header length")
    (n,) = struct.unpack("<Q", raw[:8])
    if n > len(raw) - 8:
        raise ValueError(f"{path}: header length {n} exceeds the file")
    header = json.loads(raw[8 : 8 + n].decode("utf-8"), object_pairs_hook=OrderedDict)
    data = memoryview(raw)[8 + n :]
    out: "OrderedDict[str, object]" = OrderedDict()
    for name, e in header.items():
        if name == "__metadata__":
            continue
        begin, end = e["data_offsets"]
        arr = np.frombuffer(data[begin:end], dtype=np.dtype(np_types[e["dtype"]]).newbyteorder("<"))
        t = torch.from_numpy(arr.copy()).reshape(e["shape"])
        if e["dtype"] == "BF16":
            t = t.view(torch.bfloat16)
        out[name] = t
    return out


# --------------------------------------------------------------------------------------------
# Loading PyTorch checkpoints (spec §9 "Format")
# --------------------------------------------------------------------------------------------

ZIP_MAGIC = b"PK\x03\x04"
WRAPPER_KEYS = ("state_dict", "model", "net")


class CheckpointError(Exception):
    """A checkpoint that cannot be used, with a message meant for the user."""


def sniff_format(path: str) -> str:
    """'zip' (torch.save >= 1.6), 'safetensors', 'legacy' (pre-zip pickle) or 'unknown'."""
    with open(path, "rb") as f:
        head = f.read(16)
    if head.startswith(ZIP_MAGIC):
        return "zip"
    if len(head) >= 9:
        (n,) = struct.unpack("<Q", head[:8])
        if 2 <= n < (1 << 28) and head[8:9] == b"{":
            return "safetensors"
    # A legacy torch file is a sequence of pickles starting with the magic number
    # 0x1950a86a20f9469cfc6c; protocol-2 pickles start with 0x80 0x02.
    if head[:1] == b"\x80" and head[1:2] in (b"\x02", b"\x03", b"\x04", b"\x05"):
        return "legacy"
    return "unknown"


def _unwrap(obj, path: str):
    """Spec §9: a plain state_dict or one wrapped under state_dict/model/net (possibly nested)."""
    torch = _torch()
    for _ in range(4):
        if isinstance(obj, torch.nn.Module):
            obj = obj.state_dict()
        if isinstance(obj, dict) and obj and all(torch.is_tensor(v) for v in obj.values()):
            return obj
        if isinstance(obj, dict):
            inner = [k for k in WRAPPER_KEYS if k in obj]
            if inner:
                obj = obj[inner[0]]
                continue
        break
    raise CheckpointError(
        f"{path}: no state_dict found (expected a dict of tensors, possibly under one of "
        f"{', '.join(WRAPPER_KEYS)}); top-level type {type(obj).__name__}"
        + (f" with keys {sorted(map(str, obj))[:10]}" if isinstance(obj, dict) else "")
    )


def strip_module_prefix(sd: dict) -> "OrderedDict[str, object]":
    """Remove a leading `module.` (DataParallel) from every key that has it."""
    out: "OrderedDict[str, object]" = OrderedDict()
    for k, v in sd.items():
        nk = k[len("module.") :] if k.startswith("module.") else k
        if nk in out:
            raise CheckpointError(f"key '{nk}' appears both with and without the 'module.' prefix")
        out[nk] = v
    return out


def load_checkpoint(path: str, allow_unsafe_pickle: bool = False) -> "tuple[OrderedDict, str]":
    """Load any supported checkpoint file; returns (state_dict with plain keys, format name).

    Pickle-based files are read with torch.load(weights_only=True) first (no arbitrary code);
    a file that needs more (a pickled nn.Module, custom classes) is refused unless
    `allow_unsafe_pickle` is set.
    """
    torch = _torch()
    fmt = sniff_format(path)
    if fmt == "safetensors":
        return strip_module_prefix(read_safetensors(path)), fmt
    if fmt == "unknown":
        raise CheckpointError(
            f"{path}: not a PyTorch checkpoint (no zip magic 'PK', no pickle header) "
            "and not safetensors"
        )
    try:
        obj = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # noqa: BLE001 - we re-raise with context
        msg = str(e)
        # torch 1.13 wraps every error of the restricted unpickler, truncation included, as
        # "Weights only load failed. ... WeightsUnpickler error: <cause>".
        cause = msg.split("WeightsUnpickler error:")[-1].strip()
        needs_full_unpickle = "WeightsUnpickler error:" in msg and (
            "Unsupported" in cause or "global" in cause.lower()
        )
        if not needs_full_unpickle:
            raise CheckpointError(
                f"{path}: cannot read this {fmt} checkpoint (truncated or corrupt?): "
                f"{type(e).__name__}: {cause[:300]}"
            ) from e
        if not allow_unsafe_pickle:
            raise CheckpointError(
                f"{path}: the file holds more than tensors and plain containers "
                f"({cause[:200]}); if you trust it, retry with --allow-unsafe-pickle"
            ) from e
        obj = torch.load(path, map_location="cpu", weights_only=False)
    return strip_module_prefix(_unwrap(obj, path)), fmt


# --------------------------------------------------------------------------------------------
# Key set and shapes (spec §9), variant detection
# --------------------------------------------------------------------------------------------

# Canonical variant names. Baseline / Ali-AMS / SSE share one network (spec §1, §4c).
VARIANTS = ("R101", "E", "R50")
VARIANT_ALIASES = {
    "r101": "R101", "mogface": "R101", "mogface-large": "R101", "modelscope": "R101",
    "e": "E", "mogface-e": "E", "mogface_e": "E", "r152": "E",
    "r50": "R50", "baseline": "R50", "ali-ams": "R50", "ali_ams": "R50", "sse": "R50",
}
BLOCKS = {"R101": (3, 4, 23, 3), "E": (3, 4, 36, 3), "R50": (3, 4, 6, 3)}  # spec §2
HEAD = {"R101": "ssh512", "E": "cpm256", "R50": "retina"}  # spec §4
ANCHOR_SCALE = {"R101": 0.68, "E": 0.68, "R50": 1.0}  # spec §5


class UnsupportedVariant(CheckpointError):
    """HCAM or any key set that matches none of the supported variants."""


def canonical_variant(name: str) -> str:
    key = name.strip().lower()
    if key in ("hcam", "mogface_hcam", "mogface-hcam"):
        raise UnsupportedVariant(
            "MogFace HCAM is not supported: its released test path uses data-dependent masking "
            "with an off-by-one clamp that crashes at the image borders, and its extra output is "
            "ignored by the released test scripts (spec §4d)"
        )
    if key not in VARIANT_ALIASES:
        raise UnsupportedVariant(f"unknown MogFace variant '{name}' (known: R101, E, R50)")
    return VARIANT_ALIASES[key]


def _bn(prefix: str, c: int, out: dict) -> None:
    out[prefix + ".weight"] = ((c,), "float32")
    out[prefix + ".bias"] = ((c,), "float32")
    out[prefix + ".running_mean"] = ((c,), "float32")
    out[prefix + ".running_var"] = ((c,), "float32")
    out[prefix + ".num_batches_tracked"] = ((), "int64")


def _conv(prefix: str, cout: int, cin: int, k: int, out: dict, bias: bool = True) -> None:
    out[prefix + ".weight"] = ((cout, cin, k, k), "float32")
    if bias:
        out[prefix + ".bias"] = ((cout,), "float32")


def expected_shapes(variant: str, with_dsfd_heads: bool | None = None) -> "OrderedDict[str, tuple]":
    """Spec §9: every key of the variant's state_dict -> (shape tuple, dtype name).

    R101 is the ModelScope class (728 entries); `with_dsfd_heads=True` adds the 4 training-only
    `pred_net.dsfd_{conf,loc}` keys of the original training checkpoint (732). MogFace-E is the
    original checkpoint and carries them by default (994); pass False to drop them.
    R50 (Baseline / Ali-AMS / SSE) has no DSFD keys at all (388).
    """
    v = canonical_variant(variant)
    if with_dsfd_heads is None:
        with_dsfd_heads = v == "E"
    out: "OrderedDict[str, tuple]" = OrderedDict()
    # Backbone (spec §2, §9): torchvision ResNet v1.5 without fc.
    _conv("backbone.conv1", 64, 3, 7, out, bias=False)
    _bn("backbone.bn1", 64, out)
    cin = 64
    for li, (p, nb) in enumerate(zip((64, 128, 256, 512), BLOCKS[v]), start=1):
        for b in range(nb):
            pre = f"backbone.layer{li}.{b}"
            _conv(pre + ".conv1", p, cin, 1, out, bias=False)
            _bn(pre + ".bn1", p, out)
            _conv(pre + ".conv2", p, p, 3, out, bias=False)
            _bn(pre + ".bn2", p, out)
            _conv(pre + ".conv3", 4 * p, p, 1, out, bias=False)
            _bn(pre + ".bn3", 4 * p, out)
            if b == 0:
                _conv(pre + ".downsample.0", 4 * p, cin, 1, out, bias=False)
                _bn(pre + ".downsample.1", 4 * p, out)
            cin = 4 * p
    # FPN (spec §3, §9).
    _conv("fpn.c6.0", 512, 2048, 1, out)
    _bn("fpn.c6.1", 512, out)
    _conv("fpn.c6.3", 512, 512, 3, out)
    _bn("fpn.c6.4", 512, out)
    _conv("fpn.c7.0", 128, 512, 1, out)
    _bn("fpn.c7.1", 128, out)
    _conv("fpn.c7.3", 256, 128, 3, out)
    _bn("fpn.c7.4", 256, out)
    _conv("fpn.c5_lat", 256, 2048, 3, out)
    _conv("fpn.c6_lat", 256, 512, 3, out)
    _conv("fpn.c7_lat", 256, 256, 3, out)
    _conv("fpn.ff_c5_c4.main_conv", 256, 1024, 1, out)
    _conv("fpn.ff_c4_c3.main_conv", 256, 512, 1, out)
    _conv("fpn.ff_c3_c2.main_conv", 256, 256, 1, out)
    _conv("fpn.p4_lat", 256, 256, 3, out)
    _conv("fpn.p3_lat", 256, 256, 3, out)
    _conv("fpn.p2_lat", 256, 256, 3, out)
    if v in ("R101", "E"):  # dead DSFD branch (spec §3)
        for i, c in enumerate((256, 512, 1024, 2048, 256, 256)):
            _conv(f"fpn.dsfd_modules.{i}", 256, c, 3, out)
    # Heads (spec §4, §9).
    if v == "R101":
        _conv("pred_net.conv_SSH.conv1", 256, 256, 3, out)
        _conv("pred_net.conv_SSH.conv2", 128, 256, 3, out)
        _conv("pred_net.conv_SSH.conv2_1", 128, 128, 3, out)
        _conv("pred_net.conv_SSH.conv2_2", 128, 128, 3, out)
        _conv("pred_net.conv_SSH.conv2_2_1", 128, 128, 3, out)
    elif v == "E":
        cpm = "pred_net.conv_CPM"
        for name, co, ci, k in (("branch1", 512, 256, 1), ("branch2a", 128, 256, 1),
                                ("branch2b", 128, 128, 3), ("branch2c", 512, 128, 1)):
            _conv(f"{cpm}.{name}.conv1", co, ci, k, out)
            _bn(f"{cpm}.{name}.bn1", co, out)
        _conv(cpm + ".ssh_1", 128, 512, 3, out)
        _conv(cpm + ".ssh_dimred", 64, 512, 3, out)
        _conv(cpm + ".ssh_2", 64, 64, 3, out)
        _conv(cpm + ".ssh_3a", 64, 64, 3, out)
        _conv(cpm + ".ssh_3b", 64, 64, 3, out)
    if v in ("R101", "E"):
        ch = 512 if v == "R101" else 256
        for tower in ("deep_cls_head", "deep_loc_head"):
            for i in range(1, 5):
                _conv(f"pred_net.{tower}.conv{i}", ch, ch, 3, out)
            for i in range(1, 5):
                out[f"pred_net.{tower}.gn{i}.weight"] = ((ch,), "float32")
                out[f"pred_net.{tower}.gn{i}.bias"] = ((ch,), "float32")
        _conv("pred_net.pred_cls", 1, ch, 3, out)
        _conv("pred_net.pred_loc", 4, ch, 3, out)
        if with_dsfd_heads:
            _conv("pred_net.dsfd_loc", 4, 256, 3, out)
            _conv("pred_net.dsfd_conf", 1, 256, 3, out)
    else:
        for i in range(6):
            _conv(f"pred_net.pred_cls.{i}", 1, 256, 3, out)
        for i in range(6):
            _conv(f"pred_net.pred_loc.{i}", 4, 256, 3, out)
    return out


_UNUSED_RE = re.compile(
    r"(^fpn\.dsfd_modules\.)|(^pred_net\.dsfd_(conf|loc)\.)|"
    r"(^pred_net\.deep_(cls|loc)_head\.conv[234]\.)|(\.num_batches_tracked$)"
)


def is_unused_key(key: str) -> bool:
    """Spec §3, §4a, §9: keys that never influence conf/loc (DSFD modules and heads,
    deep-head conv2..conv4, BN num_batches_tracked)."""
    return _UNUSED_RE.search(key) is not None


def _count_blocks(keys, layer: int) -> int:
    pat = re.compile(rf"^backbone\.layer{layer}\.(\d+)\.conv1\.weight$")
    idx = {int(m.group(1)) for k in keys for m in [pat.match(k)] if m}
    return max(idx) + 1 if idx else 0


def detect_variant(sd: dict) -> str:
    """Spec §9: identify the variant from keys and shapes. Returns 'R101', 'E' or 'R50'.

    Raises UnsupportedVariant for HCAM (spec §4d) and for anything that does not match.
    Only identifies; use check_state_dict for the strict key/shape check.
    """
    keys = set(sd)
    if any(k.startswith(("fp_context.", "pred_net_1.")) for k in keys):
        canonical_variant("HCAM")  # raises with the explanation
    blocks = tuple(_count_blocks(keys, L) for L in range(1, 5))

    def shape(k):
        return tuple(sd[k].shape) if k in sd else None

    if "pred_net.conv_SSH.conv1.weight" in keys:
        head = "ssh%d" % (shape("pred_net.deep_cls_head.conv1.weight") or (0,))[0]
    elif "pred_net.conv_CPM.branch1.conv1.weight" in keys:
        head = "cpm%d" % (shape("pred_net.deep_cls_head.conv1.weight") or (0,))[0]
    elif "pred_net.pred_cls.0.weight" in keys:
        head = "retina"
    else:
        head = "none"
    for v in VARIANTS:
        if BLOCKS[v] == blocks and HEAD[v] == head:
            return v
    raise UnsupportedVariant(
        f"not a supported MogFace checkpoint: backbone blocks per stage {list(blocks)}, head "
        f"'{head}' (supported: R101 = [3,4,23,3] + SSH/512 deep heads, "
        "E = [3,4,36,3] + CPM/256 deep heads, R50 = [3,4,6,3] + RetinaPredNet)"
    )


def check_state_dict(sd: dict, variant: str | None = None) -> str:
    """Strict check (spec §9): every needed key present with the exact shape; the documented
    unused keys may be present (with the right shape) or absent; nothing else. Returns the
    variant; raises CheckpointError listing the offending keys."""
    v = canonical_variant(variant) if variant else detect_variant(sd)
    expected = expected_shapes(v, with_dsfd_heads=True)
    missing = [k for k in expected if k not in sd and not is_unused_key(k)]
    extra = [k for k in sd if k not in expected]
    bad = [
        f"{k} {list(sd[k].shape)} (expected {list(expected[k][0])})"
        for k in sd
        if k in expected and tuple(sd[k].shape) != expected[k][0]
    ]
    problems = []
    if missing:
        problems.append(f"{len(missing)} missing: " + ", ".join(missing[:20]))
    if extra:
        problems.append(f"{len(extra)} unexpected: " + ", ".join(extra[:20]))
    if bad:
        problems.append(f"{len(bad)} mis-shaped: " + ", ".join(bad[:20]))
    if problems:
        raise CheckpointError(f"state_dict does not match MogFace {v}: " + "; ".join(problems))
    return v
