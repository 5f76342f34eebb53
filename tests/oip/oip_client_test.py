#!/usr/bin/env python3
"""The Open Inference Protocol (KServe v2) REST API of the real `mogserve serve`, from a client
written from the protocol with the standard library only (http.client), in tritonclient's byte
layout for the binary tensor extension. Checks that every photo of tests/data gets the same faces
through /v2 (JSON and binary, one request for all photos) as through /v1/detect one at a time,
the metadata and health routes, and every refusal of specs/scale_out.md §1 with its status and
error code.

    oip_client_test.py --mogserve BUILD/mogserve --model-dir models/ssd_mobilenetv1
        --photos tests/data/photos

Exit 0 when everything holds; 1 with the failures listed otherwise.
"""

from __future__ import annotations

import argparse
import base64
import http.client
import json
import os
import struct
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import mogserve_testing as testing  # noqa: E402
from mogserve_testing import FAILURES, binary_infer_body, check, free_port  # noqa: E402
from mogserve_testing import compare_outputs as compare  # noqa: E402

API_KEY = "oip-test-key"




class Client:
    def __init__(self, port: int):
        self.port = port

    def request(self, method, path, body=b"", headers=None, key=True):
        h = dict(headers or {})
        if key:
            h["Authorization"] = f"Bearer {API_KEY}"
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        conn.request(method, path, body=body, headers=h)
        r = conn.getresponse()
        data = r.read()
        hdrs = {k.lower(): v for k, v in r.getheaders()}
        conn.close()
        return r.status, hdrs, data

    def json(self, method, path, doc=None, **kw):
        body = json.dumps(doc).encode() if doc is not None else b""
        status, hdrs, data = self.request(method, path, body,
                                          {"Content-Type": "application/json"}, **kw)
        return status, hdrs, (json.loads(data) if data else None)


def start(args, port, admin_port):
    cmd = [args.mogserve, "serve", "--port", str(port), "--admin-port", str(admin_port),
           "--model-dir", args.model_dir,
           "--api-key", API_KEY, "--threads", "1", "--max-images", "8",
           "--model-name", "faces", "--access-log", "off", "--shutdown-delay", "3"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    client = Client(port)
    deadline = time.time() + 120
    while time.time() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"mogserve exited {proc.returncode}: {proc.stderr.read().decode()}")
        try:
            status, _, _ = client.request("GET", "/v2/health/ready", key=False)
            if status == 200:
                return proc, client
        except OSError:
            pass
        time.sleep(0.2)
    proc.kill()
    raise SystemExit("mogserve did not get ready in 120 s")


def v1_faces(client, photo_bytes):
    status, _, data = client.request("POST", "/v1/detect", photo_bytes,
                                     {"Content-Type": "application/octet-stream"})
    check(status == 200, f"/v1/detect answered {status}")
    j = json.loads(data)
    return j["width"], j["height"], [(f["box"], f["score"]) for f in j["faces"]]


def infer_json(photos, outputs=None, parameters=None, extra=None):
    doc = {"id": "json-1",
           "inputs": [{"name": "IMAGE", "datatype": "BYTES", "shape": [len(photos)],
                       "data": [base64.b64encode(p).decode() for p in photos]}]}
    if outputs is not None:
        doc["outputs"] = outputs
    if parameters is not None:
        doc["parameters"] = parameters
    doc.update(extra or {})
    return doc


def infer_binary(client, photos, path="/v2/models/faces/infer"):
    """tritonclient's layout: JSON header, then each BYTES element as <uint32 LE len><bytes>."""
    body, headers = binary_infer_body(photos)
    return client.request("POST", path, body, headers)


def decode_binary_response(hdrs, data):
    head, tensors, whole = testing.decode_binary_response(hdrs, data)
    check(whole, "binary response: the sizes add up to the body")
    return head, tensors


def json_tensors(doc):
    return {o["name"]: (o["shape"], o["data"]) for o in doc["outputs"]}



def error_of(data):
    j = json.loads(data)
    check(isinstance(j.get("error"), str), f"error is a string: {j}")
    return j.get("error", "")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mogserve", required=True)
    ap.add_argument("--model-dir", required=True)
    ap.add_argument("--photos", required=True)
    args = ap.parse_args()
    names = sorted(n for n in os.listdir(args.photos) if n.endswith((".jpg", ".png")))[:6]
    photos = [open(os.path.join(args.photos, n), "rb").read() for n in names]
    admin_port = free_port()
    proc, c = start(args, free_port(), admin_port)
    admin = Client(admin_port)
    try:
        # Metadata and health.
        status, _, meta = c.json("GET", "/v2")
        check(status == 200 and meta["name"] == "mogserve" and
              "binary_tensor_data" in meta["extensions"], f"GET /v2: {status} {meta}")
        status, _, model = c.json("GET", "/v2/models/faces")
        check(status == 200 and model["name"] == "faces" and model["versions"] == ["1"] and
              [o["name"] for o in model["outputs"]] == [*testing.OUTPUT_NAMES, "LANDMARKS"],
              f"model metadata: {status} {model}")
        for path in ("/v2/health/live", "/v2/health/ready", "/v2/models/faces/ready",
                     "/v2/models/faces/versions/1/ready"):
            status, _, _ = c.request("GET", path, key=path.startswith("/v2/models"))
            check(status == 200, f"GET {path}: {status}")

        references = [v1_faces(c, p) for p in photos]
        check(sum(len(r[2]) for r in references) > 0, "the photos hold faces (not vacuous)")

        # JSON, all photos in one request; the version path too.
        for path in ("/v2/models/faces/infer", "/v2/models/faces/versions/1/infer"):
            status, hdrs, doc = c.json("POST", path, infer_json(photos))
            check(status == 200, f"{path} JSON: {status} {doc}")
            if status == 200:
                check(doc["id"] == "json-1" and doc["model_name"] == "faces", "id and model echoed")
                compare(json_tensors(doc), references, f"{path} JSON")
        # Binary both ways.
        status, hdrs, data = infer_binary(c, photos)
        check(status == 200, f"binary infer: {status} {data[:200]}")
        if status == 200:
            check(hdrs.get("content-type") == "application/octet-stream", "binary content type")
            _, tensors = decode_binary_response(hdrs, data)
            compare(tensors, references, "binary")
        # Request parameters apply; outputs select; X-Request-Id becomes the id.
        doc = infer_json(photos[:1], outputs=[{"name": "COUNT"}],
                         parameters={"score_threshold": 0.999})
        del doc["id"]
        status, hdrs, body = c.request("POST", "/v2/models/faces/infer",
                                       json.dumps(doc).encode(), {"X-Request-Id": "trace-42"})
        out = json.loads(body)
        check(status == 200 and [o["name"] for o in out["outputs"]] == ["COUNT"] and
              out.get("id") == "trace-42", f"outputs filter / request id: {out}")
        check(hdrs.get("x-request-id") == "trace-42", f"X-Request-Id echoed: {hdrs}")
        # Metrics: the /v2 route labels and the in-flight gauge (0 now: everything answered).
        status, _, text = c.request("GET", "/metrics", key=False)
        text = text.decode()
        check('route="/v2/infer"' in text and 'route="/v2/health"' in text,
              "the /v2 routes are labelled in /metrics")
        check("\nmogserve_inflight_images 0" in text, "mogserve_inflight_images is 0 when idle")
        check(out["outputs"][0]["data"][0] <= references[0][2].__len__(), "threshold applied")

        # Refusals: status and code.
        corrupt = photos[0][: len(photos[0]) // 3]
        cases = [
            ("unknown model", "POST", "/v2/models/other/infer", infer_json(photos[:1]), {}, 404,
             "model_not_found"),
            ("unknown version", "GET", "/v2/models/faces/versions/2/ready", None, {}, 404,
             "model_not_found"),
            ("unknown route", "GET", "/v2/nothing", None, {}, 404, "not_found"),
            ("method", "GET", "/v2/models/faces/infer", None, {}, 405, "method_not_allowed"),
            ("unknown parameter", "POST", "/v2/models/faces/infer",
             infer_json(photos[:1], parameters={"colour": 1}), {}, 400, "invalid_parameter"),
            ("bad parameter value", "POST", "/v2/models/faces/infer",
             infer_json(photos[:1], parameters={"max_faces": 0}), {}, 422, "invalid_parameter"),
            ("unknown output", "POST", "/v2/models/faces/infer",
             infer_json(photos[:1], outputs=[{"name": "MASKS"}]), {}, 400, "bad_request"),
            ("too many images", "POST", "/v2/models/faces/infer", infer_json(photos * 2), {}, 413,
             "too_many_images"),
            ("bad base64", "POST", "/v2/models/faces/infer",
             {"inputs": [{"name": "IMAGE", "datatype": "BYTES", "shape": [1], "data": ["%%"]}]},
             {}, 400, "invalid_image"),
            ("corrupt image", "POST", "/v2/models/faces/infer",
             infer_json([photos[0], corrupt]), {}, 400, "invalid_image"),
            ("compressed", "POST", "/v2/models/faces/infer", infer_json(photos[:1]),
             {"Content-Encoding": "gzip"}, 415, "unsupported_media_type"),
        ]
        for label, method, path, doc, headers, want_status, want_code in cases:
            body = json.dumps(doc).encode() if doc is not None else b""
            status, _, data = c.request(method, path, body, headers)
            err = error_of(data) if data else ""
            check(status == want_status and err.startswith(want_code + ":"),
                  f"{label}: {status} {err!r}, want {want_status} {want_code}")
            if label == "corrupt image":
                check("IMAGE[1]" in err, f"the corrupt image is named: {err}")
        status, _, data = c.request("POST", "/v2/models/faces/infer",
                                    json.dumps(infer_json(photos[:1])).encode(), key=False)
        check(status == 401 and error_of(data).startswith("unauthorized:"), f"no key: {status}")
        status, _, _ = c.request("GET", "/v2/health/ready", key=False)
        check(status == 200, "health needs no key")
        # Binary sizes that do not add up.
        raw = struct.pack("<I", len(photos[0])) + photos[0]
        header = json.dumps({"inputs": [{"name": "IMAGE", "datatype": "BYTES", "shape": [1],
                                         "parameters": {"binary_data_size": len(raw) + 5}}]})
        status, _, data = c.request("POST", "/v2/models/faces/infer", header.encode() + raw,
                                    {"Inference-Header-Content-Length": str(len(header))})
        check(status == 400 and error_of(data).startswith("bad_request:"),
              f"binary size mismatch: {status}")
        # The server is still serving.
        status, _, _ = c.request("GET", "/v2/health/live", key=False)
        check(status == 200, "still alive")

        # The admin port: probes and metrics only.
        for path, want in (("/metrics", 200), ("/v2/health/ready", 200), ("/readyz", 200),
                           ("/healthz", 200), ("/v1/detect", 404), ("/v2", 404)):
            status, _, _ = admin.request("GET", path, key=False)
            check(status == want, f"admin port GET {path}: {status}, want {want}")

        # `mogserve probe`: exit 0 only for a 200.
        def probe(path):
            return subprocess.run([args.mogserve, "probe", f"http://127.0.0.1:{c.port}{path}",
                                   "--timeout", "5"], capture_output=True).returncode
        check(probe("/v2/health/ready") == 0, "probe of a ready server exits 0")
        check(probe("/v2/nothing") == 1, "probe of a 404 exits 1")

        # SIGTERM with --shutdown-delay 3: not ready at once, detection still served, then exit.
        proc.terminate()
        time.sleep(0.5)
        status, _, _ = c.request("GET", "/readyz", key=False)
        check(status == 503, f"/readyz during the shutdown delay: {status}")
        status, _, _ = c.request("GET", "/v2/health/ready", key=False)
        check(status == 400, f"/v2/health/ready during the shutdown delay: {status}")
        check(probe("/v2/health/ready") == 1, "probe during the shutdown delay exits 1")
        status, _, _ = c.request("GET", "/v2/health/live", key=False)
        check(status == 200, "live during the shutdown delay")
        status, _, _ = admin.request("GET", "/v2/health/ready", key=False)
        check(status == 400, f"admin ready during the shutdown delay: {status}")
        status, _, text = c.request("GET", "/metrics", key=False)
        check("\nmogserve_draining 1" in text.decode(), "mogserve_draining is 1")
        status, _, doc = c.json("POST", "/v2/models/faces/infer", infer_json(photos[:2]))
        check(status == 200, f"infer during the shutdown delay: {status}")
        status, _, _ = c.request("POST", "/v1/detect", photos[0],
                                 {"Content-Type": "application/octet-stream"})
        check(status == 200, f"/v1/detect during the shutdown delay: {status}")
        proc.wait(timeout=60)
        check(probe("/v2/health/live") == 1, "probe of a stopped server exits 1")
    finally:
        if proc.poll() is None:
            proc.terminate()
            proc.wait(timeout=60)
    check(proc.returncode == 0, f"mogserve exited {proc.returncode} on SIGTERM")
    print(f"{len(FAILURES)} failure(s)" if FAILURES else
          f"ok: {len(photos)} photos, {sum(len(r[2]) for r in references)} faces, /v2 = /v1")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
