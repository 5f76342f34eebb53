#!/usr/bin/env python3
"""Where one forward pass spends its oneDNN time, from a DNNL_VERBOSE=1 log.

Takes the last pass in the log (it starts at the last convolution reading 3 channels: the
network's input convolution) and sums time per primitive kind and implementation, with weight
reorders listed by shape (a reorder on every pass means the weights were not kept in the layout
the kernel wants).

    DNNL_VERBOSE=1 build/mogserve bench engine --default-only --batch-sizes 1 --iterations 3 \\
        --min-seconds 0 --warmup 2 --precisions fp32 > log.txt 2>/dev/null
    /usr/bin/python3 tools/onednn_verbose_summary.py log.txt
"""
import collections
import sys


def summarize(path):
    rows = [line.strip().split(",") for line in open(path) if line.startswith("onednn_verbose,exec")]
    starts = [i for i, r in enumerate(rows) if r[3] == "convolution" and "ic3oc" in r[-2]]
    if not starts:
        raise SystemExit(f"{path}: no pass found (no convolution reading 3 channels)")
    last = rows[starts[-1]:]
    total = collections.defaultdict(lambda: [0, 0.0])
    for r in last:
        kind, impl, desc, ms = r[3], r[4], r[-2], float(r[-1])
        if kind == "convolution":
            what = ("depthwise" if "dw" in impl else "1x1" if "kh1" in desc and "kw1" in desc
                    else "dense kxk")
            key = f"convolution {what} [{impl}]"
        elif kind == "reorder":
            key = f"reorder [{impl}] {desc}"
        else:
            key = f"{kind} [{impl}]"
        total[key][0] += 1
        total[key][1] += ms
    all_ms = sum(v[1] for v in total.values())
    print(f"{path}: {len(last)} primitives in the last pass, {all_ms:.2f} ms in oneDNN")
    print("| primitive | calls | ms | share |")
    print("|---|---:|---:|---:|")
    for key, (calls, ms) in sorted(total.items(), key=lambda kv: -kv[1][1]):
        print(f"| {key} | {calls} | {ms:.2f} | {100 * ms / all_ms:.1f} % |")


for p in sys.argv[1:]:
    summarize(p)
