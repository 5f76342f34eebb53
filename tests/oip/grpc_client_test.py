#!/usr/bin/python3
"""The Open Inference Protocol (KServe v2) gRPC API of the real `mogserve serve --grpc-port`, from
stubs that protoc and grpc_python_plugin generate at test time from proto/open_inference.proto
(Debian's python3-grpcio / python3-protobuf run them). Checks every RPC; that ModelInfer on the
photos of tests/data, with IMAGE in bytes_contents and in raw_input_contents, finds the same faces
as /v1/detect on the same server (and the hand-checked ground truth); the outputs filter; the status
map for each error class; the bytes-in-flight budget; the metrics; a port in use; and the drain: SIGTERM with calls in flight,
each answered OK, readiness false at once, exit 0.

    grpc_client_test.py --mogserve BUILD/mogserve --model-dir models/ssd_mobilenetv1
        --photos tests/data/photos --proto proto/open_inference.proto
        --ground-truth tests/data/ground_truth.json

Exit 0 when everything holds; 1 with the failures listed otherwise.
"""

from __future__ import annotations

import argparse
import http.client
import importlib
import json
import os
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from mogserve_testing import FAILURES, OUTPUT_NAMES, check, free_port  # noqa: E402
from mogserve_testing import compare_outputs as compare  # noqa: E402

API_KEY = "grpc-test-key"
MODEL = "faces"
MAX_BODY = 4 << 20




def generate_stubs(proto: str, out_dir: str):
    """open_inference_pb2 and open_inference_pb2_grpc, built now from the repository's proto."""
    cmd = ["protoc", f"--proto_path={os.path.dirname(proto)}", f"--python_out={out_dir}",
           f"--grpc_python_out={out_dir}",
           "--plugin=protoc-gen-grpc_python=" + (os.environ.get("GRPC_PYTHON_PLUGIN") or
                                                 "/usr/bin/grpc_python_plugin"), proto]
    subprocess.run(cmd, check=True)
    sys.path.insert(0, out_dir)
    return (importlib.import_module("open_inference_pb2"),
            importlib.import_module("open_inference_pb2_grpc"))


def rest(port, method, path, body=b"", headers=None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    h = {"Authorization": f"Bearer {API_KEY}"}
    h.update(headers or {})
    conn.request(method, path, body=body, headers=h)
    r = conn.getresponse()
    data = r.read()
    conn.close()
    return r.status, data


def start(args, port, grpc_port, extra=()):
    cmd = [args.mogserve, "serve", "--port", str(port), "--grpc-port", str(grpc_port),
           "--model-dir", args.model_dir, "--api-key", API_KEY, "--threads", "1",
           "--max-images", "16", "--model-name", MODEL, "--access-log", "off",
           "--max-body-bytes", str(MAX_BODY), *extra]
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def wait_ready(proc, stub, pb):
    deadline = time.time() + 120
    while time.time() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"mogserve exited {proc.returncode}: {proc.stderr.read().decode()}")
        try:
            if stub.ServerReady(pb.ServerReadyRequest(), timeout=2).ready:
                return
        except Exception:  # not listening yet
            pass
        time.sleep(0.2)
    proc.kill()
    raise SystemExit("mogserve did not get ready over gRPC in 120 s")


def v1_faces(port, photo):
    status, data = rest(port, "POST", "/v1/detect", photo,
                        {"Content-Type": "application/octet-stream"})
    check(status == 200, f"/v1/detect answered {status}")
    j = json.loads(data)
    return j["width"], j["height"], [(f["box"], f["score"]) for f in j["faces"]]


def infer_request(pb, photos, raw=False, outputs=None, parameters=None, **fields):
    req = pb.ModelInferRequest(**{"model_name": MODEL, "id": "grpc-1", **fields})
    tensor = req.inputs.add(name="IMAGE", datatype="BYTES", shape=[len(photos)])
    if raw:
        req.raw_input_contents.append(b"".join(struct.pack("<I", len(p)) + p for p in photos))
    else:
        tensor.contents.bytes_contents.extend(photos)
    for name in outputs or []:
        req.outputs.add(name=name)
    for key, value in (parameters or {}).items():
        p = req.parameters[key]
        if isinstance(value, bool):
            p.bool_param = value
        elif isinstance(value, int):
            p.int64_param = value
        elif isinstance(value, float):
            p.double_param = value
        else:
            p.string_param = value
    return req


def tensors_of(response):
    """name → (shape, values) from raw_output_contents, by each output's datatype."""
    out = {}
    for meta, raw in zip(response.outputs, response.raw_output_contents):
        fmt = "<%d%s" % (len(raw) // 4, "f" if meta.datatype == "FP32" else "i")
        out[meta.name] = (list(meta.shape), list(struct.unpack(fmt, raw)))
    check(len(response.outputs) == len(response.raw_output_contents),
          "one raw_output_contents entry per output")
    return out



def iou(a, b):
    ix = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = ix * iy
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


def ground_truth_recall(tensors, names, truth):
    found = total = 0
    k = tensors["SCORES"][0][1]
    for i, name in enumerate(names):
        boxes = [tensors["BOXES"][1][(i * k + j) * 4:(i * k + j) * 4 + 4]
                 for j in range(tensors["COUNT"][1][i])]
        for gt in truth.get(name, []):
            total += 1
            found += any(iou(gt, b) >= 0.5 for b in boxes)
    return found, total


def expect_error(grpc, call, request, code, text, label, **kw):
    try:
        call(request, **kw)
        check(False, f"{label}: accepted, want {code.name}")
        return ""
    except grpc.RpcError as e:
        check(e.code() == code and text in e.details(),
              f"{label}: {e.code().name} {e.details()!r}, want {code.name} with {text!r}")
        return e.details()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mogserve", required=True)
    ap.add_argument("--model-dir", required=True)
    ap.add_argument("--photos", required=True)
    ap.add_argument("--proto", required=True)
    ap.add_argument("--ground-truth", required=True)
    args = ap.parse_args()
    try:
        import grpc
    except ImportError:
        raise SystemExit("python3-grpcio is missing (scripts/setup.sh installs it)")
    tmp = tempfile.mkdtemp(prefix="mogserve-grpc-")
    pb, pb_grpc = generate_stubs(os.path.abspath(args.proto), tmp)
    names = sorted(n for n in os.listdir(args.photos) if n.endswith((".jpg", ".png")))
    photos = [open(os.path.join(args.photos, n), "rb").read() for n in names]
    photos_batch = [p for p in photos if len(p) < 400_000]  # one call stays under MAX_BODY
    batch_names = [n for n, p in zip(names, photos) if len(p) < 400_000]
    truth = json.load(open(args.ground_truth))
    port, grpc_port = free_port(), free_port()
    # The drain timeout is far beyond the drain's work (sized below from this machine's speed):
    # a call cut at shutdown is a drain bug, not a slow machine.
    proc = start(args, port, grpc_port, ["--shutdown-delay", "1", "--drain-timeout", "300"])
    channel = grpc.insecure_channel(f"127.0.0.1:{grpc_port}",
                                    options=[("grpc.max_send_message_length", 64 << 20)])
    stub = pb_grpc.GRPCInferenceServiceStub(channel)
    key = [("authorization", f"Bearer {API_KEY}")]
    C = grpc.StatusCode
    try:
        wait_ready(proc, stub, pb)
        # Health and metadata; the key on all but ServerLive / ServerReady.
        check(stub.ServerLive(pb.ServerLiveRequest()).live, "ServerLive")
        check(stub.ServerReady(pb.ServerReadyRequest()).ready, "ServerReady")
        check(stub.ModelReady(pb.ModelReadyRequest(name=MODEL), metadata=key).ready, "ModelReady")
        check(stub.ModelReady(pb.ModelReadyRequest(name=MODEL, version="1"),
                              metadata=[("authorization", f"bEaReR {API_KEY}")]).ready,
              "ModelReady, version 1, the scheme in any case")
        meta = stub.ServerMetadata(pb.ServerMetadataRequest(), metadata=key)
        check(meta.name == "mogserve" and meta.version, f"ServerMetadata: {meta}")
        model = stub.ModelMetadata(pb.ModelMetadataRequest(name=MODEL), metadata=key)
        check(model.name == MODEL and list(model.versions) == ["1"] and
              [t.name for t in model.inputs] == ["IMAGE"] and model.inputs[0].datatype == "BYTES"
              and [t.name for t in model.outputs] == [*OUTPUT_NAMES, "LANDMARKS"]
              and list(model.outputs[0].shape) == [-1, -1, 4], f"ModelMetadata: {model}")

        # ModelInfer = /v1/detect per photo, IMAGE as bytes_contents and as raw_input_contents.
        references = [v1_faces(port, p) for p in photos_batch]
        check(sum(len(r[2]) for r in references) > 0, "the photos hold faces (not vacuous)")
        for raw in (False, True):
            label = "raw_input_contents" if raw else "bytes_contents"
            response = stub.ModelInfer(infer_request(pb, photos_batch, raw=raw), metadata=key)
            check(response.model_name == MODEL and response.model_version == "1" and
                  response.id == "grpc-1", f"{label}: model and id echoed")
            check([o.name for o in response.outputs] == ["BOXES", "SCORES", "COUNT", "IMAGE_SIZE"]
                  and [o.datatype for o in response.outputs] == ["FP32", "FP32", "INT32", "INT32"],
                  f"{label}: outputs {[o.name for o in response.outputs]}")
            tensors = tensors_of(response)
            compare(tensors, references, label)
            found, total = ground_truth_recall(tensors, batch_names, truth)
            print(f"{label}: {found} of {total} ground-truth faces found (IoU >= 0.5)")
            check(total > 0 and found == total,
                  f"{label}: {found} of {total} ground-truth faces found (IoU >= 0.5)")
        # Each photo alone, the large ones too (one per call fits the message limit).
        for name, photo in zip(names, photos):
            response = stub.ModelInfer(infer_request(pb, [photo], raw=True), metadata=key)
            t = tensors_of(response)
            found, total = ground_truth_recall(t, [name], truth)
            check(found == total,
                  f"{name}: {found} of {total} ground-truth faces")
        # Outputs filter and order; parameters apply.
        response = stub.ModelInfer(
            infer_request(pb, photos_batch[:2], outputs=["COUNT", "IMAGE_SIZE"],
                          parameters={"score_threshold": 0.999, "max_faces": 1,
                                      "priority": "bulk", "timeout_ms": 20000}), metadata=key)
        t = tensors_of(response)
        check(list(t) == ["COUNT", "IMAGE_SIZE"], f"outputs filter: {list(t)}")
        check(all(c <= 1 for c in t["COUNT"][1]), f"max_faces applied: {t['COUNT'][1]}")

        # The status map.
        corrupt = photos_batch[0][: len(photos_batch[0]) // 3]
        details = expect_error(grpc, stub.ModelInfer,
                               infer_request(pb, [photos_batch[0], corrupt]), C.INVALID_ARGUMENT,
                               "invalid_image: IMAGE[1]", "corrupt image", metadata=key)
        check("IMAGE[1]" in details, f"the corrupt image is named: {details}")
        expect_error(grpc, stub.ModelInfer, infer_request(pb, [corrupt], raw=True),
                     C.INVALID_ARGUMENT, "IMAGE[0]", "corrupt image, raw", metadata=key)
        expect_error(grpc, stub.ModelInfer,
                     infer_request(pb, photos_batch[:1], parameters={"colour": 1}),
                     C.INVALID_ARGUMENT, "unknown parameter 'colour'", "unknown parameter",
                     metadata=key)
        expect_error(grpc, stub.ModelInfer,
                     infer_request(pb, photos_batch[:1], parameters={"max_faces": 0}),
                     C.INVALID_ARGUMENT, "max_faces", "bad parameter value", metadata=key)
        bad = infer_request(pb, photos_batch[:1])
        bad.inputs[0].datatype = "UINT8"
        expect_error(grpc, stub.ModelInfer, bad, C.INVALID_ARGUMENT, "datatype must be BYTES",
                     "wrong datatype", metadata=key)
        bad = infer_request(pb, photos_batch[:1])
        bad.inputs[0].shape[:] = [1, 3]
        expect_error(grpc, stub.ModelInfer, bad, C.INVALID_ARGUMENT, "shape must be [N] or [N, 1]",
                     "wrong shape", metadata=key)
        bad = infer_request(pb, photos_batch[:1])
        bad.inputs[0].shape[:] = [2]
        expect_error(grpc, stub.ModelInfer, bad, C.INVALID_ARGUMENT, "shape says 2 images",
                     "shape vs data", metadata=key)
        expect_error(grpc, stub.ModelInfer, infer_request(pb, photos_batch[:1], outputs=["MASKS"]),
                     C.INVALID_ARGUMENT, "output 'MASKS' is not known", "unknown output",
                     metadata=key)
        for label, md in (("no key", None), ("wrong key", [("authorization", "Bearer nope")]),
                          ("wrong scheme", [("authorization", f"Basic {API_KEY}")])):
            expect_error(grpc, stub.ModelInfer, infer_request(pb, photos_batch[:1]),
                         C.UNAUTHENTICATED, "unauthorized", f"ModelInfer, {label}", metadata=md)
        expect_error(grpc, stub.ModelMetadata, pb.ModelMetadataRequest(name=MODEL),
                     C.UNAUTHENTICATED, "unauthorized", "ModelMetadata, no key")
        expect_error(grpc, stub.ServerMetadata, pb.ServerMetadataRequest(), C.UNAUTHENTICATED,
                     "unauthorized", "ServerMetadata, no key")
        expect_error(grpc, stub.ModelInfer,
                     infer_request(pb, photos_batch[:1], model_name="other"), C.NOT_FOUND,
                     "model_not_found: no model 'other'", "unknown model", metadata=key)
        expect_error(grpc, stub.ModelReady, pb.ModelReadyRequest(name=MODEL, version="2"),
                     C.NOT_FOUND, "version 2", "unknown version", metadata=key)
        expect_error(grpc, stub.ModelMetadata, pb.ModelMetadataRequest(name="other"),
                     C.NOT_FOUND, "model_not_found", "ModelMetadata, unknown model", metadata=key)
        expect_error(grpc, stub.ModelInfer,
                     infer_request(pb, [photos_batch[0] + b"\0" * MAX_BODY]),
                     C.RESOURCE_EXHAUSTED, "", "over the max message", metadata=key)
        expect_error(grpc, stub.ModelInfer, infer_request(pb, photos_batch[:1] * 17),
                     C.RESOURCE_EXHAUSTED, "too_many_images", "too many images", metadata=key)
        expect_error(grpc, stub.ModelInfer, infer_request(pb, photos_batch[:1]),
                     C.DEADLINE_EXCEEDED, "", "tiny client deadline", metadata=key,
                     timeout=0.001)
        # A request timeout that expires in the server: the pipeline's 504, DEADLINE_EXCEEDED.
        expect_error(grpc, stub.ModelInfer,
                     infer_request(pb, photos_batch * 2, parameters={"timeout_ms": 1}),
                     C.DEADLINE_EXCEEDED, "deadline_exceeded", "timeout_ms 1", metadata=key)
        check(stub.ServerLive(pb.ServerLiveRequest()).live, "still live after the refusals")

        # Metrics: gRPC methods by code; nothing in flight.
        status, text = rest(port, "GET", "/metrics")
        text = text.decode()
        prefix = 'mogserve_grpc_responses_total{route="/inference.GRPCInferenceService/'
        check(prefix + 'ModelInfer",code="OK"}' in text and
              prefix + 'ModelInfer",code="UNAUTHENTICATED"}' in text and
              prefix + 'ServerReady",code="OK"}' in text,
              "gRPC calls are counted by route (method) and code in /metrics")
        check("\nmogserve_inflight_images 0" in text, "mogserve_inflight_images is 0 when idle")

        # Port in use: a second server on the same gRPC port says so and exits non-zero.
        other = start(args, free_port(), grpc_port)
        _, err = other.communicate(timeout=120)
        check(other.returncode not in (0, None) and b"cannot listen for gRPC" in err,
              f"gRPC port in use: exit {other.returncode}, {err.decode()[-300:]!r}")

        # --max-body-bytes-in-flight bounds the ModelInfer messages held: beyond, UNAVAILABLE.
        small_port = free_port()
        small = start(args, free_port(), small_port, ["--max-body-bytes-in-flight", "1024"])
        with grpc.insecure_channel(f"127.0.0.1:{small_port}") as small_channel:
            small_stub = pb_grpc.GRPCInferenceServiceStub(small_channel)
            wait_ready(small, small_stub, pb)
            expect_error(grpc, small_stub.ModelInfer, infer_request(pb, photos_batch[:1]),
                         C.UNAVAILABLE, "server_busy", "over the bytes in flight", metadata=key)
        small.terminate()
        check(small.wait(timeout=60) == 0, "the small-budget server exits 0")

        # Drain: calls in flight at SIGTERM are all answered OK; readiness false at once. How
        # many: enough for ~4 s of this machine's work (measured here, one call alone), so some
        # are still open when Shutdown begins after the 1 s delay, on a fast machine or a slow
        # one, and all of them well within the server's 30 s request timeout.
        t0 = time.time()
        stub.ModelInfer(infer_request(pb, photos_batch, raw=True), metadata=key)
        one_call_s = time.time() - t0
        in_flight = max(4, min(48, int(4.0 / max(one_call_s, 1e-3)) + 1))
        print(f"drain: one call of {len(photos_batch)} photos took {one_call_s:.2f} s; "
              f"{in_flight} calls in flight")
        calls = [stub.ModelInfer.future(infer_request(pb, photos_batch, raw=True), metadata=key)
                 for _ in range(in_flight)]
        time.sleep(0.3)
        done_at: list[float] = []
        lock = threading.Lock()
        for f in calls:
            f.add_done_callback(lambda _f: (lock.acquire(), done_at.append(time.time()),
                                            lock.release()))
        sigterm_at = time.time()
        proc.send_signal(signal.SIGTERM)
        time.sleep(0.3)
        check(not stub.ServerReady(pb.ServerReadyRequest()).ready, "ServerReady false on SIGTERM")
        check(not stub.ModelReady(pb.ModelReadyRequest(name=MODEL), metadata=key).ready,
              "ModelReady false on SIGTERM")
        check(stub.ServerLive(pb.ServerLiveRequest()).live, "ServerLive true while draining")
        ok = 0
        for f in calls:
            try:
                tensors_of(f.result(timeout=300))
                ok += 1
            except grpc.RpcError as e:
                check(False, f"an in-flight call ended {e.code().name}: {e.details()}")
        check(ok == len(calls), f"{ok} of {len(calls)} in-flight calls answered OK")
        late = [t for t in done_at if t > sigterm_at + 1.0]  # after the 1 s shutdown delay
        print(f"drain: {len(calls)} calls in flight at SIGTERM, {len(late)} answered after the "
              f"shutdown delay (during Shutdown)")
        check(len(late) >= 1, "some calls were still open when Shutdown began (not vacuous)")
        proc.wait(timeout=300)
        check(proc.returncode == 0, f"mogserve exited {proc.returncode} after the drain")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        channel.close()
    print(f"{len(FAILURES)} failure(s)" if FAILURES else
          f"ok: {len(photos)} photos, {sum(len(r[2]) for r in references)} faces, gRPC = /v1")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
