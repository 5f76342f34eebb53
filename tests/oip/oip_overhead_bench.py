#!/usr/bin/python3
"""Per-request cost of the three ways to ask one `mogserve serve` for faces: /v1/detect (raw
body), /v2 REST with binary tensors, /v2 over gRPC (raw_input_contents). One small picture per
request, sequential, interleaved round-robin so drift hits all three alike; prints the median and
p90 latency of each and the ratios to /v1. A benchmark, not a test.

    oip_overhead_bench.py --mogserve build/mogserve --model-dir models/ssd_mobilenetv1
        --proto proto/open_inference.proto --photo tests/data/photos/grace_hopper.jpg [-n 300]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import statistics
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from grpc_client_test import free_port, generate_stubs  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mogserve", required=True)
    ap.add_argument("--model-dir", required=True)
    ap.add_argument("--proto", required=True)
    ap.add_argument("--photo", required=True)
    ap.add_argument("--size", type=int, default=64, help="square side the photo is shrunk to")
    ap.add_argument("-n", type=int, default=300, help="requests per route")
    args = ap.parse_args()
    import cv2
    import grpc
    image = cv2.resize(cv2.imread(args.photo), (args.size, args.size))
    photo = cv2.imencode(".jpg", image)[1].tobytes()
    pb, pb_grpc = generate_stubs(os.path.abspath(args.proto), tempfile.mkdtemp())
    port, grpc_port = free_port(), free_port()
    proc = subprocess.Popen([args.mogserve, "serve", "--port", str(port), "--grpc-port",
                             str(grpc_port), "--model-dir", args.model_dir, "--access-log", "off"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    stub = pb_grpc.GRPCInferenceServiceStub(grpc.insecure_channel(f"127.0.0.1:{grpc_port}"))
    for _ in range(600):
        try:
            if stub.ServerReady(pb.ServerReadyRequest(), timeout=1).ready:
                break
        except grpc.RpcError:
            pass
        time.sleep(0.2)
    conn = http.client.HTTPConnection("127.0.0.1", port)
    model = "ssd-mobilenetv1"
    raw = struct.pack("<I", len(photo)) + photo
    header = json.dumps({"inputs": [{"name": "IMAGE", "datatype": "BYTES", "shape": [1],
                                     "parameters": {"binary_data_size": len(raw)}}],
                         "parameters": {"binary_data_output": True}}).encode()
    request = pb.ModelInferRequest(model_name=model)
    request.inputs.add(name="IMAGE", datatype="BYTES", shape=[1])
    request.raw_input_contents.append(raw)

    def v1():
        conn.request("POST", "/v1/detect", photo, {"Content-Type": "image/jpeg"})
        r = conn.getresponse()
        r.read()
        assert r.status == 200

    def v2_rest():
        conn.request("POST", f"/v2/models/{model}/infer", header + raw,
                     {"Inference-Header-Content-Length": str(len(header))})
        r = conn.getresponse()
        r.read()
        assert r.status == 200

    def v2_grpc():
        stub.ModelInfer(request)

    routes = {"/v1/detect": v1, "/v2 REST binary": v2_rest, "/v2 gRPC": v2_grpc}
    times = {name: [] for name in routes}
    try:
        for _ in range(20):  # warm every path
            for call in routes.values():
                call()
        for _ in range(args.n):
            for name, call in routes.items():
                t0 = time.perf_counter()
                call()
                times[name].append((time.perf_counter() - t0) * 1000)
    finally:
        proc.terminate()
        proc.wait()
    base = statistics.median(times["/v1/detect"])
    print(f"{args.n} sequential requests per route, {args.size}x{args.size} JPEG "
          f"({len(photo)} B), one server, interleaved")
    print("| route | median ms | p90 ms | median / /v1 |")
    print("|---|---|---|---|")
    for name, t in times.items():
        t.sort()
        med = statistics.median(t)
        print(f"| {name} | {med:.2f} | {t[int(0.9 * len(t))]:.2f} | {med / base:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
