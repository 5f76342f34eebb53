#!/usr/bin/env python3
"""The side-by-side table of scripts/bench_ab.sh: usage: bench_ab_summary.py OUT_DIR (Markdown on stdout)."""
import json, sys, statistics, pathlib
d = pathlib.Path(sys.argv[1])
def load(kind, label, r):
    p = d / f"{kind}_{label}_{r}.json"
    return json.load(open(p)) if p.exists() else None
def engine(j, batch):
    for row in j["rows"]:
        if row["batch"] == batch: return row["median_ms"] / batch
def pipe_closed(j, c):
    for row in j["rows"]:
        if row["mode"] == "closed" and row["concurrency"] == c: return row["throughput_per_s"]
def pipe_open(j, load):
    for row in j["rows"]:
        if row["mode"] == "open" and abs(row["load"] - load) < 1e-6: return row["p50_ms"]
metrics = [
    ("bench engine: SSD FP32 batch 1, median ms/image", "engine", lambda j: engine(j, 1)),
    ("bench engine: SSD FP32 batch 8, median ms/image", "engine", lambda j: engine(j, 8)),
    ("bench pipeline --real: capacity, images/s", "pipeline", lambda j: j["capacity_per_s"]),
    ("bench pipeline --real: closed loop 16 clients, images/s", "pipeline", lambda j: pipe_closed(j, 16)),
    ("bench pipeline --real: open loop 50 %, p50 ms", "pipeline", lambda j: pipe_open(j, 0.5)),
    ("bench pipeline: overhead, us wall per request", "pipeline", lambda j: j["overhead_us_per_request"]),
]
print("| figure | old binary, run 1 / 2 | new binary, run 1 / 2 | new / old (means) |")
print("|---|---|---|---|")
def fmt(v): return "-" if v is None else f"{v:.1f}" if v >= 10 else f"{v:.2f}"
def row(name, vals_old, vals_new):
    o = [v for v in vals_old if v is not None]; n = [v for v in vals_new if v is not None]
    ratio = statistics.mean(n) / statistics.mean(o) if o and n else None
    print(f"| {name} | {' / '.join(fmt(v) for v in vals_old)} | {' / '.join(fmt(v) for v in vals_new)} | {fmt(ratio) if ratio else '-'} |")
for name, kind, f in metrics:
    vo = [f(j) if (j := load(kind, "old", r)) else None for r in (1, 2)]
    vn = [f(j) if (j := load(kind, "new", r)) else None for r in (1, 2)]
    row(name, vo, vn)
# serve: whatever structure

def serve_row(j, target, c, key):
    for row in j["rows"]:
        if row["target"] == target and row["mode"] == "closed" and row["concurrency"] == c:
            return row[key] if key == "throughput_per_s" else row["latency_ms"]["p50"]
sm = [
    ("bench serve: HTTP, 1 client, p50 ms", lambda j: serve_row(j, "http", 1, "p50")),
    ("bench serve: HTTP, 16 clients, images/s", lambda j: serve_row(j, "http", 16, "throughput_per_s")),
    ("bench serve: HTTP overhead at 1 client, ms", lambda j: j["http_overhead_ms_at_c1"]),
    ("bench serve: HTTP / in-process saturation", lambda j: j["saturation_ratio"]),
]
for name, f in sm:
    vo = [f(j) if (j := load("serve", "old", r)) else None for r in (1, 2)]
    vn = [f(j) if (j := load("serve", "new", r)) else None for r in (1, 2)]
    row(name, vo, vn)
