"""What the Python drivers of the real `mogserve` binary share (tests/oip, tests/deploy,
tests/scaleout): free loopback ports, a plain HTTP client (standard library only), starting a
server and waiting for it, the OIP binary tensor layout (tritonclient's), and /metrics.

Import it with `sys.path.insert(0, <repo>/tests/support)`.
"""

from __future__ import annotations

import http.client
import json
import re
import socket
import struct
import subprocess
import sys
import time

OUTPUT_NAMES = ("BOXES", "SCORES", "COUNT", "IMAGE_SIZE")
FAILURES: list[str] = []  # what check() found; a driver exits 1 when it is not empty


def check(cond, what):
    """Records (and prints) a failure unless COND holds; returns COND."""
    if not cond:
        FAILURES.append(what)
        print(f"FAIL: {what}", file=sys.stderr, flush=True)
    return cond


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def request(port, method, path, body=b"", headers=None, timeout=60):
    """One request on its own connection: (status, lower-cased headers, body bytes)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request(method, path, body=body, headers=dict(headers or {}))
        r = conn.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        conn.close()


def get_status(port, path, timeout=10) -> int:
    """GET's status, 0 when nothing answered."""
    try:
        return request(port, "GET", path, timeout=timeout)[0]
    except OSError:
        return 0


def start_server(mogserve, flags, ready_port, ready_path="/v2/health/ready", timeout=120,
                 stderr=subprocess.PIPE):
    """`mogserve serve FLAGS`, returned once READY_PORT answers READY_PATH with 200."""
    proc = subprocess.Popen([mogserve, "serve"] + list(flags), stdout=subprocess.DEVNULL,
                            stderr=stderr)
    wait_ready(proc, ready_port, ready_path, timeout)
    return proc


def wait_ready(proc, port, path="/v2/health/ready", timeout=120):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
            raise SystemExit(f"mogserve exited {proc.returncode} before it was ready: {err}")
        if get_status(port, path, timeout=2) == 200:
            return
        time.sleep(0.2)
    proc.kill()
    raise SystemExit(f"mogserve did not get ready in {timeout} s")


def binary_infer_body(photos, outputs=OUTPUT_NAMES):
    """tritonclient's layout: the JSON header, then each BYTES element as <uint32 LE len><bytes>.
    Returns (body, headers)."""
    raw = b"".join(struct.pack("<I", len(p)) + p for p in photos)
    header = json.dumps({
        "inputs": [{"name": "IMAGE", "datatype": "BYTES", "shape": [len(photos)],
                    "parameters": {"binary_data_size": len(raw)}}],
        "outputs": [{"name": n, "parameters": {"binary_data": True}} for n in outputs]}).encode()
    return header + raw, {"Content-Type": "application/octet-stream",
                          "Inference-Header-Content-Length": str(len(header))}


def decode_binary_response(hdrs, data):
    """(JSON header, {name: (shape, values)}, whether the sizes add up to the body)."""
    j = int(hdrs["inference-header-content-length"])
    head = json.loads(data[:j])
    offset, tensors = j, {}
    for out in head["outputs"]:
        size = out["parameters"]["binary_data_size"]
        chunk = data[offset:offset + size]
        offset += size
        fmt = "<%d%s" % (size // 4, "f" if out["datatype"] == "FP32" else "i")
        tensors[out["name"]] = (out["shape"], list(struct.unpack(fmt, chunk)))
    return head, tensors, offset == len(data)


def compare_outputs(tensors, references, label):
    """OIP outputs {name: (shape, flat values)} against /v1's faces per image, references =
    [(width, height, [(box, score), ...])]: shapes, counts, sizes, every box within 0.01 px and
    score within 1e-4, padding rows zero. Failures through check()."""
    n = len(references)
    count = tensors["COUNT"][1]
    k = tensors["SCORES"][0][1] if n else 0
    check(tensors["BOXES"][0] == [n, k, 4], f"{label}: BOXES shape {tensors['BOXES'][0]}")
    check(k == max((len(r[2]) for r in references), default=0), f"{label}: K is the most faces")
    for i, (w, h, faces) in enumerate(references):
        check(count[i] == len(faces), f"{label}: image {i}: {count[i]} faces, /v1 {len(faces)}")
        check(tensors["IMAGE_SIZE"][1][2 * i:2 * i + 2] == [w, h], f"{label}: image {i} size")
        for j, (box, score) in enumerate(faces):
            got = tensors["BOXES"][1][(i * k + j) * 4:(i * k + j) * 4 + 4]
            check(all(abs(a - b) <= 0.01 for a, b in zip(got, box)),
                  f"{label}: image {i} face {j}: box {got} vs /v1 {box}")
            s = tensors["SCORES"][1][i * k + j]
            check(abs(s - score) <= 1e-4, f"{label}: image {i} face {j}: score {s} vs {score}")
        for j in range(len(faces), k):  # padding rows are zero
            check(tensors["SCORES"][1][i * k + j] == 0, f"{label}: image {i} row {j} is padding")


def metric_values(text, name):
    """{labels text: value} of every sample of NAME in a Prometheus text exposition."""
    pattern = re.compile(r"^" + re.escape(name) + r"(\{[^}]*\})? (\S+)$", re.M)
    return {m.group(1) or "": float(m.group(2)) for m in pattern.finditer(text)}


def scrape(port, name, timeout=5):
    """Sum of NAME's samples on PORT's /metrics; None when the server does not answer."""
    try:
        status, _, data = request(port, "GET", "/metrics", timeout=timeout)
    except OSError:
        return None
    if status != 200:
        return None
    return sum(metric_values(data.decode(), name).values())


def render_nginx_conf(template, upstreams, listen, access_log, prefix):
    """deploy/nginx/mogserve.conf.in with its placeholders filled (comment lines left alone):
    UPSTREAMS is a list of "HOST:PORT"."""
    servers = "\n".join(f"    server {u} max_fails=1 fail_timeout=2s;" for u in upstreams)
    values = {"@UPSTREAMS@": servers, "@LISTEN@": listen, "@ACCESS_LOG@": access_log,
              "@PREFIX@": prefix}
    lines = []
    for line in template.splitlines():
        if not line.lstrip().startswith("#"):
            for key, value in values.items():
                line = line.replace(key, value)
        lines.append(line)
    return "\n".join(lines) + "\n"
