#!/usr/bin/env python3
"""Scale-out figures for docs/BENCHMARKS.md (specs/scale_out.md, issue 17), in one run:

1. throughput and p50/p99 through nginx (deploy/nginx/mogserve.conf.in) with 1, 2 and 3
   instances (`--threads 1` each) against one instance directly, by `mogserve bench serve --url`;
2. the per-request cost of the OIP binary tensors (/v2) against /v1/detect on the same server,
   one client, alternating A-B-A-B so drift cancels.

    scripts/bench_scaleout.py [--mogserve build/mogserve] [--out /tmp/scaleout] [--seconds 5]

Needs nginx (scripts/setup.sh installs it). Prints a Markdown report; raw JSON under --out.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "support"))
from mogserve_testing import free_port, render_nginx_conf, start_server  # noqa: E402


def bench(args, url, name, concurrency, protocol="v1", seconds=None):
    path = os.path.join(args.out, f"{name}.json")
    cmd = [args.mogserve, "bench", "serve", "--url", url, "--no-in-process", "--protocol", protocol,
           "--images", os.path.join(ROOT, "tests", "data", "photos"),
           "--concurrency", ",".join(map(str, concurrency)), "--load-fractions", "0.5",
           "--seconds", str(seconds or args.seconds), "--warmup", "1", "--json", path]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    rows = json.load(open(path))["rows"]
    return {r["concurrency"]: r for r in rows if r["mode"] == "closed"}


def nginx_for(args, tmp, ports, name):
    prefix = os.path.join(tmp, name)
    os.makedirs(prefix)
    os.chmod(prefix, 0o777)
    port = free_port()
    conf = render_nginx_conf(open(os.path.join(ROOT, "deploy/nginx/mogserve.conf.in")).read(),
                             [f"127.0.0.1:{p}" for p in ports], f"127.0.0.1:{port}",
                             os.path.join(prefix, "access.log"), prefix)
    open(os.path.join(prefix, "nginx.conf"), "w").write(conf)
    proc = subprocess.Popen([args.nginx, "-p", prefix, "-c", os.path.join(prefix, "nginx.conf"),
                             "-e", "stderr", "-g", "daemon off;"], stderr=subprocess.DEVNULL)
    time.sleep(0.5)
    return proc, port


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mogserve", default=os.path.join(ROOT, "build", "mogserve"))
    ap.add_argument("--model-dir", default=os.path.join(ROOT, "models", "ssd_mobilenetv1"))
    ap.add_argument("--nginx", default="/usr/sbin/nginx")
    ap.add_argument("--out", default="/tmp/mogserve-scaleout")
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--concurrency", default="1,16,64")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    concurrency = [int(c) for c in args.concurrency.split(",")]
    servers = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            os.chmod(tmp, 0o755)
            ports = []
            for _ in range(3):
                port = free_port()
                servers.append(start_server(args.mogserve, [
                    "--port", str(port), "--model-dir", args.model_dir, "--threads", "1",
                    "--instances", "1", "--access-log", "off"], port, "/readyz", timeout=300,
                    stderr=subprocess.DEVNULL))
                ports.append(port)
            results = {"direct": bench(args, f"http://127.0.0.1:{ports[0]}", "direct", concurrency)}
            for n in (1, 2, 3):
                proc, port = nginx_for(args, tmp, ports[:n], f"nginx{n}")
                try:
                    results[f"nginx {n}"] = bench(args, f"http://127.0.0.1:{port}", f"nginx{n}",
                                                  concurrency)
                finally:
                    proc.send_signal(signal.SIGQUIT)
                    proc.wait()
            proto = {"v1": [], "v2": []}
            for k in range(3):
                for p in ("v1", "v2"):
                    proto[p].append(bench(args, f"http://127.0.0.1:{ports[0]}", f"{p}-{k}", [1],
                                          protocol=p)[1])
    finally:
        for s in servers:
            s.send_signal(signal.SIGTERM)
            s.wait()

    print("| target | clients | images/s | p50 ms | p99 ms | images/s ÷ direct |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, rows in results.items():
        for c in concurrency:
            r = rows[c]
            base = results["direct"][c]["throughput_per_s"]
            print(f"| {name} | {c} | {r['throughput_per_s']:.1f} | {r['latency_ms']['p50']:.1f} | "
                  f"{r['latency_ms']['p99']:.1f} | {r['throughput_per_s'] / base:.2f} |")
    print()
    print("| protocol (1 client, one image per request) | p50 ms per round | mean p50 ms |")
    print("|---|---|---:|")
    for p in ("v1", "v2"):
        p50s = [r["latency_ms"]["p50"] for r in proto[p]]
        print(f"| {p} | {', '.join(f'{x:.2f}' for x in p50s)} | {sum(p50s) / len(p50s):.2f} |")
    v1 = sum(r["latency_ms"]["p50"] for r in proto["v1"]) / 3
    v2 = sum(r["latency_ms"]["p50"] for r in proto["v2"]) / 3
    print(f"\n/v2 binary - /v1: {v2 - v1:+.2f} ms per request (p50), ratio {v2 / v1:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
